#include "store/memory_rows.h"

#include "store/categories_json.h"

namespace engram::memory_rows {

MemoryRecord ReadMemoryRow(const RowReader& row) {
  MemoryRecord m;
  m.seq = row.Int(0);
  m.id = row.Text(1);
  m.workspace = row.Text(2);
  m.user_id = row.Text(3);
  m.agent_id = row.Text(4);
  m.run_id = row.Text(5);
  m.session_id = row.Text(6);
  m.role = row.Text(7);
  m.text = row.Text(8);
  m.parts_json = row.Text(9);
  m.metadata_json = row.Text(10);
  if (!row.IsNull(11)) m.source_ts_us = row.Int(11);
  m.position = static_cast<int32_t>(row.Int(12));
  m.created_at_us = row.Int(13);
  m.updated_at_us = row.Int(14);
  // The model is reported only beside a vector (SQLite keeps both in memory_vectors, so a row
  // without one reads NULL for each).
  if (!row.IsNull(16)) {
    m.vector_model = row.Text(15);
    m.vector = row.Vector(16);
  }
  if (!row.IsNull(17)) m.expires_at_us = row.Int(17);
  m.app_id = row.Text(18);
  m.categories = CategoriesFromJson(row.Text(19));
  m.provenance_json = row.Text(20);
  return m;
}

}  // namespace engram::memory_rows
