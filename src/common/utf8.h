// UTF-8 validation and cutting. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace engram {

// True for well-formed UTF-8: no stray continuation bytes, truncated sequences, overlong forms,
// surrogates or code points above U+10FFFF.
bool IsValidUtf8(std::string_view s);

// The largest n <= limit such that s[0, n) does not end inside a UTF-8 sequence (s.size() when
// limit reaches past the end): where to cut text to at most `limit` bytes.
size_t Utf8Floor(std::string_view s, size_t limit);

}  // namespace engram
