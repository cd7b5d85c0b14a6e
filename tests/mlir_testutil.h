/* mlir_testutil.h - checking emitted MLIR with LLVM 22's own tools
 * (mlir-22-tools): parse + validate under a spec (and rejection under a
 * wrong profile) with mlir-opt, execution through the upstream TOSA ->
 * LLVM pipeline with mlir-runner, and comparison of what @ctosa_run prints
 * with the interpreter's outputs (integers exactly, floats within 1e-4 of
 * the output's largest magnitude).
 *
 *     if (!mt_tools_found()) th_skip("mlir-opt / mlir-runner (mlir-22-tools) not installed");
 *     mt_case c;  mt_case_init(&c, graph, "label");
 *     mt_random_inputs(&c, seed);            // or mt_case_set_input
 *     bool ok = mt_check(&c, &spec, &wrong_spec, why, sizeof why);
 *     mt_case_free(&c);
 *
 * Tools are looked up in $CTOSA_MLIR_BIN, /usr/lib/llvm-22/bin, then as
 * mlir-opt-22 / mlir-runner-22 on PATH. The pass pipeline is the one
 * docs/mlir.md documents (MT_PIPELINE). */
#ifndef CTOSA_MLIR_TESTUTIL_H
#define CTOSA_MLIR_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctosa/ctosa.h"
#include "ctosa/interp.h"
#include "ctosa/mlir.h"

/* The upstream pipeline (docs/mlir.md): TOSA -> linalg/arith/tensor/scf on
 * tensors, bufferization, loops, LLVM. tosa-to-arith with
 * include-apply-rescale lowers the tosa.apply_scale that RESCALE becomes. */
#define MT_PIPELINE                                                                              \
    "builtin.module(tosa-to-mlprogram,func.func(tosa-optional-decompositions,tosa-infer-shapes," \
    "tosa-make-broadcastable,tosa-to-scf,tosa-to-linalg-named,tosa-to-linalg,"                   \
    "tosa-to-arith{include-apply-rescale=true},tosa-to-tensor,convert-elementwise-to-linalg),"   \
    "canonicalize,"                                                                              \
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops},"          \
    "buffer-deallocation-pipeline,convert-bufferization-to-memref,convert-linalg-to-loops,"      \
    "expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-math-to-llvm,"               \
    "convert-math-to-libm,convert-to-llvm,"                                                      \
    "reconcile-unrealized-casts)"

#define MT_MAX_IO 256 /* inputs / outputs of one graph under test */

static char mt_opt[1024], mt_runner[1024], mt_libs[4096];

static inline bool mt_exec_ok(const char *p) { return p[0] && access(p, X_OK) == 0; }

/* Finds mlir-opt, mlir-runner and the runner utility libraries. */
static inline bool mt_tools_found(void) {
    if (mt_opt[0]) return true;
    const char *dirs[3] = {getenv("CTOSA_MLIR_BIN"), "/usr/lib/llvm-22/bin", NULL};
    for (int i = 0; i < 2 && !mt_opt[0]; i++) {
        if (!dirs[i]) continue;
        snprintf(mt_opt, sizeof mt_opt, "%s/mlir-opt", dirs[i]);
        snprintf(mt_runner, sizeof mt_runner, "%s/mlir-runner", dirs[i]);
        if (!mt_exec_ok(mt_opt) || !mt_exec_ok(mt_runner)) mt_opt[0] = 0;
    }
    if (!mt_opt[0]) return false;
    /* the libraries live in ../lib of the tools' folder */
    char lib[1024];
    snprintf(lib, sizeof lib, "%s", mt_opt);
    char *slash = strrchr(lib, '/');
    if (slash) *slash = 0;
    slash = strrchr(lib, '/');
    if (slash) *slash = 0;
    const char *sfx[2] = {".so", ".so.22.1"};
    for (int k = 0; k < 2; k++) {
        char a[1100], b[1100];
        snprintf(a, sizeof a, "%s/lib/libmlir_runner_utils%s", lib, sfx[k]);
        snprintf(b, sizeof b, "%s/lib/libmlir_c_runner_utils%s", lib, sfx[k]);
        if (access(a, R_OK) == 0 && access(b, R_OK) == 0) {
            snprintf(mt_libs, sizeof mt_libs, "%s,%s", a, b);
            return true;
        }
    }
    mt_opt[0] = 0;
    return false;
}

