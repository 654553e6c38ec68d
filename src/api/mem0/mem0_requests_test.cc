// mem0 request parsing: both client generations' bodies, the filters they build, and refusals
// that name the field or the missing feature.
#include "api/mem0/mem0_requests.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

using json = nlohmann::json;

FilterDoc Doc(std::string_view user, std::string_view agent = "", std::string_view app = "") {
  FilterDoc d;
  d.id = "m-1";
  d.user_id = user;
  d.agent_id = agent;
  d.app_id = app;
  d.text = "likes tea";
  return d;
}

TEST(Mem0RequestsTest, AddReadsEveryEntityAndOption) {
  auto add = ParseMem0Add(json::parse(R"({"messages": [{"role": "user", "content": "I like tea"}],
      "user_id": "u", "app_id": "shop", "metadata": {"k": 1}, "infer": false,
      "timestamp": 1700000000, "expiration_date": "2030-01-31", "async_mode": false,
      "custom_categories": [{"drinks": "what the user drinks"}], "version": "v2",
      "output_format": "v1.1", "org_id": "o", "project_id": "p"})"),
                          "ws", {}, false);
  ASSERT_TRUE(add.ok()) << add.status().ToString();
  EXPECT_EQ(add->request.workspace, "ws");
  EXPECT_EQ(add->request.user_id, "u");
  EXPECT_EQ(add->request.app_id, "shop");
  EXPECT_FALSE(add->request.infer);
  EXPECT_FALSE(add->async_mode);
  EXPECT_EQ(add->request.timestamp_us, 1700000000LL * 1000000);
  ASSERT_TRUE(add->request.expires_at_us.has_value());
  ASSERT_EQ(add->request.custom_categories.size(), 1u);
  EXPECT_EQ(add->request.custom_categories[0].name, "drinks");
  EXPECT_EQ(add->request.messages.size(), 1u);
}

TEST(Mem0RequestsTest, AddTakesAPlainStringAsOneMessage) {
  auto add = ParseMem0Add(json{{"messages", "I like tea"}, {"agent_id", "a"}}, "ws", {}, false);
  ASSERT_TRUE(add.ok()) << add.status().ToString();
  ASSERT_EQ(add->request.messages.size(), 1u);
  EXPECT_TRUE(add->request.infer);
  EXPECT_TRUE(add->async_mode);
}

TEST(Mem0RequestsTest, AddRefusals) {
  auto code = [](const json& body, bool llm = false) {
    return ParseMem0Add(body, "ws", {}, llm).status().code();
  };
  const json msg = json::array({json{{"role", "user"}, {"content", "hi there"}}});
  EXPECT_EQ(code(json{{"messages", msg}}), StatusCode::kInvalidParameter);  // no entity
  EXPECT_EQ(code(json{{"messages", msg}, {"user_id", 5}}), StatusCode::kInvalidParameter);
  EXPECT_EQ(code(json{{"messages", msg}, {"user_id", "u"}, {"infer", "yes"}}),
            StatusCode::kInvalidParameter);
  EXPECT_EQ(code(json{{"messages", msg}, {"user_id", "u"}, {"enable_graph", true}}),
            StatusCode::kNotImplemented);
  EXPECT_EQ(code(json{{"messages", msg}, {"user_id", "u"}, {"immutable", true}}),
            StatusCode::kNotImplemented);
  EXPECT_TRUE(ParseMem0Add(json{{"messages", msg}, {"user_id", "u"}, {"enable_graph", false}}, "ws",
                           {}, false)
                  .ok());
  // Instructions need an extractor that can follow them.
  const json with_instructions = {
      {"messages", msg}, {"user_id", "u"}, {"custom_instructions", "only food"}};
  auto refused = ParseMem0Add(with_instructions, "ws", {}, false);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(refused.status().message().find("custom_instructions"), std::string::npos);
  auto taken = ParseMem0Add(with_instructions, "ws", {}, true);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->request.custom_instructions, "only food");
  // Without inference nothing is extracted: instructions are accepted and steer nothing.
  json verbatim = with_instructions;
  verbatim["infer"] = false;
  auto stored = ParseMem0Add(verbatim, "ws", {}, false);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  EXPECT_TRUE(stored->request.custom_instructions.empty());
  // Categories: one {name: description} pair each, names unique.
  EXPECT_EQ(code(json{{"messages", msg},
                      {"user_id", "u"},
                      {"custom_categories", json::array({json{{"a", "x"}, {"b", "y"}}})}}),
            StatusCode::kInvalidParameter);
  EXPECT_EQ(code(json{{"messages", msg},
                      {"user_id", "u"},
                      {"custom_categories", json::array({json{{"a", "x"}}, json{{"a", "y"}}})}}),
            StatusCode::kInvalidParameter);
}

