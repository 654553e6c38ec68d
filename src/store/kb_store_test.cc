// Knowledge-base documents and chunks, on every Store backend (store_backends.h), plus what only a
// shared (PostgreSQL) store does: scope versions and job leases.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <tuple>

#include "store_backends.h"

namespace engram {
namespace {

using namespace std::chrono_literals;

class KbStoreTest : public testing::LeasedStoreTest {
 protected:
  // The documents a restart resumes: the store is closed and opened again. On PostgreSQL the
  // documents belong to the closed node until its lease runs out; then the new node claims them.
  std::vector<KbDocRecord> UnfinishedAfterRestart() {
    if (!Restart()) return {};
    auto docs = store_->UnfinishedKbDocs();
    EXPECT_TRUE(docs.ok()) << docs.status().ToString();
    return docs.ok() ? std::move(docs).value() : std::vector<KbDocRecord>{};
  }

  static KbDocRecord Doc(const std::string& id, const std::string& job, int64_t at) {
    return {.workspace = "w",
            .kb_id = "kb",
            .id = id,
            .job_id = job,
            .title = "T " + id,
            .source_type = "LOCAL",
            .file_url = id + ".txt",
            .status = JobStatus::kPending,
            .created_at_us = at,
            .updated_at_us = at};
  }
  static KbChunkRecord Chunk(const std::string& doc, int pos, const std::string& text) {
    return {.doc_id = doc,
            .position = pos,
            .heading = "H",
            .text = text,
            .vector_model = "m",
            .vector = {0.5f, -0.25f}};
  }
  int64_t Version(const std::string& kb_id = "kb") {
    auto v = store_->ScopeVersion(ScopeKeyKb("w", kb_id));
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : -1;
  }
};

TEST_P(KbStoreTest, UploadFinishLoadListDelete) {
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j1", 1)).ok());
  ASSERT_TRUE(store_->PutKbDoc(Doc("b", "j2", 2)).ok());
  auto unfinished = UnfinishedAfterRestart();
  ASSERT_EQ(unfinished.size(), 2u);
  EXPECT_EQ(unfinished[0].id, "a");  // oldest first
  EXPECT_EQ(unfinished[1].id, "b");

  KbDocRecord done = Doc("a", "j1", 1);
  done.status = JobStatus::kSucceeded;
  done.content = "full text";
  done.updated_at_us = 7;  // when the ingestion ended, by the caller's clock
  auto applied = store_->FinishKbDoc(done, {Chunk("a", 0, "one"), Chunk("a", 1, "two")});
  ASSERT_TRUE(applied.ok() && *applied);
  auto got = store_->GetKbDoc("w", "kb", "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, JobStatus::kSucceeded);
  EXPECT_EQ(got->content, "full text");
  EXPECT_EQ(got->created_at_us, 1);
  EXPECT_EQ(got->updated_at_us, 7);
  auto chunks = store_->LoadKbChunks("w", "kb");
  ASSERT_EQ(chunks->size(), 2u);
  EXPECT_EQ((*chunks)[1].text, "two");
  EXPECT_EQ((*chunks)[1].title, "T a");
  EXPECT_EQ((*chunks)[1].vector, (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(UnfinishedAfterRestart().size(), 1u);

  size_t total = 0;
  auto list = store_->ListKbDocs("w", "kb", 0, 1, &total);
  EXPECT_EQ(total, 2u);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, "b");  // newest first
  EXPECT_TRUE((*list)[0].content.empty());

  EXPECT_TRUE(*store_->DeleteKbDoc("w", "kb", "a"));
  EXPECT_FALSE(*store_->DeleteKbDoc("w", "kb", "a"));
  EXPECT_TRUE(store_->LoadKbChunks("w", "kb")->empty());
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->LoadKbChunks("w", "other")->empty());
}

TEST_P(KbStoreTest, ListKnowledgeBasesCountsEachOnesDocumentsByStatus) {
  size_t total = 7;
  ASSERT_TRUE(store_->ListKnowledgeBases("w", 0, 10, &total)->empty());
  EXPECT_EQ(total, 0u);
  // kb "b": one processing, one failed (updated last at 30); kb "a": one done; "Z" sorts first.
  for (const auto& [kb, id, at] : std::vector<std::tuple<std::string, std::string, int64_t>>{
           {"b", "d1", 10}, {"b", "d2", 20}, {"a", "d3", 5}, {"Z", "d4", 1}}) {
    KbDocRecord doc = Doc(id, "j-" + id, at);
    doc.kb_id = kb;
    ASSERT_TRUE(store_->PutKbDoc(doc).ok());
  }
  KbDocRecord failed = Doc("d2", "j-d2", 20);
  failed.kb_id = "b";
  failed.status = JobStatus::kFailed;
  failed.error_message = "unreadable";
  failed.updated_at_us = 30;
  ASSERT_TRUE(*store_->FinishKbDoc(failed, {}));
  KbDocRecord done = Doc("d3", "j-d3", 5);
  done.kb_id = "a";
  done.status = JobStatus::kSucceeded;
  ASSERT_TRUE(*store_->FinishKbDoc(done, {Chunk("d3", 0, "text")}));
  KbDocRecord elsewhere = Doc("d9", "j-d9", 1);
  elsewhere.workspace = "other";
  ASSERT_TRUE(store_->PutKbDoc(elsewhere).ok());

  auto all = store_->ListKnowledgeBases("w", 0, SIZE_MAX, &total);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(total, 3u);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].kb_id, "Z");
  EXPECT_EQ((*all)[1].kb_id, "a");
  EXPECT_EQ((*all)[1].documents, 1);
  EXPECT_EQ((*all)[1].processing, 0);
  EXPECT_EQ((*all)[1].failed, 0);
  const KnowledgeBaseSummary& b = (*all)[2];
  EXPECT_EQ(b.kb_id, "b");
  EXPECT_EQ(b.documents, 2);
  EXPECT_EQ(b.processing, 1);
  EXPECT_EQ(b.failed, 1);
  EXPECT_EQ(b.updated_at_us, 30);
  auto page = store_->ListKnowledgeBases("w", 1, 1, &total);
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].kb_id, "a");
  EXPECT_TRUE(store_->ListKnowledgeBases("w", SIZE_MAX, 1, &total)->empty());
}

