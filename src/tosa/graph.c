/* graph.c - the graph model and its builder. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph_internal.h"

/* Per-block name index, created on first lookup. */
struct block_index {
    struct block_index *next;
    const ctosa_block *block;
    strmap map;
    uint32_t n_tensors, n_shapes; /* how many entries are indexed */
};

ctosa_error *ctosa_graph_create(ctosa_version version, ctosa_graph **out) {
    *out = NULL;
    ctosa_graph *g = calloc(1, sizeof *g);
    if (!g) return ctosa_error_nomem();
    arena_init(&g->arena, 0);
    g->version = version;
    g->map.fd = -1;
    *out = g;
    return NULL;
}

void ctosa_graph_free(ctosa_graph *g) {
    if (!g) return;
    for (struct block_index *ix = g->indexes; ix;) {
        struct block_index *n = ix->next;
        strmap_free(&ix->map);
        free(ix);
        ix = n;
    }
    if (g->has_map) file_map_close(&g->map);
    arena_free(&g->arena);
    free(g);
}

ctosa_version ctosa_graph_version(const ctosa_graph *g) { return g->version; }
void ctosa_graph_set_version(ctosa_graph *g, ctosa_version v) { g->version = v; }

ctosa_software_version ctosa_graph_software_version(const ctosa_graph *g) { return g->software_version; }

ctosa_error *ctosa_graph_set_software_version(ctosa_graph *g, int32_t major, int32_t minor, int32_t micro,
                                              const char *modifier) {
    g->software_version.present = true;
    g->software_version.major = major;
    g->software_version.minor = minor;
    g->software_version.micro = micro;
    g->software_version.modifier = NULL;
    if (modifier && !(g->software_version.modifier = arena_strdup(&g->arena, modifier)))
        return ctosa_error_nomem();
    return NULL;
}

uint32_t ctosa_graph_region_count(const ctosa_graph *g) { return g->n_regions; }

ctosa_region *ctosa_graph_region(const ctosa_graph *g, uint32_t i) {
    return i < g->n_regions ? g->regions[i] : NULL;
}

ctosa_region *ctosa_graph_find_region(const ctosa_graph *g, const char *name) {
    if (!name) return NULL;
    for (uint32_t i = 0; i < g->n_regions; i++)
        if (g->regions[i]->name && strcmp(g->regions[i]->name, name) == 0) return g->regions[i];
    return NULL;
}

static const ctosa_block *region_block(const ctosa_region *r, const char *name) {
    for (uint32_t i = 0; r && i < r->n_blocks; i++)
        if (r->blocks[i] && r->blocks[i]->name && strcmp(r->blocks[i]->name, name) == 0) return r->blocks[i];
    return NULL;
}

const ctosa_block *ctosa_graph_find_called(const ctosa_graph *g, const ctosa_region *from, const char *name,
                                           const ctosa_region **region) {
    const ctosa_region *r = ctosa_graph_find_region(g, name);
    const ctosa_block *b = r && r->n_blocks ? r->blocks[0] : NULL;
    if (!b && name) {
        r = from;
        b = region_block(from, name);
        for (uint32_t i = 0; !b && i < g->n_regions; i++) b = region_block(r = g->regions[i], name);
    }
    if (region) *region = b ? r : NULL;
    return b;
}

ctosa_file_info ctosa_graph_file_info(const ctosa_graph *g) { return g->info; }

void *ctosa_graph_alloc(ctosa_graph *g, size_t size) { return arena_alloc(&g->arena, size); }
const char *ctosa_graph_strdup(ctosa_graph *g, const char *s) { return arena_strdup(&g->arena, s); }

bool graph_grow(ctosa_graph *g, void ***arr, uint32_t n, uint32_t *cap) {
    if (n < *cap) return true;
    uint32_t ncap = *cap ? *cap * 2 : 8;
    if (ncap <= *cap) return false;
    void **p = arena_alloc(&g->arena, (size_t)ncap * sizeof(void *));
    if (!p) return false;
    if (n) memcpy(p, *arr, (size_t)n * sizeof(void *));
    *arr = p;
    *cap = ncap;
    return true;
}

#define GROW(g, arr, n, cap) graph_grow(g, (void ***)&(arr), n, &(cap))

static ctosa_error *name_error(const char *what) {
    return ctosa_error_new(CTOSA_ERR_USAGE, "%s: name must not be NULL", what);
}

