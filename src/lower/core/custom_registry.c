/* custom_registry.c - the custom-operator registry (ctosa/custom.h):
 * registrations, lookup, interpreter kernels, plugins (dlopen + a host
 * function table, so plugins link against nothing) and --custom-ops JSON
 * files (pass-through operators with simple shape rules). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctosa/custom.h"
#include "util/json_parse.h"
#include "util/util.h"

/* Output rule of a --custom-ops operator: like input j (dtype optionally
 * overridden) or an explicit shape + dtype. */
typedef struct json_rule {
    int32_t like_input; /* -1: explicit */
    ctosa_dtype dtype;  /* UNKNOWN with like_input: the input's dtype */
    uint32_t rank;
    int64_t shape[CTOSA_CUSTOM_MAX_RANK];
} json_rule;

typedef struct json_op {
    uint32_t n_rules;
    json_rule *rules;
} json_op;

struct ctosa_custom_registry {
    arena a; /* copies of strings, dtype lists, JSON rules */
    ctosa_custom_op *ops;
    uint32_t n, cap;
    void **plugins; /* dlopen handles, closed at free */
    uint32_t n_plugins, cap_plugins;
    ctosa_error *load_err; /* first problem while a plugin initialises */
};

ctosa_error *ctosa_custom_registry_create(ctosa_custom_registry **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return ctosa_error_nomem();
    arena_init(&(*out)->a, 0);
    return NULL;
}

void ctosa_custom_registry_free(ctosa_custom_registry *reg) {
    if (!reg) return;
    for (uint32_t i = reg->n_plugins; i-- > 0;) dlclose(reg->plugins[i]);
    free(reg->plugins);
    free(reg->ops);
    ctosa_error_free(reg->load_err);
    arena_free(&reg->a);
    free(reg);
}

static bool std_domain(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

static bool same_domain(const char *a, const char *b) {
    if (std_domain(a) || std_domain(b)) return std_domain(a) && std_domain(b);
    return strcmp(a, b) == 0;
}

ctosa_error *ctosa_custom_register(ctosa_custom_registry *reg, const ctosa_custom_op *op) {
    if (!reg || !op) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_custom_register: NULL argument");
    const char *what = op->onnx_op_type ? op->onnx_op_type : "?";
    if (!op->onnx_op_type || !op->onnx_op_type[0])
        return ctosa_error_new(CTOSA_ERR_USAGE, "custom operator: onnx_op_type is required");
    if (!op->infer)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "custom operator %s::%s: a shape inference callback (infer) is "
                               "required",
                               op->onnx_domain ? op->onnx_domain : "", what);
    const char *dom = op->tosa_domain               ? op->tosa_domain
                      : std_domain(op->onnx_domain) ? NULL
                                                    : op->onnx_domain;
    if (!dom || !dom[0])
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "custom operator %s: a standard ONNX operator needs a "
                               "tosa_domain (CUSTOM domain_name)",
                               what);
    if (op->tosa_operator && !op->tosa_operator[0])
        return ctosa_error_new(CTOSA_ERR_USAGE, "custom operator %s: empty tosa_operator", what);
    if (op->since_opset < 0 || op->until_opset < 0 || (op->until_opset && op->until_opset < op->since_opset))
        return ctosa_error_new(CTOSA_ERR_USAGE, "custom operator %s: bad opset range %lld..%lld", what,
                               (long long)op->since_opset, (long long)op->until_opset);
    if (op->n_dtypes && !op->dtypes)
        return ctosa_error_new(CTOSA_ERR_USAGE, "custom operator %s: n_dtypes without dtypes", what);
    for (uint32_t i = 0; i < op->n_dtypes; i++)
        if (!ctosa_dtype_name(op->dtypes[i]) || op->dtypes[i] == CTOSA_DTYPE_UNKNOWN)
            return ctosa_error_new(CTOSA_ERR_USAGE, "custom operator %s: dtypes[%u] = %d is not a TOSA dtype",
                                   what, i, (int)op->dtypes[i]);
    if (reg->n == reg->cap) {
        uint32_t cap = reg->cap ? reg->cap * 2 : 8;
        ctosa_custom_op *n = realloc(reg->ops, cap * sizeof *n);
        if (!n) return ctosa_error_nomem();
        reg->ops = n;
        reg->cap = cap;
    }
    ctosa_custom_op c = *op;
    c.onnx_domain = arena_strdup(&reg->a, std_domain(op->onnx_domain) ? "" : op->onnx_domain);
    c.onnx_op_type = arena_strdup(&reg->a, op->onnx_op_type);
    c.tosa_domain = arena_strdup(&reg->a, dom);
    c.tosa_operator = arena_strdup(&reg->a, op->tosa_operator ? op->tosa_operator : op->onnx_op_type);
    c.dtypes = op->n_dtypes ? arena_memdup(&reg->a, op->dtypes, op->n_dtypes * sizeof *op->dtypes) : NULL;
    if (!c.onnx_domain || !c.onnx_op_type || !c.tosa_domain || !c.tosa_operator ||
        (op->n_dtypes && !c.dtypes))
        return ctosa_error_nomem();
    reg->ops[reg->n++] = c;
    return NULL;
}

