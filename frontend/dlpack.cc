#include "frontend/dlpack.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "devices/registry.h"
#include "frontend/error.h"

namespace uopc {
namespace {

constexpr uint8_t kDLBoolCode = 6;  // kDLBool: DLPack 0.8; Debian's header is 0.6

DLDataType ToDLType(DType t) {
  const uint8_t bits = static_cast<uint8_t>(DTypeSize(t) * 8);
  switch (t) {
    case DType::kBool: return {kDLBoolCode, 8, 1};
    case DType::kI8:
    case DType::kI16:
    case DType::kI32:
    case DType::kI64: return {kDLInt, bits, 1};
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64: return {kDLUInt, bits, 1};
    case DType::kBF16: return {kDLBfloat, 16, 1};
    case DType::kF16:
    case DType::kF32:
    case DType::kF64: return {kDLFloat, bits, 1};
    case DType::kVoid: break;
  }
  ThrowInvalid("to_dlpack: a tensor of dtype void");
}

std::optional<DType> FromDLType(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  for (int i = 1; i < kNumDTypes; ++i) {
    const DType d = static_cast<DType>(i);
    const DLDataType c = ToDLType(d);
    if (c.code == t.code && c.bits == t.bits) return d;
  }
  return std::nullopt;
}

std::string DLTypeName(DLDataType t) {
  return absl::StrCat("(code ", t.code, ", bits ", t.bits, ", lanes ", t.lanes, ")");
}

std::string DLDeviceName(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return absl::StrCat("cuda:", d.device_id);
    default: return absl::StrCat("device type ", d.device_type, " id ", d.device_id);
  }
}

// The device number in a name such as "CUDA:1".
int DeviceIndex(const Device& d) {
  const std::string& n = d.name();
  const size_t colon = n.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(n.c_str() + colon + 1);
}

// A device of ours that addresses memory of `d`, or nullptr.
Device* DeviceFor(DLDevice d) {
  const uopc_device_type want = d.device_type == kDLCPU    ? UOPC_DEVICE_CPU
                                : d.device_type == kDLCUDA ? UOPC_DEVICE_GPU
                                                           : uopc_device_type{};
  if (want == uopc_device_type{}) return nullptr;
  Device* fallback = DefaultDevice();
  if (fallback && fallback->type() == want &&
      (want == UOPC_DEVICE_CPU || DeviceIndex(*fallback) == d.device_id))
    return fallback;
  for (Device* dev : DeviceRegistry::Get().devices())
    if (dev->type() == want && (want == UOPC_DEVICE_CPU || DeviceIndex(*dev) == d.device_id))
      return dev;
  return nullptr;
}

struct Exported {
  DLManagedTensor managed{};
  Buffer buffer;  // keeps the memory alive until the consumer's deleter
  std::vector<int64_t> shape, strides;
};

void DeleteExported(DLManagedTensor* m) { delete static_cast<Exported*>(m->manager_ctx); }

void CallDeleter(void* m) {
  auto* managed = static_cast<DLManagedTensor*>(m);
  if (managed->deleter) managed->deleter(managed);
}

// Calls the deleter of `m` once when it goes out of scope, unless released.
struct DeleterGuard {
  DLManagedTensor* m;
  ~DeleterGuard() {
    if (m) CallDeleter(m);
  }
};

}  // namespace