ctosa_error *ctosa_graph_add_region(ctosa_graph *g, const char *name, ctosa_region **out) {
    if (!name) return name_error("region");
    ctosa_region *r = arena_zalloc(&g->arena, sizeof *r);
    if (!r || !(r->name = arena_strdup(&g->arena, name)) ||
        !GROW(g, g->regions, g->n_regions, g->cap_regions))
        return ctosa_error_nomem();
    g->regions[g->n_regions++] = r;
    if (out) *out = r;
    return NULL;
}

ctosa_error *ctosa_region_add_block(ctosa_graph *g, ctosa_region *r, const char *name, ctosa_block **out) {
    if (!name) return name_error("block");
    ctosa_block *b = arena_zalloc(&g->arena, sizeof *b);
    if (!b || !(b->name = arena_strdup(&g->arena, name)) || !GROW(g, r->blocks, r->n_blocks, r->cap_blocks_))
        return ctosa_error_nomem();
    r->blocks[r->n_blocks++] = b;
    if (out) *out = b;
    return NULL;
}

static struct block_index *index_for(const ctosa_graph *g, const ctosa_block *b) {
    for (struct block_index *ix = g->indexes; ix; ix = ix->next)
        if (ix->block == b) return ix;
    return NULL;
}

/* Brings the index of b up to date; NULL when out of memory. */
static struct block_index *index_sync(ctosa_graph *g, const ctosa_block *b) {
    struct block_index *ix = index_for(g, b);
    if (!ix) {
        ix = calloc(1, sizeof *ix);
        if (!ix) return NULL;
        ix->block = b;
        strmap_init(&ix->map);
        ix->next = g->indexes;
        g->indexes = ix;
    }
    for (; ix->n_tensors < b->n_tensors; ix->n_tensors++) {
        ctosa_tensor *t = b->tensors[ix->n_tensors];
        if (t->name && !strmap_has(&ix->map, t->name) && !strmap_put(&ix->map, t->name, t)) return NULL;
    }
    for (; ix->n_shapes < b->n_shapes; ix->n_shapes++) {
        ctosa_tensor *t = b->shapes[ix->n_shapes];
        if (t->name && !strmap_has(&ix->map, t->name) && !strmap_put(&ix->map, t->name, t)) return NULL;
    }
    return ix;
}

ctosa_tensor *ctosa_block_find_tensor(const ctosa_graph *g, const ctosa_block *b, const char *name) {
    if (!name) return NULL;
    /* The index is a cache: logically const. */
    struct block_index *ix = index_sync((ctosa_graph *)g, b);
    if (ix) return strmap_get(&ix->map, name);
    for (uint32_t i = 0; i < b->n_tensors; i++)
        if (b->tensors[i]->name && strcmp(b->tensors[i]->name, name) == 0) return b->tensors[i];
    for (uint32_t i = 0; i < b->n_shapes; i++)
        if (b->shapes[i]->name && strcmp(b->shapes[i]->name, name) == 0) return b->shapes[i];
    return NULL;
}

static ctosa_error *add_tensor_common(ctosa_graph *g, ctosa_block *b, const char *name, bool is_shape,
                                      ctosa_tensor **out) {
    if (!name) return name_error("tensor");
    if (ctosa_block_find_tensor(g, b, name))
        return ctosa_error_new(CTOSA_ERR_USAGE, "block '%s': tensor '%s' is already defined", b->name, name);
    ctosa_tensor *t = arena_zalloc(&g->arena, sizeof *t);
    if (!t || !(t->name = arena_strdup(&g->arena, name))) return ctosa_error_nomem();
    t->data.fd = -1;
    if (is_shape) {
        if (!GROW(g, b->shapes, b->n_shapes, b->cap_shapes_)) return ctosa_error_nomem();
        b->shapes[b->n_shapes++] = t;
    } else {
        if (!GROW(g, b->tensors, b->n_tensors, b->cap_tensors_)) return ctosa_error_nomem();
        b->tensors[b->n_tensors++] = t;
    }
    *out = t;
    return NULL;
}

