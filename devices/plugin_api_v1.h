/* uopc plugin ABI, major version 1 (frozen at 1.5): the tables a plugin built for ABI 1.x
 * exports, kept on the host's side so that such a plugin still loads (devices/plugin_v1.h
 * calls it through them), and so that the tests can build one. A new plugin is written
 * against backends/plugin_api.h (ABI 2.0).
 *
 * What differs from 2.0: the 1.0 calls take positional arguments, and outputs beside their
 * args struct; the calls are in three tables (plugin, backend, device) reached from the one
 * exported symbol, uopc_plugin_entry_v1; render and render_kernel, copy_d2d and copy,
 * initialize and initialize_with do the same thing twice. Every struct the tables pass is
 * plugin_api.h's (2.0 only appends to them), except uopc_op_query and uopc_render_result.
 *
 * Minor versions: 1.0 the first; 1.1 adds copy, memory_info and render_kernel; 1.2
 * initialize_with; 1.3 buffer_address and buffer_wrap; 1.4 backend_target; 1.5: kernels
 * may arrive with GLOBAL and LOCAL ranges (the host runs the target's launch passes); a
 * plugin older than 1.5 gets kernels of plain loops and maps them itself.
 *
 * No slot is ever NULL in a plugin built with 1.x's SDK (tests/devices/plugin_sdk_v1.h, which
 * fills stubs that return UOPC_UNIMPLEMENTED); the plugin table's error and blob slots are
 * required.
 */
#ifndef UOPC_DEVICES_PLUGIN_API_V1_H_
#define UOPC_DEVICES_PLUGIN_API_V1_H_

#include "backends/plugin_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UOPC_ABI_V1_MAJOR 1
#define UOPC_ABI_V1_MINOR 5
#define UOPC_ENTRY_SYMBOL_V1 "uopc_plugin_entry_v1"

/* "Does the backend support `op` (a core/ops.h name, "add") on `dtype`?" */
typedef struct uopc_op_query {
  UOPC_STRUCT_HEADER;
  const char* op;
  uopc_dtype dtype;
  uint32_t reserved;
} uopc_op_query;

/* ABI 1.1: what render_kernel gives back. The kernel is launched with these dims: a
   backend that maps a kernel's loops to threads says how many; {1,1,1} and {1,1,1} when
   the kernel loops over everything itself. */
typedef struct uopc_render_result {
  UOPC_STRUCT_HEADER;
  uopc_blob* source; /* out: owned by the caller (blob_destroy) */
  uint32_t global[3];
  uint32_t local[3];
  uint64_t shared_bytes; /* out: dynamic shared memory per block */
} uopc_render_result;

typedef struct uopc_backend_api {
  UOPC_STRUCT_HEADER;
  uint32_t (*backend_count)(void);
  uopc_error* (*backend_get)(uint32_t index, uopc_backend** out);
  uopc_error* (*backend_describe)(const uopc_backend* backend, uopc_backend_desc* out);
  uopc_error* (*backend_supports)(const uopc_backend* backend, const uopc_op_query* query,
                                  int32_t* supported);
  /* The source of one kernel (render args name its function). */
  uopc_error* (*render)(const uopc_render_args* args, uopc_blob** source);
  /* One binary from the sources of several kernels; its entries are their names. */
  uopc_error* (*compile)(const uopc_compile_args* args, uopc_blob** binary);

  /* ---- ABI 1.1 ---- */
  /* render, with the launch dimensions the source was written for. */
  uopc_error* (*render_kernel)(const uopc_render_args* args, uopc_render_result* out);

  /* ---- ABI 1.4 ---- */
  uopc_error* (*backend_target)(uopc_target_args* args);
} uopc_backend_api;

