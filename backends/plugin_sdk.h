/* Helpers for plugin authors, header-only C11 (usable from C++): a standard error and
 * blob implementation, and uopc_sdk_fill(), which sets every table slot a plugin leaves
 * NULL to a stub returning UOPC_UNIMPLEMENTED, so that the host never meets a NULL slot.
 *
 *   static uopc_device_api dev = {.struct_size = sizeof dev, .device_count = MyCount, ...};
 *   static uopc_backend_api be = {.struct_size = sizeof be};
 *   static uopc_plugin_api api = {.struct_size = sizeof api, .name = "mine", ...,
 *                                 .backend = &be, .device = &dev};
 *   UOPC_EXPORT const uopc_plugin_api* uopc_plugin_entry_v1(const uopc_host_api* host) {
 *     uopc_sdk_fill(&api, &be, &dev);
 *     return &api;
 *   }
 */
#ifndef UOPC_BACKENDS_PLUGIN_SDK_H_
#define UOPC_BACKENDS_PLUGIN_SDK_H_

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plugin_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ---- */

struct uopc_error {
  uopc_code code;
  char* msg;
  uint64_t len;
};

/* Returned when even an error cannot be allocated; error_destroy leaves it alone. */
static uopc_error uopc_sdk_oom_error = {UOPC_RESOURCE_EXHAUSTED,
                                        (char*)"out of memory creating an error", 31};

/* An error with a printf-style message; never NULL. */
static inline uopc_error* uopc_sdk_error(uopc_code code, const char* fmt, ...) {
  uopc_error* oom_ = &uopc_sdk_oom_error;
  uopc_error* e = (uopc_error*)malloc(sizeof *e);
  if (!e) return oom_;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  e->code = code;
  e->msg = (char*)malloc(n > 0 ? (size_t)n + 1 : 1);
  if (!e->msg) {
    free(e);
    return oom_;
  }
  va_start(ap, fmt);
  vsnprintf(e->msg, (size_t)n + 1, fmt, ap);
  va_end(ap);
  e->len = n > 0 ? (uint64_t)n : 0;
  return e;
}

static inline void uopc_sdk_error_destroy(uopc_error* e) {
  if (!e || e == &uopc_sdk_oom_error) return;
  free(e->msg);
  free(e);
}
static inline uopc_code uopc_sdk_error_code(const uopc_error* e) { return e ? e->code : UOPC_OK; }
static inline void uopc_sdk_error_message(const uopc_error* e, const char** msg, uint64_t* len) {
  *msg = e ? e->msg : "";
  *len = e ? e->len : 0;
}

/* ---- output structs ---- */

/* Zeroes the part of a caller's output struct that both sides know, keeping the caller's
   struct_size (which may be older and smaller than the plugin's): what a describe call does
   first. Every ABI struct begins with its uint64_t struct_size. */
static inline void uopc_sdk_clear(void* out, uint64_t own_size) {
  uint64_t size;
  memcpy(&size, out, sizeof size);
  memset(out, 0, size < own_size ? size : own_size);
  memcpy(out, &size, sizeof size);
}
#define UOPC_SDK_CLEAR(out) uopc_sdk_clear((out), sizeof *(out))

/* ---- blobs ---- */

struct uopc_blob {
  void* data;
  uint64_t size;
};

/* A blob holding a copy of `size` bytes at `data`; NULL when out of memory. */
static inline uopc_blob* uopc_sdk_blob(const void* data, uint64_t size) {
  uopc_blob* b = (uopc_blob*)malloc(sizeof *b);
  if (!b) return NULL;
  b->data = malloc(size ? size : 1);
  if (!b->data) {
    free(b);
    return NULL;
  }
  if (size) memcpy(b->data, data, size);
  b->size = size;
  return b;
}
static inline void uopc_sdk_blob_destroy(uopc_blob* b) {
  if (!b) return;
  free(b->data);
  free(b);
}
static inline void uopc_sdk_blob_data(const uopc_blob* b, const void** data, uint64_t* size) {
  *data = b ? b->data : NULL;
  *size = b ? b->size : 0;
}

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

static inline uopc_error* uopc_sdk_render_kernel(const uopc_render_args* a,
                                                 uopc_render_result* o) {
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
static inline void uopc_sdk_fill(uopc_plugin_api* api, uopc_backend_api* be, uopc_device_api* dev) {
  api->struct_size = sizeof *api;
  api->abi_major = UOPC_ABI_MAJOR;
  api->abi_minor = UOPC_ABI_MINOR;
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

#endif /* UOPC_BACKENDS_PLUGIN_SDK_H_ */
