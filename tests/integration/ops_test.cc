// Operator endpoints (/healthz, V3 health, /metrics, /openapi.json) and slow-client resistance
// (docs/api/README.md, Common + sections 1 Health and 3).
#include <atomic>
#include <cstdio>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

constexpr std::string_view kV3Health =
    "/v3/openapi/workspaces/default/memory/agentic-memory/health";

class OpsTest : public SharedServerTest {};

TEST_F(OpsTest, Healthz) {
  HttpResponse resp = client().Get("/healthz");
  ASSERT_EQ(resp.status, 200) << resp.Describe();
  EXPECT_EQ(resp.body.substr(0, 2), "ok");
  EXPECT_LE(resp.body.size(), 3u) << "body should be `ok`: " << resp.body;
  EXPECT_FALSE(resp.Header("x-request-id").empty()) << "every response carries X-Request-Id";
}

TEST_F(OpsTest, V3Health) {
  HttpResponse resp = client().Get(kV3Health);
  ASSERT_EQ(resp.status, 200) << resp.Describe();
  ASSERT_TRUE(IsJsonResponse(resp));
  json j = resp.Json();
  ASSERT_TRUE(j.is_object()) << resp.body;
  EXPECT_EQ(j.size(), 4u) << resp.body;
  ASSERT_TRUE(j.contains("request_id") && j["request_id"].is_string()) << resp.body;
  EXPECT_EQ(j["request_id"].get<std::string>(), resp.Header("x-request-id"));
  EXPECT_TRUE(j.contains("latency") && j["latency"].is_number()) << resp.body;
  EXPECT_EQ(j.value("status", json()), "OK") << resp.body;
  EXPECT_EQ(j.value("result", json()), json({{"status", "healthy"}})) << resp.body;
}

TEST_F(OpsTest, V3HealthUnknownServiceId) {
  HttpResponse resp = client().Get("/v3/openapi/workspaces/default/memory/other-memory/health");
  EXPECT_TRUE(IsError(resp, 400, "ServiceIdNotExist"));
}

TEST_F(OpsTest, RequestIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 10; ++i)
    ids.insert(client().Post(kSearchPath, SearchBody(UniqueId("u"), "x")).Header("x-request-id"));
  EXPECT_EQ(ids.size(), 10u);
  EXPECT_EQ(ids.count(""), 0u);
}

// A Prometheus sample line: name, label block (without braces) and value.
struct Sample {
  std::string name;
  std::string labels;
  double value = 0;
};

std::vector<Sample> ParseSamples(const std::string& text, std::vector<std::string>* bad_lines) {
  static const std::regex kLine(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?)");
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) {
      bad_lines->push_back(line);
      continue;
    }
    Sample s{m[1], m[3], 0};
    try {
      s.value = std::stod(m[4]);
    } catch (...) {
      std::string v = m[4];
      if (v != "+Inf" && v != "-Inf" && v != "NaN") bad_lines->push_back(line);
    }
    out.push_back(s);
  }
  return out;
}

// True when a label block names the leaderboard search route ("/leaderboard/search",
// "leaderboard_search", ...).
bool IsSearchRoute(const std::string& labels) {
  static const std::regex kRoute(R"re(route="[^"]*leaderboard[/_.]search[^"]*")re");
  return std::regex_search(labels, kRoute);
}

