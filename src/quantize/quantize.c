/* quantize.c - ctosa_quantize(): calibrate, decide, emit, check against
 * the target, correct biases, measure, write.
 *
 * Steps (docs/quantize.md):
 * 1. the float model, with every intermediate tensor made a graph output,
 *    runs on each calibration sample (lowered under the widest spec, on the
 *    partitioned runtime): per-tensor statistics, per-channel output means
 *    of weighted layers, the float outputs;
 * 2. the QDQ model is built and lowered under the target; an original
 *    operator that falls back for its own reason is left in float and the
 *    model rebuilt, until nothing new falls back;
 * 3. bias correction: the QDQ model runs with the weighted layers' outputs
 *    exposed; each bias absorbs the mean per-channel error;
 * 4. the final QDQ model runs lowered under the target: SQNR of every
 *    output against the float run; report and model are moved into place
 *    last, so a failure leaves nothing behind. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctosa/runtime.h"
#include "quantize/qz_internal.h"

struct ctosa_quantize_result {
    arena a;
    ctosa_quantize_summary s;
    char *json;
};

void ctosa_quantize_options_init(ctosa_quantize_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->activation_bits = 8;
}

const ctosa_quantize_summary *ctosa_quantize_result_summary(const ctosa_quantize_result *r) { return &r->s; }

void ctosa_quantize_result_free(ctosa_quantize_result *r) {
    if (!r) return;
    free(r->json);
    arena_free(&r->a);
    free(r);
}

static const char *method_name(ctosa_quantize_method m) {
    return m == CTOSA_QUANT_MINMAX ? "minmax" : m == CTOSA_QUANT_PERCENTILE ? "percentile" : "mse";
}

/* ------------------------------------------------------------ work folder */

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char *p = NULL;
            if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) continue;
            unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static ctosa_error *make_dirs(const char *path) {
    char *p = strdup(path);
    if (!p) return ctosa_error_nomem();
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        mkdir(p, 0777);
        *s = '/';
    }
    int r = mkdir(p, 0777);
    ctosa_error *e = NULL;
    struct stat st;
    if (r != 0 && !(errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode)))
        e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot create the output folder: %s", path, strerror(errno));
    free(p);
    return e;
}

/* ------------------------------------------------------------ calibration */

typedef struct per_channel {
    bool want;
    uint32_t n_ch;
    double *sum;
    uint64_t per; /* values summed per channel */
} per_channel;

typedef struct run_state {
    qz_ctx *c;
    /* float outputs of the model per sample ([n_outputs][n_samples]) */
    uint32_t n_outputs;
    const char **out_names;
    float ***ref;
    uint64_t *ref_n;
    /* per-channel means of the weighted layers' outputs: tensor index -> */
    per_channel *pc;  /* [n_t] */
    per_channel *qpc; /* [n_t] the same of the fake-quantized values (second pass) */
    /* sequential bias correction: QuantizeLinear output exposed -> tensor */
    strmap by_q;
    /* evaluation */
    double *sig, *noise;
    ctosa_error *err;
} run_state;

static int out_index(const run_state *r, const char *name) {
    for (uint32_t i = 0; i < r->n_outputs; i++)
        if (!strcmp(r->out_names[i], name)) return (int)i;
    return -1;
}

static void add_channels(per_channel *p, const float *v, uint64_t n, uint32_t rank, const int64_t *shape) {
    /* channel axis 1: NCHW convolutions, [N, K] Gemm / MatMul inputs */
    if (rank < 2 || !p->want || shape[1] <= 0) return;
    if (!p->sum) {
        p->n_ch = (uint32_t)shape[1];
        if (!(p->sum = calloc(p->n_ch, sizeof(double)))) return;
    }
    uint64_t ch = (uint64_t)shape[1], inner = 1;
    if (ch != p->n_ch) return;
    for (uint32_t d = 2; d < rank; d++) inner *= (uint64_t)shape[d];
    for (uint64_t i = 0; i < n; i++) p->sum[(i / inner) % ch] += v[i];
    p->per += n / ch;
}

static void keep_const(qz_tensor *t, int32_t dtype, const void *data, uint64_t size, uint32_t rank,
                       const int64_t *shape) {
    if (t->cval || rank > ONNX_MAX_RANK || dtype == CTOSA_ONNX_UNDEFINED || !(t->cval = malloc(size + 1)))
        return;
    memcpy(t->cval, data, size);
    t->cdtype = dtype;
    t->csize = size;
    t->crank = rank;
    memcpy(t->cdims, shape, rank * sizeof(int64_t));
}

static void on_other(void *user, uint32_t sample, const char *name, int32_t dtype, const void *data,
                     uint64_t size, uint32_t rank, const int64_t *shape) {
    run_state *r = user;
    if (sample > 0) return;
    qz_tensor *t = qz_tensor_of(r->c, name);
    if (t && t->is_const) keep_const(t, dtype, data, size, rank, shape);
}

static void on_float(void *user, uint32_t sample, const char *name, const float *data, uint64_t n,
                     uint32_t rank, const int64_t *shape) {
    run_state *r = user;
    qz_tensor *t = qz_tensor_of(r->c, name);
    if (t && t->is_const) {
        keep_const(t, CTOSA_ONNX_FLOAT, data, n * sizeof(float), rank, shape);
        t = NULL;
    }
    if (t) {
        if (!t->st.hist) t->st.hist = calloc(QZ_HIST_BINS, sizeof(uint64_t));
        if (!t->st.hist) return;
        t->is_float = true;
        qz_stats_add(&t->st, data, n);
        add_channels(&r->pc[t - r->c->t], data, n, rank, shape);
    }
    int o = out_index(r, name);
    if (o >= 0 && !r->err) {
        float *copy = malloc(n * sizeof(float) + 1);
        if (!copy) return;
        memcpy(copy, data, n * sizeof(float));
        r->ref[o][sample] = copy;
        r->ref_n[o] = n;
    }
}

/* x as its QuantizeLinear -> DequantizeLinear pair gives it */
static void fake_quant(const qz_ctx *c, const qz_tensor *t, const float *v, uint64_t n, float *out) {
    int bits = qz_bits_of(c, t);
    double qmin = -(double)(1 << (bits - 1)), qmax = (double)((1 << (bits - 1)) - 1);
    for (uint64_t i = 0; i < n; i++) {
        double q = nearbyint((double)v[i] / t->scale) + t->zp;
        q = q < qmin ? qmin : q > qmax ? qmax : q;
        out[i] = (float)((q - t->zp) * t->scale);
    }
}

/* Second float pass: per-channel means of the quantized inputs of
 * weighted layers. */
static void on_fq(void *user, uint32_t sample, const char *name, const float *data, uint64_t n, uint32_t rank,
                  const int64_t *shape) {
    run_state *r = user;
    qz_tensor *t = qz_tensor_of(r->c, name);
    if (!t || !t->quant || !r->pc[t - r->c->t].want) return;
    float *f = malloc(n * sizeof(float) + 1);
    if (!f) return;
    fake_quant(r->c, t, data, n, f);
    add_channels(&r->qpc[t - r->c->t], f, n, rank, shape);
    free(f);
}

static void on_quant(void *user, uint32_t sample, const char *name, const float *data, uint64_t n,
                     uint32_t rank, const int64_t *shape) {
    run_state *r = user;
    int o = out_index(r, name);
    if (o < 0 || !r->ref[o][sample] || r->ref_n[o] != n) return;
    const float *y = r->ref[o][sample];
    for (uint64_t i = 0; i < n; i++) {
        double d = (double)data[i] - y[i];
        r->sig[o] += (double)y[i] * y[i];
        r->noise[o] += d * d;
    }
}

