// The assistant's messages for the rule-based extractor: only what the assistant recommended,
// suggested or committed to doing for the user is worth remembering ("I recommend X", "Here are
// some X recommendations", "I'll remind you tomorrow at 9"). Explanations, greetings, questions and
// general knowledge state nothing about the user, and a conditional, hedged or negated
// recommendation is not one.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {
namespace {

// An object that only makes sense in context ("I recommend the second one", "try it") or is about
// the task at hand ("check the logs") is no memory.
bool Unusable(const Tok& t, bool allow_you) {
  static const WordSet kContext = Words(
      "it this that these those them they one ones him her he she there here above below "
      "following former latter both either same such something anything everything");
  static const WordSet kTask = Words(
      "error errors bug bugs code script docs documentation command commands file files function "
      "functions snippet output log logs terminal settings option options step steps approach "
      "method solution answer link links article page version package library query");
  static const WordSet kYou = Words("you your yours yourself u");
  return kContext.count(t.lower) > 0 || kTask.count(t.lower) > 0 ||
         (!allow_you && kYou.count(t.lower) > 0);
}

// The end of the object starting at t[from]: before a clause break (",", ";", ":") or a word that
// starts a reason or a condition.
size_t ObjectEnd(const std::vector<Tok>& t, size_t from, bool through_commas = false) {
  static const WordSet kStops = Words(
      "because since as so which while but unless for when whereas though although instead "
      "rather especially");
  size_t k = from;
  for (; k < t.size(); ++k) {
    if (kStops.count(t[k].lower) > 0 && k > from) break;
    const bool broken =
        t[k].trail.find_first_of(through_commas ? ";:" : ",;:") != std::string::npos;
    if (broken || t[k].trail.find("--") != std::string::npos) return k + 1;
  }
  return k;
}

// Tokens [from, to) as a phrase about the user: "you" -> the addressee, "your" -> theirs. A
// `clause` ("... that you X", "remind you to X") may speak of the user; an object may not. Empty
// when the phrase cannot stand on its own.
std::string Phrase(const std::vector<Tok>& t, size_t from, size_t to, std::string_view addressee,
                   bool clause) {
  static const WordSet kBadStart = Words("to not against with and or");
  if (from >= to || to - from > 12) return "";
  if (!clause && kBadStart.count(t[from].lower) > 0) return "";
  std::string out;
  for (size_t k = from; k < to; ++k) {
    if (Unusable(t[k], clause)) return "";
    std::string word = t[k].text;
    const std::string& l = t[k].lower;
    if (l == "you" || l == "u") word = std::string(addressee);
    if (l == "your" || l == "yours") word = std::string(addressee) + "'s";
    if (l == "yourself") word = "themselves";
    if (!out.empty()) out += ' ';
    out += word;
    if (k + 1 < to) out += t[k].trail;
  }
  return out;
}

bool Capitalized(const std::vector<Tok>& t, size_t from, size_t to) {
  for (size_t k = from; k < to; ++k) {
    if (!IsUpper(t[k].text[0]) && !AllDigits(t[k].lower)) return false;
  }
  return from < to;
}

std::string Verb(std::string_view kind) { return kind == "suggest" ? "suggested" : "recommended"; }

// "I (would) (highly) recommend X", "I'd suggest (that) you X".
std::optional<std::string> Recommends(const std::vector<Tok>& t, size_t k,
                                      std::string_view addressee) {
  static const WordSet kAdverbs =
      Words("would highly strongly really definitely personally also always genuinely");
  if (t[k].lower != "i") return std::nullopt;
  size_t j = k + 1;
  while (j < t.size() && kAdverbs.count(t[j].lower) > 0) ++j;
  if (j + 1 >= t.size() || (t[j].lower != "recommend" && t[j].lower != "suggest")) {
    return std::nullopt;
  }
  const std::string verb = Verb(t[j].lower);
  size_t from = j + 1;
  if (t[from].lower == "that" && from + 1 < t.size() && t[from + 1].lower == "you") ++from;
  if (t[from].lower == "you") {
    const std::string rest = Phrase(t, from + 1, ObjectEnd(t, from + 1), addressee, true);
    if (rest.empty()) return std::nullopt;
    return "The assistant " + verb + " that " + std::string(addressee) + " " + rest;
  }
  const std::string object = Phrase(t, from, ObjectEnd(t, from), addressee, false);
  if (object.empty()) return std::nullopt;
  return "The assistant " + verb + " " + object + " to " + std::string(addressee);
}

// "You should try X", "You could check out X", "You must consider X".
std::optional<std::string> YouShould(const std::vector<Tok>& t, size_t k,
                                     std::string_view addressee) {
  static const WordSet kModals = Words("should must could can");
  static const WordSet kAdverbs = Words("definitely really also totally absolutely");
  if (t[k].lower != "you" || k + 2 >= t.size() || kModals.count(t[k + 1].lower) == 0) {
    return std::nullopt;
  }
  const std::string verb =
      t[k + 1].lower == "should" || t[k + 1].lower == "must" ? "recommended" : "suggested";
  size_t j = k + 2;
  while (j < t.size() && kAdverbs.count(t[j].lower) > 0) ++j;
  if (j >= t.size()) return std::nullopt;
  size_t from = 0;
  if (t[j].lower == "try" || t[j].lower == "consider") from = j + 1;
  if (t[j].lower == "check" && j + 1 < t.size() && t[j + 1].lower == "out") from = j + 2;
  if (from == 0) return std::nullopt;
  const std::string object = Phrase(t, from, ObjectEnd(t, from), addressee, false);
  if (object.empty()) return std::nullopt;
  return "The assistant " + verb + " " + object + " to " + std::string(addressee);
}

// "Here are some Americano recommendations", "Here are a few recommendations for X", "Here are my
// picks: X and Y", "My recommendation is X".
std::optional<std::string> HereAre(const std::vector<Tok>& t, size_t k,
                                   std::string_view addressee) {
  static const WordSet kNouns =
      Words("recommendation recommendations suggestion suggestions pick picks");
  static const WordSet kQuantifiers =
      Words("some a an few couple of several my our top the handful two three four five");
  const std::string to(addressee);
  if (k + 2 < t.size() && t[k].lower == "my") {
    size_t j = k + 1;
    if (t[j].lower == "top") ++j;
    if (j + 2 >= t.size() || kNouns.count(t[j].lower) == 0) return std::nullopt;
    size_t from = j + 1;
    if (t[from].lower == "would" && t[from + 1].lower == "be") ++from;
    if (t[from].lower != "is" && t[from].lower != "be") return std::nullopt;
    const std::string object = Phrase(t, from + 1, ObjectEnd(t, from + 1), addressee, false);
    if (object.empty()) return std::nullopt;
    return "The assistant " + Verb(t[j].lower.substr(0, 7)) + " " + object + " to " + to;
  }
  if (k + 2 >= t.size() || t[k].lower != "here" ||
      (t[k + 1].lower != "are" && t[k + 1].lower != "is")) {
    return std::nullopt;
  }
  size_t j = k + 2;
  while (j < t.size() && (kQuantifiers.count(t[j].lower) > 0 || AllDigits(t[j].lower))) ++j;
  size_t noun = j;
  while (noun < t.size() && kNouns.count(t[noun].lower) == 0 && t[noun].trail.empty()) ++noun;
  if (noun >= t.size() || kNouns.count(t[noun].lower) == 0 || noun - j > 4) return std::nullopt;
  const std::string kind = t[noun].lower.substr(0, 7);  // "recomme" / "suggest" / "picks"
  std::string noun_text = t[noun].lower;
  if (noun_text.back() != 's') noun_text += 's';
  if (noun == j) {
    if (noun + 1 >= t.size()) return std::nullopt;
    if (t[noun].trail.find(':') != std::string::npos) {  // "Here are my picks: X, Y and Z"
      const std::string list = Phrase(t, noun + 1, ObjectEnd(t, noun + 1, true), addressee, false);
      if (list.empty()) return std::nullopt;
      return "The assistant " + Verb(kind) + " " + list + " to " + to;
    }
    if (t[noun].lower.back() != 's' || t[noun + 1].lower != "for") return std::nullopt;
    const std::string topic = Phrase(t, noun + 2, ObjectEnd(t, noun + 2), addressee, false);
    if (topic.empty()) return std::nullopt;
    return "The assistant gave " + to + " " + noun_text + " for " + topic;
  }
  // "Here is a list of recommendations": no kind of thing.
  static const WordSet kVague = Words("of list more other additional");
  for (size_t x = j; x < noun; ++x) {
    if (kVague.count(t[x].lower) > 0) return std::nullopt;
  }
  const std::string what = Phrase(t, j, noun, addressee, false);
  if (what.empty()) return std::nullopt;
  // "Americano recommendations" name what was recommended; "book recommendations" only the kind.
  if (Capitalized(t, j, noun)) return "The assistant " + Verb(kind) + " " + what + " to " + to;
  return "The assistant gave " + to + " " + what + " " + noun_text;
}

// "I'll remind you tomorrow at 9", "I'm going to send you the plan on Friday", "I've set a reminder
// for Monday".
std::optional<std::string> Commits(const std::vector<Tok>& t, size_t k,
                                   std::string_view addressee) {
  static const WordSet kVerbs = Words("remind notify alert ping email text call message send");
  if (t[k].lower != "i" || k + 2 >= t.size()) return std::nullopt;
  size_t j = k + 1;
  std::string tense;
  if (t[j].lower == "will") {
    tense = "will ", ++j;
  } else if (j + 2 < t.size() && t[j].lower == "am" && t[j + 1].lower == "going" &&
             t[j + 2].lower == "to") {
    tense = "will ", j += 3;
  } else if (t[j].lower == "have") {
    ++j;
  }
  while (j < t.size() && (t[j].lower == "also" || t[j].lower == "definitely")) ++j;
  if (j + 2 >= t.size()) return std::nullopt;
  const std::string to(addressee);
  std::string head;
  size_t from = 0;
  if (!tense.empty() && kVerbs.count(t[j].lower) > 0 && t[j + 1].lower == "you") {
    head = t[j].lower + " " + to, from = j + 2;
  } else if (!tense.empty() && j + 3 < t.size() &&
             ((t[j].lower == "check" && t[j + 1].lower == "in") ||
              (t[j].lower == "follow" && t[j + 1].lower == "up")) &&
             t[j + 2].lower == "with" && t[j + 3].lower == "you") {
    head = t[j].lower + " " + t[j + 1].lower + " with " + to, from = j + 4;
  } else if (t[j].lower == "set" && t[j + 1].lower == "a" && t[j + 2].lower == "reminder") {
    head = std::string("set a reminder"), from = j + 3;
    if (from + 1 < t.size() && t[from].lower == "for" && t[from + 1].lower == "you") {
      head += " for " + to, from += 2;
    }
  } else {
    return std::nullopt;
  }
  const std::string rest = Phrase(t, from, ObjectEnd(t, from), addressee, true);
  if (rest.empty()) return std::nullopt;
  return "The assistant " + tense + head + " " + rest;
}

}  // namespace

