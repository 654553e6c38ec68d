// Writes what a store holds as an export (export_format.h): every scope, or those of one
// workspace or user, in an order the importer can replay (an image before the first message
// that shows it).
//
// Thread-safety: one call at a time per output stream; the store may serve meanwhile (each scope
// is read in one read of the store, so a scope is exported as it was at one moment).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "common/status.h"
#include "store/store.h"

namespace engram::transfer {

struct ExportOptions {
  std::string workspace;  // non-empty: only this workspace
  // Non-empty: only this user's Leaderboard messages, agent memories (user_id) and skills (owner);
  // knowledge bases belong to no user and are left out.
  std::string user_id;
  bool vectors = true;  // false: records without their vectors (importers re-embed)
  std::string engram_version;
  std::string created_at;  // RFC 3339; written into the header
};

struct TransferCounts {
  int64_t images = 0;
  int64_t messages = 0;
  int64_t memories = 0;
  int64_t skills = 0;
  int64_t kb_documents = 0;
};

// Writes the header and every record to `out`; kInternal when writing fails.
Result<TransferCounts> ExportStore(Store& store, const ExportOptions& options, std::ostream& out);

}  // namespace engram::transfer