TEST_F(OpsTest, MetricsCountRequestsAndLatencyPerRouteAndStatus) {
  std::string user = UniqueId("user");
  json add = AddBody(UniqueId("eval:run:m"), user, "s", json::array({Message("Metrics probe.")}));
  ASSERT_TRUE(IsAddSuccess(client().Post(kAddPath, add), add));
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(client().Post(kSearchPath, SearchBody(user, "probe")).status, 200);
  ASSERT_EQ(client().Post(kSearchPath, SearchBody(user, "")).status, 400);

  HttpResponse resp = client().Get("/metrics");
  ASSERT_EQ(resp.status, 200) << resp.Describe();
  EXPECT_EQ(resp.Header("content-type").rfind("text/plain", 0), 0u) << resp.Header("content-type");
  std::vector<std::string> bad;
  std::vector<Sample> samples = ParseSamples(resp.body, &bad);
  EXPECT_TRUE(bad.empty()) << "lines not in Prometheus text format: " << bad.front();
  EXPECT_NE(resp.body.find("# TYPE"), std::string::npos);

  // A counter with route and status labels, at least 3 for search/200 and 1 for search/400.
  double search_ok = 0, search_bad = 0;
  bool any_counter = false;
  for (const Sample& s : samples) {
    if (s.name.find("_bucket") != std::string::npos || s.name.find("_sum") != std::string::npos ||
        s.name.find("_count") != std::string::npos) {
      continue;
    }
    if (s.labels.find("route=") == std::string::npos ||
        s.labels.find("status=") == std::string::npos)
      continue;
    any_counter = true;
    if (!IsSearchRoute(s.labels)) continue;
    if (s.labels.find("status=\"200\"") != std::string::npos) search_ok += s.value;
    if (s.labels.find("status=\"400\"") != std::string::npos) search_bad += s.value;
  }
  EXPECT_TRUE(any_counter) << "no request counter labelled route=…,status=…:\n"
                           << resp.body.substr(0, 3000);
  EXPECT_GE(search_ok, 3) << resp.body.substr(0, 3000);
  EXPECT_GE(search_bad, 1) << resp.body.substr(0, 3000);

  // A latency histogram per route (API.md: "latency histograms per route") with le buckets ending
  // in +Inf that count the searches.
  bool bucket_route = false, bucket_inf = false;
  for (const Sample& s : samples) {
    if (s.name.size() < 7 || s.name.compare(s.name.size() - 7, 7, "_bucket") != 0) continue;
    if (!IsSearchRoute(s.labels)) continue;
    bucket_route = true;
    if (s.labels.find("le=\"+Inf\"") != std::string::npos && s.value >= 3) bucket_inf = true;
  }
  EXPECT_TRUE(bucket_route) << "no _bucket{route=\"…leaderboard…search\"…} lines:\n"
                            << resp.body.substr(0, 3000);
  EXPECT_TRUE(bucket_inf) << "no le=\"+Inf\" bucket counting the searches";
}

// The SQLite store's group commit: commits, the writes they carried, a commit-duration histogram
// whose +Inf bucket equals the count, and checkpoints by where they ran.
TEST_F(OpsTest, MetricsShowTheStoreWritePath) {
  auto value = [](const std::vector<Sample>& samples, const std::string& name,
                  const std::string& labels = "") {
    for (const Sample& s : samples)
      if (s.name == name && (labels.empty() || s.labels.find(labels) != std::string::npos))
        return s.value;
    return -1.0;
  };
  std::vector<std::string> bad;
  std::vector<Sample> before = ParseSamples(client().Get("/metrics").body, &bad);
  std::string user = UniqueId("user");
  for (int i = 0; i < 3; ++i) {
    json add = AddBody(UniqueId("eval:run:w"), user, "s", json::array({Message("Write path.")}));
    ASSERT_TRUE(IsAddSuccess(client().Post(kAddPath, add), add));
  }
  HttpResponse resp = client().Get("/metrics");
  ASSERT_EQ(resp.status, 200) << resp.Describe();
  std::vector<Sample> after = ParseSamples(resp.body, &bad);
  EXPECT_TRUE(bad.empty()) << "lines not in Prometheus text format: " << bad.front();
  const double commits = value(after, "engram_store_commits_total");
  ASSERT_GE(commits, 0) << "no engram_store_commits_total:\n" << resp.body.substr(0, 3000);
  EXPECT_GE(commits - value(before, "engram_store_commits_total"), 1);
  EXPECT_GE(value(after, "engram_store_writes_total") - value(before, "engram_store_writes_total"),
            3);
  EXPECT_GE(value(after, "engram_store_writes_total"), commits);
  EXPECT_EQ(value(after, "engram_store_commit_duration_seconds_bucket", "le=\"+Inf\""), commits);
  EXPECT_EQ(value(after, "engram_store_commit_duration_seconds_count"), commits);
  EXPECT_GT(value(after, "engram_store_commit_duration_seconds_sum"), 0);
  EXPECT_GE(value(after, "engram_store_checkpoints_total", "by=\"background\""), 0);
  EXPECT_GE(value(after, "engram_store_checkpoints_total", "by=\"commit\""), 0);
}

