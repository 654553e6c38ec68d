// LlmSkillExtractor: a SkillExtractor that asks a chat model (the same OpenAI-compatible client
// as LlmExtractor) for the skills a conversation teaches. One chat request per Extract call.
//
// System prompt: first line "Task: engram.extract_skills.v1" (tests/support/fake_llm.py keys on
// it), then the rules. User message: {"messages": [{"role", "content"}, ...]}. Expected answer:
//   {"skills": [{"name": "...", "description": "...", "goal": "...", "triggers": ["..."],
//                "tags": ["..."], "steps": ["...", ...]}]}
// Validation is strict (kUnavailable "LLM returned malformed skill output: <what>"): not JSON,
// no "skills" array, more than max_skills, a missing or empty name / description, no steps,
// non-string items, or texts over the limits. Tolerated: a ```json fence or a leading
// <think>...</think> block. Names are normalised with SkillSlug; a repeated name keeps the first.
//
// Thread-safety: Extract is safe to call concurrently. Nothing here logs.
#pragma once

#include <memory>
#include <string>

#include "extract/chat_client.h"
#include "extract/skill_extractor.h"

namespace engram {

struct LlmSkillExtractorOptions {
  ChatClientOptions chat;
  size_t max_skills = 10;
  size_t max_steps = 50;
  size_t max_text_bytes = 4000;  // any one name, description, goal, step, trigger or tag
  bool json_response_format = true;
};

class LlmSkillExtractor final : public SkillExtractor {
 public:
  static Result<std::unique_ptr<LlmSkillExtractor>> Create(LlmSkillExtractorOptions options);
  std::string_view name() const override { return name_; }
  Result<std::vector<SkillDraft>> Extract(
      const std::vector<ConversationMessage>& messages) const override;

 private:
  LlmSkillExtractor(LlmSkillExtractorOptions options, std::unique_ptr<ChatClient> client);

  const LlmSkillExtractorOptions options_;
  const std::unique_ptr<ChatClient> client_;
  const std::string name_;
};

}  // namespace engram
