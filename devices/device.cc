#include "devices/device.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "core/status_macros.h"

namespace uopc {
namespace {

std::string Str(const char* s) { return s ? s : ""; }

// A blob's bytes (the blob is destroyed).
std::string TakeBlob(const Plugin& p, uopc_blob* blob) {
  uopc_blob_describe_args d{};
  d.blob = blob;
  p.Call(&d).IgnoreError();
  std::string out(static_cast<const char*>(d.data), d.data ? d.size : 0);
  uopc_blob_destroy_args x{};
  x.blob = blob;
  p.Call(&x).IgnoreError();
  return out;
}

}  // namespace

Program::~Program() {
  uopc_program_unload_args a{};
  a.program = handle_;
  plugin_.Call(&a).IgnoreError();
}

namespace {

// Target from a plugin's description, or for a plugin without the call (or older than ABI
// 1.4) the reference target of the device's type: the kernels it got before 1.4.
absl::StatusOr<Target> ReadTarget(const Plugin& plugin, const uopc_backend* backend,
                                  const uopc_device* device, uopc_device_type type) {
  const Target reference = type == UOPC_DEVICE_GPU ? Target::ReferenceGpu() : Target::ReferenceCpu();
  if (!backend) return reference;
  uopc_target_args a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.backend = backend;
  a.device = device;
  absl::Status s = plugin.Call(&a);
  if (absl::IsUnimplemented(s)) return reference;
  if (!s.ok()) return s;
  return TargetFromArgs(a);
}

}  // namespace

absl::StatusOr<Target> TargetFromArgs(const uopc_target_args& a) {
  if (a.device_class != UOPC_DEVICE_CPU && a.device_class != UOPC_DEVICE_GPU)
    return absl::FailedPreconditionError(absl::StrCat(
        "backend_target: device class ", static_cast<int>(a.device_class),
        " (expected UOPC_DEVICE_CPU or UOPC_DEVICE_GPU)"));
  Target t = a.device_class == UOPC_DEVICE_GPU ? Target::ReferenceGpu() : Target::ReferenceCpu();
  if (a.arch_name && *a.arch_name) t.arch = a.arch_name;
  t.features.clear();
  for (absl::string_view f : absl::StrSplit(Str(a.features), ',', absl::SkipEmpty()))
    t.features.emplace_back(f);
  std::sort(t.features.begin(), t.features.end());
  t.vector_bits = static_cast<int>(a.vector_bits);
  t.registers = static_cast<int>(a.registers);
  t.cores = static_cast<int>(a.cores);
  t.l1d_bytes = static_cast<int64_t>(a.l1d_bytes);
  t.l1d_ways = static_cast<int>(a.l1d_ways);
  t.l2_bytes = static_cast<int64_t>(a.l2_bytes);
  t.l3_bytes = static_cast<int64_t>(a.l3_bytes);
  t.warp = static_cast<int>(a.warp_size);
  t.threads_per_block = static_cast<int>(a.threads_per_block);
  t.shared_per_block = static_cast<int64_t>(a.shared_per_block);
  t.matrix_units.clear();
  for (absl::string_view m : absl::StrSplit(Str(a.matrix_units), ',', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(MatrixUnit u, ParseMatrixUnit(m));
    t.matrix_units.push_back(u);
  }
  t.kernels.clear();
  if (UOPC_HAS_MEMBER(&a, uopc_target_args, num_kernels) && a.kernels) {  // ABI 2.1
    for (uint64_t i = 0; i < a.num_kernels; ++i) {
      const uopc_kernel_desc& d = a.kernels[i];
      auto dtype = [](uopc_dtype x) { return x >= UOPC_DTYPE_BOOL && x <= UOPC_DTYPE_F64; };
      if (!d.name || !*d.name || !d.op || !dtype(d.a) || !dtype(d.b) || !dtype(d.out))
        return absl::FailedPreconditionError(
            absl::StrCat("backend_target: supplied kernel ", i, " has no name, op or dtypes"));
      t.kernels.push_back({d.name, d.op, static_cast<DType>(d.a), static_cast<DType>(d.b),
                           static_cast<DType>(d.out), static_cast<int64_t>(d.min_flops)});
    }
  }
  // what a text form carries must read back (a plugin's arch with a space would not)
  ASSIGN_OR_RETURN(Target back, ParseTarget(t.ToString()));
  if (!(back == t))
    return absl::FailedPreconditionError(
        absl::StrCat("backend_target: a target that does not read back: ", t.ToString()));
  return t;
}

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const Plugin& plugin, uint32_t index) {
  uopc_device_get_args get{};
  get.index = index;
  RETURN_IF_ERROR(plugin.Call(&get));
  uopc_device* handle = get.device;
  std::unique_ptr<Device> d(new Device(plugin, handle));
  uopc_device_props props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  uopc_device_describe_args describe{};
  describe.device = handle;
  describe.props = &props;
  RETURN_IF_ERROR(plugin.Call(&describe));
  d->name_ = Str(props.name);
  d->kind_ = Str(props.kind);
  d->uid_ = Str(props.uid);
  d->mem_total_ = props.mem_total;
  d->caps_ = props.caps;
  d->type_ = props.type;
  if (d->name_.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("plugin ", plugin.name(), ": device ", index, " has no name"));
  uopc_queue_create_args queue{};
  queue.device = handle;
  RETURN_IF_ERROR(plugin.Call(&queue));
  d->queue_ = queue.queue;
  // the backend the device names, among the plugin's
  uopc_backend_count_args count{};
  if (!plugin.Call(&count).ok()) count.count = 0;  // (a device-only plugin)
  for (uint32_t i = 0; i < count.count; ++i) {
    uopc_backend_get_args get_backend{};
    get_backend.index = i;
    if (!plugin.Call(&get_backend).ok()) continue;
    uopc_backend* b = get_backend.backend;
    uopc_backend_desc desc;
    std::memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    uopc_backend_describe_args describe_backend{};
    describe_backend.backend = b;
    describe_backend.desc = &desc;
    if (!plugin.Call(&describe_backend).ok()) continue;
    if (Str(desc.name) == Str(props.backend) || (!props.backend && !d->backend_)) {
      d->backend_ = b;
      d->backend_name_ = Str(desc.name);
      d->fingerprint_ = absl::StrCat(Str(desc.name), " ", Str(desc.fingerprint));
    }
  }
  ASSIGN_OR_RETURN(d->target_, ReadTarget(plugin, d->backend_, handle, d->type_));
  return d;
}

std::unique_ptr<Device> Device::Peer(int rank, const Device& like) {
  std::unique_ptr<Device> d(new Device(like.plugin_, nullptr));
  d->name_ = absl::StrCat("rank", rank, "/", like.name_);
  d->kind_ = like.kind_;
  d->type_ = like.type_;
  d->target_ = like.target_;
  d->peer_rank_ = rank;
  return d;
}

absl::Status Device::Here(const char* what) const {
  if (peer_rank_ < 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(what, " ", name_, ": the device is rank ", peer_rank_,
                   "'s, and its memory is in that process (copy the tensor to a device of "
                   "this rank first)"));
}

Device::~Device() {
  if (!queue_) return;
  uopc_queue_destroy_args a{};
  a.queue = queue_;
  plugin_.Call(&a).IgnoreError();
}

absl::StatusOr<Buffer> Device::Allocate(DType dtype, int64_t count) {
  if (count < 0 || dtype == DType::kVoid)
    return absl::InvalidArgumentError(
        absl::StrCat("allocate on ", name_, ": ", count, " elements of ", DTypeName(dtype)));
  if (peer_rank_ >= 0) return Buffer(this, nullptr, nullptr, 0, dtype, count);  // (no memory)
  uint64_t size_class = 0;
  ASSIGN_OR_RETURN(
      uopc_buffer * block,
      allocator_.Allocate(static_cast<uint64_t>(count) * DTypeSize(dtype), &size_class));
  return Buffer(this, &allocator_, block, size_class, dtype, count);
}

absl::Status Device::CheckRange(const char* what, const Buffer& b, uint64_t bytes,
                                uint64_t offset) const {
  RETURN_IF_ERROR(Here(what));
  if (b.device() != this)
    return absl::InvalidArgumentError(absl::StrCat(what, " ", name_, ": the buffer lives on ",
                                                   b ? b.device()->name() : "no device"));
  if (offset > b.bytes() || bytes > b.bytes() - offset)
    return absl::OutOfRangeError(absl::StrCat(what, " ", name_, ": ", bytes, " bytes at offset ",
                                              offset, " of a ", b.bytes(), "-byte buffer"));
  return absl::OkStatus();
}

absl::StatusOr<Event> Device::EnqueueCopyIn(const Buffer& dst, const void* src, uint64_t bytes,
                                            uint64_t offset) {
  RETURN_IF_ERROR(CheckRange("copy to", dst, bytes, offset));
  uopc_event* done = nullptr;
  uopc_copy_h2d_args a{};
  a.queue = queue_;
  a.dst = dst.handle();
  a.dst_offset = offset;
  a.src = src;
  a.size = bytes;
  a.done = &done;
  RETURN_IF_ERROR(plugin_.Call(&a));
  return Event(&plugin_, done);
}

absl::StatusOr<Event> Device::EnqueueCopyOut(void* dst, const Buffer& src, uint64_t bytes,
                                             uint64_t offset) {
  RETURN_IF_ERROR(CheckRange("copy from", src, bytes, offset));
  uopc_event* done = nullptr;
  uopc_copy_d2h_args a{};
  a.queue = queue_;
  a.dst = dst;
  a.src = src.handle();
  a.src_offset = offset;
  a.size = bytes;
  a.done = &done;
  RETURN_IF_ERROR(plugin_.Call(&a));
  return Event(&plugin_, done);
}

absl::Status Device::CopyIn(const Buffer& dst, const void* src, uint64_t bytes, uint64_t offset) {
  ASSIGN_OR_RETURN(Event done, EnqueueCopyIn(dst, src, bytes, offset));
  return done.Wait();
}

absl::Status Device::CopyOut(void* dst, const Buffer& src, uint64_t bytes, uint64_t offset) {
  ASSIGN_OR_RETURN(Event done, EnqueueCopyOut(dst, src, bytes, offset));
  return done.Wait();
}

absl::StatusOr<Event> Device::EnqueueCopy(const Buffer& dst, uint64_t dst_offset,
                                          const Buffer& src, uint64_t src_offset, uint64_t bytes) {
  RETURN_IF_ERROR(dst.device() ? dst.device()->CheckRange("copy to", dst, bytes, dst_offset)
                               : absl::InvalidArgumentError("copy: no destination buffer"));
  RETURN_IF_ERROR(src.device() ? src.device()->CheckRange("copy from", src, bytes, src_offset)
                               : absl::InvalidArgumentError("copy: no source buffer"));
  for (const Buffer* b : {&dst, &src})
    if (&b->device()->plugin() != &plugin_)
      return absl::InvalidArgumentError(
          absl::StrCat("copy on ", name_, ": ", b->device()->name(), " belongs to plugin ",
                       b->device()->plugin().name(), ", not ", plugin_.name(),
                       "; stage it through host memory"));
  uopc_event* done = nullptr;
  uopc_copy_args a{};
  a.queue = queue_;
  a.dst = dst.handle();
  a.dst_offset = dst_offset;
  a.src = src.handle();
  a.src_offset = src_offset;
  a.size = bytes;
  a.done = &done;
  RETURN_IF_ERROR(plugin_.Call(&a));
  return Event(&plugin_, done);
}

absl::Status Device::Wait(const Event& event) {
  if (!event.handle()) return absl::OkStatus();
  RETURN_IF_ERROR(Here("wait on"));
  if (event.plugin() != &plugin_)
    return absl::InvalidArgumentError(absl::StrCat(
        "wait on ", name_, ": an event of plugin ", event.plugin()->name(), "; wait on the host"));
  uopc_queue_wait_event_args a{};
  a.queue = queue_;
  a.event = event.handle();
  return plugin_.Call(&a);
}

absl::Status Device::Synchronize() {
  // without UOPC_DEVICE_CAP_ASYNC, work is done when its call returns: nothing to wait for
  if (!(caps_ & UOPC_DEVICE_CAP_ASYNC)) return absl::OkStatus();
  uopc_queue_synchronize_args a{};
  a.queue = queue_;
  return plugin_.Call(&a);
}

absl::StatusOr<Device::MemoryInfo> Device::Memory() const {
  RETURN_IF_ERROR(Here("memory of"));
  uopc_memory_info_args a{};
  a.device = handle_;
  RETURN_IF_ERROR(plugin_.Call(&a));
  return MemoryInfo{a.bytes_in_use, a.bytes_limit};
}

absl::StatusOr<void*> Device::Address(const Buffer& buffer) const {
  RETURN_IF_ERROR(Here("address on"));
  if (buffer.device() != this)
    return absl::InvalidArgumentError(absl::StrCat("address on ", name_, ": the buffer lives on ",
                                                   buffer ? buffer.device()->name() : "no device"));
  uopc_buffer_address_args a{};
  a.buffer = buffer.handle();
  RETURN_IF_ERROR(plugin_.Call(&a));
  return a.address;
}

absl::StatusOr<Buffer> Device::Wrap(void* address, DType dtype, int64_t count,
                                    void (*release)(void*), void* release_ctx) {
  RETURN_IF_ERROR(Here("wrap on"));
  if (count < 0 || dtype == DType::kVoid)
    return absl::InvalidArgumentError(
        absl::StrCat("wrap on ", name_, ": ", count, " elements of ", DTypeName(dtype)));
  if (reinterpret_cast<uintptr_t>(address) % DTypeSize(dtype) != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "wrap on ", name_, ": address ", absl::Hex(reinterpret_cast<uintptr_t>(address)),
        " is not aligned to the ", DTypeSize(dtype), "-byte elements of ", DTypeName(dtype)));
  uopc_buffer_wrap_args a{};
  a.device = handle_;
  a.address = address;
  a.size = static_cast<uint64_t>(count) * DTypeSize(dtype);
  a.release = release;
  a.release_ctx = release_ctx;
  RETURN_IF_ERROR(plugin_.Call(&a));
  return Buffer(this, &allocator_, a.buffer, Buffer::kWrapped, dtype, count);
}

