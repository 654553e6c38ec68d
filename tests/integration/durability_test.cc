// Durability: an acknowledged add survives kill -9 exactly once, idempotency survives restarts,
// and SIGTERM shuts down cleanly without losing anything (docs/api/README.md section 2: "only after
// the messages are durably stored (fsynced)").
#include <signal.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

struct SentAdd {
  json body;
  std::vector<std::string> words;  // one unique word per message
};

SentAdd MakeAdd(const std::string& user, int i, int messages) {
  SentAdd a;
  json msgs = json::array();
  for (int j = 0; j < messages; ++j) {
    a.words.push_back(UniqueWord());
    msgs.push_back(Message("Entry " + std::to_string(i) + "." + std::to_string(j) +
                               " records the code word " + a.words.back() + ".",
                           1704067200000 + i * 60000 + j * 1000,
                           j % 2 == 0 ? "user" : "assistant"));
  }
  a.body = AddBody("eval:run:durability:chunk-" + std::to_string(i) + ":" + UniqueWord(), user,
                   "eval:run:durability:session-" + std::to_string(i), std::move(msgs));
  return a;
}

TEST(DurabilityTest, AcknowledgedAddsSurviveKill9ExactlyOnce) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("eval:run:durability:conv");

  constexpr int kAdds = 200;
  constexpr int kKillAfter = 50;
  std::vector<SentAdd> adds;
  for (int i = 0; i < kAdds; ++i) adds.push_back(MakeAdd(user, i, 1 + i % 3));

  std::mutex mu;
  std::vector<int> acked;    // indexes answered success: true (guarded by mu)
  int in_flight = -1;        // the add that got no answer (guarded by mu)
  std::string writer_error;  // first unexpected answer (guarded by mu)
  std::atomic<int> acked_count{0};
  std::atomic<bool> writer_done{false};
  std::thread writer([&] {
    for (int i = 0; i < kAdds; ++i) {
      HttpResponse resp = client.Post(kAddPath, adds[i].body);
      std::lock_guard<std::mutex> lock(mu);
      if (resp.status == 0) {
        in_flight = i;  // the kill cut this one off; stop writing
        break;
      }
      if (!IsAddSuccess(resp, adds[i].body)) {
        writer_error = "add " + std::to_string(i) + ": " + resp.Describe();
        break;
      }
      acked.push_back(i);
      acked_count.fetch_add(1);
    }
    writer_done.store(true);
  });

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (acked_count.load() < kKillAfter && !writer_done.load() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  server.Kill();  // SIGKILL mid-stream
  writer.join();
  ASSERT_TRUE(writer_error.empty()) << writer_error;
  ASSERT_GE(acked.size(), static_cast<size_t>(kKillAfter))
      << "the writer did not reach " << kKillAfter << " acks";
  ASSERT_LT(acked.size(), static_cast<size_t>(kAdds))
      << "the kill came after all adds; nothing was tested";
  std::cout << "[   INFO   ] killed after " << acked.size()
            << " acknowledged adds; in flight: " << in_flight << "\n";

  ASSERT_TRUE(server.Start()) << "restart after kill -9 on the same data dir failed";
  client.set_base_url(server.BaseUrl());

  for (int i : acked) {
    for (const std::string& w : adds[i].words) {
      json data = SearchData(client, user, w);
      EXPECT_EQ(CountOccurrences(data, w), 1)
          << "acknowledged add " << i << " word " << w
          << (CountOccurrences(data, w) == 0 ? " lost" : " duplicated");
    }
  }
  // The add in flight at the kill is all or nothing, and at most once.
  if (in_flight >= 0) {
    int found = 0;
    for (const std::string& w : adds[in_flight].words) {
      int n = CountOccurrences(SearchData(client, user, w), w);
      EXPECT_LE(n, 1) << "in-flight add duplicated";
      found += n;
    }
    EXPECT_TRUE(found == 0 || found == static_cast<int>(adds[in_flight].words.size()))
        << "in-flight add " << in_flight << " partially stored: " << found << " of "
        << adds[in_flight].words.size();
  }

  // The client of the cut-off add retries it: success, and exactly one copy of each message.
  if (in_flight >= 0) {
    EXPECT_TRUE(IsAddSuccess(client.Post(kAddPath, adds[in_flight].body), adds[in_flight].body));
    for (const std::string& w : adds[in_flight].words) {
      EXPECT_EQ(CountOccurrences(SearchData(client, user, w), w), 1)
          << "retried in-flight add " << in_flight;
    }
  }
  // Replaying acknowledged adds after the restart: same answer, nothing new stored.
  for (int i : {acked.front(), acked[acked.size() / 2], acked.back()}) {
    EXPECT_TRUE(IsAddSuccess(client.Post(kAddPath, adds[i].body), adds[i].body))
        << "replay of add " << i;
    for (const std::string& w : adds[i].words) {
      EXPECT_EQ(CountOccurrences(SearchData(client, user, w), w), 1)
          << "replay of add " << i << " stored a copy";
    }
  }
  // And the same request_id with another body is still a conflict after the restart.
  json changed = adds[acked.back()].body;
  changed["messages"][0]["content"] = "Something else entirely " + UniqueWord();
  EXPECT_TRUE(IsError(client.Post(kAddPath, changed), 409, "Conflict"));

  // The store keeps working after recovery.
  SentAdd next = MakeAdd(user, kAdds, 2);
  EXPECT_TRUE(IsAddSuccess(client.Post(kAddPath, next.body), next.body));
  EXPECT_EQ(CountOccurrences(SearchData(client, user, next.words[1]), next.words[1]), 1);
}

