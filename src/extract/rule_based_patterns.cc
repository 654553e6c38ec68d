// The fact patterns of the rule-based extractor: a first-person clause ("I ...", "my ...") or a
// short answer to the assistant's question rewritten as a canonical third-person fact.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/ascii.h"
#include "extract/rule_based_extractor.h"
#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {
namespace {

// Renders tokens [from, to) in the third person: "my" -> "<speaker>'s", "me" -> "<speaker>" (see
// kSpeakerMark).
std::string Render(const std::vector<Tok>& t, size_t from, size_t to) {
  static const WordSet kTrailingFillers =
      Words("now too though lol haha btw honestly actually also anyway either already lately");
  to = std::min(to, t.size());
  auto ends_with = [&](std::string_view a, std::string_view b) {
    return to >= from + 2 && t[to - 2].lower == a && t[to - 1].lower == b;
  };
  for (bool more = true; more;) {
    more = false;
    if (ends_with("as", "well") || ends_with("these", "days") || ends_with("right", "now")) {
      to -= 2, more = true;
    }
    while (to > from && kTrailingFillers.count(t[to - 1].lower) > 0) --to, more = true;
    if (to >= from + 3 && t[to - 3].lower == "at" && ends_with("the", "moment"))
      to -= 3, more = true;
  }
  std::string out;
  bool agree = false;  // the next verb follows an "I" inside the clause ("every hike I take")
  for (size_t k = from; k < to; ++k) {
    std::string word = t[k].text;
    const std::string& l = t[k].lower;
    if (agree && !IsAdverbBeforeVerb(l)) {
      word = AgreeWithThirdPerson(t[k]);
      agree = false;
    }
    if (l == "my" || l == "mine") word = std::string(kSpeakerMark) + "'s";
    if (l == "me" || l == "i") word = std::string(kSpeakerMark);
    agree = agree || l == "i";
    if (l == "myself") word = "themselves";
    if (!out.empty()) out += ' ';
    out += word;
    if (k + 1 < to) out += t[k].trail;
  }
  return out;
}

bool IsContextDependent(const std::vector<Tok>& t, size_t from, size_t to) {
  to = std::min(to, t.size());
  if (from >= to) return true;
  if (ContextWords().count(t[from].lower) > 0) return true;
  return ContextWords().count(t[to - 1].lower) > 0 && t[to - 1].lower != "too";
}

std::optional<Rewrite> Make(std::string head, const std::vector<Tok>& t, size_t from, bool past,
                            bool allow_empty = false) {
  if (from >= t.size()) {
    if (!allow_empty) return std::nullopt;
    return Rewrite{std::move(head), past};
  }
  if (IsContextDependent(t, from, t.size())) return std::nullopt;
  if (IsAboutTheConversation(t, from)) return std::nullopt;
  std::string rest = Render(t, from, t.size());
  if (rest.empty() && !allow_empty) return std::nullopt;
  return Rewrite{head + (rest.empty() ? "" : " " + rest), past};
}

bool IsNationality(const Tok& t) {
  static const WordSet kNationalities =
      Words("french dutch swiss greek thai german irish welsh scottish british czech basque");
  const std::string& l = t.lower;
  return kNationalities.count(l) > 0 || EndsWith(l, "ese") || EndsWith(l, "ish") ||
         EndsWith(l, "ian") || EndsWith(l, "can") || EndsWith(l, "ean") || EndsWith(l, "ani");
}

// "I am ..." (t[k] is the word after "am").
std::optional<Rewrite> RewriteAm(const std::vector<Tok>& t, size_t k, bool greeting) {
  static const WordSet kStates = Words(
      "allergic married engaged divorced single retired pregnant vegetarian vegan diabetic lactose "
      "gluten left-handed right-handed interested into learning based fluent afraid scared "
      "obsessed passionate bilingual colorblind deaf blind widowed unemployed self-employed "
      "studying training enrolled originally terrified addicted intolerant sensitive vaccinated "
      "certified licensed member part responsible raising writing building saving taking majoring "
      "reading renovating preparing expecting pescatarian");
  static const WordSet kNonFactIng = Words(
      "going doing feeling wondering thinking trying asking looking getting having saying talking "
      "kidding hoping telling wanting curious joking using running checking writing dying coming "
      "leaving waiting sitting testing");
  while (k < t.size() && DroppedAdverbs().count(t[k].lower) > 0) ++k;
  if (k >= t.size()) return std::nullopt;
  const std::string& w = t[k].lower;
  const std::string_view n1 = k + 1 < t.size() ? std::string_view(t[k + 1].lower) : "";
  if (w == "not") return std::nullopt;  // negated states are too often sarcasm or answers
  if (w == "no" && n1 == "longer") return Make("User is no longer", t, k + 2, false);
  // "going to bed / try that / sleep" is the moment, not a plan.
  static const WordSet kNotPlans = Words(
      "bed sleep work school class try do be have need ask check say tell send get make give look "
      "see think keep let use stop go leave call cry die lose scream read test wait");
  if ((w == "going" || w == "planning") && n1 == "to" && k + 2 < t.size()) {
    const Tok& next = t[k + 2];
    if (kNotPlans.count(next.lower) > 0) return std::nullopt;
    const bool place = next.lower == "the" || IsUpper(next.text[0]) || next.lower == "a";
    // "going to the store" is an errand; with a date or to a named place it is a plan.
    static const WordSet kWhen = Words(
        "tomorrow tonight next weekend week month year summer winter spring fall autumn monday "
        "tuesday wednesday thursday friday saturday sunday");
    const bool dated =
        std::any_of(t.begin() + static_cast<std::ptrdiff_t>(k), t.end(), [](const Tok& x) {
          return kWhen.count(x.lower) > 0 || MonthIndex(x.text) > 0 || AllDigits(x.lower);
        });
    const bool named = IsUpper(next.text[0]) ||
                       (k + 3 < t.size() && next.lower == "the" && IsUpper(t[k + 3].text[0]));
    if (w == "going" && place && !named && !dated) return std::nullopt;
    if (w == "going" && place) return Make("User plans to go to", t, k + 2, false);
    return Make("User plans to", t, k + 2, false);
  }
  if (w == "planning" && n1 == "on") return Make("User plans on", t, k + 2, false);
  if (w == "moving" && n1 == "to") return Make("User plans to move to", t, k + 2, false);
  if (w == "from" || (w == "originally" && n1 == "from")) {
    return Make("User is from", t, w == "from" ? k + 1 : k + 2, false);
  }
  if (AllDigits(w) && w.size() <= 3) {
    const bool bare = k + 1 == t.size();
    const bool years = n1 == "years" || n1 == "yrs" || n1 == "year";
    if (bare || (years && (k + 2 == t.size() || (k + 3 == t.size() && t[k + 2].lower == "old")))) {
      return Rewrite{"User is " + t[k].text + " years old", false};
    }
    return std::nullopt;
  }
  if (w == "working" && (n1 == "as" || n1 == "at" || n1 == "for" || n1 == "in")) {
    return Make("User works " + std::string(n1), t, k + 2, false);
  }
  if (w == "working" && n1 == "on") return Make("User is working on", t, k + 2, false);
  if (w == "living" && n1 == "in") return Make("User lives in", t, k + 2, false);
  if (w == "a" || w == "an") {
    static const WordSet kStops = Words("at in for with of from who that and since on by");
    static const WordSet kVague = Words("bit little lot mess wreck sucker pain");
    if (k + 1 >= t.size() || kVague.count(t[k + 1].lower) > 0) return std::nullopt;
    size_t head = k + 1;
    while (head + 1 < t.size() && kStops.count(t[head + 1].lower) == 0 && t[head].trail.empty()) {
      ++head;
    }
    if (JobNouns().count(t[head].lower) > 0) return Make("User works as", t, k, false);
    return Make("User is", t, k, false);
  }
  if (kStates.count(w) > 0) return Make("User is", t, k, false);
  if (EndsWith(w, "ing") && w.size() > 5 && kNonFactIng.count(w) == 0 && k + 1 < t.size() &&
      n1 != "to") {
    return Make("User is", t, k, false);
  }
  const bool capitalized =
      t.size() - k <= 3 &&
      std::all_of(t.begin() + static_cast<std::ptrdiff_t>(k), t.end(),
                  [](const Tok& x) { return IsUpper(x.text[0]) && x.lower != "i"; });
  if (capitalized) {
    // "I'm Anna" / "Hi, I'm Brian" is a name; "I'm Brazilian" a nationality.
    if (!greeting && k + 1 == t.size() && IsNationality(t[k])) return Make("User is", t, k, false);
    return Make("User's name is", t, k, false);
  }
  return std::nullopt;
}

}  // namespace

