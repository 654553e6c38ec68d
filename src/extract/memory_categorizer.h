// MemoryCategorizer: tags memories with short category names (mem0's `categories`) without an LLM.
//
// Each category is embedded once as "name: description" with the same embedder as the memories;
// a memory gets the categories whose cosine with its vector is close to the best one and above a
// floor, best first, at most a few; "misc" (when the set has it) when no category reaches the
// floor. The default set's vectors are computed on first use and cached; a custom set (an add's
// `custom_categories`) is embedded on every call, which its size limits keep cheap.
//
// Thread-safety: Assign is safe to call concurrently (the cache is guarded by a mutex).
// Ownership: the embedder is not owned and must outlive the categorizer; it may be null, and then
// every memory gets an empty list.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "embed/embedder.h"

namespace engram {

struct CategorySpec {
  std::string name;
  std::string description;

  bool operator==(const CategorySpec&) const = default;
};

// mem0's 15 default categories (personal_details, family, professional_details, sports, travel,
// food, music, health, technology, hobbies, fashion, entertainment, milestones, user_preferences,
// misc), each with a one-line description worded for the built-in embedder.
std::vector<CategorySpec> DefaultCategories();

struct MemoryCategorizerOptions {
  // At most this many categories per memory.
  size_t max_categories = 2;
  // A category needs at least this cosine with the memory. Chosen on the built-in USE-lite model
  // (see memory_categorizer_test.cc); another embedder has another scale of cosines.
  float min_cosine = 0.15f;
  // ... and must be within this much of the memory's best category.
  float margin = 0.06f;
  // Given when no category reaches min_cosine, if the set has a category of this name.
  std::string fallback = "misc";
};

class MemoryCategorizer {
 public:
  // Bounds on a category set (checked on every call, default set included).
  static constexpr size_t kMaxCategories = 100;
  static constexpr size_t kMaxCategoryBytes = 256;  // name + description

  MemoryCategorizer(const Embedder* embedder, MemoryCategorizerOptions options);

  // For each memory vector (L2-normalised, the embedder's dimension), the names of its categories,
  // best first. kInvalidParameter naming the problem when the set is too large, a name is empty or
  // repeated, or a name+description is too long (whether or not there is an embedder); kInternal
  // when a vector's length is not the embedder's dimension; the embedder's error when embedding
  // the categories fails. An empty set gives empty lists.
  Result<std::vector<std::vector<std::string>>> Assign(
      const std::vector<std::vector<float>>& memory_vectors,
      const std::vector<CategorySpec>& categories) const;

  // Checks a category set against the bounds above.
  static Status Validate(const std::vector<CategorySpec>& categories);

  const MemoryCategorizerOptions& options() const { return options_; }

 private:
  // The vectors of `categories`, from the cache for the default set.
  Result<std::vector<std::vector<float>>> CategoryVectors(
      const std::vector<CategorySpec>& categories) const;
  // The assignment rule over one memory's cosines.
  std::vector<std::string> Pick(const std::vector<float>& scores,
                                const std::vector<CategorySpec>& categories) const;

  const Embedder* embedder_;
  MemoryCategorizerOptions options_;
  const std::vector<CategorySpec> defaults_;

  mutable Mutex mu_;
  // The default set's vectors; empty until first computed (a failed embed is retried next call).
  mutable std::vector<std::vector<float>> default_vectors_ GUARDED_BY(mu_);
};

}  // namespace engram
