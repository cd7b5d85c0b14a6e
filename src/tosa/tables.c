/* tables.c - names and attribute layouts of TOSA dtypes and operators,
 * following the 1.0-final and 1.1-draft flatbuffer schemas
 * (the official TOSA 1.0 schema and the 1.1 draft schema). */
#include <stddef.h>
#include <string.h>

#include "ctosa/graph.h"
#include "util/util.h"

int ctosa_version_key(ctosa_version v) {
    if (v.major != 1) return v.major < 1 ? 0 : 99;
    return 10 + (v.minor > 89 ? 89 : v.minor);
}

/* ---------------------------------------------------------------- dtypes */

static const struct {
    const char *upper, *lower;
    int bits, ver;
    bool is_float;
} dtype_info[CTOSA_DTYPE_COUNT] = {
#define CTOSA_X(n, v, b, ver, s, fl) [v] = {#n, s, b, ver, fl},
    CTOSA_DTYPE_LIST(CTOSA_X)
#undef CTOSA_X
};

#define CTOSA_X(...) +1
_Static_assert(0 CTOSA_DTYPE_LIST(CTOSA_X) == CTOSA_DTYPE_COUNT,
               "CTOSA_DTYPE_LIST values must be 0..n without gaps");
#undef CTOSA_X

static bool dtype_ok(ctosa_dtype t) { return (unsigned)t < CTOSA_DTYPE_COUNT; }

const char *ctosa_dtype_name(ctosa_dtype t) { return dtype_ok(t) ? dtype_info[t].upper : NULL; }
const char *ctosa_dtype_short(ctosa_dtype t) { return dtype_ok(t) ? dtype_info[t].lower : NULL; }
int ctosa_dtype_bits(ctosa_dtype t) { return dtype_ok(t) ? dtype_info[t].bits : 0; }
bool ctosa_dtype_is_float(ctosa_dtype t) { return dtype_ok(t) && dtype_info[t].is_float; }

bool ctosa_dtype_valid_in(ctosa_dtype t, ctosa_version v) {
    return dtype_ok(t) && t != CTOSA_DTYPE_UNKNOWN && dtype_info[t].ver <= ctosa_version_key(v);
}

bool ctosa_dtype_storage_size(ctosa_dtype t, uint64_t n, uint64_t *bytes) {
    int bits = ctosa_dtype_bits(t);
    if (bits <= 0) {
        *bytes = 0;
        return n == 0;
    }
    if (bits == 4) { /* two per byte */
        *bytes = n / 2 + (n & 1);
        return true;
    }
    if (bits == 6) { /* fp6: packed 4 per 3 bytes */
        uint64_t b;
        if (!mul_u64(n, 6, &b)) return false;
        *bytes = (b + 7) / 8;
        return true;
    }
    return mul_u64(n, (uint64_t)bits / 8, bytes);
}

/* ------------------------------------------------------------- operators */

