/* writer.c - TOSA flatbuffer writer (ctosa_write_file, ctosa_write_memory).
 *
 * One pass, front to back (docs/tosa-format.md describes the exact layout):
 *
 *   1. validate the graph (every problem up to a cap, named by place);
 *   2. build the metadata part of the flatbuffer in memory with fb_build:
 *      parents before children, so every uoffset points forward; constant
 *      data is not copied, only recorded as "items";
 *   3. give every item its position after the metadata (inline layout:
 *      [pad][u32 length][bytes] with the bytes aligned; external layout:
 *      raw segments after the flatbuffer) and patch the recorded slots;
 *   4. write the metadata, then stream each item straight from its source
 *      (write() from memory, copy_file_range from files).
 *
 * So memory use is the metadata (about 100-200 bytes per operator/tensor)
 * whatever the size of the constants.
 *
 * Field policy (deterministic, see docs/tosa-format.md): every scalar field
 * of every table is written explicitly, default or not; every vector field
 * is written (empty when there is nothing); attribute strings are written
 * ("" when NULL); only optional things with no value are left out:
 * TosaOperator.location, TosaTensor.variable_name and
 * SoftwareVersion._modifier when NULL, TosaGraph.software_version when
 * absent or when the graph is 1.0. A constant of 0 bytes is written like a
 * non-constant (empty vector, offset = size = 0): the format cannot tell
 * them apart, and this keeps write(read(write(g))) byte-identical. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fb_build.h"
#include "graph_internal.h"

#define DEFAULT_ALIGN 64u
#define MAX_ALIGN (1u << 20)
#define SEGMENT_ALIGN 64u
#define MAX_VEC (1u << 28) /* sanity cap on names/attribute vectors */

/* One constant whose bytes go after the metadata. */
typedef struct wr_item {
    const ctosa_tensor *t;
    bool external;              /* offset/size segment instead of an inline vector */
    uint32_t data_slot;         /* inline: the uoffset slot of the `data` field */
    uint32_t off_pos, size_pos; /* external: TosaTensor.offset / .size fields */
    uint64_t pos;               /* file position of the first data byte */
} wr_item;

typedef struct writer {
    const ctosa_graph *g;
    fbb b;
    bool external;
    uint32_t align;
    wr_item *items;
    uint32_t n_items, cap_items;
    uint64_t fb_end; /* end of the flatbuffer part */
    uint64_t total;  /* file size */
} writer;

void ctosa_write_options_init(ctosa_write_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->layout = CTOSA_LAYOUT_AUTO;
    opt->data_alignment = DEFAULT_ALIGN;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

/* ------------------------------------------------------------ validation */

typedef struct src_stat {
    const char *path; /* last stat'ed path (cache: many tensors share a file) */
    uint64_t size;
    int err;
} src_stat;

static const char *dtype_label(ctosa_dtype t) {
    const char *n = ctosa_dtype_name(t);
    return n ? n : "?";
}

static void check_source(diag_list *d, src_stat *c, const char *where, const ctosa_data *dt) {
    uint64_t end;
    if (!add_u64(dt->offset, dt->size, &end)) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: data range offset %llu + size %llu overflows", where,
                 (unsigned long long)dt->offset, (unsigned long long)dt->size);
        return;
    }
    uint64_t fsize;
    const char *src = dt->path;
    char fdname[32];
    if (dt->path) {
        if (!c->path || strcmp(c->path, dt->path) != 0) {
            struct stat st;
            c->path = dt->path;
            c->err = stat(dt->path, &st) != 0 ? errno : (!S_ISREG(st.st_mode) ? EINVAL : 0);
            c->size = c->err ? 0 : (uint64_t)st.st_size;
        }
        if (c->err) {
            diag_add(d, CTOSA_ERR_IO, "%s: data file %s: %s", where, dt->path,
                     c->err == EINVAL ? "not a regular file" : strerror(c->err));
            return;
        }
        fsize = c->size;
    } else {
        struct stat st;
        snprintf(fdname, sizeof fdname, "fd %d", dt->fd);
        src = fdname;
        if (dt->fd < 0 || fstat(dt->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            diag_add(d, CTOSA_ERR_IO, "%s: data %s is not an open regular file", where, fdname);
            return;
        }
        fsize = (uint64_t)st.st_size;
    }
    if (end > fsize)
        diag_add(d, CTOSA_ERR_IO, "%s: data range [%llu, %llu) lies beyond the end of %s (%llu bytes)", where,
                 (unsigned long long)dt->offset, (unsigned long long)end, src, (unsigned long long)fsize);
}