uint32_t ctosa_custom_registry_count(const ctosa_custom_registry *reg) { return reg ? reg->n : 0; }

const ctosa_custom_op *ctosa_custom_registry_get(const ctosa_custom_registry *reg, uint32_t i) {
    return reg && i < reg->n ? &reg->ops[i] : NULL;
}

const ctosa_custom_op *ctosa_custom_registry_find(const ctosa_custom_registry *reg, const char *domain,
                                                  const char *op_type, int64_t opset) {
    if (!reg || !op_type) return NULL;
    for (uint32_t i = reg->n; i-- > 0;) {
        const ctosa_custom_op *o = &reg->ops[i];
        if (strcmp(o->onnx_op_type, op_type) != 0 || !same_domain(o->onnx_domain, domain)) continue;
        if (opset >= 0 && o->since_opset && opset < o->since_opset) continue;
        if (opset >= 0 && o->until_opset && opset > o->until_opset) continue;
        return o;
    }
    return NULL;
}

ctosa_error *ctosa_custom_registry_attach(const ctosa_custom_registry *reg, ctosa_interp *it) {
    if (!reg || !it) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_custom_registry_attach: NULL argument");
    for (uint32_t i = 0; i < reg->n; i++) {
        const ctosa_custom_op *o = &reg->ops[i];
        if (!o->kernel) continue;
        ctosa_error *e =
            ctosa_interp_register_custom(it, o->tosa_domain, o->tosa_operator, o->kernel, o->user);
        if (e) return e;
    }
    return NULL;
}

/* ------------------------------------------------------------ plugins */

static int host_register(ctosa_custom_registry *reg, const ctosa_custom_op *op) {
    ctosa_error *e = ctosa_custom_register(reg, op);
    if (!e) return 0;
    if (!reg->load_err) reg->load_err = e;
    else ctosa_error_free(e);
    return -1;
}

