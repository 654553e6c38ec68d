#include "extract/documents/doc_fetcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace engram {
namespace {

namespace fs = std::filesystem;

class DocFetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/engram-fetch-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    root_ = templ;
    fs::create_directories(root_ / "import" / "sub");
    Write(root_ / "import" / "sub" / "a.txt", "hello");
    Write(root_ / "secret.txt", "outside");
  }
  void TearDown() override { fs::remove_all(root_); }
  static void Write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }
  DocFetcher Fetcher() {
    return DocFetcher({.import_dir = (root_ / "import").string(), .max_bytes = 1 << 20});
  }
  fs::path root_;
};

TEST_F(DocFetcherTest, ReadsRelativeAbsoluteAndFileUrls) {
  DocFetcher f = Fetcher();
  for (const std::string& url : {std::string("sub/a.txt"), (root_ / "import/sub/a.txt").string(),
                                 "file://" + (root_ / "import/sub/a.txt").string()}) {
    auto doc = f.Fetch(DocSourceType::kLocal, url, "ws");
    ASSERT_TRUE(doc.ok()) << url << ": " << doc.status().ToString();
    EXPECT_EQ(doc->bytes, "hello");
  }
}

TEST_F(DocFetcherTest, RefusesTraversalAndOutsidePathsUpFront) {
  DocFetcher f = Fetcher();
  for (const std::string& url :
       {std::string("../secret.txt"), std::string("sub/../../secret.txt"),
        (root_ / "secret.txt").string(), "file://" + (root_ / "secret.txt").string(),
        std::string("/etc/passwd"), std::string("ftp://host/x")}) {
    Status st = f.Validate(DocSourceType::kLocal, url, "ws");
    EXPECT_EQ(st.code(), StatusCode::kInvalidParameter) << url;
  }
}

TEST_F(DocFetcherTest, PerWorkspaceImportDirectoriesKeepWorkspacesApart) {
  fs::create_directories(root_ / "import" / "alpha");
  fs::create_directories(root_ / "import" / "beta");
  Write(root_ / "import" / "alpha" / "plan.txt", "alpha's plan");
  DocFetcher f({.import_dir = (root_ / "import").string(), .import_per_workspace = true});
  auto own = f.Fetch(DocSourceType::kLocal, "plan.txt", "alpha");
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->bytes, "alpha's plan");
  EXPECT_TRUE(
      f.Fetch(DocSourceType::kLocal, (root_ / "import/alpha/plan.txt").string(), "alpha").ok());
  // Another workspace reaches neither the file nor the shared directory above its own.
  EXPECT_FALSE(f.Fetch(DocSourceType::kLocal, "plan.txt", "beta").ok());
  EXPECT_EQ(
      f.Validate(DocSourceType::kLocal, (root_ / "import/alpha/plan.txt").string(), "beta").code(),
      StatusCode::kInvalidParameter);
  EXPECT_FALSE(f.Fetch(DocSourceType::kLocal, "alpha/plan.txt", "beta").ok());
  EXPECT_FALSE(f.Fetch(DocSourceType::kLocal, "sub/a.txt", "beta").ok());
  for (const char* name : {".", "..", ""}) {
    EXPECT_EQ(f.Validate(DocSourceType::kLocal, "alpha/plan.txt", name).code(),
              StatusCode::kInvalidParameter)
        << name;
  }
  // A workspace without a directory of its own reads nothing.
  auto missing = f.Fetch(DocSourceType::kLocal, "plan.txt", "gamma");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("workspace"), std::string::npos);
}

