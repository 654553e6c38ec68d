#include "core/memory_shard.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "common/time_util.h"
#include "core/memory_provenance.h"
#include "core/memory_shard_test_support.h"

namespace engram {
namespace {

using testing::Rec;
using testing::UserFilter;

class MemoryShardTest : public ::testing::Test {
 protected:
  MemoryShardTest() : shard_(&analyzer_, MemoryShardOptions{.vectors = {.dim = 2}}) {}

  std::vector<std::string> Ids(const std::vector<MemoryHit>& hits) {
    std::vector<std::string> out;
    for (const auto& h : hits) out.push_back(h.memory.id);
    return out;
  }
  std::vector<MemoryHit> Search(const std::string& q, const MemoryFilter& f, size_t k = 10) {
    MemoryQuery query{.terms = analyzer_.AnalyzeQuery(q), .filter = &f, .k = k, .now_us = 100};
    auto hits = shard_.Search(query);
    EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    return hits.ok() ? *hits : std::vector<MemoryHit>{};
  }

  Analyzer analyzer_;
  MemoryShard shard_;
};

TEST_F(MemoryShardTest, SearchIsConfinedToTheFilteredScope) {
  shard_.Upsert(Rec(1, "alice", "alice likes green tea"));
  shard_.Upsert(Rec(2, "bob", "bob likes green tea"));
  shard_.Upsert(Rec(3, "alice", "alice owns a bicycle"));
  EXPECT_EQ(Ids(Search("green tea", UserFilter("alice"))), std::vector<std::string>{"m-1"});
  EXPECT_EQ(Ids(Search("green tea", UserFilter("bob"))), std::vector<std::string>{"m-2"});
  for (const auto& h : Search("tea", UserFilter("alice"))) {
    EXPECT_GT(h.score, 0.0f);
    EXPECT_LE(h.score, 1.0f);
  }
  MemoryQuery unscoped{.terms = analyzer_.AnalyzeQuery("tea"), .now_us = 100};
  EXPECT_EQ(shard_.Search(unscoped).status().code(), StatusCode::kInvalidParameter);
}

TEST_F(MemoryShardTest, AppIdIsAScopeOfItsOwn) {
  MemoryRecord shop = Rec(1, "alice", "alice likes green tea");
  shop.app_id = "shop";
  shop.categories = {"food"};
  shard_.Upsert(shop);
  MemoryRecord other = Rec(2, "alice", "alice drinks green tea at work");
  other.app_id = "office";
  shard_.Upsert(other);
  MemoryRecord bare = Rec(3, "", "green tea is popular");
  bare.app_id = "shop";
  shard_.Upsert(bare);
  shard_.Upsert(Rec(4, "bob", "bob likes green tea"));

  MemoryFilter app;
  app.AndEquals("app_id", "shop");
  EXPECT_EQ(Ids(Search("green tea", app)), (std::vector<std::string>{"m-3", "m-1"}));
  app.AndEquals("user_id", "alice");
  EXPECT_EQ(Ids(Search("green tea", app)), std::vector<std::string>{"m-1"});
  auto in = MemoryFilter::Parse(nlohmann::json::parse(R"({"app_id": {"in": ["office", "none"]}})"),
                                "filters", {});
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(Ids(Search("tea", *in)), std::vector<std::string>{"m-2"});
  size_t total = 0;
  auto listed = shard_.List(*in, 100, 0, 10, &total);
  ASSERT_EQ(total, 1u);
  EXPECT_EQ(listed[0].app_id, "office");
  // The shard keeps the app id and categories it was given.
  auto got = shard_.Get("m-1", 100);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->app_id, "shop");
  EXPECT_EQ(got->categories, std::vector<std::string>{"food"});
  EXPECT_EQ(ToRecord(*got).categories, std::vector<std::string>{"food"});
  auto cats = MemoryFilter::Parse(nlohmann::json::parse(R"({"categories": {"contains": "food"}})"),
                                  "filters", {});
  ASSERT_TRUE(cats.ok());
  cats->AndEquals("user_id", "alice");
  EXPECT_EQ(Ids(Search("tea", *cats)), std::vector<std::string>{"m-1"});
}

TEST_F(MemoryShardTest, ScopesSummariseVisibleMemoriesPerId) {
  MemoryRecord a = Rec(1, "alice", "one");
  a.app_id = "shop";
  shard_.Upsert(a);
  MemoryRecord b = Rec(5, "alice", "two");
  b.agent_id = "bot";
  b.updated_at_us = 9;
  shard_.Upsert(b);
  MemoryRecord expired = Rec(7, "carol", "gone");
  expired.expires_at_us = 50;
  shard_.Upsert(expired);
  shard_.Upsert(Rec(8, "dave", "removed"));
  shard_.Remove("m-8");
  std::map<std::string, ScopeSummary> by_key;
  for (ScopeSummary& s : shard_.Scopes(100)) by_key[s.field + "=" + s.value] = s;
  ASSERT_EQ(by_key.size(), 3u);
  EXPECT_EQ(by_key["user_id=alice"].memories, 2u);
  EXPECT_EQ(by_key["user_id=alice"].first_created_at_us, 1);
  EXPECT_EQ(by_key["user_id=alice"].last_updated_at_us, 9);
  EXPECT_EQ(by_key["app_id=shop"].memories, 1u);
  EXPECT_EQ(by_key["agent_id=bot"].memories, 1u);
  EXPECT_EQ(by_key.count("user_id=carol"), 0u);
}

TEST_F(MemoryShardTest, FilterAppliesBeforeTopK) {
  // 50 better matches that the filter rejects must not crowd out the one it accepts.
  for (int i = 1; i <= 50; ++i) {
    shard_.Upsert(Rec(i, "u", "kiwi kiwi kiwi fruit", R"({"kind":"common"})"));
  }
  shard_.Upsert(Rec(51, "u", "kiwi and many other words in a long memory", R"({"kind":"rare"})"));
  auto f = MemoryFilter::Parse(nlohmann::json{{"metadata.kind", "rare"}}, "filters", {});
  ASSERT_TRUE(f.ok());
  f->AndEquals("user_id", "u");
  EXPECT_EQ(Ids(Search("kiwi", *f, 1)), std::vector<std::string>{"m-51"});
}

TEST_F(MemoryShardTest, UpsertReplacesAndRemoveForgets) {
  shard_.Upsert(Rec(1, "u", "the code word is alpha"));
  MemoryRecord changed = Rec(2, "u", "the code word is omega");
  changed.id = "m-1";
  shard_.Upsert(changed);
  EXPECT_TRUE(Search("alpha", UserFilter("u")).empty());
  EXPECT_EQ(Ids(Search("omega", UserFilter("u"))), std::vector<std::string>{"m-1"});
  EXPECT_EQ(shard_.size(), 1u);
  shard_.Remove("m-1");
  EXPECT_TRUE(Search("omega", UserFilter("u")).empty());
  EXPECT_FALSE(shard_.Get("m-1", 100).has_value());
  EXPECT_EQ(shard_.size(), 0u);
}

TEST_F(MemoryShardTest, ApplyRunsItsChangesInOrder) {
  const MemoryRecord a = Rec(1, "u", "the code word is alpha");
  const MemoryRecord b = Rec(2, "u", "the code word is beta");
  MemoryRecord a2 = Rec(3, "u", "the code word is omega");
  a2.id = "m-1";
  const MemoryRecord c = Rec(4, "u", "the code word is gamma");
  const std::string b_id = "m-2", c_id = "m-4", unknown = "m-9";
  // b is inserted then removed, a inserted then replaced, c removed then inserted; an unknown id
  // removes nothing.
  shard_.Apply({{.upsert = &a},
                {.upsert = &b},
                {.remove_id = &c_id},
                {.upsert = &a2},
                {.remove_id = &b_id},
                {.upsert = &c},
                {.remove_id = &unknown}});
  EXPECT_EQ(shard_.size(), 2u);
  EXPECT_TRUE(Search("alpha", UserFilter("u")).empty());
  EXPECT_TRUE(Search("beta", UserFilter("u")).empty());
  EXPECT_FALSE(shard_.Get("m-2", 100).has_value());
  EXPECT_EQ(Ids(Search("omega", UserFilter("u"))), std::vector<std::string>{"m-1"});
  EXPECT_EQ(Ids(Search("gamma", UserFilter("u"))), std::vector<std::string>{"m-4"});
  shard_.Apply({{.remove_id = &a2.id}, {.remove_id = &c_id}});
  EXPECT_EQ(shard_.size(), 0u);
  EXPECT_TRUE(Search("code word", UserFilter("u")).empty());
}

TEST_F(MemoryShardTest, ASearchSeesAllOfAnApplyOrNone) {
  // Two memories enter in one Apply and leave in another, over and over, while a reader
  // searches for both: it never finds exactly one.
  std::atomic<bool> stop{false};
  std::atomic<int> searches{0}, halves{0};
  std::thread reader([&] {
    const MemoryFilter f = UserFilter("u");
    while (!stop.load()) {
      if (Search("paired note", f).size() == 1) halves.fetch_add(1);
      searches.fetch_add(1);
    }
  });
  const std::string a_id = "m-a", b_id = "m-b";
  for (int i = 0; i < 2000 || searches.load() < 200; ++i) {
    MemoryRecord a = Rec(2 * i + 1, "u", "paired note alpha");
    MemoryRecord b = Rec(2 * i + 2, "u", "paired note beta");
    a.id = a_id;
    b.id = b_id;
    shard_.Apply({{.upsert = &a}, {.upsert = &b}});
    shard_.Apply({{.remove_id = &a_id}, {.remove_id = &b_id}});
  }
  stop.store(true);
  reader.join();
  EXPECT_EQ(halves.load(), 0) << "of " << searches.load() << " searches";
}

// Versions of one memory learned in 2020, 2022 and 2024: a query about a year shows the version
// that held then; about a time before the first, or during the current one, the current one.
TEST_F(MemoryShardTest, ReplacedVersionsAnswerForTheirTime) {
  auto version = [](const std::string& text, const std::string& said) {
    MemoryRecord r = Rec(1, "u", text);
    r.provenance_json = R"({"source": "extraction", "messages": [{"index": 0, "role": "user", )"
                        R"("timestamp": ")" +
                        said + R"("}]})";
    return r;
  };
  shard_.Upsert(version("works at the bakery", "2020-05-01T00:00:00Z"));
  shard_.Upsert(version("works at the library", "2022-05-01T00:00:00Z"));
  shard_.Upsert(version("works at the museum", "2024-05-01T00:00:00Z"));
  const MemoryFilter f = UserFilter("u");
  auto shown = [&](std::string year, bool show_replaced = true) {
    const int64_t begin = *ParseIsoToMicros(year + "-01-01T00:00:00Z");
    const int64_t end = *ParseIsoToMicros(std::to_string(std::stoi(year) + 1) + "-01-01T00:00:00Z");
    MemoryQuery q{.terms = analyzer_.AnalyzeQuery("where does the user work"),
                  .filter = &f,
                  .now_us = 100,
                  .dates = TimeRange{begin, end},
                  .show_replaced = show_replaced};
    auto hits = shard_.Search(q);
    EXPECT_TRUE(hits.ok() && hits->size() == 1u);
    return hits.ok() && !hits->empty() ? hits->front().memory : AgentMemory{};
  };
  EXPECT_EQ(shown("2021").text, "works at the bakery");
  EXPECT_EQ(shown("2021").valid_from_us, *ParseIsoToMicros("2020-05-01T00:00:00Z"));
  EXPECT_EQ(shown("2021").valid_to_us, *ParseIsoToMicros("2022-05-01T00:00:00Z"));
  EXPECT_EQ(shown("2022").text, "works at the library");  // it began that year
  EXPECT_EQ(shown("2023").text, "works at the library");
  EXPECT_EQ(shown("2023", /*show_replaced=*/false).text, "works at the museum");
  EXPECT_EQ(shown("2024").text, "works at the museum");
  EXPECT_FALSE(shown("2024").valid_to_us);
  EXPECT_EQ(shown("2019").text, "works at the museum");  // before anything was known
  const std::optional<AgentMemory> current = shard_.Get("m-1", 100);
  ASSERT_TRUE(current);
  EXPECT_EQ(ValidFromUs(*current), *ParseIsoToMicros("2024-05-01T00:00:00Z"));
  // Removed: its versions go with it.
  shard_.Remove("m-1");
  shard_.Upsert(Rec(2, "u", "works at the zoo"));
  EXPECT_EQ(shown("2021").text, "works at the zoo");
}

