/* opt_transpose_int.h - the working graph of the transpose pass, shared by
 * opt_transpose.c (copy in, local rewrites, liveness, copy out) and
 * opt_transpose_layout.c (layout propagation). Tensors and operators are
 * referred to by index; operators keep their execution order in a doubly
 * linked list so that new ones can be placed right after their producer. */
#ifndef CTOSA_OPT_TRANSPOSE_INT_H
#define CTOSA_OPT_TRANSPOSE_INT_H

#include "lower/lower_internal.h"

typedef struct ot_tensor {
    const char *name;
    ctosa_dtype dtype;
    uint32_t rank;
    int32_t shape[LOWER_MAX_RANK];
    bool is_shape;           /* a TosaShape entry (copied as is) */
    const ctosa_tensor *src; /* tensor of the lowered block; NULL if new */
    ctosa_data data;         /* constant data (kind NONE: none) */
    bool data_copy;          /* data lives in the pass's arena: copy it out */
    bool is_in, is_out;      /* partition input / output (after aliasing) */
    int32_t producer;        /* operator index, -1 none */
    int32_t alias;           /* tensor this one equals, -1 none */
} ot_tensor;

typedef struct ot_op {
    ctosa_op_kind kind;
    uint32_t n_in, n_out;
    uint32_t *in, *out; /* tensor indices */
    ctosa_attr attr;
    const char *location;
    bool dead;
    int32_t prev, next; /* execution order */
} ot_op;

typedef struct ot {
    arena a;
    strmap names; /* every tensor name (and reserved output names) -> index + 1 */
    ot_tensor *t;
    uint32_t nt, capt;
    ot_op *o;
    uint32_t no, capo;
    int32_t head, tail;
    uint32_t counter; /* suffix for new tensor names */
    bool oom;
    uint64_t stream_min; /* lower_session.stream_min */
} ot;

uint32_t ot_new_tensor(ot *s, const char *base, ctosa_dtype dt, uint32_t rank, const int32_t *shape);
int32_t ot_new_op(ot *s, ctosa_op_kind kind, uint32_t n_in, const uint32_t *in, uint32_t n_out,
                  const uint32_t *out, const ctosa_attr *attr, const char *location, int32_t after);
uint32_t ot_resolve(ot *s, uint32_t id);
bool ot_perm_trivial(const int32_t *shape, const int32_t *perm, uint32_t n);
/* Constant rewrites shared with the local rules. */
bool ot_is_const(const ot *s, uint32_t t);
bool ot_const_permutable(const ot *s, uint32_t c, const int32_t *perm);
uint32_t ot_const_permute(ot *s, uint32_t c, const int32_t *perm);
/* One round of layout propagation; returns how many components switched. */
uint32_t ot_layout_round(ot *s);
/* One round of RESCALE chain merging (opt_rescale.c); returns how many
 * operators it merged or removed. */
uint32_t ot_rescale_round(ot *s);

/* Streamed permuted constants (opt_transpose_layout.c): generated data
 * (graph.h) = the source bytes (memory or a file range; borrowed, must
 * outlive every graph holding the tensor) of shape src_shape permuted by
 * perm, produced in bounded chunks when written or read. */
typedef struct ot_gen {
    ctosa_data src; /* lower_api.c may turn a mapped memory source into its file range */
    uint32_t rank, es;
    int64_t shape[LOWER_MAX_RANK];
    int32_t perm[LOWER_MAX_RANK];
    uint64_t B, R, C, U; /* reduced form: [B, R, C] units of U bytes -> [B, C, R] */
} ot_gen;
/* Sets t's data to src permuted when src is at least min bytes
 * and the permutation has the supported form; *done tells whether it did
 * (else t is unchanged and the caller materialises the permute). */
ctosa_error *ot_set_permuted(ctosa_graph *g, ctosa_tensor *t, const ctosa_data *src, uint32_t rank,
                             const int64_t *src_shape, const int32_t *perm, uint32_t es, uint64_t min,
                             bool *done);
ctosa_error *ot_gen_fill(void *user, uint64_t offset, void *buf, size_t n);
/* The descriptor of data made by ot_set_permuted, else NULL. */
ot_gen *ot_gen_of(const ctosa_data *d);
/* Copies generated data d to tensor t of graph g (a permuted descriptor is
 * duplicated into g's arena; other generated data stays borrowed). */
ctosa_error *ot_copy_data(ctosa_graph *g, ctosa_tensor *t, const ctosa_data *d);

#endif
