/* test_compliance.c - the compliance tables through the checker.
 *
 * For EVERY type-support row (389 of TOSA 1.0, all rows added in 1.1) this
 * builds a graph with one operator whose tensors have the row's types
 * (compile-time-constant inputs as constants) and runs spec_check_op_rules:
 *   - under the smallest spec enabling each of the row's OR-terms: no
 *     problem reported;
 *   - under a spec lacking what the row (and every row with the same
 *     signature) needs: "types (...)->... not allowed by <spec>";
 *   - 1.1 rows under TOSA 1.0: refused.
 * Then the other rules (CTC, ranks, levels, rounding modes, U55, counts,
 * versions) on hand-built cases, and the official example graphs. */
#include <inttypes.h>

#include "harness.h"
#include "ctosa/spec.h"
#include "ctosa/tosa_io.h"
#include "spec/compliance.h"
#include "spec/validate_internal.h"

/* ------------------------------------------------------------ building */

typedef struct built {
    ctosa_graph *g;
    ctosa_block *b;
    ctosa_op *op;
    const ctosa_tensor *in[8], *out[8];
    bool in_const[8];
    uint32_t n_in, n_out;
} built;

static int name_counter;

static ctosa_tensor *tensor(built *x, ctosa_dtype dt, uint32_t rank, bool is_shape, uint32_t shape_len,
                            bool constant) {
    char name[32];
    snprintf(name, sizeof name, "t%d", name_counter++);
    ctosa_tensor *t = NULL;
    if (is_shape || dt == CTOSA_DTYPE_SHAPE) {
        int64_t vals[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        CHECK_OK(ctosa_block_add_shape(x->g, x->b, name, shape_len, constant ? vals : NULL, &t));
        return t;
    }
    int32_t shp[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_OK(ctosa_block_add_tensor(x->g, x->b, name, dt, rank, shp, &t));
    if (t && constant) {
        static const uint8_t zeros[64];
        uint64_t bytes = 0;
        ctosa_dtype_storage_size(dt, 1, &bytes);
        CHECK_OK(ctosa_tensor_set_data(x->g, t, zeros, bytes, false));
    }
    return t;
}

static uint32_t pick_rank(const spec_arg *a) {
    if (!a->has_rank) return 1;
    int r = a->rank_min > 1 ? a->rank_min : 1;
    if (a->rank_max >= 0 && r > a->rank_max) r = a->rank_max;
    return (uint32_t)r;
}

/* Length of a shape argument's value for ops whose shape inputs the level
 * checks read (RESIZE scale has 4 values). */
static uint32_t shape_len(const spec_arg *a) {
    if (strcmp(a->name, "scale") == 0) return 4;
    if (strcmp(a->name, "padding") == 0) return 2;
    return 1;
}

/* One operator of kind oi with tensors typed by row (NULL: defaults). */
static void build(built *x, const spec_op_info *oi, const spec_row *row) {
    memset(x, 0, sizeof *x);
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &x->g));
    ctosa_region *r;
    CHECK_OK(ctosa_graph_add_region(x->g, "main", &r));
    CHECK_OK(ctosa_region_add_block(x->g, r, "main", &x->b));
    const char *in_names[8], *out_names[8];
    ctosa_attr attr;
    memset(&attr, 0, sizeof attr);
    if (oi->kind == CTOSA_OP_VARIABLE || oi->kind == CTOSA_OP_VARIABLE_READ ||
        oi->kind == CTOSA_OP_VARIABLE_WRITE) {
        ctosa_dtype dt = row ? (ctosa_dtype)row->types[0] : CTOSA_DTYPE_INT8;
        ctosa_tensor *v = tensor(x, dt, 1, false, 0, false);
        v->variable = true;
        if (oi->kind == CTOSA_OP_VARIABLE) {
            x->out[x->n_out++] = v;
        } else if (oi->kind == CTOSA_OP_VARIABLE_READ) {
            x->in[x->n_in++] = v;
            x->out[x->n_out++] = tensor(x, dt, 1, false, 0, false);
        } else {
            x->in[x->n_in++] = v;
            x->in[x->n_in++] = tensor(x, dt, 1, false, 0, false);
        }
    } else {
        for (uint32_t i = 0; i < oi->n_args; i++) {
            const spec_arg *a = spec_op_arg(oi, i);
            if (a->cat == SPEC_ARG_ATTR) continue;
            ctosa_dtype dt = spec_arg_dtype(oi, a, row);
            if (!dt) dt = strcmp(a->name, "multiplier") == 0 ? CTOSA_DTYPE_INT32 : CTOSA_DTYPE_INT8;
            uint32_t count = a->kind == SPEC_KIND_LIST ? (oi->kind == CTOSA_OP_CONCAT ? 2 : 1) : 1;
            for (uint32_t k = 0; k < count; k++) {
                bool ctc = a->cat == SPEC_ARG_INPUT && a->ctc_profiles;
                ctosa_tensor *t = tensor(x, dt, pick_rank(a), a->kind == SPEC_KIND_SHAPE, shape_len(a), ctc);
                if (a->cat == SPEC_ARG_INPUT) {
                    x->in_const[x->n_in] = ctc;
                    x->in[x->n_in++] = t;
                } else {
                    x->out[x->n_out++] = t;
                }
            }
        }
    }
    for (uint32_t i = 0; i < x->n_in; i++) in_names[i] = x->in[i]->name;
    for (uint32_t i = 0; i < x->n_out; i++) out_names[i] = x->out[i]->name;
    if (oi->acc_sym >= 0 && row) attr.acc_type = (ctosa_dtype)row->types[oi->acc_sym];
    if (oi->kind == CTOSA_OP_RESCALE) {
        attr.scale32 = true; /* multiplier is i32 */
        attr.rounding_mode = CTOSA_ROUND_SINGLE;
    }
    if (oi->kind == CTOSA_OP_RESIZE) attr.mode = CTOSA_RESIZE_NEAREST;
    CHECK_OK(ctosa_block_add_op(x->g, x->b, oi->kind, x->n_in, in_names, x->n_out, out_names, &attr, &x->op));
}

