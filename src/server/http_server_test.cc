#include "server/http_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_util.h"

namespace engram {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The API layer's renderer, reduced to what the tests check.
HttpResponse RenderError(StatusCode code, const std::string& message) {
  HttpResponse r;
  r.status = HttpStatusOf(code);
  r.body = std::string("{\"code\":\"") + ApiCodeOf(code) + "\",\"message\":\"" + message + "\"}";
  r.headers.emplace_back("X-Request-Id", "err-1");
  return r;
}

// Echoes what the transport parsed.
HttpResponse Echo(const HttpRequest& req) {
  HttpResponse r;
  r.body = req.method + "|" + req.path + "|" + req.query + "|" + req.body;
  if (const std::string* h = req.Header("x-test")) r.body += "|x-test=" + *h;
  if (req.remote_is_loopback) r.body += "|loopback";
  r.headers.emplace_back("X-Request-Id", "req-1");
  return r;
}

HttpServerOptions TestOptions() {
  HttpServerOptions o;
  o.port = 0;
  o.worker_threads = 4;
  return o;
}

struct CurlResult {
  long status = 0;
  std::string body;
  std::string headers;
  long connects = -1;
  CURLcode code = CURLE_OK;
};

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One request on `curl` (reused handles keep their connection alive).
CurlResult Fetch(CURL* curl, const std::string& url, const std::string* post_body = nullptr,
                 curl_slist* headers = nullptr) {
  CurlResult r;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r.headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (post_body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  r.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &r.connects);
  return r;
}

CurlResult FetchOnce(const std::string& url, const std::string* post_body = nullptr,
                     curl_slist* headers = nullptr) {
  CURL* curl = curl_easy_init();
  CurlResult r = Fetch(curl, url, post_body, headers);
  curl_easy_cleanup(curl);
  return r;
}

std::string Url(const HttpServer& s, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(s.port()) + path;
}

// --- raw sockets ---------------------------------------------------------------------------

int Connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct RawResponse {
  int status = 0;
  std::string head;  // status line + headers
  std::string body;
  bool ok = false;
};

// Reads one response (Content-Length framed); `pending` carries bytes read past it.
RawResponse ReadResponse(int fd, std::string& pending, int timeout_ms = 5000) {
  RawResponse r;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto fill = [&]() -> bool {
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    char buf[8192];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    pending.append(buf, static_cast<size_t>(n));
    return true;
  };
  size_t end;
  while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return r;
  }
  r.head = pending.substr(0, end + 2);
  pending.erase(0, end + 4);
  r.status = std::stoi(r.head.substr(9, 3));
  size_t length = 0;
  std::string lower = r.head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t cl = lower.find("content-length:");
  if (cl != std::string::npos) length = std::stoul(lower.substr(cl + 15));
  while (pending.size() < length) {
    if (!fill()) return r;
  }
  r.body = pending.substr(0, length);
  pending.erase(0, length);
  r.ok = true;
  return r;
}

// True when the peer closes the connection within `timeout_ms` (unread data is discarded).
bool WaitClosed(int fd, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return true;
  }
}

bool HeadHas(const RawResponse& r, const std::string& needle) {
  std::string lower = r.head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(needle) != std::string::npos;
}

std::string ThisThreadName() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

// A handler that echoes, except that its first request waits for Release().
class BlockFirstRequest {
 public:
  HttpHandler Handler() {
    return [this](const HttpRequest& r) {
      if (first_.exchange(false)) {
        entered_.set_value();
        released_.wait();
      }
      return Echo(r);
    };
  }
  void WaitEntered() { entered_.get_future().wait(); }
  void Release() { release_.set_value(); }

 private:
  std::promise<void> entered_;
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  std::atomic<bool> first_{true};
};

class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

// --- tests -----------------------------------------------------------------------------------

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

