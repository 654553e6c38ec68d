#include "extract/memory_categorizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "embed/use_lite.h"

namespace engram {
namespace {

// --- The assignment rule, over a tiny embedder with fixed vectors ---

// Maps each known text to a fixed unit vector; counts EmbedBatch calls. A test double of the
// embedding model only: the rule under test is the categorizer's.
class FixedEmbedder : public Embedder {
 public:
  explicit FixedEmbedder(std::map<std::string, std::vector<float>> vectors, int dim = 3)
      : vectors_(std::move(vectors)), dim_(dim) {}
  const std::string& model_id() const override { return id_; }
  int dimension() const override { return dim_; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    ++calls_;
    if (fail_) return Status::Unavailable("embedder down");
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) {
      auto it = vectors_.find(t);
      // Unknown texts (e.g. the default set's) get a vector orthogonal to the test's axes.
      out.push_back(it != vectors_.end() ? it->second : Unit(dim_ - 1));
    }
    return out;
  }
  std::vector<float> Unit(int axis) const {
    std::vector<float> v(dim_, 0.0f);
    v[axis] = 1.0f;
    return v;
  }

  int calls() const { return calls_; }
  void set_fail(bool fail) { fail_ = fail; }

 private:
  std::string id_ = "fixed@1";
  std::map<std::string, std::vector<float>> vectors_;
  int dim_;
  mutable std::atomic<int> calls_{0};
  std::atomic<bool> fail_{false};
};

std::vector<float> Normalised(std::vector<float> v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

// Three categories on three axes (x, y, misc on z).
const std::vector<CategorySpec> kAxes = {{"x", "first"}, {"y", "second"}, {"misc", "other"}};
std::map<std::string, std::vector<float>> AxisVectors(int dim = 3) {
  std::map<std::string, std::vector<float>> vectors;
  const char* texts[] = {"x: first", "y: second", "misc: other"};
  for (int axis = 0; axis < 3; ++axis) {
    vectors[texts[axis]] = std::vector<float>(dim, 0.0f);
    vectors[texts[axis]][axis] = 1.0f;
  }
  return vectors;
}

MemoryCategorizerOptions Options(size_t max, float min_cosine, float margin) {
  MemoryCategorizerOptions o;
  o.max_categories = max;
  o.min_cosine = min_cosine;
  o.margin = margin;
  return o;
}

TEST(MemoryCategorizerRuleTest, BestFirstWithinMarginAboveFloor) {
  FixedEmbedder embedder(AxisVectors());
  MemoryCategorizer categorizer(&embedder, Options(2, 0.3f, 0.2f));
  auto out = categorizer.Assign({Normalised({0.8f, 0.6f, 0}),   // y within 0.2 of x
                                 Normalised({0.6f, 0.8f, 0}),   // order follows the cosine
                                 Normalised({0.95f, 0.3f, 0}),  // y too far below x
                                 Normalised({1, 0, 0})},
                                kAxes);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 4u);
  EXPECT_EQ((*out)[0], (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ((*out)[1], (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ((*out)[2], (std::vector<std::string>{"x"}));
  EXPECT_EQ((*out)[3], (std::vector<std::string>{"x"}));
}

TEST(MemoryCategorizerRuleTest, AtMostMaxCategories) {
  FixedEmbedder embedder(AxisVectors());
  const auto even = Normalised({1, 1, 1});
  auto one = MemoryCategorizer(&embedder, Options(1, 0.1f, 0.5f)).Assign({even}, kAxes);
  auto three = MemoryCategorizer(&embedder, Options(3, 0.1f, 0.5f)).Assign({even}, kAxes);
  ASSERT_TRUE(one.ok() && three.ok());
  // Equal cosines keep the set's order.
  EXPECT_EQ((*one)[0], (std::vector<std::string>{"x"}));
  EXPECT_EQ((*three)[0], (std::vector<std::string>{"x", "y", "misc"}));
}

TEST(MemoryCategorizerRuleTest, MiscWhenNothingReachesTheFloor) {
  FixedEmbedder embedder(AxisVectors(4), /*dim=*/4);
  MemoryCategorizer categorizer(&embedder, Options(2, 0.5f, 0.2f));
  const auto weak = Normalised({0.3f, 0.2f, 0.1f, 1.0f});  // all cosines < 0.5
  auto with_misc = categorizer.Assign({weak}, kAxes);
  ASSERT_TRUE(with_misc.ok());
  EXPECT_EQ((*with_misc)[0], (std::vector<std::string>{"misc"}));
  // Without a misc category the memory stays uncategorised.
  auto without = categorizer.Assign({weak}, {kAxes[0], kAxes[1]});
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE((*without)[0].empty());
}

TEST(MemoryCategorizerRuleTest, CustomFallbackName) {
  FixedEmbedder embedder({{"x: first", {1, 0, 0}}, {"other: rest", {0, 1, 0}}});
  auto options = Options(2, 0.5f, 0.2f);
  options.fallback = "other";
  MemoryCategorizer categorizer(&embedder, options);
  auto out = categorizer.Assign({{0, 0, 1}}, {{"x", "first"}, {"other", "rest"}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0], (std::vector<std::string>{"other"}));
}

TEST(MemoryCategorizerRuleTest, UnderscoresInNamesAreEmbeddedAsSpaces) {
  FixedEmbedder embedder({{"user preferences: likes", {1, 0, 0}}});
  MemoryCategorizer categorizer(&embedder, Options(2, 0.5f, 0.2f));
  auto out = categorizer.Assign({{1, 0, 0}}, {{"user_preferences", "likes"}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0], (std::vector<std::string>{"user_preferences"}));
}

TEST(MemoryCategorizerRuleTest, DefaultSetEmbeddedOnceCustomSetPerCall) {
  FixedEmbedder embedder(AxisVectors());
  MemoryCategorizer categorizer(&embedder, {});
  const auto defaults = DefaultCategories();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(categorizer.Assign({{1, 0, 0}}, defaults).ok());
  EXPECT_EQ(embedder.calls(), 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(categorizer.Assign({{1, 0, 0}}, kAxes).ok());
  EXPECT_EQ(embedder.calls(), 4);
}

TEST(MemoryCategorizerRuleTest, DefaultCacheIsFilledOnceUnderConcurrency) {
  FixedEmbedder embedder(AxisVectors());
  MemoryCategorizer categorizer(&embedder, {});
  const auto defaults = DefaultCategories();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto out = categorizer.Assign({{0, 0, 1}}, defaults);
        if (!out.ok() || out->size() != 1) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(embedder.calls(), 1);
}

TEST(MemoryCategorizerRuleTest, EmbedderFailureIsReturnedAndNotCached) {
  FixedEmbedder embedder(AxisVectors());
  MemoryCategorizer categorizer(&embedder, {});
  embedder.set_fail(true);
  auto failed = categorizer.Assign({{1, 0, 0}}, DefaultCategories());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  embedder.set_fail(false);
  EXPECT_TRUE(categorizer.Assign({{1, 0, 0}}, DefaultCategories()).ok());
  EXPECT_EQ(embedder.calls(), 2);
}

TEST(MemoryCategorizerRuleTest, WrongVectorDimensionIsInternal) {
  FixedEmbedder embedder(AxisVectors());
  MemoryCategorizer categorizer(&embedder, {});
  auto out = categorizer.Assign({{1, 0, 0}, {1, 0}}, kAxes);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInternal);
  EXPECT_NE(out.status().message().find("memory vector 1"), std::string::npos);
}

TEST(MemoryCategorizerRuleTest, EmptyInputsGiveEmptyLists) {
  FixedEmbedder embedder(AxisVectors());
  MemoryCategorizer categorizer(&embedder, {});
  auto no_memories = categorizer.Assign({}, kAxes);
  ASSERT_TRUE(no_memories.ok());
  EXPECT_TRUE(no_memories->empty());
  auto no_categories = categorizer.Assign({{1, 0, 0}, {0, 1, 0}}, {});
  ASSERT_TRUE(no_categories.ok());
  ASSERT_EQ(no_categories->size(), 2u);
  EXPECT_TRUE((*no_categories)[0].empty());
  EXPECT_TRUE((*no_categories)[1].empty());
  EXPECT_EQ(embedder.calls(), 0);
}

TEST(MemoryCategorizerRuleTest, NullEmbedderGivesEmptyLists) {
  MemoryCategorizer categorizer(nullptr, {});
  auto out = categorizer.Assign({{1, 0, 0}, {0, 1, 0}}, DefaultCategories());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE((*out)[0].empty());
  EXPECT_TRUE((*out)[1].empty());
}

// --- Validation ---

void ExpectInvalid(const std::vector<CategorySpec>& categories, const std::string& fragment) {
  // With and without an embedder: bad input is rejected the same way.
  FixedEmbedder embedder(AxisVectors());
  for (const Embedder* e :
       {static_cast<const Embedder*>(&embedder), static_cast<const Embedder*>(nullptr)}) {
    auto out = MemoryCategorizer(e, {}).Assign({{1, 0, 0}}, categories);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidParameter);
    EXPECT_NE(out.status().message().find(fragment), std::string::npos) << out.status().message();
  }
  EXPECT_EQ(embedder.calls(), 0);
}

TEST(MemoryCategorizerValidationTest, TooManyCategories) {
  std::vector<CategorySpec> many;
  for (size_t i = 0; i < MemoryCategorizer::kMaxCategories; ++i) {
    many.push_back({"c" + std::to_string(i), "d"});
  }
  EXPECT_TRUE(MemoryCategorizer::Validate(many).ok());
  many.push_back({"one_more", "d"});
  ExpectInvalid(many, "101 categories, at most 100");
}

TEST(MemoryCategorizerValidationTest, NameAndDescriptionTooLong) {
  const std::string name = "long";
  std::vector<CategorySpec> fits = {
      {"a", "b"}, {name, std::string(MemoryCategorizer::kMaxCategoryBytes - name.size(), 'd')}};
  EXPECT_TRUE(MemoryCategorizer::Validate(fits).ok());
  fits[1].description += "d";
  ExpectInvalid(fits, "custom_categories[1]: name and description are 257 bytes, at most 256");
}

TEST(MemoryCategorizerValidationTest, EmptyName) {
  ExpectInvalid({{"a", "b"}, {"", "nameless"}}, "custom_categories[1]: empty category name");
}

TEST(MemoryCategorizerValidationTest, RepeatedName) {
  ExpectInvalid({{"a", "b"}, {"c", "d"}, {"a", "again"}},
                "custom_categories[2]: category name repeated");
}

TEST(MemoryCategorizerValidationTest, DefaultSetIsValidAndComplete) {
  const auto defaults = DefaultCategories();
  EXPECT_TRUE(MemoryCategorizer::Validate(defaults).ok());
  std::vector<std::string> names;
  for (const auto& c : defaults) {
    names.push_back(c.name);
    EXPECT_FALSE(c.description.empty()) << c.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"personal_details", "family", "professional_details",
                                             "sports", "travel", "food", "music", "health",
                                             "technology", "hobbies", "fashion", "entertainment",
                                             "milestones", "user_preferences", "misc"}));
}

// --- The built-in model ---

std::string ModelDir() {
  const char* root = std::getenv("ENGRAM_SOURCE_DIR");
  return std::string(root == nullptr ? "" : root) + "/third_party/model/package/dist";
}

class MemoryCategorizerModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(ModelDir() + "/model.json")) return;
    auto loaded = UseLiteEmbedder::Load(ModelDir());
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = std::move(loaded).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (model_ == nullptr) {
      GTEST_SKIP() << "model package missing (set ENGRAM_SOURCE_DIR; expected " << ModelDir()
                   << ")";
    }
  }
  // The default categories of each text, with the default options.
  std::vector<std::vector<std::string>> Categorise(const std::vector<std::string>& texts,
                                                   MemoryCategorizerOptions options = {}) {
    auto vectors = model_->EmbedBatch(texts);
    EXPECT_TRUE(vectors.ok()) << vectors.status().ToString();
    if (!vectors.ok()) return {};
    auto out = MemoryCategorizer(model_, std::move(options)).Assign(*vectors, DefaultCategories());
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : std::vector<std::vector<std::string>>{};
  }

  static UseLiteEmbedder* model_;  // shared: the model is immutable and loads once
};
UseLiteEmbedder* MemoryCategorizerModelTest::model_ = nullptr;

