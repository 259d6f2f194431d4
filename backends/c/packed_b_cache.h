// Packed copies of a matmul's b kept from one call to the next, for a b that nothing wrote in
// between: a model's weights while it decodes. A batched decode step of the bench GPT (64 rows
// a matmul) packed every weight anew at every call: 9.6% of its time (perf, AMD EPYC Zen 3).
//
// The plugin counts the writes it makes to each buffer (the buffers a generated kernel's render
// found it may write, a copy's destination, a supplied kernel's out: backends/c/cpu_device.h)
// and names each buffer by an id
// that no later buffer reuses, so (id, writes) names one content of one buffer. A buffer whose
// address the host was given (DLPack, collectives) may change behind the plugin's back and is
// never cached (id 0).
//
// A b is kept from its second call with the same content on (a training step's weights change
// between their calls, so it keeps nothing there and costs a lookup a call). A copy whose
// content changes is packed anew into the same memory at the second call with the new content
// (micro-batches that share a step's weights allocate nothing after the first step); its
// memory goes when its buffer is freed, or, least recently used first, where the copies would
// pass the capacity (UOPC_C_PACK_CACHE_MB, 256 by default; 0: none).
// That memory is the plugin's own: no device's limit (UOPC_CPU_MEMORY) counts it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>

#include "absl/container/flat_hash_map.h"

namespace uopc::cpu {

/// Which content of which buffer an operand is: its buffer's id (0: not to be kept) and the
/// writes seen to that buffer so far.
struct BufferVersion {
  uint64_t id = 0, writes = 0;
};

class PackedBCache {
 public:
  /// What b is, apart from its content: where it lies in its buffer and how it is read, and
  /// the packing's own choices (its panels and blocks of k), as one string of bytes.
  struct Key {
    uint64_t id = 0;
    const void* b = nullptr;  // the matmul's b: its buffer's memory plus the launch's offset
    int64_t shape[6] = {};    // b_offset, b_row, b_col, k, n, the packing's block of k
    int dtype = 0;            // the packed elements' source dtype (4: f32, 2: bf16)
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.id, k.b, k.shape[0], k.shape[1], k.shape[2], k.shape[3],
                        k.shape[4], k.shape[5], k.dtype);
    }
  };
  /// A call's use of the cache: `data` null (pack as always), or `floats` floats to pack b
  /// into and then call Ready (`filled` false), or b already packed there (`filled` true).
  struct Use {
    std::shared_ptr<float[]> data;
    bool filled = false;
  };

  /// The process's cache, of UOPC_C_PACK_CACHE_MB's capacity (SetCapacity).
  static PackedBCache& Get();

  void SetCapacity(uint64_t bytes);
  /// The use for b = `key` at version `v`, a packed copy of `floats` floats.
  Use Find(const Key& key, BufferVersion v, int64_t floats);
  /// The copy that Find gave to fill is filled with b at version `v`.
  void Ready(const Key& key, BufferVersion v);
  /// Drops the copies of buffer `id` (freed).
  void Forget(uint64_t id);
  /// Bytes held in copies, for tests.
  uint64_t bytes() const;

 private:
  struct Entry {
    uint64_t writes = 0;            // the version the entry has seen last
    std::shared_ptr<float[]> data;  // the copy's memory (null: none)
    uint64_t bytes = 0;
    enum { kSeen, kFilling, kFilled } state = kSeen;  // the copy, at version `writes`
    std::list<Key>::iterator lru;  // (in used_, most recent first, where there is data)
  };
  void Drop(Entry& e);
  mutable std::mutex mu_;
  uint64_t capacity_ = uint64_t{256} << 20, bytes_ = 0;
  absl::flat_hash_map<Key, Entry> entries_;
  absl::flat_hash_map<uint64_t, int64_t> keys_of_;  // entries a buffer id has
  std::list<Key> used_;
};

}  // namespace uopc::cpu
