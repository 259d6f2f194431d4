/* uopc plugin ABI, major version 2: the only header a plugin author needs.
 *
 * A plugin is a shared library that exports exactly one symbol, uopc_plugin_entry_v2 (the
 * major version is in the name, so that majors live side by side: a host finds the newest
 * entry it speaks); everything else is hidden (link with a version script). Plain C11: no
 * C++ type crosses this boundary, nothing throws, nothing aborts.
 *
 * Two parts, as PJRT and tinygrad split them:
 *  - a backend turns a kernel (serialized core/uop.proto, with its own format version)
 *    into a binary with no device needed: describe, supports, target, render, compile.
 *    Results are pure functions of their inputs and may be cached under its fingerprint;
 *  - a device runs binaries: enumerate (stable ids), allocate/free, copy in/out/between,
 *    load a program, launch with buffers, VAR values and launch dims, in-order queues
 *    whose work completes in events (fences), synchronize.
 *
 * One calling style. Every call takes one argument struct, uopc_<call>_args, and returns
 * a uopc_error* (NULL: success); the five that release or describe an error, a blob or
 * an event return nothing. An args struct begins with its struct_size (the caller sets
 * it to sizeof the struct it was built with) and an extension pointer; members marked
 * "out" are written by the plugin, the rest are read. The calls are listed once, in
 * UOPC_API_CALLS below: the table, plugin_sdk.h's stubs and the host's checks are all
 * made from that list.
 *
 * Versioning. Structs and the table are append-only: a minor version only adds members
 * at the end (a call at the end of the list); enums have explicit values. The host accepts
 * a plugin of its major and any minor; a member that a struct_size does not cover is
 * absent (UOPC_HAS_MEMBER), and so is a call the table's struct_size does not cover. The
 * structs that ABI 1.x passed are kept, member for member, and 2.0 appends to three of
 * them (render, compile and launch gain the outputs and the queue that 1.x passed beside
 * them), so one struct serves a plugin of either major. A plugin of major 1 still loads:
 * the host calls it through plugin_api_v1.h's tables.
 *
 * Calls. Required are the error and blob calls, and the calls of each part the plugin says
 * it has (UOPC_PLUGIN_CAP_BACKEND, UOPC_PLUGIN_CAP_DEVICE); the host refuses a plugin
 * that leaves one of them NULL, naming it. The others are optional: a NULL slot, or one
 * that returns UOPC_UNIMPLEMENTED (plugin_sdk.h's stub), is absent, and the host does
 * without (a backend without backend_target gets a conservative target of its device
 * type; without backend_supports, every op of the dtypes it describes is supported;
 * without probe, the plugin is usable).
 *
 * Errors. A uopc_error* is owned by the caller, who frees it with error_destroy. Codes
 * are numerically gRPC's (absl's), plus UOPC_DEVICE_LOST. Running out of memory is
 * UOPC_RESOURCE_EXHAUSTED, never a crash.
 *
 * Threads. Every call is thread-safe, except that calls on one queue must be serialized
 * by the caller. A plugin is never unloaded while any of its objects lives.
 *
 * Kernel parameters (the launch convention, also in core/kernel_signature.h): buffers by
 * BUFFER slot, then the kernel's VARs sorted by name, each as int64. The host runs the
 * target's launch passes, so a kernel may arrive with GLOBAL and LOCAL ranges (a CPU
 * kernel's outer loop given to the cores, a GPU kernel's outputs mapped to blocks and
 * threads), whose launch dims are their lengths (core/kernel_signature.h: LaunchDimsOf).
 */
#ifndef UOPC_BACKENDS_PLUGIN_API_H_
#define UOPC_BACKENDS_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UOPC_ABI_MAJOR 2
#define UOPC_ABI_MINOR 1
#define UOPC_ENTRY_SYMBOL "uopc_plugin_entry_v2"
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

/* ---- what the calls describe ---- */

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

/* Device capability bits */
#define UOPC_DEVICE_CAP_ASYNC (1ull << 0)     /* queue work may complete after the call */
#define UOPC_DEVICE_CAP_COPY_D2D (1ull << 1)  /* copy between buffers of one device */
#define UOPC_DEVICE_CAP_COPY_PEER (1ull << 2) /* copy between two devices of the plugin */

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

