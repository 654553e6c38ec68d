// HttpServer: the HTTP/1.1 transport (Boost.Beast behind a pimpl, so this header has no Boost).
//
// Life of a request: an I/O thread reads the header (deadline header_timeout), asks check_head
// (authentication, before any body byte is read or "100 Continue" sent), reserves the body's
// bytes from a server-wide budget, reads the body
// (deadline body_timeout) with size limits, then hands the request to a bounded worker pool, whose
// handler may block (fsync), or runs it itself if the options call it compute-bound (at most
// compute_slots at once) or inline (short, answering later through HttpResponse::deferred). The
// response is posted back to the connection's strand and written
// (deadline write_timeout). Keep-alive connections then wait up to
// idle_timeout for the next request. Transport errors (limits, malformed HTTP, overload, handler
// exceptions) are answered through the HttpErrorRenderer; the transport itself never logs.
//
// Thread-safety: Start/Stop must not be called concurrently with each other; port() and
// active_connections() may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "server/http_types.h"

namespace engram {

struct HttpServerOptions {
  std::string host = "127.0.0.1";       // an IP literal ("0.0.0.0", "::") or a resolvable name
  uint16_t port = 8080;                 // 0 = pick a free port (see HttpServer::port())
  int io_threads = 2;                   // Asio threads: parse, write, run compute-bound handlers
  int worker_threads = 8;               // handler pool: handlers may block (fsync)
  size_t max_header_bytes = 16 * 1024;  // request line + headers; beyond → 413, close
  size_t max_body_bytes = 64 * 1024 * 1024;         // declared or chunked; beyond → 413, close
  std::chrono::milliseconds header_timeout{10000};  // time to receive the full header
  std::chrono::milliseconds body_timeout{60000};  // time to receive the body; beyond → 408, close
  std::chrono::milliseconds idle_timeout{
      30000};  // keep-alive wait for the next request's first byte
  std::chrono::milliseconds write_timeout{30000};  // time to write one response
  // Open connections. A new one beyond this closes a connection that is waiting idle for its
  // next request (so idle sockets cannot lock normal clients out); with none idle it gets 503
  // and is closed.
  size_t max_connections = 1024;
  // Open connections from one client address (IPv4-mapped IPv6 counted as IPv4); beyond → 503
  // and close. 0 = no per-address limit.
  size_t max_connections_per_client = 256;
  // Under pressure (more than half of max_connections open) a connection waiting for the first
  // byte of a request (a new one, or keep-alive between requests) is closed after this instead
  // of header_timeout / idle_timeout.
  std::chrono::milliseconds idle_timeout_under_pressure{1000};
  // Bytes of request bodies being received or held by requests in flight, over all connections:
  // a request whose declared length (or chunked body, as it grows) would exceed it gets 503 with
  // Retry-After before more of it is read. Bounds the transport's memory whatever clients send.
  size_t max_inflight_body_bytes = 256 * 1024 * 1024;
  size_t max_queued_requests = 4096;  // requests waiting for a worker or slot; beyond → 503
  // Called on an I/O thread once a request's header is read, before any of its body is read and
  // before "100 Continue" is sent: `head` has method, path, query, headers and the client address
  // but an empty body. A response returned here is sent at once and the connection closed (its
  // body is never read); nullopt lets the request go on. This is where the API refuses requests
  // without a valid key, so an unauthenticated client cannot make the server buffer a body.
  // Keep it cheap and non-blocking; must not throw (an exception lets the request go on).
  std::function<std::optional<HttpResponse>(const HttpRequest& head)> check_head;
  // Requests this returns true for are compute-bound (a search on a local store with a local
  // model): instead of going to the worker pool they run on the I/O thread that read them, at
  // most compute_slots at once; the others wait in arrival order, each run on an I/O thread as a
  // slot frees up. Cores shared by many runnable CPU-bound handlers time-slice them and stretch
  // each one's latency, and every hand-off between threads costs a wake-up: 16 clients of
  // filtered searches on 2 cores measured p99 19-22 ms on 16 worker threads, 10-11 ms on 2
  // threads, 8-9 ms run this way with 2 I/O threads (10 ms with 3). While every I/O thread
  // computes, the other connections wait (they would wait for a core anyway). Such handlers run
  // with HttpRequest::on_io_thread set: one that would wait long (a cold scope's first search
  // loads it from the store) answers HttpResponse::run_on_worker and runs again on the pool.
  // Called on an I/O thread once the request is read: keep it cheap. Unset: all go to the pool.
  std::function<bool(const HttpRequest&)> is_compute_bound;
  int compute_slots = 0;  // 0 = one per core
  // Requests this returns true for are short and never wait (they parse, validate and hand their
  // work to another thread, answering through HttpResponse::deferred): they run on the I/O thread
  // that read them at once, with no slot and no queue, with HttpRequest::on_io_thread as above.
  // Each hand-off between threads costs a wake-up, and on busy cores often a wait for one: an add
  // whose answer waits on a disk sync went I/O thread → worker → syncing thread → worker → I/O
  // thread; now I/O thread → syncing thread → I/O thread. Unset: all go to the pool.
  std::function<bool(const HttpRequest&)> runs_inline;
  // Called after each response was written (or the write failed), including transport errors
  // (whose request may be partly empty). Runs on an I/O thread: keep it cheap and non-blocking.
  // latency_ms: from the request's first byte to the end of the response write.
  // Must not throw (exceptions are swallowed).
  std::function<void(const HttpRequest&, const HttpResponse&, double latency_ms)> on_complete;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler, HttpErrorRenderer errors);
  // Stops if running, with no grace: in-flight requests are cut off. Call Stop(grace) first.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the threads. kUnavailable with a clear message on bind failure;
  // kInvalidParameter for bad options. A server can be started once.
  Status Start();
  // Actual bound port after Start (useful with options.port = 0).
  uint16_t port() const;
  // Graceful: stop accepting, close idle keep-alive connections, let in-flight requests finish and
  // be answered (with "Connection: close") for up to `grace`, then close what is left and join
  // the threads. A handler still running after `grace` is waited for (it cannot be interrupted),
  // and so is a deferred answer's reply.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(10000));
  // Open connections right now.
  size_t active_connections() const;

  // Cumulative transport counters, for the metrics endpoint. Safe from any thread.
  struct Stats {
    uint64_t refused_connections = 0;             // over max_connections with none idle to close
    uint64_t refused_connections_per_client = 0;  // over max_connections_per_client
    uint64_t closed_idle_for_new = 0;             // idle connections closed to admit new ones
    uint64_t refused_body_budget = 0;             // requests refused by max_inflight_body_bytes
    uint64_t refused_before_body = 0;             // answered by check_head (e.g. 401)
    uint64_t inflight_body_bytes = 0;             // gauge: bytes reserved right now
    uint64_t open_connections = 0;                // gauge
  };
  Stats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace engram
