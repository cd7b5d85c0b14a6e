/* interp_runtime.h - private structures of the interpreter runtime
 * (interp_core.c, interp_dispatch.c, interp_control.c, threadpool.c).
 * Kernel files never include it: their whole contract with the runtime is
 * interp_internal.h (with int_math.h). */
#ifndef CTOSA_INTERP_RUNTIME_H
#define CTOSA_INTERP_RUNTIME_H

#include "ctosa/interp.h"
#include "interp_internal.h"

/* ------------------------------------------------------------ thread pool */
typedef struct tpool tpool;
/* threads >= 2 workers in total (the caller counts as one); NULL on failure. */
tpool *tpool_create(int threads);
void tpool_free(tpool *p);
void tpool_run(tpool *p, size_t n, void (*fn)(void *, size_t, size_t), void *arg);
/* Wakes sleeping workers so that they are polling when the next job comes
 * (a run of a graph calls it as it starts). */
void tpool_wake(tpool *p);

/* --------------------------------------------------------------- runtime */
typedef enum slot_kind { SLOT_UNUSED, SLOT_ACT, SLOT_CONST, SLOT_INPUT, SLOT_VAR } slot_kind;

typedef struct ivar {
    const char *key; /* variable_name, or the tensor name */
    itensor t;       /* the variable's storage (data owned here) */
    struct ivar *next;
} ivar;

typedef struct slot {
    itensor t;
    const ctosa_tensor *src;
    slot_kind kind;
    uint64_t bytes;    /* canonical bytes */
    int64_t def, last; /* producing op and last op reading it (liveness) */
    uint64_t off;      /* offset in the activation buffer (SLOT_ACT) */
    bool is_output;    /* a block output: lives to the end */
    bool set;          /* SLOT_INPUT: has a value */
    bool used;         /* SLOT_INPUT: read by an operator that runs, or an output
                           (false only for inputs a slice does not need) */
} slot;

/* An operator's cache block (interp_cache_put); p first, so &cache.p is
 * the interp_op.cache slot. */
typedef struct op_cache {
    void *p;
    size_t bytes;
} op_cache;

typedef struct pop {
    const ctosa_op *op;
    interp_kernel_fn fn;
    char *where;
    itensor **in, **out;
    uint32_t n_in, n_out;
    bool skip;       /* CONST, CONST_SHAPE, VARIABLE: nothing to do at run time */
    bool writes_all; /* the kernel stores every output element: no zeroing */
    bool fused;      /* a CLAMP folded into the producing convolution */
    bool has_post;   /* post holds a fused CLAMP */
    interp_post post;
    /* A RESCALE offered to this convolution (has_rescale; fuse_rescales),
     * and on the side of the RESCALE (and of its tie chain's operators)
     * the index of that convolution (or -1). */
    bool has_rescale;
    interp_fused_rescale rescale;
    int64_t rescale_by;
    bool has_pre; /* an int8 CONV2D offered the TRANSPOSE of its input (fuse_transposes) */
    interp_fused_pre pre;
    bool pre_fused; /* that TRANSPOSE: run by the convolution, not by itself */
    /* The element-wise group this operator runs (interp_fuse.h), or NULL. */
    struct fz_group *chain;
    op_cache cache;
    uint64_t prof_runs; /* options.profile: runs and total seconds */
    double prof_s;
} pop;

typedef struct rplan {
    const ctosa_region *region;
    const ctosa_block *block;
    uint32_t n_slots;
    slot *slots;
    strmap by_name;
    /* A slice (ctosa_interp_options.outputs, main region only): keep[i] when
     * operator i runs; need holds every name those operators read. */
    bool *keep;
    strmap need;
    uint32_t n_ops;
    pop *ops;
    uint32_t n_in, n_out;
    slot **inputs, **outputs;
    itensor **out_t; /* the outputs' tensors, for interp_call_region */
    void *act;       /* activation buffer */
    uint64_t act_size;
    bool active; /* running now (guards against recursive regions) */
    /* The block whose control-flow operator calls this region: names the
     * region's block does not define resolve there (regions may read the
     * enclosing block's tensors, as MLIR-produced graphs do). */
    struct rplan *parent;
    uint32_t parent_op;
    struct rplan *next;
} rplan;

typedef struct custom_reg {
    char *domain, *name;
    ctosa_custom_fn fn;
    void *user;
    struct custom_reg *next;
} custom_reg;

struct interp_ctx {
    struct ctosa_interp *it;
    tpool *pool;
    uint32_t depth;
    struct rplan *cur; /* the plan running now */
};

struct ctosa_interp {
    const ctosa_graph *g;
    ctosa_interp_options opt;
    arena arena;
    rplan *main, *plans;
    uint64_t mem_used;
    interp_ctx ctx;
    ivar *vars;
    custom_reg *customs;
    void **out_host; /* per main output: host-encoded copy (or NULL) */
    bool ran;
};

/* Prepares (once per calling block) the plan of block b of region r
 * called by op parent_op of parent (NULL for the main block). Plans are
 * keyed by block: a called graph may be a region (its first block) or a
 * block of the calling region (ctosa_graph_find_called). */
ctosa_error *interp_get_plan(ctosa_interp *it, const ctosa_region *r, const ctosa_block *b, rplan *parent,
                             uint32_t parent_op, rplan **out);
/* Runs a prepared plan whose inputs are set. */
ctosa_error *interp_run_plan(ctosa_interp *it, rplan *p);
/* Runs the region or block `region` names (ctosa_graph_find_called from
 * the running plan's region) with in[] copied into its block inputs.
 * On success *outs points at the region's output tensors (valid until the
 * region runs again). Checks the ERROR_IF rules on counts, dtypes and
 * shapes of the inputs; o is the calling operator (for messages). */
ctosa_error *interp_call_region(const interp_op *o, const char *region, itensor *const *in, uint32_t n_in,
                                itensor ***outs, uint32_t *n_outs);
/* Accounts bytes against max_memory (CTOSA_ERR_LIMIT when over). */
ctosa_error *interp_reserve(ctosa_interp *it, uint64_t bytes, const char *what);

/* Kernel table (interp_dispatch.c). */
interp_kernel_fn interp_kernel_for(ctosa_op_kind k);
/* Checks the operator's input/output counts (CTOSA_ERR_INVALID). */
ctosa_error *interp_check_arity(const interp_op *o);

/* Host encoding <-> canonical. to_host writes count * host size bytes;
 * from_host validates ranges (INT4, INT48, BOOL) and fails naming the
 * element. */
void interp_to_host(const itensor *t, void *dst);
ctosa_error *interp_from_host(itensor *t, const void *src, const char *what);

/* Control, variables and custom kernels (interp_control.c). */
ctosa_error *interp_k_COND_IF(const interp_op *o);
ctosa_error *interp_k_WHILE_LOOP(const interp_op *o);
ctosa_error *interp_k_VARIABLE_READ(const interp_op *o);
ctosa_error *interp_k_VARIABLE_WRITE(const interp_op *o);
ctosa_error *interp_k_CUSTOM(const interp_op *o);
#endif
