// Speakers for the rule-based extractor: who said a message (the message's name, or a
// "Caroline: ..." prefix of its content) and how facts name them ("User", "Caroline").
#include <string>
#include <string_view>
#include <vector>

#include "common/ascii.h"
#include "extract/rule_based_extractor.h"
#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {
namespace {

// Capitalised words that open a line as a label rather than a speaker ("Note: I moved ...").
const WordSet& Labels() {
  static const WordSet s = Words(
      "note notes update edit ps question questions answer reminder important context background "
      "summary todo warning error example tip fyi info correction addendum also btw disclaimer "
      "hint problem issue goal task request fact story quote subject title re fwd date time "
      "location topic step result reason input output source link translation meaning definition "
      "bonus spoiler caution attention alert status day week morning evening tonight today "
      "yesterday tomorrow dear thanks sorry well so anyway yes no ok okay hi hello hey wow edit "
      "lol haha update idea plan first second third finally next then");
  return s;
}

// Names that stand for the user or the assistant themselves in a transcript.
const WordSet& UserLabels() {
  static const WordSet s = Words("user me human customer client");
  return s;
}

const WordSet& AssistantLabels() {
  static const WordSet s = Words("assistant ai bot system agent chatbot model gpt claude");
  return s;
}

}  // namespace

bool IsNameWord(std::string_view w) {
  if (w.empty() || w.size() > 24) return false;
  const unsigned char first = static_cast<unsigned char>(w[0]);
  if (!IsUpper(w[0]) && first < 0x80) return false;
  bool lower = false;
  for (char c : w) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80 || (c >= 'a' && c <= 'z')) {
      lower = true;
    } else if (!IsUpper(c) && c != '-' && c != '\'') {
      return false;
    }
  }
  // "PS", "FYI", "TODO": all capitals are labels or acronyms, not names.
  return lower || w.size() == 1;
}

Speaker ResolveSpeaker(std::string_view name, std::string_view content) {
  Speaker out;
  out.content = std::string(content);
  // The message's own name: "caroline_smith" -> "Caroline Smith".
  std::string field;
  for (char c : TrimAsciiSpace(name)) field += c == '_' ? ' ' : c;
  const std::vector<std::string_view> parts = SplitWords(field);
  bool named = !parts.empty() && parts.size() <= 3;
  std::string display;
  for (std::string_view p : parts) {
    std::string word(p);
    if (word[0] >= 'a' && word[0] <= 'z') word[0] = static_cast<char>(word[0] - 'a' + 'A');
    named = named && IsNameWord(word);
    display += (display.empty() ? "" : " ") + word;
  }
  const std::string lower_name = Lower(display);
  if (named && UserLabels().count(lower_name) == 0 && AssistantLabels().count(lower_name) == 0) {
    out.name = display;
  }
  // "Caroline: I adopted a dog": a capitalised name of one to three words, a colon and a space at
  // the very start of the content.
  const size_t colon = content.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= content.size() ||
      !IsAsciiSpace(content[colon + 1])) {
    return out;
  }
  const std::string_view label = content.substr(0, colon);
  if (label.find_first_of("\t\r\n") != std::string_view::npos) return out;
  const std::vector<std::string_view> words = SplitWords(label);
  if (words.empty() || words.size() > 3 || label.front() == ' ') return out;
  for (std::string_view w : words) {
    if (!IsNameWord(w) || MonthIndex(w) > 0 || WeekdayIndex(Lower(w)) >= 0) return out;
  }
  const std::string lower_label = Lower(label);
  if (words.size() == 1 && Labels().count(lower_label) > 0) return out;
  const bool user = UserLabels().count(lower_label) > 0;
  out.assistant = AssistantLabels().count(lower_label) > 0;
  // A message with its own name keeps it; a different prefix is then part of what was said.
  if (!out.name.empty() && !user && lower_label != lower_name) return out;
  if (out.name.empty() && !user && !out.assistant) out.name = std::string(label);
  out.content = std::string(TrimAsciiSpace(content.substr(colon + 1)));
  return out;
}

}  // namespace rule_extract_internal

bool rule_extract::NamesItsSpeaker(std::string_view content) {
  // ResolveSpeaker takes the prefix off exactly when it names the speaker.
  return rule_extract_internal::ResolveSpeaker({}, content).content.size() != content.size();
}

namespace rule_extract_internal {

std::string NameSpeaker(std::string_view fact, std::string_view speaker) {
  std::string out;
  if (fact.substr(0, 4) == "User" && (fact.size() == 4 || fact[4] == ' ' || fact[4] == '\'')) {
    out = std::string(speaker) + std::string(fact.substr(4));
  } else {
    out = std::string(fact);
  }
  for (size_t at = out.find(kSpeakerMark); at != std::string::npos;
       at = out.find(kSpeakerMark, at + speaker.size())) {
    out.replace(at, kSpeakerMark.size(), speaker);
  }
  return out;
}

}  // namespace rule_extract_internal
}  // namespace engram