TEST_F(MemoryShardTest, ExpiredMemoriesAreHidden) {
  MemoryRecord r = Rec(1, "u", "a coupon for pizza");
  r.expires_at_us = 50;
  shard_.Upsert(r);
  EXPECT_TRUE(Search("coupon", UserFilter("u")).empty());
  EXPECT_FALSE(shard_.Get("m-1", 100).has_value());
  EXPECT_TRUE(shard_.Get("m-1", 10).has_value());
  EXPECT_EQ(shard_.Expired(100).size(), 1u);
}

TEST_F(MemoryShardTest, VectorsRankAndMetadataOnlyUpdateKeepsThem) {
  MemoryRecord a = Rec(1, "u", "first memory");
  a.vector = {1.0f, 0.0f};
  a.vector_model = "";
  MemoryRecord b = Rec(2, "u", "second memory");
  b.vector = {0.0f, 1.0f};
  shard_.Upsert(a);
  shard_.Upsert(b);
  MemoryFilter f = UserFilter("u");
  MemoryQuery q{.vector = {0.0f, 1.0f}, .filter = &f, .k = 2, .now_us = 100};
  auto hits = shard_.Search(q);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_EQ((*hits)[0].memory.id, "m-2");
  EXPECT_NEAR((*hits)[0].similarity, 1.0f, 0.02f);
  MemoryRecord meta_only = Rec(2, "u", "second memory", R"({"x":1})");
  shard_.Upsert(meta_only);
  EXPECT_TRUE(shard_.MissingVectors().empty());
  auto again = shard_.Search(q);
  EXPECT_EQ((*again)[0].memory.id, "m-2");
}