ctosa_error *ctosa_block_add_tensor(ctosa_graph *g, ctosa_block *b, const char *name, ctosa_dtype dtype,
                                    uint32_t rank, const int32_t *shape, ctosa_tensor **out) {
    if (rank && !shape)
        return ctosa_error_new(CTOSA_ERR_USAGE, "tensor '%s': rank %u but no shape", name ? name : "?", rank);
    int32_t *s = NULL;
    if (rank && !(s = arena_memdup(&g->arena, shape, rank * sizeof(int32_t)))) return ctosa_error_nomem();
    ctosa_tensor *t = NULL;
    ctosa_error *e = add_tensor_common(g, b, name, false, &t);
    if (e) return e;
    t->dtype = dtype;
    t->rank = rank;
    t->shape = s;
    if (out) *out = t;
    return NULL;
}

ctosa_error *ctosa_block_add_shape(ctosa_graph *g, ctosa_block *b, const char *name, uint32_t n,
                                   const int64_t *values, ctosa_tensor **out) {
    int32_t *s = arena_alloc(&g->arena, sizeof(int32_t));
    if (!s) return ctosa_error_nomem();
    s[0] = (int32_t)n;
    if (n > INT32_MAX)
        return ctosa_error_new(CTOSA_ERR_USAGE, "shape '%s': %u elements is too many", name ? name : "?", n);
    ctosa_tensor *t = NULL;
    ctosa_error *e = add_tensor_common(g, b, name, true, &t);
    if (e) return e;
    t->is_shape = true;
    t->dtype = CTOSA_DTYPE_SHAPE;
    t->rank = 1;
    t->shape = s;
    if (values) {
        uint8_t *d = arena_alloc(&g->arena, (size_t)n * 8 + 1);
        if (!d) return ctosa_error_nomem();
        for (uint32_t i = 0; i < n; i++) wr_u64(d + 8 * (size_t)i, (uint64_t)values[i]);
        t->data.kind = CTOSA_DATA_MEMORY;
        t->data.ptr = d;
        t->data.size = (uint64_t)n * 8;
    }
    if (out) *out = t;
    return NULL;
}

ctosa_error *ctosa_tensor_set_data(ctosa_graph *g, ctosa_tensor *t, const void *ptr, uint64_t size,
                                   bool copy) {
    if (size && !ptr) return ctosa_error_new(CTOSA_ERR_USAGE, "tensor '%s': data pointer is NULL", t->name);
    if (copy) {
        if (size > SIZE_MAX) return ctosa_error_nomem();
        void *p = arena_memdup(&g->arena, ptr, (size_t)size);
        if (!p) return ctosa_error_nomem();
        ptr = p;
    }
    memset(&t->data, 0, sizeof t->data);
    t->data.kind = CTOSA_DATA_MEMORY;
    t->data.ptr = ptr;
    t->data.size = size;
    t->data.fd = -1;
    return NULL;
}

ctosa_error *ctosa_tensor_set_data_file(ctosa_graph *g, ctosa_tensor *t, const char *path, int fd,
                                        uint64_t offset, uint64_t size) {
    if (!path && fd < 0)
        return ctosa_error_new(CTOSA_ERR_USAGE, "tensor '%s': neither path nor fd given", t->name);
    memset(&t->data, 0, sizeof t->data);
    t->data.kind = CTOSA_DATA_FILE;
    t->data.path = path ? arena_strdup(&g->arena, path) : NULL;
    if (path && !t->data.path) return ctosa_error_nomem();
    t->data.fd = path ? -1 : fd;
    t->data.offset = offset;
    t->data.size = size;
    return NULL;
}

ctosa_error *ctosa_tensor_set_data_generated(ctosa_graph *g, ctosa_tensor *t, uint64_t size,
                                             ctosa_data_fill_fn fill, void *user) {
    (void)g;
    if (!fill) return ctosa_error_new(CTOSA_ERR_USAGE, "tensor '%s': fill function is NULL", t->name);
    memset(&t->data, 0, sizeof t->data);
    t->data.kind = CTOSA_DATA_GENERATED;
    t->data.size = size;
    t->data.fd = -1;
    t->data.fill = fill;
    t->data.user = user;
    return NULL;
}

