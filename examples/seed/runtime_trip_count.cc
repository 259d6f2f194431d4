// The seed's section 15.2 program, run for real: a loop whose trip count is read from
// memory, out[i] = sum(x[i, :n]). One kernel is rendered to C, compiled once by the C
// backend plugin, and run for two lengths.
//
//   bazel run //examples/seed:runtime_trip_count
#include <cstring>
#include <iostream>
#include <numeric>
#include <vector>

#include "core/uop.h"
#include "devices/kernel_cache.h"
#include "devices/registry.h"

using namespace uopc;

namespace {

// out[i] = sum(x[i, :n]) with x 4 x 8, n = len[0]
UOp Kernel() {
  constexpr int64_t kRows = 4, kMaxN = 8;
  UOp x = UOp::Buffer(DType::kF32, 0, kRows * kMaxN), len = UOp::Buffer(DType::kI32, 1, 1);
  UOp out = UOp::Buffer(DType::kF32, 2, kRows);
  UOp n = len.Index(0).Load();  // the symbolic size: a value, not a constant
  UOp i = UOp::Range(kRows, 0), j = UOp::Range(n, 1);
  UOp acc = UOp::Alloc(DType::kF32, 0, 1).After({i});
  UOp init = acc.Index(0).Store(UOp::Const(DType::kF32, 0.0));
  UOp accj = acc.After({init, j});
  UOp upd = accj.Index(0).Store(accj.Index(0).Load() + x.Index(i * kMaxN + j).Load());
  return UOp::Sink({out.Index(i).Store(acc.After({upd.End({j})}).Index(0).Load()).End({i})});
}

std::string Row(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k)
    s += (k ? ", " : "") + std::to_string(static_cast<int>(v[k]));
  return s + "]";
}

int Fail(const absl::Status& s) {
  std::cerr << "runtime_trip_count: " << s.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::cout << "usage: runtime_trip_count\n\nRenders the seed's run-time trip count kernel to C, "
                 "compiles it once\n"
                 "with the C backend plugin and runs it for n=3 and n=8.\n";
    return 0;
  }
  absl::StatusOr<Device*> dev = DeviceRegistry::Get().Default();
  if (!dev.ok()) return Fail(dev.status());
  KernelCache ex(**dev);
  UOp k = Kernel();
  absl::StatusOr<std::string> src = ex.Source(k);
  if (!src.ok()) return Fail(src.status());
  std::cout << *src << "\n";

  std::vector<float> x(32);
  std::iota(x.begin(), x.end(), 0.0f);
  absl::StatusOr<Buffer> xb = (*dev)->Allocate(DType::kF32, 32),
                         lb = (*dev)->Allocate(DType::kI32, 1),
                         ob = (*dev)->Allocate(DType::kF32, 4);
  if (!xb.ok() || !lb.ok() || !ob.ok()) return Fail(absl::InternalError("cannot allocate"));
  if (absl::Status s = (*dev)->CopyIn(*xb, x.data(), x.size() * 4); !s.ok()) return Fail(s);
  for (int32_t length : {3, 8}) {
    if (absl::Status s = (*dev)->CopyIn(*lb, &length, 4); !s.ok()) return Fail(s);
    if (absl::Status s = ex.Run({KernelLaunch{k, {*xb, *lb, *ob}, {}}}); !s.ok()) return Fail(s);
    std::vector<float> out(4);
    if (absl::Status s = (*dev)->CopyOut(out.data(), *ob, 16); !s.ok()) return Fail(s);
    std::cout << "n=" << length << ": " << Row(out) << "\n";
  }
  std::cout << "compiled " << ex.stats().kernels_compiled << " kernel in "
            << ex.stats().compile_calls << " compiler call for " << ex.stats().launches
            << " launches on " << (*dev)->name() << "\n";
  return 0;
}