/* --tosa-attach-target options of a spec. */
static inline void mt_target_args(const ctosa_spec *spec, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "--tosa-attach-target=\"specification_version=%s profiles=",
                                spec->version.minor >= 1 ? "1.1.draft" : "1.0");
    const char *sep = "";
    if (spec->profiles & CTOSA_PRO_INT) n += (size_t)snprintf(buf + n, cap - n, "pro_int"), sep = ",";
    if (spec->profiles & CTOSA_PRO_FP) n += (size_t)snprintf(buf + n, cap - n, "%spro_fp", sep);
    sep = " extensions=";
    for (int e = 0; e < 64 && n < cap; e++) {
        if (!(spec->extensions & ((uint64_t)1 << e))) continue;
        const char *tok = ctosa_ext_token((ctosa_ext)e);
        if (!tok) continue;
        /* ctosa's short tokens; MLIR spells these two out */
        if (!strcmp(tok, "cf")) tok = "controlflow";
        else if (!strcmp(tok, "var")) tok = "variable";
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, tok);
        sep = ",";
    }
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, " level=%s\"",
                              spec->level == CTOSA_LEVEL_NONE ? "none" : "8k");
}

/* Runs a shell command; its stdout (when out is set, malloc'd) and exit code. */
static inline int mt_sh(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
            }
        }
    }
    int st = pclose(p);
    if (buf) buf[len] = 0;
    if (out) *out = buf;
    else free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One graph under test: inputs (host encoding) and the interpreter's outputs. */
typedef struct mt_case {
    const ctosa_graph *g;
    const char *label;
    uint32_t n_in;
    ctosa_mlir_input in[MT_MAX_IO];
    int64_t shapes[MT_MAX_IO][8];
    void *data[MT_MAX_IO];
} mt_case;

static inline void mt_case_init(mt_case *c, const ctosa_graph *g, const char *label) {
    memset(c, 0, sizeof *c);
    c->g = g;
    c->label = label;
}

static inline void mt_case_free(mt_case *c) {
    for (uint32_t i = 0; i < c->n_in; i++) free(c->data[i]);
    c->n_in = 0;
}

static inline uint64_t mt_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Deterministic values for every main input: floats in [-2, 2), integers
 * over [lo, hi] of the dtype (int_range > 0 narrows them to
 * [0, int_range], e.g. for indices), bools 0/1. */
static inline ctosa_error *mt_random_inputs(mt_case *c, uint64_t seed, int64_t int_range) {
    const ctosa_region *r = ctosa_graph_region(c->g, 0);
    const ctosa_block *b = r->blocks[0];
    uint64_t s = seed * 2654435761u + 12345;
    for (uint32_t i = 0; i < b->n_inputs && i < MT_MAX_IO; i++) {
        const ctosa_tensor *t = ctosa_block_find_tensor(c->g, b, b->inputs[i]);
        if (!t || t->rank > 8) return ctosa_error_new(CTOSA_ERR_USAGE, "input %u", i);
        uint64_t n = 1;
        for (uint32_t d = 0; d < t->rank; d++) n *= (uint64_t)(c->shapes[i][d] = t->shape[d]);
        size_t es = ctosa_host_elem_size(t->dtype);
        uint8_t *p = malloc(n * es + 1);
        if (!p) return ctosa_error_new(CTOSA_ERR_NOMEM, "out of memory");
        int bits = ctosa_dtype_bits(t->dtype);
        for (uint64_t k = 0; k < n; k++) {
            uint64_t u = mt_rand(&s);
            double f = ((double)(u >> 11) / 9007199254740992.0) * 4.0 - 2.0;
            switch (t->dtype) {
            case CTOSA_DTYPE_FP32: {
                float v = (float)f;
                memcpy(p + 4 * k, &v, 4);
                break;
            }
            case CTOSA_DTYPE_FP16:
            case CTOSA_DTYPE_BF16: {
                /* a few mantissa bits, exact in both */
                float v = (float)(round(f * 64) / 64);
                uint32_t bitsf;
                memcpy(&bitsf, &v, 4);
                uint16_t h;
                if (t->dtype == CTOSA_DTYPE_BF16) {
                    h = (uint16_t)(bitsf >> 16);
                } else {
                    int ex = (int)((bitsf >> 23) & 255) - 127 + 15;
                    h = (uint16_t)(((bitsf >> 16) & 0x8000) |
                                   (v == 0 ? 0 : ((unsigned)ex << 10) | ((bitsf >> 13) & 1023)));
                }
                memcpy(p + 2 * k, &h, 2);
                break;
            }
            case CTOSA_DTYPE_BOOL: p[k] = (uint8_t)(u & 1); break;
            default: {
                int64_t lo = bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
                int64_t hi = bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
                if (int_range > 0) lo = 0, hi = int_range;
                uint64_t span = (uint64_t)hi - (uint64_t)lo + 1; /* 0: all 64 bits */
                int64_t v = span ? (int64_t)((uint64_t)lo + u % span) : (int64_t)u;
                if (es == 1) p[k] = (uint8_t)(int8_t)v;
                else if (es == 2) {
                    int16_t x = (int16_t)v;
                    memcpy(p + 2 * k, &x, 2);
                } else if (es == 4) {
                    int32_t x = (int32_t)v;
                    memcpy(p + 4 * k, &x, 4);
                } else memcpy(p + 8 * k, &v, 8);
            }
            }
        }
        c->in[i].name = t->name;
        c->in[i].dtype = t->dtype;
        c->in[i].rank = t->rank;
        c->in[i].shape = c->shapes[i];
        c->in[i].data = p;
        c->in[i].size = n * es;
        c->data[i] = p;
        c->n_in = i + 1;
    }
    return NULL;
}

