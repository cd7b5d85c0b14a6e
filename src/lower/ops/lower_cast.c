/*
 * lower_cast.c - ONNX Cast and CastLike -> TOSA.
 *
 * TOSA CAST rounds float -> int to nearest (ties to even) and has no bool
 * rows outside PRO-INT, so ONNX semantics are rebuilt where they differ:
 *   float -> int    trunc first: SELECT(x < 0, CEIL(x), FLOOR(x)), then
 *                   CAST (now exact). Out-of-range values saturate (ONNX
 *                   leaves them undefined); NaN becomes 0.
 *   float -> bool   NOT(EQUAL(x, 0)) (NaN -> true, as in ONNX).
 *   bool -> float   SELECT(b, 1, 0) (PRO-FP has no bool CAST rows).
 *   int <-> bool, int <-> int, int -> float, float <-> float: CAST
 *                   (int narrowing wraps, as ONNX / numpy do).
 *   -> fp8 with saturate=1 (the default, opset 19+): CLAMP to the format's
 *                   largest finite value first (inf -> max, NaN stays NaN);
 *                   saturate=0 leaves overflow to CAST (e4m3 -> NaN, e5m2
 *                   -> inf), as ONNX specifies.
 *   fp8 sources go through fp32 for anything but float targets.
 *   same dtype      IDENTITY.
 */
#include <math.h>
#include <string.h>

#include "lower/lower_build.h"

static lw_v trunc_(lower_ctx *c, lw_v x) {
    lw_v neg = lw_v_bin(c, CTOSA_OP_GREATER, lw_v_k(c, x, 0), x);
    return lw_v_select(c, neg, lw_v_un(c, CTOSA_OP_CEIL, x), lw_v_un(c, CTOSA_OP_FLOOR, x));
}

static bool is_fp8(ctosa_dtype t) { return t == CTOSA_DTYPE_FP8E4M3 || t == CTOSA_DTYPE_FP8E5M2; }

static lw_v convert(lower_ctx *c, lw_v x, ctosa_dtype to, bool saturate) {
    ctosa_dtype from = x.t;
    if (from == to) return lw_v_identity(c, x);
    if (is_fp8(from) && !ctosa_dtype_is_float(to)) {
        x = lw_v_cast(c, x, CTOSA_DTYPE_FP32);
        from = x.t;
    }
    if (is_fp8(to) && !ctosa_dtype_is_float(from)) {
        x = convert(c, x, CTOSA_DTYPE_FP32, false);
        from = x.t;
    }
    if (to == CTOSA_DTYPE_BOOL) {
        if (ctosa_dtype_is_float(from))
            return lw_v_un(c, CTOSA_OP_LOGICAL_NOT, lw_v_bin(c, CTOSA_OP_EQUAL, x, lw_v_k(c, x, 0)));
        return lw_v_cast(c, x, to);
    }
    if (from == CTOSA_DTYPE_BOOL && ctosa_dtype_is_float(to)) {
        lw_v one = lw_v_kt(c, to, x.r, 1.0), zero = lw_v_kt(c, to, x.r, 0.0);
        return lw_v_select(c, x, one, zero);
    }
    if (ctosa_dtype_is_float(from) && !ctosa_dtype_is_float(to)) return lw_v_cast(c, trunc_(c, x), to);
    if (is_fp8(to) && saturate) {
        double mx = to == CTOSA_DTYPE_FP8E4M3 ? 448.0 : 57344.0;
        x = lw_v_clamp(c, x, -mx, mx);
    }
    return lw_v_cast(c, x, to);
}

static lower_status cast_to(lower_ctx *c, int32_t onnx_to) {
    lw_v x;
    LW_V_IN(c, 0, &x);
    ctosa_dtype to;
    lower_status st = lw_v_dtype(c, onnx_to, "the target type", &to);
    if (st) return st;
    bool saturate = lw_attr_int(c, "saturate", 1) != 0;
    return lw_v_out(c, 0, convert(c, x, to, saturate));
}

static lower_status lower_cast_op(lower_ctx *c) {
    if (!lw_has_attr(c, "to"))
        return lw_reject(c, LOWER_UNSUPPORTED_ATTR, NULL, "Cast: attribute 'to' is missing");
    return cast_to(c, (int32_t)lw_attr_int(c, "to", 0));
}

static lower_status lower_castlike(lower_ctx *c) {
    const lower_value *like = lw_in(c, 1);
    if (!like) return lw_reject(c, LOWER_INPUT_FALLBACK, NULL, "CastLike: target_type input missing");
    return cast_to(c, like->onnx_dtype);
}

const lower_entry lower_table_cast[] = {
    {"Cast", 6, 0, lower_cast_op},
    {"CastLike", 15, 0, lower_castlike},
    {0, 0, 0, 0},
};
