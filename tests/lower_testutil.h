/* lower_testutil.h - shared pieces of the lowering acceptance tests
 * (test_onnx_nodes.c, test_lower_models.c): reading .pb / .npy arrays,
 * feeding a lowered partition to the interpreter, comparing its outputs
 * with reference arrays, and checking that a lowering summary accounts for
 * every ONNX node exactly once.
 *
 *     npy_array want;  lt_load_array("output_0.pb", &want);
 *     char why[512];
 *     bool ok = lt_compare(&got, &want, 1e-3, 1e-5, NULL, why, sizeof why);
 */
#ifndef CTOSA_LOWER_TESTUTIL_H
#define CTOSA_LOWER_TESTUTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctosa/ctosa.h"
#include "ctosa/interp.h"
#include "ctosa/lower.h"
#include "ctosa/onnx.h"
#include "tensorfile/tensorfile.h"
#include "onnx/onnx_tensor.h"
#include "util/util.h"

static inline bool lt_ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Reads FILE (.pb TensorProto, anything else .npy) into a malloc'd array. */
static inline ctosa_error *lt_load_array(const char *file, npy_array *a) {
    return npy_read_tensor_file(file, a);
}

/* IEEE half / bfloat16 bits to double. */
static inline double lt_half(uint16_t h) {
    int s = h >> 15, ex = (h >> 10) & 31, m = h & 1023;
    double v;
    if (ex == 0) v = ldexp(m, -24);
    else if (ex == 31) v = m ? NAN : INFINITY;
    else v = ldexp(m + 1024, ex - 25);
    return s ? -v : v;
}
static inline double lt_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of an array as double (ints exactly up to 2^53). */
static inline double lt_npy_at(const npy_array *a, uint64_t i) {
    const uint8_t *p = (const uint8_t *)a->data + i * a->itemsize;
    switch (a->kind) {
    case 'f':
        if (a->itemsize == 4) {
            float f;
            memcpy(&f, p, 4);
            return f;
        }
        if (a->itemsize == 8) {
            double d;
            memcpy(&d, p, 8);
            return d;
        }
        if (a->itemsize == 2) {
            uint16_t h;
            memcpy(&h, p, 2);
            return lt_half(h);
        }
        break;
    case 'B': {
        uint16_t h;
        memcpy(&h, p, 2);
        return lt_bf16(h);
    }
    case 'b': return *p ? 1 : 0;
    case 'i':
        switch (a->itemsize) {
        case 1: return (int8_t)*p;
        case 2: {
            int16_t v;
            memcpy(&v, p, 2);
            return v;
        }
        case 4: {
            int32_t v;
            memcpy(&v, p, 4);
            return v;
        }
        case 8: {
            int64_t v;
            memcpy(&v, p, 8);
            return (double)v;
        }
        }
        break;
    case 'u':
        switch (a->itemsize) {
        case 1: return *p;
        case 2: {
            uint16_t v;
            memcpy(&v, p, 2);
            return v;
        }
        case 4: {
            uint32_t v;
            memcpy(&v, p, 4);
            return v;
        }
        case 8: {
            uint64_t v;
            memcpy(&v, p, 8);
            return (double)v;
        }
        }
        break;
    }
    return NAN;
}