static void check_tensor(diag_list *d, src_stat *c, ctosa_version v, const char *bwhere,
                         const ctosa_tensor *t, bool shape_entry) {
    char where[512];
    const char *nm = t->name ? t->name : "(null)";
    snprintf(where, sizeof where, "%s %s '%s'", bwhere, shape_entry ? "shape" : "tensor", nm);
    if (!t->name) diag_add(d, CTOSA_ERR_USAGE, "%s: name is NULL", where);
    if (t->rank && !t->shape) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: rank %u but no shape array", where, t->rank);
        return;
    }
    if (t->rank > MAX_VEC) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: rank %u is too large", where, t->rank);
        return;
    }
    if (shape_entry) {
        if (t->rank != 1 || t->shape[0] < 0) {
            diag_add(d, CTOSA_ERR_USAGE, "%s: a TosaShape needs rank 1 holding its element count", where);
            return;
        }
    } else if (!ctosa_dtype_valid_in(t->dtype, v)) {
        if (ctosa_dtype_name(t->dtype) && t->dtype != CTOSA_DTYPE_UNKNOWN)
            diag_add(d, CTOSA_ERR_USAGE, "%s: dtype %s needs TOSA 1.1 (graph is %d.%d)", where,
                     dtype_label(t->dtype), v.major, v.minor);
        else diag_add(d, CTOSA_ERR_USAGE, "%s: invalid dtype value %d", where, (int)t->dtype);
    }
    const ctosa_data *dt = &t->data;
    if (dt->kind == CTOSA_DATA_NONE) return;
    if (dt->kind != CTOSA_DATA_MEMORY && dt->kind != CTOSA_DATA_FILE && dt->kind != CTOSA_DATA_GENERATED) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: invalid data kind %d", where, (int)dt->kind);
        return;
    }
    if (dt->kind == CTOSA_DATA_GENERATED && !dt->fill)
        diag_add(d, CTOSA_ERR_USAGE, "%s: generated data without a fill function", where);
    if (dt->kind == CTOSA_DATA_MEMORY && dt->size && !dt->ptr)
        diag_add(d, CTOSA_ERR_USAGE, "%s: data pointer is NULL", where);
    uint64_t n, need;
    ctosa_dtype st = shape_entry ? CTOSA_DTYPE_SHAPE : t->dtype;
    if (!ctosa_tensor_elements(t, &n)) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: constant data needs a static, non-negative shape", where);
    } else if (!ctosa_dtype_storage_size(st, n, &need)) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: element count %llu overflows", where, (unsigned long long)n);
    } else if (need != dt->size) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: data is %llu bytes but %llu elements of %s need %llu bytes", where,
                 (unsigned long long)dt->size, (unsigned long long)n, dtype_label(st),
                 (unsigned long long)need);
    }
    if (dt->kind == CTOSA_DATA_FILE) check_source(d, c, where, dt);
}

static void check_names(diag_list *d, const char *where, const char *what, uint32_t n, const char **names) {
    if (n > MAX_VEC) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: %u %s is too many", where, n, what);
        return;
    }
    if (n && !names) {
        diag_add(d, CTOSA_ERR_USAGE, "%s: %s array is NULL", where, what);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!names[i]) diag_add(d, CTOSA_ERR_USAGE, "%s: %s %u is NULL", where, what, i);
}

