#include "backends/cuda/matmul_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "core/dtype.h"

namespace uopc::cuda {
namespace {

// backends/cuda/matmul_kernels.cu.inc, as a string (the genrule :matmul_kernels_source)
constexpr char kSource[] =
#include "backends/cuda/matmul_kernels_source.inc"
    ;

constexpr int kThreads = 256;
// the tensor-core kernels' shapes (the source's UOPC_SHAPE_*)
struct MmaShape {
  const char* name;
  int stages, slice, columns;
  // dynamic shared memory: each stage a slice of a (128 rows) and of b (`columns`), their
  // unit-stride axes padded by 8 (the source's MmaShape)
  int64_t SharedBytes() const {
    auto stage = [&](int64_t rows) { return std::max(rows * (slice + 8), slice * (rows + 8)); };
    return stages * (stage(128) + stage(columns)) * 2;
  }
};
// (measured on an H200, bf16 4096 x 4096 x 4096: 128 x 256 tiles 188-195 TFLOP/s, 128 x 128
// ones 137-161, 128 x 128 in slices of 64 175)
constexpr MmaShape kMmaShapes[] = {{"n256", 3, 32, 256}, {"n128", 4, 32, 128}};

}  // namespace

std::vector<SuppliedKernel> MatmulKernels(int arch) {
  // (below a few hundred thousand operations a generated kernel's launch is as quick)
  constexpr int64_t kMin = 1 << 18;
  std::vector<SuppliedKernel> k = {
      {"cuda_sgemm", "matmul", DType::kF32, DType::kF32, DType::kF32, kMin}};
  if (arch >= 80)
    for (DType half : {DType::kBF16, DType::kF16}) {
      const std::string in(DTypeName(half));
      k.push_back({"cuda_mma_" + in + "_to_f32", "matmul", half, half, DType::kF32, kMin});
      k.push_back({"cuda_mma_" + in + "_to_" + in, "matmul", half, half, half, kMin});
    }
  return k;
}

const std::string& MatmulKernelsSource() {
  static const std::string* source = new std::string(kSource);
  return *source;
}

std::vector<std::string> MatmulEntries() {
  std::vector<std::string> out;
  for (const char* layout : {"00", "01", "10", "11"}) {
    out.push_back(absl::StrCat("cuda_sgemm_128_", layout));
    out.push_back(absl::StrCat("cuda_sgemm_64_", layout));
    for (const char* in : {"bf16", "f16"})
      for (const std::string to : {"f32", in})
        for (const MmaShape& shape : kMmaShapes)
          out.push_back(absl::StrCat("cuda_mma_", in, "_to_", to, "_", layout, "_", shape.name));
  }
  return out;
}

absl::StatusOr<MatmulLaunch> PlanMatmulLaunch(const std::string& name, const MatmulParams& p,
                                              int multiprocessors, const std::string& mma_shape) {
  const std::string layout = absl::StrCat(int{p.ATransposed()}, int{p.BTransposed()});
  const std::vector<SuppliedKernel> supplied = MatmulKernels(80);  // (every kernel's name)
  if (std::none_of(supplied.begin(), supplied.end(),
                   [&](const SuppliedKernel& k) { return k.name == name; }))
    return absl::NotFoundError(absl::StrCat("the CUDA plugin supplies no kernel '", name, "'"));
  int64_t tile = 128, columns = 128;
  MatmulLaunch l;
  auto blocks = [&](int64_t rows, int64_t cols) {
    return (p.m + rows - 1) / rows * ((p.n + cols - 1) / cols) * p.batch * p.batch2;
  };
  if (name == "cuda_sgemm") {
    if (blocks(128, 128) < 2 * int64_t{std::max(multiprocessors, 1)}) tile = columns = 64;
    l.entry = absl::StrCat(name, "_", tile, "_", layout);
  } else {  // a tensor-core kernel
    // 128 x 256 tiles, unless too few of them would fill the GPU twice over
    const MmaShape* shape = &kMmaShapes[0];
    if (blocks(128, 256) < 2 * int64_t{std::max(multiprocessors, 1)}) shape = &kMmaShapes[1];
    if (!mma_shape.empty()) {
      shape = nullptr;
      for (const MmaShape& sh : kMmaShapes)
        if (mma_shape == sh.name) shape = &sh;
      if (!shape)
        return absl::InvalidArgumentError(
            absl::StrCat("no tensor-core kernel shape '", mma_shape, "' (n256, n128)"));
    }
    l.entry = absl::StrCat(name, "_", layout, "_", shape->name);
    l.shared_bytes = static_cast<uint32_t>(shape->SharedBytes());
    columns = shape->columns;
  }
  const int64_t blocks_n = (p.n + columns - 1) / columns, rows = (p.m + tile - 1) / tile;
  if (rows > 65535)
    return absl::OutOfRangeError(
        absl::StrCat(name, ": ", p.ToString(), " has more than 65535 x ", tile, " rows"));
  l.grid = {static_cast<uint32_t>(std::max<int64_t>(1, blocks_n)),
            static_cast<uint32_t>(std::max<int64_t>(1, rows)),
            static_cast<uint32_t>(std::clamp<int64_t>(p.batch * p.batch2, 1, 65535))};
  l.block = {kThreads, 1, 1};
  return l;
}

}  // namespace uopc::cuda
