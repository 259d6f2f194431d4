// The merge of the ranks' trace files (the recorder itself is tested end to end, under
// uopc_launch, in tests/examples/gpt_programs_test).
#include "core/trace.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "core/json.h"

namespace uopc::trace {
namespace {

std::string Tmp(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Trace, MergeJoinsTheRanksFilesAndRemovesThem) {
  const std::string path = Tmp("merged.json");
  Write(path + ".rank0", "{\"traceEvents\":[\n{\"ph\":\"X\",\"pid\":0,\"name\":\"a\"}\n]}\n");
  // rank 1 died before writing; rank 2 wrote nothing but its process name
  Write(path + ".rank2", "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":2,\"name\":\"b\"}\n]}\n");
  ASSERT_TRUE(MergeRankFiles(path, 3).ok());
  absl::StatusOr<Json> json = ParseJson(Read(path));
  ASSERT_TRUE(json.ok()) << json.status() << Read(path);
  const Json* events = json->Find("traceEvents");
  ASSERT_TRUE(events != nullptr);
  ASSERT_EQ(events->array.size(), 2u);
  EXPECT_EQ(events->array[0].Find("name")->str, "a");
  EXPECT_EQ(events->array[1].Find("pid")->number, 2);
  EXPECT_FALSE(std::ifstream(path + ".rank0").good());
  EXPECT_FALSE(std::ifstream(path + ".rank2").good());
}

TEST(Trace, NoRankFilesLeavesTheTraceAlone) {
  const std::string path = Tmp("alone.json");
  Write(path, "{\"traceEvents\":[]}\n");
  absl::Status s = MergeRankFiles(path, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(Read(path), "{\"traceEvents\":[]}\n");
}

TEST(Trace, ARankFileThatIsNotATraceIsDataLoss) {
  const std::string path = Tmp("bad.json");
  Write(path + ".rank0", "garbage");
  absl::Status s = MergeRankFiles(path, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("bad.json.rank0 is not a trace file"), std::string::npos) << s;
}

TEST(Trace, OffUnlessUopcTraceIsSet) {
  EXPECT_FALSE(Enabled());            // the test runs without UOPC_TRACE
  Span span("kernel", "k", "CPU:0");  // costs nothing, records nothing
  EXPECT_TRUE(Flush().ok());
}

}  // namespace
}  // namespace uopc::trace
