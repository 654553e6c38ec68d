#include "extract/rule_based_extractor.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "extract/rule_based_internal.h"

namespace engram {

using namespace rule_extract_internal;  // NOLINT: the extractor's own parts, private to its files

RuleBasedExtractor::RuleBasedExtractor(RuleBasedExtractorOptions options) : options_(options) {}

Result<std::vector<std::string>> RuleBasedExtractor::ExtractFacts(
    const std::vector<ConversationMessage>& messages) const {
  std::vector<std::string> facts;
  std::set<std::string> seen;
  auto add = [&](std::string fact) {
    if (fact.size() > options_.max_fact_chars || facts.size() >= options_.max_facts) return;
    if (seen.insert(rule_extract::NormalizeForComparison(fact)).second) {
      facts.push_back(std::move(fact));
    }
  };
  std::string last_question;  // the assistant's last question, if its last sentence was one
  for (const ConversationMessage& message : messages) {
    if (message.role != "user") {
      last_question.clear();
      if (message.role == "assistant") {
        const std::vector<std::string> sentences = rule_extract::SplitSentences(message.content);
        if (!sentences.empty() && sentences.back().back() == '?') last_question = sentences.back();
      }
      continue;
    }
    const std::vector<std::string> sentences = rule_extract::SplitSentences(message.content);
    const size_t before = facts.size();
    bool greeted = false;  // "Hello! I'm Brian.": a name, not a nationality
    for (const std::string& sentence : sentences) {
      if (sentence.size() > options_.max_sentence_chars) continue;
      if (sentence.find('?') != std::string::npos) continue;  // questions state nothing
      const std::vector<Tok> toks = Tokenize(sentence);
      if (std::any_of(toks.begin(), toks.end(),
                      [](const Tok& t) { return HypotheticalWords().count(t.lower) > 0; })) {
        continue;
      }
      for (const Clause& clause : SplitClauses(toks)) {
        greeted = greeted || clause.greeting;
        if (clause.toks.size() < 2) continue;
        std::optional<Rewrite> r;
        if (clause.toks[0].lower == "i") r = RewriteI(clause.toks, greeted);
        if (clause.toks[0].lower == "my") r = RewriteMy(clause.toks);
        if (!r) continue;
        std::string fact =
            r->resolve_dates ? rule_extract::ResolveRelativeDates(r->fact, message.time_us, r->past)
                             : r->fact;
        if (SplitWords(fact).size() < 3) continue;
        add(std::move(fact));
      }
    }
    if (facts.size() == before && sentences.size() == 1 && !last_question.empty()) {
      if (auto fact = AnswerFact(last_question, sentences[0])) add(std::move(*fact));
    }
    last_question.clear();
  }
  return facts;
}

}  // namespace engram
