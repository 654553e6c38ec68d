// UniqueFd closes its descriptor once, whoever holds it last; SyncPath syncs files and
// directories and names the path it could not open.
#include "common/posix_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace engram {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFdTest, ClosesOnceWhenItsLastOwnerGoes) {
  int raw = -1;
  {
    UniqueFd first(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(first.valid());
    raw = first.get();
    UniqueFd second(std::move(first));
    EXPECT_FALSE(first.valid());
    EXPECT_EQ(second.get(), raw);
    UniqueFd third;
    third = std::move(second);
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(UniqueFdTest, CloseReportsAndLeavesNothingToClose) {
  UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = fd.get();
  EXPECT_EQ(fd.Close(), 0);
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_EQ(fd.Close(), 0);  // nothing left: no second close of a reused number
  EXPECT_FALSE(UniqueFd(-1).valid());
}

TEST(SyncPathTest, SyncsFilesAndDirectoriesAndNamesAMissingPath) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("engram_posix_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "f").string();
  std::ofstream(file) << "x";
  EXPECT_TRUE(SyncPath(file).ok());
  EXPECT_TRUE(SyncPath(dir.string()).ok());
  const Status missing = SyncPath((dir / "missing").string());
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find((dir / "missing").string()), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace engram
