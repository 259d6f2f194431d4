/* A plugin built for ABI 1.x, written in plain C11 against devices/plugin_api_v1.h and
 * plugin_sdk_v1.h: it proves that such a plugin still loads and works, and, built with one
 * of the FAKE_* defines, it is each way a 1.x plugin can fail to load. Without a define it
 * is a minimal working plugin: one device "FAKE:0" with host memory and copies, and nothing
 * else (the SDK stubs the rest). */
#include <stdlib.h>
#include <string.h>

#include "tests/devices/plugin_sdk_v1.h"

struct uopc_device {
  int id;
};
struct uopc_buffer {
  void* data;
  uint64_t size;
};
struct uopc_queue {
  int id;
};

static struct uopc_device fake_device = {0};

#ifdef FAKE_MANY_DEVICES
static uint32_t count(void) { return 0xffffffffu; } /* a broken plugin's count */
#else
static uint32_t count(void) { return 1; }
#endif
static uopc_error* get(uint32_t i, uopc_device** out) {
  if (i != 0) return uopc_sdk_error(UOPC_OUT_OF_RANGE, "fake: device %u of 1", i);
  *out = &fake_device;
  return NULL;
}
static uopc_error* describe(const uopc_device* d, uopc_device_props* p) {
  if (!d || !p) return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "fake: NULL device");
  p->name = "FAKE:0";
  p->kind = "a fake device";
  p->uid = "fake://0";
  p->backend = NULL;
  p->type = UOPC_DEVICE_ACCEL;
  p->mem_total = 1 << 20;
  p->caps = 0;
  return NULL;
}
static uopc_error* alloc(uopc_device* d, uint64_t size, uint64_t align, uopc_buffer** out) {
  (void)d;
  (void)align;
  if (size > (1 << 20)) return uopc_sdk_error(UOPC_RESOURCE_EXHAUSTED, "fake: %llu bytes is more than 1 MiB", (unsigned long long)size);
  uopc_buffer* b = (uopc_buffer*)malloc(sizeof *b);
  b->data = calloc(1, size ? size : 1);
  b->size = size;
  *out = b;
  return NULL;
}
static uopc_error* release(uopc_buffer* b) {
  if (!b) return uopc_sdk_error(UOPC_INVALID_ARGUMENT, "fake: NULL buffer");
  free(b->data);
  free(b);
  return NULL;
}
static uopc_error* queue_create(uopc_device* d, uopc_queue** out) {
  (void)d;
  static uopc_queue q = {0};
  *out = &q;
  return NULL;
}
static uopc_error* queue_destroy(uopc_queue* q) {
  return q ? NULL : uopc_sdk_error(UOPC_INVALID_ARGUMENT, "fake: NULL queue");
}
static uopc_error* h2d(uopc_queue* q, uopc_buffer* dst, uint64_t off, const void* src, uint64_t n, uopc_event** e) {
  (void)q;
  if (off > dst->size || n > dst->size - off)
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "fake: past the buffer");
  if (e) *e = NULL;
  memcpy((char*)dst->data + off, src, n);
  return NULL;
}
static uopc_error* d2h(uopc_queue* q, void* dst, const uopc_buffer* src, uint64_t off, uint64_t n, uopc_event** e) {
  (void)q;
  if (off > src->size || n > src->size - off)
    return uopc_sdk_error(UOPC_OUT_OF_RANGE, "fake: past the buffer");
  if (e) *e = NULL;
  memcpy(dst, (const char*)src->data + off, n);
  return NULL;
}
static uopc_error* wait_event(uopc_event* e, uint64_t t) {
  (void)e;
  (void)t;
  return NULL;
}
#ifdef FAKE_INIT_FAIL
static uopc_error* init(void) { return uopc_sdk_error(UOPC_FAILED_PRECONDITION, "no accelerator is attached"); }
#else
static uopc_error* init(void) { return NULL; }
#endif
#ifdef FAKE_OPTIONS
/* refuses to start, saying which options it was given (what the host passes, checked) */
static uopc_error* init_with(const uopc_initialize_args* a) {
  char text[512] = "";
  for (uint64_t i = 0; i < a->num_options; ++i) {
    strncat(text, a->options[i].name, sizeof text - strlen(text) - 1);
    strncat(text, "=", sizeof text - strlen(text) - 1);
    strncat(text, a->options[i].value, sizeof text - strlen(text) - 1);
    strncat(text, ";", sizeof text - strlen(text) - 1);
  }
  return uopc_sdk_error(UOPC_FAILED_PRECONDITION, "options %s", text);
}
#endif
#ifdef FAKE_PROBE_ZERO
static int32_t probe(void) { return 0; }
#else
static int32_t probe(void) { return 5; }
#endif

static uopc_device_api dev = {
    .device_count = count,
    .device_get = get,
    .device_describe = describe,
    .buffer_alloc = alloc,
    .buffer_free = release,
    .queue_create = queue_create,
    .queue_destroy = queue_destroy,
    .copy_h2d = h2d,
    .copy_d2h = d2h,
    .event_wait = wait_event,
};
static uopc_backend_api be = {0};
static uopc_plugin_api api = {
    .uop_format_version = 1,
    .name = "fake",
    .version = "0.1",
    .caps = UOPC_PLUGIN_CAP_DEVICE,
    .probe = probe,
    .initialize = init,
#ifdef FAKE_OPTIONS
    .initialize_with = init_with,
#endif
};

#if defined(FAKE_NO_ENTRY)
UOPC_EXPORT int not_a_plugin = 1;
#elif defined(FAKE_ENTRY_V3)
UOPC_EXPORT const uopc_plugin_api* uopc_plugin_entry_v3(const uopc_host_api* host) {
  (void)host;
  return NULL;
}
#else
UOPC_EXPORT const uopc_plugin_api* uopc_plugin_entry_v1(const uopc_host_api* host) {
  (void)host;
#ifdef FAKE_NULL_TABLE
  return NULL;
#endif
  uopc_sdk_fill_v1(&api, &be, &dev);
#ifdef FAKE_MAJOR
  api.abi_major = FAKE_MAJOR;
  api.abi_minor = 3;
#endif
#ifdef FAKE_OLD_MINOR
  /* as if built against ABI 1.0, whose device table ended before copy */
  api.abi_minor = 0;
  dev.struct_size = offsetof(uopc_device_api, copy);
  be.struct_size = offsetof(uopc_backend_api, render_kernel);
  api.struct_size = offsetof(uopc_plugin_api, initialize_with);
#endif
  return &api;
}
#endif