static const struct {
    const char *name, *attr;
    int ver;
    ctosa_op_props p;
} op_info[CTOSA_OP_COUNT] = {
/* The flag letters of CTOSA_OP_LIST. */
#define OPF_C CTOSA_OPF_COMPUTES
#define OPF_CW (CTOSA_OPF_COMPUTES | CTOSA_OPF_WRITES_ALL)
#define OPF_CS (CTOSA_OPF_COMPUTES | CTOSA_OPF_SIDE_EFFECT)
#define OPF_M 0u
#define OPF_MW CTOSA_OPF_WRITES_ALL
#define OPF_MS CTOSA_OPF_SIDE_EFFECT
#define OPF_D CTOSA_OPF_DECLARES
#define OPF_DS (CTOSA_OPF_DECLARES | CTOSA_OPF_SIDE_EFFECT)
#define CTOSA_X(n, v, a, ver, cls, lay, slots, fl, i0, i1, o0, o1, iold) \
    [v] = {#n,                                                           \
           #a "Attribute",                                               \
           ver,                                                          \
           {CTOSA_OP_CLASS_##cls, CTOSA_OP_LAYOUT_##lay, slots, OPF_##fl, i0, i1, o0, o1, iold}},
    CTOSA_OP_LIST(CTOSA_X)
#undef CTOSA_X
};

/* One row per value 1..COUNT-1: the enum takes its values from the rows, so
 * a row count equal to the value range means no value was skipped. */
#define CTOSA_X(...) +1
_Static_assert(0 CTOSA_OP_LIST(CTOSA_X) == CTOSA_OP_COUNT - 1,
               "CTOSA_OP_LIST values must be 1..n without gaps");
#undef CTOSA_X

static bool op_ok(ctosa_op_kind op) { return (unsigned)op < CTOSA_OP_COUNT && op != 0; }

const char *ctosa_op_name(ctosa_op_kind op) { return op_ok(op) ? op_info[op].name : NULL; }
const char *ctosa_op_attr_table(ctosa_op_kind op) { return op_ok(op) ? op_info[op].attr : NULL; }
int ctosa_op_min_version(ctosa_op_kind op) { return op_ok(op) ? op_info[op].ver : 0; }
const ctosa_op_props *ctosa_op_props_of(ctosa_op_kind op) { return op_ok(op) ? &op_info[op].p : NULL; }

bool ctosa_op_has(ctosa_op_kind op, uint32_t flag) { return op_ok(op) && (op_info[op].p.flags & flag) != 0; }

static bool count_fits(uint32_t n, int min, int max) {
    return n >= (uint32_t)min && (max < 0 || n <= (uint32_t)max);
}

bool ctosa_op_counts_fit(ctosa_op_kind op, uint32_t n_in, uint32_t n_out, bool older) {
    if (!op_ok(op)) return false;
    const ctosa_op_props *p = &op_info[op].p;
    if (!count_fits(n_out, p->min_outputs, p->max_outputs)) return false;
    return count_fits(n_in, p->min_inputs, p->max_inputs) || (older && n_in == (uint32_t)p->older_min_inputs);
}

bool ctosa_op_is_data_slot(ctosa_op_kind op, uint32_t slot) {
    if (!op_ok(op)) return false;
    const ctosa_op_props *p = &op_info[op].p;
    /* a tensor list (the last input) repeats its bit */
    if (p->max_inputs < 0 && p->min_inputs > 0 && slot >= (uint32_t)p->min_inputs)
        slot = (uint32_t)p->min_inputs - 1;
    return slot < 32 && (p->data_slots >> slot & 1u);
}

bool ctosa_op_valid_in(ctosa_op_kind op, ctosa_version v) {
    return op_ok(op) && op_info[op].ver <= ctosa_version_key(v);
}

bool ctosa_op_from_name(const char *name, ctosa_op_kind *out) {
    for (int i = 1; i < CTOSA_OP_COUNT; i++)
        if (op_info[i].name && strcmp(op_info[i].name, name) == 0) {
            *out = (ctosa_op_kind)i;
            return true;
        }
    return false;
}

/* ------------------------------------------------------- attribute tables */

#define F(name, kind, member, et) \
    { name, CTOSA_FIELD_##kind, offsetof(ctosa_attr, member), et }
#define NAN F("nan_mode", ENUM, nan_mode, "NanPropagationMode")
#define AXIS F("axis", I32, axis, NULL)
#define ACC F("acc_type", DTYPE, acc_type, NULL)
#define LB F("local_bound", BOOL, local_bound, NULL)
#define KSP \
    F("kernel", I32_VEC, kernel, NULL), F("stride", I32_VEC, stride, NULL), F("pad", I32_VEC, pad, NULL)
#define CONV                                                          \
    F("pad", I32_VEC, pad, NULL), F("stride", I32_VEC, stride, NULL), \
        F("dilation", I32_VEC, dilation, NULL), LB, ACC
#define BS F("block_size", ENUM, block_size, "BlockSize")

static const ctosa_attr_field f_argmax[] = {AXIS, NAN};
static const ctosa_attr_field f_avgpool[] = {KSP, ACC};
static const ctosa_attr_field f_conv[] = {CONV};
static const ctosa_attr_field f_fft[] = {F("inverse", BOOL, inverse, NULL), LB};
static const ctosa_attr_field f_maxpool[] = {KSP, NAN};
static const ctosa_attr_field f_rfft[] = {LB};
static const ctosa_attr_field f_tconv[] = {F("out_pad", I32_VEC, out_pad, NULL),
                                           F("stride", I32_VEC, stride, NULL), LB, ACC};
static const ctosa_attr_field f_clamp[] = {F("min_val", BYTES, min_val, NULL),
                                           F("max_val", BYTES, max_val, NULL), NAN};
static const ctosa_attr_field f_ars[] = {F("round", BOOL, round, NULL)};
static const ctosa_attr_field f_nan[] = {NAN};
static const ctosa_attr_field f_axis[] = {AXIS};
static const ctosa_attr_field f_axis_nan[] = {AXIS, NAN};
static const ctosa_attr_field f_transpose[] = {F("perms", I32_VEC, perms, NULL)};
static const ctosa_attr_field f_resize[] = {F("mode", ENUM, mode, "ResizeMode")};
static const ctosa_attr_field f_rescale[] = {
    F("scale32", BOOL, scale32, NULL), F("rounding_mode", ENUM, rounding_mode, "RoundingMode"),
    F("per_channel", BOOL, per_channel, NULL), F("input_unsigned", BOOL, input_unsigned, NULL),
    F("output_unsigned", BOOL, output_unsigned, NULL)};
static const ctosa_attr_field f_custom[] = {F("operator_name", STRING, operator_name, NULL),
                                            F("domain_name", STRING, domain_name, NULL),
                                            F("implementation_attrs", BYTES, implementation_attrs, NULL)};
static const ctosa_attr_field f_condif[] = {F("then_graph", STRING, then_graph, NULL),
                                            F("else_graph", STRING, else_graph, NULL)};
static const ctosa_attr_field f_while[] = {F("cond_graph", STRING, cond_graph, NULL),
                                           F("body_graph", STRING, body_graph, NULL)};
static const ctosa_attr_field f_bs[] = {BS};
static const ctosa_attr_field f_acc[] = {ACC};
static const ctosa_attr_field f_assert[] = {F("allow_broadcast", BOOL, allow_broadcast, NULL)};
static const ctosa_attr_field f_empty[1];

const ctosa_attr_field *ctosa_op_attr_fields(ctosa_op_kind op, uint32_t *count) {
#define R(arr)                         \
    do {                               \
        *count = CTOSA_ARRAY_LEN(arr); \
        return arr;                    \
    } while (0)
    *count = 0;
    if (!op_ok(op)) return NULL;
    switch (op) {
    case CTOSA_OP_ARGMAX: R(f_argmax);
    case CTOSA_OP_AVG_POOL2D: R(f_avgpool);
    case CTOSA_OP_CONV2D:
    case CTOSA_OP_CONV3D:
    case CTOSA_OP_DEPTHWISE_CONV2D: R(f_conv);
    case CTOSA_OP_FFT2D: R(f_fft);
    case CTOSA_OP_MAX_POOL2D: R(f_maxpool);
    case CTOSA_OP_RFFT2D: R(f_rfft);
    case CTOSA_OP_TRANSPOSE_CONV2D: R(f_tconv);
    case CTOSA_OP_CLAMP: R(f_clamp);
    case CTOSA_OP_ARITHMETIC_RIGHT_SHIFT: R(f_ars);
    case CTOSA_OP_MAXIMUM:
    case CTOSA_OP_MINIMUM:
    case CTOSA_OP_MAX_POOL2D_ADAPTIVE: R(f_nan);
    case CTOSA_OP_REDUCE_ALL:
    case CTOSA_OP_REDUCE_ANY:
    case CTOSA_OP_REDUCE_PRODUCT:
    case CTOSA_OP_REDUCE_SUM:
    case CTOSA_OP_CONCAT:
    case CTOSA_OP_REVERSE:
    case CTOSA_OP_DIM: R(f_axis);
    case CTOSA_OP_REDUCE_MAX:
    case CTOSA_OP_REDUCE_MIN: R(f_axis_nan);
    case CTOSA_OP_TRANSPOSE: R(f_transpose);
    case CTOSA_OP_RESIZE: R(f_resize);
    case CTOSA_OP_RESCALE: R(f_rescale);
    case CTOSA_OP_CUSTOM: R(f_custom);
    case CTOSA_OP_COND_IF: R(f_condif);
    case CTOSA_OP_WHILE_LOOP: R(f_while);
    case CTOSA_OP_MATMUL_T_BLOCK_SCALED:
    case CTOSA_OP_CAST_FROM_BLOCK_SCALED:
    case CTOSA_OP_CAST_TO_BLOCK_SCALED:
    case CTOSA_OP_CONV2D_BLOCK_SCALED: R(f_bs);
    case CTOSA_OP_AVG_POOL2D_ADAPTIVE: R(f_acc);
    case CTOSA_OP_ASSERT_EQUAL_SHAPE: R(f_assert);
    default: return f_empty;
    }
#undef R
}

const char *ctosa_enum_value_name(const char *enum_type, uint32_t value) {
    static const char *nan[] = {"UNKNOWN", "PROPAGATE", "IGNORE"};
    static const char *resize[] = {"UNKNOWN", "NEAREST", "BILINEAR"};
    static const char *round[] = {"UNKNOWN", "SINGLE_ROUND", "INEXACT_ROUND", "DOUBLE_ROUND"};
    if (!enum_type) return NULL;
    if (strcmp(enum_type, "NanPropagationMode") == 0) return value < 3 ? nan[value] : NULL;
    if (strcmp(enum_type, "ResizeMode") == 0) return value < 3 ? resize[value] : NULL;
    if (strcmp(enum_type, "RoundingMode") == 0) return value < 4 ? round[value] : NULL;
    if (strcmp(enum_type, "BlockSize") == 0)
        return value == 0 ? "UNKNOWN" : value == 32 ? "BLOCK_SIZE_32" : NULL;
    return NULL;
}
