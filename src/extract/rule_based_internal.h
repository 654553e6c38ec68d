// The rule-based extractor's shared parts, private to extract/rule_based_*.cc: the word lists and
// text helpers, the date words the clause splitter needs, the tokens and clauses of a sentence,
// the fact patterns ExtractFacts applies to each clause, the speakers facts are about and the
// assistant's recommendations and commitments. Nothing outside those files includes
// this header; everyone else uses extract/rule_based_extractor.h (whose rule_extract namespace
// holds the building blocks the tests call).
//
// Thread-safety: pure functions; the word lists are function-local statics, built once and
// read-only afterwards.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "extract/memory_extractor.h"

namespace engram {
namespace rule_extract_internal {

using WordSet = std::unordered_set<std::string_view>;

// The words of a space-separated string literal (the views point into the literal).
WordSet Words(std::string_view list);

// ---------------------------------------------------------------------------------------------
// Text helpers (ASCII case folding: the word lists are English).

inline bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
// Bytes of multi-byte UTF-8 characters count as word characters (names such as "Zürich").
inline bool IsWordChar(char c) { return IsAlnum(c) || static_cast<unsigned char>(c) >= 0x80; }

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

inline bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}

inline bool HasDigit(std::string_view s) { return std::any_of(s.begin(), s.end(), IsDigit); }

std::string Lower(std::string_view s);
// Curly apostrophes and quotes become ASCII so that one set of word lists covers both.
std::string AsciiQuotes(std::string_view s);
std::vector<std::string_view> SplitWords(std::string_view s);
std::string Join(const std::vector<std::string>& words, size_t from = 0, size_t to = SIZE_MAX);

// A word split into leading punctuation, core and trailing punctuation: "(Berlin)," ->
// "(", "Berlin", "),". Apostrophes and hyphens inside the core stay.
struct Word {
  std::string lead, core, trail, lower;
};

Word SplitPunct(std::string_view w);

// ---------------------------------------------------------------------------------------------
// Dates (rule_based_dates.cc).

int MonthIndex(std::string_view core);     // 1..12, or 0; needs the capital ("may" is a verb)
int WeekdayIndex(std::string_view lower);  // Monday = 0; -1 for anything else ("mondays")
// "day", "week", "month" or "year" for the unit or its plural; empty for anything else.
std::string_view Unit(std::string_view w);

// ---------------------------------------------------------------------------------------------
// Word lists (rule_based_words.cc). Function-local statics: built once, thread-safe, read-only
// afterwards.

const WordSet& DroppedAdverbs();
const WordSet& KeptAdverbs();
const WordSet& HabitVerbs();
const WordSet& IrregularPast();
const WordSet& NonFactPast();
const WordSet& JobNouns();
const WordSet& SingleValued();
const WordSet& HypotheticalWords();
// After "would", a wish the speaker states ("I'd love to", "I would rather"), not a condition.
const WordSet& StatedWishes();
// The hypothetical words that only state doubt or a stance ("might", "would"): the statement is
// kept with them, the patterns' plain facts are not.
const WordSet& HedgeWords();
const WordSet& ContextWords();
const WordSet& Fillers();

// The third-person form of a verb ("have" -> "has", "watch" -> "watches").
std::string ThirdPerson(std::string_view v);
// Crude inflection stripper for comparisons only ("plays", "playing", "played" -> "play").
std::string Stem(std::string_view word);
// True for a word that can be the verb after "my <noun>" or "user's <noun>".
bool IsVerbLike(std::string_view w, std::string_view prev);

// ---------------------------------------------------------------------------------------------
// Tokens of a sentence, contractions expanded ("I'm" -> "I", "am"; "don't" -> "do", "not").

struct Tok {
  std::string text;   // as written (without its trailing punctuation)
  std::string lower;  // lower case, without any punctuation
  std::string trail;  // trailing punctuation
};

std::vector<Tok> Tokenize(std::string_view sentence);

struct Clause {
  std::vector<Tok> toks;
  bool greeting = false;  // the sentence began with "Hi" / "Hello" / "Hey"
};

// Where a request or question joined to a statement by a comma or a semicolon begins ("I like
// coffee, please recommend some", "I need a laptop, can you suggest one?"): the index of its first
// token, or t.size() when there is none. Question words count only in a `question`.
size_t RequestStart(const std::vector<Tok>& t, bool question);

// Clauses of a sentence: a new one starts at "I" / "my" after a comma, a semicolon, or a
// conjunction ("I love hiking but I hate running"), and at a second predicate of the same subject
// (SplitPredicates). Leading fillers are dropped and a leading time expression moves to the end.
std::vector<Clause> SplitClauses(const std::vector<Tok>& t);

// The clauses of a clause whose subject (t[subject], "I" or "my ...") has several predicates:
// "I moved to Berlin and work as a nurse" -> "I moved to Berlin", "I work as a nurse"
// (rule_based_compounds.cc). Lists of objects stay whole ("I like tea and coffee"), and so do
// predicates under a shared negation, modal or infinitive ("I don't eat meat or fish"). A
// predicate after "and he" / "but it" starts a clause of its own, which states nothing.
std::vector<Clause> SplitPredicates(const Clause& c, size_t subject);

// ---------------------------------------------------------------------------------------------
// Fact patterns (rule_based_patterns.cc): a clause rewritten as a third-person fact.

struct Rewrite {
  std::string fact;
  bool past = false;  // resolve bare weekdays and month names to the past
  bool resolve_dates = true;
};

// Anything from t[from] on about "you" or the task at hand (the error, the docs, this option) is
// about this conversation, not about the speaker.
bool IsAboutTheConversation(const std::vector<Tok>& t, size_t from);
// The same, except that "you" and its forms are allowed (they name a known listener).
bool IsAboutTheTask(const std::vector<Tok>& t, size_t from);
// A clause starting with "I" (t[0]).
std::optional<Rewrite> RewriteI(const std::vector<Tok>& t, bool greeting);
// A clause starting with "my" (t[0]).
std::optional<Rewrite> RewriteMy(const std::vector<Tok>& t);
// The index of the verb of a clause starting with "my" ("my sister Mia lives ..." -> 3); 0 if none.
size_t MyClauseVerb(const std::vector<Tok>& t);
// A short answer to the assistant's last question ("What's your favorite color?" / "Blue").
std::optional<std::string> AnswerFact(std::string_view question, std::string_view answer);

// ---------------------------------------------------------------------------------------------
// Statements (rule_based_statements.cc): a sentence no pattern reads, about the speaker (a
// first-person word) and with at least three content words, in the third person ("I went to a
// support group yesterday" -> "User went to a support group yesterday"); nothing for reactions,
// thanks and sentences about the listener. What is not about the speaker, or starts with a word
// that points back into the conversation ("It made me think"), is reported: "Caroline said the
// stories were inspiring". `listener` names whom "you" is when the conversation says so (the
// other named speaker): "I'm proud of you" -> "Caroline is proud of Melanie"; empty, a sentence
// that mentions "you" is about the conversation and yields nothing.
std::optional<Rewrite> RewriteStatement(const std::vector<Tok>& sentence,
                                        std::string_view listener = {});
// The word after a first-person singular subject, made to agree with a third-person one ("am" ->
// "is", "love" -> "loves"); past, modal and other unchanging forms, and words that do not look
// like a verb, as written.
std::string AgreeWithThirdPerson(const Tok& verb);
// An adverb that may stand between "I" and its verb ("I really love", "I usually run").
bool IsAdverbBeforeVerb(std::string_view lower);

// ---------------------------------------------------------------------------------------------
// Speakers (rule_based_speakers.cc). Patterns write facts about "User" and render the speaker's own
// words ("me", "my") as kSpeakerMark; NameSpeaker then puts in the speaker's name.

inline constexpr std::string_view kSpeakerMark = "\x01";

struct Speaker {
  std::string name;        // "Caroline"; empty for an unnamed user
  std::string content;     // the message without its "Caroline: " prefix
  bool assistant = false;  // the prefix names the assistant ("Assistant: ...")
};

// The speaker of a message from its `name` field ("caroline_smith" -> "Caroline Smith") or, when
// that is empty, a prefix of one to three capitalised words and ": " ("Caroline: I adopted ...").
// Labels ("Note: ...", "PS: ...", "Monday: ...") are not speakers.
Speaker ResolveSpeaker(std::string_view name, std::string_view content);
// A word that can be part of a name: capitalised, letters, '-' or '\'' ("Zoë", "O'Neil").
bool IsNameWord(std::string_view w);
// `fact` about `speaker`: its leading "User" and every kSpeakerMark replaced.
std::string NameSpeaker(std::string_view fact, std::string_view speaker);

// ---------------------------------------------------------------------------------------------
// The assistant's messages (rule_based_assistant.cc).

// What an assistant's sentence recommended, suggested or committed to for the user, as a fact
// about "The assistant" ("I recommend X" -> "The assistant recommended X to the user"); nothing
// for anything else it says. `addressee` replaces "you": "the user" or the user's name.
std::optional<std::string> AssistantFact(const std::vector<Tok>& t, std::string_view addressee);
// True when a user's sentence asks for recommendations, suggestions, ideas or a reminder.
bool AsksForAdvice(const std::vector<Tok>& t);

// ---------------------------------------------------------------------------------------------
// Joining a speaker's statements into fewer, fuller memories (rule_based_consolidate.cc).

// A fact as ExtractFacts found it, before statements are joined.
struct FactDraft {
  ExtractedFact fact;
  std::string subject;     // whom it is about: the speaker's name, "User", "The assistant"
  bool joinable = false;   // may share a memory: not a fact that KeepsItsOwnMemory
  bool statement = false;  // a kept sentence no pattern read: it joins the open memory
};

// `from` added to the sorted message indices `into`, each once.
void MergeSources(std::vector<int32_t>& into, const std::vector<int32_t>& from);

// A fact Reconcile updates or deletes by its parts: a single-valued attribute ("Caroline lives in
// Paris"), a preference, a negation or a retraction. It keeps a memory of its own.
bool KeepsItsOwnMemory(std::string_view fact);

// The drafts in order, with each statement appended to the open memory of the same subject (the
// last joinable fact's) when its first source is at most `max_turn_gap` messages after that
// memory's last source and the joined text stays within `max_chars` bytes ("Caroline went to a
// support group on 2023-05-07. The support group made Caroline feel accepted"). Facts the patterns
// read never join each other: each stays the atomic fact Reconcile compares, and those that
// KeepsItsOwnMemory are joined by nothing. `max_chars` 0 joins nothing.
std::vector<ExtractedFact> ConsolidateStatements(std::vector<FactDraft> drafts, size_t max_chars,
                                                 int32_t max_turn_gap);

}  // namespace rule_extract_internal
}  // namespace engram
