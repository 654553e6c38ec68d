// MemoryExtractor: turns a conversation into atomic, self-contained memories and reconciles them
// with what the scope already remembers (the two phases of memory extraction).
//
//   1. ExtractFacts: messages -> facts ("User likes Americano coffee"), each citing the messages
//      it came from. The speaker is resolved: "User …" for the user, the speaker's name when the
//      message has one ("Caroline adopted a dog"), "The assistant …" for what the assistant
//      recommended or committed to. Relative dates are made absolute from each message's time.
//   2. Reconcile: each fact with the scope's most similar existing memories -> one decision per
//      fact: ADD a new memory, UPDATE an existing one (contradicted / refined fact), DELETE an
//      existing one (retracted fact), or NONE (already known: exact or near duplicate).
//
// Two implementations: RuleBasedExtractor (offline, the default) and LlmExtractor (an
// OpenAI-compatible chat-completions endpoint with JSON outputs).
//
// Thread-safety: implementations are safe to call concurrently from several event workers.
// Privacy: implementations never log message or memory text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace engram {

struct ConversationMessage {
  std::string role;     // "user" | "assistant" | "system"
  std::string content;  // UTF-8 text
  int64_t time_us = 0;  // when it was said (microseconds since the epoch, UTC)
  // The speaker's name (the OpenAI message field "name"), e.g. "Caroline"; empty when unnamed.
  // Facts about a named speaker are stated with the name rather than "User".
  std::string name;
};

// A fact and the messages it came from (indices into the ExtractFacts input, ascending, at least
// one): the fact's provenance.
struct ExtractedFact {
  std::string text;
  std::vector<int32_t> sources;
  bool operator==(const ExtractedFact&) const = default;
};

// The facts' texts, in order.
inline std::vector<std::string> FactTexts(const std::vector<ExtractedFact>& facts) {
  std::vector<std::string> out;
  out.reserve(facts.size());
  for (const ExtractedFact& f : facts) out.push_back(f.text);
  return out;
}

// An existing memory of the scope, as a candidate for a fact's decision.
struct SimilarMemory {
  std::string id;  // m-<uuid>
  std::string text;
  float similarity = 0;  // cosine of the fact's and the memory's embeddings (-1..1); 0 if unknown
};

struct FactCandidates {
  std::string fact;
  std::vector<SimilarMemory> similar;  // most similar first; may be empty
};

enum class MemoryAction { kAdd, kUpdate, kDelete, kNone };

// "ADD" | "UPDATE" | "DELETE" | "NONE"
std::string_view MemoryActionName(MemoryAction action);

struct MemoryDecision {
  MemoryAction action = MemoryAction::kAdd;
  // kUpdate / kDelete / kNone: the existing memory concerned (one of the SimilarMemory ids given to
  // Reconcile; implementations must never invent ids). kAdd: empty.
  std::string memory_id;
  // kAdd / kUpdate: the memory's new text. kDelete / kNone: empty.
  std::string text;
  // The index (into Reconcile's `facts`) of the fact this decision is about; -1 if unknown.
  int32_t fact = -1;
};

class MemoryExtractor {
 public:
  virtual ~MemoryExtractor() = default;

  // "rule-based" | "llm:<model>" (recorded in logs and metrics).
  virtual std::string_view name() const = 0;

  // Facts stated in the conversation, in conversation order, without duplicates. Empty when the
  // conversation states nothing worth remembering. Errors: kUnavailable (LLM unreachable or
  // answered nonsense; the message says what went wrong, never the conversation text).
  virtual Result<std::vector<ExtractedFact>> ExtractFacts(
      const std::vector<ConversationMessage>& messages) const = 0;

  // Whether the extractor can follow a client's instructions (ExtractFactsFollowing): true for a
  // language model, false for rules. Callers refuse custom instructions when it is false rather
  // than silently ignore them.
  virtual bool follows_instructions() const { return false; }

  // As ExtractFacts, also following `instructions` (what to remember or leave out, in the client's
  // words). Extractors that cannot follow instructions answer kInvalidParameter.
  virtual Result<std::vector<ExtractedFact>> ExtractFactsFollowing(
      const std::vector<ConversationMessage>& messages, std::string_view instructions) const {
    (void)messages, (void)instructions;
    return Status::InvalidParameter(
        "custom_instructions: this memory extractor cannot follow instructions (configure an LLM "
        "extractor)");
  }

  // One decision per fact, in the order of `facts` (a fact may produce no decision only when it
  // duplicates an earlier fact of the same call). Errors as ExtractFacts.
  virtual Result<std::vector<MemoryDecision>> Reconcile(
      const std::vector<FactCandidates>& facts) const = 0;
};

}  // namespace engram