/* ------------------------------------------------------------ plan loop */

static void widest_spec(ctosa_spec *s) {
    memset(s, 0, sizeof *s);
    s->version = CTOSA_VERSION_1_1_DRAFT;
    s->profiles = CTOSA_PRO_INT | CTOSA_PRO_FP;
    s->extensions = (1ull << CTOSA_EXT_COUNT) - 1;
}

static bool is_reduce_with_axes_attr(const ctosa_onnx_node *n) {
    static const char *const R[] = {"ReduceMean",   "ReduceMax",       "ReduceMin",
                                    "ReduceProd",   "ReduceL1",        "ReduceL2",
                                    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    if (n->domain[0] && strcmp(n->domain, "ai.onnx")) return false;
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(R); i++)
        if (!strcmp(n->op_type, R[i])) return ctosa_onnx_node_attr(n, "axes") != NULL;
    return false;
}

/* int16 QuantizeLinear / DequantizeLinear need opset 21. Between 13 and
 * 21 only the reductions changed in a way these models meet: their axes
 * attribute became an input (opset 18). */
static ctosa_error *bump_opset(qz_graph *q) {
    if (q->opset >= 21) return NULL;
    bool cross18 = q->opset < 18;
    q->opset = 21;
    for (uint32_t i = 0; cross18 && i < q->n_nodes; i++) {
        qz_node *n = &q->nodes[i];
        if (!n->orig || !is_reduce_with_axes_attr(n->orig)) continue;
        const ctosa_onnx_attr *a = ctosa_onnx_node_attr(n->orig, "axes");
        int64_t cnt = a->count;
        int64_t *ax = arena_alloc(&q->a, 8 * (size_t)(cnt + 1));
        const char *name = qz_fresh_name(q, n->out[0], "_axes");
        const char **in = arena_alloc(&q->a, sizeof(char *) * 2);
        if (!ax || !name || !in) return ctosa_error_nomem();
        memcpy(ax, a->ints, 8 * (size_t)cnt);
        if (!qz_graph_add_init(q, name, CTOSA_ONNX_INT64, 1, &cnt, ax, 8 * (uint64_t)cnt))
            return ctosa_error_nomem();
        in[0] = n->in[0];
        in[1] = name;
        n->in = in;
        n->n_in = 2;
        n->drop_axes_attr = true;
    }
    return NULL;
}

static ctosa_error *build_qdq(qz_ctx *c, const char *path) {
    qz_graph q;
    ctosa_error *e = qz_graph_init(&q, c->m, c->path);
    if (!e && (c->bits == 16 || c->n_wide)) e = bump_opset(&q);
    if (!e) e = qz_plan_emit(c, &q);
    if (!e) e = qz_graph_write(&q, path);
    qz_graph_free(&q);
    return e;
}

/* Lowers the QDQ model under the target; marks the original operators
 * that fall back for their own reason as float. Returns how many. */
static ctosa_error *check_target(qz_ctx *c, const char *path, const ctosa_spec *spec, uint32_t *newly,
                                 ctosa_quantize_summary *s, arena *ra) {
    ctosa_lower_options lo;
    ctosa_lower_options_init(&lo);
    ctosa_lower_result *r = NULL;
    ctosa_error *e = ctosa_lower_file(path, spec, &lo, &r);
    *newly = 0;
    if (e) return e;
    const ctosa_lower_summary *ls = ctosa_lower_result_summary(r);
    s->partitions = ls->n_partitions;
    s->nodes_delegated = ls->nodes_delegated;
    s->nodes_qdq_total = ls->nodes_total;
    strmap by_label;
    strmap_init(&by_label);
    arena a;
    arena_init(&a, 0);
    for (uint32_t i = 0; i < c->g->n_nodes; i++) {
        strmap_put(&by_label, c->label[i], (void *)(uintptr_t)(i + 1));
    }
    for (uint32_t f = 0; f < ls->n_fallback; f++) {
        const ctosa_lower_fallback *fb = &ls->fallback[f];
        uintptr_t k = (uintptr_t)strmap_get(&by_label, fb->node);
        if (!k || c->node_float[k - 1] || !c->node_quant[k - 1]) continue;
        if (fb->reason && !strncmp(fb->reason, "quantized group:", 16)) continue;
        c->node_float[k - 1] = true;
        c->node_reason[k - 1] = arena_printf(ra, "%s: %s", fb->code, fb->reason ? fb->reason : "");
        (*newly)++;
    }
    strmap_free(&by_label);
    arena_free(&a);
    ctosa_lower_result_free(r);
    return NULL;
}

/* Second float pass: the per-channel means of the weighted layers' inputs
 * as their QuantizeLinear / DequantizeLinear pairs give them (for bias
 * correction), with the parameters decided. */
static ctosa_error *float_qmeans(qz_ctx *c, run_state *rs, const char *work, const qz_samples *smp,
                                 arena *ra) {
    ctosa_error *e = NULL;
    for (uint32_t i = 0; rs->qpc && i < c->n_t; i++) free(rs->qpc[i].sum);
    free(rs->qpc);
    for (uint32_t i = 0; i < c->n_t; i++) {
        free(c->t[i].qmean);
        c->t[i].qmean = NULL;
    }
    rs->qpc = calloc(c->n_t + 1, sizeof *rs->qpc);
    if (!rs->qpc) return ctosa_error_nomem();
    for (uint32_t i = 0; i < c->n_t; i++) rs->qpc[i].want = rs->pc[i].want;
    char *probe = arena_printf(ra, "%s/probe.onnx", work);
    ctosa_spec wide;
    widest_spec(&wide);
    if (!probe) e = ctosa_error_nomem();
    if (!e) e = qz_run_samples(probe, &wide, work, smp, on_fq, NULL, rs);
    for (uint32_t i = 0; i < c->n_t && !e; i++) {
        qz_tensor *t = &c->t[i];
        per_channel *p = &rs->qpc[i];
        if (t->producer < 0 && p->want && t->quant)
            for (uint32_t k = 0; k < smp->n_inputs; k++) {
                if (strcmp(smp->names[k], t->name) || smp->rank[k] < 2) continue;
                uint64_t n = smp->count[k] * smp->n_samples;
                float *f = malloc(n * sizeof(float) + 1);
                if (!f) {
                    e = ctosa_error_nomem();
                    break;
                }
                fake_quant(c, t, smp->data[k], n, f);
                add_channels(p, f, n, smp->rank[k], smp->shape[k]);
                free(f);
            }
        if (!p->sum || !p->per || p->n_ch != t->n_mean) continue;
        if (!(t->qmean = calloc(p->n_ch, sizeof(float)))) e = ctosa_error_nomem();
        for (uint32_t ch = 0; t->qmean && ch < p->n_ch; ch++)
            t->qmean[ch] = (float)(p->sum[ch] / (double)p->per);
    }
    return e;
}

/* ------------------------------------------------------------ sequential bias correction */

static void on_ignore(void *user, uint32_t sample, const char *name, const float *data, uint64_t n,
                      uint32_t rank, const int64_t *shape) {}

/* An exposed QuantizeLinear output: the per-channel means of its
 * dequantized values, what the next layer really reads. */