TEST_F(MemoryShardTest, ListsNewestFirstWithTotal) {
  for (int i = 1; i <= 5; ++i) shard_.Upsert(Rec(i, "u", "memory " + std::to_string(i)));
  shard_.Upsert(Rec(6, "v", "someone else"));
  size_t total = 0;
  auto page = shard_.List(UserFilter("u"), 100, 1, 2, &total);
  EXPECT_EQ(total, 5u);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].id, "m-4");
  EXPECT_EQ(page[1].id, "m-3");
}

TEST_F(MemoryShardTest, NamedEntitiesOfAScopeOnly) {
  shard_.Upsert(Rec(1, "u", "met Melanie Smith in Boston"));
  shard_.Upsert(Rec(2, "u", "then Melanie painted a lake"));
  MemoryRecord expired = Rec(3, "u", "a call from Oscar");
  expired.expires_at_us = 50;
  shard_.Upsert(expired);
  shard_.Upsert(Rec(4, "v", "v met Melanie and Oscar"));
  shard_.Upsert(Rec(5, "u", "a trip with Gwen"));
  shard_.Remove("m-5");
  const std::vector<CatalogEntity> entities = shard_.NamedEntities(UserFilter("u"), 100);
  ASSERT_EQ(entities.size(), 2u);
  // One conversation per set of scope ids when the memories have no session: linked.
  EXPECT_EQ(entities[0].name, "Melanie Smith");
  EXPECT_EQ(entities[0].aliases, std::vector<std::string>{"Melanie"});
  EXPECT_EQ(entities[0].texts, 2u);
  EXPECT_EQ(entities[0].first_seen_us, 1);
  EXPECT_EQ(entities[0].last_seen_us, 2);
  EXPECT_EQ(entities[1].name, "Boston");
  EXPECT_TRUE(shard_.NamedEntities(UserFilter("nobody"), 100).empty());
}