static void check_attr(diag_list *d, ctosa_version v, const char *where, const ctosa_op *op) {
    uint32_t nf;
    const ctosa_attr_field *f = ctosa_op_attr_fields(op->kind, &nf);
    for (uint32_t i = 0; f && i < nf; i++) {
        const char *p = (const char *)&op->attr + f[i].offset;
        switch (f[i].kind) {
        case CTOSA_FIELD_ENUM: {
            int e;
            memcpy(&e, p, sizeof e);
            if (e < 0 || !ctosa_enum_value_name(f[i].enum_type, (uint32_t)e))
                diag_add(d, CTOSA_ERR_USAGE, "%s: attribute %s: %d is not a %s value", where, f[i].name, e,
                         f[i].enum_type);
            break;
        }
        case CTOSA_FIELD_DTYPE: {
            ctosa_dtype t;
            memcpy(&t, p, sizeof t);
            if (t != CTOSA_DTYPE_UNKNOWN && !ctosa_dtype_valid_in(t, v))
                diag_add(d, CTOSA_ERR_USAGE,
                         "%s: attribute %s: dtype value %d is not valid in "
                         "TOSA %d.%d",
                         where, f[i].name, (int)t, v.major, v.minor);
            break;
        }
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *s = (const ctosa_i32s *)p;
            if ((s->n && !s->v) || s->n > MAX_VEC)
                diag_add(d, CTOSA_ERR_USAGE, "%s: attribute %s: %u values but %s", where, f[i].name, s->n,
                         s->v ? "too many" : "a NULL array");
            break;
        }
        case CTOSA_FIELD_BYTES: {
            const ctosa_bytes *s = (const ctosa_bytes *)p;
            if ((s->n && !s->p) || s->n > MAX_VEC)
                diag_add(d, CTOSA_ERR_USAGE, "%s: attribute %s: %u bytes but %s", where, f[i].name, s->n,
                         s->p ? "too many" : "a NULL array");
            break;
        }
        default: break;
        }
    }
}

static ctosa_error *validate(const ctosa_graph *g) {
    diag_list d;
    diag_init(&d, 0);
    ctosa_version v = g->version;
    int key = ctosa_version_key(v);
    if (key != 10 && key != 11)
        diag_add(&d, CTOSA_ERR_UNSUPPORTED, "graph version %d.%d.%d: only 1.0 and 1.1 are written", v.major,
                 v.minor, v.patch);
    if (v.major < 0 || v.major > 255 || v.minor < 0 || v.minor > 255 || v.patch < 0 || v.patch > 255)
        diag_add(&d, CTOSA_ERR_USAGE, "graph version %d.%d.%d: each part must be 0..255", v.major, v.minor,
                 v.patch);
    src_stat cache = {0};
    for (uint32_t ri = 0; ri < g->n_regions; ri++) {
        const ctosa_region *r = g->regions[ri];
        const char *rn = r->name ? r->name : "(null)";
        if (!r->name) diag_add(&d, CTOSA_ERR_USAGE, "region %u: name is NULL", ri);
        for (uint32_t bi = 0; bi < r->n_blocks; bi++) {
            const ctosa_block *b = r->blocks[bi];
            char bw[300];
            snprintf(bw, sizeof bw, "region '%s' block '%s'", rn, b->name ? b->name : "(null)");
            if (!b->name) diag_add(&d, CTOSA_ERR_USAGE, "%s: name is NULL", bw);
            for (uint32_t i = 0; i < b->n_tensors; i++) check_tensor(&d, &cache, v, bw, b->tensors[i], false);
            for (uint32_t i = 0; i < b->n_shapes; i++) check_tensor(&d, &cache, v, bw, b->shapes[i], true);
            for (uint32_t i = 0; i < b->n_ops; i++) {
                const ctosa_op *op = b->ops[i];
                char ow[400];
                const char *on = ctosa_op_name(op->kind);
                snprintf(ow, sizeof ow, "%s operator %u (%s)", bw, i, on ? on : "?");
                if (!on) {
                    diag_add(&d, CTOSA_ERR_USAGE, "%s: invalid operator value %d", ow, (int)op->kind);
                    continue;
                }
                if (!ctosa_op_valid_in(op->kind, v))
                    diag_add(&d, CTOSA_ERR_USAGE, "%s: operator needs TOSA 1.1 (graph is %d.%d)", ow, v.major,
                             v.minor);
                check_names(&d, ow, "input", op->n_inputs, op->inputs);
                check_names(&d, ow, "output", op->n_outputs, op->outputs);
                check_attr(&d, v, ow, op);
            }
            check_names(&d, bw, "block input", b->n_inputs, b->inputs);
            check_names(&d, bw, "block output", b->n_outputs, b->outputs);
        }
    }
    return diag_finish(&d);
}

/* ------------------------------------------------------ metadata emission */