static void on_qvalues(void *user, uint32_t sample, const char *name, int32_t dtype, const void *data,
                       uint64_t size, uint32_t rank, const int64_t *shape) {
    run_state *r = user;
    qz_tensor *t = strmap_get(&r->by_q, name);
    uint64_t n = size / (dtype == CTOSA_ONNX_INT16 ? 2 : 1);
    if (!t || (dtype != CTOSA_ONNX_INT8 && dtype != CTOSA_ONNX_INT16)) return;
    float *f = malloc(n * sizeof(float) + 1);
    if (!f) {
        if (!r->err) r->err = ctosa_error_nomem();
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        int32_t v;
        if (dtype == CTOSA_ONNX_INT16) {
            int16_t x;
            memcpy(&x, (const uint8_t *)data + 2 * i, 2);
            v = x;
        } else v = ((const int8_t *)data)[i];
        f[i] = (float)((double)(v - t->zp) * t->scale);
    }
    add_channels(&r->qpc[t - r->c->t], f, n, rank, shape);
    free(f);
}

/* Sequential (layer-by-layer) bias correction. The float-run correction
 * (weight_shift in qz_plan.c) predicts each layer's input means; the
 * quantized model's inputs drift further (noise through Relu6 and
 * clipping raises means, and every layer's leftover shift moves the next
 * one's input). Here each layer's correction uses the per-channel means
 * of the input it really reads in the quantized model, measured with
 * every layer before it already corrected, so its output means match the
 * float model's. Correcting all layers from one run overshoots (each
 * also absorbs what its upstream layers are correcting at the same time):
 * the layers go in levels, a level being the layers whose inputs depend
 * on the previous levels only, one run of the quantized model per level,
 * pruned to what the level's inputs need. */
static ctosa_error *sequential_bias(qz_ctx *c, run_state *rs, const ctosa_spec *spec, const char *work,
                                    const qz_samples *smp, arena *ra) {
    const ctosa_onnx_graph *g = c->g;
    qz_graph q0;
    ctosa_error *e = qz_graph_init(&q0, c->m, c->path);
    uint32_t *tdepth = calloc(c->n_t + 1, sizeof(uint32_t)),
             *level = calloc(g->n_nodes + 1, sizeof(uint32_t));
    uint32_t levels = 0;
    if (!e && (!tdepth || !level)) e = ctosa_error_nomem();
    for (uint32_t i = 0; i < g->n_nodes && !e; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        uint32_t d = 0;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            qz_tensor *t = qz_tensor_of(c, n->inputs[k]);
            if (t && tdepth[t - c->t] > d) d = tdepth[t - c->t];
        }
        qz_tensor *x = n->n_inputs ? qz_tensor_of(c, n->inputs[0]) : NULL;
        if (c->node_quant[i] && qz_node_bias_channels(c, &q0, i) && x && x->quant && x->mean) {
            level[i] = ++d;
            if (d > levels) levels = d;
        }
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            qz_tensor *t = qz_tensor_of(c, n->outputs[k]);
            if (t && t->producer == (int32_t)i) tdepth[t - c->t] = d;
        }
    }
    qz_graph_free(&q0);
    const char **extra = calloc(c->n_t + 1, sizeof(char *));
    qz_tensor **xs = calloc(c->n_t + 1, sizeof(qz_tensor *));
    char *path = arena_printf(ra, "%s/sequential.onnx", work);
    if (!e && (!extra || !xs || !path)) e = ctosa_error_nomem();
    for (uint32_t lv = 1; lv <= levels && !e; lv++) {
        qz_graph q;
        arena names;
        arena_init(&names, 0);
        strmap_init(&rs->by_q);
        e = qz_graph_init(&q, c->m, c->path);
        if (!e && (c->bits == 16 || c->n_wide)) e = bump_opset(&q);
        if (!e) e = qz_plan_emit(c, &q);
        q.n_extra = 0;
        for (uint32_t i = 0; i < g->n_nodes && !e; i++) {
            if (level[i] != lv) continue;
            qz_tensor *x = qz_tensor_of(c, g->nodes[i].inputs[0]);
            per_channel *p = &rs->qpc[x - c->t];
            if (strmap_has(&rs->by_q, x->q_name)) continue;
            const char *k = arena_strdup(&names, x->q_name); /* q's names go with q */
            if (!k || !strmap_put(&rs->by_q, k, x)) e = ctosa_error_nomem();
            xs[q.n_extra] = x;
            extra[q.n_extra++] = x->q_name;
            free(p->sum);
            p->sum = NULL;
            p->per = 0;
            p->want = true;
        }
        q.extra = extra;
        if (!e) e = qz_graph_prune_to_extra(&q);
        if (!e) e = qz_graph_write(&q, path);
        uint32_t n_x = q.n_extra;
        qz_graph_free(&q);
        if (!e) e = qz_run_samples(path, spec, work, smp, on_ignore, on_qvalues, rs);
        if (!e && rs->err) e = rs->err, rs->err = NULL;
        for (uint32_t i = 0; i < n_x && !e; i++) {
            qz_tensor *t = xs[i];
            per_channel *p = &rs->qpc[t - c->t];
            if (!p->sum || !p->per || p->n_ch != t->n_mean) continue;
            if (!t->qmean && !(t->qmean = calloc(p->n_ch, sizeof(float)))) e = ctosa_error_nomem();
            for (uint32_t ch = 0; t->qmean && ch < p->n_ch; ch++)
                t->qmean[ch] = (float)(p->sum[ch] / (double)p->per);
        }
        strmap_free(&rs->by_q);
        arena_free(&names);
        if (e)
            e = ctosa_error_prefix(e, "%s: sequential bias correction, level %u of %u", c->model, lv, levels);
    }
    free(extra);
    free(xs);
    free(tdepth);
    free(level);
    return e;
}

/* ------------------------------------------------------------ output-aware range search */

/* Builds the QDQ model with the current parameters, runs it under the
 * target on the calibration samples and returns its output noise: the sum
 * over outputs of noise power / signal power. */
static ctosa_error *output_noise(qz_ctx *c, run_state *rs, const char *path, const ctosa_spec *spec,
                                 const char *work, const qz_samples *smp, double *noise) {
    for (uint32_t o = 0; o < rs->n_outputs; o++) rs->sig[o] = rs->noise[o] = 0;
    ctosa_error *e = build_qdq(c, path);
    if (!e) e = qz_run_samples(path, spec, work, smp, on_quant, NULL, rs);
    *noise = 0;
    for (uint32_t o = 0; o < rs->n_outputs && !e; o++)
        *noise += rs->sig[o] > 0 ? rs->noise[o] / rs->sig[o] : rs->noise[o];
    return e;
}

/* Sets the range of every tensor of group r to its range before the
 * search (base, 2 doubles a tensor) scaled by f. */
static void scale_group(qz_ctx *c, uint32_t r, const double *base, double f) {
    for (uint32_t i = r; i < c->n_t; i++)
        if (c->t[i].quant && qz_group_of(c, i) == r)
            c->t[i].lo = base[2 * i] * f, c->t[i].hi = base[2 * i + 1] * f;
    qz_plan_params(c);
}

/* Each tensor's own best range (mse, minmax, percentile) minimises the
 * error of that tensor; what counts is the error at the model's outputs,
 * and a tensor whose noise the following layers amplify wants a different
 * balance of clipping and rounding than one whose noise they damp. Group
 * by group in model order (a group: tensors sharing parameters), the
 * range is scaled by 0.9 and 1.1 (then 0.8 or 1.25 in the better
 * direction) and the QDQ model, with the choices made so far, is run
 * under the target on the calibration samples; a factor is kept only
 * when it lowers the output noise power by more than 1% (0.04 dB), so
 * that the choice follows the network rather than the samples' noise.
 * About 2.5 runs of the quantized model per group. */