TEST_P(KbStoreTest, UploadedBytesStayUntilTheJobEnds) {
  std::string bytes = "# Title\n\nbody";
  bytes.push_back('\0');  // any bytes: a PDF or an image is no text
  bytes += "\xff\xfe tail";
  KbDocRecord doc = Doc("a", "j1", 1);
  doc.source_type = "CONTENT";
  doc.upload = bytes;
  ASSERT_TRUE(store_->PutKbDoc(doc).ok());
  auto got = store_->GetKbUpload("w", "kb", "a", "j1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, bytes);
  EXPECT_EQ(store_->GetKbUpload("w", "kb", "a", "other-job").status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetKbDoc("w", "kb", "a")->upload.empty()) << "reads never carry the bytes";
  ASSERT_EQ(UnfinishedAfterRestart().size(), 1u);
  EXPECT_EQ(*store_->GetKbUpload("w", "kb", "a", "j1"), bytes) << "a restart resumes the job";

  KbDocRecord done = Doc("a", "j1", 1);
  done.status = JobStatus::kSucceeded;
  ASSERT_TRUE(*store_->FinishKbDoc(done, {Chunk("a", 0, "body")}));
  EXPECT_EQ(store_->GetKbUpload("w", "kb", "a", "j1").status().code(), StatusCode::kNotFound);

  // Uploaded again, by content and then by file: the newer upload's bytes, then none.
  doc.job_id = "j2";
  ASSERT_TRUE(store_->PutKbDoc(doc).ok());
  EXPECT_TRUE(store_->GetKbUpload("w", "kb", "a", "j2").ok());
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j3", 3)).ok());
  EXPECT_EQ(store_->GetKbUpload("w", "kb", "a", "j2").status().code(), StatusCode::kNotFound);
  doc.job_id = "j4";
  ASSERT_TRUE(store_->PutKbDoc(doc).ok());
  ASSERT_TRUE(*store_->DeleteKbDoc("w", "kb", "a"));
  EXPECT_EQ(store_->GetKbUpload("w", "kb", "a", "j4").status().code(), StatusCode::kNotFound);
}

TEST_P(KbStoreTest, StaleJobWritesNothing) {
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "old-job", 1)).ok());
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "new-job", 2)).ok());  // re-upload
  KbDocRecord stale = Doc("a", "old-job", 1);
  stale.status = JobStatus::kSucceeded;
  auto applied = store_->FinishKbDoc(stale, {Chunk("a", 0, "stale")});
  ASSERT_TRUE(applied.ok());
  EXPECT_FALSE(*applied);
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a")->status, JobStatus::kPending);
  EXPECT_TRUE(store_->LoadKbChunks("w", "kb")->empty());

  // A job finishing after its document was deleted writes nothing either.
  ASSERT_TRUE(*store_->DeleteKbDoc("w", "kb", "a"));
  KbDocRecord fail = Doc("a", "new-job", 2);
  fail.status = JobStatus::kFailed;
  fail.error_message = "x";
  EXPECT_FALSE(*store_->FinishKbDoc(fail, {}));
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a").status().code(), StatusCode::kNotFound);
}

