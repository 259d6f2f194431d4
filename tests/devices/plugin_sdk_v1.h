/* The SDK of ABI 1.x (devices/plugin_api_v1.h), header-only C11, frozen, for the 1.x plugin
 * the tests build: the error and blob implementation (backends/plugin_sdk.h's), and
 * uopc_sdk_fill_v1(), which sets every table slot a 1.x plugin leaves NULL to a stub
 * returning UOPC_UNIMPLEMENTED. A new plugin uses backends/plugin_sdk.h (ABI 2.0).
 */
#ifndef UOPC_TESTS_DEVICES_PLUGIN_SDK_V1_H_
#define UOPC_TESTS_DEVICES_PLUGIN_SDK_V1_H_

#include "backends/plugin_sdk.h"
#include "devices/plugin_api_v1.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- stubs ---- */

#define UOPC_SDK_UNIMPL(what) \
  uopc_sdk_error(UOPC_UNIMPLEMENTED, "%s is not implemented by this plugin", what)

static inline int32_t uopc_sdk_probe(void) { return 1; }
static inline uopc_error* uopc_sdk_initialize(void) { return NULL; }
static inline uopc_error* uopc_sdk_shutdown(void) { return NULL; }
static inline uopc_error* uopc_sdk_initialize_with(const uopc_initialize_args* a) {
  (void)a;
  return uopc_sdk_error(UOPC_UNIMPLEMENTED, "initialize_with is not implemented");
}
static inline uint32_t uopc_sdk_count_none(void) { return 0; }
static inline uopc_error* uopc_sdk_backend_get(uint32_t i, uopc_backend** o) {
  (void)i;
  (void)o;
  return UOPC_SDK_UNIMPL("backend_get");
}
static inline uopc_error* uopc_sdk_backend_describe(const uopc_backend* b, uopc_backend_desc* o) {
  (void)b;
  (void)o;
  return UOPC_SDK_UNIMPL("backend_describe");
}
static inline uopc_error* uopc_sdk_backend_supports(const uopc_backend* b, const uopc_op_query* q,
                                                    int32_t* s) {
  (void)b;
  (void)q;
  if (s) *s = 0;
  return NULL;
}
static inline uopc_error* uopc_sdk_render(const uopc_render_args* a, uopc_blob** o) {
  (void)a;
  (void)o;
  return UOPC_SDK_UNIMPL("render");
}
static inline uopc_error* uopc_sdk_compile(const uopc_compile_args* a, uopc_blob** o) {
  (void)a;
  (void)o;
  return UOPC_SDK_UNIMPL("compile");
}
static inline uopc_error* uopc_sdk_device_get(uint32_t i, uopc_device** o) {
  (void)i;
  (void)o;
  return UOPC_SDK_UNIMPL("device_get");
}
static inline uopc_error* uopc_sdk_device_describe(const uopc_device* d, uopc_device_props* o) {
  (void)d;
  (void)o;
  return UOPC_SDK_UNIMPL("device_describe");
}
static inline uopc_error* uopc_sdk_buffer_alloc(uopc_device* d, uint64_t s, uint64_t a,
                                                uopc_buffer** o) {
  (void)d;
  (void)s;
  (void)a;
  (void)o;
  return UOPC_SDK_UNIMPL("buffer_alloc");
}
static inline uopc_error* uopc_sdk_buffer_free(uopc_buffer* b) {
  (void)b;
  return UOPC_SDK_UNIMPL("buffer_free");
}
static inline uopc_error* uopc_sdk_queue_create(uopc_device* d, uopc_queue** o) {
  (void)d;
  (void)o;
  return UOPC_SDK_UNIMPL("queue_create");
}
static inline uopc_error* uopc_sdk_queue_destroy(uopc_queue* q) {
  (void)q;
  return UOPC_SDK_UNIMPL("queue_destroy");
}
static inline uopc_error* uopc_sdk_copy_h2d(uopc_queue* q, uopc_buffer* d, uint64_t o,
                                            const void* s, uint64_t n, uopc_event** e) {
  (void)q;
  (void)d;
  (void)o;
  (void)s;
  (void)n;
  (void)e;
  return UOPC_SDK_UNIMPL("copy_h2d");
}
static inline uopc_error* uopc_sdk_copy_d2h(uopc_queue* q, void* d, const uopc_buffer* s,
                                            uint64_t o, uint64_t n, uopc_event** e) {
  (void)q;
  (void)d;
  (void)s;
  (void)o;
  (void)n;
  (void)e;
  return UOPC_SDK_UNIMPL("copy_d2h");
}
static inline uopc_error* uopc_sdk_copy_d2d(uopc_queue* q, uopc_buffer* d, uint64_t dof,
                                            const uopc_buffer* s, uint64_t sof, uint64_t n,
                                            uopc_event** e) {
  (void)q;
  (void)d;
  (void)dof;
  (void)s;
  (void)sof;
  (void)n;
  (void)e;
  return UOPC_SDK_UNIMPL("copy_d2d");
}
static inline uopc_error* uopc_sdk_program_load(uopc_device* d, const void* b, uint64_t n,
                                                const char* const* en, uint32_t ne,
                                                uopc_program** o) {
  (void)d;
  (void)b;
  (void)n;
  (void)en;
  (void)ne;
  (void)o;
  return UOPC_SDK_UNIMPL("program_load");
}
static inline uopc_error* uopc_sdk_program_unload(uopc_program* p) {
  (void)p;
  return UOPC_SDK_UNIMPL("program_unload");
}
static inline uopc_error* uopc_sdk_launch(uopc_queue* q, const uopc_launch_args* a,
                                          uopc_event** e) {
  (void)q;
  (void)a;
  (void)e;
  return UOPC_SDK_UNIMPL("launch");
}
static inline uopc_error* uopc_sdk_queue_wait_event(uopc_queue* q, uopc_event* e) {
  (void)q;
  (void)e;
  return UOPC_SDK_UNIMPL("queue_wait_event");
}
static inline uopc_error* uopc_sdk_event_wait(uopc_event* e, uint64_t t) {
  (void)e;
  (void)t;
  return UOPC_SDK_UNIMPL("event_wait");
}
static inline uopc_error* uopc_sdk_event_query(uopc_event* e, int32_t* d) {
  (void)e;
  (void)d;
  return UOPC_SDK_UNIMPL("event_query");
}
static inline void uopc_sdk_event_destroy(uopc_event* e) { (void)e; }
static inline uopc_error* uopc_sdk_queue_synchronize(uopc_queue* q) {
  (void)q;
  return UOPC_SDK_UNIMPL("queue_synchronize");
}

