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

KbDocRecord ReadDocRow(const RowReader& row, bool with_content) {
  KbDocRecord d;
  d.workspace = row.Text(0);
  d.kb_id = row.Text(1);
  d.id = row.Text(2);
  d.job_id = row.Text(3);
  d.title = row.Text(4);
  d.source_type = row.Text(5);
  d.file_url = row.Text(6);
  d.status = job_rows::ReadStatus(row.Text(7), JobVocabulary::kKbDocument, d.id);
  d.error_message = row.Text(8);
  d.created_at_us = row.Int(9);
  d.updated_at_us = row.Int(10);
  if (with_content) d.content = row.Text(11);
  return d;
}

}  // namespace engram::kb_rows
