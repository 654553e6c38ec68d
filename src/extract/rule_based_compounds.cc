// Compound predicates for the rule-based extractor: one subject with several verbs ("I moved to
// Berlin and work as a nurse") becomes one clause per verb, each an atomic fact, while lists of
// objects ("I like tea and coffee") stay whole.
#include <string>
#include <string_view>
#include <vector>

#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {
namespace {

bool IsPastForm(std::string_view w) {
  return IrregularPast().count(w) > 0 || w == "born" || w == "was" || w == "were" ||
         (w.size() > 4 && EndsWith(w, "ed") && !EndsWith(w, "eed"));
}

// Base forms that can start a second predicate after "I ... and". Wider than the habits the
// patterns rewrite: splitting off "and know Norwegian" keeps the first fact clean even when the
// second states nothing the patterns understand.
bool IsBaseVerb(std::string_view w) {
  static const WordSet kMore = Words(
      "know learn see get make take give help find start stop finish begin spend save earn pay "
      "sell buy send bring meet leave stay sleep wake clean relax rest miss care hope feel try "
      "call keep love own teach speak write read");
  return HabitVerbs().count(w) > 0 || kMore.count(w) > 0;
}

// Base forms as often nouns as verbs: after "and" in a list of objects ("I love music and dance")
// they are nouns unless a complement follows.
const WordSet& NounlikeVerbs() {
  static const WordSet s = Words(
      "dance fish drink run walk swim ski surf code design work shop date coach support lift "
      "garden paint travel smoke brew rent host lead fast feed skip draw bike train fix hike plan "
      "love vote practice study cycle mentor tutor raise watch help call rest sleep stay start "
      "finish pay program film drive climb");
  return s;
}

// Verbs whose object is often a list of nouns ("I like tea and fish", "I have a cat and fish").
const WordSet& ListVerbs() {
  static const WordSet s = Words(
      "like likes love loves enjoy enjoys prefer prefers adore adores hate hates dislike dislikes "
      "have has own owns eat eats drink drinks collect collects play plays watch watches study "
      "studies speak speaks cook cooks make makes bake bakes grow grows need needs want wants");
  return s;
}

// Words that can open the complement of a verb ("work as", "play the piano", "visit Rome").
bool OpensComplement(const Tok& t) {
  static const WordSet kOpeners = Words(
      "as at in on for with to from by about into near around over under after before during "
      "since until through every each a an the my his her their our this that these those some "
      "any all no two three four five six seven eight nine ten it them him me myself alone "
      "together remotely part-time full-time daily weekly regularly often twice once");
  return kOpeners.count(t.lower) > 0 || AllDigits(t.lower) || IsUpper(t.text[0]) ||
         KeptAdverbs().count(t.lower) > 0;
}

// Words under which every later verb of the clause is governed: a negation, a modal, an auxiliary
// of the future or of wanting ("I don't eat meat and drink alcohol" is one fact).
const WordSet& Governors() {
  static const WordSet s = Words(
      "will would can could should might must may shall not never do does did used going planning "
      "want wants need needs try tries trying hope hopes wish plan plans gonna wanna cannot");
  return s;
}

}  // namespace

