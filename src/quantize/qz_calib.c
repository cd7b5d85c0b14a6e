/* qz_calib.c - calibration: reading the samples, running the float model
 * on them, per-tensor statistics and the ranges each method picks. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctosa/runtime.h"
#include "ctosa/tensor_file.h"
#include "quantize/qz_internal.h"

/* ------------------------------------------------------------ samples */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void shape_str(char *buf, size_t n, uint32_t rank, const int64_t *d) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (uint32_t i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)d[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

/* How many samples of shape `in` the array t holds: [N, *in], or [N, *in[1:]]
 * when in[0] is 1; 0 when neither. */
static uint64_t samples_in(const ctosa_tensor_file *t, uint32_t rank, const int64_t *in) {
    if (t->rank == rank + 1) {
        for (uint32_t i = 0; i < rank; i++)
            if (t->shape[i + 1] != in[i]) return 0;
        return (uint64_t)t->shape[0];
    }
    if (t->rank == rank && rank > 0 && in[0] == 1) {
        for (uint32_t i = 1; i < rank; i++)
            if (t->shape[i] != in[i]) return 0;
        return (uint64_t)t->shape[0];
    }
    return 0;
}

static ctosa_error *check_array(const ctosa_tensor_file *t, const char *file, const char *input,
                                uint32_t rank, const int64_t *in, bool one, uint64_t *n) {
    char want[256], got[256];
    shape_str(want, sizeof want, rank, in);
    shape_str(got, sizeof got, t->rank, t->shape);
    if (t->kind != 'f' || t->itemsize != 4)
        return ctosa_error_new(CTOSA_ERR_FORMAT,
                               "%s: calibration for input '%s': dtype %s (%s), expected float32", file, input,
                               t->type_name ? t->type_name : "?", t->descr);
    if (t->count == 0)
        return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: calibration for input '%s': the array %s is empty",
                               file, input, got);
    uint64_t k = samples_in(t, rank, in);
    bool exact = t->rank == rank;
    for (uint32_t i = 0; exact && i < rank; i++) exact = t->shape[i] == in[i];
    if (one) {
        if (!exact && !(k == 1))
            return ctosa_error_new(
                CTOSA_ERR_FORMAT,
                "%s: calibration sample for input '%s': shape %s, expected %s (one sample per file "
                "in a folder)",
                file, input, got, want);
        *n = 1;
        return NULL;
    }
    if (!k)
        return ctosa_error_new(
            CTOSA_ERR_FORMAT,
            "%s: calibration for input '%s': shape %s does not hold samples of %s: expected "
            "[N,%s%s (samples stacked on a new first axis)",
            file, input, got, want, want + 1, rank && in[0] == 1 ? " or [N,...] without the leading 1" : "");
    *n = k;
    return NULL;
}

static ctosa_error *check_finite(const float *v, uint64_t n, const char *file, const char *input,
                                 uint64_t base) {
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: calibration for input '%s': element %llu is %s",
                                   file, input, (unsigned long long)(base + i),
                                   isnan(v[i]) ? "NaN" : "infinite");
    return NULL;
}

/* Appends the samples of one file or folder to a growing float buffer. */
static ctosa_error *load_one(const char *path, const char *input, uint32_t rank, const int64_t *in,
                             uint64_t count, float **data, uint64_t *n) {
    struct stat st;
    if (stat(path, &st) != 0)
        return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot open calibration data for input '%s'", path, input);
    char **files = NULL;
    uint32_t nf = 0;
    bool folder = S_ISDIR(st.st_mode);
    ctosa_error *e = NULL;
    if (folder) {
        DIR *d = opendir(path);
        if (!d) return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot read the folder", path);
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t l = strlen(de->d_name);
            if (l < 5 || strcmp(de->d_name + l - 4, ".npy")) continue;
            char **r = realloc(files, sizeof(char *) * (nf + 1));
            if (!r) break;
            files = r;
            size_t pl = strlen(path) + l + 2;
            files[nf] = malloc(pl);
            if (!files[nf]) break;
            snprintf(files[nf++], pl, "%s/%s", path, de->d_name);
        }
        closedir(d);
        if (!nf)
            e = ctosa_error_new(CTOSA_ERR_FORMAT,
                                "%s: calibration for input '%s': the folder has no .npy files", path, input);
        else qsort(files, nf, sizeof *files, cmp_str);
    } else {
        files = malloc(sizeof(char *));
        if (files && (files[0] = strdup(path))) nf = 1;
        else e = ctosa_error_nomem();
    }
    *n = 0;
    for (uint32_t f = 0; f < nf && !e; f++) {
        ctosa_tensor_file t;
        e = ctosa_tensor_file_read(files[f], &t);
        uint64_t k = 0;
        if (!e) e = check_array(&t, files[f], input, rank, in, folder, &k);
        if (!e) e = check_finite(t.data, t.count, files[f], input, 0);
        if (!e) {
            float *r = realloc(*data, (size_t)((*n + k) * count) * sizeof(float));
            if (!r) e = ctosa_error_nomem();
            else {
                *data = r;
                memcpy(r + *n * count, t.data, (size_t)(k * count) * sizeof(float));
                *n += k;
            }
        }
        ctosa_tensor_file_free(&t);
    }
    for (uint32_t f = 0; f < nf; f++) free(files[f]);
    free(files);
    return e;
}

