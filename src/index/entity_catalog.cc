#include "index/entity_catalog.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/ascii.h"

namespace engram {
namespace {

constexpr size_t kMinPrefixAlias = 3;  // "Mel" may stand for "Melanie"; "Me" may not
// At most one in five of a name's mentions may open a sentence.
constexpr size_t kMaxInitialPerInside = 4;
constexpr size_t kDominantFactor = 4;

// Written in capitals only ("LGBT"): an acronym, which does not abbreviate a longer name by prefix.
bool Capitals(std::string_view s) {
  for (char c : s) {
    if (c >= 'a' && c <= 'z') return false;
  }
  return true;
}

bool Intersect(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

std::string_view FirstWord(std::string_view s) { return s.substr(0, s.find(' ')); }
std::string_view LastWord(std::string_view s) {
  const size_t space = s.rfind(' ');
  return space == std::string_view::npos ? s : s.substr(space + 1);
}

}  // namespace

void EntityCatalog::Add(const std::vector<EntityMention>& mentions, int64_t time_us,
                        std::string_view conversation) {
  const auto text = static_cast<uint32_t>(text_times_.size());
  text_times_.push_back(time_us);
  std::optional<uint32_t> linked;
  if (!conversation.empty()) {
    auto it = conversation_ids_.find(conversation);
    if (it == conversation_ids_.end()) {
      it = conversation_ids_
               .emplace(std::string(conversation), static_cast<uint32_t>(conversation_ids_.size()))
               .first;
    }
    linked = it->second;
  }
  for (const EntityMention& m : mentions) {
    // Acronyms keep their case: "US" is not "Us", "AI" not "Ai".
    const bool exact = m.kind == EntityKind::kIdentifier || Capitals(m.surface);
    Key key{exact ? m.surface : LowerAscii(m.surface), m.kind};
    Tally& t = tallies_[std::move(key)];
    ++t.surfaces[m.surface];
    ++(m.sentence_initial ? t.initial : t.inside);
    if (t.texts.empty() || t.texts.back() != text) t.texts.push_back(text);
    if (linked && (t.conversations.empty() || t.conversations.back() != *linked)) {
      t.conversations.push_back(*linked);
    }
  }
}

std::vector<CatalogEntity> EntityCatalog::Entities() const {
  // The tallies kept, with their conversations sorted for Intersect.
  std::vector<const Key*> keys;
  std::vector<const Tally*> tallies;
  std::vector<std::vector<uint32_t>> conversations;
  std::map<std::string_view, size_t> name_at;  // folded name -> position in keys
  for (const auto& [key, tally] : tallies_) {
    if (key.kind == EntityKind::kName && tally.initial > tally.inside * kMaxInitialPerInside) {
      continue;
    }
    if (key.kind == EntityKind::kName) name_at.emplace(key.folded, keys.size());
    keys.push_back(&key);
    tallies.push_back(&tally);
    std::vector<uint32_t> c = tally.conversations;
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    conversations.push_back(std::move(c));
  }

  // Longer names by their first and last words.
  std::unordered_map<std::string_view, std::set<size_t>> longer_by_word;
  for (const auto& [name, at] : name_at) {
    if (name.find(' ') == std::string_view::npos) continue;
    longer_by_word[FirstWord(name)].insert(at);
    longer_by_word[LastWord(name)].insert(at);
  }

  std::vector<size_t> parent(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) parent[i] = i;
  for (const auto& [name, at] : name_at) {
    // An acronym stands for itself: "OS" is not short for "TV OS", nor "LGBT" for "LGBTQ".
    if (name.find(' ') != std::string_view::npos || Capitals(name)) continue;
    std::optional<size_t> into;
    if (auto it = longer_by_word.find(name); it != longer_by_word.end()) {
      if (it->second.size() == 1) into = *it->second.begin();
    } else if (name.size() >= kMinPrefixAlias) {
      // One-word names beginning with this one (in name_at's order right after it): the one most
      // mentioned, if it is the only one or dominates the others.
      size_t best_texts = 0;
      size_t other_texts = 0;
      for (auto next = name_at.upper_bound(name);
           next != name_at.end() && next->first.starts_with(name); ++next) {
        if (next->first.find(' ') != std::string_view::npos) continue;
        const size_t n = tallies[next->second]->texts.size();
        if (n > best_texts) {
          other_texts += best_texts;
          best_texts = n;
          into = next->second;
        } else {
          other_texts += n;
        }
      }
      if (best_texts < other_texts * kDominantFactor) into.reset();
    }
    if (into && Intersect(conversations[at], conversations[*into])) parent[at] = *into;
  }
  auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i];
    return i;
  };

  std::map<size_t, std::vector<size_t>> groups;  // root -> members
  for (size_t i = 0; i < keys.size(); ++i) groups[root(i)].push_back(i);
  std::vector<CatalogEntity> out;
  out.reserve(groups.size());
  for (const auto& [top, members] : groups) {
    CatalogEntity e;
    e.kind = keys[top]->kind;
    size_t best = 0;
    for (const auto& [surface, n] : tallies[top]->surfaces) {
      if (n > best) {
        best = n;
        e.name = surface;
      }
    }
    std::set<std::string> aliases;
    std::vector<uint32_t> texts;
    for (size_t m : members) {
      for (const auto& [surface, n] : tallies[m]->surfaces) {
        if (surface != e.name) aliases.insert(surface);
      }
      texts.insert(texts.end(), tallies[m]->texts.begin(), tallies[m]->texts.end());
    }
    std::sort(texts.begin(), texts.end());
    texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
    e.aliases.assign(aliases.begin(), aliases.end());
    e.texts = texts.size();
    e.first_seen_us = text_times_[texts.front()];
    e.last_seen_us = e.first_seen_us;
    for (uint32_t t : texts) {
      e.first_seen_us = std::min(e.first_seen_us, text_times_[t]);
      e.last_seen_us = std::max(e.last_seen_us, text_times_[t]);
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const CatalogEntity& a, const CatalogEntity& b) {
    if (a.texts != b.texts) return a.texts > b.texts;
    if (a.last_seen_us != b.last_seen_us) return a.last_seen_us > b.last_seen_us;
    return a.name < b.name;
  });
  return out;
}

}  // namespace engram