typedef struct uopc_source {
  UOPC_STRUCT_HEADER;
  const char* text;
  uint64_t size;
} uopc_source;

/* A named option of initialize (PJRT's NamedValue, as strings). The host passes every
   environment variable UOPC_<PLUGIN>_<KEY> (the plugin's name upper-cased) as the option
   "<key>" (lower-cased): UOPC_REMOTE_DEVICES=h:p,h:p is "devices" for the plugin "remote". */
typedef struct uopc_option {
  UOPC_STRUCT_HEADER;
  const char* name;
  const char* value;
} uopc_option;

/* ---- the calls' arguments, in the order of UOPC_API_CALLS ---- */

/* Whether the plugin can work on this machine. Cheap, no side effects. Out: score, how
   well it fits (> 0). An error (UNAVAILABLE: "no driver") says why it cannot; a score of 0
   without one is a no, whose reason the host asks initialize for (then shuts it down). */
typedef struct uopc_probe_args {
  UOPC_STRUCT_HEADER;
  int32_t score; /* out */
  uint32_t reserved;
} uopc_probe_args;

typedef struct uopc_initialize_args {
  UOPC_STRUCT_HEADER;
  const uopc_option* options;
  uint64_t num_options;
} uopc_initialize_args;

typedef struct uopc_shutdown_args {
  UOPC_STRUCT_HEADER;
} uopc_shutdown_args;

typedef struct uopc_error_describe_args {
  UOPC_STRUCT_HEADER;
  const uopc_error* error;
  uopc_code code; /* out */
  uint32_t reserved;
  const char* message;   /* out: not NUL-terminated necessarily; lives as long as the error */
  uint64_t message_size; /* out */
} uopc_error_describe_args;

typedef struct uopc_error_destroy_args {
  UOPC_STRUCT_HEADER;
  uopc_error* error;
} uopc_error_destroy_args;

typedef struct uopc_blob_describe_args {
  UOPC_STRUCT_HEADER;
  const uopc_blob* blob;
  const void* data; /* out: lives as long as the blob */
  uint64_t size;    /* out */
} uopc_blob_describe_args;

typedef struct uopc_blob_destroy_args {
  UOPC_STRUCT_HEADER;
  uopc_blob* blob;
} uopc_blob_destroy_args;

typedef struct uopc_backend_count_args {
  UOPC_STRUCT_HEADER;
  uint32_t count; /* out */
  uint32_t reserved;
} uopc_backend_count_args;

typedef struct uopc_backend_get_args {
  UOPC_STRUCT_HEADER;
  uint32_t index;
  uint32_t reserved;
  uopc_backend* backend; /* out */
} uopc_backend_get_args;

/* Out: *desc, whose struct_size the caller sets (the plugin fills what both know). */
typedef struct uopc_backend_describe_args {
  UOPC_STRUCT_HEADER;
  const uopc_backend* backend;
  uopc_backend_desc* desc;
} uopc_backend_describe_args;

/* "Does the backend support `op` (a core/ops.h name, "add") on `dtype`?" */
typedef struct uopc_backend_supports_args {
  UOPC_STRUCT_HEADER;
  const uopc_backend* backend;
  const char* op;
  uopc_dtype dtype;
  int32_t supported; /* out */
} uopc_backend_supports_args;

/* The target a backend compiles kernels for, which the host's lowering passes shape kernels
   by (register tiles from the vector width and registers, layout copies from the caches,
   threads and blocks from a GPU's limits). In: backend; device, the device whose kernels
   these are (NULL: the backend's own target, or that of `arch`); arch, a target named
   without its device ("sm_90"; NULL: the device's, or the machine's). Out: the rest; strings
   stay valid while the plugin is loaded. Read from the hardware (CPUID and sysfs, the
   driver's attributes), never constants, except for a named arch. (ABI 1.4's struct.) */
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
  /* ---- ABI 2.1 ---- */
  const struct uopc_kernel_desc* kernels; /* out: the whole-op kernels it supplies (below) */
  uint64_t num_kernels;                   /* out */
} uopc_target_args;
typedef uopc_target_args uopc_backend_target_args;

