// EntityCatalog: the entities a body of texts (one user's memories or messages) is about, from
// their mentions (FindEntityMentions), with aliases merged.
//
// Rules, each for a reason:
// - Names are compared case-insensitively (ASCII), except acronyms ("US" is not "Us");
//   identifiers exactly (code is case-sensitive).
// - A name mostly seen opening a sentence (more than kMaxInitialShare of its mentions) is dropped:
//   it may be any capitalised word ("Yesterday", "Thanks", "The" in a title once). Names are
//   written mid-sentence, or after a speaker's colon, often.
// - A one-word name merges into a longer one when exactly one longer name of the catalog starts
//   or ends with it ("Melanie" into "Melanie Smith", "Smith" into "Melanie Smith"), or, failing
//   that, into the one-word name it begins when it has at least three letters and is not an
//   acronym ("Mel" into "Melanie"): the only such name, or one mentioned in kDominantFactor times
//   as many texts as all the others (a misspelling like "Mell" does not keep "Mel" apart). In
//   both cases only when the two are linked: mentioned in one conversation. Two people sharing a
//   surname or the prefix of their names stay apart.
//
// Thread-safety: not thread-safe; one owner builds it, then reads Entities().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "index/entity_mentions.h"

namespace engram {

// One entity of the catalog.
struct CatalogEntity {
  std::string name;                  // its most frequent surface (the longest name merged into)
  std::vector<std::string> aliases;  // the other surfaces merged into it, sorted
  EntityKind kind = EntityKind::kName;
  size_t texts = 0;           // how many texts mention it (under any of its surfaces)
  int64_t first_seen_us = 0;  // the earliest and latest time of those texts
  int64_t last_seen_us = 0;
};

class EntityCatalog {
 public:
  // Adds one text's mentions; `time_us` is when it was said or stored, `conversation` what links
  // its mentions to other texts' ("" links it to no other text).
  void Add(const std::vector<EntityMention>& mentions, int64_t time_us,
           std::string_view conversation);

  // The entities, most mentioned first (then the most recent, then by name).
  std::vector<CatalogEntity> Entities() const;

 private:
  struct Key {
    std::string folded;  // case-folded name, or the identifier as written
    EntityKind kind = EntityKind::kName;
    auto operator<=>(const Key&) const = default;
  };
  struct Tally {
    std::map<std::string, size_t> surfaces;  // as written -> mentions
    size_t initial = 0;                      // mentions opening a sentence
    size_t inside = 0;                       // the others
    std::vector<uint32_t> texts;             // ordinals of the texts, ascending, distinct
    std::vector<uint32_t> conversations;     // ordinals of the conversations, sorted on use
  };

  std::map<Key, Tally> tallies_;
  std::map<std::string, uint32_t, std::less<>> conversation_ids_;
  std::vector<int64_t> text_times_;  // by text ordinal
};

}  // namespace engram