TEST_F(DocFetcherTest, SymlinkEscapingTheDirectoryFails) {
  fs::create_symlink(root_ / "secret.txt", root_ / "import" / "link.txt");
  fs::create_directory_symlink(root_, root_ / "import" / "up");
  fs::create_symlink(root_ / "import" / "sub" / "a.txt", root_ / "import" / "inside.txt");
  DocFetcher f = Fetcher();
  EXPECT_TRUE(f.Validate(DocSourceType::kLocal, "link.txt", "ws").ok());  // shape is fine...
  auto doc = f.Fetch(DocSourceType::kLocal, "link.txt", "ws");            // ...the target is not
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("outside"), std::string::npos);
  EXPECT_FALSE(f.Fetch(DocSourceType::kLocal, "up/secret.txt", "ws").ok());
  // A symlink that stays inside is fine.
  EXPECT_TRUE(f.Fetch(DocSourceType::kLocal, "inside.txt", "ws").ok());
}

TEST_F(DocFetcherTest, HugeSparseFileFailsFastWithoutReading) {
  const fs::path big = root_ / "import" / "big.txt";
  { std::ofstream(big) << ""; }
  ASSERT_EQ(truncate(big.c_str(), 2LL << 30), 0);
  const auto start = std::chrono::steady_clock::now();
  auto doc = Fetcher().Fetch(DocSourceType::kLocal, "big.txt", "ws");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("too large"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_F(DocFetcherTest, OnlyRegularFiles) {
  const fs::path fifo = root_ / "import" / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(Fetcher().Fetch(DocSourceType::kLocal, "fifo", "ws").ok());  // and does not block
  EXPECT_FALSE(Fetcher().Fetch(DocSourceType::kLocal, "sub", "ws").ok());
  EXPECT_FALSE(Fetcher().Fetch(DocSourceType::kLocal, "missing.txt", "ws").ok());
}

TEST_F(DocFetcherTest, FeaturesNotConfiguredAreRefused) {
  DocFetcher none({});
  EXPECT_NE(none.Validate(DocSourceType::kLocal, "a.txt", "ws").message().find("--import-dir"),
            std::string::npos);
  EXPECT_NE(none.Validate(DocSourceType::kLocal, "http://example.com/a", "ws")
                .message()
                .find("--remote-fetch"),
            std::string::npos);
  EXPECT_NE(none.Validate(DocSourceType::kOss, "oss://b/k", "ws").message().find("--oss-endpoint"),
            std::string::npos);
  DocFetcher oss({.oss = {.endpoint = "http://127.0.0.1:1"}});
  EXPECT_TRUE(oss.Validate(DocSourceType::kOss, "oss://bucket/dir/key.txt", "ws").ok());
  EXPECT_FALSE(oss.Validate(DocSourceType::kOss, "oss://bucket", "ws").ok());
  EXPECT_FALSE(oss.Validate(DocSourceType::kOss, "s3://bucket/key", "ws").ok());
}

TEST_F(DocFetcherTest, RemoteFetchNeverReachesLoopback) {
  DocFetcher f({.remote_fetch = true});
  auto doc = f.Fetch(DocSourceType::kLocal, "http://127.0.0.1:9/x.txt", "ws");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("private"), std::string::npos) << doc.status().message();
}

TEST(NonPublicAddressTest, Classifies) {
  auto v4 = [](const char* s) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, s, &a.sin_addr);
    return IsNonPublicAddress(reinterpret_cast<sockaddr*>(&a));
  };
  auto v6 = [](const char* s) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    inet_pton(AF_INET6, s, &a.sin6_addr);
    return IsNonPublicAddress(reinterpret_cast<sockaddr*>(&a));
  };
  for (const char* s : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                        "0.0.0.0", "100.64.0.1", "224.0.0.1"}) {
    EXPECT_TRUE(v4(s)) << s;
  }
  for (const char* s : {"8.8.8.8", "1.1.1.1", "172.32.0.1"}) EXPECT_FALSE(v4(s)) << s;
  for (const char* s : {"::1", "::", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1"}) {
    EXPECT_TRUE(v6(s)) << s;
  }
  EXPECT_FALSE(v6("2606:4700:4700::1111"));
}

}  // namespace
}  // namespace engram