static bool add_item(writer *w, const ctosa_tensor *t, uint32_t *index) {
    if (w->n_items == w->cap_items) {
        uint32_t nc = w->cap_items ? w->cap_items * 2 : 64;
        wr_item *p = realloc(w->items, nc * sizeof *p);
        if (!p) {
            w->b.failed = w->b.nomem = true;
            return false;
        }
        w->items = p;
        w->cap_items = nc;
    }
    memset(&w->items[w->n_items], 0, sizeof w->items[0]);
    w->items[w->n_items].t = t;
    *index = w->n_items++;
    return true;
}

#define SCALAR(slot_, size_, v_) ((fbb_field){(slot_), (size_), false, (uint64_t)(v_)})
#define REF(slot_) ((fbb_field){(slot_), 4, true, 0})

static uint32_t emit_names(fbb *b, uint32_t n, const char **names) {
    uint32_t vec = fbb_vec_refs(b, n);
    for (uint32_t i = 0; i < n; i++) fbb_patch(b, vec + 4 + 4 * i, fbb_string(b, names[i]));
    return vec;
}

static uint32_t emit_attr(writer *w, const ctosa_op *op) {
    fbb *b = &w->b;
    uint32_t nf;
    const ctosa_attr_field *af = ctosa_op_attr_fields(op->kind, &nf);
    fbb_field f[16];
    uint32_t pos[16];
    if (nf > 16) {
        b->failed = true;
        return 0;
    }
    for (uint32_t i = 0; i < nf; i++) {
        const char *p = (const char *)&op->attr + af[i].offset;
        switch (af[i].kind) {
        case CTOSA_FIELD_I32: {
            int32_t x;
            memcpy(&x, p, sizeof x);
            f[i] = SCALAR(i, 4, (uint32_t)x);
            break;
        }
        case CTOSA_FIELD_BOOL: {
            bool x;
            memcpy(&x, p, sizeof x);
            f[i] = SCALAR(i, 1, x ? 1 : 0);
            break;
        }
        case CTOSA_FIELD_ENUM:
        case CTOSA_FIELD_DTYPE: {
            int x;
            memcpy(&x, p, sizeof x);
            f[i] = SCALAR(i, 4, (uint32_t)x);
            break;
        }
        default: f[i] = REF(i); break;
        }
    }
    uint32_t tab = fbb_table(b, f, nf, pos);
    for (uint32_t i = 0; i < nf; i++) {
        const char *p = (const char *)&op->attr + af[i].offset;
        uint32_t child;
        switch (af[i].kind) {
        case CTOSA_FIELD_I32_VEC: {
            const ctosa_i32s *s = (const ctosa_i32s *)p;
            child = fbb_vec_i32(b, s->v, s->n);
            break;
        }
        case CTOSA_FIELD_BYTES: { /* force_align 8 in the schema (CLAMP) */
            const ctosa_bytes *s = (const ctosa_bytes *)p;
            child = fbb_vec_bytes(b, s->p, s->n, 8);
            break;
        }
        case CTOSA_FIELD_STRING: child = fbb_string(b, *(const char *const *)p); break;
        default: continue;
        }
        fbb_patch(b, pos[i], child);
    }
    return tab;
}

static uint32_t emit_op(writer *w, const ctosa_op *op) {
    fbb *b = &w->b;
    fbb_field f[6] = {SCALAR(0, 4, op->kind), SCALAR(1, 1, op->kind), REF(2), REF(3), REF(4), REF(5)};
    uint32_t pos[6];
    uint32_t tab = fbb_table(b, f, op->location ? 6 : 5, pos);
    fbb_patch(b, pos[2], emit_attr(w, op));
    fbb_patch(b, pos[3], emit_names(b, op->n_inputs, op->inputs));
    fbb_patch(b, pos[4], emit_names(b, op->n_outputs, op->outputs));
    if (op->location) {
        fbb_field lf = REF(0);
        uint32_t lpos;
        uint32_t loc = fbb_table(b, &lf, 1, &lpos);
        fbb_patch(b, pos[5], loc);
        fbb_patch(b, lpos, fbb_string(b, op->location));
    }
    return tab;
}

