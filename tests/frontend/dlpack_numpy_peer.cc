// The uopc side of dlpack_numpy_test.py: a shared library that Python loads with ctypes,
// exporting tensors to numpy and importing numpy's arrays through DLPack. Counts the calls
// of the deleter of what it exported.
#include <atomic>
#include <cstring>
#include <exception>
#include <vector>

#include "frontend/dlpack.h"

namespace {

std::atomic<int> g_deleted{0};
void (*g_inner_deleter)(DLManagedTensor*) = nullptr;
uopc::Tensor g_held;

void CountingDeleter(DLManagedTensor* m) {
  ++g_deleted;
  g_inner_deleter(m);
}

}  // namespace

extern "C" {

/// The (2, 3) tensor arange(6) * 1.5 + 2 in dtype `dtype` (a uopc DType name), exported.
DLManagedTensor* peer_export(const char* dtype) {
  try {
    uopc::DType d = *uopc::ParseDType(dtype);
    uopc::Tensor t = (uopc::Tensor::Arange(6).Cast(uopc::DType::kF32) * 1.5 + 2).Reshape({2, 3});
    DLManagedTensor* m = uopc::ToDLPack(t.Cast(d));
    g_inner_deleter = m->deleter;
    m->deleter = CountingDeleter;
    return m;
  } catch (const std::exception&) {
    return nullptr;
  }
}

int peer_deleted() { return g_deleted; }

/// Imports `m` and holds the tensor; 0, or -1 with the error's message in `error`.
int peer_import(DLManagedTensor* m, char* error, int64_t error_len) {
  try {
    g_held = uopc::FromDLPack(m);
    return 0;
  } catch (const std::exception& e) {
    std::strncpy(error, e.what(), static_cast<size_t>(error_len - 1));
    error[error_len - 1] = 0;
    return -1;
  }
}

/// The held tensor's values now, as doubles (row-major) into `out` (room for `n`); how many.
int64_t peer_read(double* out, int64_t n) {
  std::vector<double> v = g_held.Cast(uopc::DType::kF64).ToVector<double>();
  if (static_cast<int64_t>(v.size()) > n) return -1;
  std::memcpy(out, v.data(), v.size() * sizeof(double));
  return static_cast<int64_t>(v.size());
}

/// Lets the held tensor go (and with it the imported memory).
void peer_release() { g_held = uopc::Tensor(); }

}  // extern "C"