// A listing keeps what it read of each text (and counts it in the shard's bytes); a new text, a
// metadata-only change and a removal are seen by the next listing.
TEST_F(MemoryShardTest, NamedEntitiesFollowTheTextsTheyWereReadFrom) {
  shard_.Upsert(Rec(1, "u", "moved to Boston with Oscar"));
  shard_.Upsert(Rec(2, "u", "a walk with Oscar by the harbour"));
  auto names = [&] {
    std::set<std::string> out;
    for (const CatalogEntity& e : shard_.NamedEntities(UserFilter("u"), 100)) out.insert(e.name);
    return out;
  };
  const size_t unread = shard_.MemoryBytes();
  EXPECT_EQ(names(), (std::set<std::string>{"Boston", "Oscar"}));
  EXPECT_GT(shard_.MemoryBytes(), unread);
  EXPECT_EQ(names(), (std::set<std::string>{"Boston", "Oscar"}));  // from what was kept
  MemoryRecord moved = Rec(1, "u", "moved to Denver with Oscar");
  shard_.Upsert(moved);
  EXPECT_EQ(names(), (std::set<std::string>{"Denver", "Oscar"}));
  MemoryRecord tagged = moved;
  tagged.metadata_json = R"({"k": 1})";
  shard_.Upsert(tagged);
  EXPECT_EQ(names(), (std::set<std::string>{"Denver", "Oscar"}));
  shard_.Remove("m-1");
  EXPECT_EQ(names(), (std::set<std::string>{"Oscar"}));
  shard_.Remove("m-2");
  EXPECT_TRUE(names().empty());
}

// --- The metadata index (MemoryShardOptions::metadata_index) ---

using json = nlohmann::json;

MemoryFilter MustParse(const json& j) {
  auto f = MemoryFilter::Parse(j, "filters", {});
  EXPECT_TRUE(f.ok()) << j.dump() << ": " << f.status().ToString();
  return f.ok() ? std::move(f).value() : MemoryFilter();
}

std::vector<std::string> ListIds(const MemoryShard& shard, const MemoryFilter& f,
                                 size_t* total = nullptr) {
  size_t n = 0;
  std::vector<std::string> out;
  for (const auto& m : shard.List(f, 100, 0, 100000, &n)) out.push_back(m.id);
  std::sort(out.begin(), out.end());
  if (total != nullptr) *total = n;
  return out;
}

