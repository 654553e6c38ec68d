// LlmExtractor::Reconcile: the decisions the model returns for each fact against the similar
// memories shown to it, and the malformed answers it refuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "extract/llm_extractor.h"
#include "extract/llm_extractor_test_support.h"

namespace engram {
namespace {

using json = nlohmann::json;
using testing::Completion;
using testing::ExpectMalformed;
using testing::FakeLlm;
using testing::JsonCompletion;
using testing::kSecret;
using testing::MakeExtractor;
using testing::SystemPrompt;
using testing::TestOptions;
using testing::UserPayload;

std::vector<FactCandidates> ThreeFacts() {
  return {
      {"User likes green tea",
       {{"m-aaaa", "User likes tea", 0.9f}, {"m-bbbb", "User lives in Paris", 0.2f}}},
      {"User lives in Oslo",
       {{"m-bbbb", "User lives in Paris", 0.8f}, {"m-cccc", "User visited Oslo in 2019", 0.6f}}},
      {"User has a dog named Rex", {}},
  };
}

TEST(LlmExtractorTest, ReconcileMapsTemporaryIdsBackAndOrdersByFact) {
  FakeLlm fake([](const json&, int) {
    // Out of order, with one id as a digit string and one event in lower case: all tolerated.
    return JsonCompletion(
        {{"decisions",
          {{{"fact", 2}, {"event", "ADD"}, {"id", nullptr}, {"text", "User has a dog named Rex"}},
           {{"fact", 1}, {"event", "update"}, {"id", "1"}, {"text", "User lives in Oslo"}},
           {{"fact", 0}, {"event", "UPDATE"}, {"id", 0}, {"text", "User likes green tea"}}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto decisions = extractor->Reconcile(ThreeFacts());
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 3u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kUpdate);
  EXPECT_EQ((*decisions)[0].memory_id, "m-aaaa");
  EXPECT_EQ((*decisions)[0].text, "User likes green tea");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kUpdate);
  EXPECT_EQ((*decisions)[1].memory_id, "m-bbbb");
  EXPECT_EQ((*decisions)[1].text, "User lives in Oslo");
  EXPECT_EQ((*decisions)[2].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[2].memory_id, "");
  EXPECT_EQ((*decisions)[2].text, "User has a dog named Rex");

  ASSERT_EQ(fake.requests(), 1);
  std::string system = SystemPrompt(fake.body(0));
  EXPECT_EQ(system.rfind("Task: engram.reconcile_memories.v1\n", 0), 0u);
  EXPECT_NE(system.find("JSON"), std::string::npos);
  EXPECT_EQ(fake.body(0)["response_format"], json({{"type", "json_object"}}));
  // Distinct memories, round-robin by rank, numbered from 0; no real id is shown.
  json payload = UserPayload(fake.body(0));
  EXPECT_EQ(payload["memories"], json({{{"id", 0}, {"text", "User likes tea"}},
                                       {{"id", 1}, {"text", "User lives in Paris"}},
                                       {{"id", 2}, {"text", "User visited Oslo in 2019"}}}));
  EXPECT_EQ(payload["facts"], json({{{"index", 0}, {"text", "User likes green tea"}},
                                    {{"index", 1}, {"text", "User lives in Oslo"}},
                                    {{"index", 2}, {"text", "User has a dog named Rex"}}}));
  EXPECT_EQ(fake.body(0).dump().find("m-aaaa"), std::string::npos);
}

TEST(LlmExtractorTest, ReconcileDeleteAndNoneCarryIdsButNoText) {
  FakeLlm fake([](const json&, int) {
    return JsonCompletion({{"decisions",
                            {{{"fact", 0}, {"event", "DELETE"}, {"id", 1}, {"text", "ignored"}},
                             {{"fact", 1}, {"event", "NONE"}, {"id", 2.0}},
                             {{"fact", 2}, {"event", "ADD"}, {"id", 0}, {"text", "Rex"}}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto decisions = extractor->Reconcile(ThreeFacts());
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 3u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kDelete);
  EXPECT_EQ((*decisions)[0].memory_id, "m-bbbb");
  EXPECT_EQ((*decisions)[0].text, "");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kNone);
  EXPECT_EQ((*decisions)[1].memory_id, "m-cccc");
  EXPECT_EQ((*decisions)[1].text, "");
  EXPECT_EQ((*decisions)[2].action, MemoryAction::kAdd);  // the id on an ADD is ignored
  EXPECT_EQ((*decisions)[2].memory_id, "");
  EXPECT_EQ((*decisions)[2].text, "Rex");
}

TEST(LlmExtractorTest, ReconcileWithoutExistingMemoriesAddsEveryDistinctFactWithoutACall) {
  FakeLlm fake([](const json&, int) { return Completion("unused"); });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto decisions = extractor->Reconcile(
      {{"User likes tea", {}}, {" user likes TEA ", {}}, {"User has a cat", {}}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[0].text, "User likes tea");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[1].text, "User has a cat");
  EXPECT_EQ(fake.requests(), 0);

  auto empty = extractor->Reconcile({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(fake.requests(), 0);
}

TEST(LlmExtractorTest, ReconcileSendsDuplicateFactsOnce) {
  FakeLlm fake([](const json& body, int) {
    json facts = UserPayload(body)["facts"];
    json decisions = json::array();
    for (const json& f : facts) {
      decisions.push_back({{"fact", f["index"]}, {"event", "NONE"}, {"id", 0}});
    }
    return JsonCompletion({{"decisions", decisions}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  std::vector<SimilarMemory> similar = {{"m-1", "User likes tea", 0.99f}};
  auto decisions = extractor->Reconcile(
      {{"User likes tea", similar}, {"User likes tea", similar}, {"User likes coffee", similar}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].memory_id, "m-1");
  EXPECT_EQ((*decisions)[1].memory_id, "m-1");
  EXPECT_EQ(UserPayload(fake.body(0))["facts"].size(), 2u);
  EXPECT_EQ(UserPayload(fake.body(0))["memories"].size(), 1u);
}

TEST(LlmExtractorTest, ReconcileChangesAMemoryAtMostOnce) {
  FakeLlm fake([](const json&, int) {
    return JsonCompletion({{"decisions",
                            {{{"fact", 0}, {"event", "UPDATE"}, {"id", 0}, {"text", "A2"}},
                             {{"fact", 1}, {"event", "UPDATE"}, {"id", 0}, {"text", "A3"}},
                             {{"fact", 2}, {"event", "DELETE"}, {"id", 0}}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  std::vector<SimilarMemory> similar = {{"m-a", "A", 0.9f}};
  auto decisions =
      extractor->Reconcile({{"fact one", similar}, {"fact two", similar}, {"fact three", similar}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 3u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kUpdate);
  EXPECT_EQ((*decisions)[0].memory_id, "m-a");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kAdd);  // second UPDATE of m-a
  EXPECT_EQ((*decisions)[1].memory_id, "");
  EXPECT_EQ((*decisions)[1].text, "A3");
  EXPECT_EQ((*decisions)[2].action, MemoryAction::kNone);  // DELETE after the UPDATE
  EXPECT_EQ((*decisions)[2].memory_id, "m-a");
}

TEST(LlmExtractorTest, ReconcileShowsAtMostMaxExistingMemoriesRoundRobin) {
  FakeLlm fake([](const json& body, int) {
    json decisions = json::array();
    json payload = UserPayload(body);
    for (const json& f : payload["facts"]) {
      decisions.push_back({{"fact", f["index"]}, {"event", "NONE"}, {"id", f["index"]}});
    }
    return JsonCompletion({{"decisions", decisions}});
  });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.max_existing_memories = 2;
  auto extractor = MakeExtractor(o);
  auto decisions =
      extractor->Reconcile({{"f0", {{"m-a", "a", 0.9f}, {"m-b", "b", 0.8f}, {"m-c", "c", 0.7f}}},
                            {"f1", {{"m-d", "d", 0.5f}, {"m-e", "e", 0.4f}}}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  EXPECT_EQ(UserPayload(fake.body(0))["memories"],
            json({{{"id", 0}, {"text", "a"}}, {{"id", 1}, {"text", "d"}}}));
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].memory_id, "m-a");
  EXPECT_EQ((*decisions)[1].memory_id, "m-d");
}

TEST(LlmExtractorTest, MalformedReconcileOutputIsAnError) {
  const std::string s = kSecret;
  auto add = [&](int fact) {
    return json{{"fact", fact}, {"event", "ADD"}, {"id", nullptr}, {"text", s}};
  };
  const std::vector<std::pair<json, std::string>> cases = {
      // Hallucinated ids: a real-looking UUID, a number past the list, a negative number.
      {{{"decisions",
         {{{"fact", 0}, {"event", "UPDATE"}, {"id", "m-3f2a9c1e-" + s}, {"text", s}},
          add(1),
          add(2)}}},
       "decision for fact 0 names an unknown memory id"},
      {{{"decisions", {add(0), {{"fact", 1}, {"event", "NONE"}, {"id", 3}}, add(2)}}},
       "decision for fact 1 names unknown memory id 3"},
      {{{"decisions", {add(0), add(1), {{"fact", 2}, {"event", "DELETE"}, {"id", -1}}}}},
       "decision for fact 2 names unknown memory id -1"},
      // Missing pieces.
      {{{"decisions", {{{"fact", 0}, {"event", "ADD"}}, add(1), add(2)}}},
       "decision for fact 0 has no \"text\""},
      {{{"decisions",
         {{{"fact", 0}, {"event", "UPDATE"}, {"id", 0}, {"text", " "}}, add(1), add(2)}}},
       "decision for fact 0 has an empty \"text\""},
      {{{"decisions", {{{"fact", 0}, {"event", "UPDATE"}, {"text", s}}, add(1), add(2)}}},
       "decision for fact 0 has no memory \"id\""},
      {{{"decisions", {{{"fact", 0}, {"event", "NONE"}, {"id", nullptr}}, add(1), add(2)}}},
       "decision for fact 0 has no memory \"id\""},
      {{{"decisions", {{{"fact", 0}, {"event", "MERGE"}, {"id", 0}, {"text", s}}, add(1), add(2)}}},
       "decision for fact 0 has no valid \"event\""},
      {{{"decisions", {{{"fact", 0}, {"id", 0}}, add(1), add(2)}}},
       "decision for fact 0 has no valid \"event\""},
      // Facts missing, repeated or out of range.
      {{{"decisions", {add(0), add(1)}}}, "expected 3 decisions, got 2"},
      {{{"decisions", {add(0), add(1), add(1)}}}, "decision 2 repeats fact 1"},
      {{{"decisions", {add(0), add(1), add(3)}}}, "decision 2 names fact 3, out of range"},
      {{{"decisions", {add(0), add(1), {{"event", "ADD"}, {"text", s}}}}},
       "decision 2 has no integer \"fact\" index"},
      {{{"decisions", {add(0), add(1), s}}}, "decision 2 is not an object"},
      // Wrong shapes.
      {{{"memory", {add(0), add(1), add(2)}}}, "no \"decisions\" array"},
      {json::array({add(0), add(1), add(2)}), "not a JSON object"},
  };
  for (const auto& [answer, what] : cases) {
    FakeLlm fake([&answer = answer](const json&, int) { return JsonCompletion(answer); });
    auto extractor = MakeExtractor(TestOptions(fake.base_url()));
    auto decisions = extractor->Reconcile(ThreeFacts());
    ASSERT_FALSE(decisions.ok()) << answer.dump();
    ExpectMalformed(decisions.status(), "reconcile", what, answer.dump());
    EXPECT_EQ(fake.requests(), 1);
  }

  FakeLlm not_json([&](const json&, int) { return Completion("ADD " + s); });
  auto extractor = MakeExtractor(TestOptions(not_json.base_url()));
  auto decisions = extractor->Reconcile(ThreeFacts());
  ASSERT_FALSE(decisions.ok());
  ExpectMalformed(decisions.status(), "reconcile", "not valid JSON", "not json");
}

TEST(LlmExtractorTest, ReconcileRejectsEmptyFacts) {
  auto extractor = MakeExtractor(TestOptions("http://127.0.0.1:1/v1"));
  auto decisions = extractor->Reconcile({{"User likes tea", {}}, {"  ", {}}});
  ASSERT_FALSE(decisions.ok());
  EXPECT_EQ(decisions.status().code(), StatusCode::kInvalidParameter);
}

}  // namespace
}  // namespace engram
