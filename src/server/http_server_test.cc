#include "server/http_server.h"

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server_test_support.h"

namespace engram {
namespace {

using namespace std::chrono_literals;
using testing::Clock;
using testing::Connect;
using testing::CurlResult;
using testing::Echo;
using testing::Fetch;
using testing::FetchOnce;
using testing::HeadHas;
using testing::HttpServerTest;
using testing::RawResponse;
using testing::ReadResponse;
using testing::RenderError;
using testing::SendAll;
using testing::TestOptions;
using testing::Url;
using testing::WaitClosed;

TEST_F(HttpServerTest, EchoRoundTrip) {
  std::atomic<int> completed{0};
  HttpServerOptions o = TestOptions();
  o.on_complete = [&](const HttpRequest& req, const HttpResponse& res, double ms) {
    EXPECT_EQ(req.path, "/a b/c");
    EXPECT_EQ(res.status, 200);
    EXPECT_FALSE(res.body.empty());
    EXPECT_GE(ms, 0.0);
    completed++;
  };
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  ASSERT_NE(server.port(), 0);

  const std::string body = R"({"hello":"world"})";
  curl_slist* headers = curl_slist_append(nullptr, "X-Test: yes");
  CurlResult r = FetchOnce(Url(server, "/a%20b/c?q=1%202&x=y"), &body, headers);
  curl_slist_free_all(headers);
  ASSERT_EQ(r.code, CURLE_OK);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST|/a b/c|q=1%202&x=y|" + body + "|x-test=yes|loopback");
  EXPECT_NE(r.headers.find("X-Request-Id: req-1"), std::string::npos) << r.headers;
  EXPECT_NE(r.headers.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(r.headers.find("Content-Length: " + std::to_string(r.body.size())), std::string::npos);
  server.Stop();
  EXPECT_EQ(completed.load(), 1);
}

TEST_F(HttpServerTest, KeepAliveReusesConnection) {
  HttpServer server(TestOptions(), Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  CURL* curl = curl_easy_init();
  CurlResult a = Fetch(curl, Url(server, "/one"));
  CurlResult b = Fetch(curl, Url(server, "/two"));
  curl_easy_cleanup(curl);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.connects, 1);
  EXPECT_EQ(b.status, 200);
  EXPECT_EQ(b.connects, 0);  // reused
  EXPECT_EQ(b.body, "GET|/two|||loopback");

  // Raw: two requests on one socket, the second with Connection: close.
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  std::string pending;
  ASSERT_TRUE(SendAll(fd, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n"));
  RawResponse r1 = ReadResponse(fd, pending);
  ASSERT_TRUE(r1.ok);
  EXPECT_FALSE(HeadHas(r1, "connection: close"));
  ASSERT_TRUE(SendAll(fd, "GET /y HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
  RawResponse r2 = ReadResponse(fd, pending);
  ASSERT_TRUE(r2.ok);
  EXPECT_EQ(r2.body, "GET|/y|||loopback");
  EXPECT_TRUE(HeadHas(r2, "connection: close"));
  EXPECT_TRUE(WaitClosed(fd, 2000));
  ::close(fd);
}

TEST_F(HttpServerTest, Http10ClosesUnlessKeepAlive) {
  HttpServer server(TestOptions(), Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  int fd = Connect(server.port());
  std::string pending;
  ASSERT_TRUE(SendAll(fd, "GET /old HTTP/1.0\r\n\r\n"));
  RawResponse r = ReadResponse(fd, pending);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.head.substr(0, 8), "HTTP/1.0");
  EXPECT_EQ(r.body, "GET|/old|||loopback");
  EXPECT_TRUE(WaitClosed(fd, 2000));
  ::close(fd);

  fd = Connect(server.port());
  pending.clear();
  ASSERT_TRUE(SendAll(fd, "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  ASSERT_TRUE(ReadResponse(fd, pending).ok);
  ASSERT_TRUE(SendAll(fd, "GET /b HTTP/1.0\r\n\r\n"));
  r = ReadResponse(fd, pending);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.body, "GET|/b|||loopback");
  ::close(fd);
}

TEST_F(HttpServerTest, PipelinedRequestsAnsweredInOrder) {
  HttpServer server(TestOptions(), Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int fd = Connect(server.port());
  std::string pending;
  ASSERT_TRUE(SendAll(fd,
                      "POST /1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
                      "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  RawResponse a = ReadResponse(fd, pending);
  RawResponse b = ReadResponse(fd, pending);
  EXPECT_EQ(a.body, "POST|/1||abc|loopback");
  EXPECT_EQ(b.body, "GET|/2|||loopback");
  ::close(fd);
}

TEST_F(HttpServerTest, MalformedRequestIs400AndClose) {
  HttpServer server(TestOptions(), Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  for (const std::string& bad :
       {std::string("GARBAGE\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n")}) {
    const int fd = Connect(server.port());
    std::string pending;
    ASSERT_TRUE(SendAll(fd, bad));
    RawResponse r = ReadResponse(fd, pending);
    ASSERT_TRUE(r.ok) << bad;
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("InvalidParameter"), std::string::npos);
    EXPECT_TRUE(WaitClosed(fd, 3000));
    ::close(fd);
  }
  EXPECT_EQ(FetchOnce(Url(server, "/ok")).status, 200);
}

TEST_F(HttpServerTest, HandlerExceptionIs500FromRenderer) {
  HttpServer server(
      TestOptions(),
      [](const HttpRequest& r) -> HttpResponse {
        if (r.path == "/boom") throw std::runtime_error("secret memory text");
        if (r.path == "/int") throw 42;
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  CURL* curl = curl_easy_init();
  CurlResult r = Fetch(curl, Url(server, "/boom"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("\"code\":\"InternalServerError\""), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("secret"), std::string::npos);  // exception text never leaks
  EXPECT_EQ(Fetch(curl, Url(server, "/int")).status, 500);
  CurlResult after = Fetch(curl, Url(server, "/fine"));
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.connects, 0);  // a handler error does not cost the connection
  curl_easy_cleanup(curl);
}

TEST_F(HttpServerTest, RendererFailureFallsBackToPlainEnvelope) {
  HttpServer server(
      TestOptions(), [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("x"); },
      [](StatusCode, const std::string&) -> HttpResponse { throw std::runtime_error("y"); });
  ASSERT_TRUE(server.Start().ok());
  CurlResult r = FetchOnce(Url(server, "/"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("InternalServerError"), std::string::npos);
}

TEST_F(HttpServerTest, ExpectContinue) {
  HttpServer server(TestOptions(), Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int fd = Connect(server.port());
  std::string pending;
  ASSERT_TRUE(SendAll(fd,
                      "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                      "Content-Length: 5\r\n\r\n"));
  RawResponse cont = ReadResponse(fd, pending);
  ASSERT_TRUE(cont.ok);
  EXPECT_EQ(cont.status, 100);
  ASSERT_TRUE(SendAll(fd, "hello"));
  RawResponse r = ReadResponse(fd, pending);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST|/e||hello|loopback");
  ::close(fd);

  // curl adds "Expect: 100-continue" for bodies over 1 MiB.
  const std::string big(2 * 1024 * 1024, 'z');
  CurlResult c = FetchOnce(Url(server, "/big"), &big);
  EXPECT_EQ(c.status, 200);
  EXPECT_EQ(c.body.size(), std::string("POST|/big||").size() + big.size() + 9);  // "|loopback"
}

TEST_F(HttpServerTest, HeadAnswersWithTheLengthAndNoBody) {
  HttpServer server(TestOptions(), Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int fd = Connect(server.port());
  // HEAD, then GET on the same connection: the GET's answer must start right after the HEAD's
  // header, so no body bytes followed it.
  ASSERT_TRUE(SendAll(fd, "HEAD /e HTTP/1.1\r\nHost: h\r\n\r\nGET /e HTTP/1.1\r\nHost: h\r\n\r\n"));
  std::string received;
  const auto deadline = Clock::now() + 3s;
  while (Clock::now() < deadline && received.find("GET|/e") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    received.append(buf, static_cast<size_t>(n));
  }
  const size_t head_end = received.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  const std::string head = received.substr(0, head_end);
  EXPECT_EQ(head.substr(0, 12), "HTTP/1.1 200");
  // Echo's HEAD body would be "HEAD|/e|||loopback": 18 bytes.
  EXPECT_NE(head.find("Content-Length: 18"), std::string::npos) << head;
  EXPECT_EQ(received.substr(head_end + 4, 12), "HTTP/1.1 200");
  ::close(fd);
}

TEST_F(HttpServerTest, BindFailureIsUnavailable) {
  HttpServer first(TestOptions(), Echo, RenderError);
  ASSERT_TRUE(first.Start().ok());
  HttpServerOptions o = TestOptions();
  o.port = first.port();
  HttpServer second(o, Echo, RenderError);
  Status st = second.Start();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find(std::to_string(o.port)), std::string::npos) << st.message();

  o.host = "not-an-address.invalid";
  o.port = 0;
  HttpServer third(o, Echo, RenderError);
  EXPECT_EQ(third.Start().code(), StatusCode::kUnavailable);
}

TEST_F(HttpServerTest, ConcurrentClients) {
  std::atomic<int> handled{0};
  HttpServer server(
      TestOptions(),
      [&](const HttpRequest& r) {
        handled++;
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  constexpr int kClients = 16, kRequests = 200;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      CURL* curl = curl_easy_init();
      for (int i = 0; i < kRequests; ++i) {
        const std::string body = std::to_string(t) + ":" + std::to_string(i);
        CurlResult r = Fetch(curl, Url(server, "/c"), &body);
        if (r.status == 200 && r.body == "POST|/c||" + body + "|loopback") ok++;
      }
      curl_easy_cleanup(curl);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
  EXPECT_EQ(handled.load(), kClients * kRequests);
}

}  // namespace
}  // namespace engram