TEST_P(KbStoreTest, ReuploadDropsTheOldChunks) {
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j1", 1)).ok());
  KbDocRecord done = Doc("a", "j1", 1);
  done.status = JobStatus::kSucceeded;
  ASSERT_TRUE(*store_->FinishKbDoc(done, {Chunk("a", 0, "v1")}));
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j2", 2)).ok());
  EXPECT_TRUE(store_->LoadKbChunks("w", "kb")->empty());
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a")->content, "");
}

TEST_P(KbStoreTest, ManyChunksKeepTheirOrderAndVectors) {
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j1", 1)).ok());
  KbDocRecord done = Doc("a", "j1", 1);
  done.status = JobStatus::kSucceeded;
  std::vector<KbChunkRecord> chunks;
  for (int i = 0; i < 1234; ++i) {  // more than one INSERT statement's worth on PostgreSQL
    KbChunkRecord c = Chunk("a", i, "text " + std::to_string(i));
    c.vector = {static_cast<float>(i), -1.5f, 1e-7f};
    if (i % 3 == 0) c.vector.clear();  // no vector: stored as none
    chunks.push_back(std::move(c));
  }
  ASSERT_TRUE(*store_->FinishKbDoc(done, chunks));
  auto loaded = store_->LoadKbChunks("w", "kb");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ((*loaded)[i].position, chunks[i].position);
    EXPECT_EQ((*loaded)[i].text, chunks[i].text);
    EXPECT_EQ((*loaded)[i].vector, chunks[i].vector);
    EXPECT_EQ((*loaded)[i].vector_model, "m");
  }
}

TEST_P(KbStoreTest, ChunksOfSeveralDocumentsComeByDocumentThenPosition) {
  for (const char* id : {"b", "a", "B"}) {
    ASSERT_TRUE(store_->PutKbDoc(Doc(id, "j", 1)).ok());
    KbDocRecord done = Doc(id, "j", 1);
    done.status = JobStatus::kSucceeded;
    ASSERT_TRUE(*store_->FinishKbDoc(done, {Chunk(id, 1, "second"), Chunk(id, 0, "first")}));
  }
  auto loaded = store_->LoadKbChunks("w", "kb");
  ASSERT_TRUE(loaded.ok());
  std::vector<std::string> order;
  for (const auto& c : *loaded) order.push_back(c.doc_id + std::to_string(c.position));
  // Byte order of ids ("B" < "a"), whatever the database's collation.
  EXPECT_EQ(order, (std::vector<std::string>{"B0", "B1", "a0", "a1", "b0", "b1"}));
}

// --- PostgreSQL only: what several nodes on one store rely on ---

