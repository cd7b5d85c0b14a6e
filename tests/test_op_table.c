/* test_op_table.c - the operator table (CTOSA_OP_LIST) against the
 * specification's generated operand lists (spec/compliance_gen.h, made by
 * tools/gen_compliance.py from the 1.0 spec XML and the 1.1 rows), and the
 * places that derive from it: validator, interpreter, transpose pass,
 * lowering. */
#include "harness.h"
#include "ctosa/interp.h"
#include "ctosa/spec.h"
#include "interp/interp_runtime.h"
#include "spec/compliance.h"

/* Every row against the spec: counts, the older writers' omitted inputs,
 * data slots. */
static void test_counts_match_spec(void) {
    for (int k = 1; k < CTOSA_OP_COUNT; k++) {
        ctosa_op_kind op = (ctosa_op_kind)k;
        const char *name = ctosa_op_name(op);
        const ctosa_op_props *p = ctosa_op_props_of(op);
        const spec_op_info *oi = spec_op_find(op);
        CHECK_MSG(p && oi && name, "operator %d has no row or no spec entry", k);
        if (!p || !oi) continue;
        uint32_t ni, no;
        bool li, lo;
        spec_operand_counts(oi, &ni, &li, &no, &lo);
        /* VARIABLE_READ / VARIABLE_WRITE: the flatbuffer names the variable
         * as one more operand (their attribute tables are empty). */
        int extra_in = op == CTOSA_OP_VARIABLE_READ || op == CTOSA_OP_VARIABLE_WRITE;
        int extra_out = op == CTOSA_OP_VARIABLE_WRITE;
        if (li) {
            /* a tensor list: at least the fixed operands (CONCAT and
             * CONCAT_SHAPE need one tensor to have a type) */
            CHECK_MSG(p->max_inputs == -1 && p->min_inputs >= (int)ni && p->min_inputs <= (int)ni + 1,
                      "%s inputs %d..%d, spec %u + a list", name, p->min_inputs, p->max_inputs, ni);
        } else {
            CHECK_MSG(p->min_inputs == (int)ni && p->max_inputs == (int)ni + extra_in,
                      "%s inputs %d..%d, spec %u", name, p->min_inputs, p->max_inputs, ni);
        }
        if (lo)
            CHECK_MSG(p->max_outputs == -1 && p->min_outputs == (int)no,
                      "%s outputs %d..%d, spec %u + a list", name, p->min_outputs, p->max_outputs, no);
        else
            CHECK_MSG(p->min_outputs == (int)no && p->max_outputs == (int)no + extra_out,
                      "%s outputs %d..%d, spec %u", name, p->min_outputs, p->max_outputs, no);

        /* Older writers may only omit trailing inputs that the spec makes
         * compile-time constants (they were attributes then). */
        CHECK_MSG(p->older_min_inputs <= p->min_inputs, "%s older minimum above the minimum", name);
        uint32_t in_idx = 0;
        for (uint32_t a = 0; a < oi->n_args; a++) {
            const spec_arg *arg = spec_op_arg(oi, a);
            if (arg->cat != SPEC_ARG_INPUT) continue;
            if (in_idx >= (uint32_t)p->older_min_inputs && in_idx < (uint32_t)p->min_inputs)
                CHECK_MSG(arg->ctc_profiles != 0, "%s: older writers omit input %u '%s', not a CTC", name,
                          in_idx, arg->name);
            /* Inputs of a layout-following operator that are not data are
             * parameters: compile-time constants in the spec. */
            if (p->layout != CTOSA_OP_LAYOUT_NONE && arg->kind != SPEC_KIND_LIST &&
                !ctosa_op_is_data_slot(op, in_idx))
                CHECK_MSG(arg->ctc_profiles != 0, "%s: input %u '%s' is neither data nor a CTC", name, in_idx,
                          arg->name);
            if (ctosa_op_is_data_slot(op, in_idx))
                CHECK_MSG(arg->kind == SPEC_KIND_TENSOR || arg->kind == SPEC_KIND_LIST,
                          "%s: data slot %u '%s' is not a tensor", name, in_idx, arg->name);
            in_idx++;
        }
        if (p->layout == CTOSA_OP_LAYOUT_NONE)
            CHECK_MSG(p->data_slots == 0, "%s: data slots without a layout class", name);
        else CHECK_MSG(p->data_slots != 0 && ctosa_op_is_data_slot(op, 0), "%s: no data slot 0", name);
        if (p->layout == CTOSA_OP_LAYOUT_AXIS) {
            uint32_t n;
            bool has_axis = false;
            const ctosa_attr_field *f = ctosa_op_attr_fields(op, &n);
            for (uint32_t i = 0; f && i < n; i++) has_axis |= strcmp(f[i].name, "axis") == 0;
            CHECK_MSG(has_axis, "%s: layout AXIS without an axis attribute", name);
        }
    }
}