absl::StatusOr<RenderedKernel> Device::Render(const std::string& kernel, const std::string& name) {
  RETURN_IF_ERROR(Here("compile for"));
  if (!backend_)
    return absl::FailedPreconditionError(
        absl::StrCat("device ", name_, " has no backend to compile for it"));
  uopc_render_args args{};
  args.backend = backend_;
  args.kernel = kernel.data();
  args.kernel_size = kernel.size();
  args.name = name.c_str();
  RETURN_IF_ERROR(plugin_.Call(&args));
  RenderedKernel out;
  out.source = TakeBlob(plugin_, args.source);
  for (int i = 0; i < 3; ++i) {
    out.dims.global[i] = std::max<uint32_t>(args.global[i], 1);
    out.dims.local[i] = std::max<uint32_t>(args.local[i], 1);
  }
  out.shared_bytes = args.shared_bytes;
  return out;
}

absl::StatusOr<std::shared_ptr<Program>> Device::Build(const std::vector<std::string>& sources,
                                                       const std::vector<std::string>& entries) {
  RETURN_IF_ERROR(Here("compile for"));
  if (!backend_)
    return absl::FailedPreconditionError(
        absl::StrCat("device ", name_, " has no backend to compile for it"));
  std::vector<uopc_source> srcs(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    srcs[i] = {};
    srcs[i].struct_size = sizeof(uopc_source);
    srcs[i].text = sources[i].data();
    srcs[i].size = sources[i].size();
  }
  uopc_compile_args args{};
  args.backend = backend_;
  args.sources = srcs.data();
  args.num_sources = srcs.size();
  RETURN_IF_ERROR(plugin_.Call(&args));
  std::string binary = TakeBlob(plugin_, args.binary);
  std::vector<const char*> names;
  for (const std::string& e : entries) names.push_back(e.c_str());
  uopc_program_load_args load{};
  load.device = handle_;
  load.binary = binary.data();
  load.size = binary.size();
  load.entries = names.data();
  load.num_entries = static_cast<uint32_t>(names.size());
  RETURN_IF_ERROR(plugin_.Call(&load));
  return std::make_shared<Program>(plugin_, load.program, entries);
}

