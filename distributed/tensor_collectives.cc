#include "distributed/tensor_collectives.h"

#include "absl/strings/str_cat.h"

#include "core/status_macros.h"

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

absl::Status AverageGradients(ProcessGroup& g, const std::vector<Tensor*>& params) {
  std::vector<float> bucket;
  std::vector<std::pair<Tensor*, size_t>> at;  // (parameter, offset in the bucket)
  for (Tensor* p : params) {
    Tensor grad = p->grad();
    if (!grad) continue;
    at.push_back({p, bucket.size()});
    std::vector<float> v = grad.ToVector<float>();
    bucket.insert(bucket.end(), v.begin(), v.end());
  }
  RETURN_IF_ERROR(
      g.AllReduce(bucket.data(), static_cast<int64_t>(bucket.size()), DType::kF32, ReduceOp::kAvg)
          ->Wait());
  for (auto [p, offset] : at) {
    Tensor grad = p->grad();
    std::vector<float> v(bucket.begin() + offset, bucket.begin() + offset + grad.numel().value());
    p->SetGrad(Tensor::FromVector(v, grad.shape(), grad.dtype(), grad.device()));
  }
  return absl::OkStatus();
}

}  // namespace uopc