/* Writes the case as MLIR into path (with @ctosa_run when run is set). */
static inline ctosa_error *mt_write(const mt_case *c, const char *path, bool run) {
    ctosa_mlir_options o;
    ctosa_mlir_options_init(&o);
    o.source_name = c->label;
    if (run) {
        o.run = true;
        o.inputs = c->in;
        o.n_inputs = c->n_in;
    }
    return ctosa_mlir_write_file(c->g, path, &o);
}

/* mlir-opt validation of path under spec: exit code, first error line in why. */
static inline int mt_validate(const char *path, const ctosa_spec *spec, char *why, size_t cap) {
    char args[1024], cmd[4096];
    mt_target_args(spec, args, sizeof args);
    snprintf(cmd, sizeof cmd, "'%s' %s --tosa-validate=strict-op-spec-alignment '%s' -o /dev/null 2>&1",
             mt_opt, args, path);
    char *out = NULL;
    int rc = mt_sh(cmd, &out);
    if (why && cap) {
        snprintf(why, cap, "%s", out ? out : "");
        char *nl = strchr(why, '\n');
        if (nl) *nl = 0;
    }
    free(out);
    return rc;
}

/* The integers of every printMemrefI64 block of runner output, in order. */
typedef struct mt_printed {
    uint32_t n;
    int64_t *v[MT_MAX_IO];
    uint64_t count[MT_MAX_IO];
} mt_printed;

static inline void mt_printed_free(mt_printed *p) {
    for (uint32_t i = 0; i < p->n; i++) free(p->v[i]);
    p->n = 0;
}

