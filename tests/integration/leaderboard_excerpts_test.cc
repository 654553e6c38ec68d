// Leaderboard search results as conversation excerpts (the default, --leaderboard-results
// excerpts): a result shows the matched turn with the turns of its session around it, in order,
// dated and with their speakers; adjacent matches merge; no turn is shown twice; the contract's
// shape holds (ids, scores best first, at most top_k); a turn sent as a ContentPart array keeps
// its image. With the default lead (--excerpt-lead-results), the first results show their matched
// turn alone and the turns around them follow.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/codec.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

constexpr int64_t kJan1 = 1704067200000;  // 2024-01-01T00:00:00Z (a Monday), Unix ms

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    out.push_back(text.substr(start, nl - start));
  }
  out.push_back(text.substr(start));
  return out;
}

class LeaderboardExcerptsTest : public SharedServerTest {
 protected:
  // Every result an excerpt around its match: no lead of matches shown alone.
  ServerOptions Options() const override { return {.extra_args = {"--excerpt-lead-results", "0"}}; }
  // Adds one session of `messages` for `user` and asserts success.
  void AddSession(const std::string& user, const std::string& session, json messages) {
    json body = AddBody(UniqueId("eval:run:excerpts:chunk"), user, session, std::move(messages));
    HttpResponse resp = client().Post(kAddPath, body);
    ASSERT_TRUE(IsAddSuccess(resp, body)) << resp.Describe();
  }
  // Thirteen turns of Ana and Ben, alternately, the seventh (index 6) the one that names `word`.
  static std::vector<std::string> MarketTurns(const std::string& word) {
    std::vector<std::string> texts;
    for (int i = 0; i < 13; ++i) {
      std::string text = i % 2 == 0 ? "Ana: " : "Ben: ";
      text += i == 6 ? "I finally bought the " + word + " at the market."
                     : "Turn number " + std::to_string(i) + " about the weather.";
      texts.push_back(std::move(text));
    }
    return texts;
  }
  // Adds `texts` as one session for `user`, a second apart from 2024-01-01, user and assistant
  // in turn.
  void AddTurns(const std::string& user, const std::vector<std::string>& texts) {
    json messages = json::array();
    for (size_t i = 0; i < texts.size(); ++i) {
      messages.push_back(Message(texts[i], kJan1 + static_cast<int64_t>(i) * 1000,
                                 i % 2 == 0 ? "user" : "assistant"));
    }
    AddSession(user, "s1", messages);
  }
  json Search(const std::string& user, const std::string& query, int top_k) {
    HttpResponse resp = client().Post(kSearchPath, SearchBody(user, query, top_k));
    EXPECT_EQ(resp.status, 200) << resp.Describe();
    json j = resp.Json();
    return j.is_object() && j["data"].is_array() ? j["data"] : json::array();
  }
};

TEST_F(LeaderboardExcerptsTest, AResultShowsTheTurnsAroundItsMatchInOrderWithSpeakers) {
  const std::string user = UniqueId("eval:run:excerpts:u");
  const std::string word = UniqueWord();
  std::vector<std::string> texts = MarketTurns(word);
  texts[8] = "A line that names no speaker.";
  AddTurns(user, texts);
  json data = Search(user, "Where did I buy the " + word + "?", 10);
  ASSERT_GE(data.size(), 1u);
  ASSERT_TRUE(data[0]["content"].is_string()) << data.dump();
  const std::vector<std::string> lines = Lines(data[0]["content"].get<std::string>());
  // The match with five turns before and after it (at least), in conversation order, each once.
  std::vector<size_t> shown;  // the lines that show a sent turn, in the order of the turns
  for (size_t i = 0; i < texts.size(); ++i) {
    size_t found = 0;
    for (size_t l = 0; l < lines.size(); ++l) {
      if (lines[l].size() >= texts[i].size() &&
          lines[l].compare(lines[l].size() - texts[i].size(), texts[i].size(), texts[i]) == 0) {
        shown.push_back(l);
        ++found;
      }
    }
    EXPECT_LE(found, 1u) << "turn " << i << " shown twice";
    if (i >= 1 && i <= 11) {
      EXPECT_EQ(found, 1u) << "turn " << i << " missing";
    }
  }
  EXPECT_TRUE(std::is_sorted(shown.begin(), shown.end())) << data[0]["content"];
  EXPECT_EQ(std::set<size_t>(shown.begin(), shown.end()).size(), shown.size());
  // One date for turns of the same minute, at the start; a speaker's label is kept, a turn
  // without one is labelled with its role.
  EXPECT_EQ(lines[0].rfind("[2024-01-01", 0), 0u) << lines[0];
  for (size_t l = 1; l < lines.size(); ++l) EXPECT_NE(lines[l][0], '[') << lines[l];
  EXPECT_NE(data[0]["content"].get<std::string>().find("\nuser: A line that names no speaker."),
            std::string::npos)
      << data[0]["content"];
  // The result is the matched turn's: its time.
  EXPECT_EQ(data[0]["created_at"], "2024-01-01T00:00:06.000Z");
}

