#include "extract/documents/chunker.h"

#include <algorithm>

#include "common/utf8.h"

namespace engram {

namespace {

struct Block {
  bool heading = false;
  std::string text;
};

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\n\r\f");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\n\r\f");
  return s.substr(b, e - b + 1);
}

// Headings ("# Title" lines, up to six '#') and paragraphs (runs of non-blank lines).
std::vector<Block> SplitBlocks(std::string_view text) {
  std::vector<Block> blocks;
  std::string paragraph;
  auto flush = [&] {
    std::string_view t = Trim(paragraph);
    if (!t.empty()) blocks.push_back({false, std::string(t)});
    paragraph.clear();
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    std::string_view trimmed = Trim(line);
    const size_t hashes = trimmed.find_first_not_of('#');
    if (hashes > 0 && hashes <= 6 && hashes != std::string_view::npos && trimmed[hashes] == ' ') {
      flush();
      std::string_view title = Trim(trimmed.substr(hashes));
      if (!title.empty()) blocks.push_back({true, std::string(title)});
    } else if (trimmed.empty()) {
      flush();
    } else {
      if (!paragraph.empty()) paragraph += '\n';
      paragraph += line;
    }
    if (nl == text.size()) break;
  }
  flush();
  return blocks;
}

// Where to cut `s` to at most `limit` bytes: after the last newline, else sentence end, else
// space in the second half of the window; else at `limit` itself.
size_t CutPoint(std::string_view s, size_t limit) {
  const size_t window = Utf8Floor(s, limit);
  if (window >= s.size()) return s.size();
  const size_t min_cut = window / 2;
  std::string_view w = s.substr(0, window);
  size_t nl = w.rfind('\n');
  if (nl != std::string_view::npos && nl >= min_cut) return nl + 1;
  for (size_t i = window; i > min_cut; --i) {
    const char c = w[i - 1];
    if ((c == '.' || c == '!' || c == '?' || c == ';') && i < s.size() &&
        (s[i] == ' ' || s[i] == '\n')) {
      return i + 1;
    }
  }
  size_t sp = w.rfind(' ');
  if (sp != std::string_view::npos && sp >= min_cut) return sp + 1;
  return window > 0 ? window : Utf8Floor(s, limit + 4);  // a limit smaller than one character
}

// The tail of `s` of at most `n` bytes, starting at a word boundary.
std::string_view Tail(std::string_view s, size_t n) {
  if (n == 0 || s.empty()) return {};
  if (s.size() <= n) return s;
  size_t start = s.size() - n;
  while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
  const size_t space = s.find_first_of(" \n", start);
  if (space == std::string_view::npos) return {};
  return Trim(s.substr(space + 1));
}

}  // namespace

std::vector<DocumentChunk> ChunkDocument(std::string_view text, const ChunkOptions& options) {
  const size_t max_chars = std::max<size_t>(options.max_chars, 16);
  const size_t overlap = std::min(options.overlap_chars, max_chars / 2);
  std::vector<DocumentChunk> chunks;
  std::string heading;
  std::string current;
  std::string carry;  // overlap from the previous chunk of this section

  auto emit = [&] {
    if (Trim(current).empty()) {
      current.clear();
      return;
    }
    carry = std::string(Tail(current, overlap));
    chunks.push_back({static_cast<int>(chunks.size()), heading, std::string(Trim(current))});
    current.clear();
  };
  auto start_chunk = [&] {
    // A new chunk begins with the previous one's tail, unless that is all it would hold.
    current = carry;
  };
  auto append = [&](std::string_view piece) {
    if (!current.empty()) current += "\n\n";
    current += piece;
  };

  for (const Block& b : SplitBlocks(text)) {
    if (b.heading) {
      if (current.size() > carry.size()) emit();
      current.clear();
      carry.clear();
      heading = b.text.substr(0, std::min<size_t>(b.text.size(), 512));
      continue;
    }
    std::string_view rest = b.text;
    while (!rest.empty()) {
      const bool has_new_content = current.size() > carry.size();
      const size_t room = current.empty()                  ? max_chars
                          : max_chars > current.size() + 2 ? max_chars - current.size() - 2
                                                           : 0;
      if (rest.size() <= room) {
        append(rest);
        rest = {};
        break;
      }
      if (has_new_content) {
        // The paragraph does not fit after what the chunk holds: close it, start afresh.
        emit();
        start_chunk();
        continue;
      }
      if (room < max_chars / 4 && !current.empty()) {
        // Only overlap in the chunk and little room: drop the overlap rather than make tiny cuts.
        current.clear();
        continue;
      }
      // A paragraph longer than a chunk: cut it.
      const size_t cut = CutPoint(rest, current.empty() ? max_chars : room);
      append(Trim(rest.substr(0, cut)));
      rest = Trim(rest.substr(cut));
      emit();
      start_chunk();
    }
  }
  if (current.size() > carry.size()) emit();
  return chunks;
}

}  // namespace engram