static ctosa_error *search_ranges(qz_ctx *c, run_state *rs, const ctosa_spec *spec, const char *work,
                                  const qz_samples *smp, arena *ra, ctosa_quantize_summary *s) {
    static const double first[] = {0.9, 1.1}, further[] = {0.8, 1.25};
    char *path = arena_printf(ra, "%s/search.onnx", work);
    double *base = calloc(2 * (size_t)c->n_t + 1, sizeof(double));
    if (!path || !base) {
        free(base);
        return ctosa_error_nomem();
    }
    for (uint32_t i = 0; i < c->n_t; i++) base[2 * i] = c->t[i].lo, base[2 * i + 1] = c->t[i].hi;
    double cur;
    ctosa_error *e = output_noise(c, rs, path, spec, work, smp, &cur);
    s->search_runs = 1;
    s->search_sqnr_before = cur > 0 ? -10 * log10(cur) : INFINITY;
    for (uint32_t r = 0; r < c->n_t && !e; r++) {
        if (!c->t[r].quant || qz_group_of(c, r) != r || c->t[r].hi - c->t[r].lo <= 0 || c->t[r].wide)
            continue;
        s->search_groups++;
        double keep = 1;
        for (int k = 0; k < 3 && !e; k++) {
            /* 0.9, 1.1; then one step further the way that helped */
            double f = k < 2 ? first[k] : keep < 1 ? further[0] : further[1];
            if (k == 1 && keep != 1) continue;
            if (k == 2 && keep == 1) break;
            double v;
            scale_group(c, r, base, f);
            e = output_noise(c, rs, path, spec, work, smp, &v);
            s->search_runs++;
            if (!e && v < cur * 0.99) {
                cur = v;
                keep = f;
            }
            scale_group(c, r, base, keep);
        }
        s->search_changed += keep != 1;
    }
    s->search_sqnr_after = cur > 0 ? -10 * log10(cur) : INFINITY;
    free(base);
    if (e) e = ctosa_error_prefix(e, "%s: range search", c->model);
    return e;
}

/* ------------------------------------------------------------ mixed precision */

/* MACs of one sample through node i (Conv, Gemm, MatMul with a constant
 * weight): its output elements times the weight elements per output. */
static double node_macs(const qz_ctx *c, const qz_graph *q, uint32_t i, uint32_t n_samples) {
    const ctosa_onnx_node *n = &c->g->nodes[i];
    bool conv = !strcmp(n->op_type, "Conv"), gemm = !strcmp(n->op_type, "Gemm");
    if (!conv && !gemm && strcmp(n->op_type, "MatMul")) return 0;
    const qz_init *w = n->n_inputs > 1 ? qz_graph_find_init(q, n->inputs[1]) : NULL;
    const qz_tensor *y = n->n_outputs ? qz_tensor_of(c, n->outputs[0]) : NULL;
    if (!w || w->rank < 2 || !y || !y->st.count || !n_samples || w->dims[0] <= 0 || w->dims[1] <= 0) return 0;
    double we = 1;
    for (uint32_t d = 0; d < w->rank; d++) we *= (double)w->dims[d];
    const ctosa_onnx_attr *tb = gemm ? ctosa_onnx_node_attr(n, "transB") : NULL;
    double per = conv || (tb && tb->i) ? we / (double)w->dims[0] : we / (double)w->dims[1];
    return (double)y->st.count / n_samples * per;
}

/* Tensor r can be int16 in an int8 model: alone in its group, made by the
 * model input or an operator whose RESCALE can give int16, read only by
 * operators that take an int16 operand (a convolution or Gemm as its data
 * input, an Add), so that the model still lowers whole under TOSA-1.0+INT. */
static bool int16_candidate(qz_ctx *c, uint32_t r) {
    qz_tensor *t = &c->t[r];
    if (!t->quant || t->is_output || t->is_const || !t->n_cons || qz_group_of(c, r) != r) return false;
    for (uint32_t i = r + 1; i < c->n_t; i++)
        if (c->t[i].quant && qz_group_of(c, i) == r) return false;
    if (t->producer >= 0 &&
        (!c->node_quant[t->producer] || !qz_node_int16_ok(c, (uint32_t)t->producer, true)))
        return false;
    for (uint32_t k = 0; k < t->n_cons; k++) {
        uint32_t i = t->cons[k];
        const ctosa_onnx_node *n = &c->g->nodes[i];
        if (!c->node_quant[i] || !qz_node_int16_ok(c, i, false)) return false;
        if (strcmp(n->op_type, "Add") && strcmp(n->inputs[0], t->name)) return false;
        for (uint32_t j = 1; j < n->n_inputs && strcmp(n->op_type, "Add"); j++)
            if (!strcmp(n->inputs[j], t->name)) return false;
    }
    return true;
}

/* Makes tensor r int16 (on) or int8 again (off). Bias correction reads an
 * int16 tensor's float means (int16 with its whole range moves no mean):
 * its quantized means are set aside while it is int16 and put back. */
static void set_wide(qz_ctx *c, uint32_t r, bool on, float **saved) {
    qz_tensor *t = &c->t[r];
    if (on) {
        *saved = t->qmean;
        t->qmean = NULL;
        c->n_wide++;
    } else {
        t->qmean = *saved;
        *saved = NULL;
        c->n_wide--;
    }
    t->wide = on;
    qz_plan_params(c);
}

/* MACs per sample of the quantized convolutions / Gemms reading tensor x as
 * their data input: what runs twice without EXT-INT16 when x is int16. */
static double reader_macs(const qz_ctx *c, const qz_graph *q, const qz_tensor *x, uint32_t n_samples) {
    double m = 0;
    for (uint32_t k = 0; k < x->n_cons; k++) {
        uint32_t i = x->cons[k];
        const ctosa_onnx_node *n = &c->g->nodes[i];
        if (c->node_quant[i] && n->n_inputs && !strcmp(n->inputs[0], x->name))
            m += node_macs(c, q, i, n_samples);
    }
    return m;
}

/* Mixed precision. Every candidate tensor is made int16 on its own and the
 * QDQ model run under the target on the calibration samples: its gain is
 * the output noise it removes. The tensors are then taken by gain, largest
 * first, each only when it lowers the noise by more than 1% (the range
 * search's threshold): count mode (--int16 N) takes N; budget mode
 * (--int16 auto, --int16-budget P) takes every one whose convolutions fit,
 * with those already taken, in P% of the model's MACs (a tensor that does
 * not fit is passed over for smaller ones). Measured alone, not again with
 * the tensors already taken: on 16 samples the marginal gains of later
 * tensors are small and their measurement noisy, and a greedy
 * re-measurement stopped early and did worse on held-out samples
 * (docs/quantize.md), as did ranking by gain per MAC. */
