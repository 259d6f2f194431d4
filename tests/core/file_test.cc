#include "core/file.h"

#include <algorithm>
#include <filesystem>
#include <string>

#include <sys/stat.h>

#include <gtest/gtest.h>
#include <unistd.h>

namespace uopc {
namespace {

namespace fs = std::filesystem;

class FileTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string Path(const char* name) { return (dir_ / name).string(); }
  /// The names in the folder: what a failed or finished write left behind.
  std::vector<std::string> Names() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename());
    return out;
  }
  fs::path dir_;
};

TEST_F(FileTest, WritesPiecesInOrderAndReadsThemBack) {
  const std::string path = Path("f"), binary("a\0b", 3);
  ASSERT_TRUE(WriteFileAtomic(path, {"head", binary, "", "tail"}).ok());
  absl::StatusOr<std::string> got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "head" + binary + "tail");
  ASSERT_TRUE(WriteFileAtomic(path, {"new"}).ok());  // replaces it
  EXPECT_EQ(ReadFile(path).value_or(""), "new");
  EXPECT_EQ(Names(), std::vector<std::string>{"f"});  // no temporary left
}

TEST_F(FileTest, ErrorsNameTheFileAndLeaveNothingBehind) {
  absl::Status missing = ReadFile(Path("none")).status();
  EXPECT_TRUE(absl::IsNotFound(missing));
  EXPECT_EQ(missing.message(), Path("none") + ": cannot open: No such file or directory");
  absl::Status s = WriteFileAtomic(Path("no/such/dir/f"), {"x"});
  EXPECT_TRUE(absl::IsUnavailable(s));
  EXPECT_NE(s.message().find("cannot write " + Path("no/such/dir/f.")), std::string::npos) << s;
  fs::create_directory(Path("d"));  // a folder is refused before anything is written
  s = WriteFileAtomic(Path("d"), {"x"});
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(s.message(), Path("d") + ": is a folder, not a file");
  EXPECT_EQ(Names(), std::vector<std::string>{"d"});
}

TEST_F(FileTest, ReadsOnlyRegularFilesOfABoundedSize) {
  EXPECT_EQ(ReadFile("/dev/zero").status().message(), "/dev/zero: not a regular file");
  fs::create_directory(Path("d"));
  EXPECT_EQ(ReadFile(Path("d")).status().message(), Path("d") + ": not a regular file");
  ASSERT_TRUE(WriteFileAtomic(Path("f"), {"12345"}).ok());
  EXPECT_EQ(ReadFile(Path("f"), 4).status().message(), Path("f") + ": 5 bytes; at most 4 are read");
  EXPECT_EQ(ReadFile(Path("f"), 5).value_or(""), "12345");
}

TEST_F(FileTest, TemporariesOfDeadWritersAreRemovedByTheNextWrite) {
  // what a writer killed in the middle of a write leaves, and one of this (living) process
  const std::string dead = Path("f.999999999.7.tmp"), live = Path("f.") +
                                                          std::to_string(getpid()) + ".99.tmp";
  ASSERT_TRUE(WriteFileAtomic(dead, {"half"}).ok());
  ASSERT_TRUE(WriteFileAtomic(live, {"busy"}).ok());
  ASSERT_TRUE(WriteFileAtomic(Path("other.999999999.1.tmp"), {"not ours"}).ok());
  ASSERT_TRUE(WriteFileAtomic(Path("f"), {"whole"}).ok());
  std::vector<std::string> names = Names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"f", "f." + std::to_string(getpid()) + ".99.tmp",
                                             "other.999999999.1.tmp"}));
}

TEST_F(FileTest, CheckWritableFindsABadPathBeforeAnyWork) {
  EXPECT_TRUE(CheckWritable(Path("new.safetensors")).ok());
  EXPECT_EQ(Names(), std::vector<std::string>{});  // the probe is gone
  absl::Status s = CheckWritable(Path("no/such/dir/x"));
  EXPECT_EQ(s.message(), Path("no/such/dir/x") + ": cannot write there: No such file or directory");
  fs::create_directory(Path("d"));
  EXPECT_EQ(CheckWritable(Path("d")).message(), Path("d") + ": is a folder, not a file");
}

// A device at the path is refused, never replaced by the rename (/dev/null stays a device).
TEST(File, ADeviceIsNeverReplaced) {
  absl::Status s = WriteFileAtomic("/dev/null", {"x"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(std::string(s.message()),
            "/dev/null: is not a regular file (a device or a pipe); refusing to replace it");
  EXPECT_EQ(CheckWritable("/dev/null").code(), absl::StatusCode::kInvalidArgument);
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

}  // namespace
}  // namespace uopc
