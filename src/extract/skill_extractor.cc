#include "extract/skill_extractor.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "common/ascii.h"

namespace engram {

namespace {

bool StartsWithWord(std::string_view lower, std::string_view word) {
  if (lower.substr(0, word.size()) != word) return false;
  return lower.size() == word.size() ||
         !std::isalnum(static_cast<unsigned char>(lower[word.size()]));
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t from = 0;
  while (from <= text.size()) {
    size_t nl = text.find('\n', from);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  return out;
}

// Sentences: split after . ! ? followed by a blank, and at line breaks.
std::vector<std::string_view> Sentences(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool end = i == text.size() || text[i] == '\n' ||
                     ((text[i] == '.' || text[i] == '!' || text[i] == '?') &&
                      (i + 1 == text.size() || IsAsciiSpace(text[i + 1])));
    if (!end) continue;
    const size_t stop = (i < text.size() && text[i] != '\n') ? i + 1 : i;
    std::string_view s = TrimAsciiSpace(text.substr(start, stop - start));
    if (!s.empty()) out.push_back(s);
    start = i + 1;
  }
  return out;
}

std::string Capitalised(std::string_view s) {
  std::string out(TrimAsciiSpace(s));
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

// "12. text", "3) text", "Step 4: text" -> "text"; nullopt otherwise.
std::optional<std::string_view> NumberedItem(std::string_view line) {
  std::string_view s = TrimAsciiSpace(line);
  std::string lower = LowerAscii(s.substr(0, 5));
  if (lower.rfind("step", 0) == 0) {
    size_t i = 4;
    while (i < s.size() && s[i] == ' ') ++i;
    size_t digits = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i > digits && i < s.size() && (s[i] == ':' || s[i] == '.' || s[i] == ')')) {
      std::string_view rest = TrimAsciiSpace(s.substr(i + 1));
      if (!rest.empty()) return rest;
    }
    return std::nullopt;
  }
  size_t i = 0;
  while (i < s.size() && i < 3 && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i >= s.size() || (s[i] != '.' && s[i] != ')')) return std::nullopt;
  if (i + 1 < s.size() && !IsAsciiSpace(s[i + 1])) return std::nullopt;  // "1.5 GB"
  std::string_view rest = TrimAsciiSpace(s.substr(i + 1));
  if (rest.empty()) return std::nullopt;
  return rest;
}

std::optional<std::string_view> BulletItem(std::string_view line) {
  std::string_view s = TrimAsciiSpace(line);
  for (std::string_view bullet : {"- ", "* ", "\xE2\x80\xA2 "}) {  // "•"
    if (s.substr(0, bullet.size()) == bullet) {
      std::string_view rest = TrimAsciiSpace(s.substr(bullet.size()));
      if (!rest.empty()) return rest;
    }
  }
  return std::nullopt;
}

// Strips Markdown emphasis around a step ("**Build** the image" keeps its words).
std::string CleanStep(std::string_view s) {
  std::string out;
  for (char c : TrimAsciiSpace(s)) {
    if (c != '*') out += c;
  }
  return Capitalised(out);
}

// The ordered steps of an assistant message.
std::vector<std::string> StepsOf(std::string_view text) {
  std::vector<std::string> numbered, bullets;
  bool in_code = false;
  std::string code;
  auto attach_code = [&](std::vector<std::string>& list) {
    if (!list.empty() && !TrimAsciiSpace(code).empty())
      list.back() += "\n\n   ```\n   " + std::string(TrimAsciiSpace(code)) + "\n   ```";
  };
  for (std::string_view line : Lines(text)) {
    if (TrimAsciiSpace(line).substr(0, 3) == "```") {
      if (in_code) {
        attach_code(!numbered.empty() ? numbered : bullets);
        code.clear();
      }
      in_code = !in_code;
      continue;
    }
    if (in_code) {
      if (!code.empty()) code += "\n   ";
      code += TrimAsciiSpace(line);
      continue;
    }
    if (auto item = NumberedItem(line)) {
      numbered.push_back(CleanStep(*item));
    } else if (auto b = BulletItem(line)) {
      bullets.push_back(CleanStep(*b));
    }
  }
  if (numbered.size() >= 2) return numbered;
  if (bullets.size() >= 2) return bullets;
  // Prose: "First, ... Then, ... Finally, ..."
  static const char* kMarkers[] = {"first",   "then",   "next",  "after that", "afterwards",
                                   "finally", "second", "third", "lastly",     "once that is done"};
  std::vector<std::string> prose;
  for (std::string_view sentence : Sentences(text)) {
    std::string lower = LowerAscii(sentence);
    for (const char* m : kMarkers) {
      if (!StartsWithWord(lower, m)) continue;
      std::string_view rest = sentence.substr(std::string_view(m).size());
      while (!rest.empty() && (rest.front() == ',' || IsAsciiSpace(rest.front())))
        rest.remove_prefix(1);
      if (!rest.empty()) prose.push_back(CleanStep(rest));
      break;
    }
  }
  if (prose.size() >= 2) return prose;
  return numbered.size() >= bullets.size() ? numbered : bullets;
}

// Verbs that open an instruction ("Standardize the message …", "Unify login failures …"): a
// closed list, since a sentence's first word alone cannot tell a verb from a name.
bool IsInstructionVerb(std::string_view lower_word) {
  static const std::set<std::string, std::less<>> kVerbs = {
      "add",      "adjust",   "align",     "allow",       "apply",       "archive",   "avoid",
      "back",     "build",    "call",      "change",      "check",       "clean",     "clear",
      "click",    "close",    "commit",    "compile",     "configure",   "connect",   "consolidate",
      "convert",  "copy",     "create",    "define",      "delete",      "deploy",    "disable",
      "document", "download", "drop",      "edit",        "enable",      "ensure",    "export",
      "extract",  "fix",      "format",    "generate",    "group",       "import",    "include",
      "install",  "keep",     "limit",     "log",         "make",        "mark",      "merge",
      "migrate",  "move",     "normalize", "normalise",   "open",        "pin",       "press",
      "prefer",   "push",     "put",       "record",      "reduce",      "refactor",  "reject",
      "remove",   "rename",   "reorder",   "replace",     "require",     "reset",     "restart",
      "restore",  "retry",    "return",    "review",      "rewrite",     "rotate",    "run",
      "save",     "schedule", "select",    "send",        "separate",    "set",       "share",
      "show",     "sort",     "split",     "standardize", "standardise", "start",     "stop",
      "store",    "switch",   "sync",      "tag",         "test",        "translate", "trim",
      "turn",     "unify",    "uninstall", "unplug",      "update",      "upgrade",   "upload",
      "use",      "validate", "verify",    "wrap",        "write"};
  return kVerbs.find(lower_word) != kVerbs.end();
}

// Whether `sentence` opens with an instruction verb ("Please" and "You should" before it allowed).
bool IsInstruction(std::string_view sentence) {
  std::string lower = LowerAscii(TrimAsciiSpace(sentence));
  for (std::string_view lead : {"please ", "you should ", "you can "}) {
    if (lower.rfind(lead, 0) == 0) lower.erase(0, lead.size());
  }
  size_t end = 0;
  while (end < lower.size() && std::isalpha(static_cast<unsigned char>(lower[end]))) ++end;
  return end > 0 && IsInstructionVerb(std::string_view(lower).substr(0, end));
}

// A reply that is itself an instruction ("Standardize the login failure message to … across
// Android, iOS, and Web"): its instruction sentences, in order, when its first sentence is one.
std::vector<std::string> DirectiveSteps(std::string_view text) {
  std::vector<std::string> out;
  std::vector<std::string_view> sentences = Sentences(text);
  if (sentences.empty() || !IsInstruction(sentences.front())) return out;
  for (std::string_view s : sentences) {
    if (IsInstruction(s)) out.push_back(CleanStep(s));
  }
  return out;
}

// Request phrases stripped from the front of a goal sentence (lower-case, longest first).
constexpr const char* kRequestPrefixes[] = {"can you show me how to",
                                            "could you show me how to",
                                            "can you tell me how to",
                                            "could you tell me how to",
                                            "can you help me",
                                            "could you help me",
                                            "please help me",
                                            "what are the steps to",
                                            "what is the best way to",
                                            "what's the best way to",
                                            "how would i",
                                            "how should i",
                                            "how do i",
                                            "how can i",
                                            "how do we",
                                            "how can we",
                                            "how do you",
                                            "how to",
                                            "show me how to",
                                            "teach me how to",
                                            "explain how to",
                                            "help me",
                                            "i want to",
                                            "i need to",
                                            "i would like to",
                                            "i'd like to",
                                            "we need to",
                                            "we want to",
                                            "please",
                                            "can you",
                                            "could you",
                                            "let's",
                                            "lets"};

bool IsRequest(std::string_view sentence) {
  std::string lower = LowerAscii(sentence);
  if (!sentence.empty() && sentence.back() == '?') return true;
  for (const char* p : kRequestPrefixes) {
    if (lower.find(p) != std::string::npos) return true;
  }
  return false;
}

// The request sentence of a user message: its first request, else its first sentence.
std::string_view RequestSentence(std::string_view user_text) {
  std::vector<std::string_view> sentences = Sentences(user_text);
  if (sentences.empty()) return {};
  for (std::string_view s : sentences) {
    if (IsRequest(s)) return s;
  }
  return sentences.front();
}

// The goal phrase of a request: "How do I deploy the app?" -> "deploy the app".
std::string GoalOf(std::string_view user_text) {
  std::string goal(RequestSentence(user_text));
  for (bool again = true; again;) {
    again = false;
    std::string lower = LowerAscii(goal);
    for (const char* p : kRequestPrefixes) {
      size_t at = lower.find(p);
      if (at != std::string::npos && at <= 2 && StartsWithWord(lower.substr(at), p)) {
        goal = std::string(
            TrimAsciiSpace(std::string_view(goal).substr(at + std::string_view(p).size())));
        again = true;
        break;
      }
    }
  }
  while (!goal.empty() && (goal.back() == '?' || goal.back() == '.' || goal.back() == '!'))
    goal.pop_back();
  std::string_view g = TrimAsciiSpace(goal);
  for (std::string_view tail : {" please", ", please"}) {
    if (g.size() > tail.size() && LowerAscii(g.substr(g.size() - tail.size())) == tail) {
      g.remove_suffix(tail.size());
    }
  }
  std::string out(TrimAsciiSpace(g));
  if (!out.empty()) out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
  return out;
}

const std::set<std::string>& StopWords() {
  static const std::set<std::string> kWords = {
      "a",     "an",    "the", "to",   "of",   "and", "or",  "in",   "on",   "for",
      "with",  "my",    "our", "your", "it",   "is",  "are", "be",   "this", "that",
      "these", "those", "i",   "we",   "you",  "me",  "us",  "from", "into", "at",
      "by",    "as",    "so",  "up",   "some", "any", "all", "new",  "get",  "set"};
  return kWords;
}

std::vector<std::string> TagsOf(std::string_view goal) {
  std::vector<std::string> tags;
  std::string word;
  auto flush = [&] {
    if (word.size() >= 3 && !StopWords().count(word) &&
        std::find(tags.begin(), tags.end(), word) == tags.end() && tags.size() < 5) {
      tags.push_back(word);
    }
    word.clear();
  };
  for (char c : goal) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || u >= 0x80) {
      word += static_cast<char>(std::tolower(u));
    } else {
      flush();
    }
  }
  flush();
  return tags;
}

}  // namespace

