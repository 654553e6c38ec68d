#include "common/json_writer.h"

#include <charconv>
#include <cstdint>
#include <string_view>

#include "common/utf8.h"

namespace engram {

namespace {

using json = nlohmann::json;

// What the library writes for a value this file does not write itself (floats, whose shortest
// form is the library's own algorithm; strings that are not valid UTF-8; binary; discarded).
void AppendAsLibrary(const json& value, std::string& out) {
  out += value.dump(-1, ' ', false, json::error_handler_t::replace);
}

template <typename Int>
void AppendInteger(Int v, std::string& out) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

// A valid UTF-8 string as the library escapes it without ensure_ascii: quote, backslash and the
// C0 controls; every other byte (multi-byte sequences and DEL included) as it is.
void AppendString(std::string_view s, std::string& out) {
  out += '"';
  size_t run = 0;  // start of the bytes not yet written
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(escaped, sizeof escaped);
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

}  // namespace

void AppendJson(const json& value, std::string& out) {
  switch (value.type()) {
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case json::value_t::number_integer:
      AppendInteger(value.get<int64_t>(), out);
      return;
    case json::value_t::number_unsigned:
      AppendInteger(value.get<uint64_t>(), out);
      return;
    case json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      if (IsValidUtf8(s)) {
        AppendString(s, out);
      } else {
        AppendAsLibrary(value, out);
      }
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& element : value) {
        if (!first) out += ',';
        first = false;
        AppendJson(element, out);
      }
      out += ']';
      return;
    }
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, element] : value.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        if (IsValidUtf8(key)) {
          AppendString(key, out);
        } else {
          AppendAsLibrary(json(key), out);
        }
        out += ':';
        AppendJson(element, out);
      }
      out += '}';
      return;
    }
    default:
      AppendAsLibrary(value, out);
  }
}

}  // namespace engram
