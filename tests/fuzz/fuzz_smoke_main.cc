// Runs the fuzz target over a seed corpus and deterministic mutations of it (byte flips, splices,
// truncations, bracket storms), so every CI run exercises the parsers with hostile input even
// without clang/libFuzzer. A crash or an escaped exception fails the test.
//
// Usage: fuzz_smoke_test [corpus dir or file ...]. With no argument the seeds are the request
// bodies below (for request_parsers_fuzz.cc); otherwise every file named or found in the folders.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The files named on the command line and those in the folders named there, in path order.
std::vector<std::string> CorpusSeeds(int argc, char** argv) {
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) paths.push_back(entry.path());
      }
    } else {
      paths.push_back(arg);
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> seeds;
  for (const auto& path : paths) seeds.push_back(ReadFile(path));
  return seeds;
}

std::vector<std::string> Seeds() {
  const std::string png =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJg"
      "gg==";
  return {
      R"({"request_id":"r1","user_id":"u","session_id":"s","messages":[{"role":"user","timestamp":1704067200000,"content":"hello world"}]})",
      R"({"request_id":"r2","user_id":"u","session_id":"s","messages":[{"role":"assistant","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,)" +
          png + R"("}}]}]})",
      R"({"request_id":"r3","user_id":"u","session_id":"s","messages":[{"role":"user","content":[{"type":"image","image":")" +
          png + R"("}]}]})",
      R"({"query":"when did we meet?","user_id":"u","top_k":100,"options":["A. May","B. June"]})",
      R"({"query":[{"type":"text","text":"q"}],"user_id":"u"})",
      R"({"messages":[{"role":"user","content":"I love tea"}],"user_id":"u","metadata":{"a":1},"infer":false,"timestamp":"2024-05-01T10:00:00Z","expiration_date":"2030-01-01"})",
      R"({"query":"tea","user_id":"u","top_k":5,"threshold":0.2,"filters":{"AND":[{"metadata.a":{"gte":1}},{"OR":[{"run_id":{"in":["r1","r2"]}},{"NOT":{"keywords":{"icontains":"Tea"}}}]},{"created_at":{"lt":"2030-01-01"}}]}})",
      R"({"text":"new text","metadata":{"b":[1,2]}})",
      R"({"messages":"I like tea","user_id":"u","app_id":"a","custom_categories":[{"drinks":"what the user drinks"}],"custom_instructions":"only food","async_mode":false})",
      R"({"query":"tea","filters":{"AND":[{"user_id":"u"},{"categories":{"in":["food"]}}]},"fields":["memory"],"output_format":"v1.1","start_date":"2024-01-01"})",
      R"({"memories":[{"memory_id":"m-1","text":"x"},{"memory_id":"m-2","text":"y"}],"memory_id":"m-1","feedback":"NEGATIVE","feedback_reason":"old"})",
      "user_id=a%20b&page_size=10&page_number=2",
      "2024-01-02T03:04:05.123456+02:00",
      "between August 11th and 15 of Sept 2023, 2024-02-29, December 2023",
      "getUserName snake_case src/index/bm25.cc std::vector 我喜欢喝咖啡 ＡＢＣ",
      "Caroline: Hey Mel! I met Melanie Smith at the Bank of America.\nMel's sister saw Dr. "
      "Watson in Zoë's café; call `flush()` then parse_config. JUST DO IT, Mell.",
      "[[[[{\"a\":[1,2,{\"b\":null}]}]]]]",
      R"({"ranking": [3, 0, 29, 7]})",
  };
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> seeds = argc > 1 ? CorpusSeeds(argc, argv) : Seeds();
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz smoke: no seeds found\n");
    return 1;
  }
  std::mt19937 rng(20261130);
  const char kSpecial[] = "{}[]\":,\\\xff\xc3\x00 0-9eE.+/=";
  size_t runs = 0;
  for (const std::string& seed : seeds) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
    ++runs;
    for (int i = 0; i < 4000; ++i) {
      std::string s = seed;
      int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t at = rng() % s.size();
        switch (rng() % 6) {
          case 0:
            s[at] = static_cast<char>(rng());
            break;
          case 1:
            s[at] = kSpecial[rng() % (sizeof(kSpecial) - 1)];
            break;
          case 2:
            s.erase(at, 1 + rng() % 8);
            break;
          case 3:
            s.insert(at, s.substr(rng() % s.size(), rng() % 16));
            break;
          case 4:
            s.resize(at);
            break;
          case 5:
            s.insert(at, std::string(1 + rng() % 300, (rng() & 1) ? '[' : '{'));
            break;
        }
      }
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
      ++runs;
    }
  }
  std::printf("fuzz smoke: %zu inputs, no crash\n", runs);
  return 0;
}