/* A kernel the plugin supplies for a whole op (ABI 2.1): a vendor BLAS's matmul, a kernel on
   a matrix unit. The host's lowering calls it in place of generated code where an op of the
   graph is `op` on these dtypes, at least `min_flops` of work (smaller ones are left to
   generated code), and run through kernel_launch. The conformance suite checks it against
   the reference interpreter like any kernel. Ops and what their params are:

   "matmul": out[y][z][i][j] = sum over p < k of a[y][z][i][p] * b[y][z][p][j], for y <
     batch2, z < batch, i < m, j < n, products and sums in f32 (in any order: a vendor's
     kernel may block and reorder the sum), rounded once to `out` where it is not f32.
     Buffers: out, a, b. Params (int64, in elements, 19): batch, m, n, k; a's offset, batch
     stride, row stride (along i) and column stride (along p); b's offset, batch stride, row
     stride (along p) and column stride (along j); out's offset, batch stride and row stride
     (its column stride is 1); batch2, and a's, b's and out's batch2 strides (a second, outer
     batch: attention's sequences around its heads). Each of a and b has a stride of 1 along
     one of its two axes (the BLAS layouts: row-major, or transposed); out is not a or b. */
typedef struct uopc_kernel_desc {
  UOPC_STRUCT_HEADER;
  const char* name; /* "openblas_sgemm": unique within the plugin; [a-z0-9_] */
  const char* op;   /* "matmul" */
  uopc_dtype a, b, out;
  uint32_t reserved;
  uint64_t min_flops; /* 2 * batch * m * n * k for a matmul */
} uopc_kernel_desc;

/* One kernel's source, and the launch dimensions it was written for: a backend that maps
   a kernel's loops to threads says how many; {1,1,1} and {1,1,1} when the kernel loops over
   everything itself. (1.x's struct; 2.0 appends the outputs.) */
typedef struct uopc_render_args {
  UOPC_STRUCT_HEADER;
  const uopc_backend* backend;
  const void* kernel; /* a kernel's SINK, serialized (core/uop.proto) */
  uint64_t kernel_size;
  const char* name; /* the function to define */
  /* ---- ABI 2.0 ---- */
  uopc_blob* source;     /* out: owned by the caller (blob_destroy) */
  uint32_t global[3];    /* out */
  uint32_t local[3];     /* out */
  uint64_t shared_bytes; /* out: dynamic shared memory per block */
} uopc_render_args;

/* One binary from the sources of several kernels; its entries are their names. (1.x's
   struct; 2.0 appends the output.) */
typedef struct uopc_compile_args {
  UOPC_STRUCT_HEADER;
  const uopc_backend* backend;
  const uopc_source* sources;
  uint64_t num_sources;
  /* ---- ABI 2.0 ---- */
  uopc_blob* binary; /* out: owned by the caller (blob_destroy) */
} uopc_compile_args;

typedef struct uopc_device_count_args {
  UOPC_STRUCT_HEADER;
  uint32_t count; /* out */
  uint32_t reserved;
} uopc_device_count_args;

typedef struct uopc_device_get_args {
  UOPC_STRUCT_HEADER;
  uint32_t index;
  uint32_t reserved;
  uopc_device* device; /* out */
} uopc_device_get_args;

/* Out: *props, whose struct_size the caller sets. */
typedef struct uopc_device_describe_args {
  UOPC_STRUCT_HEADER;
  const uopc_device* device;
  uopc_device_props* props;
} uopc_device_describe_args;

/* A device's memory as its plugin accounts for it. */
typedef struct uopc_memory_args {
  UOPC_STRUCT_HEADER;
  const uopc_device* device;
  uint64_t bytes_in_use; /* out: allocated and not yet freed */
  uint64_t bytes_limit;  /* out: an allocation past it is RESOURCE_EXHAUSTED */
} uopc_memory_args;
typedef uopc_memory_args uopc_memory_info_args;

/* size 0 is valid (a buffer of no bytes); too large is RESOURCE_EXHAUSTED. */
typedef struct uopc_buffer_alloc_args {
  UOPC_STRUCT_HEADER;
  uopc_device* device;
  uint64_t size;
  uint64_t align;
  uopc_buffer* buffer; /* out */
} uopc_buffer_alloc_args;

