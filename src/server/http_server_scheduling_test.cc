// HttpServer's scheduling: the worker queue, compute-bound requests on the I/O threads, inline
// requests with deferred replies, and graceful stop.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_util.h"
#include "server/http_server.h"
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
using testing::HttpServerTest;
using testing::MsSince;
using testing::RawResponse;
using testing::ReadResponse;
using testing::RenderError;
using testing::SendAll;
using testing::TestOptions;
using testing::Url;
using testing::WaitClosed;

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
        if (r.on_io_thread) {
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
        ran_on.push_back(ThisThreadName() + (r.on_io_thread ? "+avoid" : ""));
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

}  // namespace
}  // namespace engram