TEST(DurabilityTest, ConcurrentWritersSurviveKill9) {
  // Four writers at once (group commit territory); kill -9 after ~60 acknowledgements in total.
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  constexpr int kWriters = 4;
  constexpr int kPerWriter = 60;
  std::vector<std::string> users;
  std::vector<std::vector<SentAdd>> adds(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    users.push_back(UniqueId("eval:run:kill-concurrent:conv"));
    for (int i = 0; i < kPerWriter; ++i)
      adds[w].push_back(MakeAdd(users[w], w * 1000 + i, 1 + i % 3));
  }
  std::vector<std::vector<int>> acked(kWriters);
  std::atomic<int> acked_count{0};
  std::atomic<int> done{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        HttpResponse resp = client.Post(kAddPath, adds[w][i].body);
        if (!IsAddSuccess(resp, adds[w][i].body)) break;
        acked[w].push_back(i);
        acked_count.fetch_add(1);
      }
      done.fetch_add(1);
    });
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (acked_count.load() < 60 && done.load() < kWriters &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  server.Kill();
  for (auto& t : writers) t.join();
  ASSERT_GE(acked_count.load(), 60);
  ASSERT_TRUE(server.Start());
  client.set_base_url(server.BaseUrl());
  for (int w = 0; w < kWriters; ++w) {
    for (int i : acked[w]) {
      for (const std::string& word : adds[w][i].words) {
        EXPECT_EQ(CountOccurrences(SearchData(client, users[w], word), word), 1)
            << "writer " << w << " acknowledged add " << i << " word " << word;
      }
    }
  }
}