static ctosa_error *select_int16(qz_ctx *c, run_state *rs, const ctosa_spec *spec, const char *work,
                                 const qz_samples *smp, uint32_t want, double budget_pct, arena *ra,
                                 ctosa_quantize_summary *s) {
    char *path = arena_printf(ra, "%s/mixed.onnx", work);
    double *gain = calloc(c->n_t + 1, sizeof(double)), *cost = calloc(c->n_t + 1, sizeof(double));
    uint8_t *cand = calloc(c->n_t + 1, 1);
    ctosa_error *e = NULL;
    if (!path || !gain || !cost || !cand) e = ctosa_error_nomem();
    qz_graph q;
    bool have_q = false;
    if (!e) e = qz_graph_init(&q, c->m, c->path);
    have_q = !e;
    /* what it costs: the convolutions reading an int16 tensor run twice */
    for (uint32_t i = 0; i < c->g->n_nodes && !e; i++) s->model_macs += node_macs(c, &q, i, smp->n_samples);
    double base = 0, cur = 0;
    if (!e) e = output_noise(c, rs, path, spec, work, smp, &base);
    s->int16_runs = 1;
    for (uint32_t r = 0; r < c->n_t && !e; r++) {
        if (!int16_candidate(c, r)) continue;
        cand[r] = 1;
        cost[r] = reader_macs(c, &q, &c->t[r], smp->n_samples);
        float *saved = NULL;
        double v;
        set_wide(c, r, true, &saved);
        e = output_noise(c, rs, path, spec, work, smp, &v);
        set_wide(c, r, false, &saved);
        gain[r] = base - v;
        s->int16_candidates++;
        s->int16_runs++;
    }
    uint32_t max_n = want ? want : s->int16_candidates;
    const char **names = arena_zalloc(ra, sizeof(char *) * (max_n + 1));
    if (!e && !names) e = ctosa_error_nomem();
    bool budget = budget_pct > 0;
    double limit = budget_pct / 100 * s->model_macs * (1 + 1e-9), used = 0;
    while (!e && c->n_wide < max_n) {
        int64_t best = -1;
        for (uint32_t r = 0; r < c->n_t; r++) {
            if (!cand[r] || c->t[r].wide || !(gain[r] > 0.01 * base)) continue;
            if (budget && used + cost[r] > limit) continue;
            if (best < 0 || gain[r] > gain[best]) best = r;
        }
        if (best < 0) break;
        float *saved = NULL;
        set_wide(c, (uint32_t)best, true, &saved);
        free(saved); /* int16 for good: its quantized means are not used */
        used += cost[best];
        /* the summary outlives the model, whose arena holds the name */
        if (!(names[c->n_wide - 1] = arena_strdup(ra, c->t[best].name))) e = ctosa_error_nomem();
    }
    qz_plan_params(c);
    if (!e && c->n_wide) e = output_noise(c, rs, path, spec, work, smp, &cur), s->int16_runs++;
    else cur = base;
    s->n_int16 = c->n_wide;
    s->int16_names = names;
    s->int16_budget = budget_pct;
    s->int16_sqnr_before = base > 0 ? -10 * log10(base) : INFINITY;
    s->int16_sqnr_after = cur > 0 ? -10 * log10(cur) : INFINITY;
    for (uint32_t i = 0; i < c->g->n_nodes && !e; i++) {
        qz_tensor *x = c->g->nodes[i].n_inputs ? qz_tensor_of(c, c->g->nodes[i].inputs[0]) : NULL;
        if (x && x->wide && c->node_quant[i]) s->int16_macs += node_macs(c, &q, i, smp->n_samples);
    }
    if (have_q) qz_graph_free(&q);
    free(gain);
    free(cost);
    free(cand);
    if (e) e = ctosa_error_prefix(e, "%s: choosing int16 tensors", c->model);
    return e;
}

/* ------------------------------------------------------------ report */

static void json_num(strbuf *b, double v) { sb_json_double(b, v); }

static char *make_report(qz_ctx *c, const ctosa_quantize_summary *s, const char *model) {
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "{\n  \"tool\": \"ctosa\", \"version\": \"%s\",\n  \"model\": ", CTOSA_VERSION_STRING);
    sb_json_str(&b, model);
    sb_puts(&b, ",\n  \"qdq_model\": ");
    const char *base = strrchr(s->qdq_path, '/');
    sb_json_str(&b, base ? base + 1 : s->qdq_path);
    sb_puts(&b, ",\n  \"spec\": ");
    sb_json_str(&b, s->spec);
    sb_printf(
        &b,
        ",\n  \"activations\": \"int%d\", \"weights\": \"int8 symmetric per-channel\", \"method\": \"%s\"",
        s->activation_bits, s->method);
    if (c->method == CTOSA_QUANT_PERCENTILE) {
        sb_puts(&b, ", \"percentile\": ");
        json_num(&b, c->percentile);
    }
    sb_printf(&b, ", \"bias_correction\": \"%s\"", s->bias);
    if (s->search_runs) {
        sb_printf(
            &b, ",\n  \"range_search\": {\"groups\": %u, \"changed\": %u, \"runs\": %u, \"sqnr_db_before\": ",
            s->search_groups, s->search_changed, s->search_runs);
        json_num(&b, s->search_sqnr_before);
        sb_puts(&b, ", \"sqnr_db_after\": ");
        json_num(&b, s->search_sqnr_after);
        sb_puts(&b, "}");
    }
    if (s->equalized) {
        sb_printf(
            &b,
            ",\n  \"equalize\": {\"pairs\": %u, \"channels\": %u, \"sweeps\": %u, \"skipped_clamp\": %u, "
            "\"skipped_other\": %u, \"first_max_scale\": ",
            s->eq_pairs, s->eq_channels, s->eq_sweeps, s->eq_skipped_clamp, s->eq_skipped_other);
        json_num(&b, s->eq_max_scale);
        sb_puts(&b, ", \"model\": ");
        if (s->equalized_path) {
            const char *eb = strrchr(s->equalized_path, '/');
            sb_json_str(&b, eb ? eb + 1 : s->equalized_path);
        } else {
            sb_puts(&b, "null");
        }
        sb_puts(&b, "}");
    }
    if (s->int16_runs) {
        sb_puts(&b, ",\n  \"int16\": {\"mode\": ");
        if (s->int16_budget > 0) {
            sb_puts(&b, "\"budget\", \"budget_pct\": ");
            json_num(&b, s->int16_budget);
        } else {
            sb_puts(&b, "\"count\"");
        }
        sb_printf(&b, ", \"candidates\": %u, \"runs\": %u, \"tensors\": [", s->int16_candidates,
                  s->int16_runs);
        for (uint32_t i = 0; i < s->n_int16; i++) {
            if (i) sb_puts(&b, ", ");
            sb_json_str(&b, s->int16_names[i]);
        }
        sb_puts(&b, "], \"macs_int16_inputs\": ");
        json_num(&b, s->int16_macs);
        sb_puts(&b, ", \"macs_model\": ");
        json_num(&b, s->model_macs);
        sb_puts(&b, ", \"macs_twice_pct\": ");
        json_num(&b, s->model_macs > 0 ? 100 * s->int16_macs / s->model_macs : 0);
        sb_puts(&b, ", \"sqnr_db_before\": ");
        json_num(&b, s->int16_sqnr_before);
        sb_puts(&b, ", \"sqnr_db_after\": ");
        json_num(&b, s->int16_sqnr_after);
        sb_puts(&b, "}");
    }
    sb_printf(&b,
              ",\n  \"samples\": %u, \"nodes_total\": %u, \"nodes_float\": %u, \"tensors_quantized\": %u,\n",
              s->samples, s->nodes_total, s->nodes_float, s->tensors_quantized);
    sb_printf(&b, "  \"lowered\": {\"partitions\": %u, \"nodes_delegated\": %u, \"nodes_total\": %u},\n",
              s->partitions, s->nodes_delegated, s->nodes_qdq_total);
    sb_puts(&b, "  \"outputs\": [");
    for (uint32_t i = 0; i < s->n_outputs; i++) {
        sb_puts(&b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        sb_json_str(&b, s->outputs[i].name);
        sb_puts(&b, ", \"sqnr_db\": ");
        json_num(&b, s->outputs[i].sqnr_db);
        sb_puts(&b, "}");
    }
    sb_puts(&b, "\n  ],\n  \"float_nodes\": [");
    bool first = true;
    for (uint32_t i = 0; i < c->g->n_nodes; i++) {
        if (!c->node_float[i]) continue;
        const ctosa_onnx_node *n = &c->g->nodes[i];
        sb_puts(&b, first ? "\n    {\"node\": " : ",\n    {\"node\": ");
        first = false;
        sb_json_str(&b, n->name);
        sb_puts(&b, ", \"op_type\": ");
        sb_json_str(&b, n->op_type);
        sb_puts(&b, ", \"reason\": ");
        sb_json_str(&b, c->node_reason[i] ? c->node_reason[i] : "");
        sb_puts(&b, "}");
    }
    sb_puts(&b, "\n  ],\n  \"tensors\": [");
    first = true;
    for (uint32_t i = 0; i < c->n_t; i++) {
        const qz_tensor *t = &c->t[i];
        if (!t->is_float) continue;
        sb_puts(&b, first ? "\n    {\"name\": " : ",\n    {\"name\": ");
        first = false;
        sb_json_str(&b, t->name);
        sb_puts(&b, ", \"min\": ");
        json_num(&b, t->st.min);
        sb_puts(&b, ", \"max\": ");
        json_num(&b, t->st.max);
        if (t->quant) {
            sb_puts(&b, ", \"range\": [");
            json_num(&b, t->lo);
            sb_puts(&b, ", ");
            json_num(&b, t->hi);
            sb_puts(&b, "], \"scale\": ");
            json_num(&b, t->scale);
            sb_printf(&b, ", \"zero_point\": %d, \"dtype\": \"int%d\"", t->zp, qz_bits_of(c, t));
        } else {
            sb_printf(&b, ", \"quantized\": false%s", t->internal ? ", \"fused\": true" : "");
        }
        sb_puts(&b, "}");
    }
    sb_puts(&b, "\n  ]\n}\n");
    return sb_take(&b);
}

