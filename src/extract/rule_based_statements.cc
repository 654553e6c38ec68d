// Statements: what a speaker's sentence says about themselves when no fact pattern reads it.
//
// The patterns (rule_based_patterns.cc) write canonical facts the reconciler can compare ("User
// lives in Paris"), and know a few dozen predicates. Most of what people tell each other is
// outside them ("I went to a support group yesterday and it was powerful"); dropping it loses the
// memory. A sentence about the speaker (a first-person word) that carries at least three content
// words is kept, rewritten in the third person: "I" / "me" / "my" become the speaker, the verb
// after "I" agrees ("I love" -> "loves", "I'm" -> "is", "I have" -> "has"), "we" / "us" / "our"
// become the speaker "and others" ("our" the speaker's). Reactions, thanks, questions and sentences
// about the listener carry too few content words of their own, or start with "you", and are
// dropped.
#include <string>
#include <string_view>
#include <vector>

#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {

namespace {

// Words that say nothing on their own: function words, auxiliaries, pronouns, intensifiers and
// the vocabulary of reactions ("so", "really", "glad", "awesome"). A sentence needs three content
// words besides them to be kept.
const WordSet& NonContentWords() {
  static const WordSet s = Words(
      "a an the and or but so if then than that this these those it its it's is am are was were "
      "be been being do does did doing have has had having will would can could should shall may "
      "might must not no yes i me my mine myself we us our ours ourselves you your yours yourself "
      "he him his she her hers they them their theirs there here what which who whom whose when "
      "where why how all any some each every both either neither one ones to of in on at by for "
      "with about from into onto up down out over under again also just only really very too "
      "much many more most such same other own well still even ever never always quite pretty "
      "lot lots bit thing things something anything everything nothing stuff way kind sort "
      "as like get got gets getting go going gone let know think thought feel felt "
      "glad happy great good nice cool awesome amazing wonderful fantastic lovely sweet proud "
      "sure thanks thank wow oh hey hi hello yeah yep okay ok sounds sound totally definitely "
      "absolutely super soon now today tomorrow yesterday tonight");
  return s;
}

bool IsModal(std::string_view w) {
  static const WordSet s = Words("will would can could should shall may might must");
  return s.count(w) > 0;
}

bool IsAlphaWord(std::string_view w) {
  if (w.empty()) return false;
  for (char c : w) {
    if (!std::isalpha(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// A sentence's first word that is not a name, so that "Caroline said the stories …" reads on
// lower case: a function word, or a verb or adverb form ("Making a difference is …").
bool StartsLowerCase(std::string_view lower) {
  return NonContentWords().count(lower) > 0 || ContextWords().count(lower) > 0 ||
         (lower.size() > 4 &&
          (EndsWith(lower, "ing") || EndsWith(lower, "ed") || EndsWith(lower, "ly")));
}

bool IsFirstPerson(std::string_view lower) {
  static const WordSet s = Words("i me my mine myself we us our ours ourselves");
  return s.count(lower) > 0;
}

}  // namespace

bool IsAdverbBeforeVerb(std::string_view lower) {
  static const WordSet s = Words("also really just still never always too");
  // "-ly" words ("personally", "finally"), but not the verbs "reply", "apply", "rely".
  const bool ly = lower.size() > 4 && EndsWith(lower, "ly") && !EndsWith(lower, "ply");
  return DroppedAdverbs().count(lower) > 0 || KeptAdverbs().count(lower) > 0 ||
         s.count(lower) > 0 || ly;
}

std::string AgreeWithThirdPerson(const Tok& verb) {
  const std::string& v = verb.lower;
  if (v == "am") return "is";
  if (v == "have") return "has";
  if (v == "do") return "does";
  if (v == "were") return "was";
  // Not a verb after all: "I and my wife", "I, too", "I at least".
  static const WordSet kNotVerbs =
      Words("and or but nor so the a an to of in on at for with as by from than then");
  if (kNotVerbs.count(v) > 0) return verb.text;
  if (v == "was" || v == "did" || v == "had" || IsModal(v) || !IsAlphaWord(v)) return verb.text;
  if (IrregularPast().count(v) > 0 || NonFactPast().count(v) > 0) return verb.text;
  if (v.size() > 3 && ((EndsWith(v, "ed") && !EndsWith(v, "eed")) || EndsWith(v, "ing"))) {
    return verb.text;
  }
  if (v.size() > 2 && v.back() == 's' && !EndsWith(v, "ss")) return verb.text;  // "was", "goes"
  return ThirdPerson(v);
}

namespace {

// Chat drops the subject: "Took a short trip to Rome last week", "Been busy volunteering". A
// sentence that starts with a past form (or "been") is the speaker's: "I" is put back ("I have"
// before "been").
std::vector<Tok> WithElidedSubject(const std::vector<Tok>& sentence, size_t from) {
  size_t at = from;  // past adverbs: "Just started doing aerial yoga"
  while (at < sentence.size() && IsAdverbBeforeVerb(sentence[at].lower)) ++at;
  if (at >= sentence.size()) return sentence;
  const std::string& w = sentence[at].lower;
  const bool been = w == "been";
  const bool past = IrregularPast().count(w) > 0 || w == "had" ||
                    (w.size() > 3 && EndsWith(w, "ed") && !EndsWith(w, "eed"));
  if (!been && !past) return sentence;
  std::vector<Tok> out(sentence.begin(), sentence.begin() + static_cast<std::ptrdiff_t>(from));
  out.push_back(Tok{"I", "i", ""});
  if (been) out.push_back(Tok{"have", "have", ""});
  const size_t moved = out.size();
  out.insert(out.end(), sentence.begin() + static_cast<std::ptrdiff_t>(from), sentence.end());
  out[moved].text = out[moved].lower;  // no longer the sentence's first word
  return out;
}

// A reference to someone or something of the conversation used as the whole object ("I met her
// at the conference", "I love it"), not as a determiner ("I made this bowl").
bool IsReferenceObject(const std::vector<Tok>& t, size_t k) {
  static const WordSet kReferences = Words("it him her them this that these those one");
  static const WordSet kAfterObject = Words(
      "at in on with for to from by about after before during yesterday today tonight last "
      "again too so very a lot because and but or when while since until");
  if (k >= t.size() || kReferences.count(t[k].lower) == 0) return false;
  if (k + 1 >= t.size() || !t[k].trail.empty()) return true;
  return kAfterObject.count(t[k + 1].lower) > 0;
}

// The listener's name where it only addresses them: "Caroline, that's great", "Thanks,
// Caroline", "I agree, Mel" (between punctuation or the sentence's ends).
std::vector<Tok> WithoutVocatives(const std::vector<Tok>& t, std::string_view listener) {
  if (listener.empty()) return t;
  const std::string name = Lower(listener.substr(0, listener.find(' ')));
  std::vector<Tok> out;
  out.reserve(t.size());
  for (size_t k = 0; k < t.size(); ++k) {
    const bool opens = k == 0 || !t[k - 1].trail.empty() || Fillers().count(t[k - 1].lower) > 0;
    const bool closes = k + 1 == t.size() || !t[k].trail.empty();
    if (t[k].lower == name && opens && closes) {
      // The punctuation that closed the word before the name closes the clause still.
      if (!out.empty() && out.back().trail.empty()) out.back().trail = t[k].trail;
      continue;
    }
    out.push_back(t[k]);
  }
  return out;
}

// First words of a reaction: "Glad it worked out", "Love the necklace", "Wishing you the best".
const WordSet& Reactions() {
  static const WordSet s = Words(
      "glad wow congrats congratulations bet wishing respect keep love loving cheers sorry hope "
      "hoping good great nice cool awesome amazing wonderful fantastic lovely sweet sounds looks "
      "can't cannot");
  return s;
}

}  // namespace

std::optional<Rewrite> RewriteStatement(const std::vector<Tok>& with_vocatives,
                                        std::string_view listener) {
  const std::vector<Tok> said = WithoutVocatives(with_vocatives, listener);
  size_t from = 0;
  while (from < said.size() && Fillers().count(said[from].lower) > 0) ++from;
  const std::vector<Tok> sentence = WithElidedSubject(said, from);
  const size_t n = sentence.size() - from;
  if (n < 4) return std::nullopt;
  const std::string& first = sentence[from].lower;
  // About the listener ("You did great").
  if (first == "you" || first == "your") return std::nullopt;
  size_t content = 0;
  bool about_speaker = false;
  bool past = false;
  bool points_back = false;  // "it", "there", "her", … after the first word
  for (size_t k = from; k < sentence.size(); ++k) {
    const std::string& w = sentence[k].lower;
    about_speaker = about_speaker || IsFirstPerson(w);
    past = past || IrregularPast().count(w) > 0 ||
           (w.size() > 3 && EndsWith(w, "ed") && !EndsWith(w, "eed"));
    if (w.size() >= 3 && NonContentWords().count(w) == 0 && IsWordChar(w[0])) ++content;
    const bool names_listener = !listener.empty() && (w == "you" || w == "yours");
    points_back = points_back || (k > from && ContextWords().count(w) > 0 && !names_listener);
  }
  // What someone says of themselves needs less to be worth keeping ("We've got a pup and a kitty")
  // than what they say of anything else, unless a word of it points into the conversation ("My
  // sister lives there").
  if (content < 2 || (content < 3 && (!about_speaker || points_back))) return std::nullopt;
  if (listener.empty() ? IsAboutTheConversation(sentence, from) : IsAboutTheTask(sentence, from)) {
    return std::nullopt;
  }
  // What the speaker says about something else, or about what was just said ("The stories were
  // so inspiring", "It made me reflect on how far I have come"), is reported as theirs: the
  // speaker's words, attributed ("Caroline said the stories were so inspiring").
  const bool reported = !about_speaker || ContextWords().count(first) > 0;
  // A reaction to what the listener said or showed is theirs to remember, not the speaker's.
  if (reported && Reactions().count(first) > 0) return std::nullopt;
  // The verb after a leading "I" (past its adverbs) and what follows it.
  size_t verb = from + 1;
  while (verb < sentence.size() && IsAdverbBeforeVerb(sentence[verb].lower)) ++verb;
  if (!reported && first == "i" && verb + 1 < sentence.size()) {
    const std::string& v = sentence[verb].lower;
    const std::string& next = sentence[verb + 1].lower;
    if (IsReferenceObject(sentence, verb + 1)) return std::nullopt;
    // "I need to …", "I have to …", "I'm going to the store": an errand of the moment.
    if ((v == "need" || v == "have") && next == "to") return std::nullopt;
    if (v == "am" && next == "going" && verb + 2 < sentence.size() &&
        sentence[verb + 2].lower == "to") {
      return std::nullopt;
    }
  }

  std::string out;
  bool agree = false;  // the next verb follows "I"
  for (size_t k = from; k < sentence.size(); ++k) {
    const Tok& t = sentence[k];
    const std::string& l = t.lower;
    std::string word = t.text;
    if (l == "i") {
      word = std::string(kSpeakerMark);
      agree = true;
    } else if (l == "me") {
      word = std::string(kSpeakerMark);
    } else if (l == "myself" || l == "ourselves") {
      word = "themselves";
    } else if (l == "my" || l == "mine") {
      word = std::string(kSpeakerMark) + "'s";
    } else if (l == "we" || l == "us") {
      word = std::string(kSpeakerMark) + " and others";
    } else if (l == "our" || l == "ours") {
      word = std::string(kSpeakerMark) + "'s";  // shared, and the speaker's
    } else if (l == "you" || l == "u" || l == "yourself") {
      word = std::string(listener);
      agree = l != "yourself";
    } else if (l == "your" || l == "yours") {
      word = std::string(listener) + "'s";
    } else if (agree && l == "are") {
      word = "is";
      agree = false;
    } else if (agree && !IsAdverbBeforeVerb(l)) {
      word = AgreeWithThirdPerson(t);
      agree = false;
    }
    if (k == from && reported && word == t.text && StartsLowerCase(l)) word = l;
    if (!out.empty()) out += ' ';
    out += word;
    if (k + 1 < sentence.size()) {
      out += t.trail;
    } else {
      // The sentence's end drops its full stop but closes what it opened: "(…)", "[…]", "\"…\"".
      for (char c : t.trail) {
        if (c == ')' || c == ']' || c == '"') out += c;
      }
    }
  }
  // "[shares a photo: …]": an annotation of what the speaker did, not words they said.
  const bool annotation = !sentence[from].text.empty() && sentence[from].text[0] == '[';
  if (reported) out = std::string(kSpeakerMark) + (annotation ? " " : " said ") + out;
  return Rewrite{std::move(out), past};
}

}  // namespace rule_extract_internal
}  // namespace engram
