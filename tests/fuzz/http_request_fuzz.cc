// Fuzz target for reading an HTTP request: Boost.Beast's request parser with header and body
// limits (as the server sets them), fed the bytes in two pieces, then the request target split
// into path and query (server/request_target.h). Any input must give a request or an error, never
// a crash, hang, sanitizer report or exception.
//
// Built as a libFuzzer binary with clang (-DENGRAM_FUZZ=ON, scripts/fuzz.sh) and always as a ctest
// over tests/fuzz/corpus/http_request_fuzz and mutations of it (fuzz_smoke_main.cc).
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/request_target.h"

namespace http = boost::beast::http;

namespace {

// Reads `piece` the way http::read does from a socket: appended to what the parser left unread
// in `buffer` (it consumes a header only once complete), then put() until it needs more, is done
// or stops with an error. False once an error stopped it.
bool Feed(http::request_parser<http::string_body>& parser, std::string& buffer,
          std::string_view piece) {
  buffer.append(piece);
  boost::beast::error_code ec;
  while (!buffer.empty() && !parser.is_done()) {
    const size_t used = parser.put(boost::asio::buffer(buffer.data(), buffer.size()), ec);
    buffer.erase(0, used);
    if (ec == http::error::need_more) return true;
    if (ec) return false;
    if (used == 0) return true;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string path, query;
  http::request_parser<http::string_body> parser;
  parser.header_limit(8 << 10);
  parser.body_limit(64 << 10);
  parser.eager(true);
  // Two pieces: the parser must keep its state across reads that split a line or a token.
  std::string buffer;
  const size_t cut = size / 2;
  bool ok = Feed(parser, buffer, input.substr(0, cut)) && Feed(parser, buffer, input.substr(cut));
  if (ok && !parser.is_done()) {
    boost::beast::error_code ec;
    parser.put_eof(ec);
  }
  if (parser.is_header_done()) {
    const auto target = parser.get().target();
    engram::SplitTarget(std::string_view(target.data(), target.size()), path, query);
    engram::PercentDecode(query, path);
  }
  // The target parser on its own too, for what Beast would refuse before getting that far.
  engram::SplitTarget(input.substr(0, 4096), path, query);
  return 0;
}
