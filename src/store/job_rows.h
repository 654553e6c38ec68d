// Job rows as every store keeps them: their column lists, and the status column as the stored word
// of each job's vocabulary (common/job_status.h), so the SQLite and PostgreSQL rows of a job read
// the same and the rows written before JobStatus existed keep their meaning. Internal to store/.
// Thread-safety: pure functions (ReadStatus may log).
#pragma once

#include <string>
#include <string_view>

#include "common/job_status.h"
#include "store/row_reader.h"
#include "store/skill_types.h"
#include "store/types.h"

namespace engram::job_rows {

// The status a row's stored word means. A word this build does not know (a row written by hand or
// by a later version) reads as kFailed, logged with the row's id: the job is reported as failed
// and never resumed, instead of every read of the table failing on that row (a list of events
// would) or a job of unknown state running again.
JobStatus ReadStatus(std::string_view word, JobVocabulary vocabulary, std::string_view row_id);

// The stored word, as bound to a status column.
inline std::string StoredWord(JobStatus status, JobVocabulary vocabulary) {
  return std::string(JobStatusName(status, vocabulary));
}

// The SQL condition on a job table's `status` column that its unfinished rows meet (the jobs a
// restart resumes, a claim takes over or a lease covers): "status IN ('PENDING', 'RUNNING')",
// "status IN ('pending', 'running')" or "status = 'PROCESSING'". The words are literals, not
// parameters, so the planner can use the partial indexes of the migrations, which name them too.
const std::string& UnfinishedCondition(JobVocabulary vocabulary);

// The columns of a memory event row and of a skill task row, in the order both stores read and
// write them.
inline constexpr const char* kEventColumns =
    "id, workspace, status, request, result, error_message, created_at, updated_at";
inline constexpr const char* kTaskColumns =
    "id, workspace, status, request, skill_ids, error_message, created_at, updated_at";

// A row of kEventColumns / kTaskColumns.
MemoryEventRecord ReadEventRow(const RowReader& row);
SkillTaskRecord ReadTaskRow(const RowReader& row);

}  // namespace engram::job_rows
