/* onnx_inline.h - inlining of model-local functions for the lowering
 * (onnx_functions.c). Internal. */
#ifndef CTOSA_ONNX_INLINE_H
#define CTOSA_ONNX_INLINE_H

#include "ctosa/onnx.h"

/* One expanded call. Its body's nodes (calls inside it expanded too) are
 * the contiguous range [first, end) of the inlined main graph; nested calls
 * have ranges inside their caller's. */
typedef struct onnx_inline_call {
    const char *node; /* the call's name: "<name>" at the top, "<caller>/<name>" nested,
                                  * "<op_type>#<index>" for an unnamed top-level call */
    const char *op_type, *domain;
    uint32_t first, end;
    uint32_t depth; /* 0: a call in the main graph */
} onnx_inline_call;

typedef struct onnx_inline_main {
    const ctosa_onnx_graph *g; /* the main graph with every call expanded */
    const int32_t *orig;       /* per node of g: its index in the model's main graph,
                                  * or -1 when it comes from a function body */
    uint32_t n_calls;
    const onnx_inline_call *calls; /* in order of their first node (callers before callees) */
} onnx_inline_main;

/* Expands every call of a model-local function in the main graph (see
 * ctosa_onnx_inline_functions for the rules). A node of a body is named
 * "<call>/<node name>" ("<call>/<op_type>#<k>" when unnamed, k its place in
 * the body), its internal values "<call>/<value>". Everything is owned by
 * the model. Without functions *out describes the main graph itself with
 * orig NULL and no calls. */
ctosa_error *onnx_inline_main_graph(ctosa_onnx_model *m, onnx_inline_main *out);

#endif
