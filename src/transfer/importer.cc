#include "transfer/importer.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <utility>

#include "common/json_reader.h"
#include "transfer/export_format.h"

namespace engram::transfer {
namespace {

// A line holds one record, images included: generous, but bounded.
constexpr JsonReadLimits kLineLimits{
    .what = "", .max_bytes = size_t{512} << 20, .max_depth = 256, .refuse_duplicate_keys = true};
// Leaderboard messages are written in batches of one user's messages (one transaction each).
constexpr size_t kMessagesPerBatch = 256;
constexpr size_t kImageBytesPerBatch = size_t{32} << 20;

// Reads the file line by line: the header, then every record, handed to `fn(line, item)`.
template <typename Fn>
Status ForEachItem(const std::string& path, Fn&& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot open {}", path));
  std::string text;
  int64_t line = 0;
  bool header = false;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    auto j = ReadJson(text, kLineLimits);
    if (!j.ok()) {
      return Status::InvalidParameter(fmt::format("line {}: {}", line, j.status().message()));
    }
    if (!header) {
      auto h = DecodeHeader(*j);
      if (!h.ok()) {
        return Status::InvalidParameter(fmt::format("line {}: {}", line, h.status().message()));
      }
      header = true;
      continue;
    }
    auto item = DecodeItem(*j);
    if (!item.ok()) {
      return Status::InvalidParameter(fmt::format("line {}: {}", line, item.status().message()));
    }
    ENGRAM_RETURN_IF_ERROR(fn(line, std::move(*item)));
  }
  if (in.bad()) return Status::Internal(fmt::format("reading {} failed", path));
  if (!header) return Status::InvalidParameter("line 1: header missing (the file is empty)");
  return Status::Ok();
}

void Count(const ExportItem& item, TransferCounts& n) {
  switch (item.index()) {
    case 0:
      ++n.images;
      break;
    case 1:
      ++n.messages;
      break;
    case 2:
      ++n.memories;
      break;
    case 3:
      ++n.skills;
      break;
    case 4:
      ++n.kb_documents;
      break;
  }
}

// Writes the records of one pass, batching a user's consecutive messages with the images read
// before them.
class Writer {
 public:
  Writer(Store& store, ImportResult& result) : store_(store), result_(result) {}

  Status Write(ExportItem item) {
    if (auto* image = std::get_if<ImageBlob>(&item)) {
      auto stored = store_.GetImages({image->sha256});
      if (!stored.ok()) return stored.status();
      if (!stored->empty()) {
        ++result_.skipped.images;
        return Status::Ok();
      }
      image_bytes_ += image->bytes.size();
      ++result_.written.images;
      batch_.images.push_back(std::move(*image));
      if (image_bytes_ > kImageBytesPerBatch) return Flush();
      return Status::Ok();
    }
    if (auto* message = std::get_if<MemoryRecord>(&item)) return AddMessage(std::move(*message));
    ENGRAM_RETURN_IF_ERROR(Flush());
    if (auto* memory = std::get_if<AgentMemoryImport>(&item)) {
      auto written = store_.ImportAgentMemory(*memory);
      if (!written.ok()) return Named("memory", memory->memory.id, written.status());
      ++(*written ? result_.written : result_.skipped).memories;
      return Status::Ok();
    }
    if (auto* skill = std::get_if<SkillItem>(&item)) {
      auto written = store_.ImportSkill(skill->skill, skill->versions);
      if (!written.ok()) return Named("skill", skill->skill.id, written.status());
      ++(*written ? result_.written : result_.skipped).skills;
      return Status::Ok();
    }
    return WriteKbDocument(std::get<KbDocumentItem>(item));
  }

  // Writes what is still batched.
  Status Flush() {
    if (batch_.memories.empty() && batch_.images.empty()) return Status::Ok();
    // Images alone too (many of them before a message, or ones whose messages the store had):
    // an image is stored once by its hash, whoever writes it.
    AddBatch batch = std::exchange(batch_, {});
    image_bytes_ = 0;
    const size_t n = batch.memories.size();
    auto out = store_.Add(std::move(batch));
    if (!out.ok()) return out.status();
    result_.written.messages += static_cast<int64_t>(n);
    return Status::Ok();
  }

 private:
  Status AddMessage(MemoryRecord m) {
    auto scope = std::make_pair(m.workspace, m.user_id);
    if (scope != scope_) {
      ENGRAM_RETURN_IF_ERROR(Flush());
      auto existing = store_.LoadScope(m.workspace, m.user_id);
      if (!existing.ok()) return existing.status();
      scope_ = std::move(scope);
      scope_ids_.clear();
      for (const MemoryRecord& e : *existing) scope_ids_.insert(e.id);
    }
    if (!scope_ids_.insert(m.id).second) {
      ++result_.skipped.messages;
      return Status::Ok();
    }
    batch_.memories.push_back(std::move(m));
    if (batch_.memories.size() >= kMessagesPerBatch) return Flush();
    return Status::Ok();
  }

  Status WriteKbDocument(const KbDocumentItem& item) {
    const KbDocRecord& doc = item.doc;
    auto existing = store_.GetKbDoc(doc.workspace, doc.kb_id, doc.id);
    if (existing.ok() && existing->job_id == doc.job_id && existing->status == doc.status &&
        existing->status != JobStatus::kPending) {
      ++result_.skipped.kb_documents;
      return Status::Ok();
    }
    if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
      return existing.status();
    }
    // As an upload and its ingestion's end would write it; a document still PROCESSING when it
    // was exported stays so, and the server that serves the store resumes its ingestion.
    KbDocRecord processing = doc;
    processing.status = JobStatus::kPending;
    processing.content.clear();
    processing.error_message.clear();
    ENGRAM_RETURN_IF_ERROR(store_.PutKbDoc(processing));
    if (doc.status != JobStatus::kPending) {
      auto finished = store_.FinishKbDoc(doc, item.chunks);
      if (!finished.ok()) return Named("kb_document", doc.id, finished.status());
    }
    ++result_.written.kb_documents;
    return Status::Ok();
  }

  static Status Named(std::string_view type, const std::string& id, const Status& st) {
    return Status(st.code(), fmt::format("{} {}: {}", type, id, st.message()));
  }

  Store& store_;
  ImportResult& result_;
  AddBatch batch_;
  size_t image_bytes_ = 0;
  std::pair<std::string, std::string> scope_;
  std::set<std::string> scope_ids_;
};

}  // namespace

Result<TransferCounts> CheckFile(const std::string& path) {
  TransferCounts read;
  ENGRAM_RETURN_IF_ERROR(ForEachItem(path, [&](int64_t, ExportItem item) -> Status {
    Count(item, read);
    return Status::Ok();
  }));
  return read;
}

Result<ImportResult> ImportFile(Store& store, const std::string& path) {
  auto read = CheckFile(path);
  if (!read.ok()) return read.status();
  return ImportCheckedFile(store, path, *read);
}

Result<ImportResult> ImportCheckedFile(Store& store, const std::string& path,
                                       const TransferCounts& read) {
  ImportResult result;
  result.read = read;
  Writer writer(store, result);
  ENGRAM_RETURN_IF_ERROR(ForEachItem(path, [&](int64_t line, ExportItem item) -> Status {
    Status st = writer.Write(std::move(item));
    if (!st.ok()) return Status(st.code(), fmt::format("line {}: {}", line, st.message()));
    return Status::Ok();
  }));
  ENGRAM_RETURN_IF_ERROR(writer.Flush());
  return result;
}

}  // namespace engram::transfer
