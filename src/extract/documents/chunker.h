// Chunker: splits a document's text (the shape document_text.h produces: "#" heading lines,
// paragraphs separated by blank lines) into chunks for search.
//
// Structure first: a heading always starts a new chunk and every chunk remembers the heading of
// its section; paragraphs are packed whole into chunks of up to `max_chars`; only a paragraph that
// is longer than that alone is cut, at a line, sentence or word boundary (in that preference).
// Consecutive chunks of one section overlap by up to `overlap_chars` (whole words), so a sentence
// cut off at a chunk's end is still found whole in the next one.
//
// Sizes count bytes of UTF-8; cuts never split a multi-byte character.
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace engram {

struct ChunkOptions {
  size_t max_chars = 1200;     // upper bound of a chunk's text
  size_t overlap_chars = 150;  // at most this much of a chunk is repeated at the next one's start
};

struct DocumentChunk {
  int position = 0;     // 0-based, in document order
  std::string heading;  // innermost heading of the chunk's section ("" before the first one)
  std::string text;
};

std::vector<DocumentChunk> ChunkDocument(std::string_view text, const ChunkOptions& options);

}  // namespace engram
