// The only translation unit that includes Boost.Beast (it is heavy to compile; see STACK.md).
//
// Structure: Core owns the io_context, the acceptor, the worker pool and the registry of live
// sessions. Each Session is one TCP connection, driven on its own strand through the phases
//   idle → header → (100 Continue) → body → handling (worker pool) → writing → idle | close
// with one beast::tcp_stream deadline per phase, which is what defeats slowloris clients: the
// header deadline covers the whole header, however slowly it trickles in.
#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <limits>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/ascii.h"
#include "common/mutex.h"
#include "common/thread_util.h"
#include "server/body_budget.h"
#include "server/compute_scheduler.h"
#include "server/pending_count.h"
#include "server/plain_error.h"
#include "server/request_target.h"
#include "server/worker_pool.h"

namespace engram {
namespace server_detail {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

// After an error response or "Connection: close" we half-close and drain what the client still
// sends for at most this long: closing a socket with unread input makes the kernel send RST, and
// the client may then lose the response it has not read yet.
constexpr std::chrono::milliseconds kLingerTime{1000};
constexpr size_t kReadChunk = 4096;
// A chunked body is charged to the in-flight budget in steps of at least this many bytes.
constexpr size_t kBodyReserveStep = 64 * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Beast 1.74 uses boost::string_view.
std::string_view Sv(beast::string_view s) { return {s.data(), s.size()}; }

const beast::error_category& HttpErrorCategory() {
  static const beast::error_category& category =
      http::make_error_code(http::error::bad_method).category();
  return category;
}

class Session;

class Core {
 public:
  Core(HttpServerOptions options, HttpHandler handler, HttpErrorRenderer errors)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        errors_(std::move(errors)),
        acceptor_(net::make_strand(ioc_)),
        accept_retry_(acceptor_.get_executor()) {}

  ~Core() { Stop(std::chrono::milliseconds(0)); }

  Status Start() EXCLUDES(lifecycle_mu_);
  void Stop(std::chrono::milliseconds grace) EXCLUDES(lifecycle_mu_);
  uint16_t port() const { return port_.load(std::memory_order_acquire); }
  size_t active_connections() const EXCLUDES(sessions_mu_) {
    MutexLock lock(&sessions_mu_);
    return sessions_.size();
  }

  // --- used by sessions (any thread) ---
  const HttpServerOptions& options() const { return options_; }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  bool Submit(std::function<void()> task) { return pool_->TrySubmit(std::move(task)); }
  // Compute-bound requests: see ComputeScheduler. False when its wait queue is full.
  bool RunOrQueueCompute(std::function<void()> task) {
    return compute_->RunOrQueue(std::move(task));
  }
  bool IsComputeBound(const HttpRequest& request) const noexcept {
    return Ask(options_.is_compute_bound, request);
  }
  bool RunsInline(const HttpRequest& request) const noexcept {
    return Ask(options_.runs_inline, request);
  }
  // Deferred answers started and not yet replied to; Stop waits for them.
  void BeginDeferred() { deferred_.Begin(); }
  void EndDeferred() { deferred_.End(); }
  HttpResponse RunHandler(const HttpRequest& request) noexcept;
  HttpResponse RenderError(StatusCode code, const std::string& message) noexcept;
  // A 503 the transport answers itself; the client may retry after a second.
  HttpResponse Busy(const std::string& message) noexcept {
    return WithRetryAfter(RenderError(StatusCode::kUnavailable, message));
  }
  // The 503 for a request no queue can take.
  HttpResponse Overloaded() noexcept {
    return Busy("server is overloaded: too many queued requests");
  }
  // The API's answer to a request head, or nullopt to read its body
  // (HttpServerOptions::check_head).
  std::optional<HttpResponse> CheckHead(const HttpRequest& head) noexcept {
    if (!options_.check_head) return std::nullopt;
    try {
      auto answer = options_.check_head(head);
      if (answer) refused_before_body_.fetch_add(1, std::memory_order_relaxed);
      return answer;
    } catch (...) {
      return std::nullopt;  // the handler checks again with the body
    }
  }
  // The in-flight body budget (HttpServerOptions::max_inflight_body_bytes).
  bool ReserveBody(uint64_t bytes) { return body_budget_.Reserve(bytes); }
  void ReleaseBody(uint64_t bytes) { body_budget_.Release(bytes); }
  // More than half of max_connections are open: idle waits are cut short.
  bool UnderPressure() const {
    return open_connections_.load(std::memory_order_relaxed) * 2 > options_.max_connections;
  }
  HttpServer::Stats stats() const {
    HttpServer::Stats out;
    out.refused_connections = refused_connections_.load(std::memory_order_relaxed);
    out.refused_connections_per_client = refused_per_client_.load(std::memory_order_relaxed);
    out.closed_idle_for_new = closed_idle_.load(std::memory_order_relaxed);
    out.refused_body_budget = body_budget_.refused();
    out.refused_before_body = refused_before_body_.load(std::memory_order_relaxed);
    out.inflight_body_bytes = body_budget_.used();
    out.open_connections = open_connections_.load(std::memory_order_relaxed);
    return out;
  }
  void NotifyComplete(const HttpRequest& req, const HttpResponse& res, double ms) noexcept {
    if (!options_.on_complete) return;
    try {
      options_.on_complete(req, res, ms);
    } catch (...) {
    }
  }
  void Unregister(Session* session, const std::string& client) EXCLUDES(sessions_mu_) {
    {
      MutexLock lock(&sessions_mu_);
      sessions_.erase(session);
      open_connections_.store(sessions_.size(), std::memory_order_relaxed);
      auto it = per_client_.find(client);
      if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
    }
    sessions_cv_.SignalAll();
  }

