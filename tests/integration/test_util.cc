#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <random>

#include "common/codec.h"
#include "common/ids.h"

namespace engram::testing {

CommandResult RunEngram(const std::string& args) {
  CommandResult result;
  const std::string command = *EngramBinary() + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/engram-it-XXXXXX";
  path = ::mkdtemp(tmpl) ? tmpl : "";
}

TempDir::~TempDir() {
  std::error_code ignored;
  if (!path.empty()) std::filesystem::remove_all(path, ignored);
}

std::unique_ptr<ServerProcess> SharedServerTest::server_;
std::unique_ptr<HttpClient> SharedServerTest::client_;
std::string SharedServerTest::start_error_;

void SharedServerTest::SetUp() {
  ENGRAM_REQUIRE_BINARY();
  ASSERT_TRUE(start_error_.empty()) << "suite server failed to start earlier:\n" << start_error_;
  if (server_ && !server_->running()) server_.reset();  // a test of the suite stopped it
  if (!server_) {
    auto server = std::make_unique<ServerProcess>(Options());
    ::testing::AssertionResult started = server->Start();
    if (!started) {
      start_error_ = started.message();
      FAIL() << start_error_;
    }
    client_ = std::make_unique<HttpClient>(server->BaseUrl());
    server_ = std::move(server);
  }
}

void SharedServerTest::TearDownTestSuite() {
  if (server_) {
    ExitInfo info = server_->Stop();
    EXPECT_TRUE(info.exited) << "server did not exit within 10 s of SIGTERM";
    if (info.exited) {
      EXPECT_FALSE(info.signaled) << "server died of signal " << info.signal << "\n"
                                  << server_->Output();
      EXPECT_EQ(info.exit_code, 0) << "server exit code after SIGTERM\n" << server_->Output();
    }
  }
  server_.reset();
  client_.reset();
  start_error_.clear();
}

std::string UniqueId(std::string_view prefix) { return std::string(prefix) + ":" + NewUuid(); }

std::string UniqueWorkspace(std::string_view prefix) {
  return std::string(prefix) + "-" + NewUuid();
}

std::string UniqueWord() {
  static constexpr char kLetters[] = "bcdfghjklmnpqrtvwxz";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(0, sizeof kLetters - 2);
  std::string w = "q";
  for (int i = 0; i < 11; ++i) w.push_back(kLetters[pick(rng)]);
  return w;
}

nlohmann::json Message(nlohmann::json content, std::optional<int64_t> timestamp_ms,
                       std::string_view role) {
  nlohmann::json m = {{"role", role}, {"content", std::move(content)}};
  if (timestamp_ms) m["timestamp"] = *timestamp_ms;
  return m;
}

nlohmann::json AddBody(std::string_view request_id, std::string_view user_id,
                       std::string_view session_id, nlohmann::json messages) {
  return {{"request_id", request_id},
          {"messages", std::move(messages)},
          {"user_id", user_id},
          {"session_id", session_id}};
}

nlohmann::json SearchBody(std::string_view user_id, nlohmann::json query, int top_k) {
  return {{"query", std::move(query)}, {"user_id", user_id}, {"top_k", top_k}};
}

nlohmann::json SearchData(const HttpClient& client, std::string_view user_id,
                          std::string_view query, int top_k) {
  HttpResponse resp = client.Post(kSearchPath, SearchBody(user_id, query, top_k));
  if (resp.status != 200) {
    ADD_FAILURE() << "search " << query << " for " << user_id << ": " << resp.Describe();
    return nlohmann::json::array();
  }
  nlohmann::json j = resp.Json();
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) {
    ADD_FAILURE() << "search answer has no data array: " << resp.Describe();
    return nlohmann::json::array();
  }
  return j["data"];
}

std::string ContentText(const nlohmann::json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const auto& part : content) {
    if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
        part["text"].is_string()) {
      if (!out.empty()) out += "\n";
      out += part["text"].get<std::string>();
    }
  }
  return out;
}

int CountContaining(const nlohmann::json& data, std::string_view needle) {
  int n = 0;
  for (const auto& item : data) {
    if (item.is_object() && item.contains("content") &&
        ContentText(item["content"]).find(needle) != std::string::npos) {
      ++n;
    }
  }
  return n;
}

int CountOccurrences(const nlohmann::json& data, std::string_view needle) {
  int n = 0;
  for (const auto& item : data) {
    if (!item.is_object() || !item.contains("content")) continue;
    const std::string text = ContentText(item["content"]);
    for (size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + needle.size())) {
      ++n;
    }
  }
  return n;
}

