#include "devices/device.h"

#include <cstring>

#include "absl/strings/str_cat.h"

#include "core/status_macros.h"

namespace uopc {
namespace {

std::string Str(const char* s) { return s ? s : ""; }

// A blob's bytes (the blob is destroyed).
std::string TakeBlob(const Plugin& p, uopc_blob* blob) {
  const void* data = nullptr;
  uint64_t size = 0;
  p.api().blob_data(blob, &data, &size);
  std::string out(static_cast<const char*>(data), size);
  p.api().blob_destroy(blob);
  return out;
}

}  // namespace

Program::~Program() {
  plugin_.Device(&uopc_device_api::program_unload, "program_unload", handle_).IgnoreError();
}

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const Plugin& plugin, uint32_t index) {
  uopc_device* handle = nullptr;
  RETURN_IF_ERROR(plugin.Device(&uopc_device_api::device_get, "device_get", index, &handle));
  std::unique_ptr<Device> d(new Device(plugin, handle));
  uopc_device_props props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  RETURN_IF_ERROR(
      plugin.Device(&uopc_device_api::device_describe, "device_describe", handle, &props));
  d->name_ = Str(props.name);
  d->kind_ = Str(props.kind);
  d->uid_ = Str(props.uid);
  d->mem_total_ = props.mem_total;
  if (d->name_.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("plugin ", plugin.name(), ": device ", index, " has no name"));
  RETURN_IF_ERROR(
      plugin.Device(&uopc_device_api::queue_create, "queue_create", handle, &d->queue_));
  // the backend the device names, among the plugin's
  uint32_t n = Plugin::Has(plugin.api().backend, &uopc_backend_api::backend_count)
                   ? plugin.api().backend->backend_count()
                   : 0;
  for (uint32_t i = 0; i < n; ++i) {
    uopc_backend* b = nullptr;
    if (!plugin.Backend(&uopc_backend_api::backend_get, "backend_get", i, &b).ok()) continue;
    uopc_backend_desc desc;
    std::memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    if (!plugin.Backend(&uopc_backend_api::backend_describe, "backend_describe", b, &desc).ok())
      continue;
    if (Str(desc.name) == Str(props.backend) || (!props.backend && !d->backend_)) {
      d->backend_ = b;
      d->backend_name_ = Str(desc.name);
      d->fingerprint_ = absl::StrCat(Str(desc.name), " ", Str(desc.fingerprint));
    }
  }
  return d;
}

Device::~Device() {
  if (queue_)
    plugin_.Device(&uopc_device_api::queue_destroy, "queue_destroy", queue_).IgnoreError();
}

absl::StatusOr<Buffer> Device::Allocate(DType dtype, int64_t count) {
  if (count < 0 || dtype == DType::kVoid)
    return absl::InvalidArgumentError(
        absl::StrCat("allocate on ", name_, ": ", count, " elements of ", DTypeName(dtype)));
  uint64_t size_class = 0;
  ASSIGN_OR_RETURN(
      uopc_buffer * block,
      allocator_.Allocate(static_cast<uint64_t>(count) * DTypeSize(dtype), &size_class));
  return Buffer(this, &allocator_, block, size_class, dtype, count);
}

absl::Status Device::CopyIn(const Buffer& dst, const void* src, uint64_t bytes, uint64_t offset) {
  if (dst.device() != this)
    return absl::InvalidArgumentError(
        absl::StrCat("copy to ", name_, ": the buffer lives on another device"));
  if (offset + bytes > dst.bytes())
    return absl::OutOfRangeError(absl::StrCat("copy to ", name_, ": ", bytes, " bytes at offset ",
                                              offset, " of a ", dst.bytes(), "-byte buffer"));
  return plugin_.Device(&uopc_device_api::copy_h2d, "copy_h2d", queue_, dst.handle(), offset, src,
                        bytes, nullptr);
}

