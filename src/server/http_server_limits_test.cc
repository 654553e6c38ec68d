// HttpServer's limits: body and header sizes, header and idle timeouts, connection counts, the
// in-flight body budget, and refusals decided from the request head.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"
#include "server/http_server_test_support.h"

namespace engram {
namespace {

using namespace std::chrono_literals;
using testing::Clock;
using testing::Connect;
using testing::CurlResult;
using testing::Echo;
using testing::FetchOnce;
using testing::HeadHas;
using testing::HttpServerTest;
using testing::MsSince;
using testing::RawResponse;
using testing::ReadResponse;
using testing::RenderError;
using testing::SendAll;
using testing::TestOptions;
using testing::Url;
using testing::WaitClosed;

TEST_F(HttpServerTest, DeclaredBodyOverLimitIs413WithoutReading) {
  std::atomic<int> calls{0};
  HttpServerOptions o = TestOptions();
  o.max_body_bytes = 1024;
  HttpServer server(
      o,
      [&](const HttpRequest& r) {
        calls++;
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());

  const int fd = Connect(server.port());
  std::string pending;
  ASSERT_TRUE(SendAll(fd, "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000\r\n\r\n"));
  RawResponse r = ReadResponse(fd, pending);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("PayloadTooLarge"), std::string::npos);
  EXPECT_NE(r.body.find("1024 bytes"), std::string::npos) << r.body;
  EXPECT_TRUE(HeadHas(r, "connection: close"));
  EXPECT_TRUE(HeadHas(r, "x-request-id: err-1"));
  EXPECT_TRUE(WaitClosed(fd, 3000));
  ::close(fd);

  // curl sends header and body at once: the response must survive the unread body.
  const std::string body(5000, 'x');
  CurlResult c = FetchOnce(Url(server, "/big"), &body);
  EXPECT_EQ(c.code, CURLE_OK);
  EXPECT_EQ(c.status, 413);

  // Chunked bodies are cut off as they exceed the limit.
  const int fd2 = Connect(server.port());
  pending.clear();
  std::string chunked = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) chunked += "400\r\n" + std::string(1024, 'y') + "\r\n";
  ASSERT_TRUE(SendAll(fd2, chunked));
  r = ReadResponse(fd2, pending);
  EXPECT_EQ(r.status, 413);
  ::close(fd2);
  EXPECT_EQ(calls.load(), 0);
}

TEST_F(HttpServerTest, HeaderOverLimitIs413) {
  HttpServerOptions o = TestOptions();
  o.max_header_bytes = 1024;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int fd = Connect(server.port());
  std::string pending;
  ASSERT_TRUE(
      SendAll(fd, "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n"));
  RawResponse r = ReadResponse(fd, pending);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("header"), std::string::npos) << r.body;
  EXPECT_TRUE(WaitClosed(fd, 3000));
  ::close(fd);
}

TEST_F(HttpServerTest, ExpectContinueOverLimitGets413Directly) {
  HttpServerOptions o = TestOptions();
  o.max_body_bytes = 1024 * 1024;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const std::string big(2 * 1024 * 1024, 'z');
  const auto t0 = Clock::now();
  CurlResult c = FetchOnce(Url(server, "/big"), &big);
  EXPECT_EQ(c.status, 413);
  EXPECT_LT(MsSince(t0), 900);  // curl's own 1 s Expect wait was not needed
}

TEST_F(HttpServerTest, SlowlorisDoesNotBlockAndIsCutOff) {
  HttpServerOptions o = TestOptions();
  o.header_timeout = 1000ms;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());

  constexpr int kClients = 16;
  const std::string header =
      "GET /slow HTTP/1.1\r\nHost: localhost\r\nX-Padding: aaaaaaaaaaaaaa\r\n\r\n";
  std::vector<double> closed_after_ms(kClients, -1);
  std::vector<std::thread> clients;
  const auto t0 = Clock::now();
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      const int fd = Connect(server.port());
      if (fd < 0) return;
      for (size_t k = 0; k < header.size(); ++k) {
        if (!SendAll(fd, std::string_view(header).substr(k, 1))) break;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) > 0) {
          char buf[256];
          if (::recv(fd, buf, sizeof(buf), 0) <= 0) break;
        }
      }
      closed_after_ms[i] = MsSince(t0);
      ::close(fd);
    });
  }
  std::this_thread::sleep_for(300ms);
  const auto t1 = Clock::now();
  CurlResult r = FetchOnce(Url(server, "/normal"));
  const double normal_ms = MsSince(t1);
  EXPECT_EQ(r.status, 200);
  EXPECT_LT(normal_ms, 500);
  for (auto& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_GE(closed_after_ms[i], 900) << i;
    EXPECT_LT(closed_after_ms[i], 2500) << i;  // the full header would take ~13 s
  }
}