static void host_fail(ctosa_custom_registry *reg, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ctosa_error *e = ctosa_error_vnew(CTOSA_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    if (!reg->load_err) reg->load_err = e;
    else ctosa_error_free(e);
}

static bool host_attrs_number(const uint8_t *attrs, uint32_t len, const char *key, double *out) {
    if (!attrs || !len || !key) return false;
    arena a;
    arena_init(&a, 4096);
    json_value *v = NULL;
    ctosa_error *e = json_parse((const char *)attrs, len, "implementation_attrs", &a, &v);
    bool ok = false;
    if (!e) {
        const json_value *m = json_get(v, key);
        if (m && m->kind == JSON_NUMBER) {
            *out = m->num;
            ok = true;
        }
    }
    ctosa_error_free(e);
    arena_free(&a);
    return ok;
}

static const ctosa_plugin_host host_table = {
    CTOSA_PLUGIN_API_VERSION, sizeof(ctosa_plugin_host), host_register,     host_fail,
    ctosa_error_new,          host_attrs_number,         ctosa_dtype_short,
};

ctosa_error *ctosa_custom_registry_load_plugin(ctosa_custom_registry *reg, const char *path) {
    if (!reg || !path || !path[0]) return ctosa_error_new(CTOSA_ERR_USAGE, "load_plugin: no plugin path");
    /* A bare file name that exists here means this file, not a search of
     * the library path. */
    char *local = NULL;
    struct stat st;
    if (!strchr(path, '/') && stat(path, &st) == 0) {
        local = malloc(strlen(path) + 3);
        if (!local) return ctosa_error_nomem();
        strcpy(local, "./");
        strcat(local, path);
    }
    dlerror();
    void *h = dlopen(local ? local : path, RTLD_NOW | RTLD_LOCAL);
    free(local);
    if (!h) {
        const char *why = dlerror();
        return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot load plugin: %s", path, why ? why : "dlopen failed");
    }
    dlerror();
    void *sym = dlsym(h, CTOSA_PLUGIN_ENTRY);
    if (!sym) {
        dlclose(h);
        return ctosa_error_new(CTOSA_ERR_FORMAT,
                               "%s: not a ctosa plugin: it does not export %s() (see "
                               "ctosa/custom.h)",
                               path, CTOSA_PLUGIN_ENTRY);
    }
    if (reg->n_plugins == reg->cap_plugins) {
        uint32_t cap = reg->cap_plugins ? reg->cap_plugins * 2 : 4;
        void **n = realloc(reg->plugins, cap * sizeof *n);
        if (!n) {
            dlclose(h);
            return ctosa_error_nomem();
        }
        reg->plugins = n;
        reg->cap_plugins = cap;
    }
    ctosa_plugin_init_fn init;
    memcpy(&init, &sym, sizeof init); /* object pointer -> function pointer */
    uint32_t before = reg->n;
    ctosa_error_free(reg->load_err);
    reg->load_err = NULL;
    uint32_t v = init(reg, &host_table, CTOSA_PLUGIN_API_VERSION);
    ctosa_error *e = NULL;
    if (v != CTOSA_PLUGIN_API_VERSION) {
        e = ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                            "%s: plugin built against ctosa plugin API version %u, but "
                            "this ctosa provides version %u: rebuild it with this ctosa's ctosa/custom.h",
                            path, v, CTOSA_PLUGIN_API_VERSION);
    } else if (reg->load_err) {
        e = ctosa_error_prefix(reg->load_err, "%s: plugin failed to initialise", path);
        reg->load_err = NULL;
    }
    if (e) {
        reg->n = before; /* withdraw what it registered: its code goes away */
        ctosa_error_free(reg->load_err);
        reg->load_err = NULL;
        dlclose(h);
        return e;
    }
    reg->plugins[reg->n_plugins++] = h;
    return NULL;
}

/* ------------------------------------------------------- --custom-ops */

static ctosa_error *json_infer(void *user, const ctosa_custom_node *node, const ctosa_custom_tensor *in,
                               uint32_t n_in, ctosa_custom_tensor *out, uint32_t n_out) {
    const json_op *jo = user;
    if (n_out != jo->n_rules)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "the node has %u output%s but --custom-ops declares %u",
                               n_out, n_out == 1 ? "" : "s", jo->n_rules);
    for (uint32_t k = 0; k < n_out; k++) {
        const json_rule *r = &jo->rules[k];
        if (r->like_input >= 0) {
            uint32_t j = (uint32_t)r->like_input;
            if (j >= n_in || !in[j].present)
                return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                                       "output %u is declared like input %u, which the "
                                       "node does not have",
                                       k, j);
            out[k] = in[j];
            out[k].data = NULL;
            out[k].nbytes = 0;
            out[k].onnx_dtype = 0;
            if (r->dtype != CTOSA_DTYPE_UNKNOWN) out[k].dtype = r->dtype;
        } else {
            out[k].dtype = r->dtype;
            out[k].rank = r->rank;
            memcpy(out[k].shape, r->shape, sizeof r->shape);
        }
    }
    (void)node;
    return NULL;
}

static ctosa_error *jerr(const char *name, const json_value *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ctosa_error *jerr(const char *name, const json_value *v, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ctosa_error_new(CTOSA_ERR_FORMAT, "%s:%u:%u: %s", name, v->line, v->col, msg);
}

static bool dtype_from_name(const char *s, ctosa_dtype *out) {
    static const struct {
        const char *np;
        ctosa_dtype t;
    } alias[] = {
        {"float32", CTOSA_DTYPE_FP32}, {"float16", CTOSA_DTYPE_FP16}, {"bfloat16", CTOSA_DTYPE_BF16},
        {"int8", CTOSA_DTYPE_INT8},    {"int16", CTOSA_DTYPE_INT16},  {"int32", CTOSA_DTYPE_INT32},
        {"int64", CTOSA_DTYPE_INT64},  {"bool", CTOSA_DTYPE_BOOL},
    };
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(alias); i++)
        if (strcmp(s, alias[i].np) == 0) return *out = alias[i].t, true;
    for (int t = 1; t < CTOSA_DTYPE_COUNT; t++) {
        const char *n = ctosa_dtype_short((ctosa_dtype)t);
        if (n && strcmp(n, s) == 0) return *out = (ctosa_dtype)t, true;
    }
    return false;
}

