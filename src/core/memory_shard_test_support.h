// Test-only helpers shared by the MemoryShard tests (memory_shard_test.cc,
// memory_conversation_test.cc): a memory record and a user_id filter.
#pragma once

#include <cstdint>
#include <string>

#include "core/memory_filter.h"
#include "store/types.h"

namespace engram::testing {

// Memory `seq` (id "m-<seq>") of `user`, written at time `seq`.
inline MemoryRecord Rec(int64_t seq, const std::string& user, const std::string& text,
                        const std::string& metadata = "{}") {
  MemoryRecord r;
  r.seq = seq;
  r.id = "m-" + std::to_string(seq);
  r.user_id = user;
  r.text = text;
  r.metadata_json = metadata;
  r.created_at_us = r.updated_at_us = seq;
  return r;
}

// The filter of a search confined to `user`.
inline MemoryFilter UserFilter(const std::string& user) {
  MemoryFilter f;
  f.AndEquals("user_id", user);
  return f;
}

}  // namespace engram::testing
