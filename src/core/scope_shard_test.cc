#include "core/scope_shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

namespace engram {
namespace {

MemoryRecord Rec(int64_t seq, const std::string& session, int64_t time, const std::string& text,
                 std::vector<float> vec = {}) {
  MemoryRecord r;
  r.seq = seq;
  r.id = "m-" + std::to_string(seq);
  r.session_id = session;
  r.source_ts_us = time;
  r.text = text;
  r.created_at_us = 1;
  if (!vec.empty()) {
    r.vector = std::move(vec);
    r.vector_model = "test";
  }
  return r;
}

class ScopeShardTest : public ::testing::Test {
 protected:
  Analyzer analyzer_;
  ShardOptions opts_{.vectors = {.dim = 2, .hnsw_threshold = 0}, .vector_model = "test"};
};

TEST_F(ScopeShardTest, ApplyIsIdempotent) {
  ScopeShard shard(&analyzer_, opts_);
  shard.Apply({Rec(1, "s", 10, "alpha")});
  shard.Apply({Rec(1, "s", 10, "alpha"), Rec(2, "s", 20, "beta")});
  EXPECT_EQ(shard.size(), 2u);
}

TEST_F(ScopeShardTest, NeighboursFollowTheirHitInTurnOrderEvenWhenChunksArriveOutOfOrder) {
  ScopeShard shard(&analyzer_, opts_);
  // The second chunk of the session is written first.
  shard.Apply({Rec(1, "s", 30, "the weather is fine"), Rec(2, "s", 40, "see you tomorrow")});
  shard.Apply(
      {Rec(3, "s", 10, "what did you adopt last week"), Rec(4, "s", 20, "a puppy named rex")});
  shard.Apply({Rec(5, "other", 10, "unrelated words")});
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;
  opts.neighbour_placement = RetrievalOptions::NeighbourPlacement::kAfterHit;
  opts.window_share = 0;  // neighbours come only from the expansion under test
  auto hits = shard.Search(analyzer_.AnalyzeQuery("puppy"), {}, 3, opts);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].doc.id, "m-4");
  // Its neighbours in time order: the question before it and the turn after it.
  EXPECT_EQ(hits[1].doc.id, "m-3");
  EXPECT_EQ(hits[2].doc.id, "m-1");
  EXPECT_LT(hits[1].score, hits[0].score);

  opts.neighbours = 0;
  hits = shard.Search(analyzer_.AnalyzeQuery("puppy"), {}, 3, opts);
  ASSERT_EQ(hits.size(), 1u);
}

TEST_F(ScopeShardTest, ScoredNeighboursRankBelowStrongerHits) {
  ScopeShard shard(&analyzer_, opts_);
  shard.Apply({Rec(1, "a", 10, "we adopted a puppy"), Rec(2, "a", 20, "congratulations"),
               Rec(3, "b", 10, "puppy puppy training class"), Rec(4, "b", 20, "sounds fun"),
               // The weakest candidate, so min-max normalisation maps it (not m-1) to 0.
               Rec(5, "c", 10,
                   "a puppy came up once in this long story about gardens, rivers, "
                   "mountains, bicycles, bakeries and old friends")});
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;
  opts.fusion.method = FusionMethod::kScoreSum;
  opts.neighbour_placement = RetrievalOptions::NeighbourPlacement::kByScore;
  opts.neighbour_score_factor = 0.2f;
  opts.window_share = 0;
  auto hits = shard.Search(analyzer_.AnalyzeQuery("puppy training"), {}, 4, opts);
  ASSERT_EQ(hits.size(), 4u);
  // Both strong hits come before any neighbour; each neighbour inherits a fifth of its hit's score.
  EXPECT_EQ(hits[0].doc.id, "m-3");
  EXPECT_EQ(hits[1].doc.id, "m-1");
  EXPECT_EQ(hits[2].doc.id, "m-4");
  EXPECT_EQ(hits[3].doc.id, "m-2");
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].score, hits[i].score);
}

