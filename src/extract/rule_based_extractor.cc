#include "extract/rule_based_extractor.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "extract/rule_based_internal.h"

namespace engram {

using namespace rule_extract_internal;  // NOLINT: the extractor's own parts, private to its files

RuleBasedExtractor::RuleBasedExtractor(RuleBasedExtractorOptions options) : options_(options) {}

Result<std::vector<ExtractedFact>> RuleBasedExtractor::ExtractFacts(
    const std::vector<ConversationMessage>& messages) const {
  // Drafts, before statements are joined. Bounded so that a long add costs bounded work; the
  // joined facts are cut to max_facts at the end.
  const size_t max_drafts = options_.max_facts * 4;
  std::vector<FactDraft> drafts;
  std::map<std::string, size_t> seen;  // normalised text -> index in drafts
  auto add = [&](std::string fact, std::vector<int32_t> sources, std::string_view subject,
                 bool statement) {
    if (fact.size() > options_.max_fact_chars) return;
    auto [it, fresh] = seen.try_emplace(rule_extract::NormalizeForComparison(fact), drafts.size());
    if (!fresh) {
      // Said again: the repetition is evidence too.
      MergeSources(drafts[it->second].fact.sources, sources);
      return;
    }
    if (drafts.size() >= max_drafts) {
      seen.erase(it);
      return;
    }
    const bool joinable = statement || !KeepsItsOwnMemory(fact);
    drafts.push_back(
        {{std::move(fact), std::move(sources)}, std::string(subject), joinable, statement});
  };
  std::string last_question;  // the assistant's last question, if its last sentence was one
  int32_t question_source = -1;
  int32_t request_source = -1;         // the user message just before, when it asked for advice
  std::string addressee = "the user";  // whom the assistant answers: the last user speaker
  std::string previous_speaker;        // the name of the last message's speaker, if it had one
  for (size_t m = 0; m < messages.size(); ++m) {
    const ConversationMessage& message = messages[m];
    const int32_t source = static_cast<int32_t>(m);
    const Speaker speaker = ResolveSpeaker(message.name, message.content);
    const std::vector<std::string> sentences = rule_extract::SplitSentences(speaker.content);
    if (message.role == "assistant") {
      // A recommendation answering the user's request cites the request too.
      std::vector<int32_t> sources = {source};
      if (request_source >= 0 && request_source == source - 1)
        sources.insert(sources.begin(), request_source);
      for (const std::string& sentence : sentences) {
        if (sentence.size() > options_.max_sentence_chars) continue;
        if (sentence.find('?') != std::string::npos) continue;
        if (auto fact = AssistantFact(Tokenize(sentence), addressee)) {
          add(rule_extract::ResolveRelativeDates(*fact, message.time_us, false), sources,
              "The assistant", false);
        }
      }
    }
    if (message.role != "user") {
      previous_speaker.clear();
      last_question.clear();
      request_source = -1;
      if (message.role == "assistant" && !sentences.empty() && sentences.back().back() == '?') {
        last_question = sentences.back();
        question_source = source;
      }
      continue;
    }
    request_source = -1;
    if (speaker.assistant) {  // a transcript line of the assistant's, pasted
      previous_speaker.clear();
      continue;
    }
    const std::string subject = speaker.name.empty() ? "User" : speaker.name;
    addressee = speaker.name.empty() ? "the user" : speaker.name;
    // Between named people, "you" is whoever spoke just before, if it was someone else.
    const std::string listener = previous_speaker != speaker.name ? previous_speaker : "";
    previous_speaker = speaker.name;
    const size_t before = drafts.size();
    bool greeted = false;  // "Hello! I'm Brian.": a name, not a nationality
    for (const std::string& sentence : sentences) {
      if (sentence.size() > options_.max_sentence_chars) continue;
      std::vector<Tok> toks = Tokenize(sentence);
      if (AsksForAdvice(toks)) request_source = source;
      // Questions state nothing, but a statement before a request does: "I need a laptop, can you
      // suggest one?".
      const bool question = sentence.find('?') != std::string::npos;
      const size_t request = RequestStart(toks, question);
      if (question && request == toks.size()) continue;
      toks.resize(request);
      // A condition or a wish states nothing ("If I had time I would sail"); a hedge keeps its
      // doubt, so the patterns' plain facts do not apply, but the statement does ("I might move
      // to Oslo" -> "Dana might move to Oslo").
      bool hedged = false;
      if (std::any_of(toks.begin(), toks.end(), [&](const Tok& t) {
            if (HypotheticalWords().count(t.lower) == 0) return false;
            // "I'd love to support others" states a wish the speaker has, not a condition.
            if (t.lower == "would" && &t + 1 != toks.data() + toks.size() &&
                StatedWishes().count((&t + 1)->lower) > 0) {
              return false;
            }
            if (HedgeWords().count(t.lower) > 0) return !(hedged = true);
            return true;
          })) {
        continue;
      }
      auto keep = [&](const Rewrite& r, bool statement) {
        const std::string named = NameSpeaker(r.fact, subject);
        std::string fact = r.resolve_dates
                               ? rule_extract::ResolveRelativeDates(named, message.time_us, r.past)
                               : named;
        // "User smokes" is too bare to keep; "Jon Snow smokes" no less so.
        if (SplitWords(fact).size() < 2 + SplitWords(subject).size()) return false;
        add(std::move(fact), {source}, subject, statement);
        return true;
      };
      bool read = false;  // some clause of the sentence became a fact
      for (const Clause& clause : SplitClauses(toks)) {
        greeted = greeted || clause.greeting;
        if (clause.toks.size() < 2 || hedged) continue;
        std::optional<Rewrite> r;
        if (clause.toks[0].lower == "i") r = RewriteI(clause.toks, greeted);
        if (clause.toks[0].lower == "my") r = RewriteMy(clause.toks);
        if (r) read = keep(*r, false) || read;
      }
      // What no pattern reads is kept as the speaker's statement.
      if (!read && options_.keep_statements) {
        if (auto r = RewriteStatement(toks, listener)) keep(*r, true);
      }
    }
    if (drafts.size() == before && sentences.size() == 1 && !last_question.empty()) {
      if (auto fact = AnswerFact(last_question, sentences[0])) {
        // The answer means something only with the question: both are its sources.
        add(NameSpeaker(*fact, subject), {question_source, source}, subject, false);
      }
    }
    last_question.clear();
  }
  std::vector<ExtractedFact> facts = ConsolidateStatements(
      std::move(drafts), options_.consolidate_chars, options_.consolidate_turn_gap);
  if (facts.size() > options_.max_facts) facts.resize(options_.max_facts);
  return facts;
}

}  // namespace engram
