/* lower_internal.h - the lowering framework's own state: the value table,
 * per-node decisions, the lowering context, and the pieces shared between
 * lower_core.c (session, support decisions, folding), lower_emit.c (lw_*
 * helpers), opt_transpose.c and src/pipeline/ (grouping, per-partition
 * graphs, report, partitioned ONNX). Not used by the operator families. */
#ifndef CTOSA_LOWER_INTERNAL_H
#define CTOSA_LOWER_INTERNAL_H

#include "lower/lower.h"

/* Constants of at least this many bytes are "weights" for the large-model
 * paths (docs/lowering.md, "Large models"): they stay file ranges of the
 * model (pipeline/lower_api.c), transforms of them are streamed
 * (opt_transpose_layout.c), and a DequantizeLinear of one is left to run
 * time instead of being folded (lower_qdq.c). */
#define LW_LARGE_CONST_BYTES ((uint64_t)64 << 10)

/* One ONNX value. `v` comes first so a lw_val* is a lower_value*. */
typedef struct lw_val {
    lower_value v;
    int32_t producer; /* node index; -1 for graph inputs / initializers */
    bool known;       /* dtype and rank known */
    bool graph_input, graph_output, bound, initializer;
    int8_t fits_i32;    /* int64 constants: -1 not computed, 0 no, 1 yes */
    int64_t bad_value;  /* first value outside int32 when fits_i32 == 0 */
    const void *narrow; /* int32 copy of an int64 constant that fits */
    uint32_t n_consumers, cap_consumers;
    uint32_t *consumers; /* node indices (a node appears once per use) */
} lw_val;

typedef enum lw_node_kind {
    LW_NODE_PENDING = 0,
    LW_NODE_FALLBACK, /* stays in the ONNX model */
    LW_NODE_CONST,    /* every output is a compile-time constant */
    LW_NODE_DELEGATED /* has runtime TOSA outputs */
} lw_node_kind;

typedef struct lw_nodeinfo {
    lw_node_kind kind;
    lower_code code;
    const char *reason, *input; /* fallback reason; needs_constant input */
    const char *label;          /* name, or "<op_type>#<index>" */
    bool compute;               /* emitted an operator that computes */
    bool on_cpu;                /* final: stays in the ONNX model */
    int32_t group;              /* union-find parent (delegated nodes) */
    int32_t part;               /* final partition id, -1 none */
    uint32_t n_ops;             /* TOSA operators the scratch lowering emitted */
} lw_nodeinfo;

typedef struct lower_session lower_session;

struct lower_ctx {
    lower_session *s;
    const ctosa_spec *spec;
    const ctosa_onnx_node *node;
    uint32_t node_index;
    const char *label;
    ctosa_graph *g;
    ctosa_block *b;
    arena *scratch;
    strmap *tmap;      /* ONNX name -> TOSA tensor name in this block */
    strmap *reserved;  /* names internal tensors must not take (may be NULL) */
    uint32_t *counter; /* per block counter for unique names */
    lower_value **in_cache;
    const char **out_names;
    lower_value *out_const; /* constant outputs (data != NULL) */
    bool *out_is_const;
    /* First problem; the node is rejected when set. */
    bool rejected;
    lower_code code;
    char *msg;
    const char *rej_input;
};

struct lower_session {
    arena a;
    ctosa_onnx_model *m;
    const ctosa_onnx_graph *g;
    const char *model_path;
    ctosa_spec spec;      /* the user's */
    ctosa_spec fold_spec; /* permissive: folding is not limited by the target */
    int64_t opset;
    strmap vals; /* ONNX name -> lw_val* */
    lw_nodeinfo *nodes;
    uint32_t n_nodes;
    struct qdq_state *qdq; /* QDQ folding marks (qdq_fold.c); NULL if none */
    /* Custom operators (ctosa_lower_options.custom_ops; may be NULL):
     * consulted before the built-in lowerings (lower_custom.c). */
    const struct ctosa_custom_registry *custom;
    /* Memory cap (ctosa_lower_options.max_memory, resolved) and the first
     * CTOSA_ERR_LIMIT it raised: once set, lowering stops and
     * ctosa_lower_file returns it. `extra` counts allocations outside the
     * session arena that live as long as it (the result's arena). */
    uint64_t max_memory;
    bool requant_ort; /* ctosa_lower_options.requant == CTOSA_REQUANT_MATCH_ORT */
    bool keep_moves;  /* ctosa_lower_options.keep_data_movement */
    /* ctosa_lower_options debugging aids, resolved (stream_min never 0). */
    uint64_t stream_min;
    bool no_layout;
    FILE *debug;
    const arena *extra;
    ctosa_error *limit_err;
    /* Model-local functions (onnx_inline.h): g is the main graph with
     * every call expanded; inl_orig[i] is node i's index in the model's
     * main graph (-1: from a function body); NULL when nothing was inlined. */
    const int32_t *inl_orig;
    uint32_t n_inl_calls;
    const struct onnx_inline_call *inl_calls;
};

/* Session arena + extra + `more` bytes against the cap; false (and
 * s->limit_err set, naming `what`) when over. */
bool lw_budget_ok(lower_session *s, uint64_t more, const char *what);
/* Bytes still allocatable under the cap (0 when over). */
uint64_t lw_budget_left(const lower_session *s);
/* Bytes held by a graph under construction (its arena); 0 for NULL. */
uint64_t lw_graph_bytes(const ctosa_graph *g);

/* Everything known about ONNX value `name` (NULL if nothing). */
lw_val *lw_lookup(lower_session *s, const char *name);