/* Runs the rules; returns the message (malloc'd) or NULL when clean. */
static char *run(built *x, const ctosa_spec *spec) {
    spec_op_ctx c = {.g = x->g,
                     .block = x->b,
                     .index = 0,
                     .op = x->op,
                     .spec = spec,
                     .prefix = "op #0 X 'y'",
                     .in = x->in,
                     .out = x->out,
                     .in_const = x->in_const};
    diag_list d;
    diag_init(&d, 0);
    spec_check_op_rules(&c, &d);
    ctosa_error *e = diag_finish(&d);
    diag_free(&d);
    if (!e) return NULL;
    char *m = strdup(ctosa_error_message(e));
    ctosa_error_free(e);
    return m;
}

/* ------------------------------------------------------------ specs */

static bool ext_is_fp(int e) {
    return e == CTOSA_EXT_BF16 || e == CTOSA_EXT_FP8E4M3 || e == CTOSA_EXT_FP8E5M2 || e == CTOSA_EXT_FFT ||
           e >= CTOSA_EXT_MX_COMMON;
}
static bool ext_is_int(int e) {
    return e == CTOSA_EXT_INT16 || e == CTOSA_EXT_INT4 || e == CTOSA_EXT_DOUBLEROUND ||
           e == CTOSA_EXT_INEXACTROUND;
}

/* Builds a spec string from parts and parses it (exercising the parser).
 * Adds the profile an extension belongs to when missing. */
static bool make_spec(int vkey, uint32_t pro, uint64_t ext, ctosa_spec *out) {
    for (int e = 0; e < CTOSA_EXT_COUNT; e++) {
        if (!(ext & (1ull << e))) continue;
        if (ext_is_fp(e)) pro |= CTOSA_PRO_FP;
        if (ext_is_int(e)) pro |= CTOSA_PRO_INT;
    }
    if (!pro) pro = CTOSA_PRO_INT;
    char buf[512];
    int n = snprintf(buf, sizeof buf, "TOSA-1.%d", vkey - 10);
    if (pro & CTOSA_PRO_INT) n += snprintf(buf + n, sizeof buf - (size_t)n, "+INT");
    if (pro & CTOSA_PRO_FP) n += snprintf(buf + n, sizeof buf - (size_t)n, "+FP");
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (ext & (1ull << e))
            n += snprintf(buf + n, sizeof buf - (size_t)n, "+%s", ctosa_ext_token((ctosa_ext)e));
    ctosa_error *err = ctosa_spec_parse(buf, out);
    CHECK_MSG(!err, "%s: %s", buf, err ? ctosa_error_message(err) : "");
    ctosa_error_free(err);
    return !err;
}

/* Every extension available in a version. */
static uint64_t all_ext(int vkey) {
    uint64_t m = 0;
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (vkey >= 11 || e < CTOSA_EXT_INT64) m |= 1ull << e;
    return m;
}

/* Whether two rows have the same full signature (types incl. acc). */
static bool same_sig(const spec_op_info *oi, const spec_row *a, const spec_row *b) {
    (void)oi;
    return memcmp(a->types, b->types, sizeof a->types) == 0;
}

/* The largest spec (of version vkey) that satisfies no term of any row of
 * oi with row's signature. Returns false when none exists (a row every
 * spec allows, such as ADD i32 with "PRO-INT or PRO-FP"). */
static bool negative_spec(const spec_op_info *oi, const spec_row *row, int vkey, ctosa_spec *out) {
    uint32_t pro = CTOSA_PRO_INT | CTOSA_PRO_FP;
    uint64_t ext = all_ext(vkey);
    for (int pass = 0; pass < 4; pass++) {
        for (uint32_t r = 0; r < oi->n_rows; r++) {
            const spec_row *o = spec_op_row(oi, r);
            if (!same_sig(oi, o, row) || o->version > vkey) continue;
            for (uint32_t t = 0; t < o->n_terms; t++) {
                const spec_term *tm = spec_row_term(o, t);
                if ((pro & tm->profiles) != tm->profiles || (ext & tm->extensions) != tm->extensions)
                    continue;
                if (tm->extensions & ext) ext &= ~(1ull << __builtin_ctzll(tm->extensions & ext));
                else pro &= ~(1u << __builtin_ctz(tm->profiles & pro));
            }
        }
        /* drop extensions whose profile is gone */
        for (int e = 0; e < CTOSA_EXT_COUNT; e++) {
            if (ext_is_fp(e) && !(pro & CTOSA_PRO_FP)) ext &= ~(1ull << e);
            if (ext_is_int(e) && !(pro & CTOSA_PRO_INT)) ext &= ~(1ull << e);
        }
    }
    if (!pro) return false;
    out->version = (ctosa_version){1, vkey - 10, 0, vkey == 11};
    out->profiles = pro;
    out->extensions = ext;
    out->level = CTOSA_LEVEL_NONE;
    out->u55 = false;
    char buf[512];
    ctosa_spec_format(out, buf, sizeof buf);
    ctosa_spec chk;
    ctosa_error *e = ctosa_spec_parse(buf, &chk); /* the spec must be expressible */
    CHECK_MSG(!e, "%s: %s", buf, e ? ctosa_error_message(e) : "");
    ctosa_error_free(e);
    return true;
}

/* ------------------------------------------------------------ every row */

static uint32_t rows_pos[12], rows_neg[12], rows_always[12], rows_version[12];

