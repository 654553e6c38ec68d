// The export format's lines: every record reads back as it was written, and a bad line is refused
// naming the field.
#include "transfer/export_format.h"

#include <gtest/gtest.h>

#include "common/codec.h"

namespace engram::transfer {
namespace {

using json = nlohmann::json;

std::string Problem(const json& line) {
  auto item = DecodeItem(line);
  EXPECT_FALSE(item.ok());
  EXPECT_EQ(item.status().code(), StatusCode::kInvalidParameter);
  return std::string(item.status().message());
}

TEST(ExportFormatTest, AnAgentMemoryReadsBackAsWritten) {
  AgentMemoryImport item;
  item.memory.workspace = "w";
  item.memory.id = "m-1";
  item.memory.user_id = "u";
  item.memory.text = "likes tea";
  item.memory.metadata_json = R"({"a":[1,2]})";
  item.memory.categories = {"food", "drink"};
  item.memory.created_at_us = 5;
  item.memory.updated_at_us = 6;
  item.memory.expires_at_us = 7;
  item.memory.vector = {0.1f, -3.5f, 1e-8f};
  item.memory.vector_model = "use-lite";
  item.memory.provenance_json = R"({"event_id":"me-1"})";
  item.history = {{.memory_id = "m-1",
                   .event = "ADD",
                   .new_text = "likes tea",
                   .new_metadata_json = "{}",
                   .at_us = 5}};
  item.feedback = {{.id = "mf-1", .memory_id = "m-1", .feedback = "NEGATIVE", .created_at_us = 8}};

  auto decoded = DecodeItem(json::parse(EncodeAgentMemory(item, true).dump()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto& got = std::get<AgentMemoryImport>(*decoded);
  EXPECT_EQ(got.memory.text, item.memory.text);
  EXPECT_EQ(got.memory.metadata_json, item.memory.metadata_json);
  EXPECT_EQ(got.memory.categories, item.memory.categories);
  EXPECT_EQ(got.memory.expires_at_us, item.memory.expires_at_us);
  EXPECT_EQ(got.memory.vector, item.memory.vector);  // bit for bit
  EXPECT_EQ(got.memory.provenance_json, item.memory.provenance_json);
  EXPECT_TRUE(got.memory.parts_json.empty());
  EXPECT_FALSE(got.memory.source_ts_us.has_value());
  ASSERT_EQ(got.history.size(), 1u);
  EXPECT_EQ(got.history[0].new_text, std::optional<std::string>("likes tea"));
  EXPECT_EQ(got.history[0].old_text, std::nullopt);
  EXPECT_EQ(got.history[0].memory_id, "m-1");
  ASSERT_EQ(got.feedback.size(), 1u);
  EXPECT_EQ(got.feedback[0].feedback, "NEGATIVE");

  // Without vectors the line carries none.
  EXPECT_FALSE(EncodeAgentMemory(item, false).contains("vector"));
}

TEST(ExportFormatTest, AnImageMustMatchItsHash) {
  ImageBlob image{.sha256 = Sha256Hex("bytes"), .mime = "image/png", .bytes = "bytes"};
  json line = EncodeImage(image);
  auto decoded = DecodeItem(line);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(std::get<ImageBlob>(*decoded).bytes, "bytes");
  line["data"] = Base64Encode("other bytes");
  EXPECT_EQ(Problem(line), "image.sha256: does not match the image's bytes");
}

TEST(ExportFormatTest, BadLinesNameTheirField) {
  EXPECT_EQ(Problem(json::array()), "type: missing or not a string");
  EXPECT_EQ(Problem({{"type", "memo"}}),
            "type: \"memo\" is not image, leaderboard_message, memory, skill or kb_document");
  EXPECT_EQ(Problem({{"type", "memory"}, {"workspace", "w"}}), "memory.id: missing");
  EXPECT_EQ(Problem({{"type", "leaderboard_message"},
                     {"workspace", "w"},
                     {"id", "m"},
                     {"text", "t"},
                     {"created_at_us", 1},
                     {"updated_at_us", 1}}),
            "leaderboard_message.user_id: missing");
  json memory = {{"type", "memory"},
                 {"workspace", "w"},
                 {"id", "m"},
                 {"text", "t"},
                 {"created_at_us", 1},
                 {"updated_at_us", 1},
                 {"history", json::array({{{"event", "ADD"}, {"at_us", 1}},
                                          {{"event", "MOVE"}, {"at_us", 2}}})}};
  EXPECT_EQ(Problem(memory), "memory.history[1].event: expected ADD, UPDATE or DELETE");
  memory["history"] = json::array();
  memory["vector"] = {{"model", "m"}, {"data", "!!"}};
  EXPECT_EQ(Problem(memory), "memory.vector.data: expected base64 of float32 values");
  json message = {{"type", "leaderboard_message"},
                  {"workspace", "w"},
                  {"user_id", "u"},
                  {"id", "m"},
                  {"text", "t"},
                  {"created_at_us", 1},
                  {"updated_at_us", 1}};
  message["parts"] = json::array({"just text"});
  EXPECT_EQ(Problem(message),
            "leaderboard_message.parts: expected an array of text and image parts");
  message["parts"] = json::array({{{"type", "image"}, {"sha256", 5}, {"mime", "image/png"}}});
  EXPECT_EQ(Problem(message),
            "leaderboard_message.parts: expected an array of text and image parts");
  message["parts"] = nullptr;
  message["metadata"] = "{}";
  EXPECT_EQ(Problem(message), "leaderboard_message.metadata: expected an object");
  message["metadata"] = json::object();
  message["position"] = -1;
  EXPECT_EQ(Problem(message),
            "leaderboard_message.position: expected an integer from 0 to 2147483647");
  message["position"] = 0;
  message["id"] = "";
  EXPECT_EQ(Problem(message), "leaderboard_message.id: must not be empty");
  message["id"] = "m";
  EXPECT_TRUE(DecodeItem(message).ok());
  json skill = {{"type", "skill"},    {"workspace", "w"},
                {"id", "s"},          {"owner", "u"},
                {"name", "n"},        {"created_at_us", 1},
                {"updated_at_us", 1}, {"files", {{"run.sh", "echo"}}}};
  EXPECT_EQ(Problem(skill), "skill.files: SKILL.md missing");
  json doc = {
      {"type", "kb_document"}, {"workspace", "w"}, {"kb_id", "kb"},      {"id", "d"},
      {"job_id", "j"},         {"status", "DONE"}, {"created_at_us", 1}, {"updated_at_us", 1}};
  EXPECT_EQ(Problem(doc), "kb_document.status: expected PROCESSING, SUCCESS or FAIL");
}

TEST(ExportFormatTest, TheHeaderNamesTheFormatAndAVersionThisBinaryReads) {
  json header = EncodeHeader({.engram_version = "1.2.3", .created_at = "2026-01-01T00:00:00Z"});
  auto decoded = DecodeHeader(header);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->version, kFormatVersion);
  EXPECT_TRUE(decoded->vectors);
  header["version"] = kFormatVersion + 1;
  EXPECT_EQ(DecodeHeader(header).status().code(), StatusCode::kInvalidParameter);
  header["format"] = "mem0";
  EXPECT_EQ(std::string(DecodeHeader(header).status().message()),
            "header.format: expected \"engram-export\" (not an Engram export)");
}

}  // namespace
}  // namespace engram::transfer