ctosa_error *qz_samples_load(const ctosa_onnx_model *m, const ctosa_quantize_calibration *cal, uint32_t n_cal,
                             uint32_t max_samples, qz_samples *out) {
    memset(out, 0, sizeof *out);
    const ctosa_onnx_model_info *info = ctosa_onnx_info(m);
    const ctosa_onnx_graph *g = info->graph;
    /* graph inputs that are not initializers */
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        bool init = false;
        for (uint32_t k = 0; k < g->n_initializers && !init; k++)
            init = !strcmp(g->initializers[k].name, g->inputs[i].name);
        if (!init) n++;
    }
    out->names = calloc(n + 1, sizeof(char *));
    out->rank = calloc(n + 1, sizeof(uint32_t));
    out->shape = calloc(n + 1, sizeof *out->shape);
    out->count = calloc(n + 1, sizeof(uint64_t));
    out->data = calloc(n + 1, sizeof(float *));
    if (!out->names || !out->rank || !out->shape || !out->count || !out->data) return ctosa_error_nomem();
    for (uint32_t k = 0; k < n_cal; k++) {
        bool found = false;
        for (uint32_t i = 0; i < g->n_inputs && !found; i++) found = !strcmp(g->inputs[i].name, cal[k].name);
        if (!found)
            return ctosa_error_new(CTOSA_ERR_USAGE, "%s: --calibration %s=%s: the model has no input '%s'",
                                   info->path, cal[k].name, cal[k].path, cal[k].name);
    }
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        const ctosa_onnx_value_info *v = &g->inputs[i];
        bool init = false;
        for (uint32_t k = 0; k < g->n_initializers && !init; k++)
            init = !strcmp(g->initializers[k].name, v->name);
        if (init) continue;
        uint32_t j = out->n_inputs;
        const ctosa_quantize_calibration *c = NULL;
        for (uint32_t k = 0; k < n_cal; k++)
            if (!strcmp(cal[k].name, v->name)) c = &cal[k];
        if (!c)
            return ctosa_error_new(CTOSA_ERR_USAGE,
                                   "%s: input '%s' has no calibration data (--calibration %s=FILE.npy)",
                                   info->path, v->name, v->name);
        const ctosa_onnx_type *ty = v->type;
        if (!ty || ty->kind != CTOSA_ONNX_TYPE_TENSOR || ty->elem_type != CTOSA_ONNX_FLOAT ||
            !ty->has_shape || ty->rank > ONNX_MAX_RANK)
            return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                   "%s: input '%s': quantize needs float32 inputs with a "
                                   "declared shape",
                                   info->path, v->name);
        uint64_t cnt = 1;
        for (uint32_t d = 0; d < ty->rank; d++) {
            if (!ty->dims[d].has_value || ty->dims[d].value < 0)
                return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                       "%s: input '%s': dimension %u is not static (export the "
                                       "model with a fixed shape)",
                                       info->path, v->name, d);
            out->shape[j][d] = ty->dims[d].value;
            cnt *= (uint64_t)ty->dims[d].value;
        }
        out->names[j] = v->name;
        out->rank[j] = ty->rank;
        out->count[j] = cnt;
        out->n_inputs++;
        uint64_t ns = 0;
        ctosa_error *e = load_one(c->path, v->name, ty->rank, out->shape[j], cnt, &out->data[j], &ns);
        if (e) return e;
        if (j > 0 && ns != out->n_samples)
            return ctosa_error_new(CTOSA_ERR_FORMAT,
                                   "%s: %llu calibration samples for input '%s', but %u for input '%s'",
                                   c->path, (unsigned long long)ns, v->name, out->n_samples, out->names[0]);
        if (ns > UINT32_MAX) return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: too many samples", c->path);
        out->n_samples = (uint32_t)ns;
    }
    if (max_samples && out->n_samples > max_samples) out->n_samples = max_samples;
    return NULL;
}

