// LlmReranker: a Reranker that asks an OpenAI-compatible chat model (ChatClient) which memories
// help answer a question, and in what order.
//
// Request: the system prompt (first line "Task: engram.rerank_memories.v1", which the test double
// tests/support/fake_llm.py matches), then a user message that is a JSON object
// {"question": q, "memories": [{"id": 0, "text": …}, …]} with each text cut to
// max_candidate_chars (on a UTF-8 boundary). Answer: a JSON object {"ranking": [ids…]}.
// An answer that is not that shape, names an id that was not offered, or repeats one is an
// error (the caller keeps its own order); so is any transport error (see chat_client.h). Texts
// are never logged or put into a Status.
//
// Thread-safety: Rerank is safe to call concurrently. Ownership: owns its ChatClient.
#pragma once

#include <memory>

#include "extract/chat_client.h"
#include "extract/reranker.h"

namespace engram {

struct LlmRerankerOptions {
  ChatClientOptions chat;            // base_url and model required
  size_t max_candidate_chars = 800;  // per memory text sent
};

class LlmReranker final : public Reranker {
 public:
  static Result<std::unique_ptr<LlmReranker>> Create(LlmRerankerOptions options);

  Result<std::vector<size_t>> Rerank(
      const std::string& query, const std::vector<std::string_view>& candidates) const override;

  // Parses a model's answer for `n` offered candidates (exposed for tests and fuzzing).
  static Result<std::vector<size_t>> ParseAnswer(const std::string& content, size_t n);

 private:
  LlmReranker(LlmRerankerOptions options, std::unique_ptr<ChatClient> chat);

  const LlmRerankerOptions options_;
  const std::unique_ptr<ChatClient> chat_;
};

}  // namespace engram