TEST(Mem0RequestsTest, SearchCombinesFiltersTopLevelIdsAndCategories) {
  auto s = ParseMem0Search(json::parse(R"({"query": "tea", "filters": {"OR": [
      {"user_id": "u"}, {"agent_id": "a"}]}, "top_k": 5, "threshold": 0.2,
      "fields": ["memory", "score"], "rerank": true, "keyword_search": false})"),
                           "ws", {}, true);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->request.top_k, 5u);
  EXPECT_FLOAT_EQ(s->request.threshold, 0.2f);
  EXPECT_TRUE(s->results_object);
  EXPECT_EQ(s->fields, (std::vector<std::string>{"memory", "score"}));
  EXPECT_TRUE(s->request.filter.Matches(Doc("u")));
  EXPECT_TRUE(s->request.filter.Matches(Doc("x", "a")));
  EXPECT_FALSE(s->request.filter.Matches(Doc("x", "b")));

  // 2.x: top-level ids AND the filters; a top-level "*" is that literal id, not a wildcard.
  auto v2 = ParseMem0Search(json{{"query", "tea"}, {"user_id", "*"}}, "ws", {}, false);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_FALSE(v2->results_object);
  EXPECT_FALSE(v2->request.filter.Matches(Doc("u")));
  EXPECT_TRUE(v2->request.filter.Matches(Doc("*")));

  auto apps =
      ParseMem0Search(json{{"query", "tea"}, {"filters", {{"app_id", "shop"}}}}, "ws", {}, true);
  ASSERT_TRUE(apps.ok()) << apps.status().ToString();
  EXPECT_TRUE(apps->request.filter.Matches(Doc("", "", "shop")));
  EXPECT_FALSE(apps->request.filter.Matches(Doc("", "", "other")));

  // reference_date: "now" for the query's relative dates.
  auto dated = ParseMem0Search(
      json{{"query", "tea last week"}, {"user_id", "u"}, {"reference_date", "2024-05-08"}}, "ws",
      {}, false);
  ASSERT_TRUE(dated.ok()) << dated.status().ToString();
  EXPECT_EQ(dated->request.reference_us, 19851LL * 86400 * 1000000);  // 2024-05-08T00:00:00Z
}

TEST(Mem0RequestsTest, SearchRefusals) {
  auto status = [](const json& body) { return ParseMem0Search(body, "ws", {}, true).status(); };
  EXPECT_EQ(status(json{{"query", "tea"}}).code(), StatusCode::kInvalidParameter);  // no entity
  EXPECT_EQ(status(json{{"query", "tea"}, {"filters", {{"user_id", "*"}}}}).code(),
            StatusCode::kInvalidParameter);  // every user: not confined
  Status bad_field = status(json{{"query", "tea"}, {"filters", {{"colour", "red"}}}});
  EXPECT_EQ(bad_field.code(), StatusCode::kInvalidParameter);
  EXPECT_NE(bad_field.message().find("filters.colour"), std::string::npos) << bad_field.message();
  EXPECT_EQ(status(json{{"query", "tea"}, {"user_id", "u"}, {"top_k", 0}}).code(),
            StatusCode::kInvalidParameter);
  EXPECT_EQ(status(json{{"query", "tea"}, {"user_id", "u"}, {"threshold", 2}}).code(),
            StatusCode::kInvalidParameter);
  EXPECT_EQ(status(json{{"query", "tea"}, {"user_id", "u"}, {"fields", {"password"}}}).code(),
            StatusCode::kInvalidParameter);
  // The refusal names every field it would take, those mem0 clients send included.
  const Status unknown_field =
      status(json{{"query", "tea"}, {"user_id", "u"}, {"fields", {"password"}}});
  for (const char* name : {"fields[0]", "expiration_date", "organization_id", "project_id"}) {
    EXPECT_NE(unknown_field.message().find(name), std::string::npos) << unknown_field.message();
  }
  EXPECT_EQ(status(json{{"query", "tea"}, {"user_id", "u"}, {"show_expired", true}}).code(),
            StatusCode::kNotImplemented);
  EXPECT_EQ(status(json{{"user_id", "u"}}).code(), StatusCode::kInvalidParameter);  // no query
  Status bad_date = status(json{{"query", "tea"}, {"user_id", "u"}, {"reference_date", "soon"}});
  EXPECT_EQ(bad_date.code(), StatusCode::kInvalidParameter);
  EXPECT_NE(bad_date.message().find("reference_date"), std::string::npos) << bad_date.message();
}