void qz_samples_free(qz_samples *s) {
    for (uint32_t i = 0; s->data && i < s->n_inputs; i++) free(s->data[i]);
    free(s->names);
    free(s->rank);
    free(s->shape);
    free(s->count);
    free(s->data);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ running */

static int32_t onnx_dtype_of_numpy(const char *np) {
    static const struct {
        const char *n;
        int32_t t;
    } T[] = {{"float32", CTOSA_ONNX_FLOAT}, {"uint8", CTOSA_ONNX_UINT8},    {"int8", CTOSA_ONNX_INT8},
             {"int16", CTOSA_ONNX_INT16},   {"int32", CTOSA_ONNX_INT32},    {"int64", CTOSA_ONNX_INT64},
             {"bool", CTOSA_ONNX_BOOL},     {"float16", CTOSA_ONNX_FLOAT16}};
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(T); i++)
        if (!strcmp(T[i].n, np)) return T[i].t;
    return CTOSA_ONNX_UNDEFINED;
}

ctosa_error *qz_run_samples(const char *model_path, const ctosa_spec *spec, const char *work_dir,
                            const qz_samples *smp, qz_output_fn fn, qz_other_fn other, void *user) {
    ctosa_lower_options lo;
    ctosa_lower_options_init(&lo);
    lo.output_dir = work_dir;
    lo.stem = "run";
    ctosa_lower_result *lr = NULL;
    ctosa_error *e = ctosa_lower_file(model_path, spec, &lo, &lr);
    ctosa_lower_result_free(lr);
    if (e) return e;
    char *pp = NULL;
    if (asprintf(&pp, "%s/run.partitioned.onnx", work_dir) < 0) return ctosa_error_nomem();
    ctosa_runtime_options ro;
    ctosa_runtime_options_init(&ro);
    ctosa_runtime *rt = NULL;
    e = ctosa_runtime_load(pp, &ro, &rt);
    free(pp);
    uint32_t n_out = rt ? ctosa_runtime_output_count(rt) : 0;
    for (uint32_t s = 0; s < smp->n_samples && !e; s++) {
        for (uint32_t i = 0; i < smp->n_inputs && !e; i++)
            e = ctosa_runtime_set_input(rt, smp->names[i], "float32", smp->rank[i], smp->shape[i],
                                        smp->data[i] + (uint64_t)s * smp->count[i],
                                        smp->count[i] * sizeof(float));
        if (!e) e = ctosa_runtime_run(rt);
        for (uint32_t o = 0; o < n_out && !e; o++) {
            ctosa_runtime_tensor info, t;
            if ((e = ctosa_runtime_output_info(rt, o, &info))) break;
            bool f32 = !strcmp(info.dtype, "float32");
            if (!f32 && !other) continue;
            if ((e = ctosa_runtime_get_output(rt, info.name, &t))) break;
            if (f32) fn(user, s, t.name, t.data, t.count, t.rank, t.shape);
            else other(user, s, t.name, onnx_dtype_of_numpy(t.dtype), t.data, t.size, t.rank, t.shape);
        }
    }
    ctosa_runtime_free(rt);
    return e;
}

/* ------------------------------------------------------------ statistics */

static void rebin(qz_stats *s) {
    uint64_t tmp[QZ_HIST_BINS];
    memset(tmp, 0, sizeof tmp);
    for (uint32_t j = 0; j < QZ_HIST_BINS / 2; j++)
        tmp[QZ_HIST_BINS / 4 + j] = s->hist[2 * j] + s->hist[2 * j + 1];
    memcpy(s->hist, tmp, sizeof tmp);
    s->range *= 2;
}

