#include "common/status.h"

namespace engram {

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidParameter:
      return 400;
    case StatusCode::kServiceIdNotExist:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kForbidden:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kMethodNotAllowed:
      return 405;
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kPayloadTooLarge:
      return 413;
    case StatusCode::kUnsupportedMediaType:
      return 415;
    case StatusCode::kOutOfRange:
      return 422;
    case StatusCode::kThrottled:
      return 429;
    case StatusCode::kInternal:
      return 500;
    case StatusCode::kNotImplemented:
      return 501;
    case StatusCode::kUnavailable:
      return 503;
  }
  return 500;
}

const char* ApiCodeOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidParameter:
      return "InvalidParameter";
    case StatusCode::kServiceIdNotExist:
      return "ServiceIdNotExist";
    case StatusCode::kUnauthenticated:
      return "InvalidApiKey";
    case StatusCode::kForbidden:
      return "Forbidden";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kMethodNotAllowed:
      return "MethodNotAllowed";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kPayloadTooLarge:
      return "PayloadTooLarge";
    case StatusCode::kUnsupportedMediaType:
      return "UnsupportedMediaType";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kThrottled:
      return "Throttling.RateQuota";
    case StatusCode::kInternal:
      return "InternalServerError";
    case StatusCode::kNotImplemented:
      return "NotImplemented";
    case StatusCode::kUnavailable:
      return "ServiceUnavailable";
  }
  return "InternalServerError";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(ApiCodeOf(code_)) + ": " + message_;
}

}  // namespace engram
