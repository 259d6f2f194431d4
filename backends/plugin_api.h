/* uopc plugin ABI, major version 1: the only header a plugin author needs.
 *
 * A plugin is a shared library that exports exactly one symbol, uopc_plugin_entry_v1
 * (the major version is in the name, so a future v2 can live beside it and an old host
 * simply does not find it); everything else is hidden (link with a version script).
 * Plain C11: no C++ type crosses this boundary, nothing throws, nothing aborts.
 *
 * Two parts, as PJRT and tinygrad split them:
 *  - a backend turns a kernel (serialized core/uop.proto, with its own format version)
 *    into a binary with no device needed: describe, supports, render, compile. Results
 *    are pure functions of their inputs and may be cached under the backend's fingerprint;
 *  - a device runs binaries: enumerate (stable ids), allocate/free, copy in/out/between,
 *    load a program, launch with buffers, VAR values and launch dims, in-order queues
 *    whose work completes in events (fences), synchronize.
 *
 * Versioning. Every struct begins with its struct_size and an extension pointer. Tables
 * and structs are append-only: a minor version only adds members at the end; enums have
 * explicit values. The host accepts a plugin of the same major and any minor; a member a
 * plugin's struct_size does not cover is treated as absent (UOPC_HAS_MEMBER). Another
 * major is refused with a message naming both versions. Every call added by a minor takes
 * one argument struct (struct_size first, as PJRT's), so that it can grow without a new
 * slot.
 *
 * Minor versions: 1.0 the first; 1.1 adds copy (between any two buffers of the plugin,
 * of one device or two), memory_info (a device's own memory accounting) and render_kernel
 * (a kernel's source with the launch dimensions it was written for); 1.2 adds
 * initialize_with (initialize with named options: where a remote plugin's servers are);
 * 1.3 adds buffer_address and buffer_wrap (zero-copy exchange with other frameworks:
 * DLPack); 1.4 adds backend_target (what kernels are compiled for: the lowering passes
 * shape kernels by it; a plugin without it gets a conservative target of its device type);
 * 1.5: the host runs the target's launch passes, so a kernel may arrive with GLOBAL and
 * LOCAL ranges (a CPU kernel's outer loop given to the cores, passes/thread_outer_loop.h; a
 * GPU kernel's outputs mapped to blocks and threads, passes/launch_dims.h), whose launch
 * dims are their lengths (core/kernel_signature.h: LaunchDimsOf); a plugin older than 1.5
 * gets kernels of plain loops and maps them itself.
 *
 * Full tables. No slot is ever NULL: plugin_sdk.h fills what a plugin does not implement
 * with stubs that return UOPC_UNIMPLEMENTED; optional features are capability bits.
 *
 * Errors. Functions return a uopc_error* (NULL means success), owned by the caller, who
 * frees it with the plugin's error_destroy. Codes are numerically gRPC's (absl's), plus
 * UOPC_DEVICE_LOST. Running out of memory is UOPC_RESOURCE_EXHAUSTED, never a crash.
 *
 * Threads. Every function is thread-safe, except that calls on one queue must be
 * serialized by the caller. A plugin is never unloaded while any of its objects lives.
 *
 * Kernel parameters (the launch convention, also in core/kernel_signature.h): buffers
 * by BUFFER slot, then the kernel's VARs sorted by name, each as int64.
 */
#ifndef UOPC_BACKENDS_PLUGIN_API_H_
#define UOPC_BACKENDS_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UOPC_ABI_MAJOR 1
#define UOPC_ABI_MINOR 5
#define UOPC_ENTRY_SYMBOL "uopc_plugin_entry_v1"
#define UOPC_EXPORT __attribute__((visibility("default")))

/* ---- struct header and extensions ---- */

/* A typed extension, chained from any struct's `ext`. Unknown types are skipped. */
typedef struct uopc_ext {
  uint64_t struct_size;
  uint32_t type;
  uint32_t reserved;
  const struct uopc_ext* next;
} uopc_ext;

/* The first members of every struct of this ABI. */
#define UOPC_STRUCT_HEADER \
  uint64_t struct_size;    \
  const uopc_ext* ext