static inline bool lt_same_shape(uint32_t ra, const int64_t *a, uint32_t rb, const int64_t *b) {
    if (ra != rb) return false;
    for (uint32_t i = 0; i < ra; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static inline void lt_shape_str(uint32_t rank, const int64_t *shape, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Copies an interpreter tensor (host encoding) into a malloc'd array of
 * the matching numpy kind. */
static inline ctosa_error *lt_host_to_npy(const ctosa_interp_tensor *t, npy_array *a) {
    memset(a, 0, sizeof *a);
    switch (t->dtype) {
    case CTOSA_DTYPE_BOOL:
        a->kind = 'b';
        a->itemsize = 1;
        break;
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8:
        a->kind = 'i';
        a->itemsize = 1;
        break;
    case CTOSA_DTYPE_INT16:
        a->kind = 'i';
        a->itemsize = 2;
        break;
    case CTOSA_DTYPE_INT32:
        a->kind = 'i';
        a->itemsize = 4;
        break;
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE:
        a->kind = 'i';
        a->itemsize = 8;
        break;
    case CTOSA_DTYPE_FP32:
        a->kind = 'f';
        a->itemsize = 4;
        break;
    case CTOSA_DTYPE_FP16:
        a->kind = 'f';
        a->itemsize = 2;
        break;
    case CTOSA_DTYPE_BF16:
        a->kind = 'B';
        a->itemsize = 2;
        break;
    default:
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "output '%s': dtype %s not compared", t->name,
                               ctosa_dtype_short(t->dtype));
    }
    if (t->rank > NPY_MAX_RANK)
        return ctosa_error_new(CTOSA_ERR_LIMIT, "output '%s': rank %u", t->name, t->rank);
    a->rank = t->rank;
    for (uint32_t i = 0; i < t->rank; i++) a->shape[i] = t->shape[i];
    a->count = t->count;
    if (t->size != t->count * a->itemsize)
        return ctosa_error_new(CTOSA_ERR_INVALID, "output '%s': %llu bytes for %llu elements", t->name,
                               (unsigned long long)t->size, (unsigned long long)t->count);
    a->data = malloc(t->size ? (size_t)t->size : 1);
    if (!a->data) return ctosa_error_nomem();
    if (t->size) memcpy(a->data, t->data, (size_t)t->size);
    return NULL;
}

/* Compares a computed array with the reference. Floats (either side a
 * float type): |got - want| <= atol + rtol * |want|, NaN equals NaN,
 * infinities must match; integers and bools exactly. Shapes must be equal
 * (a scalar and a one-element [1] count as equal). On mismatch writes a
 * one-line reason naming the first bad element, the number of bad elements
 * and the largest difference. *max_abs (may be NULL) receives the largest
 * absolute difference seen. */
static inline bool lt_compare(const npy_array *got, const npy_array *want, double rtol, double atol,
                              double *max_abs, char *why, size_t cap) {
    char sa[128], sb[128];
    if (max_abs) *max_abs = 0;
    if (!lt_same_shape(got->rank, got->shape, want->rank, want->shape) &&
        !(got->count == 1 && want->count == 1)) {
        lt_shape_str(got->rank, got->shape, sa, sizeof sa);
        lt_shape_str(want->rank, want->shape, sb, sizeof sb);
        snprintf(why, cap, "shape %s, expected %s", sa, sb);
        return false;
    }
    bool is_float = got->kind == 'f' || got->kind == 'B' || want->kind == 'f' || want->kind == 'B';
    uint64_t bad = 0, first = 0;
    double worst = 0, fg = 0, fw = 0;
    for (uint64_t i = 0; i < want->count; i++) {
        double g = lt_npy_at(got, i), w = lt_npy_at(want, i);
        bool ok;
        if (is_float) {
            if (isnan(w) || isnan(g)) ok = isnan(w) && isnan(g);
            else if (isinf(w) || isinf(g)) ok = g == w;
            else {
                double d = fabs(g - w);
                if (d > worst) worst = d;
                ok = d <= atol + rtol * fabs(w);
            }
        } else {
            ok = g == w;
            if (fabs(g - w) > worst) worst = fabs(g - w);
        }
        if (!ok && bad++ == 0) first = i, fg = g, fw = w;
    }
    if (max_abs) *max_abs = worst;
    if (bad) {
        snprintf(why, cap,
                 "%llu of %llu elements differ (max |diff| %.3g); first at %llu: "
                 "got %.9g, expected %.9g",
                 (unsigned long long)bad, (unsigned long long)want->count, worst, (unsigned long long)first,
                 fg, fw);
        return false;
    }
    return true;
}

/* Feeds array a to interpreter input `name`, converting to the declared
 * dtype (npy_to_host: floats to any float type, ints when values fit). */
static inline ctosa_error *lt_feed(ctosa_interp *it, const char *name, const npy_array *a) {
    uint32_t n = ctosa_interp_input_count(it);
    for (uint32_t i = 0; i < n; i++) {
        ctosa_interp_tensor info;
        ctosa_error *e = ctosa_interp_input_info(it, i, &info);
        if (e) return e;
        if (strcmp(info.name, name) != 0) continue;
        /* A scalar stored as [1] (or the reverse) has the same data. */
        if (!lt_same_shape(info.rank, info.shape, a->rank, a->shape) && info.count != a->count) {
            char sa[128], sb[128];
            lt_shape_str(info.rank, info.shape, sa, sizeof sa);
            lt_shape_str(a->rank, a->shape, sb, sizeof sb);
            return ctosa_error_new(CTOSA_ERR_INVALID, "input '%s': declared %s, data %s", name, sa, sb);
        }
        /* uint8 partition I/O travels as the same bits in an INT8 tensor
         * (TOSA reads it through RESCALE input_unsigned) */
        if (a->kind == 'u' && a->itemsize == 1 && info.dtype == CTOSA_DTYPE_INT8)
            return ctosa_interp_set_input(it, name, info.dtype, info.rank, info.shape, a->data, a->count);
        void *host = NULL;
        uint64_t size = 0;
        e = npy_to_host(a, info.dtype, name, &host, &size);
        if (e) return e;
        e = ctosa_interp_set_input(it, name, info.dtype, info.rank, info.shape, host, size);
        free(host);
        return e;
    }
    return ctosa_error_new(CTOSA_ERR_INVALID, "partition has no input '%s'", name);
}

/* The identifier a summary uses for ONNX node n: its name, or
 * "<op_type>#<index>" when unnamed. */
static inline const char *lt_node_id(const ctosa_onnx_node *n, char *buf, size_t cap) {
    if (n->name && n->name[0]) return n->name;
    snprintf(buf, cap, "%s#%u", n->op_type, n->index);
    return buf;
}

/* Checks the node accounting of a summary: every id appears in at most one
 * partition or fallback entry, every fallback has a code and a reason,
 * every node of g (the model's main graph, when given: pass NULL for models
 * with functions, whose nodes are inlined under other names) appears, and
 * the counts add up. Returns false with a reason. */
static inline bool lt_check_accounting_graph(const ctosa_lower_summary *s, const ctosa_onnx_graph *g,
                                             char *why, size_t cap) {
    strmap seen;
    strmap_init(&seen);
    bool ok = true;
    uint32_t in_parts = 0;
    for (uint32_t p = 0; ok && p < s->n_partitions; p++) {
        const ctosa_lower_partition *pt = &s->partitions[p];
        if (!pt->graph) {
            snprintf(why, cap, "partition %u has no graph", p);
            ok = false;
        }
        for (uint32_t i = 0; ok && i < pt->n_nodes; i++, in_parts++) {
            if (strmap_has(&seen, pt->nodes[i])) {
                snprintf(why, cap, "node '%s' appears twice (partition %u)", pt->nodes[i], p);
                ok = false;
            } else strmap_put(&seen, pt->nodes[i], (void *)1);
        }
    }
    for (uint32_t f = 0; ok && f < s->n_fallback; f++) {
        const ctosa_lower_fallback *fb = &s->fallback[f];
        if (!fb->node || strmap_has(&seen, fb->node)) {
            snprintf(why, cap, "fallback node '%s' appears twice", fb->node ? fb->node : "(null)");
            ok = false;
        } else if (!fb->code || !fb->code[0] || !fb->reason || !fb->reason[0]) {
            snprintf(why, cap, "fallback node '%s' (%s) has no reason code or text", fb->node,
                     fb->op_type ? fb->op_type : "?");
            ok = false;
        } else strmap_put(&seen, fb->node, (void *)1);
    }
    /* Every node of the ONNX graph (when given) is in the summary. */
    for (uint32_t i = 0; ok && g && i < g->n_nodes; i++) {
        char buf[300];
        const char *id = lt_node_id(&g->nodes[i], buf, sizeof buf);
        if (!strmap_has(&seen, id)) {
            snprintf(why, cap, "node '%s' (%s) is in no partition and not in the fallback list", id,
                     g->nodes[i].op_type);
            ok = false;
        }
    }
    if (ok && (in_parts + s->n_fallback > s->nodes_total ||
               s->nodes_delegated + s->n_fallback != s->nodes_total || in_parts > s->nodes_delegated)) {
        snprintf(why, cap,
                 "counts do not add up: total %u, delegated %u, in partitions %u, "
                 "fallback %u",
                 s->nodes_total, s->nodes_delegated, in_parts, s->n_fallback);
        ok = false;
    }
    strmap_free(&seen);
    return ok;
}

/* The same without the per-node check against the ONNX graph. */
static inline bool lt_check_accounting(const ctosa_lower_summary *s, char *why, size_t cap) {
    return lt_check_accounting_graph(s, NULL, why, cap);
}

/* Named arrays: graph inputs and partition outputs as they become known. */
typedef struct lt_values {
    uint32_t n, cap;
    char **names;
    npy_array *arrays;
} lt_values;

static inline void lt_values_free(lt_values *v) {
    for (uint32_t i = 0; i < v->n; i++) {
        free(v->names[i]);
        npy_free(&v->arrays[i]);
    }
    free(v->names);
    free(v->arrays);
    memset(v, 0, sizeof *v);
}

static inline const npy_array *lt_values_get(const lt_values *v, const char *name) {
    for (uint32_t i = 0; i < v->n; i++)
        if (strcmp(v->names[i], name) == 0) return &v->arrays[i];
    return NULL;
}

/* Adds (or replaces) name; takes ownership of *a. */
static inline ctosa_error *lt_values_put(lt_values *v, const char *name, npy_array *a) {
    for (uint32_t i = 0; i < v->n; i++)
        if (strcmp(v->names[i], name) == 0) {
            npy_free(&v->arrays[i]);
            v->arrays[i] = *a;
            return NULL;
        }
    if (v->n == v->cap) {
        uint32_t nc = v->cap ? v->cap * 2 : 8;
        char **nn = realloc(v->names, nc * sizeof *nn);
        if (!nn) {
            npy_free(a);
            return ctosa_error_nomem();
        }
        v->names = nn;
        npy_array *na = realloc(v->arrays, nc * sizeof *na);
        if (!na) {
            npy_free(a);
            return ctosa_error_nomem();
        }
        v->arrays = na;
        v->cap = nc;
    }
    v->names[v->n] = strdup(name);
    if (!v->names[v->n]) {
        npy_free(a);
        return ctosa_error_nomem();
    }
    v->arrays[v->n++] = *a;
    return NULL;
}

/* g written to a flatbuffer and read back: the graph `ctosa run` and
 * `ctosa check` see in the .tosa file. *buf holds the bytes *back reads
 * from; free both (ctosa_graph_free, free) after *back. */
static inline ctosa_error *lt_roundtrip(const ctosa_graph *g, ctosa_graph **back, void **buf) {
    size_t size = 0;
    *back = NULL;
    *buf = NULL;
    ctosa_error *e = ctosa_write_memory(g, NULL, buf, &size);
    if (!e) e = ctosa_read_memory(*buf, size, "partition", NULL, back);
    return e;
}

/* Plans g on the interpreter and runs it once with every input zero: a
 * graph that validates must also run. A run that stops on a
 * data-dependent REQUIRE (CTOSA_ERR_INVALID, e.g. a division by the zero
 * input) still shows the graph was accepted; any other error is returned. */
static inline ctosa_error *lt_run_zeros(const ctosa_graph *g) {
    ctosa_interp_options io;
    ctosa_interp_options_init(&io);
    io.threads = 1;
    io.no_weight_cache = true;
    ctosa_interp *it = NULL;
    ctosa_error *e = ctosa_interp_create(g, &io, &it);
    uint32_t n = e ? 0 : ctosa_interp_input_count(it);
    for (uint32_t i = 0; !e && i < n; i++) {
        ctosa_interp_tensor info;
        if ((e = ctosa_interp_input_info(it, i, &info))) break;
        void *z = calloc(1, info.size ? (size_t)info.size : 1);
        if (!z) {
            e = ctosa_error_nomem();
            break;
        }
        e = ctosa_interp_set_input(it, info.name, info.dtype, info.rank, info.shape, z, info.size);
        free(z);
    }
    if (!e) e = ctosa_interp_run(it);
    if (e && ctosa_error_code(e) == CTOSA_ERR_INVALID) {
        ctosa_error_free(e);
        e = NULL;
    }
    ctosa_interp_free(it);
    return e;
}

typedef enum lt_run_status {
    LT_RUN_OK = 0,
    LT_RUN_MISSING_INPUT, /* a partition input is neither known nor produced earlier */
    LT_RUN_ERROR          /* the interpreter refused or failed */
} lt_run_status;

/* Runs every partition of s in id order (topological) on the interpreter,
 * taking boundary inputs from vals and adding every partition output to
 * vals under its ONNX name. threads: interpreter worker threads. Each
 * partition runs as written to a .tosa file and read back (lt_roundtrip),
 * the form users run. */
static inline lt_run_status lt_run_partitions(const ctosa_lower_summary *s, lt_values *vals, int threads,
                                              char *why, size_t cap) {
    for (uint32_t p = 0; p < s->n_partitions; p++) {
        const ctosa_lower_partition *pt = &s->partitions[p];
        for (uint32_t i = 0; i < pt->n_inputs; i++)
            if (!lt_values_get(vals, pt->inputs[i].name)) {
                snprintf(why, cap, "partition %u input '%s' is not available", p, pt->inputs[i].name);
                return LT_RUN_MISSING_INPUT;
            }
        ctosa_interp_options io;
        ctosa_interp_options_init(&io);
        io.threads = threads;
        ctosa_interp *it = NULL;
        ctosa_graph *back = NULL;
        void *buf = NULL;
        ctosa_error *e = lt_roundtrip(pt->graph, &back, &buf);
        if (!e) e = ctosa_interp_create(back, &io, &it);
        for (uint32_t i = 0; !e && i < pt->n_inputs; i++)
            e = lt_feed(it, pt->inputs[i].name, lt_values_get(vals, pt->inputs[i].name));
        if (!e) e = ctosa_interp_run(it);
        for (uint32_t i = 0; !e && i < pt->n_outputs; i++) {
            ctosa_interp_tensor t;
            npy_array a;
            e = ctosa_interp_get_output(it, pt->outputs[i].name, &t);
            if (!e) e = lt_host_to_npy(&t, &a);
            if (!e && t.dtype == CTOSA_DTYPE_INT8 && strcmp(pt->outputs[i].dtype, "uint8") == 0)
                a.kind = 'u'; /* uint8 output: INT8 bits (see lt_feed) */
            if (!e) e = lt_values_put(vals, pt->outputs[i].name, &a);
        }
        ctosa_interp_free(it);
        ctosa_graph_free(back);
        free(buf);
        if (e) {
            snprintf(why, cap, "partition %u: %s", p, ctosa_error_message(e));
            ctosa_error_free(e);
            return LT_RUN_ERROR;
        }
    }
    return LT_RUN_OK;
}

/* Validates every partition graph of s under spec, as built and after a
 * round trip through the flatbuffer writer and reader (what `ctosa check`
 * sees in the written .tosa file), then runs the read-back graph once on
 * zero inputs (lt_run_zeros): whatever the checker accepts, the
 * interpreter must run. False with the first problem lines in why. */
static inline bool lt_validate_all(const ctosa_lower_summary *s, const ctosa_spec *spec, char *why,
                                   size_t cap) {
    for (uint32_t p = 0; p < s->n_partitions; p++) {
        if (!s->partitions[p].graph) continue; /* lt_check_accounting reports it */
        const char *stage = "as built";
        ctosa_error *e = ctosa_validate(s->partitions[p].graph, spec, NULL);
        void *buf = NULL;
        ctosa_graph *back = NULL;
        if (!e) {
            stage = "writing and reading back";
            e = lt_roundtrip(s->partitions[p].graph, &back, &buf);
        }
        if (!e) {
            stage = "after write/read";
            e = ctosa_validate(back, spec, NULL);
        }
        if (!e) {
            stage = "running the file";
            e = lt_run_zeros(back);
        }
        ctosa_graph_free(back);
        free(buf);
        if (e) {
            snprintf(why, cap, "partition %u (%s): %s", p, stage, ctosa_error_message(e));
            ctosa_error_free(e);
            return false;
        }
    }
    return true;
}

/* Lowers model under spec with opt (NULL: defaults, nothing written) and
 * validates every partition (lt_validate_all). *res is the result, NULL
 * when lowering itself failed; false with the lowering error or the first
 * validation problem in why. */
static inline bool lt_lower(const char *model, const ctosa_spec *spec, const ctosa_lower_options *opt,
                            ctosa_lower_result **res, char *why, size_t cap) {
    ctosa_lower_options dflt;
    if (!opt) {
        ctosa_lower_options_init(&dflt);
        dflt.no_report = true;
        dflt.no_partitioned_onnx = true;
        opt = &dflt;
    }
    *res = NULL;
    ctosa_error *e = ctosa_lower_file(model, spec, opt, res);
    if (e) {
        snprintf(why, cap, "%s", ctosa_error_message(e));
        ctosa_error_free(e);
        ctosa_lower_result_free(*res);
        *res = NULL;
        return false;
    }
    return lt_validate_all(ctosa_lower_result_summary(*res), spec, why, cap);
}

/* Runs the single partition of s on dir/cpu_<input>.npy (the value the CPU
 * side hands it) and compares its first output with dir/ref_output_0.npy
 * exactly; false with the problem in why. */
static inline bool lt_run_single_vs_ref(const ctosa_lower_summary *s, const char *dir, char *why,
                                        size_t cap) {
    char f[4200];
    const ctosa_lower_io *in = &s->partitions[0].inputs[0];
    lt_values vals = {0};
    npy_array a, want = {0};
    bool ok = false;
    ctosa_error *e;
    snprintf(f, sizeof f, "%s/cpu_%s.npy", dir, in->name);
    if (!(e = lt_load_array(f, &a)) && !(e = lt_values_put(&vals, in->name, &a))) {
        snprintf(f, sizeof f, "%s/ref_output_0.npy", dir);
        if (lt_run_partitions(s, &vals, 1, why, cap) != LT_RUN_OK) {
            /* why is set */
        } else if (!(e = lt_load_array(f, &want))) {
            const npy_array *got = lt_values_get(&vals, s->partitions[0].outputs[0].name);
            if (!got) snprintf(why, cap, "no output");
            else ok = lt_compare(got, &want, 0, 0, NULL, why, cap);
        }
    }
    if (e) {
        snprintf(why, cap, "%s", ctosa_error_message(e));
        ctosa_error_free(e);
    }
    npy_free(&want);
    lt_values_free(&vals);
    return ok;
}

#endif
