/* validate_internal.h - how the validator is split between files.
 *
 * ctosa_validate() (validate.c) walks every region/block/operator and calls:
 *   - spec_check_op_rules(): operator present in the version, type signature
 *     in the compliance table for the spec, compile-time-constant arguments,
 *     level limits, enum-value extensions (rounding modes), u55 rules
 *     (compliance.c / rules.c, driven by the generated tables);
 *   - spec_check_op_shapes(): output shapes follow from the inputs and
 *     attributes (shape_rules.c);
 * and itself checks the graph structure (tensors defined once before use,
 * names resolve, control-flow regions exist, nesting depth).
 *
 * Every line added to the diag_list has the form
 *   "op #<index> <OP> '<first output name>': <problem>"
 * prefixed by "region '<name>' " when the block is not in the main region. */
#ifndef CTOSA_VALIDATE_INTERNAL_H
#define CTOSA_VALIDATE_INTERNAL_H

#include "ctosa/spec.h"
#include "util/util.h"

typedef struct spec_op_ctx {
    const ctosa_graph *g;
    const ctosa_block *block;
    const ctosa_region *region;
    uint32_t index; /* operator index in the block */
    const ctosa_op *op;
    const ctosa_spec *spec;
    const char *prefix; /* "op #12 CONV2D 'conv1'" (with region prefix) */
    /* Resolved operand tensors (NULL where a name did not resolve; the
     * structural check reports those). */
    const ctosa_tensor *const *in;
    const ctosa_tensor *const *out;
    /* Whether each input is a compile-time constant (produced by CONST or
     * CONST_SHAPE, or a constant tensor). */
    const bool *in_const;
    /* Where structured diagnostics go (NULL: text only). */
    ctosa_diags *sink;
} spec_op_ctx;

/* Reports one problem: the text line goes to d (diag_add) and, under the
 * same cap, a ctosa_diag with these fields to sink (when not NULL).
 * types: n_in + n_out dtypes for CTOSA_DIAG_TYPES, else NULL. On
 * allocation failure the structured copy is dropped and *sink marks it
 * (ctosa_validate_diags then fails with out-of-memory). */
void spec_report(diag_list *d, ctosa_diags *sink, ctosa_diag_kind kind, const ctosa_region *region,
                 int32_t op_index, ctosa_op_kind op, uint32_t n_in, uint32_t n_out, const ctosa_dtype *types,
                 const char *fmt, ...) __attribute__((format(printf, 10, 11)));
/* A collector for ctosa_validate_diags (NULL when out of memory), and
 * whether it lost a diagnostic to an allocation failure. */
ctosa_diags *spec_diags_new(void);
bool spec_diags_failed(const ctosa_diags *d);
/* spec_report() for the operator of c: "<prefix>: <text>". */
void spec_report_op(const spec_op_ctx *c, diag_list *d, ctosa_diag_kind kind, uint32_t n_in, uint32_t n_out,
                    const ctosa_dtype *types, const char *text);

void spec_check_op_rules(const spec_op_ctx *c, diag_list *d);
void spec_check_op_shapes(const spec_op_ctx *c, diag_list *d);

#endif
