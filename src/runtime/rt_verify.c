/* rt_verify.c - comparing a runtime output with an expected array
 * (ctosa_verify_compare): float error relative to the output's magnitude,
 * quantized outputs in quantization steps, integers exactly, and top-k
 * agreement for classifier-shaped outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

void ctosa_verify_options_init(ctosa_verify_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->rtol = 1e-4;
    opt->max_steps = 3;
    opt->step_fraction = 0.99;
    opt->top_k = 5;
    opt->min_topk = 1.0;
}

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_to_double(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Element i of an array in numpy layout (kind, itemsize). */
static bool elem(char kind, uint32_t size, const void *p, uint64_t i, double *out) {
    const uint8_t *b = (const uint8_t *)p + i * size;
    switch (kind) {
    case 'f':
        if (size == 4) {
            float f;
            memcpy(&f, b, 4);
            *out = f;
            return true;
        }
        if (size == 8) {
            double d;
            memcpy(&d, b, 8);
            *out = d;
            return true;
        }
        if (size == 2) {
            uint16_t h;
            memcpy(&h, b, 2);
            *out = half_to_double(h);
            return true;
        }
        return false;
    case 'B': {
        uint16_t h;
        memcpy(&h, b, 2);
        *out = bf16_to_double(h);
        return true;
    }
    case 'b': *out = b[0] != 0; return true;
    case 'i':
        if (size == 1) {
            *out = (int8_t)b[0];
            return true;
        }
        if (size == 2) {
            int16_t v;
            memcpy(&v, b, 2);
            *out = v;
            return true;
        }
        if (size == 4) {
            int32_t v;
            memcpy(&v, b, 4);
            *out = v;
            return true;
        }
        if (size == 8) {
            int64_t v;
            memcpy(&v, b, 8);
            *out = (double)v;
            return true;
        }
        return false;
    case 'u':
        if (size == 1) {
            *out = b[0];
            return true;
        }
        if (size == 2) {
            uint16_t v;
            memcpy(&v, b, 2);
            *out = v;
            return true;
        }
        if (size == 4) {
            uint32_t v;
            memcpy(&v, b, 4);
            *out = v;
            return true;
        }
        if (size == 8) {
            uint64_t v;
            memcpy(&v, b, 8);
            *out = (double)v;
            return true;
        }
        return false;
    default: return false;
    }
}

/* numpy kind and item size of a runtime dtype name. */
static bool kind_of(const char *dtype, char *kind, uint32_t *size) {
    static const struct {
        const char *n;
        char k;
        uint32_t s;
    } T[] = {{"float32", 'f', 4}, {"float16", 'f', 2}, {"bfloat16", 'B', 2}, {"float64", 'f', 8},
             {"int8", 'i', 1},    {"int16", 'i', 2},   {"int32", 'i', 4},    {"int64", 'i', 8},
             {"uint8", 'u', 1},   {"uint16", 'u', 2},  {"uint32", 'u', 4},   {"uint64", 'u', 8},
             {"bool", 'b', 1}};
    for (size_t i = 0; dtype && i < sizeof T / sizeof T[0]; i++)
        if (strcmp(T[i].n, dtype) == 0) {
            *kind = T[i].k;
            *size = T[i].s;
            return true;
        }
    return false;
}

/* Index of the largest value of row r (first on ties), and whether the
 * expected top-1 class (ecls) is among the k largest actual values. */
static uint64_t argmax_row(const double *v, uint64_t c) {
    uint64_t best = 0;
    for (uint64_t j = 1; j < c; j++)
        if (v[j] > v[best]) best = j;
    return best;
}
static bool in_top_k(const double *v, uint64_t c, uint64_t cls, uint32_t k) {
    uint64_t above = 0; /* classes ranked strictly before cls */
    for (uint64_t j = 0; j < c; j++)
        if (v[j] > v[cls] || (v[j] == v[cls] && j < cls)) above++;
    return above < k;
}

