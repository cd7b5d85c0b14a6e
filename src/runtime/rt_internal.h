/* rt_internal.h - the runtime's internal pieces (runtime.c: loading and
 * running; rt_host.c: the host executor's one-node lowering; rt_report.c;
 * rt_backend.c: the interpreter backend; rt_verify.c). Internal. */
#ifndef CTOSA_RT_INTERNAL_H
#define CTOSA_RT_INTERNAL_H

#include "ctosa/lower.h"
#include "ctosa/onnx.h"
#include "ctosa/runtime.h"
#include "util/util.h"

const char *rt_report_path(const ctosa_report *r);

/* The type of a value a CPU node reads or writes, as the one-node model
 * declares it. */
typedef struct rt_vtype {
    int32_t onnx_dtype;
    uint32_t rank;
    const int64_t *shape;
    const void *data; /* a value known at load (ONNX natural layout), else NULL */
    uint64_t nbytes;
} rt_vtype;

/* What the host executor needs from the loader to build one node's model. */
typedef struct rt_host_src {
    ctosa_onnx_model *m;
    const ctosa_onnx_graph *g; /* the main graph (functions inlined) */
    const uint8_t *base;       /* the model file's bytes (attribute copies) */
    uint64_t size;
    const char *path;
    const ctosa_custom_registry *custom_ops;
    /* Type of value name (a runtime value or a graph input); false when
     * unknown. */
    bool (*type_of)(void *ctx, const char *name, rt_vtype *out);
    void *ctx;
} rt_host_src;

/* Lowers node n (labelled label in messages) on its own under the widest
 * spec: *out holds its TOSA graph as partition 0 (inputs: the node's
 * non-constant inputs; outputs: its outputs). CTOSA_ERR_UNSUPPORTED naming
 * the node and the reason when TOSA cannot express it; *later is then set
 * when the reason is one that known input values remove (an input whose
 * shape is not known, a shape that depends on the data, an input that must
 * be a constant). Values type_of gives data for are initializers. When the
 * lowering computed every output at compile time (nothing left to run),
 * *folded is set and *out holds the values (ctosa_lower_result_constant). */
ctosa_error *rt_host_lower(const rt_host_src *src, const ctosa_onnx_node *n, const char *label,
                           ctosa_lower_result **out, bool *folded, bool *later);

/* The widest specification: TOSA 1.1 draft, INT and FP, every extension. */
void rt_widest_spec(ctosa_spec *s);

/* numpy names <-> ONNX dtypes <-> the TOSA dtype a value is carried in. */
int32_t rt_onnx_dtype_of(const char *numpy);   /* 0 when unknown */
const char *rt_numpy_name(int32_t onnx_dtype); /* NULL when unknown */
ctosa_dtype rt_carrier_of(int32_t onnx_dtype); /* UNKNOWN when none */
int32_t rt_onnx_of_carrier(ctosa_dtype t);     /* 0 when none */

#endif