class MetadataIndexTest : public ::testing::Test {
 protected:
  MetadataIndexTest()
      : indexed_(&analyzer_, MemoryShardOptions{.vectors = {.dim = 2}}),
        plain_(&analyzer_, MemoryShardOptions{.vectors = {.dim = 2}, .metadata_index = false}) {}

  void Upsert(const MemoryRecord& r) {
    indexed_.Upsert(r);
    plain_.Upsert(r);
    model_[r.id] = r;
  }
  void Remove(const std::string& id) {
    indexed_.Remove(id);
    plain_.Remove(id);
    model_.erase(id);
  }
  // Ids of the model's visible memories matching `f` by MemoryFilter::Matches, sorted.
  std::vector<std::string> BruteForce(const MemoryFilter& f, int64_t now_us = 100) const {
    std::vector<std::string> out;
    for (const auto& [id, r] : model_) {
      if (r.expires_at_us && now_us >= *r.expires_at_us) continue;
      json metadata = json::parse(r.metadata_json, nullptr, false);
      if (!metadata.is_object()) metadata = json::object();
      FilterDoc doc{.id = r.id,
                    .user_id = r.user_id,
                    .agent_id = r.agent_id,
                    .run_id = r.run_id,
                    .session_id = r.session_id,
                    .text = r.text,
                    .created_at_us = r.created_at_us,
                    .updated_at_us = r.updated_at_us,
                    .metadata = &metadata};
      if (f.Matches(doc)) out.push_back(id);
    }
    return out;
  }
  static std::vector<std::string> Ids(const std::vector<MemoryHit>& hits) {
    std::vector<std::string> out;
    for (const auto& h : hits) out.push_back(h.memory.id);
    return out;
  }
  std::vector<MemoryHit> Search(const MemoryShard& shard, const MemoryFilter& f, size_t k,
                                std::vector<float> vector = {}) {
    MemoryQuery q{.terms = analyzer_.AnalyzeQuery("memo apple"),
                  .vector = std::move(vector),
                  .filter = &f,
                  .k = k,
                  .now_us = 100};
    auto hits = shard.Search(q);
    EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    return hits.ok() ? *hits : std::vector<MemoryHit>{};
  }

  Analyzer analyzer_;
  MemoryShard indexed_;
  MemoryShard plain_;  // the scope path only
  std::map<std::string, MemoryRecord> model_;
};

// Metadata values exercising the grammar's equality: 1 == 1.0, -0.0 == 0, strings by bytes, an
// unsigned integer that json == equates with -1, integers sharing an index key, values that are
// not indexed (array, object).
const char* const kValues[] = {
    R"("a")",
    R"("b")",
    R"("c")",
    R"("A")",
    "1",
    "1.0",
    "2",
    "-1",
    "0",
    "-0.0",
    "true",
    "false",
    "null",
    "[1]",
    R"({"x":1})",
    "18446744073709551615",
    "9007199254740992",  // 2^53 and 2^53 + 1: different, but the same double (one index key)
    "9007199254740993",
    R"("a long string value that is longer than sixty-four bytes, so it is hashed")"};

json RandomValue(std::mt19937& rng) { return json::parse(kValues[rng() % std::size(kValues)]); }

std::string RandomMetadata(std::mt19937& rng) {
  json m = json::object();
  for (const char* key : {"topic", "n", "flag"}) {
    if (rng() % 4 != 0) m[key] = RandomValue(rng);
  }
  return m.dump();
}

json RandomLeaf(std::mt19937& rng) {
  static const char* const kKeys[] = {"metadata.topic", "metadata.n", "metadata.flag",
                                      "metadata.other"};
  const std::string key = kKeys[rng() % std::size(kKeys)];
  json v = RandomValue(rng);
  switch (rng() % 8) {
    case 0:
      if (!v.is_object()) return {{key, v}};  // shorthand equality
      [[fallthrough]];
    case 1:
      return {{key, {{"eq", v}}}};
    case 2: {
      json values = json::array();
      for (int n = static_cast<int>(rng() % 4); n > 0; --n) values.push_back(RandomValue(rng));
      return {{key, {{"in", values}}}};
    }
    case 3:
      return {{key, {{"ne", v}}}};
    case 4:
      return {{key, {{"*", rng() % 2 == 0}}}};
    case 5:
      return {{"user_id", "u" + std::to_string(rng() % 3)}};
    case 6:
      return {{"created_at", {{"gte", FormatIsoMicros(static_cast<int64_t>(rng() % 300))}}}};
    default:  // two conditions in one object: an implicit AND
      return {{key, v.is_object() ? json{{"eq", v}} : v},
              {"user_id", "u" + std::to_string(rng() % 3)}};
  }
}

