#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "store/sqlite_store.h"

namespace engram {
namespace {

class SqliteKbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-kb-store-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto s = SqliteStore::Open({.path = dir_ + "/engram.db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  static KbDocRecord Doc(const std::string& id, const std::string& job, int64_t at) {
    return {.workspace = "w",
            .kb_id = "kb",
            .id = id,
            .job_id = job,
            .title = "T " + id,
            .source_type = "LOCAL",
            .file_url = id + ".txt",
            .status = "PROCESSING",
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
  std::string dir_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteKbTest, UploadFinishLoadListDelete) {
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j1", 1)).ok());
  ASSERT_TRUE(store_->PutKbDoc(Doc("b", "j2", 2)).ok());
  EXPECT_EQ(store_->UnfinishedKbDocs()->size(), 2u);

  KbDocRecord done = Doc("a", "j1", 1);
  done.status = "SUCCESS";
  done.content = "full text";
  auto applied = store_->FinishKbDoc(done, {Chunk("a", 0, "one"), Chunk("a", 1, "two")});
  ASSERT_TRUE(applied.ok() && *applied);
  auto got = store_->GetKbDoc("w", "kb", "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, "SUCCESS");
  EXPECT_EQ(got->content, "full text");
  auto chunks = store_->LoadKbChunks("w", "kb");
  ASSERT_EQ(chunks->size(), 2u);
  EXPECT_EQ((*chunks)[1].text, "two");
  EXPECT_EQ((*chunks)[1].title, "T a");
  EXPECT_EQ((*chunks)[1].vector, (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(store_->UnfinishedKbDocs()->size(), 1u);

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

TEST_F(SqliteKbTest, StaleJobWritesNothing) {
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "old-job", 1)).ok());
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "new-job", 2)).ok());  // re-upload
  KbDocRecord stale = Doc("a", "old-job", 1);
  stale.status = "SUCCESS";
  auto applied = store_->FinishKbDoc(stale, {Chunk("a", 0, "stale")});
  ASSERT_TRUE(applied.ok());
  EXPECT_FALSE(*applied);
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a")->status, "PROCESSING");
  EXPECT_TRUE(store_->LoadKbChunks("w", "kb")->empty());

  // A job finishing after its document was deleted writes nothing either.
  ASSERT_TRUE(*store_->DeleteKbDoc("w", "kb", "a"));
  KbDocRecord fail = Doc("a", "new-job", 2);
  fail.status = "FAIL";
  fail.error_message = "x";
  EXPECT_FALSE(*store_->FinishKbDoc(fail, {}));
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a").status().code(), StatusCode::kNotFound);
}

TEST_F(SqliteKbTest, ReuploadDropsTheOldChunks) {
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j1", 1)).ok());
  KbDocRecord done = Doc("a", "j1", 1);
  done.status = "SUCCESS";
  ASSERT_TRUE(*store_->FinishKbDoc(done, {Chunk("a", 0, "v1")}));
  ASSERT_TRUE(store_->PutKbDoc(Doc("a", "j2", 2)).ok());
  EXPECT_TRUE(store_->LoadKbChunks("w", "kb")->empty());
  EXPECT_EQ(store_->GetKbDoc("w", "kb", "a")->content, "");
}

}  // namespace
}  // namespace engram
