#include "common/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "common/json_reader.h"

namespace engram {
namespace {

using json = nlohmann::json;

std::string LibraryText(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Strings that reach every branch: plain ASCII, escapes and C0 controls, DEL, valid multi-byte
// UTF-8, and invalid bytes (stray continuations, truncated and overlong sequences, surrogates).
std::string RandomString(std::mt19937_64& rng) {
  static const char* kPieces[] = {"plain words ",
                                  "\"",
                                  "\\",
                                  "/",
                                  "\b",
                                  "\f",
                                  "\n",
                                  "\r",
                                  "\t",
                                  "\x01",
                                  "\x1f",
                                  "\x7f",
                                  "\xc3\xa9",
                                  "\xe6\x97\xa5",
                                  "\xf0\x9f\x98\x80",
                                  "\x80",
                                  "\xc3",
                                  "\xe6\x97",
                                  "\xc0\xaf",
                                  "\xed\xa0\x80",
                                  "\xf4\x90\x80\x80",
                                  "\xff",
                                  "x",
                                  ""};
  std::string s;
  const int n = static_cast<int>(rng() % 12);
  for (int i = 0; i < n; ++i) s += kPieces[rng() % std::size(kPieces)];
  if (rng() % 4 == 0) s += std::string(1, static_cast<char>(rng() % 256));
  // Longer than the library's 512-byte output buffer now and then.
  if (rng() % 16 == 0) s = std::string(300 + rng() % 900, 'w') + s + std::string(rng() % 700, 'e');
  return s;
}

json RandomValue(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 4 ? 7 : 9)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng());
    case 3:
      return static_cast<uint64_t>(rng());
    case 4: {
      static const double kFloats[] = {0.0,
                                       -0.0,
                                       0.1,
                                       1.0,
                                       -2.5,
                                       1e300,
                                       1e-300,
                                       123456789.125,
                                       std::numeric_limits<double>::quiet_NaN(),
                                       std::numeric_limits<double>::infinity()};
      return rng() % 2 == 0 ? kFloats[rng() % std::size(kFloats)]
                            : std::ldexp(static_cast<double>(rng() % 1000000) - 500000,
                                         static_cast<int>(rng() % 80) - 40);
    }
    case 5:
    case 6:
      return RandomString(rng);
    case 7: {
      json a = json::array();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i)
        a.push_back(RandomValue(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i)
        o[RandomString(rng)] = RandomValue(rng, depth + 1);
      return o;
    }
  }
}

TEST(JsonWriterTest, WritesWhatTheLibraryWrites) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) {
    const json v = RandomValue(rng, 0);
    std::string out = "prefix";  // AppendJson appends
    AppendJson(v, out);
    ASSERT_EQ(out, "prefix" + LibraryText(v));
    ASSERT_EQ(DumpJson(v), LibraryText(v));
  }
}

TEST(JsonWriterTest, EscapesAndExtremes) {
  const json v = {{"s", std::string("a\"b\\c\x01\x7f\n\xc3\xa9", 10)},
                  {"bad", "\xff\xfe"},
                  {"min", std::numeric_limits<int64_t>::min()},
                  {"max", std::numeric_limits<uint64_t>::max()},
                  {"nan", std::nan("")},
                  {"empty", json::object()},
                  {"list", json::array()},
                  {"binary", json::binary({1, 2, 3})}};
  std::string out;
  AppendJson(v, out);
  EXPECT_EQ(out, LibraryText(v));
  EXPECT_NE(out.find("\\u0001"), std::string::npos);
  EXPECT_NE(out.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD for the invalid bytes
}

}  // namespace
}  // namespace engram
