/* fuzz_tosa_exec.c - validator and interpreter on graphs that pass the
 * reader. Graphs whose declared tensors are large are skipped (the
 * interpreter's limits are tested elsewhere; here speed matters). Each
 * graph is validated against a permissive spec (TOSA 1.1, INT+FP, every
 * extension) and then run - whatever the validator said, because
 * `ctosa run` does not validate either - with small memory, depth and
 * loop limits, one thread, and inputs filled from the fuzz bytes.
 *
 * Slice runs: for about half of the inputs (a hash of the bytes decides,
 * so every seed is run one way or the other) a subset of the main block's
 * tensors, sometimes with a repeat or a name the graph lacks, is requested
 * as the outputs (ctosa_interp_options.outputs); inputs the slice does not
 * use are then left unset, as `ctosa run` does. */
#include <string.h>

#include "ctosa/interp.h"
#include "ctosa/spec.h"
#include "ctosa/tosa_io.h"
#include "fuzz_common.h"

#define MAX_TENSOR_ELEMS (1u << 14)
#define MAX_TOTAL_ELEMS (1u << 16)

static bool small_enough(const ctosa_graph *g) {
    uint64_t total = 0;
    for (uint32_t r = 0; r < ctosa_graph_region_count(g); r++) {
        const ctosa_region *rg = ctosa_graph_region(g, r);
        for (uint32_t b = 0; b < rg->n_blocks; b++) {
            const ctosa_block *bl = rg->blocks[b];
            if (bl->n_ops > 256) return false;
            for (uint32_t t = 0; t < bl->n_tensors; t++) {
                uint64_t n;
                if (!ctosa_tensor_elements(bl->tensors[t], &n) || n > MAX_TENSOR_ELEMS) return false;
                total += n;
                if (total > MAX_TOTAL_ELEMS) return false;
            }
        }
    }
    return true;
}

/* Host-encoded input data in the dtype's range, from the fuzz bytes. */
static void fill(void *dst, ctosa_dtype t, uint64_t count, size_t es, const uint8_t *src, size_t n) {
    uint8_t *d = dst;
    for (uint64_t i = 0; i < count * es; i++) d[i] = n ? src[i % n] : 0;
    for (uint64_t i = 0; i < count; i++) {
        if (t == CTOSA_DTYPE_BOOL) d[i] &= 1;
        else if (t == CTOSA_DTYPE_INT4) d[i] = (uint8_t)((int8_t)(d[i] << 4) >> 4);
        else if (t == CTOSA_DTYPE_INT48) {
            int64_t v;
            memcpy(&v, d + i * 8, 8);
            v = (int64_t)((uint64_t)v << 16) >> 16;
            memcpy(d + i * 8, &v, 8);
        }
    }
}

#define MAX_SLICE 8

static uint64_t hash_bytes(const uint8_t *d, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* Fills names[] with the slice to request; returns how many (0 = no slice). */
static uint32_t pick_slice(const ctosa_graph *g, uint64_t h, const char **names) {
    if (!(h & 1) || ctosa_graph_region_count(g) == 0) return 0;
    const ctosa_region *rg = ctosa_graph_region(g, 0);
    if (rg->n_blocks == 0) return 0;
    const ctosa_block *bl = rg->blocks[0];
    uint32_t n = 0;
    for (uint32_t t = 0; t < bl->n_tensors && n < MAX_SLICE; t++)
        if ((h >> (1 + t % 48)) & 1) names[n++] = bl->tensors[t]->name;
    if (n && n < MAX_SLICE && ((h >> 52) & 7) == 0) names[n++] = names[0]; /* a repeat */
    if (n < MAX_SLICE && ((h >> 55) & 15) == 0) names[n++] = "no such tensor";
    return n;
}

FUZZ_ENTRY(tosa_exec) {
    ctosa_graph *g = NULL;
    ctosa_error *e = ctosa_read_memory(data, size, "fuzz.tosa", NULL, &g);
    if (e) {
        fuzz_drop(e);
        return 0;
    }
    if (!small_enough(g)) {
        ctosa_graph_free(g);
        return 0;
    }
    ctosa_spec spec = {0};
    spec.version = CTOSA_VERSION_1_1_DRAFT;
    spec.profiles = CTOSA_PRO_INT | CTOSA_PRO_FP;
    spec.extensions = (1ull << CTOSA_EXT_COUNT) - 1;
    spec.level = CTOSA_LEVEL_8K;
    ctosa_validate_options vopt = {.max_problems = 8};
    fuzz_drop(ctosa_validate(g, &spec, &vopt));

    ctosa_interp_options opt;
    ctosa_interp_options_init(&opt);
    opt.threads = 1;
    opt.max_memory = 16u << 20;
    opt.max_depth = 8;
    opt.max_iterations = 64;
    const char *slice[MAX_SLICE];
    opt.n_outputs = pick_slice(g, hash_bytes(data, size), slice);
    opt.outputs = opt.n_outputs ? slice : NULL;
    ctosa_interp *it = NULL;
    e = ctosa_interp_create(g, &opt, &it);
    if (!e) {
        for (uint32_t i = 0; i < ctosa_interp_input_count(it) && !e; i++) {
            ctosa_interp_tensor info;
            if (opt.n_outputs && !ctosa_interp_input_used(it, i) && (size & 1)) continue;
            if ((e = ctosa_interp_input_info(it, i, &info))) break;
            void *buf = calloc(1, info.size ? info.size : 1);
            if (!buf) break;
            size_t es = ctosa_host_elem_size(info.dtype);
            if (es && info.size == info.count * es) fill(buf, info.dtype, info.count, es, data, size);
            e = ctosa_interp_set_input(it, info.name, info.dtype, info.rank, info.shape, buf, info.size);
            free(buf);
        }
        if (!e) e = ctosa_interp_run(it);
        if (!e) {
            for (uint32_t i = 0; i < ctosa_interp_output_count(it); i++) {
                ctosa_interp_tensor info, out;
                ctosa_error *e2 = ctosa_interp_output_info(it, i, &info);
                if (!e2) e2 = ctosa_interp_get_output(it, info.name, &out);
                if (!e2) {
                    const volatile uint8_t *p = out.data;
                    uint8_t acc = 0;
                    for (uint64_t k = 0; k < out.size; k++) acc ^= p[k];
                    (void)acc;
                }
                fuzz_drop(e2);
            }
        }
    }
    fuzz_drop(e);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return 0;
}
