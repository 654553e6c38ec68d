// `engram backup` of a serving server and `engram restore` into a new data directory
// (docs/operations.md, "Data directory and backup"): the backup holds every add acknowledged
// before it began, taken while adds keep coming, and a server started on the restored directory
// answers listings and searches of the data that did not change exactly as the original does.
#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "memory_client.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

TEST(BackupTest, ABackupTakenUnderLoadRestoresToTheSameAnswers) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess original;
  ASSERT_TRUE(original.Start());
  HttpClient client(original.BaseUrl());

  // Data that does not change after the backup: Leaderboard messages and V4 memories.
  const std::string settled = UniqueId("eval:run:backup:settled");
  std::vector<std::string> settled_words;
  for (int i = 0; i < 20; ++i) {
    settled_words.push_back(UniqueWord());
    json body = AddBody(UniqueId("eval:run:backup:add"), settled, "eval:run:backup:s1",
                        json::array({Message("Note " + std::to_string(i) + " about the word " +
                                                 settled_words.back() + " and the garden.",
                                             1704067200000 + i * 60000)}));
    ASSERT_TRUE(IsAddSuccess(client.Post(kAddPath, body), body));
  }
  const std::string memory_user = UniqueId("u");
  for (int i = 0; i < 5; ++i) {
    json event = AddMemoriesAndWait(
        client,
        {{"messages", "The deploy checklist item " + std::to_string(i) + " is " + UniqueWord()},
         {"user_id", memory_user},
         {"infer", false}});
    ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
  }

  // Adds keep coming while the backup runs.
  const std::string busy = UniqueId("eval:run:backup:busy");
  std::mutex mu;
  std::vector<std::string> acked_words;  // guarded by mu
  std::string writer_error;              // guarded by mu
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      const std::string word = UniqueWord();
      json body = AddBody(UniqueId("eval:run:backup:add"), busy, "eval:run:backup:s2",
                          json::array({Message("Busy entry with the word " + word + ".",
                                               1704067200000 + i * 1000)}));
      HttpResponse resp = client.Post(kAddPath, body);
      std::lock_guard<std::mutex> lock(mu);
      if (!IsAddSuccess(resp, body)) {
        writer_error = resp.Describe();
        return;
      }
      acked_words.push_back(word);
    }
  });
  auto acked_count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return acked_words.size();
  };
  while (acked_count() < 20 && !stop) std::this_thread::yield();

  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  size_t acked_before;
  {
    std::lock_guard<std::mutex> lock(mu);
    acked_before = acked_words.size();
  }
  const std::string backup_dir = scratch.path + "/backup";
  CommandResult backup = RunEngram("backup --data-dir " + original.data_dir() + " " + backup_dir);
  const size_t acked_after_backup = acked_count();
  stop = true;
  writer.join();
  ASSERT_EQ(backup.exit_code, 0) << backup.output;
  EXPECT_NE(backup.output.find("backed up"), std::string::npos) << backup.output;
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_TRUE(writer_error.empty()) << writer_error;
  }
  EXPECT_GT(acked_after_backup, acked_before) << "no add was acknowledged while the backup ran";

  // A restore refuses a data directory in use, then fills an empty one.
  CommandResult refused = RunEngram("restore --data-dir " + original.data_dir() + " " + backup_dir);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("not empty"), std::string::npos) << refused.output;
  const std::string restored_dir = scratch.path + "/restored";
  CommandResult restore = RunEngram("restore --data-dir " + restored_dir + " " + backup_dir);
  ASSERT_EQ(restore.exit_code, 0) << restore.output;

  ServerProcess copy({.data_dir = restored_dir});
  ASSERT_TRUE(copy.Start());
  HttpClient copy_client(copy.BaseUrl());

  // Every add acknowledged before the backup began, exactly once.
  std::vector<std::string> words;
  {
    std::lock_guard<std::mutex> lock(mu);
    words.assign(acked_words.begin(), acked_words.begin() + static_cast<long>(acked_before));
  }
  for (const std::string& w : words) {
    EXPECT_EQ(CountOccurrences(SearchData(copy_client, busy, w), w), 1) << "acknowledged add " << w;
  }
  // The data that did not change: the same answers, item for item.
  for (const std::string& w : settled_words) {
    EXPECT_EQ(SearchData(copy_client, settled, w), SearchData(client, settled, w)) << w;
  }
  EXPECT_EQ(SearchData(copy_client, settled, "garden note", 100),
            SearchData(client, settled, "garden note", 100));
  const std::string list = MemoryPrefix() + "/memories?user_id=" + memory_user;
  HttpResponse original_list = client.Get(list), copy_list = copy_client.Get(list);
  ASSERT_EQ(copy_list.status, 200) << copy_list.Describe();
  json a = original_list.Json(), b = copy_list.Json();
  a.erase("request_id");
  b.erase("request_id");
  a.erase("latency");
  b.erase("latency");
  EXPECT_EQ(b, a);
  const json query = {{"query", "deploy checklist item"}, {"user_id", memory_user}};
  EXPECT_EQ(SearchMemories(copy_client, query), SearchMemories(client, query));
}

}  // namespace
}  // namespace engram::testing
