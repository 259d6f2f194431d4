/* A uopc plugin, outside the uopc tree: a device whose memory is a file mapping, and a
 * backend that renders kernels as C and compiles them with the system's C compiler.
 *
 * Copy this workspace to start a plugin of your own. It is plain C11 against three headers
 * of uopc: backends/plugin_api.h, the ABI; backends/plugin_sdk.h, errors, blobs and a stub
 * for every call this plugin leaves out; backends/kernel_form.h, each kernel as plain C
 * data (linking @uopc//backends:kernel_form). It is built as a shared library that exports
 * one symbol, uopc_plugin_entry_v2 (plugin.lds). docs/plugins.md in uopc is the guide.
 *
 * What it does: one device, FILEMAP:0. Each buffer is a file in a folder (the option
 * "dir": UOPC_FILEMAP_DIR, default $TMPDIR or /tmp), mapped into this process, so a tensor
 * on it lives on disk; its memory is bounded by the option "limit" (UOPC_FILEMAP_LIMIT,
 * bytes, default 1 GiB). Work runs when it is queued (no UOPC_DEVICE_CAP_ASYNC), so copies
 * need no events. Its kernels come from the backend "filemap-c" (backend.c, render_c.c):
 * each runs whole on the thread that launches it, on every dtype but f16 and bf16.
 * Test it with uopc's conformance suite:
 *   uopc_conformance --plugin bazel-bin/libuopc_plugin_filemap.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "backends/plugin_api.h"
#include "backends/plugin_sdk.h"

struct uopc_device {
  char dir[4096];
  uint64_t limit, in_use; /* bytes; in_use under mu */
  pthread_mutex_t mu;
};
struct uopc_buffer {
  unsigned char* data; /* the mapping, or NULL for a buffer of no bytes */
  uint64_t size;
  int wrapped; /* memory of buffer_wrap's caller: released, not unmapped */
  void (*release)(void*);
  void* release_ctx;
};
struct uopc_queue {
  int unused;
};
/* A compiled binary, loaded: its kernels by entry. */
typedef void (*kernel_fn)(void* const* bufs, const int64_t* vars);
struct uopc_program {
  void* library;
  uint32_t num_entries;
  kernel_fn entries[];
};

static struct uopc_device device = {.limit = 1ull << 30, .mu = PTHREAD_MUTEX_INITIALIZER};
static struct uopc_queue queue;

#define REFUSE(what) uopc_sdk_error(UOPC_INVALID_ARGUMENT, "filemap: %s is NULL", what)

/* ---- the plugin ---- */

static uopc_error* initialize(uopc_initialize_args* a) {
  const char* tmp = getenv("TMPDIR");
  snprintf(device.dir, sizeof device.dir, "%s", tmp && *tmp ? tmp : "/tmp");
  for (uint64_t i = 0; i < a->num_options; ++i) {
    const char *k = a->options[i].name, *v = a->options[i].value;
    if (strcmp(k, "dir") == 0) {
      snprintf(device.dir, sizeof device.dir, "%s", v);
    } else if (strcmp(k, "limit") == 0) {
      char* end = NULL;
      errno = 0;
      unsigned long long n = strtoull(v, &end, 10);
      if (errno || !*v || *end || n == 0)
        return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                              "filemap: UOPC_FILEMAP_LIMIT=%s; expected a number of bytes > 0", v);
      device.limit = n;
    } else {
      filemap_backend_option(k, v);
    }
  }
  if (access(device.dir, W_OK) != 0)
    return uopc_sdk_error(UOPC_FAILED_PRECONDITION,
                          "filemap: cannot write the folder %s (UOPC_FILEMAP_DIR): %s", device.dir,
                          strerror(errno));
  return NULL;
}

/* ---- the device ---- */

static uopc_error* device_count(uopc_device_count_args* a) {
  a->count = 1;
  return NULL;
}

static uopc_error* device_get(uopc_device_get_args* a) {
  if (a->index != 0) return uopc_sdk_error(UOPC_OUT_OF_RANGE, "filemap: device %u of 1", a->index);
  a->device = &device;
  return NULL;
}

static uopc_error* device_describe(uopc_device_describe_args* a) {
  if (!a->device || !a->props) return REFUSE(a->device ? "props" : "device");
  UOPC_SDK_CLEAR(a->props);
  a->props->name = "FILEMAP:0";
  a->props->kind = "memory in mapped files";
  a->props->uid = "filemap://0";
  a->props->backend = "filemap-c";
  a->props->type = UOPC_DEVICE_ACCEL;
  a->props->mem_total = device.limit;
  a->props->caps = UOPC_DEVICE_CAP_COPY_D2D;
  return NULL;
}

static uopc_error* memory_info(uopc_memory_info_args* a) {
  if (!a->device) return REFUSE("device");
  pthread_mutex_lock(&device.mu);
  a->bytes_in_use = device.in_use;
  pthread_mutex_unlock(&device.mu);
  a->bytes_limit = device.limit;
  return NULL;
}