TEST_F(ScopeShardTest, AShortQuestionRanksBelowTheReplyItGetsItsScoreFrom) {
  ScopeShard shard(&analyzer_, opts_);
  shard.Apply({Rec(1, "s", 10, "How long have you been playing professionally?"),
               Rec(2, "s", 20, "Just under a year now. It has been a wild ride."),
               Rec(3, "s", 30, "Nice.")});
  // A long turn that states something before it asks is ranked like any other turn.
  const std::string long_ask =
      "I have been playing professionally in a small club since last spring and I train every "
      "morning before work, so I wonder: is that too much?";
  shard.Apply({Rec(4, "t", 10, long_ask), Rec(5, "t", 20, "Not at all.")});
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;
  opts.window_share = 0;
  opts.neighbour_score_factor = 0.5f;
  opts.question_factor = 0.8f;
  opts.reply_score_factor = 1.0f;
  opts.question_max_chars = 100;
  ASSERT_GT(long_ask.size(), opts.question_max_chars);
  auto hits = shard.Search(analyzer_.AnalyzeQuery("how long playing professionally"), {}, 10, opts);
  std::map<std::string, float> score;
  std::vector<std::string> order;
  for (const auto& h : hits) {
    score[h.doc.id] = h.score;
    order.push_back(h.doc.id);
  }
  ASSERT_TRUE(score.count("m-1") && score.count("m-2") && score.count("m-4") && score.count("m-5"));
  // The reply inherits the question's full score; the question keeps 0.8 of it.
  EXPECT_FLOAT_EQ(score["m-2"] * 0.8f, score["m-1"]);
  EXPECT_LT(std::find(order.begin(), order.end(), "m-2"),
            std::find(order.begin(), order.end(), "m-1"));
  // The long asking turn keeps its score and lends its reply the ordinary neighbour share.
  EXPECT_FLOAT_EQ(score["m-4"] * 0.5f, score["m-5"]);
  // Only hits lend: m-3 follows the reply m-2, which matches nothing itself, so m-3 is absent.
  EXPECT_EQ(score.count("m-3"), 0u);

  // Off: the question ranks first and its reply gets the ordinary share.
  opts.question_factor = 1.0f;
  opts.reply_score_factor = opts.neighbour_score_factor;
  hits = shard.Search(analyzer_.AnalyzeQuery("how long playing professionally"), {}, 10, opts);
  ASSERT_GE(hits.size(), 2u);
  EXPECT_EQ(hits[0].doc.id, "m-1");
  for (const auto& h : hits) {
    if (h.doc.id == "m-2") {
      EXPECT_FLOAT_EQ(h.score, hits[0].score * 0.5f);
    }
  }
}

TEST_F(ScopeShardTest, WindowLetsAReplyMatchTheQuestionItAnswers) {
  ScopeShard shard(&analyzer_, opts_);
  // Chunks out of order again: the window must follow turn order, not write order.
  shard.Apply({Rec(3, "s", 30, "Definitely! And some old friends from the tournaments."),
               Rec(4, "s", 40, "That will be a blast.")});
  shard.Apply({Rec(1, "s", 10, "I am planning a gaming party next month."),
               Rec(2, "s", 20, "Who will you invite to the gaming party?")});
  shard.Apply({Rec(5, "t", 10, "I invited old friends to dinner."),
               Rec(6, "t", 20, "The dinner was fun.")});
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;
  opts.neighbours = 0;
  const auto query = analyzer_.AnalyzeQuery("Who did Nate invite to his gaming party, friends?");
  auto rank_of = [&](const std::vector<ShardHit>& hits, const std::string& id) {
    for (size_t i = 0; i < hits.size(); ++i) {
      if (hits[i].doc.id == id) return static_cast<int>(i);
    }
    return -1;
  };
  opts.window_share = 0;
  auto alone = shard.Search(query, {}, 10, opts);
  opts.window_share = 0.5f;
  auto windowed = shard.Search(query, {}, 10, opts);
  // Alone, the reply matches only "friends" and ranks below the other session's turn that has
  // "invited" and "friends"; with half of its question's words it overtakes it.
  EXPECT_GT(rank_of(alone, "m-3"), rank_of(alone, "m-5"));
  EXPECT_LT(rank_of(windowed, "m-3"), rank_of(windowed, "m-5"));
  // A turn with no query word of its own is found through its neighbour ...
  EXPECT_EQ(rank_of(alone, "m-4"), -1);
  EXPECT_GE(rank_of(windowed, "m-4"), 0);
  for (size_t i = 1; i < windowed.size(); ++i) {
    EXPECT_GE(windowed[i - 1].score, windowed[i].score);
  }
}

