// Status and Result<T>: expected failures as values.
//
// Status codes map one-to-one onto the API error codes (docs/api/README.md), so a Status produced
// deep in the store or the index can be rendered by the HTTP layer without translation tables.
// Thread-safety: value types, safe to copy between threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace engram {

enum class StatusCode {
  kOk = 0,
  kInvalidParameter,      // 400 InvalidParameter
  kServiceIdNotExist,     // 400 ServiceIdNotExist
  kUnauthenticated,       // 401 InvalidApiKey
  kForbidden,             // 403 Forbidden
  kNotFound,              // 404 NotFound
  kMethodNotAllowed,      // 405 MethodNotAllowed
  kConflict,              // 409 Conflict
  kPayloadTooLarge,       // 413 PayloadTooLarge
  kUnsupportedMediaType,  // 415 UnsupportedMediaType (a Content-Encoding the server does not read)
  kOutOfRange,      // 422 OutOfRange (a well-formed value outside its range, where an API asks 422)
  kThrottled,       // 429 Throttling.RateQuota
  kInternal,        // 500 InternalServerError
  kNotImplemented,  // 501 NotImplemented (a feature of a compatible API Engram lacks)
  kUnavailable,     // 503 ServiceUnavailable
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidParameter(std::string m) {
    return {StatusCode::kInvalidParameter, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status Forbidden(std::string m) { return {StatusCode::kForbidden, std::move(m)}; }
  static Status Unauthenticated(std::string m) {
    return {StatusCode::kUnauthenticated, std::move(m)};
  }
  static Status PayloadTooLarge(std::string m) {
    return {StatusCode::kPayloadTooLarge, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// The HTTP status and the API error code string for a status code.
int HttpStatusOf(StatusCode code);
const char* ApiCodeOf(StatusCode code);

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

#define ENGRAM_RETURN_IF_ERROR(expr) \
  do {                               \
    ::engram::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)

}  // namespace engram
