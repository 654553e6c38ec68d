#include "store/kb_rows.h"

#include <fmt/format.h>

#include "store/job_rows.h"

namespace engram::kb_rows {

const std::string& SummaryColumns() {
  static const std::string kColumns = fmt::format(
      "kb_id, count(*), sum(CASE WHEN {} THEN 1 ELSE 0 END), "
      "sum(CASE WHEN status = '{}' THEN 1 ELSE 0 END), max(updated_at)",
      job_rows::UnfinishedCondition(JobVocabulary::kKbDocument),
      JobStatusName(JobStatus::kFailed, JobVocabulary::kKbDocument));
  return kColumns;
}

}  // namespace engram::kb_rows
