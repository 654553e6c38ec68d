// The rule-based extractor's word lists and word-level helpers: splitting, case, punctuation,
// verb forms and stems (see rule_based_internal.h).
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "common/ascii.h"
#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {

// The words of a space-separated string literal (the views point into the literal).
WordSet Words(std::string_view list) {
  WordSet out;
  size_t i = 0;
  while (i < list.size()) {
    const size_t j = std::min(list.find(' ', i), list.size());
    if (j > i) out.insert(list.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Text helpers (ASCII case folding: the word lists are English).

std::string Lower(std::string_view s) { return LowerAscii(s); }

// Curly apostrophes and quotes become ASCII so that one set of word lists covers both.
std::string AsciiQuotes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (i + 2 < s.size() && static_cast<unsigned char>(s[i]) == 0xE2 &&
        static_cast<unsigned char>(s[i + 1]) == 0x80) {
      const unsigned char c = static_cast<unsigned char>(s[i + 2]);
      if (c == 0x98 || c == 0x99) {
        out += '\'';
        i += 2;
        continue;
      }
      if (c == 0x9C || c == 0x9D) {
        out += '"';
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<std::string_view> SplitWords(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsAsciiSpace(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !IsAsciiSpace(s[j])) ++j;
    if (j > i) words.push_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

std::string Join(const std::vector<std::string>& words, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < std::min(to, words.size()); ++i) {
    if (!out.empty()) out += ' ';
    out += words[i];
  }
  return out;
}

Word SplitPunct(std::string_view w) {
  Word out;
  size_t b = 0, e = w.size();
  while (b < e && !IsWordChar(w[b])) ++b;
  while (e > b && !IsWordChar(w[e - 1])) --e;
  out.lead = std::string(w.substr(0, b));
  out.core = std::string(w.substr(b, e - b));
  out.trail = std::string(w.substr(e));
  out.lower = Lower(out.core);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Word lists. Function-local statics: built once, thread-safe, read-only afterwards.

// Adverbs dropped between "I" and the verb: they add emphasis, not facts.
const WordSet& DroppedAdverbs() {
  static const WordSet s = Words(
      "really truly absolutely totally definitely just also actually honestly still currently "
      "recently finally genuinely seriously literally even now kinda personally certainly simply "
      "already officially");
  return s;
}

// Adverbs of frequency change the fact's meaning and stay in it.
const WordSet& KeptAdverbs() {
  static const WordSet s = Words(
      "always usually often sometimes never rarely normally generally regularly occasionally "
      "typically mostly seldom frequently mainly");
  return s;
}

// Verbs (base form) of habits and states worth remembering as "User <verb>s ...".
const WordSet& HabitVerbs() {
  static const WordSet s = Words(
      "eat drink play speak drive own run study teach use go volunteer practice practise collect "
      "cook read watch write swim ride attend visit walk bike cycle paint draw sing knit garden "
      "travel listen follow support meditate smoke wear grow keep take rent commute train hike "
      "bake code program dance surf ski climb fish sew celebrate belong suffer identify vote "
      "manage lead coach mentor raise lift jog skate date babysit host work live have need want "
      "plan intend love like enjoy adore prefer hate dislike detest loathe shop tutor design build "
      "fix brew homeschool pray feed worship avoid skip fast snowboard");
  return s;
}

// Irregular past forms (regular ones end in -ed).
const WordSet& IrregularPast() {
  static const WordSet s = Words(
      "bought went got saw met made took won lost left sold ran wrote began became built found "
      "drove flew grew kept learnt paid rode sang spent swam taught wore broke caught fell hurt "
      "sent slept spoke brought chose did ate drank held lent shot gave read came sat stood threw "
      "dug fed rebuilt beat cut quit hit gotten done seen been gone taken eaten written driven "
      "flown ridden swum begun known");
  return s;
}

// Past forms that report the conversation itself or a passing thought, not a fact.
const WordSet& NonFactPast() {
  static const WordSet s = Words(
      "wanted needed asked wondered tried noticed mentioned thought said told heard realized "
      "realised guessed hoped meant forgot liked loved hated felt supposed used figured assumed "
      "expected imagined wished preferred considered seemed looked searched agreed answered "
      "replied clicked typed checked googled copied pasted tested did came missed messed screwed "
      "confused worried received shared posted uploaded attached included explained described "
      "talked understood learned learnt doubted believed suspected hesitated added changed fixed "
      "updated deleted removed edited followed ended appreciated");
  return s;
}

const WordSet& JobNouns() {
  static const WordSet s = Words(
      "nurse teacher doctor engineer developer programmer designer lawyer accountant architect "
      "scientist researcher professor manager consultant analyst chef cook writer journalist "
      "editor artist musician photographer pilot dentist pharmacist therapist psychologist "
      "electrician plumber carpenter mechanic firefighter officer soldier farmer librarian cashier "
      "waiter waitress bartender barista driver surgeon veterinarian vet paramedic translator "
      "tutor coach trainer salesperson realtor agent entrepreneur freelancer director "
      "administrator clerk secretary assistant technician economist banker lecturer instructor "
      "counselor actor actress dancer singer composer producer filmmaker animator illustrator "
      "marketer recruiter intern specialist worker builder gardener cleaner tailor baker butcher "
      "fisherman nanny caregiver midwife physician physicist chemist biologist mathematician "
      "statistician historian linguist ceo cto cfo founder co-founder dietitian nutritionist "
      "optometrist paralegal policeman policewoman judge sailor welder hairdresser stylist "
      "receptionist copywriter tester strategist planner surveyor inspector principal coordinator");
  return s;
}

// Attributes with one value at a time: "User's <attribute> is X" replaces the previous X.
const WordSet& SingleValued() {
  static const WordSet s = Words(
      "name age birthday email phone number address job occupation profession employer nickname "
      "height weight hometown sign type major salary title school university");
  return s;
}

// Words that make a clause hypothetical, uncertain or about someone else's view.
const WordSet& HedgeWords() {
  static const WordSet s = Words("maybe perhaps probably possibly might would could should");
  return s;
}

const WordSet& StatedWishes() {
  static const WordSet s = Words("love like prefer enjoy rather");
  return s;
}

const WordSet& HypotheticalWords() {
  static const WordSet s = Words(
      "if unless suppose supposing imagine hypothetically maybe perhaps probably possibly might "
      "whether would could should wish");
  return s;
}

// Objects that only make sense in context ("I love it", "my sister lives there").
const WordSet& ContextWords() {
  static const WordSet s = Words(
      "it this that these those them him her you one there here so too yours they he she ones such "
      "what which same both not well some more any");
  return s;
}

// Leading words of a clause that carry no content.
const WordSet& Fillers() {
  static const WordSet s = Words(
      "oh well so and but also actually btw anyway anyways yes yeah yep no nope ok okay hmm um uh "
      "honestly basically haha lol hey hi hello sure right now then plus though fyi incidentally "
      "ah alright cool great thanks personally currently recently nowadays otherwise "
      "besides");
  return s;
}

std::string ThirdPerson(std::string_view v) {
  if (v == "have") return "has";
  if (v == "be") return "is";
  if (v == "do") return "does";
  if (v == "go") return "goes";
  if (v == "can" || v == "will" || v == "must" || v == "may") return std::string(v);
  std::string s(v);
  if (EndsWith(s, "s") || EndsWith(s, "sh") || EndsWith(s, "ch") || EndsWith(s, "x") ||
      EndsWith(s, "z") || EndsWith(s, "o")) {
    return s + "es";
  }
  if (s.size() > 1 && s.back() == 'y' &&
      std::string_view("aeiou").find(s[s.size() - 2]) == std::string_view::npos) {
    return s.substr(0, s.size() - 1) + "ies";
  }
  return s + "s";
}

// Crude inflection stripper for comparisons only ("plays", "playing", "played" -> "play").
std::string Stem(std::string_view word) {
  std::string w(word);
  if (w.size() > 4 && (EndsWith(w, "ies") || EndsWith(w, "ied"))) {
    w = w.substr(0, w.size() - 3) + "y";
  } else if (w.size() > 5 && EndsWith(w, "ing")) {
    w.resize(w.size() - 3);
  } else if (w.size() > 4 && EndsWith(w, "ed")) {
    w.resize(w.size() - 2);
  } else if (w.size() > 4 && (EndsWith(w, "ches") || EndsWith(w, "shes") || EndsWith(w, "sses") ||
                              EndsWith(w, "xes") || EndsWith(w, "oes"))) {
    w.resize(w.size() - 2);
  } else if (w.size() > 3 && w.back() == 's' && !EndsWith(w, "ss") && !EndsWith(w, "'s")) {
    w.resize(w.size() - 1);
  }
  if (w.size() > 3 && w[w.size() - 1] == w[w.size() - 2] && !IsDigit(w.back()) &&
      std::string_view("lsz").find(w.back()) == std::string_view::npos) {
    w.resize(w.size() - 1);  // "running" -> "runn" -> "run"
  }
  if (w.size() > 3 && w.back() == 'e') w.resize(w.size() - 1);  // "live" / "lived" -> "liv"
  return w;
}

// True for a word that can be the verb after "my <noun>" or "user's <noun>".
bool IsVerbLike(std::string_view w, std::string_view prev) {
  static const WordSet kAux = Words(
      "is are was were has have had does do did will can no never used stopped quit gave just "
      "cannot plans wants moved lives");
  // Base forms after a plural subject ("my parents live in Rome"); only verbs rarely nouns.
  static const WordSet kPluralVerbs = Words(
      "live work play speak eat drink study go own visit teach attend love like hate enjoy prefer");
  if (kAux.count(w) > 0) return true;
  if (kPluralVerbs.count(w) > 0) {
    return prev == "i" || prev == "children" || prev == "people" ||
           (EndsWith(prev, "s") && !EndsWith(prev, "'s") && !EndsWith(prev, "ss"));
  }
  if (IrregularPast().count(w) > 0) return true;
  if (w.size() > 3 && EndsWith(w, "ed") && !EndsWith(w, "eed")) return true;  // "died"
  if (w.size() > 2 && w.back() == 's') {
    std::string base(w.substr(0, w.size() - 1));
    if (HabitVerbs().count(base) > 0) return true;
    if (EndsWith(w, "es") && HabitVerbs().count(std::string_view(w).substr(0, w.size() - 2)) > 0)
      return true;
    if (EndsWith(w, "ies") && HabitVerbs().count(std::string(w.substr(0, w.size() - 3)) + "y") > 0)
      return true;
  }
  return false;
}

}  // namespace rule_extract_internal
}  // namespace engram
