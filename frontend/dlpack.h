// DLPack: a realized Tensor handed to another framework (numpy, PyTorch, JAX) as a
// DLManagedTensor, and one of theirs taken in, without copying where the device and the
// layout allow.
//
//   DLManagedTensor* m = ToDLPack(y);   // shares y's buffer; the consumer calls m->deleter
//   Tensor x = FromDLPack(theirs);      // over their memory; their deleter runs once, when
//                                       // the last tensor over it is gone
//
// Shared: CPU memory (kDLCPU) with a CPU device here, CUDA memory (kDLCUDA, device_id n)
// with the device CUDA:n. Imported memory is used in place when its strides are a row-major
// layout, or a permutation of one (the tensor is then a Permute of it), and its address is
// aligned to the element size; other CPU layouts (broadcast, sliced, misaligned) are
// copied, and the deleter is then called at once. Dtypes: bool, i8..i64, u8..u64, f16,
// bf16, f32, f64, one lane. bool is DLPack 0.8's kDLBool (code 6), which the 0.6 header
// Debian ships does not name.
#pragma once

#include <dlpack/dlpack.h>

#include "frontend/tensor.h"

namespace uopc {

/// `t`, realized, as a DLManagedTensor over its buffer (row-major; a symbolic shape gives
/// the bound sizes with the strides of the buffer's largest layout). The caller owns it and
/// calls its deleter once. Throws uopc::Error for a device whose memory has no address here
/// (a remote device).
DLManagedTensor* ToDLPack(const Tensor& t);

/// A tensor over `m`'s data, taking ownership of `m`: its deleter is called exactly once,
/// when the memory is no longer used, at once if it was copied, and before throwing
/// uopc::Error for what cannot be shared (an unknown dtype, vector lanes, a device type with
/// no device here, a non-row-major layout on a device other than the CPU).
Tensor FromDLPack(DLManagedTensor* m);

}  // namespace uopc
