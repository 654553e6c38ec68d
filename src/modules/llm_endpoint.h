// The --llm-* endpoint (an OpenAI-compatible chat-completions API) as every LLM user starts from:
// the memory and skill extractors take it as it is, the reranker shortens its timeouts.
// Thread-safety: a pure function.
#pragma once

#include "config/serve_options.h"
#include "extract/chat_client.h"

namespace engram {

ChatClientOptions LlmChatOptions(const ServeOptions& options);

}  // namespace engram