/* Takes `size` bytes of the limit, or says why not. */
static uopc_error* take(uint64_t size) {
  uopc_error* e = NULL;
  pthread_mutex_lock(&device.mu);
  if (size > device.limit - device.in_use)
    e = uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED,
                       "filemap: cannot allocate %llu bytes on FILEMAP:0: %llu of its %llu bytes "
                       "are in use",
                       (unsigned long long)size, (unsigned long long)device.in_use,
                       (unsigned long long)device.limit);
  else
    device.in_use += size;
  pthread_mutex_unlock(&device.mu);
  return e;
}

static void give_back(uint64_t size) {
  pthread_mutex_lock(&device.mu);
  device.in_use -= size;
  pthread_mutex_unlock(&device.mu);
}

static uopc_error* buffer_alloc(uopc_buffer_alloc_args* a) {
  if (!a->device) return REFUSE("device");
  if (a->align > (uint64_t)sysconf(_SC_PAGESIZE) || (a->align & (a->align - 1)))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                          "filemap: alignment %llu (a mapping is page-aligned)",
                          (unsigned long long)a->align);
  uopc_error* e = take(a->size);
  if (e) return e;
  uopc_buffer* b = (uopc_buffer*)calloc(1, sizeof *b);
  if (!b) {
    give_back(a->size);
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "filemap: out of host memory");
  }
  b->size = a->size;
  if (a->size > 0) {
    /* the file is unlinked at once: the mapping keeps it, and nothing is left behind */
    char path[4200];
    snprintf(path, sizeof path, "%s/uopc-filemap-XXXXXX", device.dir);
    int fd = mkstemp(path);
    if (fd >= 0) unlink(path);
    void* p = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)a->size) == 0)
      p = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    if (fd >= 0) close(fd);
    if (p == MAP_FAILED) {
      free(b);
      give_back(a->size);
      return uopc_sdk_error(
          err == ENOSPC || err == ENOMEM ? UOPC_RESOURCE_EXHAUSTED : UOPC_INTERNAL,
          "filemap: a file of %llu bytes in %s: %s", (unsigned long long)a->size, device.dir,
          strerror(err));
    }
    b->data = (unsigned char*)p;
  }
  a->buffer = b;
  return NULL;
}

static uopc_error* buffer_free(uopc_buffer_free_args* a) {
  uopc_buffer* b = a->buffer;
  if (!b) return REFUSE("buffer");
  if (b->wrapped) {
    b->release(b->release_ctx);
  } else {
    if (b->data) munmap(b->data, b->size);
    give_back(b->size);
  }
  free(b);
  return NULL;
}

static uopc_error* buffer_address(uopc_buffer_address_args* a) {
  if (!a->buffer) return REFUSE("buffer");
  a->address = a->buffer->data;
  return NULL;
}

static uopc_error* buffer_wrap(uopc_buffer_wrap_args* a) {
  if (!a->device || !a->release) return REFUSE(a->device ? "release" : "device");
  if (!a->address && a->size) return REFUSE("address");
  uopc_buffer* b = (uopc_buffer*)calloc(1, sizeof *b);
  if (!b) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "filemap: out of host memory");
  b->data = (unsigned char*)a->address;
  b->size = a->size;
  b->wrapped = 1;
  b->release = a->release;
  b->release_ctx = a->release_ctx;
  a->buffer = b;
  return NULL;
}

static uopc_error* queue_create(uopc_queue_create_args* a) {
  if (!a->device) return REFUSE("device");
  a->queue = &queue;
  return NULL;
}

static uopc_error* queue_destroy(uopc_queue_destroy_args* a) {
  return a->queue ? NULL : REFUSE("queue");
}

/* Whether [offset, offset + size) lies in b. */
static uopc_error* in_range(const uopc_buffer* b, uint64_t offset, uint64_t size,
                            const char* what) {
  if (offset > b->size || size > b->size - offset)
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "filemap: %s %llu bytes at %llu of a %llu-byte buffer",
                          what, (unsigned long long)size, (unsigned long long)offset,
                          (unsigned long long)b->size);
  return NULL;
}

static uopc_error* copy_h2d(uopc_copy_h2d_args* a) {
  if (!a->queue || !a->dst || (!a->src && a->size)) return REFUSE("queue, buffer or host memory");
  uopc_error* e = in_range(a->dst, a->dst_offset, a->size, "copy in of");
  if (e) return e;
  if (a->size) memcpy(a->dst->data + a->dst_offset, a->src, a->size);
  if (a->done) *a->done = NULL; /* done already */
  return NULL;
}

static uopc_error* copy_d2h(uopc_copy_d2h_args* a) {
  if (!a->queue || !a->src || (!a->dst && a->size)) return REFUSE("queue, buffer or host memory");
  uopc_error* e = in_range(a->src, a->src_offset, a->size, "copy out of");
  if (e) return e;
  if (a->size) memcpy(a->dst, a->src->data + a->src_offset, a->size);
  if (a->done) *a->done = NULL;
  return NULL;
}

static uopc_error* copy(uopc_copy_args* a) {
  if (!a->queue || !a->dst || !a->src) return REFUSE("queue or buffer");
  uopc_error* e = in_range(a->dst, a->dst_offset, a->size, "copy to");
  if (!e) e = in_range(a->src, a->src_offset, a->size, "copy from");
  if (e) return e;
  if (a->size) memmove(a->dst->data + a->dst_offset, a->src->data + a->src_offset, a->size);
  if (a->done) *a->done = NULL;
  return NULL;
}