DLManagedTensor* ToDLPack(const Tensor& t) {
  Tensor r = t;
  r.Realize();
  Device* device = r.device();
  const Buffer& buffer = r.data()->buffer;
  ThrowIfError(device->Synchronize());
  absl::StatusOr<void*> address = device->Address(buffer);
  if (!address.ok())
    ThrowInvalid(absl::StrCat("to_dlpack: a ", DTypeName(r.dtype()), " tensor of shape ",
                              ShapeString(r.shape()), " on ", device->name(),
                              ": its memory cannot be shared (", address.status().message(),
                              "); copy it to a CPU device first (To(\"CPU\"))"));
  DLDevice dl_device{kDLCPU, 0};
  if (device->type() == UOPC_DEVICE_GPU)
    dl_device = {kDLCUDA, DeviceIndex(*device)};
  else if (device->type() != UOPC_DEVICE_CPU)
    ThrowInvalid(absl::StrCat("to_dlpack: ", device->name(), " is neither a CPU nor a GPU"));
  auto* e = new Exported;
  e->buffer = buffer;
  const std::vector<int64_t> max = MaxShape(r.shape());
  e->strides.assign(max.size(), 1);
  for (size_t d = max.size(); d-- > 1;) e->strides[d - 1] = e->strides[d] * max[d];
  for (const SymInt& d : r.shape()) e->shape.push_back(d.value());
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = *address;
  dl.device = dl_device;
  dl.ndim = static_cast<int>(e->shape.size());
  dl.dtype = ToDLType(r.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = DeleteExported;
  return &e->managed;
}

Tensor FromDLPack(DLManagedTensor* m) {
  if (!m) ThrowInvalid("from_dlpack: a null DLManagedTensor");
  DeleterGuard guard{m};
  const DLTensor& dl = m->dl_tensor;
  std::vector<int64_t> shape(dl.shape, dl.shape + std::max(dl.ndim, 0));
  const std::string what =
      absl::StrCat("from_dlpack: a tensor of shape (", absl::StrJoin(shape, ", "), ") on ",
                   DLDeviceName(dl.device));
  const std::optional<DType> dtype = FromDLType(dl.dtype);
  if (!dtype)
    ThrowInvalid(absl::StrCat(what, ": dtype ", DLTypeName(dl.dtype),
                              " is none of bool, i8..i64, u8..u64, f16, bf16, f32, f64 with one "
                              "lane"));
  if (dl.ndim < 0 || std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
    ThrowInvalid(absl::StrCat(what, ": a negative rank or size"));
  Device* device = DeviceFor(dl.device);
  if (!device)
    ThrowInvalid(
        absl::StrCat(what, ": no device here addresses that memory (devices: ",
                     absl::StrJoin(DeviceRegistry::Get().devices(), ", ",
                                   [](std::string* o, Device* d) { o->append(d->name()); }),
                     ")"));
  const int64_t count =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  const int64_t size = DTypeSize(*dtype);
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  if (dl.strides) strides.assign(dl.strides, dl.strides + shape.size());
  auto* base = static_cast<uint8_t*>(dl.data) + dl.byte_offset;
  TensorShape dims(shape.begin(), shape.end());

  // Row-major after some permutation of the axes (size-1 axes may have any stride)?
  std::vector<int> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return (shape[a] == 1 ? 0 : strides[a]) > (shape[b] == 1 ? 0 : strides[b]);
  });
  bool dense = reinterpret_cast<uintptr_t>(base) % size == 0;
  for (int64_t expect = 1, i = static_cast<int64_t>(order.size()); i-- > 0 && dense;) {
    const int a = order[i];
    if (shape[a] != 1 && strides[a] != expect) dense = false;
    expect *= shape[a];
  }
  if (dense && count > 0) {
    TensorShape laid;
    for (int a : order) laid.push_back(shape[a]);
    absl::StatusOr<Buffer> buffer = device->Wrap(base, *dtype, count, CallDeleter, m);
    if (!buffer.ok()) ThrowInvalid(absl::StrCat(what, ": ", buffer.status().message()));
    guard.m = nullptr;  // the buffer calls the deleter now
    Tensor t = Tensor::FromBuffer(*std::move(buffer), laid);
    bool identity = std::is_sorted(order.begin(), order.end());
    if (identity) return t;
    std::vector<int> inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int>(i);
    return t.Permute(inverse);
  }
  if (dl.device.device_type != kDLCPU && count > 0)
    ThrowInvalid(absl::StrCat(what, ": strides (", absl::StrJoin(strides, ", "),
                              ") are not a row-major layout, which only CPU memory may have "
                              "here (make it contiguous first)"));
  // Gather element by element into a row-major copy.
  std::vector<uint8_t> bytes(static_cast<size_t>(count * size));
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * strides[d];
    std::memcpy(bytes.data() + i * size, base + at * size, size);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  absl::StatusOr<Buffer> buffer = device->Allocate(*dtype, count);
  ThrowIfError(buffer.status());
  ThrowIfError(device->CopyIn(*buffer, bytes.data(), bytes.size()));
  return Tensor::FromBuffer(*std::move(buffer), dims);
}

}  // namespace uopc