/* ------------------------------------------------------------ driver */

static ctosa_error *setup_tensors(qz_ctx *c) {
    const ctosa_onnx_graph *g = c->g;
    uint32_t cap = g->n_inputs + 1;
    for (uint32_t i = 0; i < g->n_nodes; i++) cap += g->nodes[i].n_outputs;
    c->t = calloc(cap, sizeof *c->t);
    c->node_float = calloc(g->n_nodes + 1, sizeof(bool));
    c->node_quant = calloc(g->n_nodes + 1, sizeof(bool));
    c->node_reason = calloc(g->n_nodes + 1, sizeof(char *));
    if (!c->t || !c->node_float || !c->node_quant || !c->node_reason) return ctosa_error_nomem();
    strmap_init(&c->by_name);
    arena_init(&c->a, 0);
    c->label = arena_alloc(&c->a, sizeof(char *) * (g->n_nodes + 1));
    if (!c->label) return ctosa_error_nomem();
    /* unnamed nodes get a name in the QDQ model, so that the lowering's
     * fallback list can be matched to them */
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        c->label[i] = n->name[0] ? n->name : arena_printf(&c->a, "%s_%u", n->op_type, i);
        if (!c->label[i]) return ctosa_error_nomem();
    }
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        bool init = false;
        for (uint32_t k = 0; k < g->n_initializers && !init; k++)
            init = !strcmp(g->initializers[k].name, g->inputs[i].name);
        if (init || strmap_has(&c->by_name, g->inputs[i].name)) continue;
        qz_tensor *t = &c->t[c->n_t++];
        t->name = g->inputs[i].name;
        t->producer = -1;
        strmap_put(&c->by_name, t->name, t);
    }
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_outputs; k++) {
            const char *nm = g->nodes[i].outputs[k];
            if (!nm[0] || strmap_has(&c->by_name, nm)) continue;
            qz_tensor *t = &c->t[c->n_t++];
            t->name = nm;
            t->producer = (int32_t)i;
            strmap_put(&c->by_name, nm, t);
        }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        qz_tensor *t = qz_tensor_of(c, g->outputs[i].name);
        if (t) t->is_output = true;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_inputs; k++) {
            qz_tensor *t = qz_tensor_of(c, g->nodes[i].inputs[k]);
            if (!t) continue;
            uint32_t *r = realloc(t->cons, sizeof(uint32_t) * (t->n_cons + 1));
            if (!r) return ctosa_error_nomem();
            t->cons = r;
            t->cons[t->n_cons++] = i;
        }
    /* values made from initializers and static shapes only (exporters
     * write Identity copies of shared weights, and Slice bounds computed
     * from Shape): constants, not activations */
    strmap inits;
    strmap_init(&inits);
    for (uint32_t k = 0; k < g->n_initializers; k++) strmap_put(&inits, g->initializers[k].name, (void *)1);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const ctosa_onnx_node *n = &g->nodes[i];
        /* subgraphs may read activations; random generators are not constant */
        bool cst = strncmp(n->op_type, "Random", 6) != 0;
        bool shape_of = !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size");
        for (uint32_t k = 0; k < n->n_attrs && cst; k++)
            cst = n->attrs[k].type != CTOSA_ONNX_ATTR_GRAPH && n->attrs[k].type != CTOSA_ONNX_ATTR_GRAPHS;
        for (uint32_t k = 0; k < n->n_inputs && cst && !shape_of; k++) {
            const char *in = n->inputs[k];
            qz_tensor *t = qz_tensor_of(c, in);
            cst = !in[0] || strmap_has(&inits, in) || (t && t->is_const);
        }
        for (uint32_t k = 0; k < n->n_outputs && cst; k++) {
            qz_tensor *t = qz_tensor_of(c, n->outputs[k]);
            if (t && t->producer == (int32_t)i && !t->is_output) t->is_const = true;
        }
    }
    strmap_free(&inits);
    return NULL;
}

/* Equalizes the float model (qz_equalize) and, when a pair was found,
 * writes it to the work folder and makes it the model quantized from here
 * on (*eq_path; NULL when nothing changed). */
static ctosa_error *equalize(qz_ctx *c, const char *work, qz_samples *smp, ctosa_quantize_summary *s,
                             arena *a, char **eq_path) {
    *eq_path = NULL;
    qz_graph q;
    qz_equalize_stats st;
    memset(&st, 0, sizeof st);
    ctosa_error *e = qz_graph_init(&q, c->m, c->path);
    if (!e) e = qz_equalize(&q, &st);
    char *path = NULL;
    if (!e && st.pairs) {
        path = arena_printf(a, "%s/equalized.onnx", work);
        e = path ? qz_graph_write(&q, path) : ctosa_error_nomem();
    }
    qz_graph_free(&q);
    /* the samples name the inputs by the strings of the model freed here */
    for (uint32_t k = 0; k < smp->n_inputs && !e && path; k++)
        if (!(smp->names[k] = arena_strdup(a, smp->names[k]))) e = ctosa_error_nomem();
    if (!e && path) {
        ctosa_onnx_free(c->m);
        c->m = NULL;
        c->g = NULL;
        e = ctosa_onnx_load(path, NULL, &c->m);
        if (!e) {
            c->g = ctosa_onnx_info(c->m)->graph;
            c->path = path;
            *eq_path = path;
        }
    }
    s->equalized = true;
    s->eq_pairs = st.pairs;
    s->eq_channels = st.channels;
    s->eq_sweeps = st.sweeps;
    s->eq_skipped_clamp = st.skipped_clamp;
    s->eq_skipped_other = st.skipped_other;
    s->eq_max_scale = st.first_max_scale;
    return e ? ctosa_error_prefix(e, "%s: equalizing", s->model) : NULL;
}