TEST(Mem0RequestsTest, ListBodyAndQueryFilters) {
  auto f = ParseMem0ListBody(json{{"filters", {{"user_id", "u"}}},
                                  {"start_date", "2024-01-01"},
                                  {"end_date", "2030-01-01"}},
                             {});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  FilterDoc d = Doc("u");
  d.created_at_us = 1735689600LL * 1000000;  // 2025-01-01
  EXPECT_TRUE(f->Matches(d));
  d.created_at_us = 1600000000LL * 1000000;  // 2020
  EXPECT_FALSE(f->Matches(d));
  EXPECT_EQ(
      ParseMem0ListBody(json{{"start_date", "yesterday"}, {"user_id", "u"}}, {}).status().code(),
      StatusCode::kInvalidParameter);
  // A date alone as end_date keeps its whole day (UTC); a date-time is an instant.
  auto through = ParseMem0ListBody(json{{"user_id", "u"}, {"end_date", "2025-01-01"}}, {});
  ASSERT_TRUE(through.ok()) << through.status().ToString();
  d.created_at_us = (1735689600LL + 86399) * 1000000 + 999999;  // 2025-01-01T23:59:59.999999Z
  EXPECT_TRUE(through->Matches(d));
  d.created_at_us = (1735689600LL + 86400) * 1000000;  // 2025-01-02T00:00:00Z
  EXPECT_FALSE(through->Matches(d));
  EXPECT_TRUE(ParseMem0ListBody(json{{"user_id", "u"}, {"end_date", "9999-12-31"}}, {}).ok());
  auto instant =
      ParseMem0ListBody(json{{"user_id", "u"}, {"end_date", "2025-01-01T12:00:00Z"}}, {});
  ASSERT_TRUE(instant.ok()) << instant.status().ToString();
  d.created_at_us = (1735689600LL + 12 * 3600) * 1000000;
  EXPECT_TRUE(instant->Matches(d));
  d.created_at_us += 1;
  EXPECT_FALSE(instant->Matches(d));
  // Listing expired memories is refused as searching them is, naming the option.
  Status expired = ParseMem0ListBody(json{{"user_id", "u"}, {"show_expired", true}}, {}).status();
  EXPECT_EQ(expired.code(), StatusCode::kNotImplemented);
  EXPECT_NE(expired.message().find("show_expired"), std::string::npos);
  EXPECT_TRUE(ParseMem0ListBody(json{{"user_id", "u"}, {"show_expired", false}}, {}).ok());
  EXPECT_EQ(ParseMem0ListBody(json::object(), {}).status().code(), StatusCode::kInvalidParameter);

  auto q = Mem0EntityFilterFromQuery({{"agent_id", "a"}, {"org_id", "o"}}, {});
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->Matches(Doc("", "a")));
  EXPECT_FALSE(q->Matches(Doc("", "b")));
  EXPECT_EQ(Mem0EntityFilterFromQuery({{"org_id", "o"}}, {}).status().code(),
            StatusCode::kInvalidParameter);
}

TEST(Mem0RequestsTest, UpdateBatchFeedbackAndEntityTypes) {
  auto u = ParseMem0Update(json{{"text", "likes coffee"}, {"expiration_date", "2031-02-03"}}, "ws",
                           "m-1", {});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->text, "likes coffee");
  EXPECT_TRUE(u->expires_at_us.has_value());
  EXPECT_EQ(ParseMem0Update(json::object(), "ws", "m-1", {}).status().code(),
            StatusCode::kInvalidParameter);
  EXPECT_EQ(ParseMem0Update(json{{"text", 5}}, "ws", "m-1", {}).status().code(),
            StatusCode::kInvalidParameter);

  auto batch = ParseMem0Batch(
      json::parse(
          R"({"memories": [{"memory_id": "a", "text": "x"}, {"memory_id": "b", "text": "y"}]})"),
      true, 10, {});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->size(), 2u);
  EXPECT_EQ(ParseMem0Batch(json::parse(R"({"memories": [{"memory_id": "a"}]})"), true, 10, {})
                .status()
                .code(),
            StatusCode::kInvalidParameter);  // update without text
  EXPECT_EQ(ParseMem0Batch(json::parse(R"({"memories": [{"memory_id": "a"}, {"memory_id": "a"}]})"),
                           false, 10, {})
                .status()
                .code(),
            StatusCode::kInvalidParameter);  // twice
  EXPECT_EQ(ParseMem0Batch(json::parse(R"({"memories": []})"), false, 10, {}).status().code(),
            StatusCode::kInvalidParameter);

  auto fb = ParseMem0Feedback(json{{"memory_id", "m-1"}, {"feedback", "NEGATIVE"}}, {});
  ASSERT_TRUE(fb.ok());
  EXPECT_EQ(fb->feedback, "NEGATIVE");
  EXPECT_TRUE(ParseMem0Feedback(json{{"memory_id", "m-1"}, {"feedback", nullptr}}, {}).ok());
  EXPECT_EQ(ParseMem0Feedback(json{{"memory_id", "m-1"}, {"feedback", "MEH"}}, {}).status().code(),
            StatusCode::kInvalidParameter);

  EXPECT_EQ(*Mem0EntityField("user"), "user_id");
  EXPECT_EQ(*Mem0EntityField("apps"), "app_id");
  EXPECT_EQ(Mem0EntityField("org").status().code(), StatusCode::kInvalidParameter);
}

}  // namespace
}  // namespace engram