TEST_F(ScopeShardTest, DatesNamedInTheQueryLiftTurnsFromThen) {
  ScopeShard shard(&analyzer_, opts_);
  constexpr int64_t kDay = 86400LL * 1000 * 1000;
  const int64_t dec11 = 19702 * kDay;  // 2023-12-11
  // Equal lexical evidence; the turn written first (lower doc id) wins a BM25 tie.
  shard.Apply({Rec(3, "c", dec11 + 40 * kDay, "the project is finally done"),
               Rec(1, "a", dec11 - 200 * kDay, "the project at work today"),
               Rec(2, "b", dec11 + 3600LL * 1000 * 1000, "the project deadline moved")});
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;
  opts.neighbours = 0;
  const std::string question = "What did they say about the project on 11 December, 2023?";
  const auto dates = ParseQueryDates(question);
  ASSERT_TRUE(dates.has_value());
  auto hits = shard.Search(analyzer_.AnalyzeQuery(question), {}, 3, opts, dates);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].doc.id, "m-2");
  opts.time_weight = 0;
  hits = shard.Search(analyzer_.AnalyzeQuery(question), {}, 3, opts, dates);
  EXPECT_EQ(hits[0].doc.id, "m-3");
}

TEST_F(ScopeShardTest, WindowedRankingMatchesBruteForce) {
  // Random turns in sessions of 7 over a small vocabulary (so many turns match and the pruning
  // has work to do); the shard's top-k must be the brute-force top-k of the window formula.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> word(0, 40), length(1, 12);
  std::vector<MemoryRecord> records;
  std::vector<std::vector<std::string>> terms;
  for (int i = 0; i < 600; ++i) {
    std::string text;
    for (int w = length(rng); w > 0; --w)
      text += "w" + std::to_string(word(rng) * word(rng) / 40) + " ";
    records.push_back(Rec(i + 1, "s" + std::to_string(i / 7), i, text));
    terms.push_back(analyzer_.Analyze(text));
  }
  ScopeShard shard(&analyzer_, opts_);
  shard.Apply(records);
  Bm25Index reference;
  for (size_t i = 0; i < terms.size(); ++i) reference.Add(static_cast<DocId>(i), terms[i]);
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;
  opts.neighbours = 0;
  for (int q = 0; q < 40; ++q) {
    std::vector<std::string> query;
    for (int w = 1 + q % 4; w > 0; --w)
      query.push_back("w" + std::to_string(word(rng) * word(rng) / 40));
    std::map<DocId, std::map<size_t, float>> own;
    reference.ForEachContribution(query, [&](size_t t, DocId d, float c) { own[d][t] = c; });
    std::vector<std::pair<float, std::string>> expected;
    for (DocId d = 0; d < terms.size(); ++d) {
      std::map<size_t, float> best = own.count(d) ? own[d] : std::map<size_t, float>{};
      for (long n : {static_cast<long>(d) - 1, static_cast<long>(d) + 1}) {
        if (n < 0 || n >= static_cast<long>(terms.size()) || n / 7 != static_cast<long>(d) / 7)
          continue;
        if (!own.count(static_cast<DocId>(n))) continue;
        for (const auto& [t, c] : own[static_cast<DocId>(n)]) best[t] = std::max(best[t], 0.5f * c);
      }
      float score = 0;
      for (const auto& [t, c] : best) score += c;
      if (score > 0) expected.push_back({score, records[d].id});
    }
    std::sort(expected.begin(), expected.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    const size_t k = 15;
    auto hits = shard.Search(query, {}, k, opts);
    ASSERT_EQ(hits.size(), std::min(k, expected.size())) << q;
    for (size_t i = 0; i < hits.size(); ++i) {
      // Equal scores may come in either order; compare the score at each rank instead of the id
      // when the expected scores tie.
      auto it = std::find_if(expected.begin(), expected.end(),
                             [&](const auto& e) { return e.second == hits[i].doc.id; });
      ASSERT_NE(it, expected.end());
      EXPECT_NEAR(it->first, expected[i].first, 1e-4) << "query " << q << " rank " << i;
    }
  }
}

TEST_F(ScopeShardTest, HybridFindsWhatBm25Misses) {
  ScopeShard shard(&analyzer_, opts_);
  shard.Apply({Rec(1, "a", 1, "I enjoy espresso", {1.0f, 0.0f}),
               Rec(2, "b", 1, "the train leaves at noon", {0.0f, 1.0f})});
  RetrievalOptions opts;
  opts.neighbours = 0;
  std::vector<float> q = {0.99f, 0.141f};  // semantically close to doc 1, no shared words
  auto hits = shard.Search(analyzer_.AnalyzeQuery("favourite drinks"), q, 1, opts);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].doc.id, "m-1");
  opts.mode = RetrievalMode::kBm25;
  EXPECT_TRUE(shard.Search(analyzer_.AnalyzeQuery("favourite drinks"), q, 1, opts).empty());
}