/* Sets up a context to lower node `ni` into block b of graph g. */
void lw_ctx_init(lower_ctx *c, lower_session *s, const ctosa_spec *spec, uint32_t ni, ctosa_graph *g,
                 ctosa_block *b, arena *scratch, strmap *tmap, strmap *reserved, uint32_t *counter);
/* Records a problem (first one wins). */
void lw_fail(lower_ctx *c, lower_code code, const char *input, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* TOSA dtype for an ONNX dtype under spec (INT64 -> INT32 without int64). */
ctosa_dtype lw_dtype_for(const ctosa_spec *spec, int32_t onnx_dtype);
/* ONNX dtype carried by a TOSA dtype (for outputs the model does not type). */
int32_t lw_onnx_of_tosa(ctosa_dtype t);
bool lw_spec_has_int64(const ctosa_spec *spec);
/* Computes v->fits_i32 / v->narrow for an int64 constant. */
bool lw_int64_fits(lower_session *s, lw_val *v);
/* Adds a placeholder tensor for ONNX value v named name to the block. */
ctosa_error *lw_add_placeholder(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype t,
                                const lower_value *v);
/* A unique tensor name for the context (prefix = node label). */
const char *lw_unique_name(lower_ctx *c, const char *hint);

/* Custom operators (lower_custom.c). lw_custom_find: the lowering of node
 * ni when the session's registry matches it (takes precedence over
 * lower_find), else NULL. lw_custom_describe: for the report, what the
 * node became (domain_name, operator_name) and whether it displaced a
 * built-in lowering; false when no registration matches. */
const lower_entry *lw_custom_find(lower_session *s, uint32_t ni);
bool lw_custom_describe(lower_session *s, uint32_t ni, const char **domain_name, const char **operator_name,
                        bool *overrides_builtin);

/* Session (lower_core.c): loads the model and sets up values (errors are
 * bad input, exit 2); decide() runs the support decision of every node;
 * close() frees everything. */
ctosa_error *lw_session_open(lower_session *s, const char *model_path, const ctosa_spec *spec,
                             const ctosa_lower_options *opt);
/* The same for a model in memory: the bytes are copied into the session
 * (nothing refers to mem afterwards); name names it in messages. External
 * data is refused, as no folder anchors it. */
ctosa_error *lw_session_open_memory(lower_session *s, const void *mem, uint64_t size, const char *name,
                                    const ctosa_spec *spec, const ctosa_lower_options *opt);
void lw_session_decide(lower_session *s);
void lw_session_close(lower_session *s);
/* Reason code of a validator failure on graph g, from its diagnostics
 * (ctosa_validate_diags; NULL gives not_in_spec). */
lower_code lw_map_validator(const ctosa_graph *g, const ctosa_spec *spec, const ctosa_diags *ds);
/* Under a spec with int64 (lower_int64.c): when a scratch graph failed
 * validation on an operator with an i64 operand, names that operator and
 * the missing row from the compliance tables; sets *code
 * (unsupported_dtype or mixed_width) and *reason. False when no i64
 * operator is at fault (the validator's own reason stands). */
/* Registered lowering i (every family table in order), NULL past the end
 * (lower_registry.c). */
const lower_entry *lower_entry_at(uint32_t i);

/* The int64 allowlist of a spec, derived (lower_int64.c): every registered
 * ONNX operator is lowered as a one-node probe model with int64 inputs
 * ([2,3] runtime tensors; an input the lowering needs constant becomes the
 * int64 constant [1]; Where's condition bool; Cast to int32) and the
 * emitted TOSA validated under spec. cb is called once per operator type,
 * in registry order: delegated (code "compile_time" when the only accepted
 * form is computed at compile time), or not with the best fallback code
 * and reason. */
typedef void (*lw_int64_probe_fn)(void *ud, const char *op_type, bool delegated, const char *code,
                                  const char *reason);
void lw_int64_allowlist(const ctosa_spec *spec, lw_int64_probe_fn cb, void *ud);

bool lw_int64_explain(const ctosa_graph *g, const ctosa_spec *spec, const char *onnx_op, arena *a,
                      lower_code *code, const char **reason);

/* QDQ folding (qdq_fold.c). qdq_prepass() marks DequantizeLinear -> op ->
 * QuantizeLinear groups after the session is set up; qdq_entry() returns
 * the lowering that replaces the registry's for node ni (NULL: none);
 * qdq_note_outputs() types node ni's quantized outputs (uint8 carried as
 * INT8 bits, scale and zero point) after its outputs were recorded;
 * qdq_post_decide() sends whole groups to the CPU when one member fell
 * back (folded values are integers standing in for floats). */
ctosa_error *qdq_prepass(lower_session *s);
const lower_entry *qdq_entry(lower_session *s, uint32_t ni);
void qdq_note_outputs(lower_session *s, uint32_t ni);
void qdq_post_decide(lower_session *s);

/* Transpose pass + copy into a final graph (opt_transpose*.c). Lowered ops of
 * block `src` are rewritten: inverse TRANSPOSE pairs cancel, identity
 * transposes vanish, transposes compose, transposes move through
 * layout-agnostic operators so pairs meet, unused operators are dropped.
 * The result is a new graph (same version) with region/block "main" whose
 * inputs are `in` (names kept) and whose outputs are the tensors `out_src[i]`
 * renamed to `out_name[i]` (an IDENTITY is added where renaming is not
 * possible). Constant data is borrowed from src's graph, which must outlive
 * the result. ls gives the debugging options (stream_min, no_layout,
 * debug); NULL = defaults. */
ctosa_error *lw_finalize_graph(const lower_session *ls, const ctosa_graph *src_g, const ctosa_block *src,
                               uint32_t n_in, const char *const *in, uint32_t n_out,
                               const char *const *out_src, const char *const *out_name, ctosa_graph **out);

#endif
