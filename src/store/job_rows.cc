#include "store/job_rows.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace engram::job_rows {

namespace {

std::string MakeUnfinishedCondition(JobVocabulary vocabulary) {
  const std::string_view pending = JobStatusName(JobStatus::kPending, vocabulary);
  const std::string_view running = JobStatusName(JobStatus::kRunning, vocabulary);
  // Knowledge-base documents have one word for both (PROCESSING).
  if (pending == running) return fmt::format("status = '{}'", pending);
  return fmt::format("status IN ('{}', '{}')", pending, running);
}

}  // namespace

JobStatus ReadStatus(std::string_view word, JobVocabulary vocabulary, std::string_view row_id) {
  if (auto status = ParseJobStatus(word, vocabulary)) return *status;
  spdlog::warn("job {}: stored status '{}' is not known; reading it as {}", row_id, word,
               JobStatusName(JobStatus::kFailed, vocabulary));
  return JobStatus::kFailed;
}

const std::string& UnfinishedCondition(JobVocabulary vocabulary) {
  static const std::string kMemoryEvent = MakeUnfinishedCondition(JobVocabulary::kMemoryEvent);
  static const std::string kSkillTask = MakeUnfinishedCondition(JobVocabulary::kSkillTask);
  static const std::string kKbDocument = MakeUnfinishedCondition(JobVocabulary::kKbDocument);
  switch (vocabulary) {
    case JobVocabulary::kMemoryEvent:
      return kMemoryEvent;
    case JobVocabulary::kSkillTask:
      return kSkillTask;
    case JobVocabulary::kKbDocument:
      break;
  }
  return kKbDocument;
}

}  // namespace engram::job_rows