TEST(DurabilityTest, SigtermExitsZeroAndKeepsEverything) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("eval:run:sigterm:conv");
  std::vector<SentAdd> adds;
  for (int i = 0; i < 20; ++i) {
    adds.push_back(MakeAdd(user, i, 1 + i % 3));
    ASSERT_TRUE(IsAddSuccess(client.Post(kAddPath, adds.back().body), adds.back().body));
  }

  auto start = std::chrono::steady_clock::now();
  ExitInfo info = server.Stop(std::chrono::seconds(10));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(info.exited) << "no exit within 10 s of SIGTERM\n" << server.Output();
  EXPECT_FALSE(info.signaled) << "died of signal " << info.signal << "\n" << server.Output();
  EXPECT_EQ(info.exit_code, 0) << server.Output();
  EXPECT_LT(seconds, 10.0);

  ASSERT_TRUE(server.Start());
  client.set_base_url(server.BaseUrl());
  for (size_t i = 0; i < adds.size(); ++i) {
    for (const std::string& w : adds[i].words) {
      EXPECT_EQ(CountOccurrences(SearchData(client, user, w), w), 1)
          << "add " << i << " word " << w;
    }
  }
  EXPECT_TRUE(IsAddSuccess(client.Post(kAddPath, adds[0].body), adds[0].body));
  EXPECT_EQ(CountOccurrences(SearchData(client, user, adds[0].words[0]), adds[0].words[0]), 1);
}

TEST(DurabilityTest, SigtermIsPromptAfterALongMessage) {
  // One 512 KiB message (ordinary prose) leaves the server with work it may finish in the
  // background; SIGTERM must still exit within 10 s, and the message must survive the restart.
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("eval:run:sigterm-long:conv");
  const std::string word = UniqueWord();
  std::string prose;
  while (prose.size() < (512 << 10)) {
    prose += "The quick brown fox jumps over the lazy dog near the river bank. ";
  }
  json body = AddBody(UniqueId("eval:run:long"), user, "s",
                      json::array({Message("Long note " + word + ". " + prose, 1704067200000)}));
  ASSERT_TRUE(IsAddSuccess(client.Post(kAddPath, body), body));

  auto start = std::chrono::steady_clock::now();
  ExitInfo info = server.Stop(std::chrono::seconds(10));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(info.exited) << "no exit within 10 s of SIGTERM after one 512 KiB message\n"
                           << server.Output();
  if (info.exited) {
    EXPECT_FALSE(info.signaled) << "died of signal " << info.signal;
    EXPECT_EQ(info.exit_code, 0);
    EXPECT_LT(seconds, 10.0);
  }
  ASSERT_TRUE(server.Start());
  client.set_base_url(server.BaseUrl());
  EXPECT_EQ(CountOccurrences(SearchData(client, user, word), word), 1);
  EXPECT_TRUE(IsAddSuccess(client.Post(kAddPath, body), body));
  server.Kill();  // the restart may have resumed the same background work
}

TEST(DurabilityTest, SigtermDuringWritesLosesNoAcknowledgedAdd) {
  // SIGTERM while a client is writing: requests answered success are kept; the process exits 0.
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("eval:run:sigterm-busy:conv");
  std::vector<SentAdd> adds;
  for (int i = 0; i < 100; ++i) adds.push_back(MakeAdd(user, i, 1 + i % 2));
  std::vector<int> acked;
  std::atomic<int> acked_count{0};
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < static_cast<int>(adds.size()); ++i) {
      HttpResponse resp = client.Post(kAddPath, adds[i].body);
      if (resp.status != 200) break;  // refused or cut during shutdown
      acked.push_back(i);
      acked_count.fetch_add(1);
    }
    done.store(true);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (acked_count.load() < 20 && !done.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  ExitInfo info = server.Stop(std::chrono::seconds(10));
  writer.join();
  ASSERT_TRUE(info.exited) << "no exit within 10 s of SIGTERM under load\n" << server.Output();
  EXPECT_FALSE(info.signaled) << "died of signal " << info.signal;
  EXPECT_EQ(info.exit_code, 0);
  ASSERT_TRUE(server.Start());
  client.set_base_url(server.BaseUrl());
  for (int i : acked) {
    for (const std::string& w : adds[i].words) {
      EXPECT_EQ(CountOccurrences(SearchData(client, user, w), w), 1)
          << "add " << i << " word " << w;
    }
  }
}

}  // namespace
}  // namespace engram::testing
