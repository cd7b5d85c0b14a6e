/* rt_report.c - reading a lowering report (<stem>.report.json) for the
 * runtime: what every boundary tensor is (numpy dtype, shape, scale / zero
 * point). Partition boundaries come first; the "graph" tensor list fills in
 * the values only CPU nodes touch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/rt_internal.h"
#include "util/json_parse.h"

struct ctosa_report {
    arena a;
    strmap tensors; /* name -> ctosa_runtime_tensor* */
    const char *path;
};

#define RT_REPORT_MAX_BYTES ((uint64_t)1 << 30)

static ctosa_error *bad(const ctosa_report *r, const json_value *v, const char *what) {
    return ctosa_error_new(CTOSA_ERR_FORMAT, "%s:%u:%u: %s", r->path, v ? v->line : 0, v ? v->col : 0, what);
}

/* One {"name", "dtype", "shape", "scale"?, "zero_point"?} entry. */
static ctosa_error *add_tensor(ctosa_report *r, const json_value *t) {
    const json_value *nm = json_get(t, "name"), *dt = json_get(t, "dtype"), *sh = json_get(t, "shape");
    if (!nm || nm->kind != JSON_STRING || !dt || dt->kind != JSON_STRING || !sh || sh->kind != JSON_ARRAY)
        return bad(r, t, "tensor entry needs \"name\", \"dtype\" and \"shape\"");
    if (strmap_has(&r->tensors, nm->str)) return NULL; /* partition boundaries were first */
    ctosa_runtime_tensor *x = arena_zalloc(&r->a, sizeof *x);
    int64_t *dims = arena_alloc(&r->a, (sh->n + 1) * sizeof *dims);
    if (!x || !dims) return ctosa_error_nomem();
    uint64_t count = 1;
    for (uint32_t i = 0; i < sh->n; i++) {
        const json_value *d = &sh->items[i];
        /* -1: a dimension the lowering could not infer */
        if (d->kind != JSON_NUMBER || !d->is_int || d->i < -1)
            return bad(r, d, "shape entries must be integers >= -1");
        dims[i] = d->i;
        if (d->i >= 0 && !mul_u64(count, (uint64_t)d->i, &count)) return bad(r, d, "shape too large");
    }
    x->name = nm->str;
    x->dtype = dt->str;
    x->rank = sh->n;
    x->shape = dims;
    x->count = count;
    const json_value *sc = json_get(t, "scale"), *zp = json_get(t, "zero_point");
    if (sc) {
        if (sc->kind != JSON_NUMBER || !zp || zp->kind != JSON_NUMBER || !zp->is_int)
            return bad(r, sc, "\"scale\" needs a number and an integer \"zero_point\"");
        x->quantized = true;
        x->scale = sc->num;
        x->zero_point = zp->i;
    }
    if (!strmap_put(&r->tensors, x->name, x)) return ctosa_error_nomem();
    return NULL;
}

static ctosa_error *add_list(ctosa_report *r, const json_value *list) {
    if (!list) return NULL;
    if (list->kind != JSON_ARRAY) return bad(r, list, "expected an array of tensors");
    for (uint32_t i = 0; i < list->n; i++) {
        ctosa_error *e = add_tensor(r, &list->items[i]);
        if (e) return e;
    }
    return NULL;
}

