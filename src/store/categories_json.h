// The stored form of an agent memory's categories: a JSON array of strings in a text column
// (both backends), e.g. ["food","travel"]. Internal to store/. Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace engram {

std::string CategoriesToJson(const std::vector<std::string>& categories);
// Tolerant: text that is not a JSON array gives no categories, and non-string items are skipped
// (a column edited by hand never makes a memory unreadable).
std::vector<std::string> CategoriesFromJson(std::string_view json);

}  // namespace engram