/* Work is done when its call returns: there are no events to wait for. */
static uopc_error* queue_wait_event(uopc_queue_wait_event_args* a) {
  return a->queue ? NULL : REFUSE("queue");
}
static uopc_error* event_wait(uopc_event_wait_args* a) {
  (void)a;
  return NULL;
}
static uopc_error* queue_synchronize(uopc_queue_synchronize_args* a) {
  return a->queue ? NULL : REFUSE("queue");
}

/* Loads a binary of the backend (a shared library) from a file that is gone at once. */
static uopc_error* program_load(uopc_program_load_args* a) {
  if (!a->device || !a->binary || (!a->entries && a->num_entries))
    return REFUSE("device, binary or entries");
  char path[4200];
  snprintf(path, sizeof path, "%s/uopc-filemap-XXXXXX.so", device.dir);
  int fd = mkstemps(path, 3);
  if (fd < 0)
    return uopc_sdk_error(UOPC_INTERNAL, "filemap: a file in %s: %s", device.dir, strerror(errno));
  int written = write(fd, a->binary, a->size) == (ssize_t)a->size;
  close(fd);
  void* library = written ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  unlink(path);
  if (!library)
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "filemap: loading a binary: %s",
                          written ? dlerror() : "cannot write it");
  uopc_program* p = (uopc_program*)calloc(1, sizeof *p + a->num_entries * sizeof(kernel_fn));
  if (!p) {
    dlclose(library);
    return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "filemap: out of host memory");
  }
  p->library = library;
  p->num_entries = a->num_entries;
  for (uint32_t i = 0; i < a->num_entries; ++i) {
    p->entries[i] = (kernel_fn)(uintptr_t)dlsym(library, a->entries[i]);
    if (!p->entries[i]) {
      dlclose(library);
      free(p);
      return uopc_sdk_error(UOPC_NOT_FOUND, "filemap: the binary has no kernel %s", a->entries[i]);
    }
  }
  a->program = p;
  return NULL;
}

static uopc_error* program_unload(uopc_program_unload_args* a) {
  if (!a->program) return REFUSE("program");
  dlclose(a->program->library);
  free(a->program);
  return NULL;
}

/* Runs the kernel now, on this thread: each buffer at its offset, the VARs as they are. */
static uopc_error* launch(uopc_launch_args* a) {
  if (!a->program || !a->queue || (!a->buffers && a->num_buffers) || (!a->vars && a->num_vars))
    return REFUSE("program, queue, buffers or vars");
  if (a->entry >= a->program->num_entries)
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "filemap: launch of entry %u of a program of %u",
                          a->entry, a->program->num_entries);
  void* stack[64];
  void** bufs = a->num_buffers <= 64 ? stack : (void**)calloc(a->num_buffers, sizeof *bufs);
  if (!bufs) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "filemap: out of host memory");
  uopc_error* e = NULL;
  for (uint32_t s = 0; s < a->num_buffers; ++s) {
    const uopc_buffer* b = a->buffers[s];
    const uint64_t offset = a->offsets ? a->offsets[s] : 0;
    if (b && !e) e = in_range(b, offset, 0, "a kernel's buffer of");
    bufs[s] = b ? b->data + offset : NULL;
  }
  if (!e) a->program->entries[a->entry](bufs, a->vars);
  if (bufs != stack) free(bufs);
  if (a->done) *a->done = NULL;
  return e;
}

static uopc_api api = {
    .uop_format_version = 1,
    .name = "filemap",
    .version = "0.1",
    .caps = UOPC_PLUGIN_CAP_BACKEND | UOPC_PLUGIN_CAP_DEVICE,
    .initialize = initialize,
    .backend_count = filemap_backend_count,
    .backend_get = filemap_backend_get,
    .backend_describe = filemap_backend_describe,
    .backend_supports = filemap_backend_supports,
    .render = filemap_render,
    .compile = filemap_compile,
    .device_count = device_count,
    .device_get = device_get,
    .device_describe = device_describe,
    .memory_info = memory_info,
    .buffer_alloc = buffer_alloc,
    .buffer_free = buffer_free,
    .buffer_address = buffer_address,
    .buffer_wrap = buffer_wrap,
    .queue_create = queue_create,
    .queue_destroy = queue_destroy,
    .copy_h2d = copy_h2d,
    .copy_d2h = copy_d2h,
    .copy = copy,
    .program_load = program_load,
    .program_unload = program_unload,
    .launch = launch,
    .queue_wait_event = queue_wait_event,
    .event_wait = event_wait,
    .queue_synchronize = queue_synchronize,
};

UOPC_EXPORT const uopc_api* uopc_plugin_entry_v2(const uopc_host_api* host) {
  if (!host || host->abi_major != UOPC_ABI_MAJOR) return NULL; /* another major: not for us */
  uopc_sdk_fill(&api); /* sizes, versions, and a stub for every call left out */
  return &api;
}
