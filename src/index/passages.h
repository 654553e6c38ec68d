// Passages: where a long message is cut for indexing and for search results.
//
// Why: a Leaderboard message may be a whole source file, a diff or a log of tens of kilobytes. As
// one document it is a poor BM25 document (its length normalisation buries the one function a
// query names), its single vector averages dozens of model windows into nothing in particular,
// and as a result it fills the answer model's context with text the question does not need. Cut
// into passages of about 2 KB, each with its own BM25 terms and vector, the search finds the
// function, hunk or paragraph that matches and returns it with its message's context.
//
// The cut is a pure function of the text, so the vector backfill (which embeds each passage) and
// the shard (which indexes them) agree without storing the spans; the vectors of a message's
// passages are stored together, in passage order. A message of at most kWholeMessageBytes is one
// passage: chat turns are indexed as before.
//
// Boundaries, best first: a blank line before unindented text, a line that starts a diff, a
// hunk, a code fence, a traceback or a commit; a top-level definition (a line at column 0 after a
// line that closes a block or ends a statement) or a blank line before indented text; any line
// start; a sentence end; white space; and as a last resort any UTF-8 character boundary. Among
// candidates of the best kind within a passage's allowed length the one nearest the target
// length wins.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace engram {

// Messages up to this size are one passage.
inline constexpr size_t kWholeMessageBytes = 4096;
// Passages of a longer message: at least kMinPassageBytes (except the last), about
// kTargetPassageBytes, never more than kMaxPassageBytes.
inline constexpr size_t kMinPassageBytes = 768;
inline constexpr size_t kTargetPassageBytes = 2048;
inline constexpr size_t kMaxPassageBytes = 3072;
// A search result made of one message's passages: adjacent passages merge into one excerpt up to
// this much text, so that with its header and date a result stays within 8 KB.
inline constexpr size_t kMaxExcerptBytes = 7680;

// A passage: bytes [begin, end) of its message.
struct PassageSpan {
  uint32_t begin = 0;
  uint32_t end = 0;
  size_t size() const { return end - begin; }
};

// A message's first non-blank line, trimmed and cut to kTitleBytes (with "…" when cut): what a
// passage's result shows of its message, and the context each passage is embedded with, since
// it often names the file or the subject the rest of the message is about.
inline constexpr size_t kTitleBytes = 160;
std::string MessageTitle(std::string_view text);

// The text a passage's vector is computed from: the passage, after its message's title when the
// passage does not start the message (a passage of a source file is about that file).
std::string PassageEmbeddingText(std::string_view text, std::string_view title, PassageSpan span);

// The passages of `text`, in order, covering it without gaps or overlap. One passage for texts of
// at most kWholeMessageBytes (also for the empty text).
std::vector<PassageSpan> SplitPassages(std::string_view text);

}  // namespace engram
