// Property tests for ReadJson: generated values survive dump -> ReadJson unchanged, nesting depth
// is accepted exactly up to the limit, and arbitrary bytes give a value or a Status, never a crash
// or an exception.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "common/json_reader.h"

namespace engram {
namespace {

using json = nlohmann::json;

// A uniform pick in [lo, hi). rapidcheck scales inRange with the size of the current case, which
// would keep most generated values flat scalars; at full size the depths and widths vary.
template <typename T = int>
T Pick(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Valid UTF-8 text mixing what JSON must escape (quotes, backslashes, control characters, NUL)
// with multi-byte characters up to the supplementary planes.
std::string GenText() {
  const int n = Pick(0, 12);
  std::string s;
  for (int i = 0; i < n; ++i) {
    uint32_t cp = 0;
    switch (Pick(0, 5)) {
      case 0:
        cp = Pick<uint32_t>(0, 0x20);
        break;
      case 1:
        cp = *rc::gen::element<uint32_t>('"', '\\', '/', 'a', ' ', 0x7F);
        break;
      case 2:
        cp = Pick<uint32_t>(0x20, 0x7F);
        break;
      case 3:
        cp = Pick<uint32_t>(0x80, 0xD800);
        break;
      default:
        cp = Pick<uint32_t>(0xE000, 0x110000);
        break;
    }
    AppendUtf8(s, cp);
  }
  return s;
}

json GenValue(int depth_left) {
  // Half the kinds are containers while depth is left, so values nest deeply often enough.
  const int kinds = depth_left > 0 ? 12 : 6;
  switch (Pick(0, kinds)) {
    case 0:
      return nullptr;
    case 1:
      return *rc::gen::arbitrary<bool>();
    case 2:
      return *rc::gen::resize(100, rc::gen::arbitrary<int64_t>());
    case 3:
      return *rc::gen::resize(100, rc::gen::arbitrary<uint64_t>());
    case 4: {
      double d = *rc::gen::resize(100, rc::gen::arbitrary<double>());
      if (!std::isfinite(d)) d = 0.5;  // JSON has no inf or NaN
      return d;
    }
    case 5:
      return GenText();
    case 6:
    case 7:
    case 8: {
      json a = json::array();
      const int n = Pick(0, 5);
      for (int i = 0; i < n; ++i) a.push_back(GenValue(depth_left - 1));
      return a;
    }
    default: {
      json o = json::object();
      const int n = Pick(0, 5);
      for (int i = 0; i < n; ++i) o[GenText()] = GenValue(depth_left - 1);
      return o;
    }
  }
}

int DepthOf(const json& v) {
  if (!v.is_structured()) return 0;
  int d = 0;
  for (const auto& e : v) d = std::max(d, DepthOf(e));
  return d + 1;
}

RC_GTEST_PROP(JsonReaderProperty, DumpedValuesReadBackUnchanged, ()) {
  const json value = GenValue(Pick(0, 6));
  const JsonReadLimits limits{.max_depth = 6, .refuse_duplicate_keys = true};
  for (const std::string& text : {DumpJson(value), value.dump(2)}) {
    auto back = ReadJson(text, limits);
    RC_ASSERT(back.ok());
    RC_ASSERT(*back == value);
  }
}

RC_GTEST_PROP(JsonReaderProperty, DepthIsAcceptedExactlyUpToTheLimit, ()) {
  const int max_depth = Pick(0, 80);
  const int depth = Pick(0, 120);
  std::string text;
  std::string closing;
  for (int i = 0; i < depth; ++i) {
    if (*rc::gen::arbitrary<bool>()) {
      text += "{\"k\":";
      closing.insert(0, "}");
    } else {
      text += "[0,";
      closing.insert(0, "]");
    }
  }
  text += "1" + closing;
  auto r = ReadJson(text, JsonReadLimits{.max_depth = max_depth});
  RC_ASSERT(r.ok() == (depth <= max_depth));
  if (r.ok()) RC_ASSERT(DepthOf(*r) == depth);
}

RC_GTEST_PROP(JsonReaderProperty, ArbitraryBytesNeverThrow, ()) {
  std::string text = *rc::gen::arbitrary<std::string>();
  // Bias towards JSON-looking input so the parser gets past the first byte.
  if (*rc::gen::arbitrary<bool>()) {
    const json value = GenValue(Pick(0, 4));
    std::string dumped = DumpJson(value);
    const size_t at = dumped.empty() ? 0 : Pick<size_t>(0, dumped.size());
    text = dumped.substr(0, at) + text + dumped.substr(at);
  }
  const JsonReadLimits limits{.max_bytes = 4096, .max_depth = 8, .refuse_nul = true};
  auto r = ReadJson(text, limits);
  if (r.ok()) {
    RC_ASSERT(DepthOf(*r) <= 8);
    // Whatever is accepted dumps without throwing and reads back to the same value.
    auto again = ReadJson(DumpJson(*r), JsonReadLimits{.max_bytes = 1 << 20, .max_depth = 8});
    RC_ASSERT(again.ok());
    RC_ASSERT(*again == *r);
  } else {
    RC_ASSERT(!r.status().message().empty());
  }
}

}  // namespace
}  // namespace engram