::testing::AssertionResult HealthIs(const HttpClient& client, bool healthy) {
  HttpResponse z = client.Get("/healthz");
  HttpResponse v3 = client.Get("/v3/openapi/workspaces/default/memory/agentic-memory/health");
  const int code = healthy ? 200 : 503;
  const std::string word = healthy ? "\"healthy\"" : "\"unhealthy\"";
  if (z.status != code || v3.status != code || v3.body.find(word) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "healthz " << z.status << ", V3 health " << v3.status << " " << v3.body;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsJsonResponse(const HttpResponse& resp) {
  if (resp.status == 0) return ::testing::AssertionFailure() << "no response: " << resp.error;
  if (resp.Header("x-request-id").empty()) {
    return ::testing::AssertionFailure() << "missing X-Request-Id header; " << resp.Describe();
  }
  std::string ct = resp.Header("content-type");
  std::transform(ct.begin(), ct.end(), ct.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ct.rfind("application/json", 0) != 0) {
    return ::testing::AssertionFailure() << "Content-Type is '" << resp.Header("content-type")
                                         << "', want application/json; " << resp.Describe();
  }
  if (resp.Json().is_discarded())
    return ::testing::AssertionFailure() << "body is not JSON; " << resp.Describe();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult HasFieldTypes(
    const nlohmann::json& obj,
    std::initializer_list<std::pair<std::string_view, JsonType>> fields) {
  if (!obj.is_object()) return ::testing::AssertionFailure() << "not an object: " << obj.dump();
  for (const auto& [name, type] : fields) {
    auto it = obj.find(std::string(name));
    if (it == obj.end()) {
      return ::testing::AssertionFailure() << "field " << name << " missing: " << obj.dump();
    }
    bool ok = false;
    const char* want = "";
    switch (type) {
      case JsonType::kString:
        ok = it->is_string(), want = "a string";
        break;
      case JsonType::kNumber:
        ok = it->is_number(), want = "a number";
        break;
      case JsonType::kInteger:
        ok = it->is_number_integer(), want = "an integer";
        break;
      case JsonType::kBoolean:
        ok = it->is_boolean(), want = "a boolean";
        break;
      case JsonType::kArray:
        ok = it->is_array(), want = "an array";
        break;
      case JsonType::kObject:
        ok = it->is_object(), want = "an object";
        break;
    }
    if (!ok) {
      return ::testing::AssertionFailure()
             << "field " << name << " must be " << want << ", got " << it->dump();
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsAddSuccess(const HttpResponse& resp, const nlohmann::json& body) {
  if (resp.status != 200) return ::testing::AssertionFailure() << "add: " << resp.Describe();
  if (auto r = IsJsonResponse(resp); !r) return r;
  if (auto r = HasFieldTypes(resp.Json(), {{"success", JsonType::kBoolean},
                                           {"request_id", JsonType::kString},
                                           {"user_id", JsonType::kString},
                                           {"session_id", JsonType::kString}});
      !r) {
    return r;
  }
  nlohmann::json want = {{"success", true},
                         {"request_id", body.at("request_id")},
                         {"user_id", body.at("user_id")},
                         {"session_id", body.at("session_id")}};
  nlohmann::json got = resp.Json();
  if (got != want)
    return ::testing::AssertionFailure() << "add answer " << got.dump() << ", want " << want.dump();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsError(const HttpResponse& resp, int status, std::string_view code,
                                   std::string_view field) {
  if (resp.status != status) {
    return ::testing::AssertionFailure() << "status " << resp.status << ", want " << status << " "
                                         << code << "; " << resp.Describe();
  }
  if (auto r = IsJsonResponse(resp); !r) return r;
  nlohmann::json j = resp.Json();
  if (!j.is_object())
    return ::testing::AssertionFailure() << "error body not an object: " << resp.Describe();
  for (const char* key : {"request_id", "latency", "code", "http_code", "message"}) {
    if (!j.contains(key))
      return ::testing::AssertionFailure() << "error envelope lacks '" << key << "': " << resp.body;
  }
  if (j.size() != 5)
    return ::testing::AssertionFailure() << "error envelope has extra keys: " << resp.body;
  if (!j["request_id"].is_string() || j["request_id"].get<std::string>().empty()) {
    return ::testing::AssertionFailure() << "request_id not a non-empty string: " << resp.body;
  }
  if (j["request_id"].get<std::string>() != resp.Header("x-request-id")) {
    return ::testing::AssertionFailure()
           << "request_id " << j["request_id"] << " differs from X-Request-Id "
           << resp.Header("x-request-id");
  }
  if (!j["latency"].is_number() || j["latency"].get<double>() < 0) {
    return ::testing::AssertionFailure() << "latency not a non-negative number: " << resp.body;
  }
  if (j["code"] != code)
    return ::testing::AssertionFailure()
           << "code " << j["code"] << ", want " << code << ": " << resp.body;
  if (!j["http_code"].is_number_integer() || j["http_code"].get<int>() != status) {
    return ::testing::AssertionFailure() << "http_code " << j["http_code"] << ", want " << status;
  }
  if (!j["message"].is_string() || j["message"].get<std::string>().empty()) {
    return ::testing::AssertionFailure() << "message not a non-empty string: " << resp.body;
  }
  if (!field.empty()) {
    std::string msg = j["message"].get<std::string>();
    std::string f(field);
    auto lower = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      return s;
    };
    if (lower(msg).find(lower(f)) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message '" << msg << "' does not name '" << field << "'";
    }
  }
  return ::testing::AssertionSuccess();
}

std::string TinyPngBytes() { return *Base64Decode(kTinyPngBase64); }

nlohmann::json ImagePart(const std::string& bytes) {
  return {{"type", "image_url"},
          {"image_url", {{"url", "data:image/png;base64," + Base64Encode(bytes)}}}};
}

}  // namespace engram::testing
