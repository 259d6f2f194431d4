/* The backend: kernels rendered as C from their form (render_c.c) and compiled by the
 * system's C compiler (cc, or the option "cc": UOPC_FILEMAP_CC) into a shared library, the
 * binary that the device loads (filemap_plugin.c: program_load). */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/kernel_form.h"
#include "render_c.h"

struct uopc_backend {
  char cc[1024];
};
static struct uopc_backend backend = {.cc = "cc"};

void filemap_backend_option(const char* key, const char* value) {
  if (strcmp(key, "cc") == 0) snprintf(backend.cc, sizeof backend.cc, "%s", value);
}

uopc_error* filemap_backend_count(uopc_backend_count_args* a) {
  a->count = 1;
  return NULL;
}

uopc_error* filemap_backend_get(uopc_backend_get_args* a) {
  if (a->index != 0) return uopc_sdk_error(UOPC_OUT_OF_RANGE, "filemap: backend %u of 1", a->index);
  a->backend = &backend;
  return NULL;
}

uopc_error* filemap_backend_describe(uopc_backend_describe_args* a) {
  if (!a->backend || !a->desc)
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "filemap: %s is NULL",
                          a->backend ? "desc" : "backend");
  UOPC_SDK_CLEAR(a->desc);
  a->desc->name = "filemap-c";
  a->desc->target = "FILEMAP:C:x86_64";
  a->desc->fingerprint = backend.cc; /* the compiler: part of every cache key */
  a->desc->lang = UOPC_LANG_C;
  for (int t = UOPC_DTYPE_BOOL; t <= UOPC_DTYPE_F64; ++t)
    if (filemap_renders_dtype((uopc_dtype)t)) a->desc->dtypes |= 1ull << t;
  a->desc->global_max[0] = a->desc->global_max[1] = a->desc->global_max[2] = 1;
  return NULL;
}

uopc_error* filemap_backend_supports(uopc_backend_supports_args* a) {
  if (!a->backend || !a->op)
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "filemap: %s is NULL", a->op ? "backend" : "op");
  a->supported = filemap_renders_dtype(a->dtype);
  return NULL;
}

uopc_error* filemap_render(uopc_render_args* a) {
  if (!a->backend || !a->kernel || !a->name)
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT,
                          "filemap: render's backend, kernel or name is NULL");
  char why[1024];
  uopc_kernel_form* form = uopc_kernel_form_read(a->kernel, a->kernel_size, why, sizeof why);
  if (!form) return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "filemap: render %s: %s", a->name, why);
  char* source = filemap_render_c(form, a->name, why, sizeof why);
  uopc_kernel_form_free(form);
  if (!source) return uopc_sdk_error(UOPC_UNIMPLEMENTED, "%s", why);
  a->source = uopc_sdk_blob(source, strlen(source));
  free(source);
  if (!a->source) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "filemap: out of host memory");
  for (int i = 0; i < 3; ++i) a->global[i] = a->local[i] = 1; /* it runs whole, on one thread */
  a->shared_bytes = 0;
  return NULL;
}

/* The first `max` bytes of file `path`, or "". (free it) */
static char* head_of(const char* path, size_t max) {
  char* s = (char*)calloc(1, max + 1);
  FILE* f = s ? fopen(path, "rb") : NULL;
  if (f) {
    size_t n = fread(s, 1, max, f);
    s[n] = 0;
    fclose(f);
  }
  return s;
}

/* One shared library from the prelude and every source. */
uopc_error* filemap_compile(uopc_compile_args* a) {
  if (!a->backend || (!a->sources && a->num_sources))
    return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "filemap: compile's backend or sources is NULL");
  const char* tmp = getenv("TMPDIR");
  char base[4096];
  snprintf(base, sizeof base, "%s/uopc-filemap-cc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(base))
    return uopc_sdk_error(UOPC_INTERNAL, "filemap: a folder for the compiler in %s: %s",
                          tmp && *tmp ? tmp : "/tmp", strerror(errno));
  char c_path[4200], so_path[4200], log_path[4200], cmd[16384];
  snprintf(c_path, sizeof c_path, "%s/k.c", base);
  snprintf(so_path, sizeof so_path, "%s/k.so", base);
  snprintf(log_path, sizeof log_path, "%s/log", base);
  uopc_error* e = NULL;
  FILE* f = fopen(c_path, "w");
  if (!f) e = uopc_sdk_error(UOPC_INTERNAL, "filemap: writing %s: %s", c_path, strerror(errno));
  if (f) {
    fputs(filemap_c_prelude(), f);
    for (uint64_t i = 0; i < a->num_sources; ++i)
      fwrite(a->sources[i].text, 1, a->sources[i].size, f);
    if (fclose(f) != 0) e = uopc_sdk_error(UOPC_INTERNAL, "filemap: writing %s", c_path);
  }
  if (!e) {
    snprintf(cmd, sizeof cmd, "%s -O2 -fPIC -shared -w -o '%s' '%s' -lm >'%s' 2>&1", backend.cc,
             so_path, c_path, log_path);
    int status = system(cmd);
    if (status != 0) {
      char* log = head_of(log_path, 2000);
      e = uopc_sdk_error(UOPC_INTERNAL, "filemap: compile: `%s` failed (status %d): %s", backend.cc,
                         WIFEXITED(status) ? WEXITSTATUS(status) : status, log ? log : "");
      free(log);
    }
  }
  if (!e) {
    FILE* so = fopen(so_path, "rb");
    long size = -1;
    if (so && fseek(so, 0, SEEK_END) == 0) size = ftell(so);
    char* bytes = size >= 0 ? (char*)malloc((size_t)size + 1) : NULL;
    if (bytes && fseek(so, 0, SEEK_SET) == 0 && fread(bytes, 1, (size_t)size, so) == (size_t)size)
      a->binary = uopc_sdk_blob(bytes, (uint64_t)size);
    if (!a->binary) e = uopc_sdk_error(UOPC_INTERNAL, "filemap: reading %s", so_path);
    free(bytes);
    if (so) fclose(so);
  }
  unlink(c_path), unlink(so_path), unlink(log_path), rmdir(base);
  return e;
}
