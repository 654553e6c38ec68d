#include "store/categories_json.h"

#include <nlohmann/json.hpp>

#include "common/json_reader.h"

namespace engram {

std::string CategoriesToJson(const std::vector<std::string>& categories) {
  if (categories.empty()) return "[]";
  return nlohmann::json(categories).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> CategoriesFromJson(std::string_view json) {
  std::vector<std::string> out;
  if (json.empty() || json == "[]") return out;
  const nlohmann::json j = ReadJsonOrDiscarded(json, kStoredJsonLimits);
  if (!j.is_array()) return out;
  for (const auto& item : j) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace engram
