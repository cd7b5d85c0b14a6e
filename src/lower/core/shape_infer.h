/* shape_infer.h - types and static shapes of the outputs of nodes that stay
 * on the CPU.
 *
 * A delegated node needs static shapes on its inputs. When a node falls
 * back before its lowering could compute its output types (no lowering, or
 * the lowering rejected it) and the model declares nothing for its outputs
 * (torch exports without value_info), every node downstream used to fall
 * back too ("input_fallback"). lw_infer_fallback() applies ONNX's shape
 * rules for the common operators so that downstream nodes can still be
 * lowered; the model's own declarations still win (the framework applies
 * them afterwards). */
#ifndef CTOSA_PARTITION_SHAPE_INFER_H
#define CTOSA_PARTITION_SHAPE_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "lower/lower_internal.h"

/* Fills type and static shape of every output of node ni that is not known
 * yet, when the operator is one it knows and its inputs' shapes (and the
 * constant inputs it needs) are known. Never fails: outputs it cannot infer
 * stay unknown. Returns the number of outputs it filled. */
uint32_t lw_infer_fallback(lower_session *s, uint32_t ni);

#endif