TEST_F(ScopeShardTest, ReportsAndAcceptsMissingVectors) {
  ScopeShard shard(&analyzer_, opts_);
  auto other_model = Rec(2, "a", 1, "beta", {0.0f, 1.0f});
  other_model.vector_model = "old-model";
  shard.Apply({Rec(1, "a", 1, "alpha", {1.0f, 0.0f}), other_model});
  auto missing = shard.MissingVectors();
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].first, 2);
  shard.ApplyVectors({{2, "test", {0.0f, 1.0f}}});
  EXPECT_TRUE(shard.MissingVectors().empty());
}

// A source file of `functions` C functions of about 400 bytes each, with a file name on top.
std::string SourceFile(int functions) {
  std::string text = "File: src/engine.c\n\n";
  for (int i = 0; i < functions; ++i) {
    text += "int function_" + std::to_string(i) + "(int a, int b) {\n";
    for (int line = 0; line < 10; ++line) {
      text += "  total = compute(a, b, " + std::to_string(line) + ") + total;\n";
    }
    text += "  return total;\n}\n\n";
  }
  return text;
}

size_t Lines(std::string_view text) { return std::count(text.begin(), text.end(), '\n'); }

TEST_F(ScopeShardTest, LongMessagesAreSearchedAsPassagesAndReturnedOnceAsExcerpts) {
  ScopeShard shard(&analyzer_, opts_);
  const std::string source = SourceFile(60);
  ASSERT_GT(SplitPassages(source).size(), 5u);
  shard.Apply({Rec(1, "s", 10, "can you look at the engine code"), Rec(2, "s", 20, source),
               Rec(3, "s", 30, "thanks, compute looks right")});
  EXPECT_EQ(shard.size(), 3u);  // messages, not passages
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;

  // One function's name: the passage that defines it, with the message's place.
  auto hits = shard.Search(analyzer_.AnalyzeQuery("function_37"), {}, 5, opts);
  ASSERT_FALSE(hits.empty());
  const ShardDoc& d = hits[0].doc;
  EXPECT_EQ(d.id, "m-2");
  EXPECT_NE(d.text.find("int function_37("), std::string::npos);
  EXPECT_LE(d.text.size(), kMaxExcerptBytes);
  ASSERT_TRUE(d.shape);
  EXPECT_EQ(d.shape->title, "File: src/engine.c");
  EXPECT_EQ(d.shape->bytes, source.size());
  EXPECT_EQ(d.shape->lines, Lines(source));
  // The lines it names are the lines it holds.
  EXPECT_EQ(source.substr(d.begin, d.text.size()), d.text);
  EXPECT_EQ(d.first_line, Lines(source.substr(0, d.begin)) + 1);
  EXPECT_EQ(d.last_line, d.first_line + Lines(d.text) - 1);

  // A word in every passage: the message still comes once, beside the chat turns.
  hits = shard.Search(analyzer_.AnalyzeQuery("compute total"), {}, 10, opts);
  std::map<std::string, int> seen;
  for (const auto& h : hits) {
    ++seen[h.doc.id];
    EXPECT_LE(h.doc.text.size(), kMaxExcerptBytes);
  }
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(seen.count("m-2"), 1u);
  EXPECT_EQ(seen.count("m-3"), 1u);
}