/* Whether `ptr` (a struct of `type`) is large enough to hold `member`. */
#define UOPC_HAS_MEMBER(ptr, type, member) \
  ((ptr)->struct_size >= offsetof(type, member) + sizeof(((type*)0)->member))

/* ---- errors ---- */

typedef enum uopc_code {
  UOPC_OK = 0,
  UOPC_CANCELLED = 1,
  UOPC_UNKNOWN = 2,
  UOPC_INVALID_ARGUMENT = 3,
  UOPC_DEADLINE_EXCEEDED = 4,
  UOPC_NOT_FOUND = 5,
  UOPC_ALREADY_EXISTS = 6,
  UOPC_PERMISSION_DENIED = 7,
  UOPC_RESOURCE_EXHAUSTED = 8,
  UOPC_FAILED_PRECONDITION = 9,
  UOPC_ABORTED = 10,
  UOPC_OUT_OF_RANGE = 11,
  UOPC_UNIMPLEMENTED = 12,
  UOPC_INTERNAL = 13,
  UOPC_UNAVAILABLE = 14,
  UOPC_DATA_LOSS = 15,
  UOPC_UNAUTHENTICATED = 16,
  UOPC_DEVICE_LOST = 100,
  UOPC_CODE_FORCE_I32 = 0x7fffffff
} uopc_code;

typedef struct uopc_error uopc_error;     /* opaque; freed with error_destroy */
typedef struct uopc_blob uopc_blob;       /* opaque bytes (source, binary); blob_destroy */
typedef struct uopc_backend uopc_backend; /* owned by the plugin */
typedef struct uopc_device uopc_device;   /* owned by the plugin */
typedef struct uopc_buffer uopc_buffer;
typedef struct uopc_program uopc_program;
typedef struct uopc_queue uopc_queue;
typedef struct uopc_event uopc_event;

/* ---- element types (values equal core/dtype.h's) ---- */

typedef enum uopc_dtype {
  UOPC_DTYPE_VOID = 0,
  UOPC_DTYPE_BOOL = 1,
  UOPC_DTYPE_I8 = 2,
  UOPC_DTYPE_U8 = 3,
  UOPC_DTYPE_I16 = 4,
  UOPC_DTYPE_U16 = 5,
  UOPC_DTYPE_I32 = 6,
  UOPC_DTYPE_U32 = 7,
  UOPC_DTYPE_I64 = 8,
  UOPC_DTYPE_U64 = 9,
  UOPC_DTYPE_F16 = 10,
  UOPC_DTYPE_BF16 = 11,
  UOPC_DTYPE_F32 = 12,
  UOPC_DTYPE_F64 = 13,
  UOPC_DTYPE_FORCE_I32 = 0x7fffffff
} uopc_dtype;

/* ---- the host's services, given to the plugin at entry ---- */

typedef enum uopc_log_level {
  UOPC_LOG_DEBUG = 0,
  UOPC_LOG_INFO = 1,
  UOPC_LOG_WARNING = 2,
  UOPC_LOG_ERROR = 3,
  UOPC_LOG_FORCE_I32 = 0x7fffffff
} uopc_log_level;

typedef struct uopc_host_api {
  UOPC_STRUCT_HEADER;
  uint16_t abi_major;
  uint16_t abi_minor;
  uint32_t reserved;
  /* Logs a message (not NUL-terminated necessarily) through the host. */
  void (*log)(void* ctx, uopc_log_level level, const char* msg, uint64_t len);
  void* log_ctx;
} uopc_host_api;

/* ---- backend: kernels to binaries, no device needed ---- */

/* What a device is (its props' type), and what a target is compiled for. */
typedef enum uopc_device_type {
  UOPC_DEVICE_CPU = 1,
  UOPC_DEVICE_GPU = 2,
  UOPC_DEVICE_ACCEL = 3,
  UOPC_DEVICE_REMOTE = 4,
  UOPC_DEVICE_TYPE_FORCE_I32 = 0x7fffffff
} uopc_device_type;


typedef enum uopc_source_lang {
  UOPC_LANG_NONE = 0,
  UOPC_LANG_C = 1,
  UOPC_LANG_CUDA = 2,
  UOPC_LANG_PTX = 3,
  UOPC_LANG_FORCE_I32 = 0x7fffffff
} uopc_source_lang;

