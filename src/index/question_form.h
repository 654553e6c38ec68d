// Whether a text asks a question, and a query's text without its question mark, for ranking
// conversation turns.
//
// Why: a question ("What did you do last weekend?") shares the words of a query about its topic,
// and the sentence encoder places questions near questions whatever they ask about, but the
// answer is in the reply. The shard ranks asking turns a little lower (passing their score on to
// their replies), and the query is embedded without its question mark.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

namespace engram {

// True when `text` ends with a question mark (ASCII "?", full-width "？" or Arabic "؟"), after
// trailing white space, quotes and closing parentheses.
bool EndsWithQuestion(std::string_view text);

// `query` without trailing question marks and the white space around them ("Where did she go?"
// -> "Where did she go"); the query itself when nothing is left or it does not end with one.
std::string_view WithoutQuestionMark(std::string_view query);

}  // namespace engram
