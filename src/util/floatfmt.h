/* floatfmt.h - conversions between float and the narrow float formats of
 * TOSA (fp16, bf16, fp8e4m3, fp8e5m2), round to nearest even.
 * Overflow: fp16/bf16/fp8e5m2 go to infinity; fp8e4m3 (no infinity) goes to
 * NaN, as the TOSA CAST pseudocode does for non-saturating conversion. */
#ifndef CTOSA_FLOATFMT_H
#define CTOSA_FLOATFMT_H

#include <stdint.h>
#include "ctosa/common.h"

float ff_fp16_to_f32(uint16_t h);
uint16_t ff_f32_to_fp16(float f);
float ff_bf16_to_f32(uint16_t h);
uint16_t ff_f32_to_bf16(float f);
float ff_fp8e4m3_to_f32(uint8_t v);
uint8_t ff_f32_to_fp8e4m3(float f);
float ff_fp8e5m2_to_f32(uint8_t v);
uint8_t ff_f32_to_fp8e5m2(float f);
/* Rounds x to the nearest value representable in dtype t (FP16, BF16, FP8*),
 * returned as float; FP32 and other dtypes return x unchanged. */
float ff_round_to(ctosa_dtype t, float x);
/* Same from a double, rounded once (no double rounding through float):
 * for accumulations whose exact value a double holds. FP32 rounds to float. */
float ff_round_to_double(ctosa_dtype t, double x);

#endif
