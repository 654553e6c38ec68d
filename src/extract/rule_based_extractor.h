// RuleBasedExtractor: the built-in, offline memory extractor (no model, no network).
//
// ExtractFacts reads the user's messages sentence by sentence and rewrites every first-person
// clause it understands into a canonical third-person fact:
//   "I really love hiking"                  -> "User loves hiking"
//   "my sister Mia lives in Rome"           -> "User's sister Mia lives in Rome"
//   "I'm going to visit Tokyo next month"   -> "User plans to visit Tokyo in June 2024"
//   "I bought a Tesla yesterday"            -> "User bought a Tesla on 2024-05-07"
// A sentence about the speaker that no pattern reads is kept as a statement in the third person
// when it carries at least two content words ("I went to a support group yesterday" -> "User
// went to a support group on 2024-05-07"; see keep_statements), hedges included ("I might move to
// Oslo" -> "User might move to Oslo"); one about anything else, with three, is reported as the
// speaker's ("The stories were so inspiring" -> "Caroline said the stories were so inspiring").
// Between named speakers "you" is the one who spoke just before ("I'm proud of you" -> "Melanie
// is proud of Caroline"). A speaker's statements over neighbouring turns are joined into one
// memory, after the fact they follow (see consolidate_chars); the facts the patterns read stay
// one each, so that Reconcile can compare them. Relative dates are made absolute from the
// message's time (UTC). Questions, conditions, greetings, thanks, reactions, errands of the
// moment and clauses that only make sense in context ("I love it", "I met her") produce nothing.
// Assistant and system messages never produce facts, except the assistant's recommendations and
// commitments; the assistant's last question only gives a short user answer its meaning ("What's
// your favorite color?" / "Blue").
//
// Reconcile parses each fact and each candidate memory into subject, predicate, object, polarity
// and (for single-valued attributes such as residence, employer, job, name, age, "favorite X") a
// slot and its value. The canonical forms ExtractFacts writes are exactly what the parser reads,
// so facts from earlier calls parse back. From that parse:
//   same fact (normalised text, or same predicate/object/polarity, or same slot value)  -> NONE
//   same slot, different value; or same predicate/object, opposite polarity or a new
//   date ("plans to visit Tokyo in July 2024" after "... in June 2024")                  -> UPDATE
//   an explicit retraction ("no longer", "stopped", "used to") of a non-preference       -> DELETE
//   a candidate the parts cannot compare (unparsed, or another predicate), at least
//   `near_duplicate_similarity` similar, same polarity and numbers                       -> NONE
//   anything else                                                                         -> ADD
// "I moved to Paris" is written "User moved to Paris ..." and fills the same residence slot as
// "User lives in Paris".
//
// Thread-safety: immutable after construction; every method is const and shares no mutable
// state (the word lists are function-local statics, initialised once).
// Privacy: never logs message or memory text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extract/memory_extractor.h"

namespace engram {

struct RuleBasedExtractorOptions {
  // A candidate memory at least this similar (cosine of embeddings) to a fact, with the same
  // polarity, the same slot value and the same numbers, is a near duplicate: NONE.
  float near_duplicate_similarity = 0.92f;
  // ExtractFacts returns at most this many facts (the first ones).
  size_t max_facts = 32;
  // Facts longer than this many bytes are dropped: such clauses are rarely atomic.
  size_t max_fact_chars = 240;
  // Sentences longer than this many bytes are skipped (pasted documents, code, logs).
  size_t max_sentence_chars = 600;
  // A sentence about the speaker that no pattern reads, with at least three content words, is
  // kept as a statement in the third person ("I went to a support group yesterday" -> "User went
  // to a support group on 2024-05-07"). Off: only the patterns' canonical facts.
  bool keep_statements = true;
  // Statements of one speaker are joined into one memory while the joined text stays within this
  // many bytes and each next statement comes at most `consolidate_turn_gap` messages after the
  // last one it joins (the same turn, or the speaker's next turn of a two-party conversation):
  // "Caroline went to a support group on 2023-05-07. The support group made Caroline feel
  // accepted". Facts the patterns read stay single, so Reconcile can still update them. 0 joins
  // nothing.
  size_t consolidate_chars = 600;
  int32_t consolidate_turn_gap = 2;
};

class RuleBasedExtractor final : public MemoryExtractor {
 public:
  explicit RuleBasedExtractor(RuleBasedExtractorOptions options = {});

  std::string_view name() const override { return "rule-based"; }

  // Never fails.
  Result<std::vector<ExtractedFact>> ExtractFacts(
      const std::vector<ConversationMessage>& messages) const override;

  // Never fails. A blank fact, like a repeated one, produces no decision.
  Result<std::vector<MemoryDecision>> Reconcile(
      const std::vector<FactCandidates>& facts) const override;

  const RuleBasedExtractorOptions& options() const { return options_; }

 private:
  RuleBasedExtractorOptions options_;
};

// Building blocks of the extractor, exposed for tests.
namespace rule_extract {

// Sentences of `text`, trimmed, each with its final punctuation. Splits at '.', '!', '?' (and
// runs of them) followed by a space or the end, and at line breaks; not after abbreviations
// ("Dr.", "e.g.", "etc." before a lower-case word), initials ("J. R."), decimals ("3.5") or
// list numbers at the start of a line ("1.").
std::vector<std::string> SplitSentences(std::string_view text);

// `text` with its relative date expressions made absolute against `time_us` (UTC):
// "yesterday" -> "on 2024-05-07", "next month" -> "in June 2024", "last week" -> "in the week of
// 2024-04-29", "on Monday" -> "on 2024-05-13", "3 days ago" -> "on 2024-05-05", "in 2 weeks" ->
// "in the week of 2024-05-20". `past` says which way a bare weekday or month name points ("on
// Friday" after a past-tense verb is the last Friday) and lets month names resolve at all. Words
// are re-joined with single spaces; time_us <= 0 leaves the expressions as they are.
std::string ResolveRelativeDates(std::string_view text, int64_t time_us, bool past);

// Whether `content` begins by naming whoever says it ("Caroline: …", "Mia Wong: …", "User:
// …"): the speaker prefix ExtractFacts reads (one to three capitalised name words, a colon and a
// space), not a label such as "Note:" or a date ("Monday:").
bool NamesItsSpeaker(std::string_view content);

// Comparison key of a fact or memory text: lower case, contractions expanded, punctuation and the
// articles a / an / the dropped, single spaces. "The user DOESN'T like  coffee." -> "user does not
// like coffee".
std::string NormalizeForComparison(std::string_view text);

}  // namespace rule_extract
}  // namespace engram
