#include "transfer/exporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/json_reader.h"
#include "store/parts_refs.h"
#include "transfer/export_format.h"

namespace engram::transfer {
namespace {

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  Status Line(const nlohmann::json& j) {
    out_ << DumpJson(j) << '\n';
    if (!out_) return Status::Internal("writing the export failed");
    return Status::Ok();
  }

 private:
  std::ostream& out_;
};

bool Wanted(const ExportOptions& o, const std::string& workspace) {
  return o.workspace.empty() || o.workspace == workspace;
}
bool WantedUser(const ExportOptions& o, const std::string& user) {
  return o.user_id.empty() || o.user_id == user;
}

Status ExportMessages(Store& store, const StoredScopes& scopes, const ExportOptions& o, Writer& w,
                      TransferCounts& n) {
  std::set<std::string> images_written;
  for (const auto& [ws, user] : scopes.leaderboard_users) {
    if (!Wanted(o, ws) || !WantedUser(o, user)) continue;
    auto messages = store.LoadScope(ws, user);
    if (!messages.ok()) return messages.status();
    // The images of this user not written yet, before the messages that show them.
    std::set<std::string> hashes;
    for (const MemoryRecord& m : *messages) CollectImageHashes(m.parts_json, &hashes);
    std::vector<std::string> missing;
    for (const std::string& h : hashes) {
      if (!images_written.count(h)) missing.push_back(h);
    }
    if (!missing.empty()) {
      auto images = store.GetImages(missing);
      if (!images.ok()) return images.status();
      for (const ImageBlob& image : *images) {
        ENGRAM_RETURN_IF_ERROR(w.Line(EncodeImage(image)));
        images_written.insert(image.sha256);
        ++n.images;
      }
    }
    for (const MemoryRecord& m : *messages) {
      ENGRAM_RETURN_IF_ERROR(w.Line(EncodeMessage(m, o.vectors)));
      ++n.messages;
    }
  }
  return Status::Ok();
}

Status ExportMemories(Store& store, const StoredScopes& scopes, const ExportOptions& o, Writer& w,
                      TransferCounts& n) {
  for (const std::string& ws : scopes.memory_workspaces) {
    if (!Wanted(o, ws)) continue;
    auto memories = store.LoadAgentMemories(ws);
    if (!memories.ok()) return memories.status();
    for (MemoryRecord& m : *memories) {
      if (!WantedUser(o, m.user_id)) continue;
      AgentMemoryImport item;
      auto history = store.GetHistory(ws, m.id);
      if (!history.ok()) return history.status();
      auto feedback = store.GetFeedback(ws, m.id);
      if (!feedback.ok()) return feedback.status();
      item.memory = std::move(m);
      item.history = std::move(*history);
      item.feedback = std::move(*feedback);
      ENGRAM_RETURN_IF_ERROR(w.Line(EncodeAgentMemory(item, o.vectors)));
      ++n.memories;
    }
  }
  return Status::Ok();
}

Status ExportSkills(Store& store, const StoredScopes& scopes, const ExportOptions& o, Writer& w,
                    TransferCounts& n) {
  for (const std::string& ws : scopes.skill_workspaces) {
    if (!Wanted(o, ws)) continue;
    auto skills = store.LoadSkills(ws);
    if (!skills.ok()) return skills.status();
    std::sort(skills->begin(), skills->end(), [](const SkillRecord& a, const SkillRecord& b) {
      return std::tie(a.created_at_us, a.id) < std::tie(b.created_at_us, b.id);
    });
    for (SkillRecord& s : *skills) {
      if (!WantedUser(o, s.owner)) continue;
      auto versions = store.GetSkillVersions(ws, s.id);
      if (!versions.ok()) return versions.status();
      ENGRAM_RETURN_IF_ERROR(w.Line(EncodeSkill({std::move(s), std::move(*versions)}, o.vectors)));
      ++n.skills;
    }
  }
  return Status::Ok();
}

Status ExportKnowledgeBases(Store& store, const StoredScopes& scopes, const ExportOptions& o,
                            Writer& w, TransferCounts& n) {
  if (!o.user_id.empty()) return Status::Ok();  // knowledge bases belong to no user
  constexpr size_t kPage = 500;
  for (const auto& [ws, kb] : scopes.knowledge_bases) {
    if (!Wanted(o, ws)) continue;
    std::vector<KbDocRecord> docs;
    size_t total = 0;
    for (size_t offset = 0;; offset += kPage) {
      auto page = store.ListKbDocs(ws, kb, offset, kPage, &total);
      if (!page.ok()) return page.status();
      docs.insert(docs.end(), page->begin(), page->end());
      if (page->size() < kPage) break;
    }
    std::reverse(docs.begin(), docs.end());  // oldest first, as they were uploaded
    auto chunks = store.LoadKbChunks(ws, kb);
    if (!chunks.ok()) return chunks.status();
    std::map<std::string, std::vector<KbChunkRecord>> by_doc;
    for (KbChunkRecord& c : *chunks) by_doc[c.doc_id].push_back(std::move(c));
    for (const KbDocRecord& listed : docs) {
      auto doc = store.GetKbDoc(ws, kb, listed.id);                // with its content
      if (doc.status().code() == StatusCode::kNotFound) continue;  // deleted meanwhile
      if (!doc.ok()) return doc.status();
      KbDocumentItem item{.doc = std::move(*doc), .chunks = std::move(by_doc[listed.id])};
      ENGRAM_RETURN_IF_ERROR(w.Line(EncodeKbDocument(item, o.vectors)));
      ++n.kb_documents;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TransferCounts> ExportStore(Store& store, const ExportOptions& options, std::ostream& out) {
  Writer w(out);
  ENGRAM_RETURN_IF_ERROR(w.Line(EncodeHeader({.engram_version = options.engram_version,
                                              .created_at = options.created_at,
                                              .vectors = options.vectors})));
  auto scopes = store.ListStoredScopes();
  if (!scopes.ok()) return scopes.status();
  TransferCounts n;
  ENGRAM_RETURN_IF_ERROR(ExportMessages(store, *scopes, options, w, n));
  ENGRAM_RETURN_IF_ERROR(ExportMemories(store, *scopes, options, w, n));
  ENGRAM_RETURN_IF_ERROR(ExportSkills(store, *scopes, options, w, n));
  ENGRAM_RETURN_IF_ERROR(ExportKnowledgeBases(store, *scopes, options, w, n));
  out.flush();
  if (!out) return Status::Internal("writing the export failed");
  return n;
}

}  // namespace engram::transfer
