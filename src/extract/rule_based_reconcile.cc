// Reconcile of the rule-based extractor: each fact and candidate memory parsed back into subject,
// predicate, object, polarity and slot, and the decision their parts imply.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/ascii.h"
#include "extract/rule_based_extractor.h"
#include "extract/rule_based_internal.h"

namespace engram {

using namespace rule_extract_internal;  // NOLINT: the extractor's own parts, private to its files

namespace {

// ---------------------------------------------------------------------------------------------
// Reconcile: a fact or memory parsed back into its parts.

struct Parsed {
  bool ok = false;          // the text has the shape ExtractFacts writes
  std::string subject;      // "user", "user's sister mia"
  std::string pred;         // stemmed verb: "liv", "like", "is"
  std::string object;       // stemmed object without date phrases
  bool negative = false;    // "does not", "never", "dislikes", "no longer"
  bool retraction = false;  // "no longer", "stopped", "quit", "gave up", "used to"
  bool preference = false;  // likes / loves / dislikes ...
  std::string slot;         // single-valued attribute: "user|residence"
  std::string value;        // its value: "paris"
  std::string date;         // the date phrase at the end: "in june 2024"
  std::vector<std::string> numbers;
};

bool StartsDatePhrase(const std::vector<std::string_view>& w, size_t j) {
  static const WordSet kMonthsLower = Words(
      "january february march april may june july august september october november december");
  const std::string_view a = w[j];
  const std::string_view b = j + 1 < w.size() ? w[j + 1] : std::string_view();
  if ((a == "on" || a == "since" || a == "until" || a == "by") && HasDigit(b)) return true;
  if ((a == "in" || a == "since") &&
      (kMonthsLower.count(b) > 0 || (AllDigits(b) && b.size() == 4) || b == "week")) {
    return true;
  }
  if (a == "on" && b == "weekend") return true;
  return a == "yesterday" || a == "today" || a == "tomorrow" || a == "ago" ||
         (a == "last" && !b.empty()) || (a == "next" && !b.empty());
}

std::string Value(const std::vector<std::string>& words, size_t from) {
  static const WordSet kStops = Words("with since for because and but near now at while as");
  std::string out;
  for (size_t k = from; k < words.size() && kStops.count(words[k]) == 0; ++k) {
    if (!out.empty()) out += ' ';
    out += words[k];
  }
  return out;
}

// How many of the normalised words `w` of `text` name whom it is about: "User ..." / "User's ..."
// (1), "The assistant ..." (1, "the" is not among `w`), a name of up to three capitalised words
// before a verb or with "'s" ("Caroline lives ...", "Jon Snow's brother ..."); 0 for anything
// else.
size_t SpeakerWords(std::string_view text, const std::vector<std::string_view>& w) {
  if (w.empty()) return 0;
  if (w[0] == "user" || w[0] == "user's") return 1;
  const std::string ascii = AsciiQuotes(text);
  std::vector<std::string_view> words = SplitWords(ascii);
  while (!words.empty() && (Lower(words[0]) == "the" || Lower(words[0]) == "a")) {
    words.erase(words.begin());
  }
  if (w[0] == "assistant" && !words.empty() && Lower(words[0]) == "assistant") return 1;
  size_t n = 0;
  while (n < words.size() && n < 3 && n < w.size()) {
    std::string_view word = words[n];
    const bool possessive = EndsWith(word, "'s");
    if (possessive) word.remove_suffix(2);
    if (!IsNameWord(word)) break;
    ++n;
    if (possessive) return n;
  }
  if (n == 0 || n >= w.size()) return 0;
  const bool verb = IsVerbLike(w[n], w[n - 1]) || KeptAdverbs().count(w[n]) > 0;
  return verb ? n : 0;
}

Parsed Parse(std::string_view text) {
  static const WordSet kLike =
      Words("love loves like likes enjoy enjoys adore adores prefer prefers");
  static const WordSet kDislike = Words("dislike dislikes hate hates detest detests");
  Parsed p;
  const std::string norm = rule_extract::NormalizeForComparison(text);
  const std::vector<std::string_view> w = SplitWords(norm);
  for (std::string_view x : w) {
    if (HasDigit(x)) p.numbers.emplace_back(x);
  }
  const size_t speaker = SpeakerWords(text, w);
  if (speaker == 0) return p;
  size_t i = speaker;
  p.subject = Join(std::vector<std::string>(w.begin(), w.begin() + speaker));
  if (EndsWith(w[speaker - 1], "'s")) {
    // "User's sister Mia lives ...": the subject runs to the verb.
    const bool favorite = w.size() > i && w[i] == "favorite";
    for (; i < w.size() && i <= speaker + 5; ++i) {
      if (favorite ? (w[i] == "is" || w[i] == "are") : IsVerbLike(w[i], w[i - 1])) break;
      p.subject += " " + std::string(w[i]);
    }
    if (i >= w.size() || i > speaker + 5) return p;
  }
  auto at = [&](size_t k) { return k < w.size() ? w[k] : std::string_view(); };
  // Negation, retraction and frequency words before the verb.
  while (i < w.size()) {
    const std::string_view a = at(i), b = at(i + 1);
    if ((a == "does" || a == "do" || a == "did") && b == "not") {
      p.negative = true, i += 2;
    } else if (a == "no" && b == "longer") {
      p.negative = p.retraction = true, i += 2;
    } else if (a == "never") {
      p.negative = true, ++i;
    } else if (a == "stopped" || a == "quit" || (a == "gave" && b == "up")) {
      p.negative = p.retraction = true, i += a == "gave" ? 2 : 1;
      // "quit smoking" names the activity; "gave up coffee" only the thing: any verb matches.
      if (i < w.size() && !EndsWith(w[i], "ing")) p.pred = "*";
      break;
    } else if (a == "used" && b == "to") {
      p.negative = p.retraction = true, i += 2;
    } else if (KeptAdverbs().count(a) > 0) {
      ++i;
    } else {
      break;
    }
  }
  if (i >= w.size()) return p;
  std::string_view verb = p.pred == "*" ? std::string_view("*") : w[i++];
  // "has been a vegetarian" is "is a vegetarian"; "has lived in" is "lives in".
  if ((verb == "has" || verb == "have") && at(i) == "been") verb = "is", ++i;
  if ((verb == "has" || verb == "have" || verb == "is") &&
      (at(i) == "lived" || at(i) == "living" || at(i) == "worked" || at(i) == "working")) {
    verb = w[i++];
  }
  if ((verb == "is" || verb == "are" || verb == "can" || verb == "has") && at(i) == "not") {
    p.negative = true, ++i;
  }
  if ((verb == "is" || verb == "are") && at(i) == "no" && at(i + 1) == "longer") {
    p.negative = p.retraction = true, i += 2;
  }
  if (verb == "cannot") p.negative = true, verb = "can";
  if (verb == "*") {
  } else if (verb == "plans" || verb == "wants") {
    p.pred = std::string(verb.substr(0, verb.size() - 1));
  } else if (kLike.count(verb) > 0) {
    p.pred = "like", p.preference = true;
  } else if (kDislike.count(verb) > 0) {
    p.pred = "like", p.preference = true, p.negative = !p.negative;
  } else if (verb == "are" || verb == "am") {
    p.pred = "is";
  } else {
    p.pred = Stem(verb);
  }
  if (p.retraction && p.pred == "like") p.preference = true;
  std::vector<std::string> obj;
  size_t k = i;
  for (; k < w.size() && !StartsDatePhrase(w, k); ++k) obj.push_back(Stem(w[k]));
  for (; k < w.size(); ++k) p.date += std::string(p.date.empty() ? "" : " ") + std::string(w[k]);
  const std::string_view last_raw = obj.empty() ? std::string_view() : w[i + obj.size() - 1];
  p.object = Join(obj);
  p.ok = !p.pred.empty();
  // Single-valued slots.
  auto first = [&](std::string_view x) { return !obj.empty() && obj[0] == x; };
  std::string slot;
  if (p.pred == "liv" && first("in")) {
    slot = "residence", p.value = Value(obj, 1);
  } else if (p.pred == "mov" && first("to")) {
    slot = "residence", p.value = Value(obj, 1);
  } else if (p.pred == "is" && obj.size() > 2 && obj[0] == "bas" && obj[1] == "in") {
    slot = "residence", p.value = Value(obj, 2);
  } else if (p.pred == "work" && (first("at") || first("for"))) {
    slot = "employer", p.value = Value(obj, 1);
  } else if (p.pred == "work" && first("as")) {
    slot = "job", p.value = Value(obj, 1);
  } else if (p.pred == "is" && !obj.empty() && JobNouns().count(last_raw) > 0 && obj.size() <= 3) {
    slot = "job", p.value = Join(obj);
  } else if (p.pred == "is" && first("from")) {
    slot = "origin", p.value = Value(obj, 1);
  } else if (p.pred == "is" && !obj.empty() && AllDigits(obj[0]) && obj[0].size() <= 3 &&
             (obj.size() == 1 || obj[1] == "year")) {
    slot = "age", p.value = obj[0];
  } else if (p.pred == "is" && p.subject != "user") {
    const std::vector<std::string_view> sw = SplitWords(p.subject);
    if (SingleValued().count(sw.back()) > 0 || p.subject.find(" favorite ") != std::string::npos) {
      slot = "is", p.value = Join(obj);
    }
  }
  if (!slot.empty() && !p.value.empty()) p.slot = p.subject + "|" + slot;
  return p;
}

enum class Match { kNone, kSame, kUpdate, kDelete };

}  // namespace

bool rule_extract_internal::KeepsItsOwnMemory(std::string_view fact) {
  const Parsed p = Parse(fact);
  return p.ok && (!p.slot.empty() || p.preference || p.negative || p.retraction);
}

namespace {

// "paris" and "paris france" name the same place; "san diego" and "san francisco" do not.
bool SameValue(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  return longer.rfind(shorter, 0) == 0 &&
         (longer.size() == shorter.size() || longer[shorter.size()] == ' ');
}

// How fact `f` relates to memory `m` by their parts.
Match Compare(const Parsed& f, const Parsed& m) {
  if (!f.ok || !m.ok || f.subject != m.subject) return Match::kNone;
  if (!f.slot.empty() && f.slot == m.slot) {
    if (f.negative || f.retraction) {
      if (SameValue(f.value, m.value) && !m.negative) return Match::kDelete;
      return Match::kNone;
    }
    if (m.negative) return SameValue(f.value, m.value) ? Match::kUpdate : Match::kNone;
    return SameValue(f.value, m.value) ? Match::kSame : Match::kUpdate;
  }
  // "gave up coffee" retracts whatever the memory does with coffee.
  if ((f.pred == "*" || m.pred == "*") && f.pred != m.pred) {
    if (f.object.empty() || f.object != m.object) return Match::kNone;
    if (f.pred == "*" && !m.negative) return m.preference ? Match::kUpdate : Match::kDelete;
    return m.pred == "*" && !f.negative ? Match::kUpdate : Match::kNone;
  }
  if (f.pred != m.pred || f.object != m.object) return Match::kNone;
  if (f.object.empty() && (f.pred == "is" || f.pred == "has")) return Match::kNone;
  if (f.negative == m.negative && f.retraction == m.retraction) {
    // Same fact; a new or changed date refines it ("plans to visit Tokyo in July 2024").
    return f.date.empty() || f.date == m.date ? Match::kSame : Match::kUpdate;
  }
  if (f.retraction && !m.negative && !f.preference) return Match::kDelete;
  return Match::kUpdate;
}

}  // namespace

Result<std::vector<MemoryDecision>> RuleBasedExtractor::Reconcile(
    const std::vector<FactCandidates>& facts) const {
  std::vector<MemoryDecision> decisions;
  std::vector<std::pair<std::string, Parsed>> earlier;  // facts of this call already decided
  for (size_t i = 0; i < facts.size(); ++i) {
    const FactCandidates& fc = facts[i];
    const std::string fact(TrimAsciiSpace(fc.fact));
    const std::string norm = rule_extract::NormalizeForComparison(fact);
    if (norm.empty()) continue;
    const Parsed f = Parse(fact);
    // A fact repeating an earlier one of this call adds nothing.
    const bool repeated = std::any_of(earlier.begin(), earlier.end(), [&](const auto& e) {
      return e.first == norm || Compare(f, e.second) == Match::kSame;
    });
    if (repeated) continue;
    earlier.emplace_back(norm, f);

    MemoryDecision d;
    d.action = MemoryAction::kAdd;
    bool decided = false;
    for (const SimilarMemory& m : fc.similar) {
      if (!m.id.empty() && rule_extract::NormalizeForComparison(m.text) == norm) {
        d = {MemoryAction::kNone, m.id, ""};
        decided = true;
        break;
      }
    }
    for (size_t k = 0; !decided && k < fc.similar.size(); ++k) {
      const SimilarMemory& m = fc.similar[k];
      if (m.id.empty()) continue;
      switch (Compare(f, Parse(m.text))) {
        case Match::kSame:
          d = {MemoryAction::kNone, m.id, ""}, decided = true;
          break;
        case Match::kUpdate:
          d = {MemoryAction::kUpdate, m.id, fact}, decided = true;
          break;
        case Match::kDelete:
          d = {MemoryAction::kDelete, m.id, ""}, decided = true;
          break;
        case Match::kNone:
          break;
      }
    }
    for (size_t k = 0; !decided && k < fc.similar.size(); ++k) {
      const SimilarMemory& m = fc.similar[k];
      if (m.id.empty() || m.similarity < options_.near_duplicate_similarity) continue;
      const Parsed c = Parse(m.text);
      // Near duplicates only when the parts cannot tell: a parsed pair that differs is different,
      // and so are facts about different people ("User likes tea", "Caroline likes tea").
      if (f.ok && c.ok && (f.subject != c.subject || f.pred == c.pred)) continue;
      if (!f.slot.empty() && !c.slot.empty()) continue;  // different single-valued attributes
      if (f.negative != c.negative || f.numbers != c.numbers) continue;
      d = {MemoryAction::kNone, m.id, ""}, decided = true;
    }
    if (!decided) d = {MemoryAction::kAdd, "", fact};
    d.fact = static_cast<int32_t>(i);
    decisions.push_back(std::move(d));
  }
  return decisions;
}

}  // namespace engram
