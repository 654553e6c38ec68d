// UTF-8 validation. Thread-safety: pure functions.
#pragma once

#include <string_view>

namespace engram {

// True for well-formed UTF-8: no stray continuation bytes, truncated sequences, overlong forms,
// surrogates or code points above U+10FFFF.
bool IsValidUtf8(std::string_view s);

}  // namespace engram