/* Bytes of MEMORY / FILE data (the sources a generated tensor reads). */
static ctosa_error *read_plain(const ctosa_data *d, const char *name, uint64_t off, void *buf, size_t n) {
    if (off > d->size || n > d->size - off)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "tensor '%s': read of %zu bytes at %llu passes its %llu bytes", name, n,
                               (unsigned long long)off, (unsigned long long)d->size);
    if (d->kind == CTOSA_DATA_MEMORY) {
        if (n) memcpy(buf, (const uint8_t *)d->ptr + off, n);
        return NULL;
    }
    if (d->kind != CTOSA_DATA_FILE)
        return ctosa_error_new(CTOSA_ERR_USAGE, "tensor '%s': no constant data to read", name);
    int fd = d->fd;
    if (d->path && (fd = open(d->path, O_RDONLY | O_CLOEXEC)) < 0)
        return ctosa_error_new(CTOSA_ERR_IO, "tensor '%s': cannot open %s: %s", name, d->path,
                               strerror(errno));
    ctosa_error *e = NULL;
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)(d->offset + off));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            e = ctosa_error_new(CTOSA_ERR_IO, "tensor '%s': cannot read at byte %llu of %s: %s", name,
                                (unsigned long long)(d->offset + off), d->path ? d->path : "its file",
                                r < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        p += r;
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    if (d->path) close(fd);
    return e;
}

ctosa_error *ctosa_tensor_read_data(const ctosa_tensor *t, uint64_t offset, void *buf, size_t n) {
    const ctosa_data *d = &t->data;
    if (d->kind != CTOSA_DATA_GENERATED) return read_plain(d, t->name, offset, buf, n);
    if (offset > d->size || n > d->size - offset)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "tensor '%s': read of %zu bytes at %llu passes its %llu bytes", t->name, n,
                               (unsigned long long)offset, (unsigned long long)d->size);
    ctosa_error *e = n ? d->fill(d->user, offset, buf, n) : NULL;
    return e ? ctosa_error_prefix(e, "tensor '%s'", t->name) : NULL;
}

/* ctosa_tensor_set_data_transposed: user is the view (in the graph's
 * arena). */
static ctosa_error *fill_transposed(void *user, uint64_t offset, void *buf, size_t n) {
    return ctosa_transpose_view_read(user, offset, buf, n);
}

ctosa_error *ctosa_tensor_set_data_transposed(ctosa_graph *g, ctosa_tensor *t, const ctosa_data *src,
                                              uint64_t batch, uint64_t rows, uint64_t cols,
                                              uint32_t elem_bytes) {
    uint64_t n = 0;
    bool ok = src && (src->kind == CTOSA_DATA_MEMORY || src->kind == CTOSA_DATA_FILE) && elem_bytes > 0 &&
              !__builtin_mul_overflow(batch, rows, &n) && !__builtin_mul_overflow(n, cols, &n) &&
              !__builtin_mul_overflow(n, (uint64_t)elem_bytes, &n) && n == src->size;
    if (!ok)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "tensor '%s': transposed source must be memory or file data of exactly "
                               "batch x rows x cols x elem_bytes bytes",
                               t->name);
    ctosa_transpose_view *v = arena_zalloc(&g->arena, sizeof *v);
    if (!v) return ctosa_error_nomem();
    v->src = *src;
    if (src->kind == CTOSA_DATA_FILE && src->path && !(v->src.path = arena_strdup(&g->arena, src->path)))
        return ctosa_error_nomem();
    v->batch = batch;
    v->rows = rows;
    v->cols = cols;
    v->unit_bytes = elem_bytes;
    return ctosa_tensor_set_data_generated(g, t, n, fill_transposed, v);
}

static const char **dup_names(ctosa_graph *g, uint32_t n, const char *const *names, bool *ok) {
    *ok = true;
    if (!n) return NULL;
    const char **r = arena_alloc(&g->arena, n * sizeof(char *));
    if (!r) {
        *ok = false;
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!names[i] || !(r[i] = arena_strdup(&g->arena, names[i]))) {
            *ok = false;
            return NULL;
        }
    }
    return r;
}