typedef struct uopc_backend_desc {
  UOPC_STRUCT_HEADER;
  const char* name;        /* "c-gcc" */
  const char* target;      /* DEVICE:RENDERER:ARCH, "CPU:C:x86_64" */
  const char* fingerprint; /* compiler and flags: part of every cache key */
  uopc_source_lang lang;
  uint32_t reserved;
  uint64_t dtypes;        /* bit (1 << uopc_dtype) for each dtype it supports */
  uint32_t global_max[3]; /* launch limits; 0 where the dimension does not exist */
  uint32_t local_max[3];
  uint64_t shared_max; /* bytes of shared memory per block */
} uopc_backend_desc;

/* "Does the backend support `op` (a core/ops.h name, "add") on `dtype`?" */
typedef struct uopc_op_query {
  UOPC_STRUCT_HEADER;
  const char* op;
  uopc_dtype dtype;
  uint32_t reserved;
} uopc_op_query;

typedef struct uopc_render_args {
  UOPC_STRUCT_HEADER;
  const uopc_backend* backend;
  const void* kernel; /* a kernel's SINK, serialized (core/uop.proto) */
  uint64_t kernel_size;
  const char* name; /* the function to define */
} uopc_render_args;

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

typedef struct uopc_source {
  UOPC_STRUCT_HEADER;
  const char* text;
  uint64_t size;
} uopc_source;

typedef struct uopc_compile_args {
  UOPC_STRUCT_HEADER;
  const uopc_backend* backend;
  const uopc_source* sources; /* several kernels become one binary */
  uint64_t num_sources;
} uopc_compile_args;

/* ABI 1.4: the target a backend compiles kernels for, which the host's lowering passes
   shape kernels by (register tiles from the vector width and registers, layout copies from
   the caches, threads and blocks from a GPU's limits). In: backend; device, the device whose
   kernels these are (NULL: the backend's own target, or that of `arch`); arch, a target
   named without its device ("sm_90"; NULL: the device's, or the machine's). Out: the rest;
   strings stay valid while the plugin is loaded. Read from the hardware (CPUID and sysfs,
   the driver's attributes), never constants, except for a named arch. */
typedef struct uopc_target_args {
  UOPC_STRUCT_HEADER;
  const uopc_backend* backend;
  const uopc_device* device;
  const char* arch;
  uopc_device_type device_class; /* out: UOPC_DEVICE_CPU or UOPC_DEVICE_GPU */
  uint32_t vector_bits;          /* out: a vector register's width (CPU) */
  const char* arch_name;         /* out: "x86_64", "sm_90" */
  const char* features; /* out: comma-separated ISA features: "avx2,avx512f,avx512_bf16,amx_tile" */
  uint32_t registers;   /* out: vector registers (CPU); 32-bit registers a thread may use (GPU) */
  uint32_t cores;       /* out: cores (CPU), multiprocessors (GPU) */
  uint64_t l1d_bytes;   /* out: L1 data cache per core, and its ways */
  uint32_t l1d_ways;
  uint32_t warp_size;   /* out: GPU */
  uint64_t l2_bytes;    /* out: per core (CPU), the chip's (GPU) */
  uint64_t l3_bytes;
  uint32_t threads_per_block; /* out: GPU */
  uint32_t reserved;
  uint64_t shared_per_block;  /* out: bytes of shared memory a block may use (GPU) */
  const char* matrix_units; /* out: comma-separated MxNxK:INPUT->ACC, "16x8x16:f16->f32" */
} uopc_target_args;

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

/* ---- device: memory, programs, queues ---- */

/* Device capability bits */
#define UOPC_DEVICE_CAP_ASYNC (1ull << 0)    /* queue work may complete after the call */
#define UOPC_DEVICE_CAP_COPY_D2D (1ull << 1) /* copy_d2d between buffers of one plugin */
#define UOPC_DEVICE_CAP_COPY_PEER (1ull << 2) /* copy (1.1) between two devices of the plugin */

