#include "backends/target_args.h"

#include "absl/strings/str_join.h"

namespace uopc {

TargetStrings::TargetStrings(Target t)
    : target(std::move(t)), features(absl::StrJoin(target.features, ",")) {
  for (const MatrixUnit& u : target.matrix_units)
    matrix_units += (matrix_units.empty() ? "" : ",") + MatrixUnitToString(u);
  for (const SuppliedKernel& k : target.kernels) {
    uopc_kernel_desc d{};
    d.struct_size = sizeof d;
    d.name = k.name.c_str();
    d.op = k.op.c_str();
    d.a = static_cast<uopc_dtype>(k.a);
    d.b = static_cast<uopc_dtype>(k.b);
    d.out = static_cast<uopc_dtype>(k.out);
    d.min_flops = static_cast<uint64_t>(k.min_flops);
    kernels.push_back(d);
  }
}

void FillTargetArgs(const TargetStrings& s, uopc_target_args* a) {
  const Target& t = s.target;
  a->device_class = t.IsGpu() ? UOPC_DEVICE_GPU : UOPC_DEVICE_CPU;
  a->vector_bits = t.vector_bits;
  a->arch_name = t.arch.c_str();
  a->features = s.features.c_str();
  a->registers = t.registers;
  a->cores = t.cores;
  a->l1d_bytes = t.l1d_bytes;
  a->l1d_ways = t.l1d_ways;
  a->warp_size = t.warp;
  a->l2_bytes = t.l2_bytes;
  a->l3_bytes = t.l3_bytes;
  a->threads_per_block = t.threads_per_block;
  a->shared_per_block = t.shared_per_block;
  a->matrix_units = s.matrix_units.c_str();
  if (UOPC_HAS_MEMBER(a, uopc_target_args, num_kernels)) {  // ABI 2.1
    a->kernels = s.kernels.empty() ? nullptr : s.kernels.data();
    a->num_kernels = s.kernels.size();
  }
}

}  // namespace uopc
