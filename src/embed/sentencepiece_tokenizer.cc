#include "embed/sentencepiece_tokenizer.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace engram {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

// Byte length of the UTF-8 sequence starting with `lead`. Input here is ICU's output, so it is
// valid UTF-8; a stray continuation byte still advances by one so we never loop forever.
int Utf8SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// UTF-16 length of a UTF-8 string: code points above U+FFFF take two units.
int Utf16Length(std::string_view s) {
  int units = 0;
  for (size_t i = 0; i < s.size();) {
    int len = Utf8SequenceLength(static_cast<unsigned char>(s[i]));
    units += len == 4 ? 2 : 1;
    i += len;
  }
  return units;
}

int CodePointCount(std::string_view s) {
  int n = 0;
  for (size_t i = 0; i < s.size(); i += Utf8SequenceLength(static_cast<unsigned char>(s[i]))) ++n;
  return n;
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(std::vector<Piece> pieces)
    : pieces_(std::move(pieces)) {
  utf16_length_.reserve(pieces_.size());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const std::string& text = pieces_[id].text;
    utf16_length_.push_back(std::max(1, Utf16Length(text)));
    if (static_cast<int>(id) < kReservedPieces || text.empty()) continue;
    // insert_or_assign: a duplicated piece resolves to its last id, like the reference trie.
    index_.insert_or_assign(text, Match{pieces_[id].score, static_cast<int>(id)});
    for (size_t i = 0; i < text.size();) {
      i += Utf8SequenceLength(static_cast<unsigned char>(text[i]));
      if (i < text.size()) index_.try_emplace(text.substr(0, i), Match{0.0, -1});
    }
    max_piece_chars_ = std::max(max_piece_chars_, CodePointCount(text));
  }
}

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::LoadVocabJson(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open vocabulary " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  // nlohmann's parse rather than ReadJson: the vocabulary is installed with the model and trusted
  // like code (an array of a few levels), and it is large enough that limits would only get in
  // the way.
  nlohmann::json doc = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_array()) {
    return Status::Internal("vocabulary is not a JSON array: " + path);
  }
  std::vector<Piece> pieces;
  pieces.reserve(doc.size());
  for (const auto& entry : doc) {
    if (!entry.is_array() || entry.size() < 2 || !entry[0].is_string()) {
      return Status::Internal("malformed vocabulary entry in " + path);
    }
    Piece piece;
    piece.text = entry[0].get<std::string>();
    // The reference adds a null score to a number, which JavaScript treats as 0.
    piece.score = entry[1].is_number() ? entry[1].get<double>() : 0.0;
    pieces.push_back(std::move(piece));
  }
  if (pieces.size() <= static_cast<size_t>(kReservedPieces)) {
    return Status::Internal("vocabulary too small: " + path);
  }
  return std::make_unique<SentencePieceTokenizer>(std::move(pieces));
}

std::string SentencePieceTokenizer::Preprocess(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(status);
  std::string normalized;
  if (U_SUCCESS(status)) {
    icu::UnicodeString source = icu::UnicodeString::fromUTF8(
        icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    icu::UnicodeString out = nfkc->normalize(source, status);
    if (U_SUCCESS(status)) out.toUTF8String(normalized);
  }
  // ICU data is linked in, so this only triggers on a broken build; tokenising the raw text is
  // the least surprising degradation.
  if (U_FAILURE(status)) normalized.assign(text);
  if (normalized.empty()) return normalized;

  std::string result;
  result.reserve(normalized.size() + normalized.size() / 2 + kSpaceMark.size());
  result.append(kSpaceMark);
  for (char c : normalized) {
    if (c == ' ') {
      result.append(kSpaceMark);
    } else {
      result.push_back(c);
    }
  }
  return result;
}

std::vector<int> SentencePieceTokenizer::Encode(std::string_view text) const {
  const std::string input = Preprocess(text);
  // offsets[i] = byte offset of code point i; offsets[n] = input.size().
  std::vector<size_t> offsets;
  offsets.reserve(input.size() + 1);
  for (size_t i = 0; i < input.size();
       i += Utf8SequenceLength(static_cast<unsigned char>(input[i]))) {
    offsets.push_back(i);
  }
  const int n = static_cast<int>(offsets.size());
  offsets.push_back(input.size());
  if (n == 0) return {};

  // Lattice edges [start, end) in the reference's visiting order: grouped by end, ascending start
  // within an end (the reference iterates an object keyed by start position).
  struct Edge {
    int start;
    int end;
    double score;
    int id;
  };
  std::vector<Edge> edges;
  edges.reserve(static_cast<size_t>(n) * 4);
  for (int start = 0; start < n; ++start) {
    bool matched = false;
    const int max_len = std::min(max_piece_chars_, n - start);
    for (int len = 1; len <= max_len; ++len) {
      std::string_view sub(input.data() + offsets[start], offsets[start + len] - offsets[start]);
      auto it = index_.find(sub);
      if (it == index_.end()) break;  // no piece starts with `sub`: longer ones cannot match
      if (it->second.id < 0) continue;
      edges.push_back({start, start + len, it->second.score, it->second.id});
      matched = true;
    }
    // No piece starts here: one unknown character, id 0, score 0.
    if (!matched) edges.push_back({start, start + 1, 0.0, 0});
  }
  std::stable_sort(edges.begin(), edges.end(),
                   [](const Edge& a, const Edge& b) { return a.end < b.end; });

  std::vector<double> best(n + 1, 0.0);
  std::vector<int> words(n + 1, 0);
  for (const Edge& e : edges) {
    const double score = e.score + best[e.start];
    // best == 0 means "unset" in the reference; >= makes the later candidate win a tie.
    if (best[e.end] == 0 || score >= best[e.end]) {
      best[e.end] = score;
      words[e.end] = e.id;
    }
  }

  std::vector<int> reversed;
  for (int pos = n; pos > 0; pos -= utf16_length_[words[pos]]) reversed.push_back(words[pos]);

  std::vector<int> ids;
  ids.reserve(reversed.size());
  bool previous_unknown = false;
  for (int id : reversed) {
    if (!(previous_unknown && id == 0)) ids.push_back(id);
    previous_unknown = id == 0;
  }
  std::reverse(ids.begin(), ids.end());
  return ids;
}

}  // namespace engram