absl::StatusOr<Event> Device::Launch(const Program& program, uint32_t entry,
                                     absl::Span<uopc_buffer* const> buffers,
                                     absl::Span<const int64_t> vars,
                                     absl::Span<const uint64_t> offsets, const LaunchDims& dims) {
  RETURN_IF_ERROR(Here("launch on"));
  if (!offsets.empty() && offsets.size() != buffers.size())
    return absl::InvalidArgumentError(absl::StrCat("launch on ", name_, ": ", offsets.size(),
                                                   " offsets for ", buffers.size(), " buffers"));
  uopc_event* done = nullptr;
  uopc_launch_args args{};
  args.queue = queue_;
  args.done = &done;
  args.program = program.handle();
  args.entry = entry;
  args.num_buffers = static_cast<uint32_t>(buffers.size());
  args.buffers = buffers.data();
  args.offsets = offsets.empty() ? nullptr : offsets.data();
  args.vars = vars.data();
  args.num_vars = static_cast<uint32_t>(vars.size());
  for (int i = 0; i < 3; ++i) {
    args.grid[i] = dims.global[i];
    args.block[i] = dims.local[i];
  }
  RETURN_IF_ERROR(plugin_.Call(&args));
  return Event(&plugin_, done);
}

absl::StatusOr<Event> Device::LaunchSupplied(const std::string& name,
                                             absl::Span<uopc_buffer* const> buffers,
                                             absl::Span<const uint64_t> offsets,
                                             absl::Span<const int64_t> params) {
  RETURN_IF_ERROR(Here("launch on"));
  if (!offsets.empty() && offsets.size() != buffers.size())
    return absl::InvalidArgumentError(absl::StrCat("launch of ", name, " on ", name_, ": ",
                                                   offsets.size(), " offsets for ", buffers.size(),
                                                   " buffers"));
  uopc_event* done = nullptr;
  uopc_kernel_launch_args args{};
  args.queue = queue_;
  args.done = &done;
  args.name = name.c_str();
  args.buffers = buffers.data();
  args.offsets = offsets.empty() ? nullptr : offsets.data();
  args.num_buffers = static_cast<uint32_t>(buffers.size());
  args.params = params.data();
  args.num_params = static_cast<uint32_t>(params.size());
  RETURN_IF_ERROR(plugin_.Call(&args));
  return Event(&plugin_, done);
}

}  // namespace uopc