std::vector<Clause> SplitPredicates(const Clause& c, size_t subject) {
  static const WordSet kPronouns = Words("he she they it we you");
  static const WordSet kCutters = Words("and but so because since while although though");
  const std::vector<Tok>& t = c.toks;
  if (subject >= t.size()) return {c};
  const bool first_person = t[subject].lower == "i";
  size_t verb = subject + 1;  // the main verb
  if (first_person) {
    while (verb < t.size() &&
           (DroppedAdverbs().count(t[verb].lower) > 0 || KeptAdverbs().count(t[verb].lower) > 0)) {
      ++verb;
    }
  } else if (t[subject].lower == "my") {
    const std::vector<Tok> rest(t.begin() + static_cast<std::ptrdiff_t>(subject), t.end());
    const size_t v = MyClauseVerb(rest);
    if (v == 0) return {c};
    verb = subject + v;
  } else {
    return {c};
  }
  if (verb + 1 >= t.size()) return {c};
  const std::string& main = t[verb].lower;
  // An auxiliary repeats in the next predicate: "I was born in Naples and raised in Turin", "I'm
  // learning Korean and building a website", "I have lived in Oslo and worked in Bergen".
  std::string aux;
  size_t head = verb;  // the last word of the verb group
  const std::string& after = t[verb + 1].lower;
  const bool be = main == "am" || main == "is" || main == "are" || main == "was" || main == "were";
  const bool have = main == "have" || main == "has" || main == "had";
  const bool progressive = be && EndsWith(after, "ing") && after.size() > 4;
  if ((be && (IsPastForm(after) || progressive)) || (have && IsPastForm(after))) {
    aux = t[verb].text, head = verb + 1;
  }
  const bool past_main = aux.empty() && IsPastForm(main);
  // "I no longer smoke or drink"; a later "no" is a determiner ("I have no car and live ...").
  bool governed = Governors().count(main) > 0 || main == "no";
  bool infinitive = false;  // "I like to read and write": later base forms belong to "to"
  for (size_t k = head + 1; k < t.size(); ++k) {
    const std::string& w = t[k].lower;
    if (Governors().count(w) > 0) governed = true;
    if (w == "to" && k + 1 < t.size() && IsBaseVerb(t[k + 1].lower)) infinitive = true;
    if (k < head + 2) continue;  // the first predicate needs an object
    const bool conj = w == "and" || w == "but";
    const bool comma = t[k - 1].trail.find(',') != std::string::npos;
    // "... and he is four", "... because it is cheap": someone else's clause; it states nothing.
    if (kCutters.count(w) > 0 && k + 1 < t.size() && kPronouns.count(t[k + 1].lower) > 0) {
      Clause first{std::vector<Tok>(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k)),
                   c.greeting};
      first.toks.back().trail.clear();
      return {first};
    }
    if (!conj && !comma) continue;
    size_t n = conj ? k + 1 : k;
    std::vector<Tok> adverbs;  // "and usually swim": kept with the second predicate
    while (n < t.size() &&
           (t[n].lower == "then" || t[n].lower == "also" ||
            DroppedAdverbs().count(t[n].lower) > 0 || KeptAdverbs().count(t[n].lower) > 0)) {
      if (KeptAdverbs().count(t[n].lower) > 0) adverbs.push_back(t[n]);
      ++n;
    }
    if (n >= t.size() || governed) continue;
    const std::string& next = t[n].lower;
    bool split = false;
    if (!aux.empty()) {
      split = progressive ? EndsWith(next, "ing") && next.size() > 4 : IsPastForm(next);
    } else if (IsPastForm(next)) {
      // "I quit smoking and started running"; not "a used and refurbished laptop".
      split = past_main && !IsPastForm(t[k - 1].lower);
    } else if (first_person) {
      const bool complement = n + 1 < t.size() && OpensComplement(t[n + 1]);
      split = IsBaseVerb(next) && !infinitive &&
              !(NounlikeVerbs().count(next) > 0 && !complement &&
                (past_main || ListVerbs().count(main) > 0));
    } else {
      split = IsVerbLike(next, t[verb - 1].lower) && !infinitive;
    }
    if (!split) continue;
    Clause first{std::vector<Tok>(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k)),
                 c.greeting};
    first.toks.back().trail.clear();
    // The second predicate with the subject (and its adverbs) repeated: "I usually swim ...".
    Clause second{std::vector<Tok>(t.begin() + static_cast<std::ptrdiff_t>(subject),
                                   t.begin() + static_cast<std::ptrdiff_t>(verb)),
                  c.greeting};
    second.toks.insert(second.toks.end(), adverbs.begin(), adverbs.end());
    if (!aux.empty()) second.toks.push_back({aux, Lower(aux), ""});
    second.toks.insert(second.toks.end(), t.begin() + static_cast<std::ptrdiff_t>(n), t.end());
    std::vector<Clause> out = {first};
    for (const Clause& part : SplitPredicates(second, 0)) out.push_back(part);
    return out;
  }
  return {c};
}

}  // namespace rule_extract_internal
}  // namespace engram
