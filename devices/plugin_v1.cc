#include "devices/plugin_v1.h"

#include "absl/strings/str_cat.h"

#include "devices/plugin.h"

namespace uopc {
namespace {

// The table of ABI 1.0 ends with `device`: a plugin table smaller than that is corrupt.
constexpr uint64_t kMinPluginTable = offsetof(uopc_plugin_api, device) + sizeof(void*);

}  // namespace

const uopc_host_api* PluginV1::Host() {
  static const uopc_host_api host = {
      .struct_size = sizeof(uopc_host_api),
      .ext = nullptr,
      .abi_major = UOPC_ABI_V1_MAJOR,
      .abi_minor = UOPC_ABI_V1_MINOR,
      .reserved = 0,
      .log = Plugin::Log,
      .log_ctx = nullptr,
  };
  return &host;
}

absl::StatusOr<std::unique_ptr<PluginV1>> PluginV1::Check(const uopc_plugin_api* api) {
  if (api->abi_major != UOPC_ABI_V1_MAJOR)
    return absl::FailedPreconditionError(
        absl::StrCat("plugin ABI ", api->abi_major, ".", api->abi_minor,
                     " from its " UOPC_ENTRY_SYMBOL_V1 "; this host speaks ABI ", UOPC_ABI_MAJOR,
                     ".", UOPC_ABI_MINOR, " and 1.x (a table's major must be its entry's)"));
  if (api->struct_size < kMinPluginTable)
    return absl::FailedPreconditionError(
        absl::StrCat("its table is ", api->struct_size, " bytes; ABI 1.0 needs ", kMinPluginTable));
  for (auto slot :
       {(void*)api->error_destroy, (void*)api->error_code, (void*)api->error_message,
        (void*)api->probe, (void*)api->initialize, (void*)api->blob_destroy, (void*)api->blob_data})
    if (!slot)
      return absl::FailedPreconditionError(
          "its table has an empty slot (1.x plugins fill every slot: see plugin_sdk_v1.h)");
  return std::unique_ptr<PluginV1>(new PluginV1(api));
}

absl::Status PluginV1::Take(uopc_error* e) const {
  if (!e) return absl::OkStatus();
  uopc_error_describe_args d{};
  d.error = e;
  Call(&d).IgnoreError();
  absl::Status s = Plugin::StatusOf(
      d.code, absl::string_view(d.message ? d.message : "", d.message ? d.message_size : 0));
  api_->error_destroy(e);
  return s;
}

absl::Status PluginV1::Missing(const char* slot) const {
  return absl::UnimplementedError(absl::StrCat("plugin ", api_->name ? api_->name : "?", " (ABI ",
                                               api_->abi_major, ".", api_->abi_minor, ") has no ",
                                               slot));
}

// ---- the plugin ----

absl::Status PluginV1::Call(uopc_probe_args* a) const {
  a->score = api_->probe();  // (a 1.x probe says no without saying why)
  return absl::OkStatus();
}

absl::Status PluginV1::Call(uopc_initialize_args* a) const {
  if (Has(api_, &uopc_plugin_api::initialize_with)) {
    absl::Status s = Take(api_->initialize_with(a));
    if (!absl::IsUnimplemented(s)) return s;  // (else an SDK stub)
  }
  return Take(api_->initialize());
}

absl::Status PluginV1::Call(uopc_shutdown_args*) const { return Take(api_->shutdown()); }

absl::Status PluginV1::Call(uopc_error_describe_args* a) const {
  a->code = api_->error_code(a->error);
  api_->error_message(a->error, &a->message, &a->message_size);
  return absl::OkStatus();
}

absl::Status PluginV1::Call(uopc_error_destroy_args* a) const {
  api_->error_destroy(a->error);
  return absl::OkStatus();
}

absl::Status PluginV1::Call(uopc_blob_describe_args* a) const {
  api_->blob_data(a->blob, &a->data, &a->size);
  return absl::OkStatus();
}

absl::Status PluginV1::Call(uopc_blob_destroy_args* a) const {
  api_->blob_destroy(a->blob);
  return absl::OkStatus();
}

// ---- the backend ----

absl::Status PluginV1::Call(uopc_backend_count_args* a) const {
  if (!Has(api_->backend, &uopc_backend_api::backend_count)) return Missing("backend_count");
  a->count = api_->backend->backend_count();
  return absl::OkStatus();
}

absl::Status PluginV1::Call(uopc_backend_get_args* a) const {
  return Backend(&uopc_backend_api::backend_get, "backend_get", a->index, &a->backend);
}

absl::Status PluginV1::Call(uopc_backend_describe_args* a) const {
  return Backend(&uopc_backend_api::backend_describe, "backend_describe", a->backend, a->desc);
}

absl::Status PluginV1::Call(uopc_backend_supports_args* a) const {
  uopc_op_query q{};
  q.struct_size = sizeof q;
  q.op = a->op;
  q.dtype = a->dtype;
  return Backend(&uopc_backend_api::backend_supports, "backend_supports", a->backend, &q,
                 &a->supported);
}

absl::Status PluginV1::Call(uopc_backend_target_args* a) const {
  return Backend(&uopc_backend_api::backend_target, "backend_target", a);
}

absl::Status PluginV1::Call(uopc_render_args* a) const {
  uopc_render_result r{};
  r.struct_size = sizeof r;
  absl::Status s = Backend(&uopc_backend_api::render_kernel, "render_kernel", a, &r);
  if (absl::IsUnimplemented(s)) {  // ABI 1.0, or not filled in: a kernel that loops itself
    r = uopc_render_result{};
    r.global[0] = r.global[1] = r.global[2] = r.local[0] = r.local[1] = r.local[2] = 1;
    s = Backend(&uopc_backend_api::render, "render", a, &r.source);
  }
  a->source = r.source;
  for (int i = 0; i < 3; ++i) a->global[i] = r.global[i], a->local[i] = r.local[i];
  a->shared_bytes = r.shared_bytes;
  return s;
}

absl::Status PluginV1::Call(uopc_compile_args* a) const {
  return Backend(&uopc_backend_api::compile, "compile", a, &a->binary);
}

// ---- the device ----

absl::Status PluginV1::Call(uopc_device_count_args* a) const {
  if (!Has(api_->device, &uopc_device_api::device_count)) return Missing("device_count");
  a->count = api_->device->device_count();
  return absl::OkStatus();
}

absl::Status PluginV1::Call(uopc_device_get_args* a) const {
  return Device(&uopc_device_api::device_get, "device_get", a->index, &a->device);
}

absl::Status PluginV1::Call(uopc_device_describe_args* a) const {
  return Device(&uopc_device_api::device_describe, "device_describe", a->device, a->props);
}

absl::Status PluginV1::Call(uopc_memory_info_args* a) const {
  return Device(&uopc_device_api::memory_info, "memory_info", a);
}

absl::Status PluginV1::Call(uopc_buffer_alloc_args* a) const {
  return Device(&uopc_device_api::buffer_alloc, "buffer_alloc", a->device, a->size, a->align,
                &a->buffer);
}

absl::Status PluginV1::Call(uopc_buffer_free_args* a) const {
  return Device(&uopc_device_api::buffer_free, "buffer_free", a->buffer);
}

absl::Status PluginV1::Call(uopc_buffer_address_args* a) const {
  return Device(&uopc_device_api::buffer_address, "buffer_address", a);
}

absl::Status PluginV1::Call(uopc_buffer_wrap_args* a) const {
  return Device(&uopc_device_api::buffer_wrap, "buffer_wrap", a);
}

absl::Status PluginV1::Call(uopc_queue_create_args* a) const {
  return Device(&uopc_device_api::queue_create, "queue_create", a->device, &a->queue);
}

absl::Status PluginV1::Call(uopc_queue_destroy_args* a) const {
  return Device(&uopc_device_api::queue_destroy, "queue_destroy", a->queue);
}

absl::Status PluginV1::Call(uopc_copy_h2d_args* a) const {
  return Device(&uopc_device_api::copy_h2d, "copy_h2d", a->queue, a->dst, a->dst_offset, a->src,
                a->size, a->done);
}

absl::Status PluginV1::Call(uopc_copy_d2h_args* a) const {
  return Device(&uopc_device_api::copy_d2h, "copy_d2h", a->queue, a->dst, a->src, a->src_offset,
                a->size, a->done);
}

absl::Status PluginV1::Call(uopc_copy_args* a) const {
  if (Has(api_->device, &uopc_device_api::copy)) return Device(&uopc_device_api::copy, "copy", a);
  return Device(&uopc_device_api::copy_d2d, "copy_d2d", a->queue, a->dst, a->dst_offset, a->src,
                a->src_offset, a->size, a->done);  // ABI 1.0
}

absl::Status PluginV1::Call(uopc_program_load_args* a) const {
  return Device(&uopc_device_api::program_load, "program_load", a->device, a->binary, a->size,
                a->entries, a->num_entries, &a->program);
}

absl::Status PluginV1::Call(uopc_program_unload_args* a) const {
  return Device(&uopc_device_api::program_unload, "program_unload", a->program);
}

absl::Status PluginV1::Call(uopc_launch_args* a) const {
  return Device(&uopc_device_api::launch, "launch", a->queue, a, a->done);
}

absl::Status PluginV1::Call(uopc_queue_wait_event_args* a) const {
  return Device(&uopc_device_api::queue_wait_event, "queue_wait_event", a->queue, a->event);
}

absl::Status PluginV1::Call(uopc_event_wait_args* a) const {
  return Device(&uopc_device_api::event_wait, "event_wait", a->event, a->timeout_ns);
}

absl::Status PluginV1::Call(uopc_event_query_args* a) const {
  return Device(&uopc_device_api::event_query, "event_query", a->event, &a->done);
}

absl::Status PluginV1::Call(uopc_event_destroy_args* a) const {
  if (!Has(api_->device, &uopc_device_api::event_destroy)) return Missing("event_destroy");
  api_->device->event_destroy(a->event);
  return absl::OkStatus();
}

absl::Status PluginV1::Call(uopc_queue_synchronize_args* a) const {
  return Device(&uopc_device_api::queue_synchronize, "queue_synchronize", a->queue);
}

absl::Status PluginV1::Call(uopc_kernel_launch_args*) const { return Missing("kernel_launch"); }

}  // namespace uopc
