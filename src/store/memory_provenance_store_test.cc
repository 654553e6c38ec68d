// Store: the provenance of agent memories (a JSON text the store keeps as given) on every backend:
// written with the memory and with each history row, replaced by an update, read back after a
// reopen.
#include <gtest/gtest.h>

#include <string>

#include "common/ids.h"
#include "store_backends.h"

namespace engram {
namespace {

class MemoryProvenanceStoreTest : public testing::StoreBackendTest {};

// A new memory of user "u" with `text` and `provenance`.
MemoryChange Insert(const std::string& text, const std::string& provenance) {
  MemoryChange add;
  add.op = MemoryChange::Op::kInsert;
  add.record.id = NewId("m");
  add.record.user_id = "u";
  add.record.text = text;
  add.record.provenance_json = provenance;
  return add;
}

TEST_P(MemoryProvenanceStoreTest, ProvenanceIsKeptWithTheMemoryAndEachHistoryRow) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  MemoryChange add = Insert("User lives in Paris", R"({"source":"extraction","event_id":"me-1"})");
  add.record.created_at_us = add.record.updated_at_us = 10;
  MemoryChange legacy = add;  // written without provenance
  legacy.record.id = NewId("m");
  legacy.record.text = "User likes tea";
  legacy.record.provenance_json.clear();
  auto outcome =
      store->ApplyMemoryChanges({.workspace = "w", .event_id = "me-1", .changes = {add, legacy}});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();

  MemoryChange up;
  up.op = MemoryChange::Op::kUpdate;
  up.record = outcome->inserted[0];
  up.old_text = up.record.text;
  up.old_metadata_json = up.record.metadata_json;
  up.record.text = "User lives in Berlin";
  up.record.provenance_json =
      R"({"source":"extraction","event_id":"me-2","replaced":{"text":"User lives in Paris"}})";
  ASSERT_TRUE(
      store->ApplyMemoryChanges({.workspace = "w", .event_id = "me-2", .changes = {up}}).ok());
  MemoryChange del;
  del.op = MemoryChange::Op::kDelete;
  del.record = up.record;
  del.old_text = up.record.text;
  ASSERT_TRUE(
      store->ApplyMemoryChanges({.workspace = "w", .event_id = "me-3", .changes = {del}}).ok());

  store.reset();  // a restart: everything below is read back from disk
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto loaded = store->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].provenance_json, "");

  auto history = store->GetHistory("w", add.record.id);
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ((*history)[0].event, "ADD");
  EXPECT_EQ((*history)[0].provenance_json, add.record.provenance_json);
  EXPECT_EQ((*history)[1].event, "UPDATE");
  EXPECT_EQ((*history)[1].provenance_json, up.record.provenance_json);
  EXPECT_EQ((*history)[2].event, "DELETE");
  EXPECT_EQ((*history)[2].provenance_json, "");  // a deleted memory has no state to explain
}

TEST_P(MemoryProvenanceStoreTest, AnUpdateReplacesTheProvenanceTheMemoryIsLoadedWith) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const MemoryChange add = Insert("User likes tea", R"({"source":"verbatim"})");
  auto outcome = store->ApplyMemoryChanges({.workspace = "w", .changes = {add}});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  MemoryChange up;
  up.op = MemoryChange::Op::kUpdate;
  up.record = outcome->inserted[0];
  up.old_text = up.record.text;
  up.record.text = "User likes green tea";
  up.record.provenance_json = R"({"source":"api"})";
  ASSERT_TRUE(store->ApplyMemoryChanges({.workspace = "w", .changes = {up}}).ok());
  auto loaded = store->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].provenance_json, R"({"source":"api"})");
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(MemoryProvenanceStoreTest);

}  // namespace
}  // namespace engram