json RandomFilter(std::mt19937& rng, int depth) {
  if (depth == 0 || rng() % 3 == 0) return RandomLeaf(rng);
  switch (rng() % 5) {
    case 0:
      return {{"NOT", RandomFilter(rng, depth - 1)}};
    case 1: {
      json children = json::array();
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        children.push_back(RandomFilter(rng, depth - 1));
      }
      return {{"OR", children}};
    }
    default: {
      json children = json::array();
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        children.push_back(RandomFilter(rng, depth - 1));
      }
      return {{"AND", children}};
    }
  }
}

TEST_F(MetadataIndexTest, FilteredResultsMatchBruteForceAndTheScopePath) {
  std::mt19937 rng(20240611);
  static const char* const kWords[] = {"apple", "pear", "plum", "fig", "kiwi"};
  int next = 0;
  int checks = 0;
  int narrowed = 0;  // checks where the index picked the candidates and some matched
  for (int op = 0; op < 1500; ++op) {
    const unsigned what = rng() % 20;
    if (what < 12 || model_.empty()) {
      // A new memory, or a new version of an existing one (metadata, text and times change; the
      // owner stays).
      MemoryRecord r;
      if (what < 8 || model_.empty()) {
        ++next;
        r.id = "m-" + std::to_string(next);
        r.user_id = "u" + std::to_string(rng() % 3);
      } else {
        auto it = model_.begin();
        std::advance(it, static_cast<long>(rng() % model_.size()));
        r.id = it->first;
        r.user_id = it->second.user_id;
      }
      r.seq = op + 1;
      r.text = std::string("memo ") + kWords[rng() % std::size(kWords)] + " " +
               kWords[rng() % std::size(kWords)];
      r.metadata_json = RandomMetadata(rng);
      r.created_at_us = r.updated_at_us = static_cast<int64_t>(rng() % 300);
      if (rng() % 10 == 0) r.expires_at_us = 50 + static_cast<int64_t>(rng() % 100);
      if (rng() % 2 == 0) {
        const float a = static_cast<float>(rng() % 628) / 100.0f;
        r.vector = {std::cos(a), std::sin(a)};
      }
      Upsert(r);
    } else if (what < 15) {
      auto it = model_.begin();
      std::advance(it, static_cast<long>(rng() % model_.size()));
      Remove(it->first);
    } else {
      for (int i = 0; i < 4; ++i, ++checks) {
        const json j = RandomFilter(rng, 3);
        MemoryFilter f = MustParse(j);
        const std::vector<std::string> expected = BruteForce(f);
        if (!f.MetadataEqualities().empty() && !expected.empty()) ++narrowed;
        size_t total = 0;
        EXPECT_EQ(ListIds(indexed_, f, &total), expected) << j.dump();
        EXPECT_EQ(total, expected.size()) << j.dump();
        EXPECT_EQ(ListIds(plain_, f), expected) << j.dump();
        // Search is confined to a user: every memory has the word "memo", so a k beyond the
        // shard's size returns every match; a small k must rank exactly as the scope path does.
        f.AndEquals("user_id", "u" + std::to_string(rng() % 3));
        const std::vector<std::string> in_scope = BruteForce(f);
        const std::vector<float> vector =
            rng() % 2 == 0 ? std::vector<float>{} : std::vector<float>{0.6f, 0.8f};
        std::vector<std::string> all = Ids(Search(indexed_, f, 100000, vector));
        std::sort(all.begin(), all.end());
        EXPECT_EQ(all, in_scope) << j.dump();
        const size_t k = 1 + rng() % 5;
        const auto a = Search(indexed_, f, k, vector);
        const auto b = Search(plain_, f, k, vector);
        ASSERT_EQ(a.size(), b.size()) << j.dump();
        for (size_t h = 0; h < a.size(); ++h) {
          EXPECT_EQ(a[h].memory.id, b[h].memory.id) << j.dump();
          EXPECT_EQ(a[h].score, b[h].score) << j.dump();
          EXPECT_EQ(a[h].similarity, b[h].similarity) << j.dump();
        }
      }
    }
  }
  EXPECT_GT(checks, 500);
  EXPECT_GT(narrowed, 50) << narrowed << " of " << checks;
  // The index holds exactly the live memories' values: updates and removals left nothing behind.
  size_t postings = 0;
  for (const auto& [id, r] : model_) {
    const json metadata = json::parse(r.metadata_json);
    for (const auto& [key, value] : metadata.items()) {
      std::vector<std::string> keys;
      MetadataValueKeys(value, &keys);
      postings += keys.size();
    }
  }
  EXPECT_EQ(indexed_.metadata_postings(), postings);
  EXPECT_EQ(plain_.metadata_postings(), 0u);
  for (const auto& [id, r] : std::map<std::string, MemoryRecord>(model_)) Remove(id);
  EXPECT_EQ(indexed_.metadata_postings(), 0u);
}