std::optional<std::string> AssistantFact(const std::vector<Tok>& t, std::string_view addressee) {
  // Conditional, hedged or negated advice is not a recommendation worth remembering.
  static const WordSet kHedges =
      Words("if unless whether maybe perhaps might not never depends depending");
  static const WordSet kOpeners = Words("sure absolutely certainly definitely course of");
  for (const Tok& x : t) {
    if (kHedges.count(x.lower) > 0) return std::nullopt;
  }
  size_t k = 0;
  while (k < t.size() && (Fillers().count(t[k].lower) > 0 || kOpeners.count(t[k].lower) > 0)) {
    ++k;
  }
  // "For a stronger cup, I'd recommend X": the advice may follow a short lead-in.
  std::vector<size_t> starts = {k};
  for (size_t j = k; j < t.size() && j < k + 8; ++j) {
    if (t[j].trail.find(',') != std::string::npos && j + 1 < t.size()) {
      starts.push_back(j + 1);
      break;
    }
  }
  for (size_t s : starts) {
    if (s + 1 >= t.size()) continue;
    for (auto pattern : {Recommends, YouShould, HereAre, Commits}) {
      if (auto fact = pattern(t, s, addressee)) return fact;
    }
  }
  return std::nullopt;
}

bool AsksForAdvice(const std::vector<Tok>& t) {
  static const WordSet kAsks = Words(
      "recommend recommendation recommendations suggest suggestion suggestions advice advise "
      "ideas tips remind reminder");
  for (const Tok& x : t) {
    if (kAsks.count(x.lower) > 0) return true;
  }
  return false;
}

}  // namespace rule_extract_internal
}  // namespace engram
