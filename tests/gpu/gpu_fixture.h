/* gpu_fixture.h -- the Vulkan context every GPU test runs on: validation
 * layer on, messages counted; teardown fails the test on any message.
 * With no Vulkan device the tests FAIL, unless GSMRT_TEST_ALLOW_NO_VULKAN=1
 * (then they are skipped, loudly). */
#ifndef GSMRT_TEST_GPU_FIXTURE_H
#define GSMRT_TEST_GPU_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernels/kernels.h"
#include "vk/vk.h"

struct gpu {
    struct gsmrt_vk_instance *inst;
    struct gsmrt_vk_device *dev;
    struct gsmrt_vk_rec *rec;
};

/* cmocka group setup/teardown: *state becomes a struct gpu *. */
int gpu_setup(void **state);
int gpu_teardown(void **state);

/* The whole file, NUL-terminated (free it); *n its length when n is not
 * NULL. Fails the test when the file cannot be read. */
char *gpu_read_file(const char *path, size_t *n);
/* The file parsed as JSON (cJSON_Delete it); fails the test when it is not. */
struct cJSON *gpu_load_json(const char *path);

/* The error record tests pass to the runtime. */
extern struct gsmrt_err gpu_err;

/* Asserts expr returns GSMRT_OK, printing the runtime's message otherwise. */
#define GPU_OK(expr)                                                                          \
    do {                                                                                      \
        gsmrt_status st_ = (expr);                                                            \
        if (st_ != GSMRT_OK) fail_msg("%s -> %s: %s", #expr, gsmrt_status_name(st_), gpu_err.msg); \
    } while (0)

/* A device buffer with GUARD_FLOATS sentinel floats before and after the
 * payload, to catch out-of-bounds writes. */
#define GUARD_FLOATS 16
#define GUARD_VALUE 12345.5f
struct guarded {
    struct gsmrt_vk_buf buf;
    struct gsmrt_vk_range range;   /* the payload */
    size_t n;                      /* payload floats */
};
void guarded_alloc(struct gpu *g, struct guarded *b, size_t n_floats);
/* Downloads the payload and asserts both guards are intact. */
void guarded_read(struct gpu *g, struct guarded *b, float *out);
void guarded_free(struct gpu *g, struct guarded *b);

/* A plain buffer holding `bytes` bytes of `data`, and its whole range. */
void upload_buf(struct gpu *g, enum gsmrt_vk_role role, const void *data, size_t bytes,
                struct gsmrt_vk_buf *buf, struct gsmrt_vk_range *range);

/* Runs body once per kernel variant the device can run: one output per
 * invocation, subgroup reductions (if supported), shared-memory reductions. */
void for_each_variant(struct gpu *g, void (*body)(struct gpu *));

/* Runs the recording built by the test (begin was already called). */
void submit(struct gpu *g);

#endif