/* Frees once work already queued on it is done. */
typedef struct uopc_buffer_free_args {
  UOPC_STRUCT_HEADER;
  uopc_buffer* buffer;
} uopc_buffer_free_args;

/* Where a buffer's memory is, as its device addresses it (a host pointer for a CPU, a device
   pointer for a GPU), so that another framework may use it in place (DLPack). UNIMPLEMENTED
   where the memory has no such address (a remote device). */
typedef struct uopc_buffer_address_args {
  UOPC_STRUCT_HEADER;
  const uopc_buffer* buffer;
  void* address; /* out: of byte 0 */
} uopc_buffer_address_args;

/* A buffer over `size` bytes of memory the caller owns, at `address` as buffer_address would
   give it (aligned to at least the element size; maybe less than buffer_alloc's alignment).
   The plugin never frees that memory: once the buffer is freed and the work queued on it is
   done, it calls release(release_ctx), exactly once (never when buffer_wrap fails: the
   caller then still owns the memory). */
typedef struct uopc_buffer_wrap_args {
  UOPC_STRUCT_HEADER;
  uopc_device* device;
  void* address;
  uint64_t size;
  void (*release)(void* release_ctx);
  void* release_ctx;
  uopc_buffer* buffer; /* out */
} uopc_buffer_wrap_args;

/* An in-order queue of the device's work. */
typedef struct uopc_queue_create_args {
  UOPC_STRUCT_HEADER;
  uopc_device* device;
  uopc_queue* queue; /* out */
} uopc_queue_create_args;

typedef struct uopc_queue_destroy_args {
  UOPC_STRUCT_HEADER;
  uopc_queue* queue;
} uopc_queue_destroy_args;

/* Queue work. `done`, when not NULL, receives an event that completes with the work; host
   memory given to a copy must stay valid until then. */
typedef struct uopc_copy_h2d_args {
  UOPC_STRUCT_HEADER;
  uopc_queue* queue;
  uopc_buffer* dst;
  uint64_t dst_offset;
  const void* src;
  uint64_t size;
  uopc_event** done;
} uopc_copy_h2d_args;

typedef struct uopc_copy_d2h_args {
  UOPC_STRUCT_HEADER;
  uopc_queue* queue;
  void* dst;
  const uopc_buffer* src;
  uint64_t src_offset;
  uint64_t size;
  uopc_event** done;
} uopc_copy_d2h_args;

/* A copy of `size` bytes between two buffers of this plugin, of one device or of two (a peer
   copy, where the device has UOPC_DEVICE_CAP_COPY_PEER). It runs on `queue` (of either
   device) after the work queued there before it; work on another queue that it must follow
   is ordered first with queue_wait_event. */
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

/* A binary from compile, with the names of its entries. */
typedef struct uopc_program_load_args {
  UOPC_STRUCT_HEADER;
  uopc_device* device;
  const void* binary;
  uint64_t size;
  const char* const* entries;
  uint32_t num_entries;
  uint32_t reserved;
  uopc_program* program; /* out */
} uopc_program_load_args;

typedef struct uopc_program_unload_args {
  UOPC_STRUCT_HEADER;
  uopc_program* program;
} uopc_program_unload_args;

/* (1.x's struct; 2.0 appends the queue and the event that 1.x passed beside it.) */
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
  /* ---- ABI 2.0 ---- */
  uopc_queue* queue;
  uopc_event** done;
} uopc_launch_args;

/* Work queued on `queue` after this waits for `event` (of any queue of the plugin). */
typedef struct uopc_queue_wait_event_args {
  UOPC_STRUCT_HEADER;
  uopc_queue* queue;
  uopc_event* event;
} uopc_queue_wait_event_args;

/* Waits for the event's work, and returns that work's error, if any. */
typedef struct uopc_event_wait_args {
  UOPC_STRUCT_HEADER;
  uopc_event* event;
  uint64_t timeout_ns;
} uopc_event_wait_args;

typedef struct uopc_event_query_args {
  UOPC_STRUCT_HEADER;
  uopc_event* event;
  int32_t done; /* out */
  uint32_t reserved;
} uopc_event_query_args;