bool AnyOf(const std::vector<std::string>& got, const std::set<std::string>& wanted) {
  return std::any_of(got.begin(), got.end(), [&](const auto& c) { return wanted.count(c) > 0; });
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

TEST_F(MemoryCategorizerModelTest, TypicalMemories) {
  auto out = Categorise({"I love hiking in the Alps every summer", "My sister just had a baby",
                         "Allergic to peanuts"});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(AnyOf(out[0], {"hobbies", "travel", "sports"})) << Join(out[0]);
  EXPECT_TRUE(AnyOf(out[1], {"family"})) << Join(out[1]);
  EXPECT_TRUE(AnyOf(out[2], {"health", "food"})) << Join(out[2]);
  for (const auto& c : out) EXPECT_LE(c.size(), 2u);
}

// Everyday memories, each with the categories a reader would accept. The default descriptions and
// options were chosen on Corpus() and HeldOut(); Fresh() was written afterwards and not tuned on,
// as a check of how well that generalises. The bars are a little below what the defaults reach,
// so a change to the descriptions, the rule or the model that makes categories worse fails here.
struct Labelled {
  std::string text;
  std::set<std::string> accepted;
};
const std::vector<Labelled>& Corpus() {
  static const std::vector<Labelled> corpus = {
      {"I love hiking in the Alps every summer", {"hobbies", "travel", "sports"}},
      {"My sister just had a baby", {"family", "milestones"}},
      {"Allergic to peanuts", {"health", "food"}},
      {"My name is Daniel and I am 34 years old", {"personal_details"}},
      {"I live in Lisbon", {"personal_details"}},
      {"I work as a backend engineer at a fintech startup", {"professional_details", "technology"}},
      {"Got promoted to senior manager last week", {"professional_details", "milestones"}},
      {"I play tennis twice a week", {"sports", "hobbies"}},
      {"Supports Liverpool FC and never misses a match", {"sports", "entertainment"}},
      {"Flying to Tokyo next month for a conference", {"travel", "professional_details"}},
      {"Prefers window seats on long flights", {"travel", "user_preferences"}},
      {"Vegetarian, doesn't eat fish either", {"food", "health", "user_preferences"}},
      {"Loves spicy Thai curry", {"food", "user_preferences"}},
      {"Listens to jazz while working", {"music"}},
      {"Plays the cello in a community orchestra", {"music", "hobbies"}},
      {"Has type 2 diabetes and checks blood sugar daily", {"health"}},
      {"Takes ibuprofen for recurring migraines", {"health"}},
      {"Uses a Linux laptop and writes Rust in the evenings", {"technology", "hobbies"}},
      {"Just bought the new iPhone", {"technology"}},
      {"Knits scarves for friends in winter", {"hobbies", "fashion"}},
      {"Grows tomatoes on the balcony", {"hobbies", "food"}},
      {"Always wears black sneakers", {"fashion", "user_preferences"}},
      {"Favourite designer is Stella McCartney", {"fashion", "user_preferences"}},
      {"Binge-watched all seasons of Breaking Bad", {"entertainment"}},
      {"Reads a fantasy novel every week", {"entertainment", "hobbies"}},
      {"Graduated from university in June", {"milestones", "personal_details"}},
      {"Got married in 2019", {"milestones", "family"}},
      {"Prefers email over phone calls", {"user_preferences"}},
      {"Dislikes crowded places", {"user_preferences"}},
      {"My father is a retired teacher", {"family"}},
      {"Has two kids, aged 5 and 8", {"family"}},
      {"Runs a marathon every spring", {"sports", "hobbies"}},
      {"Wants to visit Iceland to see the northern lights", {"travel"}},
      {"Drinks oat milk lattes every morning", {"food", "user_preferences"}},
      {"Goes to rock concerts with friends", {"music", "entertainment"}},
      {"Recovering from knee surgery", {"health"}},
      {"Is learning Python to automate spreadsheets", {"technology", "professional_details"}},
      {"Plays chess online in the evenings", {"hobbies", "entertainment"}},
      {"Celebrated 10 years at the company", {"milestones", "professional_details"}},
      {"Born in Nairobi, speaks Swahili and English", {"personal_details"}},
      {"Likes dark mode in every app", {"user_preferences", "technology"}},
      {"Collects vintage watches", {"hobbies", "fashion"}},
      {"Her brother lives in Canada", {"family"}},
      {"Went skiing in Colorado over the holidays", {"sports", "travel"}},
      {"Stays at boutique hotels rather than chains", {"travel", "user_preferences"}},
      {"Watches Formula 1 races every Sunday", {"sports", "entertainment"}},
      {"The meeting was moved to Thursday", {"professional_details", "misc"}},
      {"Parked the car on level 3", {"misc"}},
  };
  return corpus;
}
const std::vector<Labelled>& HeldOut() {
  static const std::vector<Labelled> corpus = {
      {"My daughter starts kindergarten in September", {"family", "milestones"}},
      {"I'm 27 and originally from Poland", {"personal_details"}},
      {"Works night shifts as a nurse", {"professional_details", "health"}},
      {"Training for a half-marathon", {"sports", "health"}},
      {"Backpacked through Vietnam last year", {"travel"}},
      {"Can't stand cilantro", {"food", "user_preferences"}},
      {"Plays guitar in a punk band", {"music", "hobbies"}},
      {"Has asthma and carries an inhaler", {"health"}},
      {"Builds custom mechanical keyboards", {"technology", "hobbies"}},
      {"Paints watercolour landscapes on weekends", {"hobbies"}},
      {"Only wears linen shirts in summer", {"fashion", "user_preferences"}},
      {"Favourite film is Spirited Away", {"entertainment", "user_preferences"}},
      {"Bought our first house in March", {"milestones"}},
      {"Prefers short answers without emojis", {"user_preferences"}},
      {"Grandmother turns 90 next week", {"family", "milestones"}},
      {"Is the CTO of a logistics company", {"professional_details", "technology"}},
      {"Swims laps every morning before work", {"sports", "health", "hobbies"}},
      {"Is planning a road trip across Norway", {"travel"}},
      {"Bakes sourdough bread every weekend", {"food", "hobbies"}},
      {"Goes to the opera a few times a year", {"music", "entertainment"}},
      {"Had a broken wrist in May", {"health"}},
      {"Runs a home server with Kubernetes", {"technology", "hobbies"}},
      {"Loves thrift shopping for vintage jackets", {"fashion", "hobbies"}},
      {"Plays Zelda on the Switch", {"entertainment", "hobbies", "technology"}},
      {"Retired last year after 40 years in banking", {"milestones", "professional_details"}},
      {"Likes the office temperature cool", {"user_preferences"}},
      {"Her husband is a chef", {"family"}},
      {"Uses she/her pronouns", {"personal_details"}},
      {"Cheers for the Lakers", {"sports", "entertainment"}},
      {"Drinks no alcohol", {"food", "health", "user_preferences"}},
      {"Learned to scuba dive in Egypt", {"sports", "travel", "hobbies"}},
      {"Lost the car keys again", {"misc"}},
  };
  return corpus;
}

const std::vector<Labelled>& Fresh() {
  static const std::vector<Labelled> corpus = {
      {"My mom is visiting us for Christmas", {"family"}},
      {"I am left-handed", {"personal_details"}},
      {"Moved to Berlin in 2021", {"personal_details", "travel", "milestones"}},
      {"Is a freelance graphic designer", {"professional_details"}},
      {"Goes bouldering at the climbing gym", {"sports", "hobbies"}},
      {"Spent our honeymoon in Bali", {"travel", "milestones", "family"}},
      {"Hates mushrooms on pizza", {"food", "user_preferences"}},
      {"Has been learning the piano for two years", {"music", "hobbies"}},
      {"Is lactose intolerant", {"health", "food"}},
      {"Switched from Android to an iPhone", {"technology"}},
      {"Does birdwatching on weekends", {"hobbies"}},
      {"Prefers sneakers to formal shoes", {"fashion", "user_preferences"}},
      {"Is rewatching The Office", {"entertainment"}},
      {"Passed the driving test yesterday", {"milestones"}},
      {"Wants meeting notes in bullet points", {"user_preferences", "professional_details"}},
      {"Our son plays in the school football team", {"family", "sports"}},
      {"Takes a vitamin D supplement", {"health"}},
      {"Is writing a mobile app in Kotlin", {"technology", "professional_details", "hobbies"}},
      {"Follows the Tour de France closely", {"sports", "entertainment"}},
      {"Loves Korean barbecue", {"food", "user_preferences"}},
      {"Went to a Taylor Swift concert", {"music", "entertainment"}},
      {"Needs to renew the passport", {"travel", "personal_details", "misc"}},
      {"Manages a team of twelve engineers", {"professional_details"}},
      {"The package arrives on Friday", {"misc"}},
  };
  return corpus;
}

struct Accuracy {
  double any_accepted = 0;  // share of memories with at least one accepted category
  double top_accepted = 0;  // share whose first category is accepted
  double precision = 0;     // share of assigned categories that are accepted
  double per_memory = 0;    // categories per memory
};

Accuracy Measure(const std::vector<Labelled>& corpus,
                 const std::vector<std::vector<std::string>>& out) {
  Accuracy a;
  size_t assigned = 0, accepted = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    if (AnyOf(out[i], corpus[i].accepted)) ++a.any_accepted;
    if (!out[i].empty() && corpus[i].accepted.count(out[i][0]) > 0) ++a.top_accepted;
    assigned += out[i].size();
    for (const auto& c : out[i]) accepted += corpus[i].accepted.count(c);
  }
  a.any_accepted /= corpus.size();
  a.top_accepted /= corpus.size();
  a.precision = assigned == 0 ? 0 : static_cast<double>(accepted) / assigned;
  a.per_memory = static_cast<double>(assigned) / corpus.size();
  return a;
}