ctosa_error *ctosa_report_load(const char *path, ctosa_report **out) {
    *out = NULL;
    ctosa_report *r = calloc(1, sizeof *r);
    if (!r) return ctosa_error_nomem();
    arena_init(&r->a, 0);
    strmap_init(&r->tensors);
    r->path = arena_strdup(&r->a, path);
    char *text = NULL;
    size_t len = 0;
    json_value *root = NULL;
    ctosa_error *e = r->path ? read_whole_file(path, RT_REPORT_MAX_BYTES, &text, &len) : ctosa_error_nomem();
    if (!e) e = json_parse(text, len, path, &r->a, &root);
    free(text);
    if (!e && root->kind != JSON_OBJECT) e = bad(r, root, "a report is a JSON object");
    const json_value *parts = e ? NULL : json_get(root, "partitions");
    if (!e && parts && parts->kind != JSON_ARRAY) e = bad(r, parts, "\"partitions\" must be an array");
    for (uint32_t p = 0; !e && parts && p < parts->n; p++) {
        e = add_list(r, json_get(&parts->items[p], "inputs"));
        if (!e) e = add_list(r, json_get(&parts->items[p], "outputs"));
    }
    const json_value *g = e ? NULL : json_get(root, "graph");
    if (!e && g) e = add_list(r, json_get(g, "tensors"));
    /* A float tensor computed by DequantizeLinear lies on its quantized
     * input's grid: it carries that scale and zero point (comparisons in
     * quantization steps). */
    const json_value *nodes = g && !e ? json_get(g, "nodes") : NULL;
    for (uint32_t i = 0; nodes && nodes->kind == JSON_ARRAY && i < nodes->n; i++) {
        const json_value *op = json_get(&nodes->items[i], "op_type");
        const json_value *in = json_get(&nodes->items[i], "inputs"),
                         *outs = json_get(&nodes->items[i], "outputs");
        if (!op || op->kind != JSON_STRING || strcmp(op->str, "DequantizeLinear") != 0 || !in ||
            in->kind != JSON_ARRAY || !in->n || in->items[0].kind != JSON_STRING || !outs ||
            outs->kind != JSON_ARRAY || !outs->n || outs->items[0].kind != JSON_STRING)
            continue;
        const ctosa_runtime_tensor *q = strmap_get(&r->tensors, in->items[0].str);
        ctosa_runtime_tensor *f = strmap_get(&r->tensors, outs->items[0].str);
        if (q && f && q->quantized && !f->quantized) {
            f->quantized = true;
            f->scale = q->scale;
            f->zero_point = 0; /* the float value is scale * (q - zp): on the grid of scale */
        }
    }
    if (e) {
        ctosa_report_free(r);
        return e;
    }
    *out = r;
    return NULL;
}

/* <stem> of "<dir>/<stem>.partN.tosa" or "<dir>/<stem>.partitioned.onnx",
 * with the directory: the report's path, or NULL. */
static char *report_path_for(const char *artifact) {
    size_t n = strlen(artifact);
    const char *base = strrchr(artifact, '/');
    base = base ? base + 1 : artifact;
    size_t stem_end = 0;
    static const char suffix[] = ".partitioned.onnx";
    if (n >= sizeof suffix - 1 && strcmp(artifact + n - (sizeof suffix - 1), suffix) == 0) {
        stem_end = n - (sizeof suffix - 1);
    } else if (n > 5 && strcmp(artifact + n - 5, ".tosa") == 0) {
        /* back over digits and ".part" */
        size_t k = n - 5;
        while (k > 0 && artifact[k - 1] >= '0' && artifact[k - 1] <= '9') k--;
        if (k == n - 5 || k < 5 || strncmp(artifact + k - 5, ".part", 5) != 0) return NULL;
        stem_end = k - 5;
    } else {
        return NULL;
    }
    if (artifact + stem_end <= base) return NULL;
    char *p = malloc(stem_end + sizeof ".report.json");
    if (!p) return NULL;
    memcpy(p, artifact, stem_end);
    memcpy(p + stem_end, ".report.json", sizeof ".report.json");
    return p;
}

ctosa_error *ctosa_report_load_beside(const char *artifact, ctosa_report **out) {
    *out = NULL;
    char *p = report_path_for(artifact);
    if (!p) return NULL;
    struct stat st;
    ctosa_error *e = NULL;
    if (stat(p, &st) == 0) e = ctosa_report_load(p, out);
    free(p);
    return e;
}

void ctosa_report_free(ctosa_report *r) {
    if (!r) return;
    strmap_free(&r->tensors);
    arena_free(&r->a);
    free(r);
}

bool ctosa_report_tensor(const ctosa_report *r, const char *name, ctosa_runtime_tensor *info) {
    const ctosa_runtime_tensor *x = r ? strmap_get(&r->tensors, name) : NULL;
    if (!x) return false;
    *info = *x;
    return true;
}

const char *rt_report_path(const ctosa_report *r) { return r->path; }
