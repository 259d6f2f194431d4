#include "distributed/data_parallel.h"

#include "core/dtype.h"
#include "frontend/error.h"

namespace uopc {

void AverageGradientsInPlan(const GraphGroup& g, const std::vector<Tensor*>& params,
                            int64_t bucket_bytes, DType wire) {
  std::vector<Tensor*> have;
  for (auto it = params.rbegin(); it != params.rend(); ++it)
    if ((*it)->grad()) have.push_back(*it);
  const double scale = 1.0 / g.size();
  const bool half = IsHalf(wire);
  const DType carried = half ? wire : DType::kF32;  // the buckets' dtype
  // what a rank puts in the bucket: its gradient, or (a half) its share of the average
  auto share = [&](const Tensor& grad) {
    return half ? (grad.Cast(DType::kF32) * scale).Cast(wire) : grad.Cast(DType::kF32);
  };
  for (size_t first = 0; first < have.size();) {
    size_t last = first;  // the bucket: [first, last)
    int64_t count = 0;
    while (last < have.size() &&
           (last == first ||
            (count + have[last]->numel().value()) * DTypeSize(carried) <= bucket_bytes))
      count += have[last++]->numel().value();
    Tensor bucket;
    const bool alone = last - first == 1;
    if (alone) {  // one gradient: all-reduced in its own shape (flattened, its kernel would
                  // loop over the flat count: a weight's matmul became a scalar loop nest)
      bucket = share(have[first]->grad());
    } else {  // several: each written into its part (in its own shape: its kernel keeps its loops)
      Device* device = have[first]->grad().device();
      absl::StatusOr<Buffer> memory = device->Allocate(carried, count);
      ThrowIfError(memory.status());
      bucket = Tensor::FromBuffer(*memory, {count});
      int64_t at = 0;
      for (size_t i = first; i < last; ++i) {
        const Tensor grad = have[i]->grad();
        const int64_t n = grad.numel().value();
        bucket.Slice(0, at, at + n).Reshape(grad.shape()).Assign(share(grad).To(device));
        at += n;
      }
    }
    Tensor sum = AllReduceOf(g, bucket);
    int64_t at = 0;
    for (size_t i = first; i < last; ++i) {
      const Tensor grad = have[i]->grad();
      const int64_t n = grad.numel().value();
      const Tensor part = alone ? sum : sum.Slice(0, at, at + n).Reshape(grad.shape());
      have[i]->SetGrad((half ? part : part * scale).Cast(grad.dtype()).To(grad.device()));
      at += n;
    }
    first = last;
  }
}

}  // namespace uopc