static void check_row(const spec_op_info *oi, const spec_row *row) {
    int v = row->version;
    built x;
    /* positive: each OR-term alone, in the row's version and in 1.1 */
    for (uint32_t t = 0; t < row->n_terms; t++) {
        const spec_term *tm = spec_row_term(row, t);
        for (int vkey = v; vkey <= 11; vkey++) {
            ctosa_spec s;
            if (!make_spec(vkey, tm->profiles, tm->extensions, &s)) continue;
            build(&x, oi, row);
            char *m = run(&x, &s);
            char sname[256];
            ctosa_spec_format(&s, sname, sizeof sname);
            CHECK_MSG(!m, "%s row '%s' under %s: %s", oi->name, row->mode, sname, m);
            free(m);
            ctosa_graph_free(x.g);
        }
    }
    rows_pos[v]++;
    /* negative: a spec lacking what the signature needs */
    ctosa_spec neg;
    if (negative_spec(oi, row, v, &neg)) {
        build(&x, oi, row);
        char *m = run(&x, &neg);
        char sname[256];
        ctosa_spec_format(&neg, sname, sizeof sname);
        CHECK_MSG(m != NULL, "%s row '%s' passed under %s", oi->name, row->mode, sname);
        if (m) {
            /* "types (..)->.. not allowed by SPEC" (or for VARIABLE*: needs EXT-VARIABLE /
             * variable type) */
            strbuf want;
            sb_init(&want);
            sb_printf(&want, "not allowed by %s", sname);
            bool var = oi->kind == CTOSA_OP_VARIABLE || oi->kind == CTOSA_OP_VARIABLE_READ ||
                       oi->kind == CTOSA_OP_VARIABLE_WRITE;
            if (var) {
                CHECK_MSG(strstr(m, "needs EXT-VARIABLE (+var), not in") || strstr(m, want.s), "%s: %s",
                          oi->name, m);
            } else {
                CHECK_MSG(strstr(m, "op #0 X 'y': types (") == m && strstr(m, want.s) &&
                              (strstr(m, "; allowed: ") || strstr(m, "; allowed acc_type: ") ||
                               strstr(m, " needs ")),
                          "%s row '%s' under %s: %s", oi->name, row->mode, sname, m);
                /* names what these types need when they are in the version */
                strbuf opn;
                sb_init(&opn);
                sb_printf(&opn, "; %s needs ", oi->name);
                CHECK_MSG(strstr(m, "; these types need ") || strstr(m, " needs one of: ") ||
                              strstr(m, opn.s),
                          "%s row '%s': %s", oi->name, row->mode, m);
                sb_free(&opn);
                /* exactly one problem line */
                CHECK_MSG(!strchr(m, '\n'), "%s: several problems: %s", oi->name, m);
            }
            sb_free(&want);
            rows_neg[v]++;
        }
        free(m);
        ctosa_graph_free(x.g);
    } else {
        rows_always[v]++;
    }
    /* 1.1 rows under TOSA 1.0 */
    if (v == 11) {
        const spec_term *tm = spec_row_term(row, 0);
        uint64_t ext10 = tm->extensions & all_ext(10);
        bool allowed10 = false;
        ctosa_spec s10;
        if (!make_spec(10, tm->profiles, ext10 | all_ext(10), &s10)) return;
        /* same signature present in 1.0 under this spec? */
        for (uint32_t r = 0; r < oi->n_rows; r++) {
            const spec_row *o = spec_op_row(oi, r);
            if (same_sig(oi, o, row) && spec_row_allowed(o, &s10)) allowed10 = true;
        }
        if (allowed10) return;
        build(&x, oi, row);
        char *m = run(&x, &s10);
        CHECK_MSG(m != NULL, "%s 1.1 row '%s' passed under TOSA 1.0", oi->name, row->mode);
        if (m) {
            if (oi->version == 11)
                CHECK_MSG(strstr(m, "is not in TOSA 1.0 (it is a TOSA 1.1 draft operator)"), "%s", m);
            else
                CHECK_MSG(strstr(m, "not allowed by TOSA-1.0+") &&
                              (strstr(m, "these types need TOSA 1.1") || strstr(m, "variable type")),
                          "%s row '%s': %s", oi->name, row->mode, m);
            rows_version[v]++;
        }
        free(m);
        ctosa_graph_free(x.g);
    }
}

static void test_every_row(void) {
    uint32_t nops, n10 = 0, n11 = 0;
    spec_op_at(0, &nops);
    CHECK(nops == 96);
    uint32_t ops10 = 0;
    for (uint32_t i = 0; i < nops; i++) {
        const spec_op_info *oi = spec_op_at(i, NULL);
        CHECK(spec_op_find(oi->kind) == oi);
        ops10 += oi->version == 10;
        for (uint32_t r = 0; r < oi->n_rows; r++) {
            const spec_row *row = spec_op_row(oi, r);
            CHECK(row->version == 10 || row->version == 11);
            n10 += row->version == 10;
            n11 += row->version == 11;
            check_row(oi, row);
        }
    }
    CHECK(ops10 == 75);
    CHECK(n10 == 389);
    CHECK(n10 == spec_row_count(10) && n11 == spec_row_count(11));
    CHECK(n11 > 0);
    fprintf(stderr,
            "rows: 1.0 %u (positive %u, negative %u, allowed by every spec %u); 1.1 %u "
            "(positive %u, negative %u, always %u, refused under 1.0 %u)\n",
            n10, rows_pos[10], rows_neg[10], rows_always[10], n11, rows_pos[11], rows_neg[11],
            rows_always[11], rows_version[11]);
    CHECK(rows_pos[10] == 389 && rows_pos[11] == n11);
    CHECK(rows_neg[10] + rows_always[10] == 389);
    CHECK(rows_neg[10] > 300); /* most rows need something a spec can lack */
}

/* ------------------------------------------------------------ specific rules */

static ctosa_spec spec_of(const char *text) {
    ctosa_spec s;
    memset(&s, 0, sizeof s);
    CHECK_OK(ctosa_spec_parse(text, &s));
    return s;
}