static void free_ctx(qz_ctx *c) {
    for (uint32_t i = 0; c->t && i < c->n_t; i++) {
        free(c->t[i].cons);
        free(c->t[i].st.hist);
        free(c->t[i].cval);
        free(c->t[i].mean);
        free(c->t[i].qmean);
    }
    free(c->t);
    free(c->node_float);
    free(c->node_quant);
    free(c->node_reason);
    strmap_free(&c->by_name);
    arena_free(&c->a);
}

static ctosa_error *resolve_spec(const ctosa_quantize_options *opt, int bits, ctosa_spec *spec) {
    ctosa_error *e;
    if (opt->spec && opt->target)
        return ctosa_error_new(CTOSA_ERR_USAGE, "give a spec or a target, not both");
    if (opt->spec) e = ctosa_spec_parse(opt->spec, spec);
    else if (opt->target) e = ctosa_spec_from_target(opt->target, spec);
    else e = ctosa_spec_parse(bits == 16 ? "TOSA-1.0+INT+int16" : "TOSA-1.0+INT", spec);
    if (e) return e;
    if (!(spec->profiles & CTOSA_PRO_INT))
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "quantize needs a spec with the INT profile (e.g. TOSA-1.0+INT)");
    if (bits == 16 && !(spec->extensions & CTOSA_EXT_BIT(INT16)))
        return ctosa_error_new(CTOSA_ERR_USAGE, "int16 activations need EXT-INT16: add +int16 to the spec "
                                                "(e.g. TOSA-1.0+INT+int16)");
    return NULL;
}

