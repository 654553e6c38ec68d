// The history row a memory change writes, shared by both backends so that the history reads the
// same on either. Internal to store/. Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>

#include "store/types.h"

namespace engram::history_rows {

// ADD carries the new state, DELETE the old one, UPDATE both.
inline HistoryRecord OfChange(const MemoryChange& c, const std::string& event_id, int64_t at_us) {
  const bool has_old = c.op != MemoryChange::Op::kInsert;
  const bool has_new = c.op != MemoryChange::Op::kDelete;
  HistoryRecord h;
  h.memory_id = c.record.id;
  h.event = c.op == MemoryChange::Op::kInsert   ? "ADD"
            : c.op == MemoryChange::Op::kUpdate ? "UPDATE"
                                                : "DELETE";
  if (has_old) {
    h.old_text = c.old_text;
    h.old_metadata_json = c.old_metadata_json;
  }
  if (has_new) {
    h.new_text = c.record.text;
    h.new_metadata_json = c.record.metadata_json;
    h.provenance_json = c.record.provenance_json;
  }
  h.event_id = event_id;
  h.at_us = at_us;
  return h;
}

}  // namespace engram::history_rows
