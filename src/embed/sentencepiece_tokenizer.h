// SentencePiece unigram tokeniser, a faithful port of the tokeniser that ships with the built-in
// model's JavaScript runtime (@energetic-ai/embeddings 0.2.0, itself the tfjs-models USE
// tokeniser).
//
// The token ids must be bit-for-bit what the reference runtime produces, because the model was
// trained on (and the reference vectors were computed with) exactly these ids. So the quirks of the
// reference are kept on purpose, not "fixed":
//   - input is NFKC-normalised, every U+0020 becomes "▁" (U+2581) and one "▁" is prefixed (only
//     when the normalised text is non-empty); no lower-casing, other whitespace is kept as is;
//   - the first kReservedPieces pieces ("�", "<s>", "</s>", extra ids) are never matched;
//   - a piece listed twice resolves to its last occurrence (the reference trie overwrites);
//   - Viterbi over (piece, score) with double arithmetic; a position whose best score is still
//     exactly 0 counts as unset, and on equal scores the later candidate (the shorter piece) wins;
//   - a character no piece starts with becomes id 0 (score 0); consecutive id-0 tokens merge;
//   - a null score in vocab.json counts as 0.
// Token id == index in vocab.json == row of the model's embedding table (the table has two extra
// rows, 8000 and 8001, that no id reaches; see use_lite.h).
//
// Thread-safety: immutable after construction; Encode() is safe to call from many threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"

namespace engram {

class SentencePieceTokenizer {
 public:
  // Pieces below this index are control symbols the reference never matches.
  static constexpr int kReservedPieces = 6;

  // One vocabulary entry: the piece as UTF-8 and its log-probability score.
  struct Piece {
    std::string text;
    double score = 0;
  };

  // Builds a tokeniser from pieces in id order.
  explicit SentencePieceTokenizer(std::vector<Piece> pieces);

  // Reads vocab.json: a JSON array of [piece, score|null] pairs, index = id.
  static Result<std::unique_ptr<SentencePieceTokenizer>> LoadVocabJson(const std::string& path);

  // Token ids for `text` (UTF-8; invalid sequences become U+FFFD before normalisation). Not capped:
  // the caller decides how to window long inputs. Empty or all-empty-after-NFKC text gives no ids.
  std::vector<int> Encode(std::string_view text) const;

  // NFKC + "▁" handling, exposed for tests: the string Viterbi runs over.
  static std::string Preprocess(std::string_view text);

  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int id) const { return pieces_[id].text; }

 private:
  // A prefix of at least one matchable piece; id < 0 when it is not itself a piece. Keeping the
  // prefixes lets Encode stop extending a candidate as soon as no piece can match, like a trie
  // walk.
  struct Match {
    double score;
    int id;
  };
  // Hashes string_view and std::string alike so lookups need no temporary string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<Piece> pieces_;
  // Length of each piece in UTF-16 code units: the reference steps back by this when it reads the
  // best path, so we do too.
  std::vector<int> utf16_length_;
  // Matchable piece text (and every prefix of one) -> (score, id); the last duplicate wins, as in
  // the reference trie.
  std::unordered_map<std::string, Match, Hash, std::equal_to<>> index_;
  int max_piece_chars_ = 1;  // longest piece in code points, bounds the prefix search
};

}  // namespace engram
