#include "backends/cuda/gpu_target.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uopc {
namespace {

struct Arch {
  int arch;
  const char* part;  // whose figures these are
  int multiprocessors;
  int64_t l2_bytes, shared_per_block;
  bool bf16;  // tensor cores take bf16 and tf32 (sm_80 on)
};
constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr Arch kArchs[] = {
    {70, "V100", 80, 6 * kMiB, 96 * kKiB, false},
    {75, "T4", 40, 4 * kMiB, 64 * kKiB, false},
    {80, "A100", 108, 40 * kMiB, 163 * kKiB, true},
    {86, "A10", 72, 6 * kMiB, 99 * kKiB, true},
    {89, "L4", 58, 48 * kMiB, 99 * kKiB, true},
    {90, "H100/H200 SXM", 132, 50 * kMiB, 227 * kKiB, true},
};

Target FromTable(const Arch& a) {
  Target t = Target::ReferenceGpu();
  t.arch = absl::StrCat("sm_", a.arch);
  t.cores = a.multiprocessors;
  t.l2_bytes = a.l2_bytes;
  t.shared_per_block = a.shared_per_block;
  // mma.sync: m16n8k16 for f16 (sm_75's m16n8k8), bf16 and tf32 (as f32 inputs) from sm_80
  if (a.arch == 70) t.matrix_units = {{8, 8, 4, DType::kF16, DType::kF32}};
  if (a.arch == 75) t.matrix_units = {{16, 8, 8, DType::kF16, DType::kF32}};
  if (a.bf16)
    t.matrix_units = {{16, 8, 16, DType::kF16, DType::kF32},
                      {16, 8, 16, DType::kBF16, DType::kF32},
                      {16, 8, 8, DType::kF32, DType::kF32}};
  return t;
}

// The table's entry for `arch`, or the newest one below it (a newer GPU has at least that).
const Arch* Nearest(int arch) {
  const Arch* best = nullptr;
  for (const Arch& a : kArchs)
    if (a.arch <= arch) best = &a;
  return best;
}

}  // namespace

absl::StatusOr<Target> NamedGpuTarget(absl::string_view arch) {
  absl::string_view digits = arch;
  if (digits.substr(0, 3) == "sm_") digits.remove_prefix(3);
  int n = 0;
  std::vector<std::string> known;
  for (const Arch& a : kArchs) known.push_back(absl::StrCat("sm_", a.arch));
  if (absl::SimpleAtoi(digits, &n))
    for (const Arch& a : kArchs)
      if (a.arch == n) return FromTable(a);
  return absl::InvalidArgumentError(absl::StrCat("cuda: no target named \"", arch,
                                                 "\" (known: ", absl::StrJoin(known, ", "), ")"));
}

Target GpuTarget(const GpuAttributes& a) {
  const Arch* row = Nearest(a.arch);
  Target t = row ? FromTable(*row) : Target::ReferenceGpu();
  t.arch = absl::StrCat("sm_", a.arch);
  if (a.multiprocessors > 0) t.cores = a.multiprocessors;
  if (a.warp > 0) t.warp = a.warp;
  if (a.threads_per_block > 0) t.threads_per_block = a.threads_per_block;
  if (a.l2_bytes > 0) t.l2_bytes = a.l2_bytes;
  if (a.shared_per_block > 0) t.shared_per_block = a.shared_per_block;
  return t;
}

}  // namespace uopc
