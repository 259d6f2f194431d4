// The gcc compiler and its on-disk cache, with real gcc and real files: hits, truncated
// and corrupt entries, two processes at once, a cache folder that cannot be written.
#include "backends/c/compiler.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "core/file.h"

namespace uopc {
namespace {

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

class Compiler : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = absl::StrCat(Tmp(), "/cache", n++, "_", getpid());
    counter_ = dir_ + ".calls";
    // a gcc that counts its runs
    wrapper_ = dir_ + ".gcc.sh";
    std::ofstream(wrapper_) << "#!/bin/sh\ncase \"$*\" in *' -o '*) echo run >> " << counter_
                            << ";; esac\nexec gcc \"$@\"\n";
    chmod(wrapper_.c_str(), 0755);
  }
  CCompiler Make(std::vector<std::string>* warnings = nullptr) {
    CCompiler::Options o;
    o.cc = wrapper_;
    o.cache_dir = dir_;
    o.warn = [warnings](const std::string& w) {
      if (warnings) warnings->push_back(w);
    };
    return CCompiler(o);
  }
  int Runs() {
    std::string s = ReadFile(counter_).value_or("");
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }
  /// The cache's one compiled entry.
  std::string EntryPath(CCompiler& c) {
    for (const auto& e : std::filesystem::directory_iterator(c.cache_dir()))
      if (e.path().extension() == ".so") return e.path().string();
    return "";
  }
  std::string dir_, counter_, wrapper_;
  const std::string src_ =
      "__attribute__((visibility(\"default\"))) int answer(void) { return 42; }\n";
};

TEST_F(Compiler, SecondCompileIsACacheHit) {
  CCompiler c = Make();
  absl::StatusOr<std::string> a = c.Compile(src_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Runs(), 1);
  absl::StatusOr<std::string> b = c.Compile(src_);
  EXPECT_EQ(Runs(), 1);
  EXPECT_TRUE(*a == *b);
  EXPECT_TRUE(CheckSealed(*a).ok());
  CCompiler fresh = Make();  // another process, same folder
  EXPECT_TRUE(*fresh.Compile(src_) == *a);
  EXPECT_EQ(Runs(), 1);
}

TEST_F(Compiler, ATruncatedEntryIsRebuilt) {
  CCompiler c = Make();
  std::string good = *c.Compile(src_);
  std::string path = EntryPath(c);
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  EXPECT_EQ(CheckSealed(ReadFile(path).value_or("")).status().message(),
            "compiled object of 100 bytes has no uopc trailer (truncated?)");
  std::string rebuilt = *c.Compile(src_);
  EXPECT_EQ(Runs(), 2);
  EXPECT_TRUE(CheckSealed(rebuilt).ok());
  EXPECT_TRUE(ReadFile(path).value_or("") == rebuilt);
}

TEST_F(Compiler, ACorruptEntryIsRebuilt) {
  CCompiler c = Make();
  std::string good = *c.Compile(src_);
  std::string path = EntryPath(c), bad = good;
  bad[bad.size() / 2] ^= 0x5a;
  std::ofstream(path, std::ios::binary) << bad;
  EXPECT_EQ(CheckSealed(bad).status().message(),
            absl::StrCat("compiled object of ", bad.size(), " bytes fails its checksum (corrupt)"));
  EXPECT_TRUE(CheckSealed(*c.Compile(src_)).ok());
  EXPECT_EQ(Runs(), 2);
  EXPECT_TRUE(CheckSealed(ReadFile(path).value_or("")).ok());
}

TEST_F(Compiler, TwoProcessesCompilingTheSameKernelBothSucceed) {
  std::string src = src_ + "int other(void) { return 7; }\n";
  pid_t kids[2];
  for (pid_t& k : kids) {
    k = fork();
    if (k == 0) {
      CCompiler c = Make();
      absl::StatusOr<std::string> r = c.Compile(src);
      _exit(r.ok() && CheckSealed(*r).ok() ? 0 : 1);
    }
  }
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CCompiler c = Make();
  EXPECT_TRUE(CheckSealed(ReadFile(EntryPath(c)).value_or("")).ok());
  int before = Runs();
  EXPECT_TRUE(c.Compile(src).ok());
  EXPECT_EQ(Runs(), before);  // the entry one of them wrote is used
}

// The private folder a faulty cache falls back to.
std::string PrivateFolder() {
  const char* tmp = std::getenv("TMPDIR");
  return absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/uopc-cache-", getuid());
}