ctosa_error *ctosa_verify_compare(const ctosa_runtime_tensor *actual, const ctosa_tensor_file *expected,
                                  const ctosa_verify_options *opt_in, ctosa_verify_output *res) {
    ctosa_verify_options defaults;
    ctosa_verify_options_init(&defaults);
    const ctosa_verify_options *opt = opt_in ? opt_in : &defaults;
    memset(res, 0, sizeof *res);
    res->name = actual->name;
    res->top1 = res->topk = -1;
    res->pass = true;
    char ak;
    uint32_t as;
    if (!kind_of(actual->dtype, &ak, &as))
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "output '%s': cannot compare type %s", actual->name,
                               actual->dtype ? actual->dtype : "?");
    bool same = expected->rank == actual->rank;
    for (uint32_t i = 0; same && i < actual->rank; i++) same = expected->shape[i] == actual->shape[i];
    res->kind = actual->quantized        ? "quantized"
                : ak == 'f' || ak == 'B' ? "float"
                : ak == 'b'              ? "bool"
                                         : "integer";
    if (!same) {
        res->pass = false;
        snprintf(res->why, sizeof res->why, "shape differs from the expected array's");
        return NULL;
    }
    uint64_t n = actual->count;
    res->count = n;
    double *a = malloc((n ? n : 1) * sizeof *a), *x = malloc((n ? n : 1) * sizeof *x);
    if (!a || !x) {
        free(a);
        free(x);
        return ctosa_error_nomem();
    }
    for (uint64_t i = 0; i < n; i++) {
        if (!elem(ak, as, actual->data, i, &a[i]) ||
            !elem(expected->kind, expected->itemsize, expected->data, i, &x[i])) {
            free(a);
            free(x);
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "output '%s': cannot compare %s with %s",
                                   actual->name, actual->dtype, expected->type_name);
        }
    }
    double max_abs = 0, max_ref = 0;
    uint64_t within = 0;
    bool quant = actual->quantized && actual->scale > 0;
    bool is_float = ak == 'f' || ak == 'B';
    for (uint64_t i = 0; i < n; i++) {
        double d;
        if (isnan(a[i]) || isnan(x[i])) d = isnan(a[i]) && isnan(x[i]) ? 0 : INFINITY;
        else if (a[i] == x[i]) d = 0; /* equal infinities too */
        else d = fabs(a[i] - x[i]);
        if (quant && is_float) d /= actual->scale;
        if (d > max_abs) max_abs = d;
        if (isfinite(x[i]) && fabs(x[i]) > max_ref) max_ref = fabs(x[i]);
        if (quant ? d <= opt->max_steps + 1e-6 : d == 0) within++;
    }
    res->max_abs = max_abs;
    res->within = n ? (double)within / (double)n : 1.0;
    if (quant) {
        if (res->within < opt->step_fraction) {
            res->pass = false;
            snprintf(res->why, sizeof res->why, "%.2f%% of elements within %g steps (%.2f%% required)",
                     100 * res->within, opt->max_steps, 100 * opt->step_fraction);
        }
    } else if (is_float) {
        res->rel = max_ref > 0 ? max_abs / max_ref : max_abs;
        if (!(res->rel <= opt->rtol)) {
            res->pass = false;
            snprintf(res->why, sizeof res->why, "relative error %.3g > %g", res->rel, opt->rtol);
        }
    } else if (max_abs != 0) {
        res->pass = false;
        snprintf(res->why, sizeof res->why, "%s values differ (max %g)", res->kind, max_abs);
    }
    /* Classifier-shaped: [N, C] with C classes. */
    if (actual->rank == 2 && actual->shape[1] >= 2 && ak != 'b' && n) {
        uint64_t rows = (uint64_t)actual->shape[0], c = (uint64_t)actual->shape[1];
        uint32_t t1 = 0, tk = 0;
        for (uint64_t r = 0; r < rows; r++) {
            uint64_t ea = argmax_row(x + r * c, c), aa = argmax_row(a + r * c, c);
            t1 += ea == aa;
            tk += in_top_k(a + r * c, c, ea, opt->top_k);
        }
        res->rows = (uint32_t)rows;
        res->top1 = (int32_t)t1;
        res->topk = (int32_t)tk;
        if ((double)tk < opt->min_topk * (double)rows && res->pass) {
            res->pass = false;
            snprintf(res->why, sizeof res->why,
                     "expected class in the top-%u for %u of %u rows (%.0f%% required)", opt->top_k, tk,
                     (uint32_t)rows, 100 * opt->min_topk);
        }
    }
    free(a);
    free(x);
    return NULL;
}