// An explained search ranks exactly as a plain one, and each hit carries the fusion of the doc its
// score came from: turns alone, turns as excerpts of their session, passages of a long message.
TEST_F(ScopeShardTest, AnExplainedSearchRanksTheSameAndSaysHowEachHitScored) {
  ScopeShard chat(&analyzer_, opts_);
  chat.Apply({Rec(1, "s", 10, "what did you adopt last week", {0.f, 1.f}),
              Rec(2, "s", 20, "a puppy named rex", {1.f, 0.f}),
              Rec(3, "s", 30, "the puppy sleeps all day", {0.6f, 0.8f}),
              Rec(4, "t", 40, "compute the puppy's age", {0.8f, 0.6f})});
  ScopeShard code(&analyzer_, opts_);
  code.Apply({Rec(1, "s", 10, "a puppy named rex", {1.f, 0.f}),
              Rec(2, "t", 40, SourceFile(60), {0.8f, 0.6f})});
  for (const auto& [shard, excerpts, path] :
       std::vector<std::tuple<const ScopeShard*, bool, const char*>>{
           {&chat, false, "turns"}, {&chat, true, "excerpts"}, {&code, false, "passages"}}) {
    SCOPED_TRACE(path);
    RetrievalOptions opts;
    opts.excerpts = excerpts;
    const auto terms = analyzer_.AnalyzeQuery("puppy compute");
    const std::vector<float> q = {1.f, 0.f};
    const auto plain = shard->Search(terms, q, 4, opts);
    const auto explained = shard->Search(terms, q, 4, opts, std::nullopt, /*explain=*/true);
    ASSERT_EQ(plain.size(), explained.size());
    ASSERT_FALSE(plain.empty());
    int fused = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].doc.id, explained[i].doc.id);
      EXPECT_EQ(plain[i].score, explained[i].score);
      EXPECT_FALSE(plain[i].explain.has_value());
      ASSERT_TRUE(explained[i].explain.has_value()) << i;
      const SearchExplanation& e = *explained[i].explain;
      EXPECT_EQ(e.ranked_score, explained[i].score);
      if (!e.fusion) continue;  // a turn brought in beside a hit
      ++fused;
      EXPECT_TRUE(e.fusion->lexical.has_value() || e.fusion->vector.has_value());
    }
    EXPECT_GT(fused, 0);
  }
}

