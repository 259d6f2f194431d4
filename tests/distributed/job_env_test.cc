#include "distributed/job_env.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace uopc {
namespace {

class JobEnvTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"RANK",
                          "WORLD_SIZE",
                          "LOCAL_RANK",
                          "LOCAL_WORLD_SIZE",
                          "MASTER_ADDR",
                          "MASTER_PORT",
                          "UOPC_JOB_TOKEN",
                          "UOPC_TIMEOUT",
                          "UOPC_UNIX_SOCKETS",
                          "UOPC_SHARED_MEMORY",
                          "UOPC_TCP_LINK",
                          "UOPC_RESTART_COUNT",
                          "TORCHELASTIC_RESTART_COUNT",
                          "SLURM_PROCID",
                          "SLURM_NTASKS",
                          "SLURM_LOCALID",
                          "SLURM_NTASKS_PER_NODE",
                          "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_LOCAL_SIZE"})
      unsetenv(v);
  }
  static void Set(const char* k, const char* v) { setenv(k, v, 1); }
};

TEST_F(JobEnvTest, TorchrunsContract) {
  Set("RANK", "3"), Set("WORLD_SIZE", "8"), Set("LOCAL_RANK", "1"), Set("LOCAL_WORLD_SIZE", "2");
  Set("MASTER_ADDR", "10.0.0.5"), Set("MASTER_PORT", "29500"), Set("UOPC_JOB_TOKEN", "s3cret"),
      Set("UOPC_TIMEOUT", "2.5");
  absl::StatusOr<JobEnv> e = JobEnv::FromEnvironment();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "torchrun");
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->local_world_size, 2);
  EXPECT_EQ(e->master_addr, "10.0.0.5");
  EXPECT_EQ(e->master_port, 29500);
  EXPECT_EQ(e->token, "s3cret");
  EXPECT_EQ(e->timeout.count(), 2500);
  EXPECT_EQ(e->restart, 0);  // the first start
  EXPECT_TRUE(e->unix_sockets && e->shared_memory && e->tcp_link);
  Set("UOPC_UNIX_SOCKETS", "0");
  EXPECT_FALSE(JobEnv::FromEnvironment()->unix_sockets);
  Set("UOPC_SHARED_MEMORY", "0");
  EXPECT_FALSE(JobEnv::FromEnvironment()->shared_memory);
  Set("UOPC_TCP_LINK", "0");
  EXPECT_FALSE(JobEnv::FromEnvironment()->tcp_link);
  Set("TORCHELASTIC_RESTART_COUNT", "2");
  EXPECT_EQ(JobEnv::FromEnvironment()->restart, 2);
  Set("UOPC_RESTART_COUNT", "1");  // uopc_launch's name first
  EXPECT_EQ(JobEnv::FromEnvironment()->restart, 1);
  Set("UOPC_RESTART_COUNT", "-1");
  EXPECT_NE(JobEnv::FromEnvironment().status().message().find("UOPC_RESTART_COUNT=-1"),
            std::string::npos);
}

TEST_F(JobEnvTest, SlurmAndOpenMpiWhenTorchrunsIsAbsent) {
  Set("SLURM_PROCID", "5"), Set("SLURM_NTASKS", "6"), Set("SLURM_LOCALID", "2"),
      Set("MASTER_PORT", "1234");
  absl::StatusOr<JobEnv> e = JobEnv::FromEnvironment();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "slurm");
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->world_size, 6);
  EXPECT_EQ(e->local_rank, 2);
  unsetenv("SLURM_PROCID");
  Set("OMPI_COMM_WORLD_RANK", "1"), Set("OMPI_COMM_WORLD_SIZE", "2");
  e = JobEnv::FromEnvironment();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "openmpi");
  EXPECT_EQ(e->rank, 1);
  EXPECT_EQ(e->world_size, 2);
  EXPECT_EQ(e->timeout.count(), 600000);  // the default
  EXPECT_TRUE(e->unix_sockets);           // the default
}

TEST_F(JobEnvTest, ErrorsNameTheVariable) {
  EXPECT_TRUE(absl::IsNotFound(JobEnv::FromEnvironment().status()));
  Set("RANK", "2"), Set("WORLD_SIZE", "2"), Set("MASTER_PORT", "1");
  absl::Status s = JobEnv::FromEnvironment().status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("RANK=2: expected an integer from 0 to 1"), std::string::npos) << s;
  Set("RANK", "0"), unsetenv("MASTER_PORT");
  s = JobEnv::FromEnvironment().status();
  EXPECT_NE(s.message().find("MASTER_PORT is not set"), std::string::npos) << s;
  Set("MASTER_PORT", "99999");
  EXPECT_NE(JobEnv::FromEnvironment().status().message().find("MASTER_PORT=99999"),
            std::string::npos);
  Set("MASTER_PORT", "80"), Set("UOPC_TIMEOUT", "soon");
  EXPECT_NE(JobEnv::FromEnvironment().status().message().find("UOPC_TIMEOUT=soon"),
            std::string::npos);
  Set("UOPC_TIMEOUT", "nan");
  EXPECT_NE(JobEnv::FromEnvironment().status().message().find(
                "UOPC_TIMEOUT=nan: expected a number from 0.001 to 1e+07"),
            std::string::npos);
  Set("UOPC_TIMEOUT", "inf");
  EXPECT_FALSE(JobEnv::FromEnvironment().ok());
  unsetenv("UOPC_TIMEOUT"), Set("UOPC_SHARED_MEMORY", "2");
  EXPECT_NE(JobEnv::FromEnvironment().status().message().find("UOPC_SHARED_MEMORY=2"),
            std::string::npos);
  unsetenv("UOPC_SHARED_MEMORY"), Set("UOPC_TCP_LINK", "yes please");
  EXPECT_NE(JobEnv::FromEnvironment().status().message().find("UOPC_TCP_LINK=yes please"),
            std::string::npos);
  unsetenv("UOPC_TCP_LINK"), Set("UOPC_UNIX_SOCKETS", "maybe");
  EXPECT_NE(JobEnv::FromEnvironment().status().message().find("UOPC_UNIX_SOCKETS=maybe: expected true or false"),
            std::string::npos);
}

}  // namespace
}  // namespace uopc