/* Class and flags agree with what the spec says of the operands. */
static void test_classes_and_flags(void) {
    for (int k = 1; k < CTOSA_OP_COUNT; k++) {
        ctosa_op_kind op = (ctosa_op_kind)k;
        const char *name = ctosa_op_name(op);
        const ctosa_op_props *p = ctosa_op_props_of(op);
        const spec_op_info *oi = spec_op_find(op);
        if (!p || !oi) continue;
        uint32_t f = p->flags;
        if (f & CTOSA_OPF_DECLARES)
            CHECK_MSG(!(f & CTOSA_OPF_COMPUTES) && p->max_inputs == 0, "%s declares but takes inputs", name);
        uint32_t data_in = 0, tensor_out = 0;
        for (uint32_t a = 0; a < oi->n_args; a++) {
            const spec_arg *arg = spec_op_arg(oi, a);
            if (arg->cat == SPEC_ARG_INPUT && arg->kind == SPEC_KIND_TENSOR && !arg->ctc_profiles) data_in++;
            if (arg->cat == SPEC_ARG_OUTPUT && arg->kind == SPEC_KIND_TENSOR) tensor_out++;
        }
        switch (p->op_class) {
        case CTOSA_OP_CLASS_UNARY:
            CHECK_MSG(data_in == 1 && p->layout == CTOSA_OP_LAYOUT_EW, "%s: not unary", name);
            break;
        case CTOSA_OP_CLASS_BINARY:
            CHECK_MSG(p->layout == CTOSA_OP_LAYOUT_EW && p->min_inputs >= 2, "%s: not binary", name);
            break;
        case CTOSA_OP_CLASS_TERNARY:
            CHECK_MSG(data_in == 3 && p->layout == CTOSA_OP_LAYOUT_EW, "%s: not ternary", name);
            break;
        case CTOSA_OP_CLASS_SHAPE:
            /* shape operators produce shapes (or nothing: the assertion) */
            CHECK_MSG(tensor_out == 0, "%s: a shape operator with a tensor output", name);
            break;
        case CTOSA_OP_CLASS_CONTROL:
        case CTOSA_OP_CLASS_CUSTOM:
            CHECK_MSG((f & CTOSA_OPF_SIDE_EFFECT) && p->max_inputs == -1, "%s", name);
            break;
        case CTOSA_OP_CLASS_TENSOR:
        case CTOSA_OP_CLASS_CONV:
        case CTOSA_OP_CLASS_REDUCE:
        case CTOSA_OP_CLASS_IMAGE:
        case CTOSA_OP_CLASS_CONVERT: CHECK_MSG(f & CTOSA_OPF_COMPUTES, "%s computes", name); break;
        case CTOSA_OP_CLASS_MOVE:
        case CTOSA_OP_CLASS_DATA:
        case CTOSA_OP_CLASS_VARIABLE: break;
        }
    }
    /* the lowering's "does work" test: constants and re-labelling do not */
    CHECK(!ctosa_op_has(CTOSA_OP_RESHAPE, CTOSA_OPF_COMPUTES));
    CHECK(!ctosa_op_has(CTOSA_OP_TRANSPOSE, CTOSA_OPF_COMPUTES));
    CHECK(!ctosa_op_has(CTOSA_OP_IDENTITY, CTOSA_OPF_COMPUTES));
    CHECK(!ctosa_op_has(CTOSA_OP_CONST, CTOSA_OPF_COMPUTES));
    CHECK(ctosa_op_has(CTOSA_OP_SLICE, CTOSA_OPF_COMPUTES));
    CHECK(ctosa_op_has(CTOSA_OP_ADD, CTOSA_OPF_COMPUTES));
    CHECK(ctosa_op_props_of(CTOSA_OP_UNKNOWN) == NULL && ctosa_op_props_of(CTOSA_OP_COUNT) == NULL);
    CHECK(!ctosa_op_has(CTOSA_OP_COUNT, CTOSA_OPF_COMPUTES));
}

/* The three operators the hand-written tables disagreed on: the spec takes
 * 3 inputs; older writers gave 2 (MUL, PAD) or 1 (NEGATE). */
