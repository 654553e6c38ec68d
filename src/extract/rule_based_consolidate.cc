// A speaker's statements joined into fewer, fuller memories. A conversation says most things in
// a few sentences over neighbouring turns ("I went to a support group yesterday." ... "It made me
// feel accepted."); one memory per sentence splits what belongs together, multiplies the memories
// a search has to rank and leaves each too short to answer from. Joining keeps order, cites
// every message it drew on, and never crosses speakers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {

void MergeSources(std::vector<int32_t>& into, const std::vector<int32_t>& from) {
  for (int32_t s : from) {
    auto at = std::lower_bound(into.begin(), into.end(), s);
    if (at == into.end() || *at != s) into.insert(at, s);
  }
}

namespace {

// "the hard work starts …" continues a memory as "The hard work starts …".
std::string AsSentence(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

}  // namespace

std::vector<ExtractedFact> ConsolidateStatements(std::vector<FactDraft> drafts, size_t max_chars,
                                                 int32_t max_turn_gap) {
  std::vector<ExtractedFact> out;
  out.reserve(drafts.size());
  std::map<std::string, size_t> open;  // subject -> its statement in `out` that may grow
  for (FactDraft& d : drafts) {
    if (!d.joinable || max_chars == 0 || d.fact.sources.empty()) {
      out.push_back(std::move(d.fact));
      continue;
    }
    auto it = open.find(d.subject);
    // A fact a pattern read is a memory of its own that what follows may join; a statement joins
    // what is open.
    if (it != open.end() && d.statement) {
      ExtractedFact& into = out[it->second];
      const bool near = d.fact.sources.front() - into.sources.back() <= max_turn_gap;
      if (near && into.text.size() + 2 + d.fact.text.size() <= max_chars) {
        into.text += ". ";
        into.text += AsSentence(std::move(d.fact.text));
        MergeSources(into.sources, d.fact.sources);
        continue;
      }
    }
    open[d.subject] = out.size();
    d.fact.text = AsSentence(std::move(d.fact.text));
    out.push_back(std::move(d.fact));
  }
  return out;
}

}  // namespace rule_extract_internal
}  // namespace engram