std::vector<std::string> TextsOf(const std::vector<Labelled>& corpus) {
  std::vector<std::string> texts;
  for (const auto& l : corpus) texts.push_back(l.text);
  return texts;
}

void Report(const char* name, const std::vector<Labelled>& corpus,
            const std::vector<std::vector<std::string>>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    if (!AnyOf(out[i], corpus[i].accepted)) {
      std::cout << "  miss: \"" << corpus[i].text << "\" -> " << Join(out[i]) << "\n";
    }
  }
  const Accuracy a = Measure(corpus, out);
  std::cout << "  " << name << ": any accepted " << a.any_accepted << ", first accepted "
            << a.top_accepted << ", precision " << a.precision << ", categories per memory "
            << a.per_memory << "\n";
}

TEST_F(MemoryCategorizerModelTest, AccuracyOnEverydayMemories) {
  std::vector<Labelled> all;
  for (const auto* corpus : {&Corpus(), &HeldOut(), &Fresh()}) {
    auto out = Categorise(TextsOf(*corpus));
    ASSERT_EQ(out.size(), corpus->size());
    Report(corpus == &Fresh() ? "untuned" : "tuning", *corpus, out);
    all.insert(all.end(), corpus->begin(), corpus->end());
  }
  auto out = Categorise(TextsOf(all));
  ASSERT_EQ(out.size(), all.size());
  const Accuracy a = Measure(all, out);
  // Observed with the default options: 0.93 / 0.82 / 0.72, 1.5 categories per memory.
  EXPECT_GE(a.any_accepted, 0.88);
  EXPECT_GE(a.top_accepted, 0.75);
  EXPECT_GE(a.precision, 0.65);
  EXPECT_LE(a.per_memory, 2.0);
}

}  // namespace
}  // namespace engram