static uint32_t emit_tensor(writer *w, const ctosa_tensor *t) {
    fbb *b = &w->b;
    /* A 0-byte constant looks exactly like "no data" in the file; writing
     * both the same way keeps write(read(write(g))) byte-identical. */
    bool has_data = t->data.kind != CTOSA_DATA_NONE && t->data.size > 0;
    fbb_field f[9] = {REF(0),
                      REF(1),
                      SCALAR(2, 4, t->dtype),
                      REF(3),
                      SCALAR(4, 1, t->variable ? 1 : 0),
                      SCALAR(5, 1, t->is_unranked ? 1 : 0),
                      SCALAR(7, 8, 0),
                      SCALAR(8, 8, 0),
                      REF(6)};
    uint32_t pos[9];
    uint32_t tab = fbb_table(b, f, t->variable_name ? 9 : 8, pos);
    fbb_patch(b, pos[0], fbb_string(b, t->name));
    fbb_patch(b, pos[1], fbb_vec_i32(b, t->shape, t->rank));
    uint32_t it;
    if (has_data && !w->external) {
        if (add_item(w, t, &it)) w->items[it].data_slot = pos[3];
    } else {
        fbb_patch(b, pos[3], fbb_vec_bytes(b, NULL, 0, 4));
        if (has_data && add_item(w, t, &it)) {
            w->items[it].external = true;
            w->items[it].off_pos = pos[6];
            w->items[it].size_pos = pos[7];
        }
    }
    if (t->variable_name) fbb_patch(b, pos[8], fbb_string(b, t->variable_name));
    return tab;
}

/* TosaShape has no offset/size fields: its data is always inline. */
static uint32_t emit_shape(writer *w, const ctosa_tensor *t) {
    fbb *b = &w->b;
    fbb_field f[3] = {REF(0), SCALAR(1, 4, (uint32_t)t->shape[0]), REF(2)};
    uint32_t pos[3];
    uint32_t tab = fbb_table(b, f, 3, pos);
    fbb_patch(b, pos[0], fbb_string(b, t->name));
    uint32_t it;
    if (t->data.kind != CTOSA_DATA_NONE && t->data.size > 0) {
        if (add_item(w, t, &it)) w->items[it].data_slot = pos[2];
    } else if (t->data.kind != CTOSA_DATA_NONE) {
        /* the empty shape []: one dummy value, as Arm's serializer writes it
         * (readers that treat an empty vector as "no data" still load it) */
        static const uint8_t dummy[8];
        fbb_patch(b, pos[2], fbb_vec_bytes(b, dummy, 8, 8));
    } else {
        fbb_patch(b, pos[2], fbb_vec_bytes(b, NULL, 0, 4));
    }
    return tab;
}

static uint32_t emit_block(writer *w, const ctosa_block *bl) {
    fbb *b = &w->b;
    fbb_field f[6] = {REF(0), REF(1), REF(2), REF(3), REF(4), REF(5)};
    uint32_t pos[6];
    uint32_t tab = fbb_table(b, f, 6, pos);
    fbb_patch(b, pos[0], fbb_string(b, bl->name));
    uint32_t vec = fbb_vec_refs(b, bl->n_ops);
    fbb_patch(b, pos[1], vec);
    for (uint32_t i = 0; i < bl->n_ops && !b->failed; i++)
        fbb_patch(b, vec + 4 + 4 * i, emit_op(w, bl->ops[i]));
    vec = fbb_vec_refs(b, bl->n_tensors);
    fbb_patch(b, pos[2], vec);
    for (uint32_t i = 0; i < bl->n_tensors && !b->failed; i++)
        fbb_patch(b, vec + 4 + 4 * i, emit_tensor(w, bl->tensors[i]));
    fbb_patch(b, pos[3], emit_names(b, bl->n_inputs, bl->inputs));
    fbb_patch(b, pos[4], emit_names(b, bl->n_outputs, bl->outputs));
    vec = fbb_vec_refs(b, bl->n_shapes);
    fbb_patch(b, pos[5], vec);
    for (uint32_t i = 0; i < bl->n_shapes && !b->failed; i++)
        fbb_patch(b, vec + 4 + 4 * i, emit_shape(w, bl->shapes[i]));
    return tab;
}

static uint32_t emit_region(writer *w, const ctosa_region *r) {
    fbb *b = &w->b;
    fbb_field f[2] = {REF(0), REF(1)};
    uint32_t pos[2];
    uint32_t tab = fbb_table(b, f, 2, pos);
    fbb_patch(b, pos[0], fbb_string(b, r->name));
    uint32_t vec = fbb_vec_refs(b, r->n_blocks);
    fbb_patch(b, pos[1], vec);
    for (uint32_t i = 0; i < r->n_blocks && !b->failed; i++)
        fbb_patch(b, vec + 4 + 4 * i, emit_block(w, r->blocks[i]));
    return tab;
}