static inline void mt_parse(const char *text, mt_printed *p) {
    memset(p, 0, sizeof *p);
    const char *s = text;
    while (p->n < MT_MAX_IO && (s = strstr(s, "data ="))) {
        s += 6;
        const char *end = strstr(s, "Unranked Memref");
        if (!end) end = s + strlen(s);
        uint64_t cap = 1024, n = 0;
        int64_t *v = malloc(cap * sizeof *v);
        while (v && s < end) {
            if ((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')) {
                char *e;
                long long x = strtoll(s, &e, 10);
                if (n == cap) {
                    int64_t *nv = realloc(v, (cap *= 2) * sizeof *v);
                    if (!nv) {
                        free(v);
                        v = NULL;
                        break;
                    }
                    v = nv;
                }
                v[n++] = x;
                s = e;
            } else {
                s++;
            }
        }
        p->v[p->n] = v;
        p->count[p->n++] = n;
        s = end;
    }
}

/* Element k of an interpreter output as the integer @ctosa_run prints. */
static inline int64_t mt_host_int(const ctosa_interp_tensor *t, uint64_t k) {
    const uint8_t *p = (const uint8_t *)t->data;
    switch (ctosa_host_elem_size(t->dtype)) {
    case 1: /* INT8, INT4 signed; BOOL and FP8 bits unsigned */
        return t->dtype == CTOSA_DTYPE_INT8 || t->dtype == CTOSA_DTYPE_INT4 ? (int64_t)(int8_t)p[k]
                                                                            : (int64_t)p[k];
    case 2: {
        uint16_t u;
        memcpy(&u, p + 2 * k, 2);
        return t->dtype == CTOSA_DTYPE_INT16 ? (int64_t)(int16_t)u : (int64_t)u;
    }
    case 4: {
        uint32_t u;
        memcpy(&u, p + 4 * k, 4);
        return t->dtype == CTOSA_DTYPE_INT32 ? (int64_t)(int32_t)u : (int64_t)u;
    }
    default: {
        int64_t v;
        memcpy(&v, p + 8 * k, 8);
        return v;
    }
    }
}

static inline bool mt_is_float(ctosa_dtype t) {
    return t == CTOSA_DTYPE_FP32 || t == CTOSA_DTYPE_FP16 || t == CTOSA_DTYPE_BF16;
}

static inline double mt_float_of(ctosa_dtype t, uint64_t bits) {
    if (t == CTOSA_DTYPE_FP32) {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint32_t u = t == CTOSA_DTYPE_BF16 ? (uint32_t)bits << 16 : 0;
    if (t == CTOSA_DTYPE_FP16) {
        int s = (int)(bits >> 15) & 1, ex = (int)(bits >> 10) & 31, m = (int)bits & 1023;
        double v = ex == 0 ? ldexp(m, -24) : ex == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, ex - 25);
        return s ? -v : v;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Runs the interpreter on the case's inputs and compares with what
 * mlir-runner printed. */
static inline bool mt_compare(const mt_case *c, const mt_printed *pr, double *max_rel, char *why,
                              size_t cap) {
    ctosa_interp *it = NULL;
    ctosa_error *e = ctosa_interp_create(c->g, NULL, &it);
    for (uint32_t i = 0; !e && i < c->n_in; i++)
        e = ctosa_interp_set_input(it, c->in[i].name, c->in[i].dtype, c->in[i].rank, c->in[i].shape,
                                   c->in[i].data, c->in[i].size);
    if (!e) e = ctosa_interp_run(it);
    if (e) {
        snprintf(why, cap, "interpreter: %s", ctosa_error_message(e));
        ctosa_error_free(e);
        ctosa_interp_free(it);
        return false;
    }
    bool ok = true;
    uint32_t n_out = ctosa_interp_output_count(it);
    if (n_out != pr->n) {
        snprintf(why, cap, "mlir-runner printed %u outputs, the graph has %u", pr->n, n_out);
        ok = false;
    }
    *max_rel = 0;
    for (uint32_t o = 0; ok && o < n_out; o++) {
        ctosa_interp_tensor info, t;
        ctosa_error_free(ctosa_interp_output_info(it, o, &info));
        if ((e = ctosa_interp_get_output(it, info.name, &t))) {
            snprintf(why, cap, "output %u: %s", o, ctosa_error_message(e));
            ctosa_error_free(e);
            ok = false;
            break;
        }
        if (pr->count[o] != t.count) {
            snprintf(why, cap, "output '%s': %llu values printed, %llu expected", t.name,
                     (unsigned long long)pr->count[o], (unsigned long long)t.count);
            ok = false;
            break;
        }
        if (mt_is_float(t.dtype)) {
            /* fp32: 1e-4 of the magnitude; fp16 / bf16 outputs are rounded
             * to 11 / 8 bits, so a different accumulation order may move
             * them by one unit of the magnitude's last place */
            double tol = t.dtype == CTOSA_DTYPE_FP16   ? ldexp(1, -10)
                         : t.dtype == CTOSA_DTYPE_BF16 ? ldexp(1, -7)
                                                       : 1e-4;
            double mag = 0;
            for (uint64_t k = 0; k < t.count; k++) {
                double r = mt_float_of(t.dtype, (uint64_t)mt_host_int(&t, k));
                if (isfinite(r) && fabs(r) > mag) mag = fabs(r);
            }
            for (uint64_t k = 0; k < t.count && ok; k++) {
                double r = mt_float_of(t.dtype, (uint64_t)mt_host_int(&t, k));
                double m = mt_float_of(t.dtype, (uint64_t)pr->v[o][k]);
                if (isnan(r) && isnan(m)) continue;
                if (isinf(r) || isinf(m)) {
                    if (r != m) ok = false;
                } else {
                    double rel = fabs(r - m) / (mag > 0 ? mag : 1);
                    if (rel > *max_rel) *max_rel = rel;
                    if (rel > tol) ok = false;
                }
                if (!ok)
                    snprintf(why, cap, "output '%s'[%llu]: ctosa %.9g, MLIR %.9g (magnitude %.3g)", t.name,
                             (unsigned long long)k, r, m, mag);
            }
        } else {
            for (uint64_t k = 0; k < t.count && ok; k++) {
                int64_t r = mt_host_int(&t, k);
                if (r != pr->v[o][k]) {
                    snprintf(why, cap, "output '%s'[%llu]: ctosa %lld, MLIR %lld", t.name,
                             (unsigned long long)k, (long long)r, (long long)pr->v[o][k]);
                    ok = false;
                }
            }
        }
    }
    ctosa_interp_free(it);
    return ok;
}

/* Lowers path (written with @ctosa_run) through MT_PIPELINE and runs it. */
static inline int mt_execute(const char *path, mt_printed *pr, char *why, size_t cap) {
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "'%s' --pass-pipeline='" MT_PIPELINE "' '%s' 2>&1 >'%s.ll' && "
             "'%s' -e ctosa_run -entry-point-result=void -shared-libs=%s '%s.ll' 2>&1",
             mt_opt, path, path, mt_runner, mt_libs, path);
    char *out = NULL;
    int rc = mt_sh(cmd, &out);
    if (rc != 0) {
        snprintf(why, cap, "%.600s", out ? out : "");
    } else {
        mt_parse(out ? out : "", pr);
    }
    free(out);
    char ll[4200];
    snprintf(ll, sizeof ll, "%s.ll", path);
    unlink(ll);
    return rc;
}

#endif