TEST_F(Compiler, AnUnwritableCacheFolderFallsBackToThePrivateOne) {
  std::ofstream(dir_) << "a file where the folder should be";
  std::vector<std::string> warnings;
  CCompiler c = Make(&warnings);
  EXPECT_TRUE(c.Compile(src_).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], absl::StrCat("uopc: warning: the kernel cache folder ", dir_,
                                      "/c cannot be used (it cannot be written); compiled kernels "
                                      "go to ",
                                      PrivateFolder(), " for this run"));
  EXPECT_EQ(c.cache_dir(), PrivateFolder());
  EXPECT_TRUE(c.Compile(src_).ok());
  EXPECT_EQ(warnings.size(), 1u);  // warned once
  EXPECT_EQ(Make().cache_dir(), PrivateFolder());  // the next run: the same folder, not a new one
}

TEST_F(Compiler, ACacheFolderDeletedDuringARunIsNoFailure) {
  std::vector<std::string> warnings;
  CCompiler c = Make(&warnings);
  ASSERT_TRUE(c.Compile(src_).ok());
  ASSERT_EQ(std::system(("rm -rf " + dir_).c_str()), 0);
  absl::StatusOr<std::string> other = c.Compile(src_ + "int two(void) { return 2; }\n");
  ASSERT_TRUE(other.ok()) << other.status();
  absl::StatusOr<std::string> loadable = c.Materialize(*other);
  ASSERT_TRUE(loadable.ok()) << loadable.status();
  EXPECT_EQ(loadable->rfind(PrivateFolder(), 0), 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cannot be used ("), std::string::npos) << warnings[0];
}

TEST_F(Compiler, AFolderWhereAnEntryGoesIsNoFailure) {
  std::vector<std::string> warnings;
  CCompiler c = Make(&warnings);
  std::string sealed = *c.Compile(src_);
  std::string path = EntryPath(c);
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);  // a folder with the entry's name
  absl::StatusOr<std::string> again = c.Compile(src_);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::string> loadable = c.Materialize(*again);
  ASSERT_TRUE(loadable.ok()) << loadable.status();
  EXPECT_TRUE(ReadFile(*loadable).value_or("") == sealed);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(Compiler, ACompilerErrorIsReportedWithItsMessage) {
  CCompiler c = Make();
  absl::StatusOr<std::string> r = c.Compile("int broken( {\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(r.status().message().find(absl::StrCat(wrapper_, " failed (exit 1) on generated C:")),
            std::string::npos);
  EXPECT_NE(r.status().message().find("error:"), std::string::npos) << r.status().message();
}

// Many kernels after a prelude: compiled in groups, one gcc per core, and linked into one
// object with every kernel in it; its cache entry is the whole source's, so compiling that
// source whole is a hit. A part that does not compile is reported with gcc's message.
TEST_F(Compiler, PartsCompiledInGroupsAreOneObjectCachedAsTheWholeSource) {
  CCompiler c = Make();
  const std::string prelude = "static inline int twice(int x) { return 2 * x; }\n";
  std::vector<std::string> parts;
  for (int i = 0; i < 6; ++i)  // (each with 20 KiB of comment: worth a gcc of its own)
    parts.push_back(absl::StrCat("/*", std::string(20 << 10, 'x'), "*/\n",
                                 "__attribute__((visibility(\"default\"))) int k", i,
                                 "(void) { return twice(", i, "); }\n"));
  const std::vector<absl::string_view> views(parts.begin(), parts.end());
  absl::StatusOr<std::string> sealed = c.Compile(prelude, views);
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  const std::string path = *c.Materialize(*sealed);
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  for (int i = 0; i < 6; ++i) {
    auto k = reinterpret_cast<int (*)()>(dlsym(lib, absl::StrCat("k", i).c_str()));
    ASSERT_NE(k, nullptr) << i;
    EXPECT_EQ(k(), 2 * i);
  }
  dlclose(lib);
  const int runs = Runs();
  std::string whole = prelude;
  for (const std::string& p : parts) whole += p;
  EXPECT_EQ(*c.Compile(whole), *sealed);
  EXPECT_EQ(Runs(), runs);  // (a hit)
  parts[3] += "int broken( {\n";
  absl::StatusOr<std::string> bad =
      c.Compile(prelude, std::vector<absl::string_view>(parts.begin(), parts.end()));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("error:"), std::string::npos) << bad.status();
}

TEST_F(Compiler, MaterializeWritesWhatIsMissingAndRefusesBadBytes) {
  CCompiler c = Make();
  std::string sealed = *c.Compile(src_);
  std::string path = *c.Materialize(sealed);
  EXPECT_TRUE(ReadFile(path).value_or("") == sealed);
  unlink(path.c_str());
  EXPECT_TRUE(ReadFile(*c.Materialize(sealed)).value_or("") == sealed);
  EXPECT_EQ(c.Materialize(sealed.substr(0, 10)).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace uopc