void qz_stats_add(qz_stats *s, const float *v, uint64_t n) {
    double amax = 0;
    for (uint64_t i = 0; i < n; i++) {
        double x = v[i];
        if (!(x == x)) continue;
        if (s->count == 0 && i == 0) s->min = s->max = x;
        if (x < s->min) s->min = x;
        if (x > s->max) s->max = x;
        if (fabs(x) > amax) amax = fabs(x);
    }
    s->count += n;
    if (amax == 0) {
        if (s->range > 0) s->hist[QZ_HIST_BINS / 2] += n;
        else s->zeros += n;
        return;
    }
    if (s->range == 0) {
        s->range = amax;
        s->hist[QZ_HIST_BINS / 2] += s->zeros;
        s->zeros = 0;
    }
    while (amax > s->range) rebin(s);
    double k = QZ_HIST_BINS / (2 * s->range);
    for (uint64_t i = 0; i < n; i++) {
        double x = v[i];
        if (!(x == x)) continue;
        int64_t b = (int64_t)floor((x + s->range) * k);
        if (b < 0) b = 0;
        if (b >= QZ_HIST_BINS) b = QZ_HIST_BINS - 1;
        s->hist[b]++;
    }
}

void qz_params(double lo, double hi, int bits, bool symmetric, float *scale, int32_t *zp) {
    double qmin = -(double)(1 << (bits - 1)), qmax = (double)((1 << (bits - 1)) - 1);
    if (lo > 0) lo = 0;
    if (hi < 0) hi = 0;
    if (symmetric) {
        double a = fmax(-lo, hi);
        if (a < 1e-12) a = 1;
        *scale = (float)(a / qmax);
        *zp = 0;
        return;
    }
    if (hi - lo < 1e-12) hi = lo + 1;
    double s = (hi - lo) / (qmax - qmin);
    *scale = (float)s;
    double z = nearbyint(qmin - lo / (double)*scale);
    if (z < qmin) z = qmin;
    if (z > qmax) z = qmax;
    *zp = (int32_t)z;
}

/* Expected squared error of quantizing the histogram with (scale, zp). */
static double hist_error(const qz_stats *s, float scale, int32_t zp, int bits) {
    double qmin = -(double)(1 << (bits - 1)), qmax = (double)((1 << (bits - 1)) - 1);
    double w = 2 * s->range / QZ_HIST_BINS, err = 0;
    for (uint32_t b = 0; b < QZ_HIST_BINS; b++) {
        if (!s->hist[b]) continue;
        double x = -s->range + (b + 0.5) * w;
        if (x < s->min) x = s->min;
        if (x > s->max) x = s->max;
        double q = nearbyint(x / scale) + zp;
        if (q < qmin) q = qmin;
        if (q > qmax) q = qmax;
        double d = (q - zp) * scale - x;
        err += d * d * (double)s->hist[b];
    }
    return err;
}

void qz_stats_range(const qz_stats *s, ctosa_quantize_method method, double percentile, int bits,
                    bool symmetric, double *lo, double *hi) {
    double mn = fmin(s->min, 0), mx = fmax(s->max, 0);
    *lo = mn;
    *hi = mx;
    if (s->count == 0 || s->range == 0 || method == CTOSA_QUANT_MINMAX) return;
    double w = 2 * s->range / QZ_HIST_BINS;
    if (method == CTOSA_QUANT_PERCENTILE) {
        /* one-sided distributions (e.g. after Relu) lose only their top tail */
        bool two = s->min < 0 && s->max > 0;
        double cut = (1 - percentile / 100) * (double)s->count / (two ? 2 : 1);
        double acc = 0;
        if (s->max > 0) {
            for (int b = QZ_HIST_BINS - 1; b >= 0; b--) {
                acc += (double)s->hist[b];
                if (acc > cut) {
                    *hi = fmin(mx, -s->range + (b + 1) * w);
                    break;
                }
            }
        }
        acc = 0;
        if (s->min < 0) {
            for (int b = 0; b < QZ_HIST_BINS; b++) {
                acc += (double)s->hist[b];
                if (acc > cut) {
                    *lo = fmax(mn, -s->range + b * w);
                    break;
                }
            }
        }
        return;
    }
    /* MSE: shrink the min/max range by factors f in (0, 1] and keep the one
     * whose quantization error over the histogram is least (the largest on
     * ties, so that a flat error keeps the full range) */
    double best = INFINITY, bf = 1;
    for (int k = 128; k >= 8; k--) {
        double f = k / 128.0;
        float sc;
        int32_t zp;
        qz_params(mn * f, mx * f, bits, symmetric, &sc, &zp);
        double err = hist_error(s, sc, zp, bits);
        if (err < best) best = err, bf = f;
    }
    *lo = mn * bf;
    *hi = mx * bf;
}