TEST_F(HttpServerTest, ABodyThatStallsIsAnswered408AndClosed) {
  std::atomic<int> calls{0};
  HttpServerOptions o = TestOptions();
  o.body_timeout = 300ms;
  HttpServer server(
      o,
      [&](const HttpRequest& r) {
        ++calls;
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int fd = Connect(server.port());
  ASSERT_TRUE(SendAll(fd,
                      "POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
                      "Content-Length: 100\r\n\r\n{\"half\":"));
  const auto t0 = Clock::now();
  std::string pending;
  RawResponse r = ReadResponse(fd, pending);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 408) << r.head;
  EXPECT_GE(MsSince(t0), 250);
  EXPECT_TRUE(WaitClosed(fd, 2000));
  ::close(fd);
  EXPECT_EQ(calls.load(), 0);  // the handler never saw the half body
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  HttpServerOptions o = TestOptions();
  o.idle_timeout = 300ms;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int fd = Connect(server.port());
  std::string pending;
  ASSERT_TRUE(SendAll(fd, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(ReadResponse(fd, pending).ok);
  const auto t0 = Clock::now();
  EXPECT_TRUE(WaitClosed(fd, 3000));
  EXPECT_GE(MsSince(t0), 250);
  ::close(fd);
  for (int i = 0; i < 100 && server.active_connections() > 0; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server.active_connections(), 0u);
}

TEST_F(HttpServerTest, TooManyBusyConnectionsIs503) {
  HttpServerOptions o = TestOptions();
  o.max_connections = 2;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  // Both connections are inside a request (half a header): neither is idle, so none makes room.
  const int a = Connect(server.port()), b = Connect(server.port());
  ASSERT_TRUE(SendAll(a, "GET /a HTTP/1.1\r\n"));
  ASSERT_TRUE(SendAll(b, "GET /b HTTP/1.1\r\n"));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server.active_connections(), 2u);
  const int c = Connect(server.port());
  std::string pending;
  RawResponse r = ReadResponse(c, pending);
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(HeadHas(r, "retry-after: 1"));
  EXPECT_TRUE(WaitClosed(c, 3000));
  EXPECT_EQ(server.stats().refused_connections, 1u);
  ::close(a);
  ::close(b);
  ::close(c);
}

TEST_F(HttpServerTest, AnIdleConnectionMakesRoomForANewOne) {
  HttpServerOptions o = TestOptions();
  o.max_connections = 2;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  // Two connections that never send a byte hold every slot ...
  const int a = Connect(server.port()), b = Connect(server.port());
  std::this_thread::sleep_for(100ms);
  ASSERT_EQ(server.active_connections(), 2u);
  // ... and a client with a request still gets in: one of them is closed for it.
  CurlResult r = FetchOnce(Url(server, "/x"));
  EXPECT_EQ(r.status, 200);
  pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  ASSERT_GT(::poll(p, 2, 2000), 0);
  EXPECT_EQ(server.stats().closed_idle_for_new, 1u);
  EXPECT_EQ(server.stats().refused_connections, 0u);
  ::close(a);
  ::close(b);
}

TEST_F(HttpServerTest, ConnectionsPerClientAreLimited) {
  HttpServerOptions o = TestOptions();
  o.max_connections = 100;
  o.max_connections_per_client = 2;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int a = Connect(server.port()), b = Connect(server.port());
  std::this_thread::sleep_for(100ms);
  const int c = Connect(server.port());
  std::string pending;
  RawResponse r = ReadResponse(c, pending);
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("too many connections from this client address"), std::string::npos);
  EXPECT_EQ(server.stats().refused_connections_per_client, 1u);
  ::close(a);
  ::close(b);
  ::close(c);
  // The count goes down as connections close: the address may connect again.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(FetchOnce(Url(server, "/again")).status, 200);
}

TEST_F(HttpServerTest, UnderPressureIdleConnectionsAreClosedSooner) {
  HttpServerOptions o = TestOptions();
  o.max_connections = 4;
  o.header_timeout = 10000ms;
  o.idle_timeout_under_pressure = 200ms;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int first = Connect(server.port());
  std::this_thread::sleep_for(50ms);
  const int second = Connect(server.port());
  std::this_thread::sleep_for(50ms);
  // The third makes more than half of the slots taken: it waits only the short time.
  const auto t0 = Clock::now();
  const int third = Connect(server.port());
  EXPECT_TRUE(WaitClosed(third, 3000));
  EXPECT_LT(MsSince(t0), 1500);
  // The first connection started waiting before the pressure: it still has its full header time.
  pollfd p{first, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 300), 0);
  ::close(first);
  ::close(second);
  ::close(third);
}