/* A CONV2D with given types, named like the contract's example. */
static char *conv(ctosa_dtype in, ctosa_dtype w, ctosa_dtype bias, ctosa_dtype out, ctosa_dtype acc,
                  const char *spec, bool zp_const) {
    built x;
    name_counter = 0;
    const spec_op_info *oi = spec_op_find(CTOSA_OP_CONV2D);
    build(&x, oi, spec_op_row(oi, 0));
    /* retype */
    ((ctosa_tensor *)x.in[0])->dtype = in;
    ((ctosa_tensor *)x.in[1])->dtype = w;
    ((ctosa_tensor *)x.in[2])->dtype = bias;
    ((ctosa_tensor *)x.in[3])->dtype = in;
    ((ctosa_tensor *)x.in[4])->dtype = w;
    ((ctosa_tensor *)x.out[0])->dtype = out;
    x.op->attr.acc_type = acc;
    if (!zp_const) x.in_const[3] = false;
    ctosa_spec s = spec_of(spec);
    spec_op_ctx c = {.g = x.g,
                     .block = x.b,
                     .index = 12,
                     .op = x.op,
                     .spec = &s,
                     .prefix = "op #12 CONV2D 'conv1'",
                     .in = x.in,
                     .out = x.out,
                     .in_const = x.in_const};
    diag_list d;
    diag_init(&d, 0);
    spec_check_op_rules(&c, &d);
    ctosa_error *e = diag_finish(&d);
    diag_free(&d);
    char *m = e ? strdup(ctosa_error_message(e)) : NULL;
    ctosa_error_free(e);
    ctosa_graph_free(x.g);
    return m;
}

#define I8 CTOSA_DTYPE_INT8
#define I16 CTOSA_DTYPE_INT16
#define I32 CTOSA_DTYPE_INT32
#define I48 CTOSA_DTYPE_INT48
#define F16 CTOSA_DTYPE_FP16
#define F32 CTOSA_DTYPE_FP32

static void expect_msg(char *m, const char *want) {
    CHECK_MSG(m && strcmp(m, want) == 0, "\n  got      %s\n  expected %s", m ? m : "(none)", want);
    free(m);
}

static void test_contract_message(void) {
    expect_msg(conv(I8, I8, I32, I16, I32, "TOSA-1.0+INT", true),
               "op #12 CONV2D 'conv1': types (i8,i8,i32,i8,i8)->i16 not allowed by TOSA-1.0+INT; "
               "allowed: (i8,i8,i32,i8,i8)->i32");
    CHECK(conv(I8, I8, I32, I32, I32, "TOSA-1.0+INT", true) == NULL);
    /* int16 needs the extension: the message says which */
    expect_msg(conv(I16, I8, I48, I48, I48, "TOSA-1.0+INT", true),
               "op #12 CONV2D 'conv1': types (i16,i8,i48,i16,i8)->i48 not allowed by "
               "TOSA-1.0+INT; allowed: (i8,i8,i32,i8,i8)->i32; these types need EXT-INT16 (add "
               "+int16)");
    CHECK(conv(I16, I8, I48, I48, I48, "TOSA-1.0+INT+int16", true) == NULL);
    /* acc_type mismatch */
    expect_msg(conv(F16, F16, F16, F16, I32, "TOSA-1.0+FP", true),
               "op #12 CONV2D 'conv1': types (fp16,fp16,fp16,fp16,fp16)->fp16 with acc_type i32 "
               "not allowed by TOSA-1.0+FP; allowed acc_type: fp16 fp32");
    /* acc_type bf16 with fp16 tensors: a 1.1 mixed-precision row */
    expect_msg(conv(F16, F16, F16, F16, CTOSA_DTYPE_BF16, "TOSA-1.1+FP", true),
               "op #12 CONV2D 'conv1': types (fp16,fp16,fp16,fp16,fp16)->fp16 with acc_type bf16 "
               "not allowed by TOSA-1.1+FP; allowed acc_type: fp16 fp32; these types need "
               "EXT-BF16 (add +bf16)");
    CHECK(conv(F16, F16, F16, F16, CTOSA_DTYPE_BF16, "TOSA-1.1+FP+bf16", true) == NULL);
    CHECK(conv(F16, F16, F16, F16, F32, "TOSA-1.0+FP", true) == NULL);
    /* a non-constant zero point */
    expect_msg(conv(I8, I8, I32, I32, I32, "TOSA-1.0+INT", false),
               "op #12 CONV2D 'conv1': input 3 'input_zp' (tensor 't3') must be a compile-time "
               "constant (CONST or CONST_SHAPE output) unless EXT-DYNAMIC (+dynamic) is enabled");
    CHECK(conv(I8, I8, I32, I32, I32, "TOSA-1.0+INT+dynamic", false) == NULL);
}

/* Builds an op of kind with default types (first row), applies tweak. */
typedef void (*tweak_fn)(built *x);
static char *one(ctosa_op_kind k, int row, const char *spec, tweak_fn tw) {
    const spec_op_info *oi = spec_op_find(k);
    built x;
    name_counter = 0;
    build(&x, oi, row >= 0 ? spec_op_row(oi, (uint32_t)row) : NULL);
    if (tw) tw(&x);
    ctosa_spec s = spec_of(spec);
    char *m = run(&x, &s);
    ctosa_graph_free(x.g);
    return m;
}

static void set_rank5(built *x) {
    int32_t *s = ctosa_graph_alloc(x->g, 7 * sizeof(int32_t));
    for (int i = 0; i < 7; i++) s[i] = 1;
    ((ctosa_tensor *)x->in[0])->rank = 7;
    ((ctosa_tensor *)x->in[0])->shape = s;
}
static void set_rank3(built *x) { ((ctosa_tensor *)x->in[0])->rank = 3; }
static void big_stride(built *x) {
    static const int32_t st[2] = {9000, 1}, k[2] = {2, 2};
    x->op->attr.stride = (ctosa_i32s){st, 2};
    x->op->attr.kernel = (ctosa_i32s){k, 2};
}
static void big_tensor(built *x) {
    int32_t *s = ctosa_graph_alloc(x->g, 2 * sizeof(int32_t));
    s[0] = 65536;
    s[1] = 65536;
    ((ctosa_tensor *)x->in[0])->rank = 2;
    ((ctosa_tensor *)x->in[0])->shape = s;
}
static void double_round(built *x) { x->op->attr.rounding_mode = CTOSA_ROUND_DOUBLE; }
static void inexact_round(built *x) { x->op->attr.rounding_mode = CTOSA_ROUND_INEXACT; }
static void scale16(built *x) { x->op->attr.scale32 = false; }
static void drop_input(built *x) { x->op->n_inputs = 1; }
static void bilinear(built *x) { x->op->attr.mode = CTOSA_RESIZE_BILINEAR; }
static void big_scale(built *x) {
    /* scale_y_n/scale_y_d = 300 > MAX_SCALE 256 of 8K */
    static uint8_t d[32];
    int64_t v[4] = {300, 1, 1, 1};
    for (int i = 0; i < 4; i++) wr_u64(d + 8 * i, (uint64_t)v[i]);
    ((ctosa_tensor *)x->in[1])->data.ptr = d;
}