// A clause starting with "I" (t[0]).
bool IsAboutTheTask(const std::vector<Tok>& t, size_t from) {
  static const WordSet kTask = Words(
      "error errors bug bugs warning warnings exception traceback output snippet script docs "
      "documentation prompt answer answers response reply message option options example article "
      "tests config list");
  for (size_t k = from; k < t.size(); ++k) {
    if (kTask.count(t[k].lower) > 0) return true;
  }
  return false;
}

bool IsAboutTheConversation(const std::vector<Tok>& t, size_t from) {
  static const WordSet kListener = Words("you your yours yourself u");
  for (size_t k = from; k < t.size(); ++k) {
    if (kListener.count(t[k].lower) > 0) return true;
  }
  return IsAboutTheTask(t, from);
}

std::optional<Rewrite> RewriteI(const std::vector<Tok>& t, bool greeting) {
  size_t k = 1;
  std::string adverbs;  // kept adverbs of frequency, " usually"
  while (k < t.size()) {
    if (DroppedAdverbs().count(t[k].lower) > 0) {
      ++k;
    } else if (KeptAdverbs().count(t[k].lower) > 0) {
      adverbs += " " + t[k].lower;
      ++k;
    } else if (k + 1 < t.size() && (t[k].lower == "kind" || t[k].lower == "sort") &&
               t[k + 1].lower == "of") {
      k += 2;
    } else {
      break;
    }
  }
  if (k >= t.size()) return std::nullopt;
  const std::string& v = t[k].lower;
  const std::string_view n1 = k + 1 < t.size() ? std::string_view(t[k + 1].lower) : "";
  const std::string_view n2 = k + 2 < t.size() ? std::string_view(t[k + 2].lower) : "";
  const std::string user = "User" + adverbs;
  // "I don't smoke anymore" / "any more" is a retraction.
  size_t anymore = 0;
  if (t.back().lower == "anymore") anymore = 1;
  if (t.size() > 2 && t.back().lower == "more" && t[t.size() - 2].lower == "any") anymore = 2;

  if (v == "am") {
    if (!adverbs.empty()) return std::nullopt;
    return RewriteAm(t, k + 1, greeting);
  }
  // Preferences.
  static const WordSet kDislike = Words("hate dislike detest loathe despise");
  if (v == "love" || v == "adore") return Make(user + " loves", t, k + 1, false);
  if (v == "like" || v == "enjoy" || v == "prefer") {
    return Make(user + " " + ThirdPerson(v), t, k + 1, false);
  }
  if (kDislike.count(v) > 0) return Make(user + " dislikes", t, k + 1, false);
  if (v == "can" && n1 == "not" && n2 == "stand") return Make(user + " dislikes", t, k + 3, false);
  if (v == "do" && n1 == "not" && k + 2 < t.size()) {
    static const WordSet kSkip = Words(
        "know think understand remember care mind see get agree believe mean feel recall wanna "
        "need have worry like love enjoy");
    const Tok& verb = t[k + 2];
    if (anymore > 0) {
      const std::vector<Tok> rest(t.begin(), t.end() - static_cast<std::ptrdiff_t>(anymore));
      if (verb.lower == "like" || verb.lower == "love" || verb.lower == "enjoy" ||
          HabitVerbs().count(verb.lower) > 0) {
        return Make(user + " no longer " + ThirdPerson(verb.lower), rest, k + 3, false, true);
      }
      return std::nullopt;
    }
    if (verb.lower == "like" || verb.lower == "love" || verb.lower == "enjoy") {
      return Make(user + " does not " + verb.lower, t, k + 3, false);
    }
    if (verb.lower == "have" && k + 3 < t.size() && t[k + 3].lower != "to") {
      return Make(user + " does not have", t, k + 3, false);
    }
    if (kSkip.count(verb.lower) > 0 || HabitVerbs().count(verb.lower) == 0) return std::nullopt;
    return Make(user + " does not " + verb.lower, t, k + 3, false, true);
  }
  if (v == "can" && n1 == "not" && HabitVerbs().count(n2) > 0) {
    return Make(user + " cannot " + std::string(n2), t, k + 3, false, true);
  }
  if (v == "can" && HabitVerbs().count(n1) > 0 && n1 != "like") {
    return Make(user + " can " + std::string(n1), t, k + 2, false, true);
  }
  // Retractions.
  if (v == "no" && n1 == "longer" && k + 2 < t.size()) {
    const std::string& verb = t[k + 2].lower;
    if (verb == "am") return Make("User is no longer", t, k + 3, false);
    if (HabitVerbs().count(verb) == 0) return std::nullopt;
    return Make("User no longer " + ThirdPerson(verb), t, k + 3, false);
  }
  // "... but I quit 2 years ago": what was stopped is in another clause.
  static const WordSet kNoObject = Words(
      "in on at last next yesterday today tomorrow this recently after before when because since "
      "a an two three four five six seven eight nine ten few couple several");
  const bool time_next = AllDigits(n1) || (kNoObject.count(n1) > 0 &&
                                           !((n1 == "a" || n1 == "an") && Unit(n2).empty()));
  if ((v == "stopped" || v == "quit") && !time_next) return Make(user + " " + v, t, k + 1, true);
  if (v == "stopped" || v == "quit") return std::nullopt;
  if (v == "gave" && n1 == "up") return Make(user + " gave up", t, k + 2, true);
  if (v == "used" && n1 == "to") return Make(user + " used to", t, k + 2, true);
  // Plans.
  static const WordSet kNonPlan = Words(
      "not try think let check see keep get do need have look ask tell send give make be just "
      "probably definitely never always read wait consider update use");
  static const WordSet kBeingPlans = Words(
      "in at visiting traveling travelling flying working staying attending starting studying");
  if (v == "will" && n1 == "be" && (n2 == "moving" || n2 == "going") && k + 3 < t.size() &&
      t[k + 3].lower == "to") {
    return Make(std::string("User plans to ") + (n2 == "moving" ? "move" : "go") + " to", t, k + 4,
                false);
  }
  if (v == "will" && n1 == "be" && kBeingPlans.count(n2) > 0) {
    return Make("User plans to be", t, k + 2, false);
  }
  if (v == "will" && kNonPlan.count(n1) == 0) {
    return Make("User plans to", t, k + 1, false);
  }
  if ((v == "plan" || v == "intend") && n1 == "to") return Make("User plans to", t, k + 2, false);
  if (v == "want" && n1 == "to") return Make(user + " wants to", t, k + 2, false);
  // "I need a laptop" is worth remembering; "I need a break" / "I need help" is the moment.
  if (v == "need" && (n1 == "a" || n1 == "an" || n1 == "new")) {
    static const WordSet kMoment = Words(
        "help hand break minute moment second hug nap favor favour word chance refresher reminder "
        "quick little bit hint clue way drink coffee vacation holiday rest answer solution fix");
    if (kMoment.count(n2) > 0 || kMoment.count(n1) > 0) return std::nullopt;
    return Make(user + " needs", t, k + 1, false);
  }
  // Identity.
  if (v == "work" && (n1 == "as" || n1 == "at" || n1 == "for" || n1 == "in" || n1 == "from" ||
                      n1 == "remotely" || n1 == "part-time" || n1 == "full-time")) {
    return Make(user + " works", t, k + 1, false);
  }
  if (v == "live" && (n1 == "in" || n1 == "on" || n1 == "near" || n1 == "with" || n1 == "alone" ||
                      n1 == "by" || n1 == "outside")) {
    return Make(user + " lives", t, k + 1, false);
  }
  if ((v == "moved" || v == "relocated") && (n1 == "to" || (n1 == "back" && n2 == "to"))) {
    return Make(user + " moved to", t, k + (n1 == "to" ? 2 : 3), true);
  }
  if (v == "come" && n1 == "from") return Make("User is from", t, k + 2, false);
  if (v == "grew" && n1 == "up") return Make(user + " grew up", t, k + 2, true);
  if (v == "was" && k + 1 < t.size()) {
    static const WordSet kPassive = Words(
        "born diagnosed promoted hired fired laid raised married adopted accepted admitted elected "
        "awarded transferred engaged divorced");
    if (kPassive.count(n1) > 0 && k + 2 < t.size()) return Make(user + " was", t, k + 1, true);
    return std::nullopt;
  }
  if (v == "have" || v == "had") {
    static const WordSet kNonFactNoun = Words(
        "question questions idea problem issue doubt feeling suggestion request quick follow-up "
        "concern thought clue bug error");
    if (n1 == "to" || n1 == "got" || (v == "had" && n1 == "better")) return std::nullopt;
    if ((n1 == "a" || n1 == "an" || n1 == "some" || n1 == "another" || n1 == "few" || n1 == "no") &&
        (kNonFactNoun.count(n2) > 0 ||
         (k + 3 < t.size() && kNonFactNoun.count(t[k + 3].lower) > 0))) {
      return std::nullopt;
    }
    if (kNonFactNoun.count(n1) > 0) return std::nullopt;
    static const WordSet kNonFactIng =
        Words("thinking wondering trying looking meaning waiting struggling going getting asking");
    if (n1 == "been" && kNonFactIng.count(n2) > 0) return std::nullopt;
    if (v == "had") return Make(user + " had", t, k + 1, true);
    const bool perfect =
        n1 == "been" || (n1.size() > 4 && EndsWith(n1, "ed")) || IrregularPast().count(n1) > 0;
    if (perfect && NonFactPast().count(n1) > 0 && n1 != "been" && n1 != "read") {
      return std::nullopt;
    }
    return Make(user + " has", t, k + 1, perfect);
  }
  // Past events: "I bought a car yesterday".
  if ((IrregularPast().count(v) > 0 || (v.size() > 4 && EndsWith(v, "ed"))) &&
      NonFactPast().count(v) == 0) {
    return Make(user + " " + v, t, k + 1, true);
  }
  if (HabitVerbs().count(v) > 0 && v != "need" && v != "want" && v != "plan" && v != "intend") {
    return Make(user + " " + ThirdPerson(v), t, k + 1, false, true);
  }
  return std::nullopt;
}