 private:
  static bool Ask(const std::function<bool(const HttpRequest&)>& predicate,
                  const HttpRequest& request) noexcept {
    if (!predicate) return false;
    try {
      return predicate(request);
    } catch (...) {
      return false;  // the worker pool serves anything
    }
  }
  void DoAccept();
  void OnAccept(beast::error_code ec, tcp::socket socket) EXCLUDES(sessions_mu_);
  // A session waiting idle for a request's first byte, to close for a new connection; null if
  // none.
  std::shared_ptr<Session> FindIdleLocked() REQUIRES(sessions_mu_);
  std::vector<std::shared_ptr<Session>> LiveSessions() EXCLUDES(sessions_mu_);
  // True once no session is left; false when `deadline` passed first.
  bool WaitForSessions(Clock::time_point deadline) EXCLUDES(sessions_mu_);

  const HttpServerOptions options_;
  const HttpHandler handler_;
  const HttpErrorRenderer errors_;

  mutable Mutex sessions_mu_;
  CondVar sessions_cv_;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_ GUARDED_BY(sessions_mu_);
  // Open connections per client address.
  std::unordered_map<std::string, size_t> per_client_ GUARDED_BY(sessions_mu_);
  std::atomic<size_t> open_connections_{0};  // sessions_.size(), readable without the lock
  BodyBudget body_budget_{options_.max_inflight_body_bytes};
  std::atomic<uint64_t> refused_connections_{0};
  std::atomic<uint64_t> refused_per_client_{0};
  std::atomic<uint64_t> closed_idle_{0};
  std::atomic<uint64_t> refused_before_body_{0};

  Mutex lifecycle_mu_;  // serializes Start/Stop
  bool started_ GUARDED_BY(lifecycle_mu_) = false;
  bool running_ GUARDED_BY(lifecycle_mu_) = false;
  std::atomic<bool> stopping_{false};
  std::atomic<uint16_t> port_{0};
  std::vector<std::thread> io_threads_ GUARDED_BY(lifecycle_mu_);

  // Declared after sessions_: destroying the io_context destroys pending handlers, which may hold
  // the last reference to a session, whose destructor unregisters itself.
  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_
      GUARDED_BY(lifecycle_mu_);
  tcp::acceptor acceptor_;          // on its own strand: Stop closes it from another thread
  net::steady_timer accept_retry_;  // back-off after accept errors such as EMFILE
  // Declared after ioc_ so it is destroyed first; it is always shut down by Stop anyway, because
  // its tasks hold sessions whose sockets belong to ioc_.
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<ComputeScheduler> compute_;  // set by Start; closed once the I/O threads joined
  PendingCount deferred_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // `reject`: empty to serve the connection, else the reason it is answered 503 and closed.
  Session(tcp::socket&& socket, Core& core, std::string remote_ip, bool remote_is_loopback,
          std::string reject)
      : core_(core),
        opts_(core.options()),
        stream_(std::move(socket)),
        body_timer_(stream_.get_executor()),
        remote_ip_(std::move(remote_ip)),
        remote_is_loopback_(remote_is_loopback),
        reject_(std::move(reject)),
        accepted_at_(Clock::now()) {}

