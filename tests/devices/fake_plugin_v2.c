/* A plugin of ABI 2.0 written in plain C11 against backends/plugin_api.h alone (no SDK):
 * it proves that the header is all a device plugin needs, and, built with one of the
 * FAKE_* defines, it is each way a 2.0 plugin can fail to load. Without a define it is a
 * working device plugin: one device "FAKE2:0" of host memory, whose copies run at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plugin_api.h"

struct uopc_error {
  uopc_code code;
  char message[128];
};
struct uopc_device {
  int id;
};
struct uopc_buffer {
  unsigned char* data;
  uint64_t size;
};
struct uopc_queue {
  int id;
};

static struct uopc_device fake_device = {0};
static struct uopc_queue fake_queue = {0};

static uopc_error* fail(uopc_code code, const char* message) {
  uopc_error* e = (uopc_error*)malloc(sizeof *e);
  if (!e) return NULL; /* (a real plugin keeps a static error for this) */
  e->code = code;
  snprintf(e->message, sizeof e->message, "%s", message);
  return e;
}

static void error_describe(uopc_error_describe_args* a) {
  a->code = a->error->code;
  a->message = a->error->message;
  a->message_size = strlen(a->error->message);
}
static void error_destroy(uopc_error_destroy_args* a) { free(a->error); }
static void blob_describe(uopc_blob_describe_args* a) {
  a->data = NULL;
  a->size = 0;
}
static void blob_destroy(uopc_blob_destroy_args* a) { (void)a; }

#ifdef FAKE_PROBE_FAILS
static uopc_error* probe(uopc_probe_args* a) {
  (void)a;
  return fail(UOPC_UNAVAILABLE, "fake2: no such hardware here");
}
#else
static uopc_error* probe(uopc_probe_args* a) {
  a->score = 3;
  return NULL;
}
#endif

static uopc_error* device_count(uopc_device_count_args* a) {
  a->count = 1;
  return NULL;
}
static uopc_error* device_get(uopc_device_get_args* a) {
  if (a->index != 0) return fail(UOPC_OUT_OF_RANGE, "fake2: one device");
  a->device = &fake_device;
  return NULL;
}
static uopc_error* device_describe(uopc_device_describe_args* a) {
  if (!a->device || !a->props) return fail(UOPC_INVALID_ARGUMENT, "fake2: NULL device");
  a->props->name = "FAKE2:0";
  a->props->kind = "a fake device of ABI 2.0";
  a->props->uid = "fake2://0";
  a->props->backend = NULL;
  a->props->type = UOPC_DEVICE_ACCEL;
  a->props->mem_total = 1 << 20;
  a->props->caps = 0;
  return NULL;
}
static uopc_error* buffer_alloc(uopc_buffer_alloc_args* a) {
  if (a->size > (1 << 20)) return fail(UOPC_RESOURCE_EXHAUSTED, "fake2: more than 1 MiB");
  uopc_buffer* b = (uopc_buffer*)malloc(sizeof *b);
  if (!b) return fail(UOPC_RESOURCE_EXHAUSTED, "fake2: out of memory");
  b->data = (unsigned char*)calloc(1, a->size ? a->size : 1);
  b->size = a->size;
  a->buffer = b;
  return NULL;
}
static uopc_error* buffer_free(uopc_buffer_free_args* a) {
  if (!a->buffer) return fail(UOPC_INVALID_ARGUMENT, "fake2: NULL buffer");
  free(a->buffer->data);
  free(a->buffer);
  return NULL;
}
static uopc_error* queue_create(uopc_queue_create_args* a) {
  a->queue = &fake_queue;
  return NULL;
}
static uopc_error* queue_destroy(uopc_queue_destroy_args* a) {
  return a->queue ? NULL : fail(UOPC_INVALID_ARGUMENT, "fake2: NULL queue");
}
static uopc_error* copy_h2d(uopc_copy_h2d_args* a) {
  if (a->dst_offset > a->dst->size || a->size > a->dst->size - a->dst_offset)
    return fail(UOPC_OUT_OF_RANGE, "fake2: past the buffer");
  memcpy(a->dst->data + a->dst_offset, a->src, a->size);
  if (a->done) *a->done = NULL; /* done already: no event */
  return NULL;
}
static uopc_error* copy_d2h(uopc_copy_d2h_args* a) {
  if (a->src_offset > a->src->size || a->size > a->src->size - a->src_offset)
    return fail(UOPC_OUT_OF_RANGE, "fake2: past the buffer");
  memcpy(a->dst, a->src->data + a->src_offset, a->size);
  if (a->done) *a->done = NULL;
  return NULL;
}
static uopc_error* ok_event(uopc_event_wait_args* a) {
  (void)a;
  return NULL;
}
static void no_event(uopc_event_destroy_args* a) { (void)a; }
static uopc_error* wait_event(uopc_queue_wait_event_args* a) {
  (void)a;
  return NULL;
}
static uopc_error* synchronize(uopc_queue_synchronize_args* a) {
  (void)a;
  return NULL;
}

static uopc_api api = {
    .struct_size = sizeof(uopc_api),
    .abi_major = UOPC_ABI_MAJOR,
    .abi_minor = UOPC_ABI_MINOR,
    .uop_format_version = 1,
    .name = "fake2",
    .version = "0.2",
    .caps = UOPC_PLUGIN_CAP_DEVICE,
    .probe = probe,
    .error_describe = error_describe,
    .error_destroy = error_destroy,
    .blob_describe = blob_describe,
    .blob_destroy = blob_destroy,
    .device_count = device_count,
    .device_get = device_get,
    .device_describe = device_describe,
    .buffer_alloc = buffer_alloc,
    .buffer_free = buffer_free,
    .queue_create = queue_create,
    .queue_destroy = queue_destroy,
    .copy_h2d = copy_h2d,
#ifndef FAKE_NO_COPY_OUT
    .copy_d2h = copy_d2h,
#endif
    .queue_wait_event = wait_event,
    .event_wait = ok_event,
    .event_destroy = no_event,
    .queue_synchronize = synchronize,
};

UOPC_EXPORT const uopc_api* uopc_plugin_entry_v2(const uopc_host_api* host) {
  if (!host || host->abi_major != UOPC_ABI_MAJOR) return NULL;
#ifdef FAKE_MAJOR
  api.abi_major = FAKE_MAJOR;
#endif
#ifdef FAKE_SMALL_TABLE
  api.struct_size = offsetof(uopc_api, copy);
#endif
  return &api;
}