typedef struct uopc_event_destroy_args {
  UOPC_STRUCT_HEADER;
  uopc_event* event;
} uopc_event_destroy_args;

typedef struct uopc_queue_synchronize_args {
  UOPC_STRUCT_HEADER;
  uopc_queue* queue;
} uopc_queue_synchronize_args;

/* Queues a run of the supplied kernel `name` (one the device's target lists) on `queue`:
   buffers and params as its op defines them (uopc_kernel_desc), each buffer at its byte
   offset. (ABI 2.1.) */
typedef struct uopc_kernel_launch_args {
  UOPC_STRUCT_HEADER;
  uopc_queue* queue;
  const char* name;
  uopc_buffer* const* buffers;
  const uint64_t* offsets; /* bytes, or NULL for all 0 */
  uint32_t num_buffers;
  uint32_t num_params;
  const int64_t* params;
  uopc_event** done;
} uopc_kernel_launch_args;

/* ---- the calls ---- */

/* X(call, returns, required): every call of the table, in its order (a minor appends).
   returns: E (a uopc_error*) or V (nothing). required: R (always), B (by a plugin with
   UOPC_PLUGIN_CAP_BACKEND), D (with UOPC_PLUGIN_CAP_DEVICE), O (optional). */
#define UOPC_API_CALLS(X)    \
  X(probe, E, O)             \
  X(initialize, E, O)        \
  X(shutdown, E, O)          \
  X(error_describe, V, R)    \
  X(error_destroy, V, R)     \
  X(blob_describe, V, R)     \
  X(blob_destroy, V, R)      \
  X(backend_count, E, B)     \
  X(backend_get, E, B)       \
  X(backend_describe, E, B)  \
  X(backend_supports, E, O)  \
  X(backend_target, E, O)    \
  X(render, E, B)            \
  X(compile, E, B)           \
  X(device_count, E, D)      \
  X(device_get, E, D)        \
  X(device_describe, E, D)   \
  X(memory_info, E, O)       \
  X(buffer_alloc, E, D)      \
  X(buffer_free, E, D)       \
  X(buffer_address, E, O)    \
  X(buffer_wrap, E, O)       \
  X(queue_create, E, D)      \
  X(queue_destroy, E, D)     \
  X(copy_h2d, E, D)          \
  X(copy_d2h, E, D)          \
  X(copy, E, O)              \
  X(program_load, E, O)      \
  X(program_unload, E, O)    \
  X(launch, E, O)            \
  X(queue_wait_event, E, D)  \
  X(event_wait, E, D)        \
  X(event_query, E, O)       \
  X(event_destroy, V, D)     \
  X(queue_synchronize, E, D) \
  X(kernel_launch, E, O)

#define UOPC_RETURNS_E uopc_error*
#define UOPC_RETURNS_V void

#define UOPC_PLUGIN_CAP_BACKEND (1ull << 0) /* the backend calls are implemented */
#define UOPC_PLUGIN_CAP_DEVICE (1ull << 1)  /* the device calls are implemented */

/* The plugin: who it is, and its calls. */
typedef struct uopc_api {
  UOPC_STRUCT_HEADER;
  uint16_t abi_major;
  uint16_t abi_minor;
  uint32_t uop_format_version; /* the core/uop.proto format version it reads */
  const char* name;            /* "c" */
  const char* version;         /* the plugin's own version, for humans */
  uint64_t caps;               /* UOPC_PLUGIN_CAP_* */
#define UOPC_API_SLOT_(call, returns, required) \
  UOPC_RETURNS_##returns (*call)(uopc_##call##_args * args);
  UOPC_API_CALLS(UOPC_API_SLOT_)
#undef UOPC_API_SLOT_
} uopc_api;

/* The one exported symbol. Cheap: no driver is initialized here. NULL if the plugin cannot
   work with this host at all (e.g. a host older than it needs). */
typedef const uopc_api* (*uopc_plugin_entry_v2_fn)(const uopc_host_api* host);
UOPC_EXPORT const uopc_api* uopc_plugin_entry_v2(const uopc_host_api* host);

#ifdef __cplusplus
}
#endif

#endif /* UOPC_BACKENDS_PLUGIN_API_H_ */