static void big_dilation(built *x) {
    static const int32_t dil[2] = {5000, 1};
    x->op->attr.dilation = (ctosa_i32s){dil, 2};
    int32_t *w = ctosa_graph_alloc(x->g, 4 * sizeof(int32_t));
    w[0] = 1, w[1] = 2, w[2] = 1, w[3] = 1; /* KH = 2: dilation_y * KH = 10000 */
    ((ctosa_tensor *)x->in[1])->shape = w;
}
static void shape_not_const(built *x) { x->in_const[1] = false; }

/* CONCAT with n inputs */
static char *concat_n(uint32_t n, const char *spec) {
    const spec_op_info *oi = spec_op_find(CTOSA_OP_CONCAT);
    built x;
    name_counter = 0;
    memset(&x, 0, sizeof x);
    CHECK_OK(ctosa_graph_create(CTOSA_VERSION_1_0, &x.g));
    ctosa_region *r;
    CHECK_OK(ctosa_graph_add_region(x.g, "main", &r));
    CHECK_OK(ctosa_region_add_block(x.g, r, "main", &x.b));
    const ctosa_tensor **in = calloc(n, sizeof *in);
    const char **names = calloc(n, sizeof *names);
    bool *cst = calloc(n, 1);
    for (uint32_t i = 0; i < n; i++) {
        in[i] = tensor(&x, CTOSA_DTYPE_INT8, 1, false, 0, false);
        names[i] = in[i]->name;
    }
    const ctosa_tensor *out = tensor(&x, CTOSA_DTYPE_INT8, 1, false, 0, false);
    const char *on = out->name;
    CHECK_OK(ctosa_block_add_op(x.g, x.b, oi->kind, n, names, 1, &on, NULL, &x.op));
    ctosa_spec s = spec_of(spec);
    spec_op_ctx c = {.g = x.g,
                     .block = x.b,
                     .op = x.op,
                     .spec = &s,
                     .prefix = "op #0 X 'y'",
                     .in = in,
                     .out = &out,
                     .in_const = cst};
    diag_list d;
    diag_init(&d, 0);
    spec_check_op_rules(&c, &d);
    ctosa_error *e = diag_finish(&d);
    diag_free(&d);
    char *m = e ? strdup(ctosa_error_message(e)) : NULL;
    ctosa_error_free(e);
    free(in);
    free(names);
    free(cst);
    ctosa_graph_free(x.g);
    return m;
}