typedef struct uopc_device_props {
  UOPC_STRUCT_HEADER;
  const char* name;    /* "CPU:0": unique within the plugin */
  const char* kind;    /* a human description ("x86_64, 2 cores") */
  const char* uid;     /* stable across runs and plugins ("cpu://hostname/0") */
  const char* backend; /* name of the backend whose binaries it loads */
  uopc_device_type type;
  uint32_t reserved;
  uint64_t mem_total; /* bytes */
  uint64_t caps;      /* UOPC_DEVICE_CAP_* */
} uopc_device_props;

typedef struct uopc_launch_args {
  UOPC_STRUCT_HEADER;
  uopc_program* program;
  uint32_t entry; /* index into program_load's entries */
  uint32_t num_buffers;
  uopc_buffer* const* buffers; /* by slot; NULL for slots the kernel does not use */
  const uint64_t* offsets;     /* byte offset into each buffer, or NULL for all 0 */
  const int64_t* vars;         /* VAR values, sorted by VAR name */
  uint32_t num_vars;
  uint32_t reserved;
  uint32_t grid[3]; /* launch dims; {1,1,1} for a CPU */
  uint32_t block[3];
} uopc_launch_args;

/* ABI 1.1: a copy of `size` bytes between two buffers of this plugin, of one device or of
   two (a peer copy, where the device has UOPC_DEVICE_CAP_COPY_PEER). It runs on `queue`
   (of either device) after the work queued there before it; work on another queue that it
   must follow is ordered first with queue_wait_event. `done`, when not NULL, receives an
   event that completes with the copy. */
typedef struct uopc_copy_args {
  UOPC_STRUCT_HEADER;
  uopc_queue* queue;
  uopc_buffer* dst;
  uint64_t dst_offset;
  const uopc_buffer* src;
  uint64_t src_offset;
  uint64_t size;
  uopc_event** done;
} uopc_copy_args;

/* ABI 1.1: a device's memory as its plugin accounts for it. In: device. Out: the rest. */
typedef struct uopc_memory_args {
  UOPC_STRUCT_HEADER;
  const uopc_device* device;
  uint64_t bytes_in_use; /* allocated and not yet freed */
  uint64_t bytes_limit;  /* an allocation past it is RESOURCE_EXHAUSTED */
} uopc_memory_args;

/* ABI 1.3: where a buffer's memory is, as its device addresses it (a host pointer for a
   CPU, a device pointer for a GPU), so that another framework may use it in place.
   UNIMPLEMENTED where the memory has no such address (a remote device). In: buffer. Out:
   address (of byte 0). */
typedef struct uopc_buffer_address_args {
  UOPC_STRUCT_HEADER;
  const uopc_buffer* buffer;
  void* address;
} uopc_buffer_address_args;

/* ABI 1.3: a buffer over `size` bytes of memory the caller owns, at `address` as
   buffer_address would give it (aligned to at least the element size; maybe less than
   buffer_alloc's alignment). The plugin never frees that memory: once the buffer is freed
   and the work queued on it is done, it calls release(release_ctx), exactly once (never
   when buffer_wrap fails: the caller then still owns the memory). Out: buffer. */
typedef struct uopc_buffer_wrap_args {
  UOPC_STRUCT_HEADER;
  uopc_device* device;
  void* address;
  uint64_t size;
  void (*release)(void* release_ctx);
  void* release_ctx;
  uopc_buffer* buffer;
} uopc_buffer_wrap_args;

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

/* ---- the plugin ---- */

/* ABI 1.2: a named option of initialize_with (PJRT's NamedValue, as strings). The host
   passes every environment variable UOPC_<PLUGIN>_<KEY> (the plugin's name upper-cased) as
   the option "<key>" (lower-cased): UOPC_REMOTE_DEVICES=h:p,h:p is "devices" for the
   plugin "remote". */
typedef struct uopc_option {
  UOPC_STRUCT_HEADER;
  const char* name;
  const char* value;
} uopc_option;

typedef struct uopc_initialize_args {
  UOPC_STRUCT_HEADER;
  const uopc_option* options;
  uint64_t num_options;
} uopc_initialize_args;

#define UOPC_PLUGIN_CAP_BACKEND (1ull << 0) /* backend table is implemented */
#define UOPC_PLUGIN_CAP_DEVICE (1ull << 1)  /* device table is implemented */

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

#endif /* UOPC_BACKENDS_PLUGIN_API_H_ */
