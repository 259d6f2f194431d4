#include "distributed/tensor_collectives.h"

#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "frontend/error.h"

namespace uopc {
namespace {

/// The dtype a tensor's values travel in: i32 as is, every float type as f32.
absl::StatusOr<DType> WireDType(const Tensor& t, const char* op) {
  if (t.dtype() == DType::kI32) return DType::kI32;
  if (IsFloat(t.dtype())) return DType::kF32;
  return absl::InvalidArgumentError(absl::StrCat(op, ": a tensor of dtype ", DTypeName(t.dtype()),
                                                 " and shape ", ShapeString(t.shape()),
                                                 "; expected a float dtype or i32"));
}

/// Runs `collective` over `t`'s values (as f32 or i32), and returns them as a tensor like `t`.
template <typename F>
absl::StatusOr<Tensor> OverValues(const Tensor& t, const char* op, F collective) {
  ASSIGN_OR_RETURN(DType wire, WireDType(t, op));
  if (wire == DType::kI32) {
    std::vector<int32_t> v = t.ToVector<int32_t>();
    RETURN_IF_ERROR(collective(v.data(), static_cast<int64_t>(v.size()), wire));
    return Tensor::FromVector(v, t.shape(), t.dtype(), t.device());
  }
  std::vector<float> v = t.ToVector<float>();
  RETURN_IF_ERROR(collective(v.data(), static_cast<int64_t>(v.size()), wire));
  return Tensor::FromVector(v, t.shape(), t.dtype(), t.device());
}

}  // namespace

absl::StatusOr<Tensor> AllReduce(ProcessGroup& g, const Tensor& t, ReduceOp op) {
  return OverValues(t, "all_reduce", [&](void* data, int64_t n, DType d) {
    return g.AllReduce(data, n, d, op)->Wait();
  });
}

absl::StatusOr<Tensor> Broadcast(ProcessGroup& g, const Tensor& t, int root) {
  return OverValues(t, "broadcast", [&](void* data, int64_t n, DType d) {
    return g.Broadcast(data, n, d, root)->Wait();
  });
}

absl::Status BroadcastParameters(ProcessGroup& g, const std::vector<Tensor*>& params, int root) {
  for (Tensor* p : params) {
    ASSIGN_OR_RETURN(Tensor v, Broadcast(g, *p, root));
    p->Assign(v);
  }
  return absl::OkStatus();
}

absl::Status AverageGradients(ProcessGroup& g, const std::vector<Tensor*>& params,
                              const std::vector<Tensor*>& with) {
  std::vector<Tensor*> have;
  std::vector<Tensor> grads;
  for (Tensor* p : params)
    if (p->grad()) have.push_back(p), grads.push_back(p->grad());
  if (have.empty()) return absl::OkStatus();
  // one plan computes every gradient (and `with`, so that nothing it shares with them is
  // computed twice), each written in place into its part of one f32 bucket
  int64_t total = 0;
  for (const Tensor& t : grads) total += t.numel().value();
  Device* device = grads.front().device();
  ASSIGN_OR_RETURN(Buffer memory, device->Allocate(DType::kF32, total));
  Tensor bucket = Tensor::FromBuffer(memory, {total});
  std::vector<Tensor*> roots = with;
  roots.push_back(&bucket);
  try {
    int64_t at = 0;
    for (const Tensor& t : grads) {
      const int64_t n = t.numel().value();
      // (in the gradient's shape: its kernel keeps its loops)
      bucket.Slice(0, at, at + n).Reshape(t.shape()).Assign(t.Cast(DType::kF32).To(device));
      at += n;
    }
    Tensor::RealizeAll(roots);
  } catch (const Error& e) {
    return e.status();
  }
  // averaged in place where it lies (a CPU device's memory); else through host memory
  RETURN_IF_ERROR(device->Synchronize());
  absl::StatusOr<void*> address = device->Address(memory);
  if (address.ok()) {
    RETURN_IF_ERROR(g.AllReduce(*address, total, DType::kF32, ReduceOp::kAvg)->Wait());
  } else {
    std::vector<float> host(total);
    RETURN_IF_ERROR(device->CopyOut(host.data(), memory, memory.bytes()));
    RETURN_IF_ERROR(g.AllReduce(host.data(), total, DType::kF32, ReduceOp::kAvg)->Wait());
    RETURN_IF_ERROR(device->CopyIn(memory, host.data(), memory.bytes()));
  }
  int64_t at = 0;
  for (size_t i = 0; i < have.size(); ++i) {  // each gradient a view of the averaged bucket
    const Tensor& grad = grads[i];
    const int64_t n = grad.numel().value();
    have[i]->SetGrad(
        bucket.Slice(0, at, at + n).Reshape(grad.shape()).Cast(grad.dtype()).To(grad.device()));
    at += n;
  }
  return absl::OkStatus();
}

}  // namespace uopc