static void emit_graph(writer *w) {
    fbb *b = &w->b;
    const ctosa_graph *g = w->g;
    fbb_put_u32(b, 0); /* root uoffset, patched below */
    fbb_put(b, "TOSA", 4);
    bool sv = ctosa_version_key(g->version) >= 11 && g->software_version.present;
    fbb_field f[3] = {REF(0), REF(1), REF(2)};
    uint32_t pos[3];
    fbb_patch(b, 0, fbb_table(b, f, sv ? 3 : 2, pos));

    fbb_field vf[4] = {SCALAR(0, 4, (uint32_t)g->version.major), SCALAR(1, 4, (uint32_t)g->version.minor),
                       SCALAR(2, 4, (uint32_t)g->version.patch), SCALAR(3, 1, g->version.draft ? 1 : 0)};
    uint32_t vpos[4];
    fbb_patch(b, pos[0], fbb_table(b, vf, 4, vpos));
    if (sv) {
        const ctosa_software_version *s = &g->software_version;
        fbb_field sf[4] = {SCALAR(0, 4, (uint32_t)s->major), SCALAR(1, 4, (uint32_t)s->minor),
                           SCALAR(2, 4, (uint32_t)s->micro), REF(3)};
        uint32_t spos[4];
        fbb_patch(b, pos[2], fbb_table(b, sf, s->modifier ? 4 : 3, spos));
        if (s->modifier) fbb_patch(b, spos[3], fbb_string(b, s->modifier));
    }
    uint32_t vec = fbb_vec_refs(b, g->n_regions);
    fbb_patch(b, pos[1], vec);
    for (uint32_t i = 0; i < g->n_regions && !b->failed; i++)
        fbb_patch(b, vec + 4 + 4 * i, emit_region(w, g->regions[i]));
}

/* Builds the metadata and places every item. Returns false when the
 * flatbuffer part does not fit in 2^31-1 bytes (or memory ran out: check
 * w->b.nomem). */
static bool plan(writer *w, bool external) {
    fbb_free(&w->b);
    fbb_init(&w->b);
    w->n_items = 0;
    w->external = external;
    emit_graph(w);
    if (w->b.failed) return false;
    uint64_t pos = w->b.len;
    for (uint32_t i = 0; i < w->n_items; i++) {
        wr_item *it = &w->items[i];
        if (it->external) continue;
        pos = align_up(pos + 4, w->align);
        it->pos = pos;
        fbb_patch(&w->b, it->data_slot, pos - 4);
        pos += it->t->data.size;
        if (pos > FB_MAX_SIZE) return false;
    }
    w->fb_end = pos;
    uint32_t seg = w->align > SEGMENT_ALIGN ? w->align : SEGMENT_ALIGN;
    for (uint32_t i = 0; i < w->n_items; i++) {
        wr_item *it = &w->items[i];
        if (!it->external) continue;
        pos = align_up(pos, seg);
        it->pos = pos;
        fbb_set_u64(&w->b, it->off_pos, pos);
        fbb_set_u64(&w->b, it->size_pos, it->t->data.size);
        pos += it->t->data.size;
    }
    w->total = pos;
    return !w->b.failed;
}

static ctosa_error *prepare(writer *w, const ctosa_graph *g, const ctosa_write_options *opt) {
    memset(w, 0, sizeof *w);
    w->g = g;
    ctosa_write_options o;
    if (opt) o = *opt;
    else ctosa_write_options_init(&o);
    w->align = o.data_alignment ? o.data_alignment : DEFAULT_ALIGN;
    if (w->align < 8 || w->align > MAX_ALIGN || (w->align & (w->align - 1)))
        return ctosa_error_new(CTOSA_ERR_USAGE, "data_alignment %u: must be a power of two from 8 to %u",
                               w->align, MAX_ALIGN);
    if (o.layout != CTOSA_LAYOUT_AUTO && o.layout != CTOSA_LAYOUT_INLINE && o.layout != CTOSA_LAYOUT_EXTERNAL)
        return ctosa_error_new(CTOSA_ERR_USAGE, "invalid layout value %d", (int)o.layout);
    ctosa_error *e = validate(g);
    if (e) return e;
    bool ok = plan(w, o.layout == CTOSA_LAYOUT_EXTERNAL);
    if (!ok && !w->b.nomem && o.layout == CTOSA_LAYOUT_AUTO) ok = plan(w, true);
    if (ok) return NULL;
    if (w->b.nomem) return ctosa_error_nomem();
    return ctosa_error_new(CTOSA_ERR_LIMIT, "%s",
                           o.layout == CTOSA_LAYOUT_INLINE
                               ? "the flatbuffer with inline constant data would exceed 2^31-1 "
                                 "bytes; use the external (or auto) layout"
                               : "the flatbuffer part would exceed 2^31-1 bytes even with "
                                 "constant data stored outside it");
}