size_t MyClauseVerb(const std::vector<Tok>& t) {
  if (t.size() < 3) return 0;
  const bool favorite = t[1].lower == "favorite" || t[1].lower == "favourite";
  for (size_t k = 2; k < t.size() && k <= 5; ++k) {
    const std::string& w = t[k].lower;
    // After "my favorite <thing>" only "is" / "are" is the verb ("my favorite drinks are ...").
    const bool is_verb = favorite ? (w == "is" || w == "are") : IsVerbLike(w, t[k - 1].lower);
    if (is_verb && t[k - 1].trail.empty()) return k;
    if (!t[k - 1].trail.empty()) break;
  }
  return 0;
}

// A clause starting with "my" (t[0]).
std::optional<Rewrite> RewriteMy(const std::vector<Tok>& t) {
  static const WordSet kSmallTalk = Words(
      "bad pleasure god goodness question point guess mistake answer apologies day week weekend "
      "morning evening gosh code computer screen internet thoughts concern problem issue");
  const bool favorite = t.size() > 1 && (t[1].lower == "favorite" || t[1].lower == "favourite");
  const size_t verb = MyClauseVerb(t);
  if (verb == 0 || verb + 1 >= t.size()) return std::nullopt;
  if (kSmallTalk.count(t[verb - 1].lower) > 0 && !favorite) return std::nullopt;
  const std::string& v = t[verb].lower;
  const bool be = v == "is" || v == "are" || v == "was" || v == "were";
  // "My week was (really) busy": a lone adjective after a form of "be" is small talk.
  static const WordSet kIntensifiers = Words("really so very super pretty quite too extremely");
  size_t adjective = verb + 1;
  while (adjective + 1 < t.size() && kIntensifiers.count(t[adjective].lower) > 0) ++adjective;
  const bool plain_word =
      std::all_of(t[adjective].lower.begin(), t[adjective].lower.end(),
                  [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  if (be && adjective + 1 == t.size() && !IsUpper(t[adjective].text[0]) && plain_word &&
      !favorite && SingleValued().count(t[verb - 1].lower) == 0) {
    return std::nullopt;
  }
  std::string subject = Render(t, 0, verb);
  if (favorite && verb < 3) return std::nullopt;
  if (favorite) subject = "User's favorite " + Render(t, 2, verb);
  const bool past =
      v == "was" || v == "were" || v == "had" || EndsWith(v, "ed") || IrregularPast().count(v) > 0;
  std::optional<Rewrite> r = Make(subject + " " + t[verb].lower, t, verb + 1, past);
  // A birthday or an anniversary recurs: "June 5" must not become one year's date.
  if (r && (subject.find("birthday") != std::string::npos ||
            subject.find("anniversary") != std::string::npos)) {
    r->resolve_dates = false;
  }
  return r;
}

// A short answer to the assistant's last question ("What's your favorite color?" / "Blue").
std::optional<std::string> AnswerFact(std::string_view question, std::string_view answer) {
  std::string q = rule_extract::NormalizeForComparison(question);
  if (const size_t at = q.find("favourite"); at != std::string::npos) q.replace(at, 9, "favorite");
  std::string a(TrimAsciiSpace(answer));
  while (!a.empty() && (a.back() == '.' || a.back() == '!')) a.pop_back();
  const std::string na = rule_extract::NormalizeForComparison(a);
  static const WordSet kNonAnswers = Words(
      "yes no not idk maybe dunno none nothing i why what sure ok okay thanks hmm it that depends "
      "you hello hi");
  const std::vector<std::string_view> words = SplitWords(na);
  if (words.empty() || words.size() > 4 || kNonAnswers.count(words[0]) > 0) return std::nullopt;
  if (a.find_first_of("?,;:") != std::string::npos) return std::nullopt;
  auto after = [&](std::string_view prefix) -> std::optional<std::string> {
    if (q.rfind(prefix, 0) != 0) return std::nullopt;
    std::string rest = q.substr(prefix.size());
    while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
    return rest;
  };
  if (auto x = after("what is your favorite");
      x && !x->empty() && x->find(' ') == std::string::npos) {
    return "User's favorite " + *x + " is " + a;
  }
  if (q == "what is your name") return "User's name is " + a;
  if (q == "where do you live" || q == "where are you based") return "User lives in " + a;
  if (q == "where are you from") return "User is from " + a;
  if (q == "how old are you" && AllDigits(words[0]) && words.size() <= 3) {
    return "User is " + std::string(words[0]) + " years old";
  }
  return std::nullopt;
}

}  // namespace rule_extract_internal
}  // namespace engram