TEST_F(MetadataIndexTest, UpdatesMovePostingsAndRemovalDropsThem) {
  Upsert(Rec(1, "u", "memo one", R"({"topic":"a"})"));
  Upsert(Rec(2, "u", "memo two", R"({"topic":"b"})"));
  const MemoryFilter a = MustParse({{"metadata.topic", "a"}});
  const MemoryFilter b = MustParse({{"metadata.topic", "b"}});
  EXPECT_EQ(ListIds(indexed_, a), std::vector<std::string>{"m-1"});
  EXPECT_EQ(indexed_.metadata_postings(), 2u);
  MemoryRecord moved = Rec(3, "u", "memo one", R"({"topic":"b","extra":true})");
  moved.id = "m-1";
  Upsert(moved);
  EXPECT_TRUE(ListIds(indexed_, a).empty());
  EXPECT_EQ(ListIds(indexed_, b), (std::vector<std::string>{"m-1", "m-2"}));
  EXPECT_EQ(ListIds(indexed_, MustParse({{"metadata.extra", true}})),
            std::vector<std::string>{"m-1"});
  EXPECT_EQ(indexed_.metadata_postings(), 3u);
  // A text-only update keeps the postings.
  MemoryRecord retext = Rec(4, "u", "memo uno", R"({"topic":"b","extra":true})");
  retext.id = "m-1";
  Upsert(retext);
  EXPECT_EQ(ListIds(indexed_, b), (std::vector<std::string>{"m-1", "m-2"}));
  EXPECT_EQ(indexed_.metadata_postings(), 3u);
  Remove("m-1");
  EXPECT_EQ(indexed_.metadata_postings(), 1u);
  EXPECT_EQ(ListIds(indexed_, b), std::vector<std::string>{"m-2"});
  EXPECT_TRUE(ListIds(indexed_, MustParse({{"metadata.extra", true}})).empty());
  MemoryFilter scoped = MustParse({{"metadata.topic", "b"}});
  scoped.AndEquals("user_id", "u");
  EXPECT_EQ(Ids(Search(indexed_, scoped, 10)), std::vector<std::string>{"m-2"});
  Remove("m-2");
  EXPECT_EQ(indexed_.metadata_postings(), 0u);
  EXPECT_TRUE(ListIds(indexed_, b).empty());
  EXPECT_TRUE(Search(indexed_, scoped, 10).empty());
}

TEST_F(MetadataIndexTest, NumbersCompareByValue) {
  Upsert(Rec(1, "u", "memo", R"({"n":1})"));
  Upsert(Rec(2, "u", "memo", R"({"n":1.0})"));
  Upsert(Rec(3, "u", "memo", R"({"n":"1"})"));
  Upsert(Rec(4, "u", "memo", R"({"n":true})"));
  Upsert(Rec(5, "u", "memo", R"({"n":[1]})"));
  Upsert(Rec(6, "u", "memo", R"({"n":-0.0})"));
  Upsert(Rec(7, "u", "memo", R"({"n":0})"));
  const std::vector<std::string> ones{"m-1", "m-2"};
  for (const char* f : {R"({"metadata.n": 1})", R"({"metadata.n": 1.0})",
                        R"({"metadata.n": {"in": [1.0, "x"]}})", R"({"metadata.n": {"eq": 1}})"}) {
    const MemoryFilter filter = MustParse(json::parse(f));
    EXPECT_EQ(ListIds(indexed_, filter), ones) << f;
    EXPECT_EQ(BruteForce(filter), ones) << f;
  }
  EXPECT_EQ(ListIds(indexed_, MustParse({{"metadata.n", "1"}})), std::vector<std::string>{"m-3"});
  EXPECT_EQ(ListIds(indexed_, MustParse({{"metadata.n", true}})), std::vector<std::string>{"m-4"});
  EXPECT_EQ(ListIds(indexed_, MustParse({{"metadata.n", {{"eq", json::array({1})}}}})),
            std::vector<std::string>{"m-5"});
  EXPECT_EQ(ListIds(indexed_, MustParse({{"metadata.n", 0}})),
            (std::vector<std::string>{"m-6", "m-7"}));
}