static void test_rules(void) {
    /* MAX_TENSOR_LIST_SIZE */
    CHECK(concat_n(64, "TOSA-1.0+INT+8k") == NULL);
    expect_msg(concat_n(65, "TOSA-1.0+INT+8k"),
               "op #0 X 'y': input1 has 65 tensors, exceeding MAX_TENSOR_LIST_SIZE 64 of level 8K");
    CHECK(concat_n(65, "TOSA-1.0+INT") == NULL);
    /* MAX_KERNEL through dilation * KH */
    expect_msg(one(CTOSA_OP_CONV2D, 0, "TOSA-1.0+INT+8k", big_dilation),
               "op #0 X 'y': dilation_y * KH = 10000 exceeds MAX_KERNEL 8192 of level 8K");
    CHECK(one(CTOSA_OP_CONV2D, 0, "TOSA-1.0+INT", big_dilation) == NULL);
    /* a shape input that is not a compile-time constant */
    expect_msg(one(CTOSA_OP_RESHAPE, 0, "TOSA-1.0+FP", shape_not_const),
               "op #0 X 'y': input 1 'shape' (tensor 't1') must be a compile-time constant (CONST "
               "or CONST_SHAPE output) unless EXT-DYNAMIC (+dynamic) is enabled");
    CHECK(one(CTOSA_OP_RESHAPE, 0, "TOSA-1.0+FP+dynamic", shape_not_const) == NULL);
    /* TABLE's table is a CTC for PRO-INT only */
    CHECK(one(CTOSA_OP_TABLE, 0, "TOSA-1.0+INT", NULL) == NULL);
    /* ranks */
    expect_msg(one(CTOSA_OP_ADD, 0, "TOSA-1.0+INT+8k", set_rank5),
               "op #0 X 'y': input 0 'input1' (tensor 't0') has rank 7, exceeding MAX_RANK 6 of "
               "level 8K");
    CHECK(one(CTOSA_OP_ADD, 0, "TOSA-1.0+INT", set_rank5) == NULL); /* level none: 32 */
    expect_msg(one(CTOSA_OP_CONV2D, 0, "TOSA-1.0+INT", set_rank3),
               "op #0 X 'y': input 0 'input' (tensor 't0') has rank 3; CONV2D needs rank 4");
    /* level limits */
    expect_msg(one(CTOSA_OP_MAX_POOL2D, 0, "TOSA-1.0+INT+8k", big_stride),
               "op #0 X 'y': stride_y = 9000 exceeds MAX_STRIDE 8192 of level 8K");
    CHECK(one(CTOSA_OP_MAX_POOL2D, 0, "TOSA-1.0+INT", big_stride) == NULL);
    expect_msg(one(CTOSA_OP_RESIZE, 0, "TOSA-1.0+INT+8k", big_scale),
               "op #0 X 'y': scale_y_n/scale_y_d = 300 exceeds MAX_SCALE 256 of level 8K");
    expect_msg(one(CTOSA_OP_IDENTITY, 0, "TOSA-1.0+INT+8k", big_tensor),
               "op #0 X 'y': input 0 tensor 't0' has 4294967296 bytes, reaching 2^MAX_LOG2_SIZE "
               "(2^31) of level 8K");
    /* rounding modes */
    char *m = one(CTOSA_OP_RESCALE, 0, "TOSA-1.0+INT", double_round);
    CHECK_MSG(m && strstr(m, "rounding_mode DOUBLE_ROUND needs EXT-DOUBLEROUND (+doubleround), "
                             "not in TOSA-1.0+INT"),
              "%s", m);
    free(m);
    CHECK(one(CTOSA_OP_RESCALE, 0, "TOSA-1.0+INT+doubleround", double_round) == NULL);
    m = one(CTOSA_OP_RESCALE, 0, "TOSA-1.0+INT", inexact_round);
    CHECK_MSG(m && strstr(m, "rounding_mode INEXACT_ROUND needs EXT-INEXACTROUND (+inexactround)"), "%s", m);
    free(m);
    CHECK(one(CTOSA_OP_RESCALE, 0, "TOSA-1.0+INT+inexactround", inexact_round) == NULL);
    expect_msg(one(CTOSA_OP_RESCALE, 0, "TOSA-1.0+INT", scale16),
               "op #0 X 'y': multiplier is i32 but scale32 = false needs i16");
    /* operand counts */
    expect_msg(one(CTOSA_OP_ADD, 0, "TOSA-1.0+INT", drop_input),
               "op #0 X 'y': has 1 input and 1 output; ADD takes 2 inputs and 1 output");
    /* operator versions */
    expect_msg(one(CTOSA_OP_DIM, 0, "TOSA-1.0+INT", NULL),
               "op #0 X 'y': DIM is not in TOSA 1.0 (it is a TOSA 1.1 draft operator)");
    m = one(CTOSA_OP_DIM, 3, "TOSA-1.1+INT", NULL); /* i32 row: needs shape */
    CHECK_MSG(m && strstr(m, "types (i32)->shape not allowed by TOSA-1.1+INT; DIM needs PRO-INT and "
                             "EXT-SHAPE (add +shape)"),
              "%s", m);
    free(m);
    CHECK(one(CTOSA_OP_DIM, 3, "TOSA-1.1+INT+shape", NULL) == NULL);
    /* whole operator missing from the profile */
    m = one(CTOSA_OP_FFT2D, 0, "TOSA-1.0+FP", NULL);
    CHECK_MSG(m && strcmp(m, "op #0 X 'y': types (fp32,fp32)->(fp32,fp32) not allowed by "
                             "TOSA-1.0+FP; FFT2D needs EXT-FFT (add +fft)") == 0,
              "%s", m);
    free(m);
    m = one(CTOSA_OP_COND_IF, 0, "TOSA-1.0+INT", NULL);
    CHECK_MSG(m && strstr(m, "not allowed by TOSA-1.0+INT; COND_IF needs EXT-CONTROLFLOW (add +cf)"), "%s",
              m);
    free(m);
    CHECK(one(CTOSA_OP_COND_IF, 0, "TOSA-1.0+INT+cf", NULL) == NULL);
    /* an INT-only operator under FP: its rows need PRO-INT */
    m = one(CTOSA_OP_RESCALE, 0, "TOSA-1.0+FP", NULL);
    CHECK_MSG(m && strstr(m, "types (i8,i32,i8,i8,i8)->i8 not allowed by TOSA-1.0+FP; RESCALE "
                             "needs PRO-INT (add +INT)"),
              "%s", m);
    free(m);
    /* int64 under 1.0 */
    const spec_op_info *add = spec_op_find(CTOSA_OP_ADD);
    int r64 = -1;
    for (uint32_t r = 0; r < add->n_rows; r++)
        if (spec_op_row(add, r)->types[0] == CTOSA_DTYPE_INT64) r64 = (int)r;
    CHECK(r64 >= 0);
    expect_msg(one(CTOSA_OP_ADD, r64, "TOSA-1.0+INT", NULL),
               "op #0 X 'y': types (i64,i64)->i64 not allowed by TOSA-1.0+INT; allowed: "
               "(i32,i32)->i32; these types need TOSA 1.1 (EXT-INT64)");
    expect_msg(one(CTOSA_OP_ADD, r64, "TOSA-1.1+INT", NULL),
               "op #0 X 'y': types (i64,i64)->i64 not allowed by TOSA-1.1+INT; allowed: "
               "(i32,i32)->i32; these types need EXT-INT64 (add +int64)");
    CHECK(one(CTOSA_OP_ADD, r64, "TOSA-1.1+INT+int64", NULL) == NULL);
}

static void test_u55(void) {
    /* ops the subset lacks */
    expect_msg(one(CTOSA_OP_EQUAL, 0, "TOSA-1.0+INT+u55", NULL),
               "op #0 X 'y': bool tensors are not supported by the Ethos-U55 subset (u55): "
               "Ethos-U55 has no boolean data type\n"
               "op #0 X 'y': EQUAL is not supported by the Ethos-U55 subset (u55): no comparison "
               "operations on Ethos-U55");
    CHECK(one(CTOSA_OP_EQUAL, 0, "TOSA-1.0+INT", NULL) == NULL);
    char *m = one(CTOSA_OP_LOGICAL_AND, 0, "TOSA-1.0+INT+u55", NULL);
    CHECK_MSG(m && strstr(m, "bool tensors are not supported by the Ethos-U55 subset (u55)") &&
                  strstr(m, "LOGICAL_AND is not supported"),
              "%s", m);
    free(m);
    /* dtypes: REDUCE_MAX on i32 */
    const spec_op_info *rm = spec_op_find(CTOSA_OP_REDUCE_MAX);
    int ri32 = -1;
    for (uint32_t r = 0; r < rm->n_rows; r++)
        if (spec_op_row(rm, r)->types[0] == CTOSA_DTYPE_INT32 && ri32 < 0) ri32 = (int)r;
    expect_msg(one(CTOSA_OP_REDUCE_MAX, ri32, "TOSA-1.0+INT+u55", NULL),
               "op #0 X 'y': REDUCE_MAX on i32 is not supported by the Ethos-U55 subset (u55): "
               "REDUCE_MAX on Ethos-U55 is i8/i16 only");
    CHECK(one(CTOSA_OP_REDUCE_MAX, 0, "TOSA-1.0+INT+u55", NULL) == NULL); /* i8 */
    expect_msg(one(CTOSA_OP_RESIZE, 0, "TOSA-1.0+INT+u55", bilinear),
               "op #0 X 'y': RESIZE BILINEAR is not supported by the Ethos-U55 subset (u55): no "
               "bilinear RESIZE on Ethos-U55");
    CHECK(one(CTOSA_OP_RESIZE, 0, "TOSA-1.0+INT+u55", NULL) == NULL);
    m = one(CTOSA_OP_MAX_POOL2D, 0, "TOSA-1.0+INT+u55", big_stride);
    CHECK_MSG(m && strstr(m, "MAX_POOL2D with kernel 2x2 and stride 9000x1 is not supported by "
                             "the Ethos-U55 subset (u55)"),
              "%s", m);
    free(m);
    CHECK(one(CTOSA_OP_CONV2D, 0, "TOSA-1.0+INT+u55", NULL) == NULL);
    ctosa_op_kind k;
    CHECK(spec_u55_rule(0, &k) != NULL);
}