static ctosa_error *json_string(const char *name, const json_value *o, const char *key, bool required,
                                const char **out) {
    const json_value *v = json_get(o, key);
    *out = NULL;
    if (!v) return required ? jerr(name, o, "missing \"%s\"", key) : NULL;
    if (v->kind != JSON_STRING || strlen(v->str) != v->len)
        return jerr(name, v, "\"%s\" must be a string", key);
    *out = v->str;
    return NULL;
}

static ctosa_error *json_dtype(const char *name, const json_value *v, ctosa_dtype *out) {
    if (v->kind != JSON_STRING || !dtype_from_name(v->str, out))
        return jerr(name, v, "expected a dtype name such as \"fp32\", \"int8\", \"float32\"");
    return NULL;
}

static ctosa_error *json_one_op(ctosa_custom_registry *reg, const char *name, const json_value *o) {
    static const char *const known[] = {"domain",      "op_type",       "since_opset", "until_opset",
                                        "domain_name", "operator_name", "dtypes",      "outputs"};
    if (o->kind != JSON_OBJECT) return jerr(name, o, "an operator must be an object");
    for (uint32_t i = 0; i < o->n; i++) {
        bool ok = false;
        for (size_t k = 0; k < CTOSA_ARRAY_LEN(known); k++) ok |= strcmp(o->keys[i], known[k]) == 0;
        if (!ok) return jerr(name, &o->items[i], "unknown key \"%s\" in an operator", o->keys[i]);
    }
    ctosa_custom_op op = {0};
    ctosa_error *e;
    if ((e = json_string(name, o, "domain", true, &op.onnx_domain))) return e;
    if ((e = json_string(name, o, "op_type", true, &op.onnx_op_type))) return e;
    if ((e = json_string(name, o, "domain_name", false, &op.tosa_domain))) return e;
    if ((e = json_string(name, o, "operator_name", false, &op.tosa_operator))) return e;
    const char *ok_names[] = {"since_opset", "until_opset"};
    int64_t *dst[] = {&op.since_opset, &op.until_opset};
    for (int k = 0; k < 2; k++) {
        const json_value *v = json_get(o, ok_names[k]);
        if (!v) continue;
        if (v->kind != JSON_NUMBER || !v->is_int || v->i < 0)
            return jerr(name, v, "\"%s\" must be a non-negative integer", ok_names[k]);
        *dst[k] = v->i;
    }
    const json_value *dt = json_get(o, "dtypes");
    ctosa_dtype *dts = NULL;
    if (dt) {
        if (dt->kind != JSON_ARRAY || dt->n == 0)
            return jerr(name, dt, "\"dtypes\" must be a non-empty array");
        dts = arena_alloc(&reg->a, dt->n * sizeof *dts);
        if (!dts) return ctosa_error_nomem();
        for (uint32_t i = 0; i < dt->n; i++)
            if ((e = json_dtype(name, &dt->items[i], &dts[i]))) return e;
        op.dtypes = dts;
        op.n_dtypes = dt->n;
    }
    const json_value *outs = json_get(o, "outputs");
    if (!outs) return jerr(name, o, "missing \"outputs\" (one shape rule per output)");
    if (outs->kind != JSON_ARRAY || outs->n == 0)
        return jerr(name, outs, "\"outputs\" must be a non-empty array");
    json_op *jo = arena_zalloc(&reg->a, sizeof *jo);
    json_rule *rules = jo ? arena_zalloc(&reg->a, outs->n * sizeof *rules) : NULL;
    if (!rules) return ctosa_error_nomem();
    for (uint32_t k = 0; k < outs->n; k++) {
        const json_value *r = &outs->items[k];
        json_rule *rl = &rules[k];
        rl->like_input = -1;
        if (r->kind != JSON_OBJECT)
            return jerr(name, r,
                        "an output rule must be an object: {\"like_input\": J} or {\"shape\": [...], "
                        "\"dtype\": \"fp32\"}");
        for (uint32_t i = 0; i < r->n; i++)
            if (strcmp(r->keys[i], "like_input") && strcmp(r->keys[i], "shape") &&
                strcmp(r->keys[i], "dtype"))
                return jerr(name, &r->items[i], "unknown key \"%s\" in an output rule", r->keys[i]);
        const json_value *li = json_get(r, "like_input"), *sh = json_get(r, "shape"),
                         *d = json_get(r, "dtype");
        if (d && (e = json_dtype(name, d, &rl->dtype))) return e;
        if (li) {
            if (sh) return jerr(name, sh, "give \"like_input\" or \"shape\", not both");
            if (li->kind != JSON_NUMBER || !li->is_int || li->i < 0 || li->i > 255)
                return jerr(name, li, "\"like_input\" must be an input index from 0 to 255");
            rl->like_input = (int32_t)li->i;
            continue;
        }
        if (!sh || !d)
            return jerr(name, r, "output %u needs \"like_input\", or both \"shape\" and \"dtype\"", k);
        if (sh->kind != JSON_ARRAY || sh->n > CTOSA_CUSTOM_MAX_RANK)
            return jerr(name, sh, "\"shape\" must be an array of at most %d dimensions",
                        CTOSA_CUSTOM_MAX_RANK);
        rl->rank = sh->n;
        for (uint32_t i = 0; i < sh->n; i++) {
            const json_value *x = &sh->items[i];
            if (x->kind != JSON_NUMBER || !x->is_int || x->i < 0 || x->i > INT32_MAX)
                return jerr(name, x, "a dimension must be an integer from 0 to 2147483647");
            rl->shape[i] = x->i;
        }
    }
    jo->n_rules = outs->n;
    jo->rules = rules;
    op.infer = json_infer;
    op.user = jo;
    e = ctosa_custom_register(reg, &op);
    return e ? ctosa_error_prefix(e, "%s:%u:%u", name, o->line, o->col) : NULL;
}

