// Whether a text asks a question, a query's text without its question mark, and whether a query
// names a code identifier, for ranking.
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

// True when `query` names a code identifier: a word joining alphanumerics with '_' or "::"
// (`frobnicate_57`, `std::vector`), or with at least two lower-to-upper case steps
// (`glDetachShader`; one step is a brand's spelling: `iPhone`, `YouTube`). The sentence encoder
// cannot tell one identifier from a similar one, so such a query is ranked with more weight on
// its exact words (RetrievalOptions::identifier_vector_weight).
bool NamesCodeIdentifier(std::string_view query);

// `query` without trailing question marks and the white space around them ("Where did she go?"
// -> "Where did she go"); the query itself when nothing is left or it does not end with one.
std::string_view WithoutQuestionMark(std::string_view query);

}  // namespace engram