/* ------------------------------------------------------------ table facts */

static void test_types_allowed(void) {
    ctosa_spec i = spec_of("TOSA-1.0+INT"), i16 = spec_of("TOSA-1.0+INT+int16"), f = spec_of("TOSA-1.0+FP"),
               f11 = spec_of("TOSA-1.1+FP+int64");
    ctosa_dtype in[5] = {I8, I8, I32, I8, I8}, out[1] = {I32};
    CHECK(spec_types_allowed(CTOSA_OP_CONV2D, 5, in, 1, out, I32, &i));
    CHECK(!spec_types_allowed(CTOSA_OP_CONV2D, 5, in, 1, out, I48, &i));
    CHECK(!spec_types_allowed(CTOSA_OP_CONV2D, 5, in, 1, out, I32, &f));
    CHECK(!spec_types_allowed(CTOSA_OP_CONV2D, 4, in, 1, out, I32, &i));
    ctosa_dtype a16[2] = {I16, I16};
    CHECK(!spec_types_allowed(CTOSA_OP_TABLE, 2, a16, 1, (ctosa_dtype[]){I32}, 0, &i));
    CHECK(spec_types_allowed(CTOSA_OP_TABLE, 2, a16, 1, (ctosa_dtype[]){I32}, 0, &i16));
    ctosa_dtype c[7] = {I8, I8, I8, I8, I8, I8, I8};
    CHECK(spec_types_allowed(CTOSA_OP_CONCAT, 7, c, 1, c, 0, &i));
    CHECK(spec_types_allowed(CTOSA_OP_CONCAT, 20, (ctosa_dtype[20]){0}, 1, c, 0, &i));
    ctosa_dtype g[2] = {CTOSA_DTYPE_FP32, CTOSA_DTYPE_INT64};
    CHECK(spec_types_allowed(CTOSA_OP_GATHER, 2, g, 1, g, 0, &f11));
    CHECK(!spec_types_allowed(CTOSA_OP_GATHER, 2, g, 1, g, 0, &f));
    CHECK(!spec_types_allowed(CTOSA_OP_DIM, 1, g, 1, (ctosa_dtype[]){CTOSA_DTYPE_SHAPE}, 0, &f));
}

static void test_table_facts(void) {
    const spec_op_info *c = spec_op_find(CTOSA_OP_CONV2D);
    CHECK(c && c->n_rows >= 9 && c->acc_sym == 3 && strcmp(c->syms[0], "in_t") == 0);
    uint32_t ni, no;
    bool li, lo;
    spec_operand_counts(c, &ni, &li, &no, &lo);
    CHECK(ni == 5 && no == 1 && !li && !lo);
    const spec_op_info *cc = spec_op_find(CTOSA_OP_CONCAT);
    spec_operand_counts(cc, &ni, &li, &no, &lo);
    CHECK(ni == 0 && li && no == 1);
    uint16_t map[5];
    uint16_t omap[1];
    CHECK(spec_map_operands(cc, 5, 1, map, omap));
    CHECK(!spec_map_operands(c, 4, 1, map, omap));
    const spec_op_info *ci = spec_op_find(CTOSA_OP_COND_IF);
    uint16_t m3[3], o2[2];
    CHECK(spec_map_operands(ci, 3, 2, m3, o2) && m3[0] == 0 && m3[1] == 1 && m3[2] == 1);
    CHECK(spec_rounding_mode_ext(CTOSA_ROUND_DOUBLE) == CTOSA_EXT_BIT(DOUBLEROUND));
    CHECK(spec_rounding_mode_ext(CTOSA_ROUND_INEXACT) == CTOSA_EXT_BIT(INEXACTROUND));
    CHECK(spec_rounding_mode_ext(CTOSA_ROUND_SINGLE) == 0);
    CHECK(spec_level_info(CTOSA_LEVEL_8K)->v[SPEC_LIMIT_RANK] == 6);
    CHECK(spec_level_info(CTOSA_LEVEL_NONE)->v[SPEC_LIMIT_RANK] == 32);
    CHECK(spec_level_info(CTOSA_LEVEL_8K)->v[SPEC_LIMIT_TENSOR_LIST_SIZE] == 64);
    CHECK(spec_op_find(CTOSA_OP_UNKNOWN) == NULL);
    CHECK(strcmp(spec_dtype_short(CTOSA_DTYPE_INT48), "i48") == 0);
    CHECK(strcmp(spec_dtype_short(CTOSA_DTYPE_SHAPE), "shape") == 0);
    strbuf b;
    sb_init(&b);
    spec_format_row_generic(&b, c, spec_op_row(c, 0));
    CHECK_MSG(strcmp(b.s, "(i8,i8,i32,i8,i8)->i32 acc i32") == 0, "%s", b.s);
    sb_free(&b);
    /* GATHER's 1.1 i64 index rows: OR of two AND terms */
    const spec_op_info *g = spec_op_find(CTOSA_OP_GATHER);
    bool found = false;
    for (uint32_t r = 0; r < g->n_rows; r++) {
        const spec_row *row = spec_op_row(g, r);
        if (row->types[0] == CTOSA_DTYPE_INT64 && row->types[1] == CTOSA_DTYPE_INT8) {
            sb_init(&b);
            spec_format_requirement(&b, row);
            CHECK_MSG(strcmp(b.s, "PRO-INT and EXT-INT64 or PRO-FP and EXT-INT64") == 0, "%s", b.s);
            sb_free(&b);
            found = true;
        }
    }
    CHECK(found);
}