ctosa_error *ctosa_custom_registry_load_json_text(ctosa_custom_registry *reg, const char *text, size_t len,
                                                  const char *name) {
    if (!reg || !text) return ctosa_error_new(CTOSA_ERR_USAGE, "load_json: NULL argument");
    if (!name) name = "<custom-ops>";
    arena a;
    arena_init(&a, 0);
    json_value *root = NULL;
    ctosa_error *e = json_parse(text, len, name, &a, &root);
    if (!e && root->kind != JSON_OBJECT) e = jerr(name, root, "expected an object {\"custom_ops\": [...]}");
    const json_value *ops = e ? NULL : json_get(root, "custom_ops");
    for (uint32_t i = 0; !e && i < root->n; i++)
        if (strcmp(root->keys[i], "custom_ops") != 0 && strcmp(root->keys[i], "version") != 0)
            e = jerr(name, &root->items[i], "unknown key \"%s\" (expected \"custom_ops\")", root->keys[i]);
    const json_value *ver = e ? NULL : json_get(root, "version");
    if (!e && ver && (ver->kind != JSON_NUMBER || !ver->is_int || ver->i != 1))
        e = jerr(name, ver, "\"version\" must be 1");
    if (!e && !ops) e = jerr(name, root, "missing \"custom_ops\"");
    if (!e && ops->kind != JSON_ARRAY) e = jerr(name, ops, "\"custom_ops\" must be an array");
    uint32_t before = reg->n;
    for (uint32_t i = 0; !e && i < ops->n; i++) e = json_one_op(reg, name, &ops->items[i]);
    if (e) reg->n = before;
    arena_free(&a);
    return e;
}

ctosa_error *ctosa_custom_registry_load_json(ctosa_custom_registry *reg, const char *path) {
    if (!path) return ctosa_error_new(CTOSA_ERR_USAGE, "load_json: no path");
    char *buf = NULL;
    size_t size = 0;
    ctosa_error *e = read_whole_file(path, 64u << 20, &buf, &size);
    if (e) return e;
    e = ctosa_custom_registry_load_json_text(reg, buf, size, path);
    free(buf);
    return e;
}
