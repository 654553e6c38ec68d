#include "store/job_rows.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "store/skill_rows.h"

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

MemoryEventRecord ReadEventRow(const RowReader& row) {
  MemoryEventRecord e;
  e.id = row.Text(0);
  e.workspace = row.Text(1);
  e.status = ReadStatus(row.Text(2), JobVocabulary::kMemoryEvent, e.id);
  e.request_json = row.Text(3);
  e.result_json = row.Text(4);
  e.error_message = row.Text(5);
  e.created_at_us = row.Int(6);
  e.updated_at_us = row.Int(7);
  return e;
}

SkillTaskRecord ReadTaskRow(const RowReader& row) {
  SkillTaskRecord t;
  t.id = row.Text(0);
  t.workspace = row.Text(1);
  t.status = ReadStatus(row.Text(2), JobVocabulary::kSkillTask, t.id);
  t.request_json = row.Text(3);
  t.skill_ids = skill_rows::DecodeList(row.Text(4));
  t.error_message = row.Text(5);
  t.created_at_us = row.Int(6);
  t.updated_at_us = row.Int(7);
  return t;
}

}  // namespace engram::job_rows