// An excerpt's turns carry each turn's own role, text, parts and time, in conversation order.
TEST_F(ScopeShardTest, AnExcerptShowsEachTurnsOwnFields) {
  ScopeShard shard(&analyzer_, opts_);
  std::vector<MemoryRecord> recs = {Rec(1, "s", 10, "what did you adopt last week"),
                                    Rec(2, "s", 20, "a puppy named rex"),
                                    Rec(3, "s", 30, "he sleeps all day")};
  recs[0].role = "user";
  recs[1].role = "assistant";
  recs[1].parts_json = R"([{"type":"text","text":"a puppy named rex"}])";
  recs[2].role = "user";
  shard.Apply(recs);
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kBm25;
  opts.excerpts = true;
  opts.excerpt.turns_before = 1;
  opts.excerpt.turns_after = 1;
  const auto hits = shard.Search(analyzer_.AnalyzeQuery("puppy"), {}, 1, opts);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].doc.id, "m-2");
  ASSERT_EQ(hits[0].turns.size(), 3u);
  EXPECT_EQ(hits[0].anchor, 1u);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(hits[0].turns[i].role, recs[i].role);
    EXPECT_EQ(hits[0].turns[i].text, recs[i].text);
    EXPECT_EQ(hits[0].turns[i].parts_json, recs[i].parts_json);
    EXPECT_EQ(hits[0].turns[i].time_us, *recs[i].source_ts_us);
  }
}

TEST_F(ScopeShardTest, PassagesTakeTheirVectorsFromTheMessagesStoredVector) {
  const std::string source = SourceFile(40);
  const size_t n = SplitPassages(source).size();
  ASSERT_GT(n, 2u);
  // One vector per passage, concatenated: every passage has its own, nothing is missing.
  std::vector<float> stored;
  for (size_t i = 0; i < n; ++i) {
    stored.push_back(i == 5 ? 1.f : 0.f);
    stored.push_back(i == 5 ? 0.f : 1.f);
  }
  {
    ScopeShard shard(&analyzer_, opts_);
    shard.Apply({Rec(1, "s", 10, source, stored), Rec(2, "s", 20, "short turn", {0.f, 1.f})});
    EXPECT_TRUE(shard.MissingVectors().empty());
    RetrievalOptions opts;
    opts.mode = RetrievalMode::kVector;
    opts.neighbours = 0;
    opts.relevance_floor = 0;
    auto hits = shard.Search({}, {1.f, 0.f}, 1, opts);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].doc.passage, 5u);  // the passage whose vector matches
  }
  {
    // A whole-message vector fits none of the passages: the message is embedded again, whole
    // text, and its passages take the vectors that come back.
    ScopeShard shard(&analyzer_, opts_);
    shard.Apply({Rec(1, "s", 10, source, {1.f, 0.f})});
    auto missing = shard.MissingVectors();
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_EQ(missing[0].first, 1);
    EXPECT_EQ(missing[0].second, source);
    shard.ApplyVectors({{.seq = 1, .model = "test", .vector = stored}});
    EXPECT_TRUE(shard.MissingVectors().empty());
  }
}

TEST_F(ScopeShardTest, AnExcerptShowsThePassageThatHoldsTheQuerysWords) {
  // The vectors favour the file's first passage; the query's identifier is far into the file.
  // The message ranks by its best passage, and its excerpt is where the identifier is.
  const std::string source = SourceFile(60);
  const auto spans = SplitPassages(source);
  std::vector<float> stored;
  for (size_t i = 0; i < spans.size(); ++i) {
    stored.push_back(i == 0 ? 1.f : 0.f);
    stored.push_back(i == 0 ? 0.f : 1.f);
  }
  ScopeShard shard(&analyzer_, opts_);
  shard.Apply({Rec(1, "s", 10, source, stored)});
  RetrievalOptions opts;
  opts.mode = RetrievalMode::kHybrid;
  opts.relevance_floor = 0;
  for (float window_share : {0.5f, 0.f}) {
    opts.window_share = window_share;
    auto hits = shard.Search(analyzer_.AnalyzeQuery("function_41"), {1.f, 0.f}, 3, opts);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_NE(hits[0].doc.text.find("int function_41("), std::string::npos)
        << "window share " << window_share << ": lines " << hits[0].doc.first_line << "-"
        << hits[0].doc.last_line;
  }
}

}  // namespace
}  // namespace engram