static void test_older_writers(void) {
    CHECK(ctosa_op_counts_fit(CTOSA_OP_MUL, 3, 1, false));
    CHECK(!ctosa_op_counts_fit(CTOSA_OP_MUL, 2, 1, false));
    CHECK(ctosa_op_counts_fit(CTOSA_OP_MUL, 2, 1, true));
    CHECK(!ctosa_op_counts_fit(CTOSA_OP_MUL, 4, 1, true));
    CHECK(ctosa_op_counts_fit(CTOSA_OP_PAD, 2, 1, true) && !ctosa_op_counts_fit(CTOSA_OP_PAD, 2, 1, false));
    CHECK(ctosa_op_counts_fit(CTOSA_OP_NEGATE, 1, 1, true));
    CHECK(!ctosa_op_counts_fit(CTOSA_OP_NEGATE, 2, 1, true)); /* never a valid form */
    CHECK(ctosa_op_counts_fit(CTOSA_OP_NEGATE, 3, 1, false));
    CHECK(ctosa_op_counts_fit(CTOSA_OP_CONCAT, 5, 1, false) &&
          !ctosa_op_counts_fit(CTOSA_OP_CONCAT, 0, 1, false));
    CHECK(!ctosa_op_counts_fit(CTOSA_OP_ADD, 2, 2, false));
    CHECK(ctosa_op_is_data_slot(CTOSA_OP_CONCAT, 7));
    CHECK(ctosa_op_is_data_slot(CTOSA_OP_MUL, 1) && !ctosa_op_is_data_slot(CTOSA_OP_MUL, 2));
    CHECK(!ctosa_op_is_data_slot(CTOSA_OP_NEGATE, 1) && !ctosa_op_is_data_slot(CTOSA_OP_CONV2D, 0));
}

/* The interpreter dispatches every operator that runs, and nothing for
 * declarations. */
static void test_interp_dispatch(void) {
    for (int k = 1; k < CTOSA_OP_COUNT; k++) {
        ctosa_op_kind op = (ctosa_op_kind)k;
        bool decl = ctosa_op_has(op, CTOSA_OPF_DECLARES);
        if (decl) CHECK_MSG(!interp_kernel_for(op), "%s declares but has a kernel", ctosa_op_name(op));
        else if (ctosa_op_min_version(op) == 10)
            CHECK_MSG(interp_kernel_for(op) != NULL, "%s has no kernel", ctosa_op_name(op));
    }
}

/* One NEGATE with n_in inputs run by the interpreter. */
static ctosa_error *run_negate(uint32_t n_in) {
    ctosa_graph *g;
    ctosa_region *r;
    ctosa_block *b;
    ctosa_tensor *t;
    ctosa_error *e = ctosa_graph_create(CTOSA_VERSION_1_0, &g);
    if (e) return e;
    int32_t shp[1] = {4}, one[1] = {1};
    int8_t zero = 0;
    CHECK_OK(ctosa_graph_add_region(g, "main", &r));
    CHECK_OK(ctosa_region_add_block(g, r, "main", &b));
    CHECK_OK(ctosa_block_add_tensor(g, b, "x", CTOSA_DTYPE_INT8, 1, shp, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "y", CTOSA_DTYPE_INT8, 1, shp, NULL));
    CHECK_OK(ctosa_block_add_tensor(g, b, "zp", CTOSA_DTYPE_INT8, 1, one, &t));
    CHECK_OK(ctosa_tensor_set_data(g, t, &zero, 1, true));
    const char *in[] = {"x", "zp", "zp"}, *out[] = {"y"};
    CHECK_OK(ctosa_block_add_op(g, b, CTOSA_OP_NEGATE, n_in, in, 1, out, NULL, NULL));
    CHECK_OK(ctosa_block_add_input(g, b, "x"));
    CHECK_OK(ctosa_block_add_output(g, b, "y"));
    ctosa_interp *it = NULL;
    e = ctosa_interp_create(g, NULL, &it);
    int8_t x[4] = {1, -2, 3, 0};
    int64_t xs[1] = {4};
    if (!e) e = ctosa_interp_set_input(it, "x", CTOSA_DTYPE_INT8, 1, xs, x, sizeof x);
    if (!e) e = ctosa_interp_run(it);
    ctosa_interp_free(it);
    ctosa_graph_free(g);
    return e;
}

static void test_interp_arity(void) {
    CHECK_OK(run_negate(3));
    CHECK_OK(run_negate(1)); /* older writers */
    CHECK_ERR(run_negate(2), CTOSA_ERR_INVALID,
              "op #0 NEGATE 'y': has 2 inputs, the operator takes 3 (older writers: 1)");
}

/* The dtype table's float column: the formats named fp* and bf16, nothing else. */
static void test_dtype_is_float(void) {
    uint32_t n = 0;
    for (int t = 0; t < CTOSA_DTYPE_COUNT; t++) {
        const char *s = ctosa_dtype_short((ctosa_dtype)t);
        bool fl = ctosa_dtype_is_float((ctosa_dtype)t);
        CHECK_MSG(s && fl == (strncmp(s, "fp", 2) == 0 || strcmp(s, "bf16") == 0), "%s", s ? s : "?");
        n += fl;
    }
    CHECK(n == 9);
    CHECK(!ctosa_dtype_is_float(CTOSA_DTYPE_COUNT) && !ctosa_dtype_is_float(CTOSA_DTYPE_SHAPE));
}

int main(void) {
    RUN(test_counts_match_spec);
    RUN(test_dtype_is_float);
    RUN(test_classes_and_flags);
    RUN(test_older_writers);
    RUN(test_interp_dispatch);
    RUN(test_interp_arity);
    return th_finish();
}