/* ------------------------------------------------------------ examples */

static void test_examples(void) {
    if (!th_shared_dir()) {
        fprintf(stderr, "  (../shared absent: example graphs not checked)\n");
        return;
    }
    const char *dir = th_shared_path("reference/tosa/examples");
    static const struct {
        const char *file, *spec;
    } ex[] = {
        {"test_add_1x4x4x4_f32/flatbuffer-tflite/test_add_1x4x4x4_f32.tosa", "TOSA-1.0+FP"},
        {"test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11/flatbuffer-tflite/"
         "test_conv2d_1x1_1x32x32x8_f32_st11_padSAME_dilat11.tosa",
         "TOSA-1.0+FP"},
        {"test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11/flatbuffer-tflite/"
         "test_conv2d_1x1_1x32x32x8_qi8_st11_padSAME_dilat11.tosa",
         "TOSA-1.0+INT+doubleround"}, /* its RESCALEs use DOUBLE_ROUND */
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        const char *path = th_path(dir, ex[i].file);
        ctosa_graph *g = NULL;
        ctosa_error *e = ctosa_read_file(path, NULL, &g);
        if (e) {
            fprintf(stderr, "  (skipping %s: %s)\n", ex[i].file, ctosa_error_message(e));
            ctosa_error_free(e);
            continue;
        }
        ctosa_spec s = spec_of(ex[i].spec);
        /* every operator of the main block through the rules */
        ctosa_region *r = ctosa_graph_region(g, 0);
        ctosa_block *b = r->blocks[0];
        uint32_t checked = 0;
        for (uint32_t k = 0; k < b->n_ops; k++) {
            ctosa_op *op = b->ops[k];
            const ctosa_tensor *in[16] = {0}, *out[16] = {0};
            bool cst[16] = {0};
            if (op->n_inputs > 16 || op->n_outputs > 16) continue;
            for (uint32_t j = 0; j < op->n_inputs; j++) {
                in[j] = ctosa_block_find_tensor(g, b, op->inputs[j]);
                cst[j] = in[j] && (in[j]->data.kind != CTOSA_DATA_NONE || in[j]->is_shape);
                for (uint32_t q = 0; q < k; q++) /* produced by CONST / CONST_SHAPE */
                    if ((b->ops[q]->kind == CTOSA_OP_CONST || b->ops[q]->kind == CTOSA_OP_CONST_SHAPE) &&
                        b->ops[q]->n_outputs && strcmp(b->ops[q]->outputs[0], op->inputs[j]) == 0)
                        cst[j] = true;
            }
            for (uint32_t j = 0; j < op->n_outputs; j++)
                out[j] = ctosa_block_find_tensor(g, b, op->outputs[j]);
            spec_op_ctx c = {.g = g,
                             .block = b,
                             .index = k,
                             .op = op,
                             .spec = &s,
                             .prefix = "op",
                             .in = in,
                             .out = out,
                             .in_const = cst};
            diag_list d;
            diag_init(&d, 0);
            spec_check_op_rules(&c, &d);
            ctosa_error *pe = diag_finish(&d);
            diag_free(&d);
            CHECK_MSG(!pe, "%s op #%u %s under %s: %s", ex[i].file, k, ctosa_op_name(op->kind), ex[i].spec,
                      ctosa_error_message(pe));
            ctosa_error_free(pe);
            checked++;
        }
        CHECK(checked > 0);
        /* the FP graphs are refused by an INT-only spec, the int8 one
         * without +doubleround */
        {
            ctosa_spec si = spec_of(strcmp(ex[i].spec, "TOSA-1.0+FP") == 0 ? "TOSA-1.0+INT" : "TOSA-1.0+INT");
            uint32_t refused = 0;
            for (uint32_t k = 0; k < b->n_ops; k++) {
                ctosa_op *op = b->ops[k];
                if (op->kind == CTOSA_OP_CONST || op->kind == CTOSA_OP_CONST_SHAPE) continue;
                const ctosa_tensor *in[16] = {0}, *out[16] = {0};
                bool cst[16];
                memset(cst, 1, sizeof cst);
                if (op->n_inputs > 16 || op->n_outputs > 16) continue;
                for (uint32_t j = 0; j < op->n_inputs; j++)
                    in[j] = ctosa_block_find_tensor(g, b, op->inputs[j]);
                for (uint32_t j = 0; j < op->n_outputs; j++)
                    out[j] = ctosa_block_find_tensor(g, b, op->outputs[j]);
                spec_op_ctx c = {.g = g,
                                 .block = b,
                                 .index = k,
                                 .op = op,
                                 .spec = &si,
                                 .prefix = "op",
                                 .in = in,
                                 .out = out,
                                 .in_const = cst};
                diag_list d;
                diag_init(&d, 0);
                spec_check_op_rules(&c, &d);
                ctosa_error *pe = diag_finish(&d);
                diag_free(&d);
                refused += pe != NULL;
                ctosa_error_free(pe);
            }
            CHECK(refused > 0);
        }
        ctosa_graph_free(g);
    }
}

int main(void) {
    RUN(test_table_facts);
    RUN(test_types_allowed);
    RUN(test_every_row);
    RUN(test_contract_message);
    RUN(test_rules);
    RUN(test_u55);
    RUN(test_examples);
    return th_finish();
}
