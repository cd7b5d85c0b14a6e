/* u55.c - the Ethos-U55 subset ("+u55" in a spec string).
 *
 * TOSA has no U55 profile: the subset is what ExecuTorch's Arm backend
 * refuses to delegate for Ethos-U55/U65 (its EthosU55NotSupported,
 * EthosU55DtypeSupport, resize/reverse checks and pooling limits; the list
 * is in docs/spec.md), translated
 * from PyTorch operators to the TOSA operators they lower to. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spec/compliance.h"
#include "spec/validate_internal.h"

enum { U55_NONE, U55_DTYPES, U55_BILINEAR, U55_POOL };

#define DT(x) (1u << CTOSA_DTYPE_##x)
#define INT_8_16 (DT(INT8) | DT(INT16))
#define INT_8_16_32 (DT(INT8) | DT(INT16) | DT(INT32))

static const struct {
    ctosa_op_kind op;
    int kind;
    uint32_t dtypes; /* U55_DTYPES: allowed data dtypes */
    const char *reason;
} rules[] = {
    {CTOSA_OP_REDUCE_ALL, U55_NONE, 0, "no boolean reductions on Ethos-U55"},
    {CTOSA_OP_REDUCE_ANY, U55_NONE, 0, "no boolean reductions on Ethos-U55"},
    {CTOSA_OP_BITWISE_AND, U55_NONE, 0, "no bitwise operations on Ethos-U55"},
    {CTOSA_OP_BITWISE_OR, U55_NONE, 0, "no bitwise operations on Ethos-U55"},
    {CTOSA_OP_BITWISE_XOR, U55_NONE, 0, "no bitwise operations on Ethos-U55"},
    {CTOSA_OP_BITWISE_NOT, U55_NONE, 0, "no bitwise operations on Ethos-U55"},
    {CTOSA_OP_LOGICAL_AND, U55_NONE, 0, "no logical operations on Ethos-U55"},
    {CTOSA_OP_LOGICAL_OR, U55_NONE, 0, "no logical operations on Ethos-U55"},
    {CTOSA_OP_LOGICAL_XOR, U55_NONE, 0, "no logical operations on Ethos-U55"},
    {CTOSA_OP_LOGICAL_NOT, U55_NONE, 0, "no logical operations on Ethos-U55"},
    {CTOSA_OP_CONV3D, U55_NONE, 0, "no 3-D convolution on Ethos-U55"},
    {CTOSA_OP_EQUAL, U55_NONE, 0, "no comparison operations on Ethos-U55"},
    {CTOSA_OP_GREATER, U55_NONE, 0, "no comparison operations on Ethos-U55"},
    {CTOSA_OP_GREATER_EQUAL, U55_NONE, 0, "no comparison operations on Ethos-U55"},
    {CTOSA_OP_GATHER, U55_NONE, 0, "no gather on Ethos-U55"},
    {CTOSA_OP_SCATTER, U55_NONE, 0, "no scatter on Ethos-U55"},
    {CTOSA_OP_SELECT, U55_NONE, 0, "no SELECT (where) on Ethos-U55"},
    {CTOSA_OP_REVERSE, U55_NONE, 0, "no REVERSE on Ethos-U55"},
    {CTOSA_OP_RESIZE, U55_BILINEAR, 0, "no bilinear RESIZE on Ethos-U55"},
    {CTOSA_OP_CONCAT, U55_DTYPES, INT_8_16_32, "data movement on Ethos-U55 is i8/i16/i32 only"},
    {CTOSA_OP_TILE, U55_DTYPES, INT_8_16_32, "data movement on Ethos-U55 is i8/i16/i32 only"},
    {CTOSA_OP_PAD, U55_DTYPES, INT_8_16_32, "data movement on Ethos-U55 is i8/i16/i32 only"},
    {CTOSA_OP_RESHAPE, U55_DTYPES, INT_8_16_32, "data movement on Ethos-U55 is i8/i16/i32 only"},
    {CTOSA_OP_TRANSPOSE, U55_DTYPES, INT_8_16_32, "data movement on Ethos-U55 is i8/i16/i32 only"},
    {CTOSA_OP_TABLE, U55_DTYPES, INT_8_16, "TABLE on Ethos-U55 is i8/i16 only"},
    {CTOSA_OP_REDUCE_MAX, U55_DTYPES, INT_8_16, "REDUCE_MAX on Ethos-U55 is i8/i16 only"},
    {CTOSA_OP_REDUCE_MIN, U55_DTYPES, INT_8_16, "REDUCE_MIN on Ethos-U55 is i8/i16 only"},
    {CTOSA_OP_AVG_POOL2D, U55_POOL, 0,
     "pooling on Ethos-U55 needs stride 1..3 and kernel 1..256 per side, area <= 65536"},
    {CTOSA_OP_MAX_POOL2D, U55_POOL, 0,
     "pooling on Ethos-U55 needs stride 1..3 and kernel 1..256 per side, area <= 65536"},
};