TEST_F(HttpServerTest, GracefulStopFinishesInFlightRequest) {
  std::promise<void> entered;
  HttpServer server(
      TestOptions(),
      [&](const HttpRequest& r) {
        if (r.path == "/slow") {
          entered.set_value();
          std::this_thread::sleep_for(300ms);
        }
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  // An idle keep-alive connection must not hold Stop up.
  const int idle = Connect(server.port());
  std::string pending;
  ASSERT_TRUE(SendAll(idle, "GET /idle HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(ReadResponse(idle, pending).ok);

  auto client = std::async(std::launch::async, [&] { return FetchOnce(Url(server, "/slow")); });
  entered.get_future().wait();
  const auto t0 = Clock::now();
  server.Stop(5000ms);
  const double stop_ms = MsSince(t0);
  CurlResult r = client.get();
  EXPECT_EQ(r.code, CURLE_OK);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET|/slow|||loopback");
  EXPECT_NE(r.headers.find("Connection: close"), std::string::npos);
  EXPECT_GE(stop_ms, 150);
  EXPECT_LT(stop_ms, 2000);
  EXPECT_TRUE(WaitClosed(idle, 1000));
  ::close(idle);
  EXPECT_EQ(server.active_connections(), 0u);
  EXPECT_LT(Connect(server.port()), 0);  // no longer listening
}

TEST_F(HttpServerTest, StopAfterGraceClosesStuckConnections) {
  std::promise<void> entered;
  HttpServer server(
      TestOptions(),
      [&](const HttpRequest& r) {
        entered.set_value();
        std::this_thread::sleep_for(600ms);
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  auto client = std::async(std::launch::async, [&] { return FetchOnce(Url(server, "/stuck")); });
  entered.get_future().wait();
  const auto t0 = Clock::now();
  server.Stop(100ms);
  EXPECT_LT(MsSince(t0), 1500);  // grace + the running handler, no more
  CurlResult r = client.get();
  EXPECT_NE(r.status, 200);  // connection closed without an answer
}

TEST_F(HttpServerTest, FullQueueIs503) {
  HttpServerOptions o = TestOptions();
  o.worker_threads = 1;
  o.max_queued_requests = 1;
  BlockFirstRequest block;
  HttpServer server(o, block.Handler(), RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int a = Connect(server.port()), b = Connect(server.port()), c = Connect(server.port());
  std::string pa, pb, pc;
  ASSERT_TRUE(SendAll(a, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"));
  block.WaitEntered();  // the only worker is busy
  ASSERT_TRUE(SendAll(b, "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"));
  std::this_thread::sleep_for(100ms);  // /b takes the only queue slot
  ASSERT_TRUE(SendAll(c, "GET /c HTTP/1.1\r\nHost: h\r\n\r\n"));
  RawResponse rc = ReadResponse(c, pc);
  EXPECT_EQ(rc.status, 503);
  EXPECT_NE(rc.body.find("ServiceUnavailable"), std::string::npos);
  block.Release();
  EXPECT_EQ(ReadResponse(a, pa).status, 200);
  EXPECT_EQ(ReadResponse(b, pb).status, 200);
  // The 503 kept the connection usable.
  ASSERT_TRUE(SendAll(c, "GET /c2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(ReadResponse(c, pc).status, 200);
  ::close(a);
  ::close(b);
  ::close(c);
}

// Compute-bound requests (/cpu/...) run on the I/O threads, never more at once than the slots,
// each answered; the others go to the worker pool meanwhile.
TEST_F(HttpServerTest, ComputeBoundRequestsRunOnIoThreadsWithinTheSlots) {
  HttpServerOptions o = TestOptions();
  o.io_threads = 3;
  o.compute_slots = 2;
  o.is_compute_bound = [](const HttpRequest& r) { return r.path.starts_with("/cpu/"); };
  std::atomic<int> running{0}, most{0}, on_workers{0};
  std::mutex names_mu;
  std::set<std::string> compute_threads;
  HttpServer server(
      o,
      [&](const HttpRequest& r) {
        const std::string name = ThisThreadName();
        if (!r.path.starts_with("/cpu/")) {
          if (name == "http-worker") ++on_workers;
          return Echo(r);
        }
        {
          std::lock_guard<std::mutex> lock(names_mu);
          compute_threads.insert(name);
        }
        const int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(20ms);
        --running;
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  std::vector<std::future<bool>> clients;
  for (int c = 0; c < 8; ++c) {
    clients.push_back(std::async(std::launch::async, [&, c] {
      CURL* curl = curl_easy_init();
      bool ok = true;
      for (int i = 0; i < 5; ++i) {
        const std::string path = (c == 0 ? "/other/" : "/cpu/") + std::to_string(i);
        CurlResult r = Fetch(curl, Url(server, path));
        ok = ok && r.code == CURLE_OK && r.status == 200 && r.body == "GET|" + path + "|||loopback";
      }
      curl_easy_cleanup(curl);
      return ok;
    }));
  }
  for (auto& c : clients) EXPECT_TRUE(c.get());
  server.Stop();
  EXPECT_EQ(most.load(), 2);  // 7 clients wanted more at once
  EXPECT_EQ(compute_threads, std::set<std::string>{"http-io"});
  EXPECT_EQ(on_workers.load(), 5);
}

// A compute-bound handler that would wait long on an I/O thread asks for a worker: the request
// is run again there and answered once.
TEST_F(HttpServerTest, ComputeBoundRequestThatWouldWaitRunsAgainOnAWorker) {
  HttpServerOptions o = TestOptions();
  o.is_compute_bound = [](const HttpRequest&) { return true; };
  std::atomic<int> completed{0};
  o.on_complete = [&](const HttpRequest&, const HttpResponse&, double) { ++completed; };
  std::mutex mu;
  std::vector<std::string> ran_on;
  HttpServer server(
      o,
      [&](const HttpRequest& r) {
        const std::string name = ThisThreadName();
        {
          std::lock_guard<std::mutex> lock(mu);
          ran_on.push_back(name);
        }
        if (ThisThreadAvoidsLongWaits()) {
          HttpResponse again;
          again.run_on_worker = true;
          return again;
        }
        return Echo(r);
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  CurlResult r = FetchOnce(Url(server, "/cold"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET|/cold|||loopback");
  server.Stop();
  EXPECT_EQ(ran_on, (std::vector<std::string>{"http-io", "http-worker"}));
  EXPECT_EQ(completed.load(), 1);
}

// Queued compute-bound requests are bounded like the worker queue: the overflow gets 503, and
// a graceful stop still answers what was queued.
TEST_F(HttpServerTest, ComputeQueueIsBoundedAndDrainedOnStop) {
  HttpServerOptions o = TestOptions();
  o.io_threads = 2;
  o.compute_slots = 1;
  o.max_queued_requests = 1;
  o.is_compute_bound = [](const HttpRequest&) { return true; };
  BlockFirstRequest block;
  HttpServer server(o, block.Handler(), RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int a = Connect(server.port()), b = Connect(server.port()), c = Connect(server.port());
  std::string pa, pb, pc;
  ASSERT_TRUE(SendAll(a, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"));
  block.WaitEntered();  // the only slot is busy (and one I/O thread with it)
  ASSERT_TRUE(SendAll(b, "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"));
  std::this_thread::sleep_for(100ms);  // /b waits for the slot
  ASSERT_TRUE(SendAll(c, "GET /c HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(ReadResponse(c, pc).status, 503);
  auto stopped = std::async(std::launch::async, [&] { server.Stop(5000ms); });
  std::this_thread::sleep_for(50ms);
  block.Release();
  RawResponse ra = ReadResponse(a, pa);
  RawResponse rb = ReadResponse(b, pb);
  EXPECT_EQ(ra.status, 200);
  EXPECT_EQ(rb.status, 200);
  EXPECT_EQ(rb.body, "GET|/b|||loopback");
  stopped.get();
  ::close(a);
  ::close(b);
  ::close(c);
}

// Inline requests run on the I/O thread that read them; a deferred answer is sent when another
// thread replies, and the I/O thread serves other connections meanwhile. Only the first reply
// counts, and the connection stays usable after it.
TEST_F(HttpServerTest, InlineRequestsAnswerWhenTheirDeferredReplyComes) {
  HttpServerOptions o = TestOptions();
  o.io_threads = 1;  // one I/O thread: a blocked one would hold up the second client
  o.runs_inline = [](const HttpRequest& r) { return r.path.starts_with("/later/"); };
  std::mutex mu;
  std::vector<HttpReply> replies;
  std::vector<std::string> ran_on;
  HttpServer server(
      o,
      [&](const HttpRequest& r) {
        std::lock_guard<std::mutex> lock(mu);
        ran_on.push_back(ThisThreadName() + (ThisThreadAvoidsLongWaits() ? "+avoid" : ""));
        if (!r.path.starts_with("/later/")) return Echo(r);
        HttpResponse res;
        // Called once the handler returned (and released the lock).
        res.deferred = [&](HttpReply reply) {
          std::lock_guard<std::mutex> lock(mu);
          replies.push_back(reply);
        };
        return res;
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  const int a = Connect(server.port());
  std::string pa;
  ASSERT_TRUE(SendAll(a, "GET /later/1 HTTP/1.1\r\nHost: h\r\n\r\n"));
  // Meanwhile another connection is served.
  CurlResult other = FetchOnce(Url(server, "/now"));
  EXPECT_EQ(other.status, 200);
  HttpReply reply;
  for (int i = 0; i < 200 && !reply; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!replies.empty()) reply = replies[0];
    }
    if (!reply) std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(reply);
  std::thread replier([reply] {
    HttpResponse r;
    r.body = "done later";
    reply(r);
    HttpResponse twice;
    twice.body = "a second answer";
    reply(twice);  // ignored
  });
  replier.join();
  RawResponse ra = ReadResponse(a, pa);
  EXPECT_EQ(ra.status, 200);
  EXPECT_EQ(ra.body, "done later");
  ASSERT_TRUE(SendAll(a, "GET /now2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  RawResponse again = ReadResponse(a, pa);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, "GET|/now2|||loopback");
  ::close(a);
  server.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(ran_on, (std::vector<std::string>{"http-io+avoid", "http-worker", "http-worker"}));
}

// A graceful stop waits for a deferred reply still to come, and sends it; a deferred start that
// throws is a 500; one that replies at once is answered at once.
TEST_F(HttpServerTest, GracefulStopWaitsForDeferredReplies) {
  HttpServerOptions o = TestOptions();
  o.runs_inline = [](const HttpRequest&) { return true; };
  std::promise<HttpReply> got_reply;
  HttpServer server(
      o,
      [&](const HttpRequest& r) {
        HttpResponse res;
        if (r.path == "/throw") {
          res.deferred = [](HttpReply) { throw std::runtime_error("boom"); };
        } else if (r.path == "/at-once") {
          // Replies before returning (a refusal found at once), on the I/O thread's strand.
          res.deferred = [](HttpReply reply) {
            HttpResponse busy;
            busy.status = 429;
            busy.body = "busy";
            reply(busy);
          };
        } else {
          res.deferred = [&](HttpReply reply) { got_reply.set_value(reply); };
        }
        return res;
      },
      RenderError);
  ASSERT_TRUE(server.Start().ok());
  CurlResult thrown = FetchOnce(Url(server, "/throw"));
  EXPECT_EQ(thrown.status, 500);
  CurlResult at_once = FetchOnce(Url(server, "/at-once"));
  EXPECT_EQ(at_once.status, 429);
  EXPECT_EQ(at_once.body, "busy");
  auto client = std::async(std::launch::async, [&] { return FetchOnce(Url(server, "/later")); });
  HttpReply reply = got_reply.get_future().get();
  auto stopped = std::async(std::launch::async, [&] { server.Stop(5000ms); });
  EXPECT_EQ(stopped.wait_for(200ms), std::future_status::timeout);  // waits for the reply
  HttpResponse r;
  r.body = "late but answered";
  reply(r);
  stopped.get();
  CurlResult answered = client.get();
  EXPECT_EQ(answered.status, 200);
  EXPECT_EQ(answered.body, "late but answered");
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

TEST_F(HttpServerTest, BodyBudgetBelowTheBodyLimitIsRefusedAtStart) {
  HttpServerOptions o = TestOptions();
  o.max_body_bytes = 2 << 20;
  o.max_inflight_body_bytes = 1 << 20;
  HttpServer server(o, Echo, RenderError);
  EXPECT_EQ(server.Start().code(), StatusCode::kInvalidParameter);
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