TEST_P(KbStoreTest, WritesBumpTheScopeVersion) {
  if (!is_postgres()) GTEST_SKIP() << "scope versions belong to shared stores";
  EXPECT_EQ(Version(), 0);
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j1", 1)).ok());
  const int64_t after_put = Version();
  EXPECT_GT(after_put, 0);

  KbDocRecord stale = Doc("a", "other-job", 1);
  stale.status = JobStatus::kSucceeded;
  EXPECT_FALSE(*store_->FinishKbDoc(stale, {}));
  EXPECT_EQ(Version(), after_put) << "a stale job writes nothing, not even a version";

  KbDocRecord done = Doc("a", "j1", 1);
  done.status = JobStatus::kSucceeded;
  ASSERT_TRUE(*store_->FinishKbDoc(done, {Chunk("a", 0, "x")}));
  const int64_t after_finish = Version();
  EXPECT_GT(after_finish, after_put);

  EXPECT_TRUE(*store_->DeleteKbDoc("w", "kb", "a"));
  const int64_t after_delete = Version();
  EXPECT_GT(after_delete, after_finish);
  EXPECT_FALSE(*store_->DeleteKbDoc("w", "kb", "a"));
  EXPECT_EQ(Version(), after_delete);

  EXPECT_EQ(Version("other"), 0) << "another knowledge base is another scope";
}

TEST_P(KbStoreTest, RefusesNulBytes) {
  if (!is_postgres()) GTEST_SKIP() << "SQLite text holds NUL bytes";
  KbDocRecord doc = Doc("a", "j1", 1);
  doc.title = std::string("bad\0title", 9);
  Status st = store_->PutKbDoc(doc);
  EXPECT_EQ(st.code(), StatusCode::kInvalidParameter);
  EXPECT_NE(st.message().find("title"), std::string::npos) << st.message();

  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j1", 1)).ok());
  KbDocRecord done = Doc("a", "j1", 1);
  done.status = JobStatus::kSucceeded;
  auto applied = store_->FinishKbDoc(done, {Chunk("a", 0, std::string("x\0y", 3))});
  EXPECT_EQ(applied.status().code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a")->status, JobStatus::kPending);
  // A key with a NUL byte cannot name a stored document (libpq would cut it to "a").
  EXPECT_EQ(store_->GetKbDoc("w", "kb", std::string("a\0b", 3)).status().code(),
            StatusCode::kNotFound);
}

TEST_P(KbStoreTest, AnotherNodeTakesOverWhenTheLeaseRunsOut) {
  if (!is_postgres()) GTEST_SKIP() << "job leases belong to shared stores";
  store_.reset();
  auto a = OpenStore({.node_id = "a", .lease = 300ms});
  auto b = OpenStore({.node_id = "b", .lease = 300ms});
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->PutKbDoc(Doc("d", "j1", 1)).ok());

  EXPECT_TRUE(b->UnfinishedKbDocs()->empty()) << "node a holds the document";
  std::this_thread::sleep_for(700ms);  // over two leases: a renews meanwhile
  EXPECT_TRUE(b->UnfinishedKbDocs()->empty()) << "node a renewed its lease";
  EXPECT_TRUE(a->UnfinishedKbDocs()->empty()) << "a node is not handed its own jobs again";

  a.reset();  // node a dies; its lease runs out
  ExpireLeases();
  auto claimed = b->UnfinishedKbDocs();
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].id, "d");
  EXPECT_EQ((*claimed)[0].job_id, "j1");
  EXPECT_TRUE(b->UnfinishedKbDocs()->empty()) << "claimed once";

  // b finishes it as its own.
  KbDocRecord done = Doc("d", "j1", 1);
  done.status = JobStatus::kSucceeded;
  EXPECT_TRUE(*b->FinishKbDoc(done, {}));
}

TEST_P(KbStoreTest, ANodeRestartedUnderItsNameResumesItsDocumentsAtOnce) {
  if (!is_postgres()) GTEST_SKIP() << "job leases belong to shared stores";
  store_.reset();
  auto a = OpenStore({.node_id = "a"});  // the default lease: 30 s
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->PutKbDoc(Doc("d", "j1", 1)).ok());
  a.reset();
  a = OpenStore({.node_id = "a"});  // e.g. serve --node-id a, restarted
  ASSERT_NE(a, nullptr);
  auto resumed = a->UnfinishedKbDocs();
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  ASSERT_EQ(resumed->size(), 1u);
  EXPECT_EQ((*resumed)[0].id, "d");
  EXPECT_TRUE(a->UnfinishedKbDocs()->empty());
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(KbStoreTest);

}  // namespace
}  // namespace engram
