// SkillExtractor: turns a conversation into skills, i.e. reusable procedures ("how to deploy the
// web app": a goal and the ordered steps that reach it), each written as a SKILL.md.
//
// Two implementations: BuiltinSkillExtractor (below; offline, the default) and LlmSkillExtractor
// (skill_llm_extractor.h). Both return SkillDrafts; RenderSkillDraft writes the SKILL.md, so
// every extracted skill has the same layout whatever found it.
//
// Thread-safety: implementations are safe to call concurrently. Privacy: they never log message
// text, and their error messages never quote it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "extract/memory_extractor.h"
#include "extract/skill_md.h"

namespace engram {

struct SkillDraft {
  std::string name;                   // kebab-case, e.g. "deploy-web-app-to-staging"
  std::string description;            // one or two sentences: what it does and when to use it
  std::string goal;                   // what the user wanted, e.g. "deploy the web app to staging"
  std::vector<std::string> triggers;  // phrases a user might say when the skill applies
  std::vector<std::string> tags;
  std::vector<std::string> steps;  // in order, at least one
};

// The SKILL.md of a draft: front matter (name, description, tags, triggers) and a body with the
// goal and the numbered steps.
std::string RenderSkillDraft(const SkillDraft& draft);

// "Deploy the Web App!" -> "deploy-the-web-app": lower-case ASCII letters and digits (other UTF-8
// letters kept), everything else a single '-', at most max_bytes, cut at a word boundary.
std::string SkillSlug(std::string_view text, size_t max_bytes = 64);

class SkillExtractor {
 public:
  virtual ~SkillExtractor() = default;
  // "builtin" | "llm:<model>"
  virtual std::string_view name() const = 0;
  // The skills the conversation teaches, without two of one name; empty when it teaches none.
  // Errors: kUnavailable (LLM unreachable or answered nonsense).
  virtual Result<std::vector<SkillDraft>> Extract(
      const std::vector<ConversationMessage>& messages) const = 0;
};

// The offline extractor. A user message opens a segment; its goal is the message's request
// sentence ("How do I deploy the web app to staging?" -> "deploy the web app to staging"). The
// assistant messages that follow give its steps, in this order of preference: numbered lines
// ("1. ", "2) ", "Step 3:"), else bullet lines ("- ", "* "), else sentences opened by sequence
// words (First, Then, Next, After that, Finally). Fenced code blocks are attached to the step
// before them. A segment with at least min_steps steps becomes a skill. So does a goal stated as an
// instruction ("Unify login failure message across platforms") whose reply opens with one
// ("Standardize the message to … across Android, iOS, and Web"): its instruction sentences are
// the steps. Instructions are told by their first word, from a closed list of procedure verbs.
class BuiltinSkillExtractor final : public SkillExtractor {
 public:
  explicit BuiltinSkillExtractor(size_t min_steps = 2) : min_steps_(min_steps) {}
  std::string_view name() const override { return "builtin"; }
  Result<std::vector<SkillDraft>> Extract(
      const std::vector<ConversationMessage>& messages) const override;

 private:
  size_t min_steps_;
};

}  // namespace engram
