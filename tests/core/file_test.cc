#include "core/file.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

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
  fs::create_directory(Path("d"));  // a folder cannot be renamed over by a file
  s = WriteFileAtomic(Path("d"), {"x"});
  EXPECT_TRUE(absl::IsUnavailable(s));
  EXPECT_NE(s.message().find(" to " + Path("d") + ": "), std::string::npos) << s;
  EXPECT_EQ(Names(), std::vector<std::string>{"d"});
}

}  // namespace
}  // namespace uopc
