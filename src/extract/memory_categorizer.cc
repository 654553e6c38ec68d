#include "extract/memory_categorizer.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "embed/simd_kernels.h"

namespace engram {
namespace {

// The text a category is embedded as. Underscores become spaces so that "user_preferences" reads
// as the words the embedder knows.
std::string CategoryText(const CategorySpec& spec) {
  std::string name = spec.name;
  std::replace(name.begin(), name.end(), '_', ' ');
  return name + ": " + spec.description;
}

}  // namespace

std::vector<CategorySpec> DefaultCategories() {
  // The descriptions name typical subjects: a sentence embedder matches a memory against the
  // words it shares meaning with, so a list of concrete subjects works better than a definition.
  return {
      {"personal_details",
       "name, age, birthday, gender, pronouns, hometown, where the user lives, nationality, "
       "language"},
      {"family",
       "parents, siblings, children, husband, wife, grandparents, relatives, family life"},
      {"professional_details", "job, work, career, employer, colleagues, office, business"},
      {"sports", "sports, athletes, teams, clubs, matches, football, running, fitness training"},
      {"travel", "travel, trips, vacations, flights, hotels, visiting countries and cities"},
      {"food", "food, meals, cooking, recipes, restaurants, diet, drinks"},
      {"music", "music, songs, bands, singers, concerts, playing instruments"},
      {"health", "health, illness, injuries, allergies, medication, doctors, medical conditions"},
      {"technology",
       "technology, computers, servers, software, programming, gadgets, phones, apps"},
      {"hobbies", "hobbies, pastimes, crafts, gardening, reading, outdoor activities"},
      {"fashion", "fashion, clothes, style, shoes, brands, what the user wears"},
      {"entertainment", "films, movies, TV shows, series, books, video games, streaming"},
      {"milestones", "milestones, achievements, graduations, weddings, births, anniversaries"},
      {"user_preferences", "likes, dislikes, favourites, preferences, what the user prefers"},
      {"misc", "miscellaneous, other things"},
  };
}

MemoryCategorizer::MemoryCategorizer(const Embedder* embedder, MemoryCategorizerOptions options)
    : embedder_(embedder), options_(std::move(options)), defaults_(DefaultCategories()) {}

Status MemoryCategorizer::Validate(const std::vector<CategorySpec>& categories) {
  if (categories.size() > kMaxCategories) {
    return Status::InvalidParameter("custom_categories: " + std::to_string(categories.size()) +
                                    " categories, at most " + std::to_string(kMaxCategories));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < categories.size(); ++i) {
    const CategorySpec& spec = categories[i];
    const std::string where = "custom_categories[" + std::to_string(i) + "]";
    if (spec.name.empty()) return Status::InvalidParameter(where + ": empty category name");
    if (spec.name.size() + spec.description.size() > kMaxCategoryBytes) {
      return Status::InvalidParameter(where + ": name and description are " +
                                      std::to_string(spec.name.size() + spec.description.size()) +
                                      " bytes, at most " + std::to_string(kMaxCategoryBytes));
    }
    if (!names.insert(spec.name).second) {
      return Status::InvalidParameter(where + ": category name repeated");
    }
  }
  return Status::Ok();
}

Result<std::vector<std::vector<float>>> MemoryCategorizer::CategoryVectors(
    const std::vector<CategorySpec>& categories) const {
  std::vector<std::string> texts;
  texts.reserve(categories.size());
  for (const CategorySpec& spec : categories) texts.push_back(CategoryText(spec));
  if (categories != defaults_) return embedder_->EmbedBatch(texts);

  // Embedding under the lock: concurrent first callers would each need the vectors anyway, and
  // this embeds them once instead of once per caller.
  MutexLock lock(&mu_);
  if (default_vectors_.empty()) {
    auto embedded = embedder_->EmbedBatch(texts);
    if (!embedded.ok()) return embedded.status();
    default_vectors_ = std::move(embedded).value();
  }
  return default_vectors_;
}

std::vector<std::string> MemoryCategorizer::Pick(
    const std::vector<float>& scores, const std::vector<CategorySpec>& categories) const {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal scores keep the set's order, so the result is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });

  std::vector<std::string> picked;
  if (!order.empty()) {
    const float best = scores[order[0]];
    for (size_t i : order) {
      if (picked.size() >= options_.max_categories) break;
      if (scores[i] < options_.min_cosine || scores[i] < best - options_.margin) break;
      picked.push_back(categories[i].name);
    }
  }
  if (picked.empty() && options_.max_categories > 0) {
    for (const CategorySpec& spec : categories) {
      if (spec.name == options_.fallback) {
        picked.push_back(spec.name);
        break;
      }
    }
  }
  return picked;
}

Result<std::vector<std::vector<std::string>>> MemoryCategorizer::Assign(
    const std::vector<std::vector<float>>& memory_vectors,
    const std::vector<CategorySpec>& categories) const {
  ENGRAM_RETURN_IF_ERROR(Validate(categories));
  std::vector<std::vector<std::string>> assigned(memory_vectors.size());
  if (embedder_ == nullptr || categories.empty() || memory_vectors.empty()) return assigned;

  const auto dim = static_cast<size_t>(embedder_->dimension());
  for (size_t m = 0; m < memory_vectors.size(); ++m) {
    if (memory_vectors[m].size() != dim) {
      return Status::Internal("memory vector " + std::to_string(m) + " has " +
                              std::to_string(memory_vectors[m].size()) +
                              " dimensions, the embedder " + std::to_string(dim));
    }
  }
  auto vectors = CategoryVectors(categories);
  if (!vectors.ok()) return vectors.status();
  if (vectors->size() != categories.size()) {
    return Status::Internal("embedder returned " + std::to_string(vectors->size()) +
                            " vectors for " + std::to_string(categories.size()) + " categories");
  }
  for (const auto& v : *vectors) {
    if (v.size() != dim) return Status::Internal("embedder returned a vector of the wrong size");
  }

  std::vector<float> scores(categories.size());
  for (size_t m = 0; m < memory_vectors.size(); ++m) {
    for (size_t c = 0; c < categories.size(); ++c) {
      scores[c] = Dot(memory_vectors[m].data(), (*vectors)[c].data(), static_cast<int>(dim));
    }
    assigned[m] = Pick(scores, categories);
  }
  return assigned;
}

}  // namespace engram
