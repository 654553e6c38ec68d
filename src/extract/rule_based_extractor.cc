#include "extract/rule_based_extractor.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/ascii.h"
#include "common/time_util.h"

namespace engram {
namespace {

using WordSet = std::unordered_set<std::string_view>;

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

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
// Bytes of multi-byte UTF-8 characters count as word characters (names such as "Zürich").
bool IsWordChar(char c) { return IsAlnum(c) || static_cast<unsigned char>(c) >= 0x80; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}

bool HasDigit(std::string_view s) { return std::any_of(s.begin(), s.end(), IsDigit); }

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

std::string Join(const std::vector<std::string>& words, size_t from = 0, size_t to = SIZE_MAX) {
  std::string out;
  for (size_t i = from; i < std::min(to, words.size()); ++i) {
    if (!out.empty()) out += ' ';
    out += words[i];
  }
  return out;
}

// A word split into leading punctuation, core and trailing punctuation: "(Berlin)," ->
// "(", "Berlin", "),". Apostrophes and hyphens inside the core stay.
struct Word {
  std::string lead, core, trail, lower;
};

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
// Dates.

constexpr std::array<std::string_view, 12> kMonths = {
    "January", "February", "March",     "April",   "May",      "June",
    "July",    "August",   "September", "October", "November", "December"};
constexpr std::array<std::string_view, 7> kWeekdays = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"};

int Weekday(int64_t days) { return static_cast<int>(((days + 3) % 7 + 7) % 7); }  // Monday = 0

std::string FormatDay(int64_t days) {
  const Civil c = CivilFromDays(days);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u", static_cast<long long>(c.y), c.m, c.d);
  return buf;
}

std::string FormatMonth(int64_t y, int m) {  // m: 1..12
  return std::string(kMonths[m - 1]) + " " + std::to_string(y);
}

// Month `m` (1..12) of year `y` shifted by `delta` months.
std::string ShiftMonth(int64_t y, int m, int64_t delta) {
  int64_t idx = y * 12 + (m - 1) + delta;
  const int64_t ny = idx >= 0 ? idx / 12 : (idx - 11) / 12;
  return FormatMonth(ny, static_cast<int>(idx - ny * 12) + 1);
}

std::string WeekOf(int64_t days) { return "in the week of " + FormatDay(days - Weekday(days)); }

std::optional<int> SmallNumber(std::string_view w) {
  static const std::array<std::string_view, 13> kNumbers = {
      "zero",  "one",   "two",  "three", "four",   "five",  "six",
      "seven", "eight", "nine", "ten",   "eleven", "twelve"};
  if (w == "a" || w == "an") return 1;
  for (size_t i = 0; i < kNumbers.size(); ++i) {
    if (w == kNumbers[i]) return static_cast<int>(i);
  }
  if (AllDigits(w) && w.size() <= 3) return std::stoi(std::string(w));
  return std::nullopt;
}

int MonthIndex(std::string_view core) {  // 1..12, or 0; needs the capital ("may" is a verb)
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (core == kMonths[i]) return static_cast<int>(i) + 1;
  }
  return 0;
}

int WeekdayIndex(std::string_view lower) {  // Monday = 0; -1 for anything else ("mondays")
  for (size_t i = 0; i < kWeekdays.size(); ++i) {
    if (lower == kWeekdays[i]) return static_cast<int>(i);
  }
  return -1;
}

std::string_view Unit(std::string_view w) {
  for (std::string_view u : {"day", "week", "month", "year"}) {
    if (w == u || (w.size() == u.size() + 1 && w.substr(0, u.size()) == u && w.back() == 's')) {
      return u;
    }
  }
  return {};
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

// ---------------------------------------------------------------------------------------------
// Tokens of a sentence, contractions expanded ("I'm" -> "I", "am"; "don't" -> "do", "not").

struct Tok {
  std::string text;   // as written (without its trailing punctuation)
  std::string lower;  // lower case, without any punctuation
  std::string trail;  // trailing punctuation
};

std::vector<Tok> Tokenize(std::string_view sentence) {
  // Words whose "'s" / "'m" / "'ve" / "'ll" / "'d" / "'re" is a verb, not a possessive.
  static const WordSet kContracted =
      Words("i it that he she there what who where here how name we they you");
  std::vector<Tok> out;
  for (std::string_view raw : SplitWords(sentence)) {
    Word w = SplitPunct(raw);
    if (w.core.empty()) {
      if (!out.empty()) out.back().trail += w.lead;
      continue;
    }
    auto push = [&](std::string text, std::string lower) {
      out.push_back({std::move(text), std::move(lower), ""});
    };
    const std::string& l = w.lower;
    const std::string& c = w.core;
    const size_t apos = l.find('\'');
    if (l == "cannot" || l == "can't") {
      push(w.lead + c.substr(0, 2) + "n", "can");
      push("not", "not");
    } else if (l == "won't") {
      push(w.lead + c.substr(0, 1) + "ill", "will");
      push("not", "not");
    } else if (EndsWith(l, "n't") && l.size() > 3) {
      push(w.lead + c.substr(0, c.size() - 3), l.substr(0, l.size() - 3));
      push("not", "not");
    } else if (apos != std::string::npos && apos + 1 < l.size() &&
               kContracted.count(std::string_view(l).substr(0, apos)) > 0) {
      static const std::array<std::pair<std::string_view, std::string_view>, 6> kTails = {
          {{"m", "am"},
           {"ve", "have"},
           {"ll", "will"},
           {"d", "would"},
           {"s", "is"},
           {"re", "are"}}};
      std::string tail = l.substr(apos + 1), expanded = tail;
      for (const auto& [from, to] : kTails) {
        if (tail == from) expanded = std::string(to);
      }
      push(w.lead + c.substr(0, apos), l.substr(0, apos));
      push(expanded, expanded);
    } else {
      std::string lower;
      for (char ch : l) {
        if (IsWordChar(ch) || ch == '\'' || ch == '-') lower += ch;
      }
      push(w.lead + c, lower);
    }
    out.back().trail = w.trail;
  }
  return out;
}

struct Clause {
  std::vector<Tok> toks;
  bool greeting = false;  // the sentence began with "Hi" / "Hello" / "Hey"
};

bool StartsFirstPerson(const std::vector<Tok>& t, size_t k) {
  return k < t.size() && (t[k].lower == "i" || t[k].lower == "my");
}

// Length of the time expression at t[from] ("Yesterday", "Last week,", "In 2019") when the first
// person follows it; 0 otherwise.
size_t TemporalPrefix(const std::vector<Tok>& t, size_t from = 0) {
  static const WordSet kTime = Words(
      "yesterday today tonight tomorrow last next this on in at ago a an the earlier week month "
      "year weekend night morning afternoon evening day days weeks months years couple of few "
      "monday tuesday wednesday thursday friday saturday sunday january february march april may "
      "june july august september october november december one two three four five six seven "
      "eight nine ten");
  static const WordSet kWeak = Words("on in at a an the of this");
  bool strong = false;
  for (size_t k = from; k < t.size() && k < from + 5; ++k) {
    if (StartsFirstPerson(t, k)) return strong ? k - from : 0;
    if (kTime.count(t[k].lower) == 0 && !AllDigits(t[k].lower)) return 0;
    strong = strong || kWeak.count(t[k].lower) == 0;
  }
  return 0;
}

// Length of "please remember (that)", "note that", "keep in mind (that)", "don't forget (that)",
// "just so you know", "for the record" at t[k]; 0 if none.
size_t MemoPrefix(const std::vector<Tok>& t, size_t k) {
  static const std::string_view kPrefixes =
      "please|remember that|remember|note that|keep in mind that|keep in mind|do not forget that|"
      "just so you know|for the record";
  for (size_t b = 0; b < kPrefixes.size();) {
    const size_t e = std::min(kPrefixes.find('|', b), kPrefixes.size());
    const std::vector<std::string_view> words = SplitWords(kPrefixes.substr(b, e - b));
    b = e + 1;
    size_t n = 0;
    while (n < words.size() && k + n < t.size() && t[k + n].lower == words[n]) ++n;
    if (n == words.size() && k + n < t.size()) return n;
  }
  return 0;
}

// True when a clause starts at t[k]: "I ...", "my ...", "yesterday I ...".
bool StartsClause(const std::vector<Tok>& t, size_t k) {
  return StartsFirstPerson(t, k) || TemporalPrefix(t, k) > 0;
}

// True when t[from, k) is a time expression (possibly after fillers), so that "Yesterday, I ..."
// stays one clause.
bool TemporalOnly(const std::vector<Tok>& t, size_t from, size_t k) {
  while (from < k && Fillers().count(t[from].lower) > 0) ++from;
  return from < k && TemporalPrefix(t, from) == k - from;
}

// Clauses of a sentence: a new one starts at "I" / "my" after a comma, a semicolon, or a
// conjunction ("I love hiking but I hate running"). Leading fillers are dropped and a leading time
// expression moves to the end.
std::vector<Clause> SplitClauses(const std::vector<Tok>& t) {
  static const WordSet kConjunctions =
      Words("and but so because although though while as plus yet cause cuz whereas");
  std::vector<Clause> out(1);
  size_t clause_start = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    // "My husband and I are moving": "and I" joins subjects here, not clauses.
    const bool short_subject =
        out.back().toks.size() <= 3 && !out.back().toks.empty() && out.back().toks[0].lower == "my";
    const bool conj = kConjunctions.count(t[k].lower) > 0 && StartsClause(t, k + 1) &&
                      !(short_subject && t[k].lower == "and");
    const bool after_punct = k > 0 && StartsClause(t, k) &&
                             t[k - 1].trail.find_first_of(",;:-") != std::string::npos &&
                             !TemporalOnly(t, clause_start, k);
    if ((conj || after_punct) && !out.back().toks.empty()) {
      out.back().toks.back().trail.clear();
      out.emplace_back();
      clause_start = conj ? k + 1 : k;
    }
    if (conj) continue;
    out.back().toks.push_back(t[k]);
  }
  for (Clause& c : out) {
    size_t k = 0;
    while (k < c.toks.size()) {
      const std::string& w = c.toks[k].lower;
      if (w == "hi" || w == "hello" || w == "hey") c.greeting = true;
      if (k + 2 < c.toks.size() && w == "by" && c.toks[k + 1].lower == "the" &&
          c.toks[k + 2].lower == "way") {
        k += 3;
        continue;
      }
      // "Please remember that I ...", "Just so you know, I ...": a request to remember.
      if (const size_t n = MemoPrefix(c.toks, k); n > 0) {
        k += n;
        continue;
      }
      if (Fillers().count(w) == 0 || StartsFirstPerson(c.toks, k)) break;
      ++k;
    }
    c.toks.erase(c.toks.begin(), c.toks.begin() + static_cast<std::ptrdiff_t>(k));
    // "Yesterday I went ..." -> "I went ... yesterday".
    if (const size_t n = TemporalPrefix(c.toks); n > 0) {
      if (MonthIndex(c.toks[0].text) == 0 && WeekdayIndex(c.toks[0].lower) < 0) {
        c.toks[0].text = c.toks[0].lower;  // "In 2019" -> "in 2019"
      }
      c.toks[n - 1].trail.clear();
      c.toks.back().trail.clear();
      std::rotate(c.toks.begin(), c.toks.begin() + static_cast<std::ptrdiff_t>(n), c.toks.end());
    }
  }
  return out;
}

// Renders tokens [from, to) in the third person: "my" -> "User's", "me" -> "User".
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
  for (size_t k = from; k < to; ++k) {
    std::string word = t[k].text;
    const std::string& l = t[k].lower;
    if (l == "my" || l == "mine") word = "User's";
    if (l == "me") word = "User";
    if (l == "i") word = "User";
    if (l == "am" && k > from && t[k - 1].lower == "i") word = "is";
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

struct Rewrite {
  std::string fact;
  bool past = false;  // resolve bare weekdays and month names to the past
  bool resolve_dates = true;
};

std::optional<Rewrite> Make(std::string head, const std::vector<Tok>& t, size_t from, bool past,
                            bool allow_empty = false) {
  if (from >= t.size()) {
    if (!allow_empty) return std::nullopt;
    return Rewrite{std::move(head), past};
  }
  if (IsContextDependent(t, from, t.size())) return std::nullopt;
  // Anything about "you" or the task at hand (the error, the docs, this option) is about this
  // conversation, not about the user.
  static const WordSet kConversation = Words(
      "you your yours yourself u error errors bug bugs warning warnings exception traceback "
      "output snippet script docs documentation prompt answer answers response reply message "
      "option options example article tests config list");
  for (size_t k = from; k < t.size(); ++k) {
    if (kConversation.count(t[k].lower) > 0) return std::nullopt;
  }
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

// A clause starting with "I" (t[0]).
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

// A clause starting with "my" (t[0]).
std::optional<Rewrite> RewriteMy(const std::vector<Tok>& t) {
  static const WordSet kSmallTalk = Words(
      "bad pleasure god goodness question point guess mistake answer apologies day week weekend "
      "morning evening gosh code computer screen internet thoughts concern problem issue");
  if (t.size() < 3) return std::nullopt;
  const bool favorite = t[1].lower == "favorite" || t[1].lower == "favourite";
  size_t verb = 0;
  for (size_t k = 2; k < t.size() && k <= 5; ++k) {
    const std::string& w = t[k].lower;
    // After "my favorite <thing>" only "is" / "are" is the verb ("my favorite drinks are ...").
    const bool is_verb = favorite ? (w == "is" || w == "are") : IsVerbLike(w, t[k - 1].lower);
    if (is_verb && t[k - 1].trail.empty()) {
      verb = k;
      break;
    }
    if (!t[k - 1].trail.empty()) break;
  }
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
  if (w.empty()) return p;
  size_t i = 0;
  if (w[0] == "user") {
    p.subject = "user";
    i = 1;
  } else if (w[0] == "user's") {
    p.subject = "user's";
    const bool favorite = w.size() > 1 && w[1] == "favorite";
    for (i = 1; i < w.size() && i <= 6; ++i) {
      if (favorite ? (w[i] == "is" || w[i] == "are") : IsVerbLike(w[i], w[i - 1])) break;
      p.subject += " " + std::string(w[i]);
    }
    if (i >= w.size() || i > 6) return p;
  } else {
    return p;
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

// =============================================================================================
namespace rule_extract {

std::vector<std::string> SplitSentences(std::string_view input) {
  static const WordSet kTitles = Words("dr mr mrs ms prof st sr jr mt");
  static const WordSet kAbbreviations =
      Words("e.g i.e etc vs approx incl cf al esp min max no fig ca");
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    std::string_view t = TrimAsciiSpace(current);
    if (!t.empty()) out.emplace_back(t);
    current.clear();
  };
  const std::string text = AsciiQuotes(input);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      flush();
      continue;
    }
    current += c;
    if (c != '.' && c != '!' && c != '?') continue;
    // Take the whole run of terminal punctuation and closing quotes / brackets.
    size_t j = i + 1;
    while (j < text.size() && (text[j] == '.' || text[j] == '!' || text[j] == '?'))
      current += text[j++];
    while (j < text.size() && (text[j] == '"' || text[j] == '\'' || text[j] == ')'))
      current += text[j++];
    i = j - 1;
    if (j < text.size() && !IsAsciiSpace(text[j])) continue;  // "3.5", "e.g.x", "example.com"
    if (c == '.') {
      // The word before the dot.
      size_t end = current.size() - 1;
      while (end > 0 && (current[end] == '.' || current[end] == '"' || current[end] == ')')) --end;
      size_t start = end + 1;
      while (start > 0 && !IsAsciiSpace(current[start - 1])) --start;
      const std::string word = Lower(std::string_view(current).substr(start, end + 1 - start));
      const std::string_view w = TrimAsciiSpace(word);
      // Next word's first character.
      size_t k = j;
      while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
      const bool next_lower =
          k < text.size() &&
          (std::islower(static_cast<unsigned char>(text[k])) || IsDigit(text[k]));
      const bool at_line_start = TrimAsciiSpace(std::string_view(current).substr(0, start)).empty();
      if (kTitles.count(w) > 0) continue;
      if (kAbbreviations.count(w) > 0 && next_lower) continue;
      if (w.size() == 1 && std::isalpha(static_cast<unsigned char>(w[0])) &&
          IsUpper(current[start])) {
        continue;  // an initial: "J. R. Tolkien"
      }
      if (at_line_start && AllDigits(w) && w.size() <= 3) continue;  // "1. Buy milk"
    }
    flush();
  }
  flush();
  return out;
}

std::string NormalizeForComparison(std::string_view input) {
  static const WordSet kIsContractions = Words("it he she that what there who where here how when");
  static const std::array<std::pair<std::string_view, std::string_view>, 7> kSuffixes = {
      {{"n't", "not"},
       {"'m", "am"},
       {"'re", "are"},
       {"'ve", "have"},
       {"'ll", "will"},
       {"'d", "would"},
       {"'s", "is"}}};
  std::string out;
  auto emit = [&out](std::string_view w) {
    if (w.empty() || w == "a" || w == "an" || w == "the") return;
    if (!out.empty()) out += ' ';
    out += w;
  };
  // Contractions expand: "can't" -> "can not", "it's" -> "it is" (but "user's" stays).
  auto expand = [&](const std::string& w) {
    if (w == "can't" || w == "cannot") return emit("can"), emit("not");
    if (w == "won't") return emit("will"), emit("not");
    if (w == "let's") return emit("let"), emit("us");
    for (const auto& [suffix, word] : kSuffixes) {
      const std::string_view stem = std::string_view(w).substr(0, w.size() - suffix.size());
      if (w.size() > suffix.size() && EndsWith(w, suffix) &&
          (suffix != "'s" || kIsContractions.count(stem) > 0)) {
        return emit(stem), emit(word);
      }
    }
    emit(w);
  };
  const std::string text = Lower(AsciiQuotes(input));
  for (std::string_view raw : SplitWords(text)) {
    // Keep word characters; keep '-', '\'', ':' and a decimal point only between them.
    std::string w;
    for (size_t i = 0; i < raw.size(); ++i) {
      const char c = raw[i];
      if (IsWordChar(c)) {
        w += c;
      } else if ((c == '-' || c == '\'' || c == '.' || c == ':') && i > 0 && i + 1 < raw.size() &&
                 IsWordChar(raw[i - 1]) && IsWordChar(raw[i + 1]) &&
                 (c != '.' || (IsDigit(raw[i - 1]) && IsDigit(raw[i + 1])))) {
        w += c;
      } else {
        expand(w);
        w.clear();
      }
    }
    expand(w);
  }
  return out;
}

std::string ResolveRelativeDates(std::string_view text, int64_t time_us, bool past) {
  const std::vector<std::string_view> raw = SplitWords(text);
  std::vector<std::string> out;
  if (time_us <= 0) {
    for (std::string_view w : raw) out.emplace_back(w);
    return Join(out);
  }
  std::vector<Word> w;
  for (std::string_view r : raw) w.push_back(SplitPunct(r));
  const int64_t today = (time_us >= 0 ? time_us : time_us - 86'399'999'999) / 86'400'000'000;
  const Civil now = CivilFromDays(today);
  const int wd = Weekday(today);
  auto lw = [&](size_t i) -> std::string_view {
    return i < w.size() ? std::string_view(w[i].lower) : std::string_view();
  };
  // True when words i..i+n-1 are separated only by spaces (no "," or "." between them).
  auto joined = [&](size_t i, size_t n) {
    if (i + n > w.size()) return false;
    for (size_t k = i; k + 1 < i + n; ++k) {
      if (!w[k].trail.empty() || !w[k + 1].lead.empty()) return false;
    }
    return true;
  };
  auto weekday_date = [&](int target, int direction) -> int64_t {
    // direction -1: most recent strictly before today, +1: first strictly after, 0: this week.
    if (direction < 0) return today - ((wd - target + 6) % 7 + 1);
    if (direction > 0) return today + ((target - wd + 6) % 7 + 1);
    return today - wd + target;
  };
  // `k` days / weeks / months / years from today.
  auto shift = [&](std::string_view unit, int64_t k) -> std::string {
    if (unit == "day") return "on " + FormatDay(today + k);
    if (unit == "week") return WeekOf(today + 7 * k);
    if (unit == "month") return "in " + ShiftMonth(now.y, static_cast<int>(now.m), k);
    return "in " + std::to_string(now.y + k);
  };
  for (size_t i = 0; i < w.size();) {
    std::string rep;
    size_t n = 0;
    const std::string_view a = lw(i), b = lw(i + 1), c = lw(i + 2);
    if (a == "yesterday") {
      rep = "on " + FormatDay(today - 1), n = 1;
    } else if (a == "today" || a == "tonight") {
      rep = "on " + FormatDay(today), n = 1;
    } else if (a == "tomorrow") {
      rep = "on " + FormatDay(today + 1), n = 1;
    } else if (a == "last" && b == "night" && joined(i, 2)) {
      rep = "on " + FormatDay(today - 1), n = 2;
    } else if (a == "this" && (b == "morning" || b == "afternoon" || b == "evening") &&
               joined(i, 2)) {
      rep = "on " + FormatDay(today), n = 2;
    } else if ((a == "last" || a == "next" || a == "this") && !Unit(b).empty() && b.back() != 's' &&
               joined(i, 2)) {
      // "last day" / "next day" are not dates.
      if (Unit(b) != "day") rep = shift(Unit(b), a == "last" ? -1 : a == "next" ? 1 : 0), n = 2;
    } else if ((a == "last" || a == "next" || a == "this") && b == "weekend" && joined(i, 2)) {
      const int dir = a == "last" ? -1 : a == "next" ? 1 : 0;
      rep = "on the weekend of " + FormatDay(today - wd + 5 + 7 * dir), n = 2;
    } else if ((a == "last" || a == "next" || a == "this") && WeekdayIndex(b) >= 0 &&
               joined(i, 2)) {
      const int dir = a == "last" ? -1 : a == "next" ? 1 : 0;
      int64_t d = weekday_date(WeekdayIndex(b), dir);
      if (dir == 0 && past && d > today) d -= 7;
      if (dir == 0 && !past && d < today) d += 7;
      rep = "on " + FormatDay(d), n = 2;
    } else if (SmallNumber(a) && !Unit(b).empty() && c == "ago" && joined(i, 3) && a != "an" &&
               (a != "a" || b.back() != 's')) {
      rep = shift(Unit(b), -*SmallNumber(a)), n = 3;
    } else if (a == "in" && SmallNumber(b) && !Unit(c).empty() && joined(i, 3)) {
      rep = shift(Unit(c), *SmallNumber(b)), n = 3;
    } else if (WeekdayIndex(a) >= 0 && !(i > 0 && (lw(i - 1) == "every" || lw(i - 1) == "each"))) {
      rep = "on " + FormatDay(weekday_date(WeekdayIndex(a), past ? -1 : 1)), n = 1;
    } else if (const int m = MonthIndex(w[i].core); m > 0) {
      n = 1;
      const bool year_follows = AllDigits(b) && b.size() == 4;
      std::string_view day = b;
      while (!day.empty() && !IsDigit(day.back())) day.remove_suffix(1);
      const bool day_follows =
          AllDigits(day) && day.size() <= 2 && joined(i, 2) &&
          (day.size() == b.size() || b.substr(day.size()) == "st" || b.substr(day.size()) == "nd" ||
           b.substr(day.size()) == "rd" || b.substr(day.size()) == "th");
      const std::string_view prev = i > 0 ? lw(i - 1) : std::string_view();
      const int dir = prev == "last" ? -1 : prev == "next" ? 1 : past ? -1 : 1;
      if (year_follows || (day_follows && AllDigits(c) && c.size() == 4)) {
        n = 0;  // already absolute
      } else if (day_follows) {
        const int dd = std::stoi(std::string(day));
        int64_t y = now.y;
        const bool after = static_cast<unsigned>(m) > now.m ||
                           (static_cast<unsigned>(m) == now.m && static_cast<unsigned>(dd) > now.d);
        const bool before =
            static_cast<unsigned>(m) < now.m ||
            (static_cast<unsigned>(m) == now.m && static_cast<unsigned>(dd) < now.d);
        if (dir < 0 && after) --y;
        if (dir > 0 && before) ++y;
        rep = "on " + FormatDay(DaysFromCivil(y, m, dd)), n = 2;
      } else {
        int64_t y = now.y;
        if (dir < 0 && static_cast<unsigned>(m) > now.m) --y;
        if (dir > 0 && static_cast<unsigned>(m) < now.m) ++y;
        rep = "in " + FormatMonth(y, m);
      }
      // "last March" / "next March": the qualifier is part of the expression.
      if (n > 0 && (prev == "last" || prev == "next") && !out.empty()) out.pop_back();
    }
    if (n == 0) {
      out.push_back(w[i].lead + w[i].core + w[i].trail);
      ++i;
      continue;
    }
    // A preposition already in the text replaces ours: "since yesterday" -> "since 2024-05-07".
    static const WordSet kPrepositions =
        Words("on in since until till by from before after during of around for as to through");
    if (!out.empty() && w[i].lead.empty()) {
      const std::string prev = Lower(SplitPunct(out.back()).core);
      if (kPrepositions.count(prev) > 0 && SplitPunct(out.back()).trail.empty()) {
        const size_t space = rep.find(' ');
        const std::string_view first = std::string_view(rep).substr(0, space);
        if (first == "on" || first == "in") {
          rep = rep.substr(space + 1);
        }
      }
    }
    out.push_back(w[i].lead + rep + w[i + n - 1].trail);
    i += n;
  }
  return Join(out);
}

}  // namespace rule_extract

// =============================================================================================

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

Result<std::vector<MemoryDecision>> RuleBasedExtractor::Reconcile(
    const std::vector<FactCandidates>& facts) const {
  std::vector<MemoryDecision> decisions;
  std::vector<std::pair<std::string, Parsed>> earlier;  // facts of this call already decided
  for (const FactCandidates& fc : facts) {
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
      // Near duplicates only when the parts cannot tell: a parsed pair that differs is different.
      if (f.ok && c.ok && f.subject == c.subject && f.pred == c.pred) continue;
      if (!f.slot.empty() && !c.slot.empty()) continue;  // different single-valued attributes
      if (f.negative != c.negative || f.numbers != c.numbers) continue;
      d = {MemoryAction::kNone, m.id, ""}, decided = true;
    }
    if (!decided) d = {MemoryAction::kAdd, "", fact};
    decisions.push_back(std::move(d));
  }
  return decisions;
}

}  // namespace engram
