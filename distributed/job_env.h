// The environment a rank runs in: who it is, how many there are, where rank 0's store is,
// the job token, and the timeout. torchrun's contract (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) first; Slurm's (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, SLURM_NTASKS_PER_NODE) and Open MPI's (OMPI_COMM_WORLD_RANK, ..._SIZE,
// ..._LOCAL_RANK, ..._LOCAL_SIZE) when torchrun's are absent, so a job starts under the
// schedulers people already use. UOPC_JOB_TOKEN is the job's secret; UOPC_TIMEOUT the
// seconds any call or wait may take (default 600); UOPC_UNIX_SOCKETS=0 makes ranks on one
// host talk over TCP too (default 1: through unix sockets), and UOPC_SHARED_MEMORY=0 sends
// their frames over that socket too (default 1: through /dev/shm). UOPC_RESTART_COUNT (or
// TORCHELASTIC_RESTART_COUNT, as torchrun sets it) says which start of the job this is: the
// ranks of one start meet at that start's store.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace uopc {

struct JobEnv {
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string token;
  std::chrono::milliseconds timeout{600000};
  bool unix_sockets = true;   // to ranks on the same host
  bool shared_memory = true;  // frames to ranks on the same host through /dev/shm
  bool tcp_link = true;       // frames to ranks on other hosts through a TCP link of their own
  int restart = 0;           // which start of the job (0: the first)
  std::string source;        // "torchrun", "slurm", "openmpi": where the rank came from

  /// From the environment; an error names the variable that is missing or wrong.
  static absl::StatusOr<JobEnv> FromEnvironment();
};

}  // namespace uopc