TEST_F(MetadataIndexTest, AFilterSelectingNothingReturnsNothingQuickly) {
  for (int i = 1; i <= 3000; ++i) {
    Upsert(Rec(i, "u", "memo number " + std::to_string(i),
               json{{"topic", "t" + std::to_string(i % 8)}}.dump()));
  }
  for (const char* text : {R"({"metadata.topic": "t9"})", R"({"metadata.topic": {"in": []}})",
                           R"({"metadata.absent": 1})",
                           R"({"AND": [{"metadata.topic": "t1"}, {"metadata.topic": "t2"}]})"}) {
    MemoryFilter f = MustParse(json::parse(text));
    size_t total = 1;
    EXPECT_TRUE(ListIds(indexed_, f, &total).empty()) << text;
    EXPECT_EQ(total, 0u) << text;
    f.AndEquals("user_id", "u");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(Search(indexed_, f, 10).empty()) << text;
    const auto took = std::chrono::steady_clock::now() - start;
    // Nothing is scored: well under the ~0.1 ms per search of BM25 over the scope.
    EXPECT_LT(took, std::chrono::milliseconds(100)) << text;
  }
  MemoryFilter t3 = MustParse({{"metadata.topic", "t3"}});
  EXPECT_EQ(ListIds(indexed_, t3).size(), 375u);
  EXPECT_GT(indexed_.MemoryBytes(), plain_.MemoryBytes() + 3000 * sizeof(DocId));
}

TEST_F(MetadataIndexTest, OnlyConjunctsNarrow) {
  auto keys = [](const char* text) {
    std::vector<std::string> out;
    for (const auto& eq : MustParse(json::parse(text)).MetadataEqualities()) {
      out.push_back(eq.key + ":" + std::to_string(eq.values.size()));
    }
    return out;
  };
  EXPECT_EQ(keys(R"({"metadata.topic": "a"})"), std::vector<std::string>{"topic:1"});
  EXPECT_EQ(
      keys(R"({"AND": [{"metadata.topic": "a"}, {"AND": [{"metadata.n": {"in": [1, 1.0, 2]}}]},
                             {"created_at": {"gte": "2024-01-01"}}]})"),
      (std::vector<std::string>{"topic:1", "n:2"}));
  EXPECT_EQ(keys(R"({"metadata.topic": "a", "user_id": "u"})"),
            std::vector<std::string>{"topic:1"});
  EXPECT_EQ(keys(R"({"metadata.topic": {"in": []}})"), std::vector<std::string>{"topic:0"});
  // OR, NOT, ne and unindexed operands fall back to the scope path.
  EXPECT_TRUE(keys(R"({"OR": [{"metadata.topic": "a"}, {"metadata.topic": "b"}]})").empty());
  EXPECT_TRUE(keys(R"({"NOT": {"metadata.topic": "a"}})").empty());
  EXPECT_TRUE(keys(R"({"metadata.topic": {"ne": "a"}})").empty());
  EXPECT_TRUE(keys(R"({"metadata.topic": {"in": ["a", [1]]}})").empty());
  EXPECT_TRUE(keys(R"({"metadata.topic": "*"})").empty());
  // Exact: the index's keys decide the condition, so it is skipped on the docs the index picks.
  auto exact = [](const char* text) {
    const auto eqs = MustParse(json::parse(text)).MetadataEqualities();
    return eqs.size() == 1 && eqs[0].exact;
  };
  EXPECT_TRUE(exact(R"({"metadata.topic": "a"})"));
  EXPECT_TRUE(exact(R"({"metadata.topic": {"in": ["a", true, null]}})"));
  EXPECT_FALSE(exact(R"({"metadata.topic": 1})"));
  EXPECT_FALSE(exact(R"({"metadata.topic": {"in": ["a", 1]}})"));
  EXPECT_FALSE(exact(
      R"({"metadata.topic": "a long string value that is longer than sixty-four bytes, so hashed"})"));

  // ...and still give the filter's answer.
  Upsert(Rec(1, "u", "memo", R"({"topic":"a"})"));
  Upsert(Rec(2, "u", "memo", R"({"topic":"b"})"));
  Upsert(Rec(3, "u", "memo", R"({"topic":"c"})"));
  for (const char* text : {R"({"OR": [{"metadata.topic": "a"}, {"metadata.topic": "b"}]})",
                           R"({"NOT": {"metadata.topic": "a"}})"}) {
    MemoryFilter f = MustParse(json::parse(text));
    EXPECT_EQ(ListIds(indexed_, f), BruteForce(f)) << text;
    EXPECT_EQ(ListIds(indexed_, f).size(), 2u) << text;
    f.AndEquals("user_id", "u");
    std::vector<std::string> ids = Ids(Search(indexed_, f, 10));
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, BruteForce(f)) << text;
  }
}

}  // namespace
}  // namespace engram
