// Reads an export (export_format.h) into a store. The whole file is checked first, so a file
// with a bad line writes nothing; then each record is written unless the store already has it
// (same id), so an import run again, or after it was interrupted, writes only what is missing.
//
// Thread-safety: one call at a time per store; the store may serve meanwhile (a shared store's
// nodes see the imported records as any other write; a SQLite data directory must not be served
// by a running server while it is imported into).
#pragma once

#include <string>

#include "common/status.h"
#include "store/store.h"
#include "transfer/exporter.h"

namespace engram::transfer {

struct ImportResult {
  TransferCounts written;  // records the store did not have
  TransferCounts skipped;  // records it already had
  TransferCounts read;     // records in the file
};

// Reads and checks every line, writing nothing: the records the file holds, or kInvalidParameter
// "line N: field: problem" for the first bad line; kNotFound when the file cannot be opened.
Result<TransferCounts> CheckFile(const std::string& path);

// CheckFile, then the writes, so a file with a bad line writes nothing. A store error stops the
// import (what was written so far stays, and a second run completes it).
Result<ImportResult> ImportFile(Store& store, const std::string& path);
// The writes alone, for a file CheckFile found good (`read`: what it counted); a caller that
// checks before it opens the store reads the file twice instead of three times.
Result<ImportResult> ImportCheckedFile(Store& store, const std::string& path,
                                       const TransferCounts& read);

}  // namespace engram::transfer