  ~Session() {
    ReleaseBody();
    core_.Unregister(this, remote_ip_);
  }

  // Waiting for the first byte of a request (advisory: read without the strand).
  bool waiting_idle() const { return waiting_idle_.load(std::memory_order_relaxed); }

  // Closes the connection if it is still waiting idle (on the strand).
  void CloseIfIdle() {
    if (state_ == State::kIdle) Close();
  }

  auto executor() { return stream_.get_executor(); }

  void Start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->reject_.empty()) {
        self->started_at_ = Clock::now();
        self->ResetRequest();
        self->keep_alive_ = false;
        self->WriteResponse(self->core_.Busy(self->reject_));
      } else {
        self->ReadNextRequest();
      }
    });
  }

  // Stop requested (on the strand): drop connections that have no request in flight.
  void OnStop() {
    switch (state_) {
      case State::kIdle:
      case State::kReadingHeader:
      case State::kLingering:
        Close();
        break;
      case State::kReadingBody:  // a request in flight: let it finish, then close
      case State::kHandling:
      case State::kWriting:
      case State::kClosed:
        break;
    }
  }

  // Grace period over (on the strand).
  void ForceClose() { Close(); }

 private:
  enum class State {
    kIdle,
    kReadingHeader,
    kReadingBody,
    kHandling,
    kWriting,
    kLingering,
    kClosed
  };

  void ResetRequest() {
    // clear() keeps capacity: a keep-alive connection reuses its strings and header vector.
    req_.method.clear();
    req_.path.clear();
    req_.raw_target.clear();
    req_.query.clear();
    req_.headers.clear();
    req_.body.clear();
    head_request_ = false;
    if (req_.remote_ip.empty()) {
      req_.remote_ip = remote_ip_;
      req_.remote_is_loopback = remote_is_loopback_;
    }
  }

  void NewParser() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(opts_.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    parser_->body_limit(static_cast<std::uint64_t>(opts_.max_body_bytes));
  }

  void ReadNextRequest() {
    if (core_.stopping()) return Close();
    ResetRequest();
    NewParser();
    if (buffer_.size() > 0) {
      // Pipelined bytes already buffered: parse them now.
      first_request_ = false;
      started_at_ = Clock::now();
      return ReadHeader(started_at_ + opts_.header_timeout);
    }
    // Wait for the first byte: a new connection as long as it may take to send a whole header
    // (so one that never sends a byte is dropped as fast as a trickling one), a keep-alive one
    // idle_timeout; either only idle_timeout_under_pressure while many connections are open, so
    // idle sockets cannot hold the slots that clients with requests need.
    state_ = State::kIdle;
    waiting_idle_.store(true, std::memory_order_relaxed);
    auto wait = first_request_ ? opts_.header_timeout : opts_.idle_timeout;
    if (core_.UnderPressure()) wait = std::min(wait, opts_.idle_timeout_under_pressure);
    stream_.expires_after(wait);
    stream_.async_read_some(
        buffer_.prepare(kReadChunk),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnIdleRead(ec, n); });
  }

  void OnIdleRead(beast::error_code ec, size_t n) {
    waiting_idle_.store(false, std::memory_order_relaxed);
    if (state_ == State::kClosed) return;
    if (ec) return Close();  // idle timeout, peer closed, or Stop
    buffer_.commit(n);
    // A new connection's header is due header_timeout after it was accepted, however the time
    // was split between the first byte and the rest.
    started_at_ = first_request_ ? accepted_at_ : Clock::now();
    first_request_ = false;
    ReadHeader(started_at_ + opts_.header_timeout);
  }

  void ReadHeader(Clock::time_point deadline) {
    state_ = State::kReadingHeader;
    stream_.expires_at(deadline);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec) return OnReadError(ec);
    const auto& h = parser_->get();
    req_.method.assign(h.method_string().data(), h.method_string().size());
    req_.raw_target.assign(h.target().data(), h.target().size());
    SplitTarget(req_.raw_target, req_.path, req_.query);
    version_ = h.version();
    keep_alive_ = h.keep_alive();
    head_request_ = h.method() == http::verb::head;
    req_.headers.reserve(16);
    for (const auto& field : h) {
      const auto name = field.name_string();
      std::string lower(name.data(), name.size());
      for (char& c : lower) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
      req_.headers.emplace_back(std::move(lower),
                                std::string(field.value().data(), field.value().size()));
    }
    // The API may answer from the head alone (no key: 401): then no body byte is read and no
    // "100 Continue" is sent, so an unauthenticated client cannot make the server hold a body.
    if (auto answer = core_.CheckHead(req_)) return RefuseBeforeBody(std::move(*answer));
    // Beast already refused a declared Content-Length above body_limit (error::body_limit), so a
    // huge body is never read; chunked bodies are checked as they arrive. A declared length is
    // taken from the in-flight budget before any of it is read.
    if (const auto length = parser_->content_length(); length && *length > 0) {
      if (!ReserveBodyBytes(*length)) return RefuseBusy();
    }
    auto expect = h.find(http::field::expect);
    if (expect != h.end() && h.version() >= 11 &&
        EqualsIgnoreAsciiCase(Sv(expect->value()), "100-continue") && !parser_->is_done()) {
      state_ = State::kReadingBody;
      stream_.expires_after(opts_.write_timeout);
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = shared_from_this()](beast::error_code write_ec, size_t) {
                         if (self->state_ == State::kClosed) return;
                         if (write_ec) return self->Close();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return Dispatch();
    state_ = State::kReadingBody;
    // body_timeout for the whole body. When it passes, the read is cancelled and the client told
    // 408 (within write_timeout, the stream's own deadline, which closes the socket if even the
    // answer cannot be written).
    stream_.expires_after(opts_.body_timeout + opts_.write_timeout);
    body_timed_out_ = false;
    body_timer_.expires_after(opts_.body_timeout);
    body_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->state_ != State::kReadingBody) return;
      self->body_timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
    ReadSomeBody();
  }

  // Reads the body piece by piece so that a chunked body (no declared length) is charged to the
  // in-flight budget as it grows, and refused the moment it would overflow it.
  void ReadSomeBody() {
    http::async_read_some(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (self->state_ == State::kClosed) return;
          // The timer may have fired after this read completed (nothing left to cancel).
          if (self->body_timed_out_ && !self->parser_->is_done()) return self->FailBodyTimeout();
          if (ec) return self->OnReadError(ec);
          const size_t have = self->parser_->get().body().size();
          if (have > self->reserved_body_ && !self->ReserveBodyBytes(std::max<size_t>(
                                                 have - self->reserved_body_, kBodyReserveStep))) {
            return self->RefuseBusy();
          }
          if (self->parser_->is_done()) return self->Dispatch();
          self->ReadSomeBody();
        });
  }

  bool ReserveBodyBytes(uint64_t bytes) {
    if (!core_.ReserveBody(bytes)) return false;
    reserved_body_ += bytes;
    return true;
  }

  void ReleaseBody() {
    if (reserved_body_ == 0) return;
    core_.ReleaseBody(reserved_body_);
    reserved_body_ = 0;
  }

  // An answer given from the request head alone: its body (if any) is never read, so the
  // connection cannot carry another request and closes after the answer.
  void RefuseBeforeBody(HttpResponse answer) {
    parser_.reset();
    keep_alive_ = false;
    WriteResponse(std::move(answer));
  }

  void RefuseBusy() {
    body_timer_.cancel();
    parser_.reset();
    keep_alive_ = false;
    WriteResponse(core_.Busy("server is busy: too many request body bytes in flight"));
  }

  // The body did not arrive within body_timeout: 408, and the connection closes (its unread
  // rest cannot be told from a next request). The envelope's code stays InvalidParameter: the
  // error renderer speaks the APIs' codes, and none of them has one for a timeout.
  void FailBodyTimeout() {
    if (parser_ && parser_->is_header_done()) version_ = parser_->get().version();
    parser_.reset();
    keep_alive_ = false;
    HttpResponse r = core_.RenderError(
        StatusCode::kInvalidParameter,
        "request body not received within " + std::to_string(opts_.body_timeout.count()) + " ms");
    r.status = 408;
    WriteResponse(std::move(r));
  }

  void OnReadError(beast::error_code ec) {
    if (ec == http::error::header_limit) {
      return FailRequest(StatusCode::kPayloadTooLarge, "request header exceeds the limit of " +
                                                           std::to_string(opts_.max_header_bytes) +
                                                           " bytes");
    }
    if (ec == http::error::body_limit) {
      return FailRequest(
          StatusCode::kPayloadTooLarge,
          "request body exceeds the limit of " + std::to_string(opts_.max_body_bytes) + " bytes");
    }
    // The peer went away (before or inside a request), a deadline passed, or Stop closed us:
    // nobody is left to answer (a body that stalls is answered 408 by FailBodyTimeout first).
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec.category() != HttpErrorCategory()) {
      return Close();
    }
    FailRequest(StatusCode::kInvalidParameter, "malformed HTTP request: " + ec.message());
  }

  void Dispatch() {
    body_timer_.cancel();
    auto& msg = parser_->get();
    // Trailers of a chunked body arrive after the head; keep-alive is decided by the head.
    req_.body = std::move(msg.body());
    parser_.reset();

    state_ = State::kHandling;
    stream_.expires_never();  // the handler may take long; write_timeout starts with the write
    // The handler (on a worker, or on an I/O thread for a compute-bound request) reads req_ while
    // the strand leaves it alone (state kHandling), then hands the response back to the strand.
    if (core_.RunsInline(req_)) {
      req_.on_io_thread = true;
      return AnswerOrRetryOnWorker(core_.RunHandler(req_));
    }
    const bool queued = core_.IsComputeBound(req_)
                            ? core_.RunOrQueueCompute([self = shared_from_this()] {
                                self->req_.on_io_thread = true;
                                self->AnswerOrRetryOnWorker(self->core_.RunHandler(self->req_));
                              })
                            : core_.Submit(HandlerTask());
    if (!queued) WriteResponse(core_.Overloaded());
  }

  // Runs the handler (on a worker) and answers.
  std::function<void()> HandlerTask() {
    return [self = shared_from_this()] {
      self->req_.on_io_thread = false;
      self->Deliver(self->core_.RunHandler(self->req_));
    };
  }

  // The answer of a handler run on an I/O thread, unless it would wait long (a cold scope): then a
  // worker runs it again.
  void AnswerOrRetryOnWorker(HttpResponse res) {
    if (!res.run_on_worker) return Deliver(std::move(res));
    if (!core_.Submit(HandlerTask())) Respond(core_.Overloaded());
  }

  // A handler's answer: sent, or for a deferred one (HttpResponse::deferred) started here and
  // sent when its reply comes.
  void Deliver(HttpResponse res) {
    if (!res.deferred) return Respond(std::move(res));
    // Copies of the reply hold only this state: the session reference leaves it at the first
    // call, so a copy that outlives the server does not keep the session (which calls into Core
    // when destroyed) alive.
    struct Pending {
      Pending(std::shared_ptr<Session> s, Core* c) : session(std::move(s)), core(c) {}
      Mutex mu;
      std::shared_ptr<Session> session GUARDED_BY(mu);  // taken by the first reply
      Core* const core;
    };
    auto pending = std::make_shared<Pending>(shared_from_this(), &core_);
    core_.BeginDeferred();
    HttpReply reply = [pending](HttpResponse answer) {
      std::shared_ptr<Session> session;
      {
        MutexLock lock(&pending->mu);
        session.swap(pending->session);
      }
      if (!session) return;  // answered already
      Core* core = pending->core;
      if (answer.deferred) {
        answer = core->RenderError(StatusCode::kInternal, "handler deferred its answer twice");
      }
      session->Respond(std::move(answer));
      session.reset();
      core->EndDeferred();
    };
    try {
      res.deferred(reply);
    } catch (...) {
      reply(core_.RenderError(StatusCode::kInternal, "internal error while handling the request"));
    }
  }

  // On this session's strand already (a compute-bound request run by Dispatch itself) the write
  // starts at once; from another thread it is posted to the session's strand.
  void Respond(HttpResponse res) {
    net::dispatch(stream_.get_executor(),
                  [self = shared_from_this(), res = std::move(res)]() mutable {
                    self->WriteResponse(std::move(res));
                  });
  }

  // Answers a transport error and closes the connection afterwards.
  void FailRequest(StatusCode code, const std::string& message) {
    if (parser_ && parser_->is_header_done()) version_ = parser_->get().version();
    parser_.reset();
    keep_alive_ = false;
    WriteResponse(core_.RenderError(code, message));
  }

  void WriteResponse(HttpResponse&& r) {
    if (state_ == State::kClosed) return;  // force-closed while the handler ran
    if (core_.stopping()) keep_alive_ = false;
    res_ = {};
    res_.version(version_);
    if (r.status < 100 || r.status > 999) {
      r = core_.RenderError(StatusCode::kInternal, "handler returned an invalid HTTP status");
    }
    res_.result(static_cast<unsigned>(r.status));
    res_.set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) {
      if (EqualsIgnoreAsciiCase(name, "connection")) {
        if (EqualsIgnoreAsciiCase(value, "close")) keep_alive_ = false;
        continue;
      }
      if (EqualsIgnoreAsciiCase(name, "content-length") ||
          EqualsIgnoreAsciiCase(name, "transfer-encoding"))
        continue;
      res_.insert(name, value);
    }
    res_.body() = std::move(r.body);
    res_.keep_alive(keep_alive_);
    res_.prepare_payload();
    if (head_request_) {
      // HEAD: the GET answer's head, with the length its body would have, and no body.
      const size_t length = res_.body().size();
      res_.body().clear();
      res_.content_length(length);
    }
    last_ = std::move(r);  // kept for on_complete; the body is moved back after the write

    state_ = State::kWriting;
    body_timer_.cancel();
    stream_.expires_after(opts_.write_timeout);
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->OnWrite(ec);
    });
  }

  void OnWrite(beast::error_code ec) {
    last_.body = std::move(res_.body());
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - started_at_).count();
    core_.NotifyComplete(req_, last_, ms);
    // Free bodies now rather than holding up to max_body_bytes per idle keep-alive connection.
    std::string().swap(last_.body);
    std::string().swap(req_.body);
    ReleaseBody();
    last_.headers.clear();
    if (state_ == State::kClosed) return;
    if (ec) return Close();
    if (!keep_alive_) return LingerClose();
    ReadNextRequest();
  }

  void LingerClose() {
    if (core_.stopping()) return Close();
    state_ = State::kLingering;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    buffer_.clear();
    DrainInput();
  }

  void DrainInput() {
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (self->state_ == State::kClosed) return;
                              if (ec) return self->Close();  // EOF from the client, or kLingerTime
                              self->DrainInput();            // discard (nothing was committed)
                            });
  }

  void Close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    body_timer_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();  // cancels pending operations; their handlers see kClosed and return
  }

  Core& core_;
  const HttpServerOptions& opts_;
  beast::tcp_stream stream_;
  net::steady_timer body_timer_;  // body_timeout of the request whose body is being read
  bool body_timed_out_ = false;   // body_timer_ cancelled the body's read
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  HttpRequest req_;
  HttpResponse last_;
  const std::string remote_ip_;
  const bool remote_is_loopback_;
  const std::string reject_;
  const Clock::time_point accepted_at_;
  bool first_request_ = true;
  bool keep_alive_ = true;
  bool head_request_ = false;
  unsigned version_ = 11;
  uint64_t reserved_body_ = 0;  // bytes of the in-flight body budget this request holds
  std::atomic<bool> waiting_idle_{false};
  State state_ = State::kIdle;
  Clock::time_point started_at_{};
};