TEST_F(HttpServerTest, CheckHeadAnswersBeforeTheBodyIsRead) {
  HttpServerOptions o = TestOptions();
  std::atomic<int> handled{0};
  o.check_head = [](const HttpRequest& head) -> std::optional<HttpResponse> {
    EXPECT_TRUE(head.body.empty());
    if (head.Header("x-key") != nullptr) return std::nullopt;
    return RenderError(StatusCode::kUnauthenticated, "missing key");
  };
  HttpServer server(
      o,
      [&handled](const HttpRequest& r) {
        ++handled;
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  {
    // No key: 401 at once, no "100 Continue", and the declared 60 MB are never read.
    const int fd = Connect(server.port());
    std::string pending;
    ASSERT_TRUE(SendAll(fd,
                        "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                        "Content-Length: 62914560\r\n\r\n"));
    RawResponse r = ReadResponse(fd, pending);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.status, 401);
    EXPECT_TRUE(HeadHas(r, "connection: close"));
    EXPECT_TRUE(WaitClosed(fd, 3000));
    ::close(fd);
    EXPECT_EQ(server.stats().inflight_body_bytes, 0u);
  }
  {
    // With the key: "100 Continue", then the request.
    const int fd = Connect(server.port());
    std::string pending;
    ASSERT_TRUE(SendAll(fd,
                        "POST /e HTTP/1.1\r\nHost: h\r\nX-Key: k\r\nExpect: 100-continue\r\n"
                        "Content-Length: 5\r\n\r\n"));
    RawResponse cont = ReadResponse(fd, pending);
    EXPECT_EQ(cont.status, 100);
    ASSERT_TRUE(SendAll(fd, "hello"));
    RawResponse r = ReadResponse(fd, pending);
    EXPECT_EQ(r.status, 200);
    ::close(fd);
  }
  EXPECT_EQ(handled.load(), 1);
  EXPECT_EQ(server.stats().refused_before_body, 1u);
}

TEST_F(HttpServerTest, InFlightBodyBytesAreBudgeted) {
  HttpServerOptions o = TestOptions();
  o.max_body_bytes = 1 << 20;
  o.max_inflight_body_bytes = 1 << 20;
  HttpServer server(o, Echo, RenderError);
  ASSERT_TRUE(server.Start().ok());
  // A holds the whole budget with a declared body it has only begun to send.
  const int a = Connect(server.port());
  ASSERT_TRUE(SendAll(a, "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\nxyz"));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server.stats().inflight_body_bytes, 1000000u);
  {
    // B's declared body does not fit: 503 with Retry-After before a byte of it is read.
    const int b = Connect(server.port());
    std::string pending;
    ASSERT_TRUE(SendAll(b, "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n"));
    RawResponse r = ReadResponse(b, pending);
    EXPECT_EQ(r.status, 503);
    EXPECT_TRUE(HeadHas(r, "retry-after: 1"));
    ::close(b);
  }
  {
    // A chunked body is charged as it grows: refused once it would overflow.
    const int c = Connect(server.port());
    std::string pending;
    const std::string chunk(100000, 'c');
    ASSERT_TRUE(SendAll(c, "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"));
    char size_line[32];
    std::snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
    SendAll(c, size_line);
    SendAll(c, chunk + "\r\n");
    RawResponse r = ReadResponse(c, pending);
    EXPECT_EQ(r.status, 503);
    ::close(c);
  }
  EXPECT_EQ(server.stats().refused_body_budget, 2u);
  // A finishes: its bytes return to the budget and others fit again.
  std::string pending;
  ASSERT_TRUE(SendAll(a, std::string(1000000 - 3, 'a')));
  RawResponse r = ReadResponse(a, pending);
  EXPECT_EQ(r.status, 200);
  ::close(a);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server.stats().inflight_body_bytes, 0u);
  const std::string body(100000, 'd');
  EXPECT_EQ(FetchOnce(Url(server, "/d"), &body).status, 200);
}

TEST_F(HttpServerTest, BodyBudgetBelowTheBodyLimitIsRefusedAtStart) {
  HttpServerOptions o = TestOptions();
  o.max_body_bytes = 2 << 20;
  o.max_inflight_body_bytes = 1 << 20;
  HttpServer server(o, Echo, RenderError);
  EXPECT_EQ(server.Start().code(), StatusCode::kInvalidParameter);
}

}  // namespace
}  // namespace engram
