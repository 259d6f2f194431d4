#include "distributed/job_env.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

#include "core/parse_number.h"

namespace uopc {
namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

absl::Status Int(const char* name, int* out, int lo, int hi) {
  const char* v = Env(name);
  if (!v) return absl::NotFoundError(absl::StrCat(name, " is not set"));
  absl::StatusOr<int64_t> n = ParseInt(name, v, lo, hi);
  if (n.ok()) *out = static_cast<int>(*n);
  return n.status();
}

}  // namespace

absl::StatusOr<JobEnv> JobEnv::FromEnvironment() {
  JobEnv e;
  struct Scheme {
    const char *name, *rank, *size, *local_rank, *local_size;
  };
  const Scheme schemes[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
  };
  const Scheme* s = nullptr;
  for (const Scheme& c : schemes)
    if (Env(c.rank)) {
      s = &c;
      break;
    }
  if (!s)
    return absl::NotFoundError(
        "no rank in the environment: set RANK and WORLD_SIZE (uopc_launch does), or run under "
        "Slurm or Open MPI");
  e.source = s->name;
  if (absl::Status st = Int(s->size, &e.world_size, 1, 1 << 20); !st.ok()) return st;
  if (absl::Status st = Int(s->rank, &e.rank, 0, e.world_size - 1); !st.ok()) return st;
  if (Env(s->local_rank)) {
    if (absl::Status st = Int(s->local_rank, &e.local_rank, 0, 1 << 20); !st.ok()) return st;
  }
  if (Env(s->local_size)) {
    if (absl::Status st = Int(s->local_size, &e.local_world_size, 1, 1 << 20); !st.ok()) return st;
  } else {
    e.local_world_size = e.world_size;
  }
  if (const char* a = Env("MASTER_ADDR")) e.master_addr = a;
  if (absl::Status st = Int("MASTER_PORT", &e.master_port, 1, 65535); !st.ok())
    return absl::Status(st.code(),
                        absl::StrCat(st.message(), " (rank 0 hosts the rendezvous store there)"));
  if (const char* t = Env("UOPC_JOB_TOKEN")) e.token = t;
  if (const char* t = Env("UOPC_TIMEOUT")) {  // seconds
    absl::StatusOr<double> secs = ParseReal("UOPC_TIMEOUT", t, 0.001, 1e7);
    if (!secs.ok()) return secs.status();
    e.timeout = std::chrono::milliseconds(static_cast<int64_t>(*secs * 1000));
  }
  for (const char* name : {"UOPC_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"})
    if (Env(name)) {
      if (absl::Status st = Int(name, &e.restart, 0, 1 << 30); !st.ok()) return st;
      break;
    }
  for (auto [name, flag] :
       {std::pair{"UOPC_UNIX_SOCKETS", &e.unix_sockets},
        std::pair{"UOPC_SHARED_MEMORY", &e.shared_memory}, std::pair{"UOPC_TCP_LINK", &e.tcp_link}})
    if (const char* u = Env(name)) {
      absl::StatusOr<bool> on = ParseBool(name, u);
      if (!on.ok()) return on.status();
      *flag = *on;
    }
  return e;
}

}  // namespace uopc