absl::Status Device::CopyOut(void* dst, const Buffer& src, uint64_t bytes, uint64_t offset) {
  if (src.device() != this)
    return absl::InvalidArgumentError(
        absl::StrCat("copy from ", name_, ": the buffer lives on another device"));
  if (offset + bytes > src.bytes())
    return absl::OutOfRangeError(absl::StrCat("copy from ", name_, ": ", bytes, " bytes at offset ",
                                              offset, " of a ", src.bytes(), "-byte buffer"));
  uopc_event* done = nullptr;
  RETURN_IF_ERROR(plugin_.Device(&uopc_device_api::copy_d2h, "copy_d2h", queue_, dst, src.handle(),
                                 offset, bytes, &done));
  absl::Status s = plugin_.Device(&uopc_device_api::event_wait, "event_wait", done, ~uint64_t{0});
  if (done) plugin_.api().device->event_destroy(done);
  return s;
}

absl::Status Device::CopyWithin(const Buffer& dst, const Buffer& src, uint64_t bytes) {
  if (dst.device() != this || src.device() != this)
    return absl::InvalidArgumentError(
        absl::StrCat("copy within ", name_, ": a buffer lives on another device"));
  if (bytes > dst.bytes() || bytes > src.bytes())
    return absl::OutOfRangeError(absl::StrCat("copy within ", name_, ": ", bytes,
                                              " bytes between buffers of ", src.bytes(), " and ",
                                              dst.bytes()));
  return plugin_.Device(&uopc_device_api::copy_d2d, "copy_d2d", queue_, dst.handle(), uint64_t{0},
                        src.handle(), uint64_t{0}, bytes, nullptr);
}

absl::Status Device::Synchronize() {
  return plugin_.Device(&uopc_device_api::queue_synchronize, "queue_synchronize", queue_);
}

absl::StatusOr<std::string> Device::Render(const std::string& kernel, const std::string& name) {
  if (!backend_)
    return absl::FailedPreconditionError(
        absl::StrCat("device ", name_, " has no backend to compile for it"));
  uopc_render_args args{};
  args.struct_size = sizeof args;
  args.backend = backend_;
  args.kernel = kernel.data();
  args.kernel_size = kernel.size();
  args.name = name.c_str();
  uopc_blob* src = nullptr;
  RETURN_IF_ERROR(plugin_.Backend(&uopc_backend_api::render, "render", &args, &src));
  return TakeBlob(plugin_, src);
}

absl::StatusOr<std::shared_ptr<Program>> Device::Build(const std::vector<std::string>& sources,
                                                       const std::vector<std::string>& entries) {
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
  args.struct_size = sizeof args;
  args.backend = backend_;
  args.sources = srcs.data();
  args.num_sources = srcs.size();
  uopc_blob* bin = nullptr;
  RETURN_IF_ERROR(plugin_.Backend(&uopc_backend_api::compile, "compile", &args, &bin));
  std::string binary = TakeBlob(plugin_, bin);
  std::vector<const char*> names;
  for (const std::string& e : entries) names.push_back(e.c_str());
  uopc_program* prog = nullptr;
  RETURN_IF_ERROR(plugin_.Device(&uopc_device_api::program_load, "program_load", handle_,
                                 binary.data(), uint64_t{binary.size()}, names.data(),
                                 static_cast<uint32_t>(names.size()), &prog));
  return std::make_shared<Program>(plugin_, prog, entries);
}

absl::Status Device::Launch(const Program& program, uint32_t entry,
                            absl::Span<uopc_buffer* const> buffers, absl::Span<const int64_t> vars,
                            absl::Span<const uint64_t> offsets) {
  if (!offsets.empty() && offsets.size() != buffers.size())
    return absl::InvalidArgumentError(absl::StrCat("launch on ", name_, ": ", offsets.size(),
                                                   " offsets for ", buffers.size(), " buffers"));
  uopc_launch_args args{};
  args.struct_size = sizeof args;
  args.program = program.handle();
  args.entry = entry;
  args.num_buffers = static_cast<uint32_t>(buffers.size());
  args.buffers = buffers.data();
  args.offsets = offsets.empty() ? nullptr : offsets.data();
  args.vars = vars.data();
  args.num_vars = static_cast<uint32_t>(vars.size());
  for (int i = 0; i < 3; ++i) args.grid[i] = args.block[i] = 1;
  return plugin_.Device(&uopc_device_api::launch, "launch", queue_, &args, nullptr);
}

}  // namespace uopc