std::string SkillSlug(std::string_view text, size_t max_bytes) {
  std::string out;
  bool dash = false;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || u >= 0x80) {
      if (dash && !out.empty()) out += '-';
      dash = false;
      out += static_cast<char>(std::tolower(u));
    } else {
      dash = true;
    }
  }
  if (out.size() > max_bytes) {
    size_t cut = out.rfind('-', max_bytes);
    out.resize(cut == std::string::npos || cut == 0 ? max_bytes : cut);
    // Never end inside a UTF-8 sequence.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    while (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
  }
  return out;
}

std::string RenderSkillDraft(const SkillDraft& d) {
  SkillFrontMatter f;
  f.name = d.name;
  f.description = d.description;
  f.tags = d.tags;
  f.triggers = d.triggers;
  std::string body = "\n# " + Capitalised(d.goal.empty() ? d.name : d.goal) + "\n\n";
  body += "## When to use\n\n" + d.description + "\n\n## Steps\n\n";
  for (size_t i = 0; i < d.steps.size(); ++i) {
    body += std::to_string(i + 1) + ". " + d.steps[i] + "\n";
  }
  return RenderSkillMd(f, body);
}

Result<std::vector<SkillDraft>> BuiltinSkillExtractor::Extract(
    const std::vector<ConversationMessage>& messages) const {
  struct Segment {
    std::string request;
    std::vector<std::string> steps;
    // The instruction sentences of the replies, for a goal that is itself an instruction.
    std::vector<std::string> directives;
  };
  std::vector<Segment> segments;
  for (const ConversationMessage& m : messages) {
    if (TrimAsciiSpace(m.content).empty()) continue;
    if (m.role == "user") {
      // After the first, only requests open a new goal: "thanks!" or added details do not.
      if (!segments.empty() && !IsRequest(m.content) && !IsInstruction(m.content)) continue;
      segments.push_back({m.content, {}, {}});
    } else if (m.role == "assistant" && !segments.empty()) {
      std::vector<std::string> steps = StepsOf(m.content);
      auto& s = segments.back().steps;
      s.insert(s.end(), steps.begin(), steps.end());
      std::vector<std::string> directives = DirectiveSteps(m.content);
      auto& d = segments.back().directives;
      d.insert(d.end(), directives.begin(), directives.end());
    }
  }
  std::vector<SkillDraft> out;
  std::set<std::string> names;
  for (Segment& seg : segments) {
    // A goal stated as an instruction ("Unify login failure message across platforms") answered
    // by instructions is a skill even with one step: the rule the conversation settled on.
    if (seg.steps.size() < min_steps_) {
      if (seg.directives.empty() || !IsInstruction(RequestSentence(seg.request))) continue;
      seg.steps = seg.directives;
    }
    SkillDraft d;
    d.goal = GoalOf(seg.request);
    if (d.goal.empty()) continue;
    d.name = SkillSlug(d.goal);
    if (d.name.empty() || !names.insert(d.name).second) continue;
    d.description = "How to " + d.goal + ". Use when asked to " + d.goal + ".";
    d.triggers.push_back(d.goal);
    std::string request(RequestSentence(seg.request));
    if (request.size() <= 200 && LowerAscii(request) != LowerAscii(d.goal))
      d.triggers.push_back(request);
    d.tags = TagsOf(d.goal);
    d.steps = seg.steps;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace engram