const char *spec_u55_rule(uint32_t i, ctosa_op_kind *op) {
    if (i >= CTOSA_ARRAY_LEN(rules)) return NULL;
    if (op) *op = rules[i].op;
    return rules[i].reason;
}

static void u55_bad(const spec_op_ctx *c, diag_list *d, const char *what, const char *reason) {
    char line[1024];
    snprintf(line, sizeof line, "%s not supported by the Ethos-U55 subset (u55): %s", what, reason);
    spec_report_op(c, d, CTOSA_DIAG_U55, 0, 0, NULL, line);
}

void spec_u55_check(const spec_op_ctx *c, diag_list *d, uint32_t n_in, const ctosa_dtype *in, uint32_t n_out,
                    const ctosa_dtype *out) {
    const ctosa_op *op = c->op;
    const char *name = ctosa_op_name(op->kind);
    /* bool tensors anywhere (ExecuTorch CheckDtypeInputsAndOutputs on U55) */
    for (uint32_t i = 0; i < n_in + n_out; i++) {
        ctosa_dtype t = i < n_in ? in[i] : out[i - n_in];
        if (t == CTOSA_DTYPE_BOOL) {
            u55_bad(c, d, "bool tensors are", "Ethos-U55 has no boolean data type");
            break;
        }
    }
    for (size_t r = 0; r < CTOSA_ARRAY_LEN(rules); r++) {
        if (rules[r].op != op->kind) continue;
        char what[256];
        switch (rules[r].kind) {
        case U55_NONE:
            snprintf(what, sizeof what, "%s is", name ? name : "operator");
            u55_bad(c, d, what, rules[r].reason);
            break;
        case U55_BILINEAR:
            if (op->attr.mode == CTOSA_RESIZE_BILINEAR) u55_bad(c, d, "RESIZE BILINEAR is", rules[r].reason);
            break;
        case U55_DTYPES: {
            /* the data operand: input 0 (shape operands are SHAPE) */
            ctosa_dtype t = n_in ? in[0] : n_out ? out[0] : CTOSA_DTYPE_UNKNOWN;
            if (t && t != CTOSA_DTYPE_BOOL && !(rules[r].dtypes & (1u << t))) {
                snprintf(what, sizeof what, "%s on %s is", name ? name : "operator", spec_dtype_short(t));
                u55_bad(c, d, what, rules[r].reason);
            }
            break;
        }
        case U55_POOL: {
            const ctosa_attr *a = &op->attr;
            bool ok = true;
            for (uint32_t i = 0; i < a->stride.n && a->stride.v; i++)
                if (a->stride.v[i] < 1 || a->stride.v[i] > 3) ok = false;
            int64_t area = 1;
            for (uint32_t i = 0; i < a->kernel.n && a->kernel.v; i++) {
                if (a->kernel.v[i] < 1 || a->kernel.v[i] > 256) ok = false;
                area *= a->kernel.v[i] > 0 ? a->kernel.v[i] : 1;
            }
            if (area > 65536) ok = false;
            if (!ok) {
                char kbuf[40] = "?", sbuf[40] = "?";
                if (a->kernel.n >= 2 && a->kernel.v)
                    snprintf(kbuf, sizeof kbuf, "%" PRId32 "x%" PRId32, a->kernel.v[0], a->kernel.v[1]);
                if (a->stride.n >= 2 && a->stride.v)
                    snprintf(sbuf, sizeof sbuf, "%" PRId32 "x%" PRId32, a->stride.v[0], a->stride.v[1]);
                snprintf(what, sizeof what, "%s with kernel %s and stride %s is", name, kbuf, sbuf);
                u55_bad(c, d, what, rules[r].reason);
            }
            break;
        }
        }
    }
}
