// Checkpoints in the safetensors format (the one the ecosystem shares): 8 bytes of header
// length (little-endian), a JSON header naming each tensor's dtype, shape and byte range,
// then the bytes. Writes are atomic (a temporary file, then a rename), so a crash never
// leaves half a checkpoint. Reads validate the whole header (sizes, offsets, dtypes,
// shapes, names, overlaps) before touching data: a truncated or corrupt file is a clear
// error, never a crash.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "frontend/nn.h"
#include "frontend/tensor.h"

namespace uopc {

/// A tensor's bytes on the host (row-major, little-endian).
struct HostTensor {
  DType dtype = DType::kF32;
  TensorShape shape;
  std::string bytes;
};

struct Checkpoint {
  std::vector<std::pair<std::string, HostTensor>> tensors;  // in file order
  std::map<std::string, std::string> metadata;
  const HostTensor* Find(const std::string& name) const;
};

absl::Status SaveSafetensors(const std::string& path, const Checkpoint& ckpt);
absl::StatusOr<Checkpoint> LoadSafetensors(const std::string& path);

HostTensor ToHost(const Tensor& t);
/// A tensor of `h` on `device` (none: DefaultDevice()).
Tensor FromHost(const HostTensor& h, DeviceRef device = {});

/// Writes `tensors` (by name) and `metadata`; refuses (writing nothing) when a float tensor
/// holds nan or inf.
absl::Status SaveTensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata);
/// Writes every parameter of `model` (by its name), `extra` tensors and `metadata`, as
/// SaveTensors.
absl::Status SaveModel(const std::string& path, Module& model,
                       const std::map<std::string, std::string>& metadata,
                       const std::vector<std::pair<std::string, Tensor*>>& extra = {});
/// Loads every parameter of `model` (and `extra`) from `ckpt`: each name must be there with
/// the parameter's shape (dtypes are converted), finite, and the file must hold nothing
/// else but tensors whose names start with one of `ignore` ("optim." for a sampler that
/// has no optimizer). Nothing is assigned unless all match.
absl::Status LoadModel(const Checkpoint& ckpt, Module& model,
                       const std::vector<std::pair<std::string, Tensor*>>& extra = {},
                       const std::vector<std::string>& ignore = {});

}  // namespace uopc
