// Records of knowledge-base documents and chunks exchanged with a Store. Value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/job_status.h"

namespace engram {

// One uploaded document; the row is also its ingestion job (kPending until it ends).
struct KbDocRecord {
  std::string workspace;
  std::string kb_id;
  std::string id;
  std::string job_id;  // new on every upload; a job may only finish its own upload
  std::string title;
  std::string source_type;  // LOCAL | OSS | CONTENT
  std::string file_url;     // CONTENT: the file name the client gave (for type detection)
  // CONTENT only: the bytes sent, which PutKbDoc keeps until the job ends (GetKbUpload reads
  // them); never filled by the reads of documents.
  std::string upload;
  // Stored and rendered as PROCESSING | SUCCESS | FAIL (JobVocabulary::kKbDocument).
  JobStatus status = JobStatus::kPending;
  std::string content;  // extracted text (SUCCESS only); empty in list results
  std::string error_message;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
};

// One knowledge base as its documents describe it (a knowledge base exists while it has one).
struct KnowledgeBaseSummary {
  std::string kb_id;
  int64_t documents = 0;
  int64_t processing = 0;  // being ingested
  int64_t failed = 0;
  int64_t updated_at_us = 0;  // the latest change of any of its documents
};

// One searchable piece of a document.
struct KbChunkRecord {
  std::string doc_id;
  std::string title;  // the document's title; filled by LoadKbChunks (not stored per chunk)
  int32_t position = 0;
  std::string heading;
  std::string text;
  std::string vector_model;  // empty: no vector
  std::vector<float> vector;
};

}  // namespace engram