static void writer_free(writer *w) {
    fbb_free(&w->b);
    free(w->items);
}

/* ------------------------------------------------------------- streaming */

typedef struct sink {
    out_file *f;  /* file output, or */
    uint8_t *mem; /* memory output */
    uint64_t mem_size;
    uint64_t pos;
    const char *cached_path; /* open data file (many tensors share one) */
    int cached_fd;
} sink;

static ctosa_error *overrun(void) {
    return ctosa_error_new(CTOSA_ERR_INTERNAL, "writer layout error: output overrun");
}

static ctosa_error *sink_write(sink *s, const void *p, size_t n) {
    if (!n) return NULL;
    if (!s->f && n > s->mem_size - s->pos) return overrun();
    if (s->f) {
        ctosa_error *e = out_file_write(s->f, p, n);
        if (e) return e;
    } else {
        memcpy(s->mem + s->pos, p, n);
    }
    s->pos += n;
    return NULL;
}

static ctosa_error *sink_pad_to(sink *s, uint64_t pos) {
    static const uint8_t zeros[4096];
    if (s->pos > pos) return overrun();
    while (s->pos < pos) {
        uint64_t n = pos - s->pos;
        ctosa_error *e = sink_write(s, zeros, n > sizeof zeros ? sizeof zeros : (size_t)n);
        if (e) return e;
    }
    return NULL;
}