TEST_F(OpsTest, OpenApiDocument) {
  HttpResponse resp = client().Get("/openapi.json");
  ASSERT_EQ(resp.status, 200) << resp.Describe();
  ASSERT_TRUE(IsJsonResponse(resp));
  json j = resp.Json();
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j.contains("openapi") && j["openapi"].is_string()) << resp.body.substr(0, 500);
  EXPECT_EQ(j["openapi"].get<std::string>().rfind("3.", 0), 0u) << j["openapi"];
  ASSERT_TRUE(j.contains("paths") && j["paths"].is_object());
  for (const char* path :
       {"/leaderboard/add", "/leaderboard/search", "/healthz", "/metrics",
        "/v4/openapi/workspaces/{workspace_name}/memory/{service_id}/memories/add",
        "/v4/openapi/workspaces/{workspace_name}/memory/{service_id}/memories/search",
        "/v4/openapi/workspaces/{workspace_name}/memory/{service_id}/memories/{memory_id}",
        "/v4/openapi/workspaces/{workspace_name}/memory/{service_id}/events/{event_id}"}) {
    EXPECT_TRUE(j["paths"].contains(path)) << "openapi.json lacks " << path;
  }
  for (const char* path : {"/leaderboard/add", "/leaderboard/search"}) {
    if (j["paths"].contains(path)) {
      EXPECT_TRUE(j["paths"][path].contains("post")) << path << " has no post operation";
    }
  }
}

// One version everywhere: CMake's project version, as `engram version`, /healthz, /openapi.json
// and /metrics report it.
TEST_F(OpsTest, OneVersionEverywhere) {
  const std::string version = ENGRAM_EXPECTED_VERSION;
  HttpResponse health = client().Get("/healthz");
  EXPECT_EQ(health.Header("x-engram-version"), version);
  HttpResponse doc = client().Get("/openapi.json");
  ASSERT_EQ(doc.status, 200);
  EXPECT_EQ(doc.Json()["info"]["version"], version);
  HttpResponse metrics = client().Get("/metrics");
  EXPECT_NE(metrics.body.find("engram_build_info{version=\"" + version + "\",revision=\""),
            std::string::npos);
  const std::string command = *EngramBinary() + " version";
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  char line[512] = {};
  ASSERT_NE(::fgets(line, sizeof(line), out), nullptr);
  ::pclose(out);
  EXPECT_EQ(std::string(line).rfind("engram " + version + " (", 0), 0u) << line;
}

TEST(SlowClientTest, TricklingHeadersDoNotBlockOthers) {
  ENGRAM_REQUIRE_BINARY();
  ServerOptions o;
  o.extra_args = {"--header-timeout-ms", "2000"};
  ServerProcess server(o);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  std::string user = UniqueId("user");
  json add = AddBody(UniqueId("eval:run:slow"), user, "s",
                     json::array({Message("The slow client probe note.")}));
  ASSERT_TRUE(IsAddSuccess(client.Post(kAddPath, add), add));

  constexpr int kSlow = 8;
  const std::string header =
      "POST /leaderboard/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "X-Padding: "
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
  std::vector<RawSocket> sockets(kSlow);
  for (auto& s : sockets) ASSERT_TRUE(s.Connect(server.port()));
  std::atomic<bool> stop{false};
  std::vector<std::atomic<bool>> cut(kSlow);  // set once the server closed that connection
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> tricklers;
  for (int i = 0; i < kSlow; ++i) {
    tricklers.emplace_back([&, i] {
      for (size_t pos = 0; !stop.load(); pos = (pos + 1) % header.size()) {
        if (!sockets[i].Send(std::string_view(header).substr(pos, 1)) ||
            sockets[i].WaitClosed(std::chrono::milliseconds(300))) {
          cut[i].store(true);
          return;
        }
      }
    });
  }

  // Normal searches keep answering quickly while the tricklers hold their connections.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    HttpResponse resp = client.Post(kSearchPath, SearchBody(user, "slow client probe"));
    EXPECT_EQ(resp.status, 200) << resp.Describe();
    EXPECT_LT(resp.seconds, 1.0) << "search " << i << " took " << resp.seconds << " s with "
                                 << kSlow << " slow clients connected";
  }
  // The header deadline (2 s) cuts the tricklers off; allow generous slack.
  auto deadline = start + std::chrono::milliseconds(6000);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_cut = true;
    for (int i = 0; i < kSlow; ++i) all_cut = all_cut && cut[i].load();
    if (all_cut) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop.store(true);
  for (auto& t : tricklers) t.join();
  for (int i = 0; i < kSlow; ++i) {
    EXPECT_TRUE(cut[i].load()) << "slow client " << i
                               << " still connected after 6 s with --header-timeout-ms 2000";
  }
  HttpResponse after = client.Post(kSearchPath, SearchBody(user, "slow client probe"));
  EXPECT_EQ(after.status, 200) << after.Describe();
  EXPECT_LT(after.seconds, 1.0);
}

}  // namespace
}  // namespace engram::testing