static inline uopc_error* uopc_sdk_render_kernel(const uopc_render_args* a, uopc_render_result* o) {
  (void)a;
  (void)o;
  return UOPC_SDK_UNIMPL("render_kernel");
}
static inline uopc_error* uopc_sdk_backend_target(uopc_target_args* a) {
  (void)a;
  return UOPC_SDK_UNIMPL("backend_target");
}
static inline uopc_error* uopc_sdk_copy(const uopc_copy_args* a) {
  (void)a;
  return UOPC_SDK_UNIMPL("copy");
}
static inline uopc_error* uopc_sdk_memory_info(uopc_memory_args* a) {
  (void)a;
  return UOPC_SDK_UNIMPL("memory_info");
}

static inline uopc_error* uopc_sdk_buffer_address(uopc_buffer_address_args* a) {
  (void)a;
  return UOPC_SDK_UNIMPL("buffer_address");
}
static inline uopc_error* uopc_sdk_buffer_wrap(uopc_buffer_wrap_args* a) {
  (void)a;
  return UOPC_SDK_UNIMPL("buffer_wrap");
}

#define UOPC_SDK_DEFAULT(table, slot, stub) \
  if (!(table)->slot) (table)->slot = stub

/* Sets struct sizes, versions and every NULL slot of the three tables. */
static inline void uopc_sdk_fill_v1(uopc_plugin_api* api, uopc_backend_api* be,
                                    uopc_device_api* dev) {
  api->struct_size = sizeof *api;
  api->abi_major = UOPC_ABI_V1_MAJOR;
  api->abi_minor = UOPC_ABI_V1_MINOR;
  UOPC_SDK_DEFAULT(api, probe, uopc_sdk_probe);
  UOPC_SDK_DEFAULT(api, initialize, uopc_sdk_initialize);
  UOPC_SDK_DEFAULT(api, shutdown, uopc_sdk_shutdown);
  UOPC_SDK_DEFAULT(api, initialize_with, uopc_sdk_initialize_with);
  UOPC_SDK_DEFAULT(api, error_destroy, uopc_sdk_error_destroy);
  UOPC_SDK_DEFAULT(api, error_code, uopc_sdk_error_code);
  UOPC_SDK_DEFAULT(api, error_message, uopc_sdk_error_message);
  UOPC_SDK_DEFAULT(api, blob_destroy, uopc_sdk_blob_destroy);
  UOPC_SDK_DEFAULT(api, blob_data, uopc_sdk_blob_data);
  be->struct_size = sizeof *be;
  UOPC_SDK_DEFAULT(be, backend_count, uopc_sdk_count_none);
  UOPC_SDK_DEFAULT(be, backend_get, uopc_sdk_backend_get);
  UOPC_SDK_DEFAULT(be, backend_describe, uopc_sdk_backend_describe);
  UOPC_SDK_DEFAULT(be, backend_supports, uopc_sdk_backend_supports);
  UOPC_SDK_DEFAULT(be, render, uopc_sdk_render);
  UOPC_SDK_DEFAULT(be, compile, uopc_sdk_compile);
  UOPC_SDK_DEFAULT(be, render_kernel, uopc_sdk_render_kernel);
  UOPC_SDK_DEFAULT(be, backend_target, uopc_sdk_backend_target);
  dev->struct_size = sizeof *dev;
  UOPC_SDK_DEFAULT(dev, device_count, uopc_sdk_count_none);
  UOPC_SDK_DEFAULT(dev, device_get, uopc_sdk_device_get);
  UOPC_SDK_DEFAULT(dev, device_describe, uopc_sdk_device_describe);
  UOPC_SDK_DEFAULT(dev, buffer_alloc, uopc_sdk_buffer_alloc);
  UOPC_SDK_DEFAULT(dev, buffer_free, uopc_sdk_buffer_free);
  UOPC_SDK_DEFAULT(dev, queue_create, uopc_sdk_queue_create);
  UOPC_SDK_DEFAULT(dev, queue_destroy, uopc_sdk_queue_destroy);
  UOPC_SDK_DEFAULT(dev, copy_h2d, uopc_sdk_copy_h2d);
  UOPC_SDK_DEFAULT(dev, copy_d2h, uopc_sdk_copy_d2h);
  UOPC_SDK_DEFAULT(dev, copy_d2d, uopc_sdk_copy_d2d);
  UOPC_SDK_DEFAULT(dev, program_load, uopc_sdk_program_load);
  UOPC_SDK_DEFAULT(dev, program_unload, uopc_sdk_program_unload);
  UOPC_SDK_DEFAULT(dev, launch, uopc_sdk_launch);
  UOPC_SDK_DEFAULT(dev, queue_wait_event, uopc_sdk_queue_wait_event);
  UOPC_SDK_DEFAULT(dev, event_wait, uopc_sdk_event_wait);
  UOPC_SDK_DEFAULT(dev, event_query, uopc_sdk_event_query);
  UOPC_SDK_DEFAULT(dev, event_destroy, uopc_sdk_event_destroy);
  UOPC_SDK_DEFAULT(dev, queue_synchronize, uopc_sdk_queue_synchronize);
  UOPC_SDK_DEFAULT(dev, copy, uopc_sdk_copy);
  UOPC_SDK_DEFAULT(dev, memory_info, uopc_sdk_memory_info);
  UOPC_SDK_DEFAULT(dev, buffer_address, uopc_sdk_buffer_address);
  UOPC_SDK_DEFAULT(dev, buffer_wrap, uopc_sdk_buffer_wrap);
  api->backend = be;
  api->device = dev;
}

#ifdef __cplusplus
}
#endif

#endif /* UOPC_TESTS_DEVICES_PLUGIN_SDK_V1_H_ */
