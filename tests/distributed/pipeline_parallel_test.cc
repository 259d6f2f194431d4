// The pipeline schedules' orders of forward (F) and backward (B) phases, and their names.
#include "distributed/pipeline_parallel.h"

#include <string>

#include <gtest/gtest.h>

namespace uopc {
namespace {

std::string Text(const std::vector<PipelinePhase>& order) {
  std::string out;
  for (const PipelinePhase& p : order)
    out += (out.empty() ? "" : " ") + std::string(p.forward ? "F" : "B") +
           std::to_string(p.micro_batch);
  return out;
}

TEST(PipelineSchedule, GPipeRunsEveryForwardPassThenEveryBackwardPass) {
  EXPECT_EQ(Text(ScheduleOrder(PipelineSchedule::kGPipe, 2, 4)), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(Text(ScheduleOrder(PipelineSchedule::kGPipe, 4, 1)), "F0 B0");
}

// At most `stages` micro-batches between their F and their B: what bounds 1F1B's memory.
TEST(PipelineSchedule, OneForwardOneBackwardKeepsAtMostAStageCountInFlight) {
  EXPECT_EQ(Text(ScheduleOrder(PipelineSchedule::k1F1B, 2, 4)), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(Text(ScheduleOrder(PipelineSchedule::k1F1B, 3, 6)),
            "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
  EXPECT_EQ(Text(ScheduleOrder(PipelineSchedule::k1F1B, 4, 2)), "F0 F1 B0 B1");
  for (int stages : {1, 2, 3, 4})
    for (int m : {1, 2, 5, 8}) {
      int in_flight = 0, most = 0, forward = 0, backward = 0;
      for (const PipelinePhase& p : ScheduleOrder(PipelineSchedule::k1F1B, stages, m)) {
        in_flight += p.forward ? 1 : -1;
        most = std::max(most, in_flight);
        (p.forward ? forward : backward) += 1;
      }
      EXPECT_EQ(most, std::min(stages, m)) << stages << " stages, " << m << " micro-batches";
      EXPECT_EQ(forward, m);
      EXPECT_EQ(backward, m);
    }
}

TEST(PipelineSchedule, ByName) {
  EXPECT_EQ(*ParsePipelineSchedule("GPipe"), PipelineSchedule::kGPipe);
  EXPECT_EQ(*ParsePipelineSchedule("1f1b"), PipelineSchedule::k1F1B);
  absl::StatusOr<PipelineSchedule> bad = ParsePipelineSchedule("interleaved");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "no pipeline schedule 'interleaved'; expected gpipe or 1f1b");
}

}  // namespace
}  // namespace uopc