// ---------------------------------------------------------------------------------------------

HttpResponse Core::RunHandler(const HttpRequest& request) noexcept {
  try {
    return handler_(request);
  } catch (...) {
    // Never echo the exception text: it may quote request content, which must not leak or be
    // logged.
    return RenderError(StatusCode::kInternal, "internal error while handling the request");
  }
}

HttpResponse Core::RenderError(StatusCode code, const std::string& message) noexcept {
  if (errors_) {
    try {
      return errors_(code, message);
    } catch (...) {
      // fall through to the plain rendering
    }
  }
  return PlainErrorResponse(code, message);
}

Status Core::Start() {
  MutexLock lifecycle(&lifecycle_mu_);
  if (started_) return Status::Unavailable("HTTP server can only be started once");
  if (options_.io_threads < 1 || options_.worker_threads < 1) {
    return Status::InvalidParameter("io_threads and worker_threads must be at least 1");
  }
  if (options_.max_connections < 1)
    return Status::InvalidParameter("max_connections must be at least 1");
  if (options_.max_inflight_body_bytes < options_.max_body_bytes) {
    // Else a request of the largest allowed size could never be admitted.
    return Status::InvalidParameter("max_inflight_body_bytes must be at least max_body_bytes");
  }

  beast::error_code ec;
  net::ip::address address = net::ip::make_address(options_.host, ec);
  if (ec) {
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(options_.host, "", ec);
    if (ec || results.empty()) {
      return Status::Unavailable("cannot listen on " + options_.host + ":" +
                                 std::to_string(options_.port) + ": cannot resolve host (" +
                                 ec.message() + ")");
    }
    address = results.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, options_.port);
  auto fail = [&](const char* step) {
    beast::error_code ignored;
    acceptor_.close(ignored);
    return Status::Unavailable("cannot listen on " + options_.host + ":" +
                               std::to_string(options_.port) + ": " + step +
                               " failed: " + ec.message());
  };
  if (acceptor_.open(endpoint.protocol(), ec)) return fail("open");
  if (acceptor_.set_option(net::socket_base::reuse_address(true), ec)) return fail("setsockopt");
  if (acceptor_.bind(endpoint, ec)) return fail("bind");
  if (acceptor_.listen(net::socket_base::max_listen_connections, ec)) return fail("listen");
  port_.store(acceptor_.local_endpoint(ec).port(), std::memory_order_release);

  started_ = true;
  running_ = true;
  pool_ = std::make_unique<WorkerPool>(options_.worker_threads, options_.max_queued_requests);
  compute_ = std::make_unique<ComputeScheduler>(
      options_.compute_slots > 0 ? options_.compute_slots
                                 : static_cast<int>(std::thread::hardware_concurrency()),
      options_.max_queued_requests,
      [this](ComputeScheduler::Task task) { net::post(ioc_, std::move(task)); });
  work_.emplace(ioc_.get_executor());
  net::post(acceptor_.get_executor(), [this] { DoAccept(); });
  io_threads_.reserve(options_.io_threads);
  for (int i = 0; i < options_.io_threads; ++i) {
    io_threads_.emplace_back([this] {
      NameThisThread("http-io");
      for (;;) {
        try {
          ioc_.run();
          return;
        } catch (...) {
          // A handler threw (should not happen); keep serving rather than terminate.
        }
      }
    });
  }
  return Status::Ok();
}