/* Deep-copies the fields of attr that op's table has. */
static bool copy_attr(ctosa_graph *g, ctosa_op_kind kind, const ctosa_attr *src, ctosa_attr *dst) {
    memset(dst, 0, sizeof *dst);
    if (!src) return true;
    uint32_t n;
    const ctosa_attr_field *f = ctosa_op_attr_fields(kind, &n);
    for (uint32_t i = 0; i < n; i++) {
        const char *s = (const char *)src + f[i].offset;
        char *d = (char *)dst + f[i].offset;
        switch (f[i].kind) {
        case CTOSA_FIELD_I32: memcpy(d, s, sizeof(int32_t)); break;
        case CTOSA_FIELD_BOOL: memcpy(d, s, sizeof(bool)); break;
        case CTOSA_FIELD_ENUM:
        case CTOSA_FIELD_DTYPE: memcpy(d, s, sizeof(ctosa_dtype)); break;
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *v = (const ctosa_i32s *)s;
            ctosa_i32s *o = (ctosa_i32s *)d;
            o->n = v->v ? v->n : 0;
            if (o->n && !(o->v = arena_memdup(&g->arena, v->v, o->n * sizeof(int32_t)))) return false;
            break;
        }
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *v = (const ctosa_bytes *)s;
            ctosa_bytes *o = (ctosa_bytes *)d;
            o->n = v->p ? v->n : 0;
            if (o->n && !(o->p = arena_memdup(&g->arena, v->p, o->n))) return false;
            break;
        }
        case CTOSA_FIELD_STRING: {
            const char *str = *(const char *const *)s;
            if (str && !(*(const char **)d = arena_strdup(&g->arena, str))) return false;
            break;
        }
        }
    }
    return true;
}

ctosa_error *ctosa_block_add_op(ctosa_graph *g, ctosa_block *b, ctosa_op_kind kind, uint32_t n_inputs,
                                const char *const *inputs, uint32_t n_outputs, const char *const *outputs,
                                const ctosa_attr *attr, ctosa_op **out) {
    if (!ctosa_op_name(kind))
        return ctosa_error_new(CTOSA_ERR_USAGE, "block '%s': unknown operator value %d", b->name, (int)kind);
    if ((n_inputs && !inputs) || (n_outputs && !outputs))
        return ctosa_error_new(CTOSA_ERR_USAGE, "%s: input/output name array is NULL", ctosa_op_name(kind));
    ctosa_op *op = arena_zalloc(&g->arena, sizeof *op);
    if (!op) return ctosa_error_nomem();
    bool ok1, ok2;
    op->kind = kind;
    op->inputs = dup_names(g, n_inputs, inputs, &ok1);
    op->outputs = dup_names(g, n_outputs, outputs, &ok2);
    if (!ok1 || !ok2) {
        for (uint32_t i = 0; i < n_inputs; i++)
            if (!inputs[i])
                return ctosa_error_new(CTOSA_ERR_USAGE, "%s: input %u name is NULL", ctosa_op_name(kind), i);
        for (uint32_t i = 0; i < n_outputs; i++)
            if (!outputs[i])
                return ctosa_error_new(CTOSA_ERR_USAGE, "%s: output %u name is NULL", ctosa_op_name(kind), i);
        return ctosa_error_nomem();
    }
    op->n_inputs = n_inputs;
    op->n_outputs = n_outputs;
    if (!copy_attr(g, kind, attr, &op->attr)) return ctosa_error_nomem();
    if (!GROW(g, b->ops, b->n_ops, b->cap_ops_)) return ctosa_error_nomem();
    b->ops[b->n_ops++] = op;
    if (out) *out = op;
    return NULL;
}

ctosa_error *ctosa_op_set_location(ctosa_graph *g, ctosa_op *op, const char *text) {
    op->location = NULL;
    if (text && !(op->location = arena_strdup(&g->arena, text))) return ctosa_error_nomem();
    return NULL;
}

static ctosa_error *add_name(ctosa_graph *g, const char ***arr, uint32_t *n, uint32_t *cap,
                             const char *name) {
    if (!name) return name_error("block input/output");
    const char *s = arena_strdup(&g->arena, name);
    if (!s || !graph_grow(g, (void ***)arr, *n, cap)) return ctosa_error_nomem();
    (*arr)[(*n)++] = s;
    return NULL;
}

ctosa_error *ctosa_block_add_input(ctosa_graph *g, ctosa_block *b, const char *name) {
    return add_name(g, &b->inputs, &b->n_inputs, &b->cap_inputs_, name);
}

ctosa_error *ctosa_block_add_output(ctosa_graph *g, ctosa_block *b, const char *name) {
    return add_name(g, &b->outputs, &b->n_outputs, &b->cap_outputs_, name);
}

bool ctosa_tensor_elements(const ctosa_tensor *t, uint64_t *count) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->shape[i] < 0) return false;
        if (!mul_u64(n, (uint64_t)t->shape[i], &n) || n > (1ull << 62)) return false;
    }
    *count = n;
    return true;
}
