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
  // computed twice); their values meet in one bucket for one all-reduce
  std::vector<Tensor*> roots = with;
  for (Tensor& t : grads) roots.push_back(&t);
  try {
    Tensor::RealizeAll(roots);
  } catch (const Error& e) {
    return e.status();
  }
  std::vector<float> bucket;
  for (const Tensor& t : grads) {
    std::vector<float> v = t.ToVector<float>();
    bucket.insert(bucket.end(), v.begin(), v.end());
  }
  RETURN_IF_ERROR(
      g.AllReduce(bucket.data(), static_cast<int64_t>(bucket.size()), DType::kF32, ReduceOp::kAvg)
          ->Wait());
  const Tensor& first = grads.front();
  Tensor averaged = Tensor::FromVector(bucket, {static_cast<int64_t>(bucket.size())}, DType::kF32,
                                       first.device());
  int64_t at = 0;
  for (size_t i = 0; i < have.size(); ++i) {  // each gradient a view of the averaged bucket
    const Tensor& grad = grads[i];
    const int64_t n = grad.numel().value();
    have[i]->SetGrad(
        averaged.Slice(0, at, at + n).Reshape(grad.shape()).Cast(grad.dtype()).To(grad.device()));
    at += n;
  }
  return absl::OkStatus();
}

}  // namespace uopc
