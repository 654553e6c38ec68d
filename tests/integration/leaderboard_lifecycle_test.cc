// The Leaderboard contract beyond Add/Search against a real server (docs/leaderboard.md): the
// health probe, empty messages, Retry-After, per-user idempotency, deleting a user (with no
// readable copy left in the data directory), retention and idempotency expiry.
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

constexpr int64_t kJan1 = 1704067200000;  // 2024-01-01T00:00:00Z, Unix ms
const Headers kAuth = {{"Authorization", "Bearer lk1"}};

// 0.00003 days = 2.592 s: the settings take fractions of a day, so tests run in seconds.
constexpr const char* kSecondsAsDays = "0.00003";
constexpr auto kPeriod = std::chrono::milliseconds(2592);

class LeaderboardLifecycleTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    // One turn per result, so that each returned message can be checked on its own.
    o.extra_args = {"--api-key", "lk1", "--leaderboard-results", "turns"};
    return o;
  }
  HttpResponse Add(const json& body) { return client().Post(kAddPath, body, kAuth); }
  json Search(const std::string& user, const std::string& query) {
    HttpResponse r = client().Post(kSearchPath, SearchBody(user, query, 100), kAuth);
    EXPECT_EQ(r.status, 200) << r.Describe();
    json j = r.Json();
    return j.is_object() && j["data"].is_array() ? j["data"] : json::array();
  }
};

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Files under `dir` that contain `needle`.
std::vector<std::string> FilesContaining(const std::string& dir, const std::string& needle) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && ReadAll(e.path()).find(needle) != std::string::npos) {
      found.push_back(e.path().string());
    }
  }
  return found;
}

// Clients compare the whole body with {"status":"ok"}; the version is a header.
TEST_F(LeaderboardLifecycleTest, HealthNeedsNoKeyAndIsExactlyStatusOk) {
  HttpResponse resp = client().Get("/leaderboard/health");
  ASSERT_EQ(resp.status, 200) << resp.Describe();
  EXPECT_TRUE(IsJsonResponse(resp));
  EXPECT_EQ(resp.Json(), json({{"status", "ok"}})) << resp.body;
  EXPECT_FALSE(resp.Header("x-engram-version").empty());
  // HEAD, as probes send it: the same status and length, no body.
  HttpResponse head = client().Request("HEAD", "/leaderboard/health", {}, {});
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Header("content-length"), std::to_string(resp.body.size()));
  EXPECT_TRUE(head.body.empty());
  // The other Leaderboard routes still need the key.
  EXPECT_EQ(client().Post(kSearchPath, SearchBody("u", "x")).status, 401);
}