static ctosa_error *sink_copy_fd(sink *s, int fd, uint64_t off, uint64_t n, const char *name) {
    if (s->f) {
        ctosa_error *e = out_file_copy_range(s->f, fd, off, n, name);
        if (!e) s->pos += n;
        return e;
    }
    if (n > s->mem_size - s->pos) return overrun();
    while (n) {
        size_t c = n > (1u << 30) ? (1u << 30) : (size_t)n;
        ssize_t r = pread(fd, s->mem + s->pos, c, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return ctosa_error_new(CTOSA_ERR_IO, "%s: read failed at byte %llu: %s", name,
                                   (unsigned long long)off,
                                   r < 0 ? strerror(errno) : "unexpected end of file");
        s->pos += (uint64_t)r;
        off += (uint64_t)r;
        n -= (uint64_t)r;
    }
    return NULL;
}

/* Generated data: filled chunk by chunk, straight into the output buffer
 * for memory output, through one bounded buffer for files. */
static ctosa_error *sink_generated(sink *s, const ctosa_tensor *t) {
    const ctosa_data *d = &t->data;
    if (!s->f && d->size > s->mem_size - s->pos) return overrun();
    uint8_t *buf = NULL;
    if (s->f && !(buf = malloc(d->size < CTOSA_DATA_CHUNK ? (size_t)d->size + 1 : CTOSA_DATA_CHUNK)))
        return ctosa_error_nomem();
    ctosa_error *e = NULL;
    for (uint64_t off = 0; !e && off < d->size;) {
        size_t n = d->size - off < CTOSA_DATA_CHUNK ? (size_t)(d->size - off) : CTOSA_DATA_CHUNK;
        if (s->f) {
            e = d->fill(d->user, off, buf, n);
            if (!e) e = sink_write(s, buf, n);
        } else {
            e = d->fill(d->user, off, s->mem + s->pos, n);
            if (!e) s->pos += n;
        }
        off += n;
    }
    free(buf);
    return e ? ctosa_error_prefix(e, "tensor '%s'", t->name) : NULL;
}

static ctosa_error *sink_data(sink *s, const ctosa_tensor *t) {
    const ctosa_data *d = &t->data;
    if (d->kind == CTOSA_DATA_MEMORY) return sink_write(s, d->ptr, (size_t)d->size);
    if (!d->size) return NULL;
    if (d->kind == CTOSA_DATA_GENERATED) return sink_generated(s, t);
    int fd = d->fd;
    char fdname[32];
    const char *name = d->path;
    if (d->path) {
        if (!s->cached_path || strcmp(s->cached_path, d->path) != 0) {
            if (s->cached_fd >= 0) close(s->cached_fd);
            s->cached_path = NULL;
            s->cached_fd = open(d->path, O_RDONLY | O_CLOEXEC);
            if (s->cached_fd < 0)
                return ctosa_error_new(CTOSA_ERR_IO, "tensor '%s': data file %s: %s", t->name, d->path,
                                       strerror(errno));
            s->cached_path = d->path;
        }
        fd = s->cached_fd;
    } else {
        snprintf(fdname, sizeof fdname, "fd %d", fd);
        name = fdname;
    }
    ctosa_error *e = sink_copy_fd(s, fd, d->offset, d->size, name);
    return e ? ctosa_error_prefix(e, "tensor '%s'", t->name) : NULL;
}

static ctosa_error *stream(writer *w, sink *s) {
    s->cached_fd = -1;
    ctosa_error *e = sink_write(s, w->b.buf, w->b.len);
    /* Inline vectors first (they end the flatbuffer), then segments. */
    for (uint32_t k = 0; !e && k < 2 * w->n_items; k++) {
        const wr_item *it = &w->items[k % w->n_items];
        if (it->external != (k >= w->n_items)) continue;
        if (!it->external) {
            e = sink_pad_to(s, it->pos - 4);
            uint8_t len[4];
            wr_u32(len, (uint32_t)it->t->data.size);
            if (!e) e = sink_write(s, len, 4);
        } else {
            e = sink_pad_to(s, it->pos);
        }
        if (!e) e = sink_data(s, it->t);
        if (!e && s->pos != it->pos + it->t->data.size)
            e = ctosa_error_new(CTOSA_ERR_INTERNAL, "tensor '%s': layout mismatch", it->t->name);
    }
    if (!e && s->pos != w->total)
        e = ctosa_error_new(CTOSA_ERR_INTERNAL, "wrote %llu bytes, planned %llu", (unsigned long long)s->pos,
                            (unsigned long long)w->total);
    if (s->cached_fd >= 0) close(s->cached_fd);
    s->cached_fd = -1;
    return e;
}

/* ----------------------------------------------------------------- API */

ctosa_error *ctosa_write_file(const ctosa_graph *g, const char *path, const ctosa_write_options *opt) {
    if (!g || !path) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_write_file: NULL argument");
    writer w;
    ctosa_error *e = prepare(&w, g, opt);
    if (!e) {
        out_file f;
        e = out_file_open(&f, path);
        if (!e) {
            sink s = {.f = &f};
            e = stream(&w, &s);
            if (e) out_file_abort(&f);
            else e = out_file_commit(&f);
        }
    }
    writer_free(&w);
    /* out_file messages already start with the path */
    if (e && !strstr(ctosa_error_message(e), path)) e = ctosa_error_prefix(e, "%s", path);
    return e;
}

ctosa_error *ctosa_write_memory(const ctosa_graph *g, const ctosa_write_options *opt, void **buf,
                                size_t *size) {
    if (!buf || !size || !g) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_write_memory: NULL argument");
    *buf = NULL;
    *size = 0;
    writer w;
    ctosa_error *e = prepare(&w, g, opt);
    if (!e && w.total > SIZE_MAX)
        e = ctosa_error_new(CTOSA_ERR_LIMIT, "%llu bytes do not fit in memory", (unsigned long long)w.total);
    uint8_t *mem = NULL;
    if (!e && !(mem = malloc(w.total ? (size_t)w.total : 1))) e = ctosa_error_nomem();
    if (!e) {
        sink s = {.mem = mem, .mem_size = w.total};
        e = stream(&w, &s);
    }
    if (e) {
        free(mem);
        e = ctosa_error_prefix(e, "<memory>");
    } else {
        *buf = mem;
        *size = (size_t)w.total;
    }
    writer_free(&w);
    return e;
}
