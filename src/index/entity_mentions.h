// The named things a text mentions: people, places, organisations and products written as proper
// names ("Melanie", "Bank of America", "NASA"), and code identifiers (`glDetachShader`,
// `parse_config`, `std::vector`).
//
// Why rules and not a model: the finder runs over every memory of a user to list what they are
// about, offline and in microseconds per text, in any language written with capitals. It cannot
// tell a person from a place (no gazetteer ships for that), so a mention is a name or an
// identifier. A capitalised word that opens a sentence may be a name or just capitalised; it is
// reported with `sentence_initial` set and EntityCatalog keeps it only if the same name is also
// written mid-sentence somewhere.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace engram {

enum class EntityKind {
  kName,        // a proper name: one or more capitalised words, maybe joined by "of", "de", "&"…
  kIdentifier,  // a code identifier, in backticks or shaped like one (NamesCodeIdentifier)
};

// "name" or "identifier".
std::string_view EntityKindName(EntityKind kind);

struct EntityMention {
  std::string surface;  // as written, without a possessive "'s" and surrounding punctuation
  EntityKind kind = EntityKind::kName;
  // A name whose first word opens a sentence, a line, a list item or a table cell (maybe only
  // capitalised because of that). A name before a colon opening the text ("Caroline: hi", as
  // conversations are often stored) is its speaker and not flagged; a heading ("Tips:") later in
  // a text is.
  bool sentence_initial = false;
};

// The mentions of `text`, in order; a name may be reported twice when it opens a sentence: whole
// (sentence_initial) and without its first word ("Yesterday Melanie" and "Melanie").
std::vector<EntityMention> FindEntityMentions(std::string_view text);

}  // namespace engram