// chattr +i makes the database file read-only even for root (chmod does not), so
// CheckWritable's access(W_OK) fails as it would on a read-only mount.
bool SetImmutable(const std::string& path, bool on) {
  std::string cmd = std::string("chattr ") + (on ? "+i" : "-i") + " '" + path + "' 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

TEST_F(LeaderboardLifecycleTest, HealthIs503WithRetryAfterWhenTheStoreIsReadOnly) {
  const std::string db = server().data_dir() + "/engram.db";
  const bool root = geteuid() == 0;
  if (root ? !SetImmutable(db, true) : chmod(db.c_str(), 0444) != 0) {
    GTEST_SKIP() << "cannot make the database file read-only here";
  }
  HttpResponse resp = client().Get("/leaderboard/health");
  HttpResponse healthz = client().Get("/healthz");
  if (root) {
    SetImmutable(db, false);
  } else {
    chmod(db.c_str(), 0644);
  }
  ASSERT_EQ(resp.status, 503) << resp.Describe();
  EXPECT_EQ(resp.Json().value("status", ""), "unavailable");
  EXPECT_EQ(resp.Header("retry-after"), "1");
  EXPECT_EQ(healthz.status, 503);
  EXPECT_EQ(healthz.Header("retry-after"), "1") << "every 503 carries Retry-After";
  EXPECT_EQ(client().Get("/leaderboard/health").status, 200) << "writable again";
}

TEST_F(LeaderboardLifecycleTest, EmptyAndBlankMessagesAreAcceptedAndNeverReturned) {
  const std::string user = UniqueId("eval:run:longmemeval:q");
  const std::string word = UniqueWord();
  json body = AddBody(
      UniqueId("eval:run:lme:chunk"), user, "s",
      json::array({Message("I keep my " + word + " in the garage.", kJan1),
                   Message("", kJan1 + 1, "assistant"), Message("   \n\t", kJan1 + 2),
                   Message(json::array(), kJan1 + 3, "ASSISTANT"),
                   Message(json::array({{{"type", "text"}, {"text", " "}}}), kJan1 + 4, "User"),
                   Message("The " + word + " is blue.", kJan1 + 5, "Assistant")}));
  HttpResponse add = Add(body);
  ASSERT_TRUE(IsAddSuccess(add, body));
  json data = Search(user, word + " garage blue");
  EXPECT_EQ(data.size(), 2u) << data.dump();
  for (const auto& item : data) {
    std::string text = ContentText(item["content"]);
    EXPECT_NE(text.find(word), std::string::npos) << "an empty message was returned: " << text;
  }
  // A chunk of nothing but empty messages succeeds too, and its retry answers the same.
  json empty = AddBody(UniqueId("eval:run:lme:chunk"), user, "s",
                       json::array({Message(""), Message(" ", std::nullopt, "assistant")}));
  ASSERT_TRUE(IsAddSuccess(Add(empty), empty));
  ASSERT_TRUE(IsAddSuccess(Add(empty), empty));
}

TEST_F(LeaderboardLifecycleTest, TwoUsersWithTheSameRequestIdAreBothStored) {
  const std::string request_id = UniqueId("eval:run:shared:chunk-0");
  const std::string word = UniqueWord();
  const std::string a = UniqueId("user-a"), b = UniqueId("user-b");
  json body_a = AddBody(request_id, a, "s", json::array({Message("alpha " + word)}));
  json body_b = AddBody(request_id, b, "s", json::array({Message("beta " + word)}));
  ASSERT_TRUE(IsAddSuccess(Add(body_a), body_a));
  ASSERT_TRUE(IsAddSuccess(Add(body_b), body_b)) << "user B may reuse user A's request_id";
  EXPECT_EQ(CountContaining(Search(a, word), "alpha"), 1);
  EXPECT_EQ(CountContaining(Search(b, word), "beta"), 1);
}

TEST_F(LeaderboardLifecycleTest, DeleteUserRemovesEverythingAndLeavesNoCopyOnDisk) {
  const std::string user = UniqueId("eval:run:locomo:conv-del");
  const std::string other = UniqueId("eval:run:locomo:conv-keep");
  const std::string marker = "mkr" + UniqueWord() + UniqueWord();
  for (int chunk = 0; chunk < 5; ++chunk) {
    json messages = json::array();
    for (int i = 0; i < 20; ++i) {
      messages.push_back(Message("secret " + marker + " number " + std::to_string(i) + " " +
                                     std::string(i == 0 ? 5000 : 40, 'z'),
                                 kJan1 + i));
    }
    messages.push_back(Message(
        json::array({{{"type", "text"}, {"text", marker + " photo"}}, ImagePart(TinyPngBytes())})));
    json body = AddBody(UniqueId("eval:run:del:chunk"), user, "s", messages);
    ASSERT_TRUE(IsAddSuccess(Add(body), body));
  }
  json keep = AddBody(UniqueId("eval:run:keep"), other, "s",
                      json::array({Message("unrelated " + UniqueWord())}));
  ASSERT_TRUE(IsAddSuccess(Add(keep), keep));
  ASSERT_FALSE(Search(user, marker).empty());

  const std::string path = "/leaderboard/users/" + user;
  EXPECT_EQ(client().Delete(path).status, 401) << "deletion needs the key";
  HttpResponse del = client().Delete(path, kAuth);
  ASSERT_EQ(del.status, 200) << del.Describe();
  json j = del.Json();
  EXPECT_TRUE(HasFieldTypes(j, {{"success", JsonType::kBoolean},
                                {"user_id", JsonType::kString},
                                {"deleted", JsonType::kObject}}));
  EXPECT_EQ(j["success"], true);
  EXPECT_EQ(j["user_id"], user);
  EXPECT_EQ(j["deleted"]["messages"], 105);
  EXPECT_EQ(j["deleted"]["images"], 1);

  EXPECT_TRUE(Search(user, marker).empty());
  EXPECT_EQ(Search(other, "unrelated").size(), 1u) << "other users are untouched";
  // The deletion truncated the WAL itself; no copy is left in any file of the data directory.
  EXPECT_EQ(FilesContaining(server().data_dir(), marker), std::vector<std::string>{});

  // Idempotent: success with zero counts.
  HttpResponse again = client().Delete(path, kAuth);
  ASSERT_EQ(again.status, 200) << again.Describe();
  EXPECT_EQ(again.Json()["deleted"]["messages"], 0);
  EXPECT_EQ(again.Json()["deleted"]["images"], 0);
  // Percent-encoded ids name the same user.
  std::string encoded = "/leaderboard/users/";
  for (char c : user) encoded += c == ':' ? std::string("%3A") : std::string(1, c);
  EXPECT_EQ(client().Delete(encoded, kAuth).status, 200);
}

// Add accepts a user id holding '/', so delete must reach it: the path is routed before its
// segments are decoded, and %2F stays inside the id.
TEST_F(LeaderboardLifecycleTest, AUserIdWithASlashCanBeDeleted) {
  const std::string user = "team/" + UniqueWord();
  const std::string word = UniqueWord();
  json body = AddBody(UniqueId("r"), user, "s", json::array({Message("slashed " + word)}));
  ASSERT_TRUE(IsAddSuccess(Add(body), body));
  ASSERT_EQ(Search(user, word).size(), 1u);
  std::string encoded = "/leaderboard/users/team%2F" + user.substr(5);
  HttpResponse del = client().Delete(encoded, kAuth);
  ASSERT_EQ(del.status, 200) << del.Describe();
  EXPECT_EQ(del.Json()["user_id"], user);
  EXPECT_EQ(del.Json()["deleted"]["messages"], 1);
  EXPECT_TRUE(Search(user, word).empty());
}

// A server with retention and idempotency TTL of about 2.6 s (fractions of a day).
class LeaderboardExpiryTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    o.extra_args = {"--leaderboard-retention-days", kSecondsAsDays,
                    "--leaderboard-idempotency-ttl-days", kSecondsAsDays};
    return o;
  }
};

