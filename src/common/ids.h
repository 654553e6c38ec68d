// Identifiers: random UUIDs (v4) for requests, time-ordered ones (v7) for stored records.
// Thread-safety: all functions are safe to call concurrently (per-thread generators).
#pragma once

#include <string>
#include <string_view>

namespace engram {

// A random RFC 4122 version-4 UUID in canonical lower-case form.
std::string NewUuid();

// An RFC 9562 version-7 UUID: the Unix time in milliseconds (48 bits), then 12 bits of the
// sub-millisecond time, then 62 random bits. Ids made later sort later (to the microsecond; ties
// within one are random), so a B-tree keyed by them grows at its right edge: SQLite's unique index
// on memory ids and the events' primary key write one leaf page per commit instead of one random
// leaf per row (bytes written per V4 add in a 10,000-add mix: 68–72 KB → 55–60 KB; README).
std::string NewTimeOrderedUuid();

// `prefix` + "-" + NewTimeOrderedUuid(), e.g. NewId("m") -> "m-0193f1a2-…". The id tells when it
// was made, to the microsecond: so does the record's created_at, which the API returns anyway.
std::string NewId(std::string_view prefix);

}  // namespace engram