ctosa_error *ctosa_quantize(const char *model_path, const ctosa_quantize_options *opt,
                            ctosa_quantize_result **out) {
    *out = NULL;
    if (!opt || !opt->output_dir || !opt->output_dir[0])
        return ctosa_error_new(CTOSA_ERR_USAGE, "quantize: an output folder is required");
    int bits = opt->activation_bits ? opt->activation_bits : 8;
    if (bits != 8 && bits != 16)
        return ctosa_error_new(CTOSA_ERR_USAGE, "quantize: activations must be int8 or int16 (got %d bits)",
                               bits);
    if (!(opt->int16_budget >= 0 && opt->int16_budget <= 100))
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "quantize: the int16 MAC budget must be a percent in [0, 100] (got %g)",
                               opt->int16_budget);
    if (!opt->n_calibration)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "quantize: calibration data is required (--calibration NAME=FILE.npy)");
    ctosa_spec spec;
    ctosa_error *e = resolve_spec(opt, bits, &spec);
    if (e) return e;
    ctosa_quantize_result *res = calloc(1, sizeof *res);
    if (!res) return ctosa_error_nomem();
    arena_init(&res->a, 0);
    ctosa_quantize_summary *s = &res->s;
    char sbuf[256];
    ctosa_spec_format(&spec, sbuf, sizeof sbuf);
    s->spec = arena_strdup(&res->a, sbuf);
    s->model = arena_strdup(&res->a, model_path);
    s->activation_bits = bits;

    qz_ctx c;
    memset(&c, 0, sizeof c);
    c.bits = bits;
    c.symmetric = bits == 16;
    c.method = opt->method ? opt->method : bits == 16 ? CTOSA_QUANT_MINMAX : CTOSA_QUANT_MSE;
    c.percentile = opt->percentile > 0 ? opt->percentile : 99.99;
    if (c.percentile > 100)
        e = ctosa_error_new(CTOSA_ERR_USAGE, "quantize: percentile %g is above 100", c.percentile);
    s->method = method_name(c.method);
    c.path = c.model = model_path;
    qz_samples smp;
    memset(&smp, 0, sizeof smp);
    run_state rs;
    memset(&rs, 0, sizeof rs);
    char *work = NULL, *qdq_tmp = NULL, *final_qdq = NULL, *final_json = NULL;
    if (!e) e = ctosa_onnx_load(model_path, NULL, &c.m);
    if (!e) {
        c.g = ctosa_onnx_info(c.m)->graph;
        int64_t ops = ctosa_onnx_opset_version(c.m, "");
        if (ops < 13)
            e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                "%s: opset %lld: quantize needs opset 13 or later (per-channel "
                                "DequantizeLinear); export the model again with a newer opset",
                                model_path, (long long)ops);
    }
    if (!e) e = qz_samples_load(c.m, opt->calibration, opt->n_calibration, opt->max_samples, &smp);
    /* output names */
    const char *stem = opt->stem;
    if (!e && !stem) {
        const char *b = strrchr(model_path, '/');
        b = b ? b + 1 : model_path;
        size_t l = strlen(b);
        if (l > 5 && !strcmp(b + l - 5, ".onnx")) l -= 5;
        stem = arena_strndup(&res->a, b, l);
    }
    if (!e) e = make_dirs(opt->output_dir);
    if (!e) {
        work = arena_printf(&res->a, "%s/.%s.quantize.XXXXXX", opt->output_dir, stem);
        if (!work || !mkdtemp(work))
            e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot create a work folder: %s", opt->output_dir,
                                strerror(errno));
    }
    bool have_work = !e;
    if (!e) {
        qdq_tmp = arena_printf(&res->a, "%s/qdq.onnx", work);
        final_qdq = arena_printf(&res->a, "%s/%s.qdq.onnx", opt->output_dir, stem);
        final_json = arena_printf(&res->a, "%s/%s.quant.json", opt->output_dir, stem);
        s->qdq_path = final_qdq;
        s->report_path = final_json;
    }
    /* 0. cross-layer equalization: the rest runs on the equalized float
     * model, which is also the reference the SQNR is measured against */
    char *eq_tmp = NULL, *final_eq = NULL;
    if (!e && opt->equalize) e = equalize(&c, work, &smp, s, &res->a, &eq_tmp);
    if (!e && eq_tmp) {
        final_eq = arena_printf(&res->a, "%s/%s.equalized.onnx", opt->output_dir, stem);
        s->equalized_path = final_eq;
    }
    if (!e) e = setup_tensors(&c);
    s->samples = smp.n_samples;
    s->nodes_total = c.g ? c.g->n_nodes : 0;

    /* 1. float run with every intermediate exposed */
    if (!e) {
        rs.c = &c;
        rs.n_outputs = c.g->n_outputs;
        rs.out_names = calloc(rs.n_outputs + 1, sizeof(char *));
        rs.ref = calloc(rs.n_outputs + 1, sizeof(float **));
        rs.ref_n = calloc(rs.n_outputs + 1, sizeof(uint64_t));
        rs.sig = calloc(rs.n_outputs + 1, sizeof(double));
        rs.noise = calloc(rs.n_outputs + 1, sizeof(double));
        rs.pc = calloc(c.n_t + 1, sizeof *rs.pc);
        if (!rs.out_names || !rs.ref || !rs.ref_n || !rs.sig || !rs.noise || !rs.pc) e = ctosa_error_nomem();
        for (uint32_t i = 0; i < rs.n_outputs && !e; i++) {
            rs.out_names[i] = c.g->outputs[i].name;
            if (!(rs.ref[i] = calloc(smp.n_samples + 1, sizeof(float *)))) e = ctosa_error_nomem();
        }
    }
    if (!e) {
        qz_graph q;
        e = qz_graph_init(&q, c.m, c.path);
        const char **extra = calloc(c.n_t + 1, sizeof(char *));
        if (!extra && !e) e = ctosa_error_nomem();
        for (uint32_t i = 0; i < c.n_t && !e; i++)
            if (!c.t[i].is_output && c.t[i].producer >= 0) extra[q.n_extra++] = c.t[i].name;
        /* per-channel means of the inputs of layers with a bias */
        for (uint32_t i = 0; i < c.g->n_nodes && !e; i++) {
            qz_tensor *t =
                qz_node_bias_channels(&c, &q, i) ? qz_tensor_of(&c, c.g->nodes[i].inputs[0]) : NULL;
            if (t) rs.pc[t - c.t].want = true;
        }
        q.extra = extra;
        char *probe = arena_printf(&res->a, "%s/probe.onnx", work);
        ctosa_spec wide;
        widest_spec(&wide);
        if (!e) e = qz_graph_write(&q, probe);
        if (!e) e = qz_run_samples(probe, &wide, work, &smp, on_float, on_other, &rs);
        if (e) e = ctosa_error_prefix(e, "%s: running the float model", model_path);
        for (uint32_t i = 0; i < smp.n_inputs && !e; i++) {
            qz_tensor *t = qz_tensor_of(&c, smp.names[i]);
            if (!t || !(t->st.hist = calloc(QZ_HIST_BINS, sizeof(uint64_t)))) continue;
            t->is_float = true;
            qz_stats_add(&t->st, smp.data[i], smp.count[i] * smp.n_samples);
        }
        free(extra);
        qz_graph_free(&q);
    }
    ctosa_quantize_bias bias_mode = opt->no_bias_correction ? CTOSA_QUANT_BIAS_OFF
                                    : opt->bias_correction  ? opt->bias_correction
                                                            : CTOSA_QUANT_BIAS_FLOAT;
    c.bias_correction = bias_mode != CTOSA_QUANT_BIAS_OFF;
    s->bias = bias_mode == CTOSA_QUANT_BIAS_OFF     ? "off"
              : bias_mode == CTOSA_QUANT_BIAS_FLOAT ? "float"
                                                    : "sequential";
    for (uint32_t i = 0; i < c.n_t && !e; i++) {
        qz_tensor *t = &c.t[i];
        per_channel *p = &rs.pc[i];
        if (t->producer < 0 && p->want) /* graph inputs: from the samples */
            for (uint32_t k = 0; k < smp.n_inputs; k++)
                if (!strcmp(smp.names[k], t->name) && smp.rank[k] >= 2)
                    add_channels(p, smp.data[k], smp.count[k] * smp.n_samples, smp.rank[k], smp.shape[k]);
        if (p->sum && p->per) {
            if (!(t->mean = calloc(p->n_ch, sizeof(float)))) e = ctosa_error_nomem();
            for (uint32_t ch = 0; t->mean && ch < p->n_ch; ch++)
                t->mean[ch] = (float)(p->sum[ch] / (double)p->per);
            t->n_mean = p->n_ch;
        }
        if (t->is_float) qz_stats_range(&t->st, c.method, c.percentile, bits, c.symmetric, &t->lo, &t->hi);
    }
    /* 2. quantize what the target runs */
    for (uint32_t it = 0; it < 16 && !e; it++) {
        qz_plan_decide(&c);
        e = build_qdq(&c, qdq_tmp);
        uint32_t newly = 0;
        if (!e) e = check_target(&c, qdq_tmp, &spec, &newly, s, &res->a);
        if (!newly) break;
    }
    /* 3. range search; bias correction: the quantized inputs' per-channel means */
    if (!e && c.bias_correction) e = float_qmeans(&c, &rs, work, &smp, &res->a);
    if (!e && (opt->int16_tensors || opt->int16_budget > 0) && bits == 8) {
        e = select_int16(&c, &rs, &spec, work, &smp, opt->int16_tensors, opt->int16_budget, &res->a, s);
        if (!e && c.n_wide && c.bias_correction) e = float_qmeans(&c, &rs, work, &smp, &res->a);
    }
    if (!e && opt->range_search) {
        /* searched with the corrections of the first ranges, which then
         * follow the ranges chosen */
        e = search_ranges(&c, &rs, &spec, work, &smp, &res->a, s);
        if (!e && c.bias_correction && s->search_changed) e = float_qmeans(&c, &rs, work, &smp, &res->a);
    }
    if (!e && c.bias_correction && bias_mode == CTOSA_QUANT_BIAS_SEQUENTIAL)
        e = sequential_bias(&c, &rs, &spec, work, &smp, &res->a);
    if (!e && (c.bias_correction || opt->range_search || c.n_wide)) {
        uint32_t newly = 0;
        e = build_qdq(&c, qdq_tmp);
        if (!e) e = check_target(&c, qdq_tmp, &spec, &newly, s, &res->a);
    }
    /* 4. measure */
    if (!e) {
        for (uint32_t o = 0; o < rs.n_outputs; o++) rs.sig[o] = rs.noise[o] = 0;
        e = qz_run_samples(qdq_tmp, &spec, work, &smp, on_quant, NULL, &rs);
        if (e) e = ctosa_error_prefix(e, "%s: running the quantized model", model_path);
    }
    if (!e) {
        ctosa_quantize_output *o = arena_zalloc(&res->a, sizeof *o * (rs.n_outputs + 1));
        if (!o) e = ctosa_error_nomem();
        for (uint32_t i = 0; o && i < rs.n_outputs; i++) {
            o[i].name = arena_strdup(&res->a, rs.out_names[i]);
            o[i].sqnr_db = rs.noise[i] > 0 ? 10 * log10(rs.sig[i] / rs.noise[i]) : INFINITY;
        }
        s->outputs = o;
        s->n_outputs = rs.n_outputs;
        for (uint32_t i = 0; i < c.g->n_nodes; i++) s->nodes_float += c.node_float[i];
        for (uint32_t i = 0; i < c.n_t; i++) s->tensors_quantized += c.t[i].quant;
        res->json = make_report(&c, s, model_path);
        s->report_json = res->json;
        if (!res->json) e = ctosa_error_nomem();
    }
    /* 5. move into place */
    if (!e) e = write_whole_file(final_json, res->json, strlen(res->json));
    if (!e && rename(qdq_tmp, final_qdq) != 0) {
        e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot write: %s", final_qdq, strerror(errno));
        unlink(final_json);
    }
    if (!e && eq_tmp && rename(eq_tmp, final_eq) != 0) {
        e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot write: %s", final_eq, strerror(errno));
        unlink(final_json);
        unlink(final_qdq);
    }
    if (have_work) remove_tree(work);
    for (uint32_t i = 0; rs.ref && i < rs.n_outputs; i++) {
        for (uint32_t k = 0; rs.ref[i] && k < smp.n_samples; k++) free(rs.ref[i][k]);
        free(rs.ref[i]);
    }
    for (uint32_t i = 0; rs.pc && i < c.n_t; i++) free(rs.pc[i].sum);
    for (uint32_t i = 0; rs.qpc && i < c.n_t; i++) free(rs.qpc[i].sum);
    free(rs.qpc);
    free(rs.pc);
    free(rs.ref);
    free(rs.ref_n);
    free(rs.sig);
    free(rs.noise);
    free(rs.out_names);
    free_ctx(&c);
    qz_samples_free(&smp);
    ctosa_onnx_free(c.m);
    if (e) {
        ctosa_quantize_result_free(res);
        return e;
    }
    *out = res;
    return NULL;
}