TEST_F(LeaderboardExpiryTest, RetentionPurgesIdleUsersAndCountsThem) {
  const std::string user = UniqueId("eval:run:retained");
  const std::string word = UniqueWord();
  json body = AddBody(UniqueId("r"), user, "s", json::array({Message("kept for a while " + word)}));
  ASSERT_TRUE(IsAddSuccess(client().Post(kAddPath, body), body));
  ASSERT_EQ(SearchData(client(), user, word).size(), 1u);
  // Idle past the retention, then one sweep (every ~1 s).
  const auto deadline = std::chrono::steady_clock::now() + kPeriod + std::chrono::seconds(10);
  json data;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    data = SearchData(client(), user, word);
  } while (!data.empty() && std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(data.empty()) << "the idle user was not purged: " << data.dump();
  std::string metrics = client().Get("/metrics").body;
  EXPECT_EQ(metrics.find("engram_leaderboard_purged_users_total 0\n"), std::string::npos);
  EXPECT_NE(metrics.find("engram_leaderboard_purged_users_total "), std::string::npos) << metrics;
}

TEST_F(LeaderboardExpiryTest, AnExpiredRequestIdIsNoLongerAConflict) {
  const std::string request_id = UniqueId("eval:run:ttl:chunk-0");
  const std::string user = UniqueId("eval:run:ttl");
  json first = AddBody(request_id, user, "s", json::array({Message("first " + UniqueWord())}));
  json second = AddBody(request_id, user, "s", json::array({Message("second " + UniqueWord())}));
  ASSERT_TRUE(IsAddSuccess(client().Post(kAddPath, first), first));
  EXPECT_TRUE(IsError(client().Post(kAddPath, second), 409, "Conflict"));
  const auto deadline = std::chrono::steady_clock::now() + kPeriod + std::chrono::seconds(10);
  HttpResponse resp;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    resp = client().Post(kAddPath, second);
  } while (resp.status == 409 && std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(IsAddSuccess(resp, second)) << "the record should have expired";
  EXPECT_NE(client().Get("/metrics").body.find("engram_leaderboard_idempotency_expired_total"),
            std::string::npos);
}

}  // namespace
}  // namespace engram::testing