TEST_F(LeaderboardExcerptsTest, ResultsKeepTheContractAndNeverRepeatATurn) {
  const std::string user = UniqueId("eval:run:excerpts:u");
  const std::string word = UniqueWord();
  // Three sessions that each mention the word once, far apart from one another in their session.
  for (int s = 0; s < 3; ++s) {
    json messages = json::array();
    for (int i = 0; i < 30; ++i) {
      std::string text = "Speaker " + std::to_string(i % 2) + " says filler line " +
                         std::to_string(i) + " of session " + std::to_string(s) + ".";
      if (i == 3 || i == 25)
        text = "We talked about the " + word + " today, session " + std::to_string(s) + " turn " +
               std::to_string(i) + ".";
      messages.push_back(Message(text, kJan1 + s * 86400000LL + i * 60000LL));
    }
    AddSession(user, "s" + std::to_string(s), messages);
  }
  json data = Search(user, "the " + word, 100);
  ASSERT_GE(data.size(), 6u) << "six matches, none adjacent: six results";
  double prev = 1e9;
  std::set<std::string> ids;
  std::set<std::string> lines_seen;
  for (const json& item : data) {
    ASSERT_TRUE(item.is_object() && item.size() == 4u) << item.dump();
    EXPECT_EQ(item["id"].get<std::string>().rfind("m-", 0), 0u);
    EXPECT_TRUE(ids.insert(item["id"]).second) << "duplicate id";
    EXPECT_LE(item["score"].get<double>(), prev + 1e-9) << "scores must not increase";
    prev = item["score"].get<double>();
    const std::string text = ContentText(item["content"]);
    EXPECT_FALSE(text.empty());
    for (std::string line : Lines(text)) {
      if (line.rfind("[", 0) == 0) line = line.substr(line.find("] ") + 2);
      EXPECT_TRUE(lines_seen.insert(line).second) << "a turn shown twice: " << line;
    }
  }
  EXPECT_EQ(CountContaining(data, word), 6);
  // The same search answers the same ids in the same order.
  json again = Search(user, "the " + word, 100);
  ASSERT_EQ(again.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) EXPECT_EQ(again[i]["id"], data[i]["id"]);
  // At most top_k results.
  EXPECT_EQ(Search(user, "the " + word, 2).size(), 2u);
}

TEST_F(LeaderboardExcerptsTest, ATurnSentAsContentPartsKeepsItsImage) {
  const std::string user = UniqueId("eval:run:excerpts:u");
  const std::string word = UniqueWord();
  AddSession(user, "s1",
             json::array({Message("Ana: My new " + word + " arrived this morning.", kJan1),
                          Message(json::array({{{"type", "text"}, {"text", "Ben: Show me!"}}}),
                                  kJan1 + 1000, "assistant"),
                          Message(json::array({{{"type", "text"}, {"text", "Ana: Here it is."}},
                                               ImagePart(TinyPngBytes())}),
                                  kJan1 + 2000)}));
  json data = Search(user, "my " + word, 10);
  ASSERT_EQ(data.size(), 1u) << data.dump().substr(0, 500);
  const json& content = data[0]["content"];
  ASSERT_TRUE(content.is_array()) << content.dump().substr(0, 500);
  int images = 0;
  for (const json& part : content) {
    if (part.value("type", "") != "image_url") continue;
    ++images;
    const std::string url = part["image_url"]["url"];
    ASSERT_EQ(url.rfind("data:image/png;base64,", 0), 0u);
    EXPECT_EQ(Base64Decode(url.substr(url.find(',') + 1)).value_or(""), TinyPngBytes());
  }
  EXPECT_EQ(images, 1);
  const std::string text = ContentText(content);
  EXPECT_NE(text.find("Ana: My new " + word), std::string::npos) << text;
  EXPECT_NE(text.find("Ben: Show me!"), std::string::npos) << text;
  EXPECT_NE(text.find("Ana: Here it is."), std::string::npos) << text;
}

// The server's defaults: a lead of matches shown alone, then the turns around them.
class LeaderboardLeadTest : public LeaderboardExcerptsTest {
 protected:
  ServerOptions Options() const override { return {}; }
};

TEST_F(LeaderboardLeadTest, TheBestMatchLeadsAloneAndTheTurnsAroundItFollowOnce) {
  const std::string user = UniqueId("eval:run:excerpts:u");
  const std::string word = UniqueWord();
  const std::vector<std::string> texts = MarketTurns(word);
  AddTurns(user, texts);
  json data = Search(user, "Where did I buy the " + word + "?", 100);
  ASSERT_GE(data.size(), 2u) << data.dump().substr(0, 500);
  // The first result is the match, alone, with its date.
  const std::string first = ContentText(data[0]["content"]);
  EXPECT_EQ(Lines(first).size(), 1u) << first;
  EXPECT_EQ(first.rfind("[2024-01-01", 0), 0u) << first;
  EXPECT_NE(first.find(texts[6]), std::string::npos) << first;
  EXPECT_EQ(data[0]["created_at"], "2024-01-01T00:00:06.000Z");
  // Every turn of the five before and after it is in the answer, each once; ids are unique and
  // scores never rise.
  std::string all;
  std::set<std::string> ids;
  double prev = 1e9;
  for (const json& item : data) {
    all += ContentText(item["content"]) + "\n";
    EXPECT_TRUE(ids.insert(item["id"].get<std::string>()).second) << "duplicate id";
    EXPECT_LE(item["score"].get<double>(), prev + 1e-9) << "scores must not increase";
    prev = item["score"].get<double>();
  }
  for (int i = 1; i <= 11; ++i) {
    const size_t at = all.find(texts[i]);
    EXPECT_NE(at, std::string::npos) << "turn " << i << " missing";
    if (at != std::string::npos) {
      EXPECT_EQ(all.find(texts[i], at + 1), std::string::npos) << "turn " << i << " twice";
    }
  }
}

}  // namespace
}  // namespace engram::testing
