#include "index/passages.h"

#include "common/utf8.h"

namespace engram {
namespace {

// How good a place to cut is; larger is better (see the header's list).
enum Boundary : int {
  kWhiteSpace = 1,  // below it: any character boundary, when nothing else is in reach
  kSentenceEnd = 2,
  kLineStart = 3,
  kDefinition = 4,
  kSection = 5,
};

bool StartsWith(std::string_view text, size_t at, std::string_view prefix) {
  return text.substr(at, prefix.size()) == prefix;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A line that opens a new unit of its own: a diff, a hunk, a code fence, a traceback, a commit.
bool OpensSection(std::string_view text, size_t at) {
  for (std::string_view p : {"diff --git ", "@@ ", "```", "--- a/", "Traceback (", "commit "}) {
    if (StartsWith(text, at, p)) return true;
  }
  return false;
}

// A line at column 0 that starts a definition: after a line that closed a block or ended a
// statement (C-like code), or a Python / Rust / Go definition keyword.
bool StartsDefinition(std::string_view text, size_t at, char previous_line_end) {
  const char c = text[at];
  if (IsSpace(c) || c == '\n' || c == '{' || c == '}' || c == ')' || c == ']') return false;
  if (previous_line_end == '}' || previous_line_end == ';') return true;
  for (std::string_view p : {"def ", "class ", "fn ", "func ", "#define ", "async def "}) {
    if (StartsWith(text, at, p)) return true;
  }
  return false;
}

// Where the passage that starts at `start` ends; text.size() - start > kMaxPassageBytes.
size_t BestCut(std::string_view text, size_t start) {
  const size_t lo = start + kMinPassageBytes;
  const size_t hi = start + kMaxPassageBytes;
  const size_t target = start + kTargetPassageBytes;
  size_t best = 0;
  int best_kind = -1;
  size_t best_distance = 0;
  auto offer = [&](size_t p, int kind) {
    if (p <= lo || p > hi) return;
    const size_t distance = p > target ? p - target : target - p;
    if (kind > best_kind || (kind == best_kind && distance < best_distance)) {
      best = p;
      best_kind = kind;
      best_distance = distance;
    }
  };
  // The line being read: whether it is blank so far, and its last non-space character.
  bool line_blank = true;
  char line_end = 0;
  for (size_t p = start + 1; p <= hi; ++p) {
    const char c = text[p - 1];  // the character just before the cut at p
    if (c == '\n') {
      int kind = kLineStart;
      const bool indented = p < text.size() && IsSpace(text[p]);
      if (OpensSection(text, p) || (line_blank && !indented)) {
        kind = kSection;
      } else if (line_blank || StartsDefinition(text, p, line_end)) {
        // A blank line before indented text: a paragraph inside a comment or a body.
        kind = kDefinition;
      }
      offer(p, kind);
      line_blank = true;
      line_end = 0;
      continue;
    }
    if (!IsSpace(c)) {
      line_blank = false;
      line_end = c;
    }
    if (c == ' ' || c == '\t') {
      const char before = p >= 2 ? text[p - 2] : 0;
      offer(p, before == '.' || before == '!' || before == '?' ? kSentenceEnd : kWhiteSpace);
    }
  }
  if (best_kind >= 0) return best;
  // One unbroken run of text: any character boundary at the limit.
  return start + Utf8Floor(text.substr(start), kMaxPassageBytes);
}

}  // namespace

std::string MessageTitle(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    while (!line.empty() && static_cast<unsigned char>(line.front()) <= ' ') line.remove_prefix(1);
    while (!line.empty() && static_cast<unsigned char>(line.back()) <= ' ') line.remove_suffix(1);
    if (!line.empty()) {
      if (line.size() <= kTitleBytes) return std::string(line);
      return std::string(line.substr(0, Utf8Floor(line, kTitleBytes))) + "…";
    }
    at = end + 1;
  }
  return {};
}

std::string PassageEmbeddingText(std::string_view text, std::string_view title, PassageSpan span) {
  const std::string_view passage = text.substr(span.begin, span.size());
  if (span.begin == 0 || title.empty()) return std::string(passage);
  std::string out;
  out.reserve(title.size() + 1 + passage.size());
  out.append(title).push_back('\n');
  out.append(passage);
  return out;
}

std::vector<PassageSpan> SplitPassages(std::string_view text) {
  std::vector<PassageSpan> out;
  size_t start = 0;
  if (text.size() > kWholeMessageBytes) {
    while (text.size() - start > kMaxPassageBytes) {
      size_t cut = BestCut(text, start);
      if (cut <= start) cut = start + kMaxPassageBytes;  // cannot happen: UTF-8 runs are short
      out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(cut)});
      start = cut;
    }
  }
  out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(text.size())});
  return out;
}

}  // namespace engram