typedef struct uopc_device_api {
  UOPC_STRUCT_HEADER;
  uint32_t (*device_count)(void);
  uopc_error* (*device_get)(uint32_t index, uopc_device** out);
  uopc_error* (*device_describe)(const uopc_device* device, uopc_device_props* out);

  /* Memory. size 0 is valid (a buffer of no bytes); too large is RESOURCE_EXHAUSTED. */
  uopc_error* (*buffer_alloc)(uopc_device* device, uint64_t size, uint64_t align,
                              uopc_buffer** out);
  /* Frees once work already queued on it is done. */
  uopc_error* (*buffer_free)(uopc_buffer* buffer);

  /* In-order queues. `done`, when not NULL, receives an event that completes with the work;
     host memory given to a copy must stay valid until then. */
  uopc_error* (*queue_create)(uopc_device* device, uopc_queue** out);
  uopc_error* (*queue_destroy)(uopc_queue* queue);
  uopc_error* (*copy_h2d)(uopc_queue* queue, uopc_buffer* dst, uint64_t dst_offset, const void* src,
                          uint64_t size, uopc_event** done);
  uopc_error* (*copy_d2h)(uopc_queue* queue, void* dst, const uopc_buffer* src, uint64_t src_offset,
                          uint64_t size, uopc_event** done);
  uopc_error* (*copy_d2d)(uopc_queue* queue, uopc_buffer* dst, uint64_t dst_offset,
                          const uopc_buffer* src, uint64_t src_offset, uint64_t size,
                          uopc_event** done);

  /* Programs: a binary from backend compile, with the names of its entries. */
  uopc_error* (*program_load)(uopc_device* device, const void* binary, uint64_t size,
                              const char* const* entries, uint32_t num_entries, uopc_program** out);
  uopc_error* (*program_unload)(uopc_program* program);
  uopc_error* (*launch)(uopc_queue* queue, const uopc_launch_args* args, uopc_event** done);

  /* Events (completion fences). */
  uopc_error* (*queue_wait_event)(uopc_queue* queue, uopc_event* event); /* later work waits */
  uopc_error* (*event_wait)(uopc_event* event, uint64_t timeout_ns); /* the work's error, if any */
  uopc_error* (*event_query)(uopc_event* event, int32_t* done);
  void (*event_destroy)(uopc_event* event);
  uopc_error* (*queue_synchronize)(uopc_queue* queue);

  /* ---- ABI 1.1 ---- */
  uopc_error* (*copy)(const uopc_copy_args* args);
  uopc_error* (*memory_info)(uopc_memory_args* args);

  /* ---- ABI 1.3 ---- */
  uopc_error* (*buffer_address)(uopc_buffer_address_args* args);
  uopc_error* (*buffer_wrap)(uopc_buffer_wrap_args* args);
} uopc_device_api;

typedef struct uopc_plugin_api {
  UOPC_STRUCT_HEADER;
  uint16_t abi_major;
  uint16_t abi_minor;
  uint32_t uop_format_version; /* the core/uop.proto format version it reads */
  const char* name;            /* "c" */
  const char* version;         /* the plugin's own version, for humans */
  uint64_t caps;               /* UOPC_PLUGIN_CAP_* */

  /* 0: unusable on this machine; > 0: how well it fits. Cheap, no side effects. */
  int32_t (*probe)(void);
  uopc_error* (*initialize)(void);
  uopc_error* (*shutdown)(void);

  void (*error_destroy)(uopc_error* error);
  uopc_code (*error_code)(const uopc_error* error);
  void (*error_message)(const uopc_error* error, const char** msg, uint64_t* len);
  void (*blob_destroy)(uopc_blob* blob);
  void (*blob_data)(const uopc_blob* blob, const void** data, uint64_t* size);

  const uopc_backend_api* backend;
  const uopc_device_api* device;

  /* ---- ABI 1.2 ---- */
  /* initialize, with options; the host calls it instead of initialize where the plugin's
     table has it (UNIMPLEMENTED: the host calls initialize). */
  uopc_error* (*initialize_with)(const uopc_initialize_args* args);
} uopc_plugin_api;

/* The one exported symbol. Cheap: no driver is initialized here. NULL if the plugin cannot
   work with this host at all (e.g. a host older than it needs). */
typedef const uopc_plugin_api* (*uopc_plugin_entry_fn)(const uopc_host_api* host);
UOPC_EXPORT const uopc_plugin_api* uopc_plugin_entry_v1(const uopc_host_api* host);

#ifdef __cplusplus
}
#endif

#endif /* UOPC_DEVICES_PLUGIN_API_V1_H_ */
