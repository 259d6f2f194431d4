/* Helpers for plugin authors, header-only C11 (usable from C++): a standard error and blob
 * implementation, a stub for every call (made from plugin_api.h's list, UOPC_API_CALLS)
 * that returns UOPC_UNIMPLEMENTED, and uopc_sdk_fill(), which sets the table's sizes and
 * versions and gives every call a plugin leaves NULL its stub (the error and blob calls
 * this file's implementation), so that the host never meets a NULL slot.
 *
 *   static uopc_error* MyDeviceCount(uopc_device_count_args* a) { a->count = 1; return NULL; }
 *   ...
 *   static uopc_api api = {.name = "mine", .version = "0.1", .caps = UOPC_PLUGIN_CAP_DEVICE,
 *                          .device_count = MyDeviceCount, ...};
 *   UOPC_EXPORT const uopc_api* uopc_plugin_entry_v2(const uopc_host_api* host) {
 *     if (!host || host->abi_major != UOPC_ABI_MAJOR) return NULL;
 *     uopc_sdk_fill(&api);
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
  int is_static; /* not allocated: error_destroy leaves it alone */
};

/* Returned when even an error cannot be allocated. (Each file of a plugin has its own copy,
   so error_destroy knows it by its mark, not its address.) */
static uopc_error uopc_sdk_oom_error = {UOPC_RESOURCE_EXHAUSTED,
                                        (char*)"out of memory creating an error", 31, 1};

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
  e->is_static = 0;
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
  if (!e || e->is_static) return;
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

/* ---- the error and blob calls ---- */

static inline void uopc_sdk_describe_error(uopc_error_describe_args* a) {
  a->code = a->error ? a->error->code : UOPC_OK;
  a->message = a->error ? a->error->msg : "";
  a->message_size = a->error ? a->error->len : 0;
}
static inline void uopc_sdk_destroy_error(uopc_error_destroy_args* a) {
  uopc_sdk_error_destroy(a->error);
}
static inline void uopc_sdk_describe_blob(uopc_blob_describe_args* a) {
  a->data = a->blob ? a->blob->data : NULL;
  a->size = a->blob ? a->blob->size : 0;
}
static inline void uopc_sdk_destroy_blob(uopc_blob_destroy_args* a) {
  uopc_sdk_blob_destroy(a->blob);
}

/* ---- stubs: uopc_sdk_stub_<call> for every call ---- */

#define UOPC_SDK_STUB_E(call)                                                                 \
  static inline uopc_error* uopc_sdk_stub_##call(uopc_##call##_args* a) {                     \
    (void)a;                                                                                  \
    return uopc_sdk_error(UOPC_UNIMPLEMENTED, "%s is not implemented by this plugin", #call); \
  }
#define UOPC_SDK_STUB_V(call) \
  static inline void uopc_sdk_stub_##call(uopc_##call##_args* a) { (void)a; }
#define UOPC_SDK_STUB_(call, returns, required) UOPC_SDK_STUB_##returns(call)
UOPC_API_CALLS(UOPC_SDK_STUB_)
#undef UOPC_SDK_STUB_

/* Sets the table's size and versions, the error and blob calls this file implements where
   the plugin has none, and every other NULL call to its stub. */
static inline void uopc_sdk_fill(uopc_api* api) {
  api->struct_size = sizeof *api;
  api->abi_major = UOPC_ABI_MAJOR;
  api->abi_minor = UOPC_ABI_MINOR;
  if (!api->error_describe) api->error_describe = uopc_sdk_describe_error;
  if (!api->error_destroy) api->error_destroy = uopc_sdk_destroy_error;
  if (!api->blob_describe) api->blob_describe = uopc_sdk_describe_blob;
  if (!api->blob_destroy) api->blob_destroy = uopc_sdk_destroy_blob;
#define UOPC_SDK_FILL_(call, returns, required) \
  if (!api->call) api->call = uopc_sdk_stub_##call;
  UOPC_API_CALLS(UOPC_SDK_FILL_)
#undef UOPC_SDK_FILL_
}

#ifdef __cplusplus
}
#endif

#endif /* UOPC_BACKENDS_PLUGIN_SDK_H_ */
