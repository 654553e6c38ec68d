// Runs every case file of tests/contract/cases (see contract_case.h) against a fresh
// `engram serve` process each: one test per file, named after its path. The server runs with the
// references' own API key (`your-API-KEY`), so their cURL commands are sent as published; only
// the URL's scheme and host are replaced by the test server's.
//
// An `example` step's command must appear verbatim in one of the reference documents
// (ENGRAM_REFERENCE_DIR, by default the `shared/reference` folder beside the checkout); when they
// are absent that check is skipped and said so, the requests still run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/codec.h"
#include "contract_case.h"
#include "http_client.h"
#include "openapi_lookup.h"
#include "server_process.h"
#include "zip_writer.h"

namespace engram::contract {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpResponse;
using testing::ServerOptions;
using testing::ServerProcess;

constexpr const char* kApiKey = "your-API-KEY";

fs::path ContractDir() { return fs::path(ENGRAM_TEST_SOURCE_DIR) / "tests" / "contract"; }

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> CaseFiles() {
  std::vector<std::string> out;
  const fs::path root = ContractDir() / "cases";
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.path().extension() == ".test") {
      out.push_back(fs::relative(e.path(), root).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The reference documents' text, or empty when they are not beside the checkout.
const std::vector<std::string>& References() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> out;
    const char* env = std::getenv("ENGRAM_REFERENCE_DIR");
    const fs::path dir = env != nullptr
                             ? fs::path(env)
                             : fs::path(ENGRAM_TEST_SOURCE_DIR) / ".." / "shared" / "reference";
    if (!fs::is_directory(dir)) return out;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file()) out.push_back(ReadFile(e.path()));
    }
    return out;
  }();
  return texts;
}

bool InAReference(const std::string& text) {
  for (const std::string& r : References()) {
    if (r.find(text) != std::string::npos) return true;
  }
  return false;
}

// The files of a fixture folder, zipped and base64-encoded.
std::string ZipBase64(const fs::path& dir) {
  std::vector<testing::ZipEntry> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      files.push_back({fs::relative(e.path(), dir).generic_string(), ReadFile(e.path())});
    }
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return Base64Encode(testing::MakeZip(files));
}

// A case file's steps with its includes' steps first (each include's own includes before it).
bool LoadSteps(const fs::path& file, std::vector<std::pair<std::string, Step>>& out, int depth) {
  std::string error;
  auto parsed = ParseCaseFile(ReadFile(file), &error);
  if (!parsed) {
    ADD_FAILURE() << file.string() << ": " << error;
    return false;
  }
  if (depth > 8) {
    ADD_FAILURE() << file.string() << ": includes nest too deep";
    return false;
  }
  for (const std::string& inc : parsed->includes) {
    if (!LoadSteps(ContractDir() / "cases" / inc, out, depth + 1)) return false;
  }
  const std::string name = fs::relative(file, ContractDir() / "cases").string();
  for (Step& s : parsed->steps) out.emplace_back(name, std::move(s));
  return true;
}

// src/api/openapi.json, read once.
const json& Document() {
  static const json doc = testing::LoadOpenApiDocument();
  return doc;
}

class ContractTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ContractTest, Case) {
  if (!testing::EngramBinary()) GTEST_SKIP() << testing::MissingBinaryMessage();
  std::vector<std::pair<std::string, Step>> steps;
  ASSERT_TRUE(LoadSteps(ContractDir() / "cases" / GetParam(), steps, 0));
  if (References().empty()) {
    std::cout << "[ contract ] reference documents not found: verbatim checks skipped\n";
  }

  ASSERT_TRUE(Document().is_object()) << "src/api/openapi.json is not JSON";
  ServerOptions options;
  options.extra_args = {"--api-key", kApiKey, "--import-dir",
                        (ContractDir() / "fixtures" / "import").string()};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());

  Bindings bindings;
  for (const auto& [file, step] : steps) {
    SCOPED_TRACE(file + ":" + std::to_string(step.line));
    std::string error;
    if (!References().empty() && step.kind == StepKind::kExample) {
      EXPECT_TRUE(InAReference(step.curl)) << "the example is not in a reference verbatim";
    }
    std::string command = step.curl;
    for (const Fill& f : step.fills) {
      ASSERT_EQ(f.how, "zip-base64") << "unknown fill";
      ASSERT_NE(command.find(f.placeholder), std::string::npos) << f.placeholder;
      command.replace(command.find(f.placeholder), f.placeholder.size(),
                      ZipBase64(ContractDir() / "fixtures" / f.source));
    }
    auto as_written = ParseCurl(command, &error);
    ASSERT_TRUE(as_written) << error;
    if (!References().empty() && step.kind == StepKind::kExampleData) {
      ASSERT_TRUE(as_written->data.has_value()) << "example-data without --data";
      EXPECT_TRUE(InAReference(*as_written->data)) << "the payload is not in a reference verbatim";
    }
    auto request = ParseCurl(Substitute(command, bindings), &error);
    ASSERT_TRUE(request) << error;
    testing::Headers headers;
    for (const auto& [k, v] : request->headers) headers[k] = v;
    // What curl sends with --data and no type of its own.
    if (request->data && !headers.count("Content-Type") && !headers.count("content-type")) {
      headers["Content-Type"] = "application/x-www-form-urlencoded";
    }
    HttpResponse resp;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (true) {
      resp = client.Request(request->method, request->target, request->data.value_or(""), headers);
      if (!step.expect.until_path) break;
      if (ValueAt(resp.Json(), *step.expect.until_path) == step.expect.until_value) break;
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(resp.status, step.expect.status)
        << request->method << " " << request->target << ": " << resp.Describe();
    for (const std::string& h : step.expect.headers) {
      EXPECT_FALSE(resp.Header(h).empty()) << "missing header " << h;
    }
    // Every answer the cases get is one the document describes for the operation, so clients'
    // generated code can read it.
    if (const json* operation =
            testing::DocumentedOperation(Document(), request->method, request->target);
        operation == nullptr) {
      ADD_FAILURE() << request->method << " " << request->target << " is not documented";
    } else {
      const Status documented = testing::CheckDocumentedAnswer(
          Document(), *operation, resp.status, resp.Header("content-type"), resp.body);
      EXPECT_TRUE(documented.ok())
          << request->method << " " << request->target << " answered " << resp.status
          << " unlike its document: " << documented.message()
          << "\nanswer: " << resp.body.substr(0, 2000);
    }
    if (step.expect.body) {
      const json body = resp.Json();
      ASSERT_FALSE(body.is_discarded()) << resp.Describe();
      std::string why;
      ASSERT_TRUE(MatchBody(step.expect, body, bindings, &why))
          << why << "\nanswer: " << resp.body.substr(0, 2000);
    }
  }
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);  // without ".test"
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, ContractTest, ::testing::ValuesIn(CaseFiles()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ContractTest);

}  // namespace
}  // namespace engram::contract
