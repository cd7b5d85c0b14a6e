/* counting_backend.h - a worked example of a ctosa partition backend
 * (ctosa/runtime.h, docs/runtime.md): it counts every call and forwards it
 * to the interpreter backend. An NPU driver has the same shape: prepare
 * compiles the TOSA graph for the device, run copies the input buffers in,
 * starts the device and copies the outputs out, release frees the device
 * program.
 *
 *     counting_backend cb;
 *     counting_backend_init(&cb);
 *     ctosa_runtime_options opt;
 *     ctosa_runtime_options_init(&opt);
 *     opt.backend = &cb.backend;
 *     ... ctosa_runtime_load / run / free ...
 *     printf("%u partitions, %u runs\n", cb.prepares, cb.runs);
 */
#ifndef CTOSA_EXAMPLE_COUNTING_BACKEND_H
#define CTOSA_EXAMPLE_COUNTING_BACKEND_H

#include "ctosa/runtime.h"

#define COUNTING_BACKEND_MAX_PARTS 64

typedef struct counting_backend {
    ctosa_backend backend;      /* what the runtime calls (user = this struct) */
    const ctosa_backend *inner; /* where the calls go: the interpreter */
    uint32_t prepares, runs, releases;
    /* Per prepared partition (in load order): its name and how often it ran. */
    uint32_t n_parts;
    char names[COUNTING_BACKEND_MAX_PARTS][128];
    uint32_t runs_of[COUNTING_BACKEND_MAX_PARTS];
} counting_backend;

void counting_backend_init(counting_backend *cb);

#endif
