// JobStatus: the one status of Engram's asynchronous jobs (memory events, skill tasks and
// knowledge-base document ingestions), and the words each API and each stored row uses for it.
//
// Code inside Engram reasons on JobStatus only. The words appear at the edges: the API, MCP and
// mem0 layers render them into JSON, and the store row codecs write and read them in the tables'
// status columns. Each vocabulary's words are fixed by its API contract and by the rows already
// stored, so they do not change:
//
//   JobStatus    kMemoryEvent  kSkillTask  kKbDocument
//   kPending     PENDING       pending     PROCESSING
//   kRunning     RUNNING       running     PROCESSING
//   kSucceeded   SUCCEEDED     completed   SUCCESS
//   kFailed      FAILED        failed      FAIL
//
// Knowledge-base documents have no word for running: PROCESSING covers a document waiting for its
// ingestion and one being ingested. Both kPending and kRunning render as PROCESSING, and
// PROCESSING parses as kPending (a stored document row never records that it is running; a node
// reports a running job from its own state).
//
// Thread-safety: pure functions over constants; callable from any thread.
#pragma once

#include <optional>
#include <string_view>

namespace engram {

enum class JobStatus { kPending, kRunning, kSucceeded, kFailed };

// Whose words: each asynchronous API names the same states its own way.
enum class JobVocabulary {
  kMemoryEvent,  // memory API V4 events, the mem0 API and the MCP memory tools
  kSkillTask,    // skills API V3 tasks
  kKbDocument,   // knowledge-base API V3 documents
};

// The word `vocabulary` uses for `status`: a string literal (the view stays valid for ever).
constexpr std::string_view JobStatusName(JobStatus status, JobVocabulary vocabulary) {
  switch (vocabulary) {
    case JobVocabulary::kMemoryEvent:
      switch (status) {
        case JobStatus::kPending:
          return "PENDING";
        case JobStatus::kRunning:
          return "RUNNING";
        case JobStatus::kSucceeded:
          return "SUCCEEDED";
        case JobStatus::kFailed:
          return "FAILED";
      }
      break;
    case JobVocabulary::kSkillTask:
      switch (status) {
        case JobStatus::kPending:
          return "pending";
        case JobStatus::kRunning:
          return "running";
        case JobStatus::kSucceeded:
          return "completed";
        case JobStatus::kFailed:
          return "failed";
      }
      break;
    case JobVocabulary::kKbDocument:
      switch (status) {
        case JobStatus::kPending:
        case JobStatus::kRunning:
          return "PROCESSING";
        case JobStatus::kSucceeded:
          return "SUCCESS";
        case JobStatus::kFailed:
          return "FAIL";
      }
      break;
  }
  return "";  // not reached: every enumerator is handled above
}

// The status `word` names in `vocabulary`, compared exactly (case included); nullopt for a word
// that vocabulary does not have. PROCESSING parses as kPending (see above).
constexpr std::optional<JobStatus> ParseJobStatus(std::string_view word, JobVocabulary vocabulary) {
  for (JobStatus s :
       {JobStatus::kPending, JobStatus::kRunning, JobStatus::kSucceeded, JobStatus::kFailed}) {
    if (JobStatusName(s, vocabulary) == word) return s;
  }
  return std::nullopt;
}

// True once a job has ended (succeeded or failed): it is neither resumed nor run again.
constexpr bool IsFinished(JobStatus status) {
  return status == JobStatus::kSucceeded || status == JobStatus::kFailed;
}

}  // namespace engram