void Core::DoAccept() {
  acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket));
  });
}

void Core::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (stopping() || !acceptor_.is_open()) return;
  if (ec) {
    if (ec == net::error::operation_aborted) return;
    // EMFILE and friends: back off instead of spinning.
    accept_retry_.expires_after(std::chrono::milliseconds(50));
    accept_retry_.async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec) DoAccept();
    });
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  std::string client;
  bool loopback = false;
  const tcp::endpoint remote = socket.remote_endpoint(ignored);
  if (!ignored) {
    net::ip::address addr = remote.address();
    if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
      addr = net::ip::make_address_v4(net::ip::v4_mapped, addr.to_v6());
    }
    client = addr.to_string();
    loopback = addr.is_loopback();
  }
  std::string reject;
  std::shared_ptr<Session> session, idle;
  {
    MutexLock lock(&sessions_mu_);
    size_t& from_client = per_client_[client];
    if (options_.max_connections_per_client > 0 &&
        from_client >= options_.max_connections_per_client) {
      reject = "too many connections from this client address";
      refused_per_client_.fetch_add(1, std::memory_order_relaxed);
    } else if (sessions_.size() >= options_.max_connections) {
      idle = FindIdleLocked();
      if (!idle) {
        reject = "server is overloaded: too many connections";
        refused_connections_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    ++from_client;  // a refused connection also counts until it is closed
    session = std::make_shared<Session>(std::move(socket), *this, client, loopback, reject);
    sessions_.emplace(session.get(), session);
    open_connections_.store(sessions_.size(), std::memory_order_relaxed);
  }
  if (idle) {
    // The limit is soft by the few connections being closed at this moment: the idle one goes
    // on its own strand, and may have started a request meanwhile (then it stays).
    closed_idle_.fetch_add(1, std::memory_order_relaxed);
    net::post(idle->executor(), [idle] { idle->CloseIfIdle(); });
  }
  session->Start();
  DoAccept();
}

std::shared_ptr<Session> Core::FindIdleLocked() {
  for (auto& [ptr, weak] : sessions_) {
    if (!ptr->waiting_idle()) continue;
    if (auto s = weak.lock()) return s;
  }
  return nullptr;
}

std::vector<std::shared_ptr<Session>> Core::LiveSessions() {
  std::vector<std::shared_ptr<Session>> out;
  MutexLock lock(&sessions_mu_);
  out.reserve(sessions_.size());
  for (auto& [ptr, weak] : sessions_) {
    if (auto s = weak.lock()) out.push_back(std::move(s));
  }
  return out;
}

bool Core::WaitForSessions(Clock::time_point deadline) {
  MutexLock lock(&sessions_mu_);
  bool signalled = true;
  while (!sessions_.empty() && signalled) {
    signalled = sessions_cv_.WaitUntil(&sessions_mu_, deadline);
  }
  return sessions_.empty();
}

void Core::Stop(std::chrono::milliseconds grace) {
  MutexLock lifecycle(&lifecycle_mu_);
  if (!running_) return;
  running_ = false;
  stopping_.store(true, std::memory_order_release);

  // 1. Stop accepting (the acceptor lives on its strand).
  std::promise<void> closed;
  net::post(acceptor_.get_executor(), [this, &closed] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
    closed.set_value();
  });
  closed.get_future().wait();

  // 2. Idle connections close now; in-flight requests finish and answer with "Connection: close".
  for (auto& s : LiveSessions()) net::post(s->executor(), [s] { s->OnStop(); });
  // 3. Wait for them, then close whatever is left.
  if (!WaitForSessions(Clock::now() + grace)) {
    pool_->DiscardPending();
    compute_->DiscardPending();
    for (auto& s : LiveSessions()) net::post(s->executor(), [s] { s->ForceClose(); });
    WaitForSessions(Clock::now() + std::chrono::milliseconds(200));
  }

  // 4. Join. Handlers still running are waited for (they cannot be interrupted); the responses
  //    they post land on a stopped io_context and are drained below against closed sockets.
  work_.reset();
  ioc_.stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
  pool_->Shutdown(/*discard_pending=*/true);
  compute_->Close();        // nothing runs them now: their sessions are closed below
  deferred_.WaitForNone();  // their replies post to the stopped io_context, drained below
  for (auto& s : LiveSessions()) net::post(s->executor(), [s] { s->ForceClose(); });
  ioc_.restart();
  ioc_.poll();
}

}  // namespace server_detail

// ---------------------------------------------------------------------------------------------

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, HttpHandler handler, HttpErrorRenderer errors)
      : core(std::move(options), std::move(handler), std::move(errors)) {}
  server_detail::Core core;
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler, HttpErrorRenderer errors)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(errors))) {}

HttpServer::~HttpServer() = default;  // Core's destructor stops

Status HttpServer::Start() { return impl_->core.Start(); }
uint16_t HttpServer::port() const { return impl_->core.port(); }
void HttpServer::Stop(std::chrono::milliseconds grace) { impl_->core.Stop(grace); }
size_t HttpServer::active_connections() const { return impl_->core.active_connections(); }
HttpServer::Stats HttpServer::stats() const { return impl_->core.stats(); }

}  // namespace engram
