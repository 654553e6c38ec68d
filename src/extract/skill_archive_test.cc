#include "extract/skill_archive.h"

#include <gtest/gtest.h>

#include "zip_writer.h"

namespace engram {
namespace {

using testing::MakeRawZip;
using testing::MakeZip;
using testing::RawZipEntry;
using testing::SkillMd;
using testing::ZipEntry;
using Kind = ZipEntry::Kind;

std::string Error(const std::vector<ZipEntry>& entries, SkillArchiveLimits limits = {}) {
  auto r = ParseSkillArchive(MakeZip(entries), limits);
  if (r.ok()) return "OK";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidParameter);
  return r.status().message();
}

TEST(SkillArchiveTest, OneSkillAtTheRoot) {
  auto r = ParseSkillArchive(MakeZip({{"SKILL.md", SkillMd({"name: a", "description: d"})},
                                      {"scripts/run.sh", "echo hi\n"},
                                      {"_meta.json", R"({"owner":"x"})"},
                                      {"./references/", "", Kind::kDir},
                                      {"references/doc.md", "doc"}}),
                             {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  const SkillPackage& p = (*r)[0];
  EXPECT_EQ(p.folder, "");
  EXPECT_EQ(p.skill_md.front.name, "a");
  EXPECT_EQ(p.meta_json, R"({"owner":"x"})");
  EXPECT_EQ(p.files.size(), 4u);
  EXPECT_EQ(p.files.at("scripts/run.sh"), "echo hi\n");
  EXPECT_TRUE(p.files.count("references/doc.md"));
}

TEST(SkillArchiveTest, OneSkillPerFolder) {
  auto r = ParseSkillArchive(MakeZip({{"one/SKILL.md", SkillMd({"name: one", "description: d1"})},
                                      {"two/SKILL.md", SkillMd({"name: two", "description: d2"})},
                                      {"two/assets/t.txt", "t"},
                                      {"README.md", "ignored"},
                                      {"__MACOSX/one/._SKILL.md", "\xff\xfe junk"}}),
                             {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].folder, "one");
  EXPECT_EQ((*r)[1].skill_md.front.name, "two");
  EXPECT_EQ((*r)[1].files.at("assets/t.txt"), "t");
}

TEST(SkillArchiveTest, RejectsHostileEntries) {
  const std::string ok_md = SkillMd({"name: a", "description: d"});
  EXPECT_NE(Error({{"SKILL.md", ok_md}, {"../evil.sh", "x"}}).find("path traversal"),
            std::string::npos);
  EXPECT_NE(Error({{"SKILL.md", ok_md}, {"a/../../evil", "x"}}).find("path traversal"),
            std::string::npos);
  EXPECT_NE(Error({{"SKILL.md", ok_md}, {"/etc/passwd", "x"}}).find("absolute"), std::string::npos);
  EXPECT_NE(
      Error({{"SKILL.md", ok_md}, {"link", "/etc/passwd", Kind::kSymlink}}).find("symbolic link"),
      std::string::npos);
  EXPECT_NE(Error({{"SKILL.md", ok_md}, {"SKILL.md", ok_md}}).find("twice"), std::string::npos);
}

TEST(SkillArchiveTest, CountsFilesAndRealBytes) {
  std::vector<ZipEntry> many = {{"SKILL.md", SkillMd({"name: a", "description: d"})}};
  for (int i = 0; i < 10; ++i) many.push_back({"f" + std::to_string(i), "x"});
  SkillArchiveLimits limits;
  limits.max_files = 5;
  EXPECT_NE(Error(many, limits).find("more than 5 files"), std::string::npos);
  // A highly compressible file far over the limit: stopped while decompressing.
  limits = {};
  limits.max_total_bytes = 1 << 20;
  std::string bomb(8 << 20, '\0');
  std::string zip = MakeZip({{"SKILL.md", SkillMd({"name: a", "description: d"})}, {"bomb", bomb}});
  EXPECT_LT(zip.size(), 100000u);
  auto r = ParseSkillArchive(zip, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("zip bomb"), std::string::npos);
}

TEST(SkillArchiveTest, NamesTheSkillAndTheProblem) {
  EXPECT_EQ(Error({{"x/SKILL.md", SkillMd({"name: a", "description: d"})}, {"y/notes.md", "n"}}),
            "skill folder 'y': SKILL.md is missing");
  EXPECT_EQ(Error({{"x/SKILL.md", SkillMd({"description: d"})}}),
            "skill folder 'x': name is required");
  EXPECT_EQ(Error({{"SKILL.md", SkillMd({"name: a"})}}),
            "skill at the archive root: description is required");
  EXPECT_EQ(Error({{"x/SKILL.md", "---\nname: a\ndescription: caf\xe9\n---\n"}}),
            "skill folder 'x': SKILL.md is not UTF-8 text");
  EXPECT_EQ(Error({{"x/SKILL.md", SkillMd({"name: a", "description: d"})},
                   {"x/run.sh", std::string("echo\0hi", 7)}}),
            "skill folder 'x': run.sh is not UTF-8 text");
  EXPECT_EQ(Error({{"x/SKILL.md", SkillMd({"name: a", "description: d"})},
                   {"y/SKILL.md", SkillMd({"name: a", "description: d"})}}),
            "skill folder 'y': another skill of the archive is also named 'a'");
  EXPECT_EQ(Error({{"SKILL.md", SkillMd({"name: a", "description: d"})}, {"_meta.json", "[1]"}}),
            "skill at the archive root: _meta.json must be a JSON object");
}

std::string RawError(const std::vector<RawZipEntry>& entries) {
  auto r = ParseSkillArchive(MakeRawZip(entries), {});
  if (r.ok()) return "OK";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidParameter);
  return r.status().message();
}

TEST(SkillArchiveTest, RawZipsOfRegularFilesAreRead) {
  auto r = ParseSkillArchive(MakeRawZip({{"SKILL.md", SkillMd({"name: a", "description: d"})},
                                         {"scripts/x.sh", "echo\n"},
                                         {"scripts/", "", 040755}}),
                             {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].files.at("scripts/x.sh"), "echo\n");
}

// libarchive reports a FIFO as a regular file and keeps names only up to a NUL: both are read
// from the central directory instead.
TEST(SkillArchiveTest, RejectsEntriesThatAreNotFilesOrFolders) {
  const RawZipEntry md{"SKILL.md", SkillMd({"name: a", "description: d"})};
  EXPECT_EQ(RawError({md, {"pipe", "", 0010644}}),
            "archive entry pipe: FIFOs (named pipes) are not allowed");
  EXPECT_EQ(RawError({md, {"pipe", "data through the pipe", 0010644}}),
            "archive entry pipe: FIFOs (named pipes) are not allowed");
  EXPECT_EQ(RawError({md, {"tty", "", 0020644}}),
            "archive entry tty: character devices are not allowed");
  EXPECT_EQ(RawError({md, {"disk", "", 0060644}}),
            "archive entry disk: block devices are not allowed");
  EXPECT_EQ(RawError({md, {"link", "/etc/passwd", 0120777}}),
            "archive entry link: symbolic links are not allowed");
  EXPECT_EQ(RawError({md, {"sock", "", 0140755}}), "archive entry sock: sockets are not allowed");
  // A hard link has no form in a ZIP (libarchive's writer stores one as an empty regular file);
  // the reader's check on archive_entry_hardlink stays for formats that have them.
}

TEST(SkillArchiveTest, RejectsNulBytesInNames) {
  const RawZipEntry md{"SKILL.md", SkillMd({"name: a", "description: d"})};
  EXPECT_EQ(RawError({md, {std::string("run.sh\0.txt", 11), "echo"}}),
            "archive entry run.sh?.txt: NUL bytes in names are not allowed");
  // In one of the two copies of the name only: the central directory's, or the local header's
  // (where libarchive reads it).
  std::string zip = MakeRawZip({md, {"run.shX.txt", "echo"}});
  const size_t local = zip.find("run.shX.txt");
  const size_t central = zip.find("run.shX.txt", local + 1);
  ASSERT_NE(central, std::string::npos);
  for (size_t at : {local, central}) {
    std::string patched = zip;
    patched[at + 6] = '\0';
    auto r = ParseSkillArchive(patched, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(),
              "archive entry run.sh?.txt: NUL bytes in names are not allowed");
  }
}

TEST(SkillArchiveTest, RejectsGarbage) {
  auto r = ParseSkillArchive("this is not a zip", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a readable ZIP"), std::string::npos);
  r = ParseSkillArchive("", {});
  ASSERT_FALSE(r.ok());
}

// _meta.json nested 100,000 levels once parsed and then overflowed the stack in dump(): refused
// now as soon as the 65th level opens.
TEST(SkillArchiveTest, RefusesDeeplyNestedMetaJson) {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
  deep += "1" + std::string(100000, '}');
  const std::string md = SkillMd({"name: a", "description: d"});
  EXPECT_EQ(Error({{"SKILL.md", md}, {"_meta.json", deep}}),
            "skill at the archive root: _meta.json nests deeper than 64 levels at byte offset 320");
  EXPECT_EQ(Error({{"s/SKILL.md", md}, {"s/_meta.json", R"({"a":1,"a":2})"}}),
            "skill folder 's': _meta.json is not valid JSON: duplicate key \"a\" in _meta.json at "
            "byte offset 9");
  EXPECT_EQ(Error({{"SKILL.md", md}, {"_meta.json", "{\"a\":\"\xff\"}"}}),
            "skill at the archive root: _meta.json is not UTF-8 text");
  EXPECT_EQ(Error({{"SKILL.md", md}, {"_meta.json", "[1]"}}),
            "skill at the archive root: _meta.json must be a JSON object");
}

}  // namespace
}  // namespace engram
