/* fb_verify.c - the TOSA flatbuffer verifier.
 *
 * Files are untrusted: before the decoder reads anything, this walks every
 * object reachable from the root against a description of the TOSA schema
 * and checks that it lies inside the buffer. Flatbuffer offsets to tables,
 * vectors and strings are unsigned, so references only point forward and a
 * walk cannot loop; but objects may be shared (a DAG), which could make a
 * small file expensive to walk and to decode. The walk therefore counts
 * every table, string and vector element it visits and gives up past a cap
 * proportional to the file size (a file without shared tables never gets
 * near it: each visit needs its own 4-byte offset in the file).
 *
 * Scalars are read with unaligned loads, so unlike the flatbuffers library
 * this does not insist on alignment (files written by the official C++
 * serializer have 4-byte-aligned data).
 */
#include <stdarg.h>
#include <string.h>

#include "fb_verify.h"
#include "ctosa/graph.h"

/* ------------------------------------------------------- schema tables */

typedef enum fk {
    FK_SCALAR,  /* size bytes inline */
    FK_STRING,  /* offset to string */
    FK_VEC,     /* offset to vector of scalars of `size` bytes */
    FK_VEC_STR, /* offset to vector of offsets to strings */
    FK_VEC_TBL, /* offset to vector of offsets to tables of type sub */
    FK_TBL,     /* offset to table of type sub */
    FK_UNION    /* TosaOperator.attribute: table chosen by the previous slot */
} fk;

typedef struct fb_tdef fb_tdef;
typedef struct fb_fdef {
    const char *name;
    fk kind;
    uint8_t size;
    bool required;
    const fb_tdef *sub;
} fb_fdef;
struct fb_tdef {
    const char *name;
    uint32_t n;
    const fb_fdef *f;
};

#define TD(var, nm, arr) static const fb_tdef var = {nm, CTOSA_ARRAY_LEN(arr), arr}

static const fb_fdef f_version[] = {{"_major", FK_SCALAR, 4, false, NULL},
                                    {"_minor", FK_SCALAR, 4, false, NULL},
                                    {"_patch", FK_SCALAR, 4, false, NULL},
                                    {"_draft", FK_SCALAR, 1, false, NULL}};
TD(t_version, "Version", f_version);

static const fb_fdef f_swv[] = {{"_major", FK_SCALAR, 4, false, NULL},
                                {"_minor", FK_SCALAR, 4, false, NULL},
                                {"_micro", FK_SCALAR, 4, false, NULL},
                                {"_modifier", FK_STRING, 4, false, NULL}};
TD(t_swv, "SoftwareVersion", f_swv);

static const fb_fdef f_location[] = {{"text", FK_STRING, 4, false, NULL}};
TD(t_location, "OpLocation", f_location);

static const fb_fdef f_tensor[] = {
    {"name", FK_STRING, 4, false, NULL},          {"shape", FK_VEC, 4, false, NULL},
    {"type", FK_SCALAR, 4, false, NULL},          {"data", FK_VEC, 1, false, NULL},
    {"variable", FK_SCALAR, 1, false, NULL},      {"is_unranked", FK_SCALAR, 1, false, NULL},
    {"variable_name", FK_STRING, 4, false, NULL}, {"offset", FK_SCALAR, 8, false, NULL},
    {"size", FK_SCALAR, 8, false, NULL}};
TD(t_tensor, "TosaTensor", f_tensor);

static const fb_fdef f_shape[] = {{"name", FK_STRING, 4, false, NULL},
                                  {"rank", FK_SCALAR, 4, false, NULL},
                                  {"data", FK_VEC, 1, false, NULL}};
TD(t_shape, "TosaShape", f_shape);

static const fb_fdef f_op[] = {
    {"op", FK_SCALAR, 4, false, NULL},       {"attribute_type", FK_SCALAR, 1, false, NULL},
    {"attribute", FK_UNION, 4, false, NULL}, {"inputs", FK_VEC_STR, 4, false, NULL},
    {"outputs", FK_VEC_STR, 4, false, NULL}, {"location", FK_TBL, 4, false, &t_location}};
TD(t_op, "TosaOperator", f_op);

static const fb_fdef f_block[] = {
    {"name", FK_STRING, 4, false, NULL},          {"operators", FK_VEC_TBL, 4, false, &t_op},
    {"tensors", FK_VEC_TBL, 4, false, &t_tensor}, {"inputs", FK_VEC_STR, 4, false, NULL},
    {"outputs", FK_VEC_STR, 4, false, NULL},      {"shapes", FK_VEC_TBL, 4, false, &t_shape}};
TD(t_block, "TosaBasicBlock", f_block);

static const fb_fdef f_region[] = {{"name", FK_STRING, 4, false, NULL},
                                   {"blocks", FK_VEC_TBL, 4, false, &t_block}};
TD(t_region, "TosaRegion", f_region);

/* TosaGraph.version is verified first (the union range depends on it). */
static const fb_fdef f_graph_rest[] = {{"version", FK_TBL, 4, true, &t_version},
                                       {"regions", FK_VEC_TBL, 4, false, &t_region},
                                       {"software_version", FK_TBL, 4, false, &t_swv}};
TD(t_graph, "TosaGraph", f_graph_rest);

/* ----------------------------------------------------------- verifier */

#define FB_MAX_DEPTH 32

typedef struct vstate {
    const fb_buf *b;
    uint64_t visits, max_visits;
    int depth;
    uint32_t max_union; /* largest Attribute member for the file's version */
    ctosa_error *err;
} vstate;

static bool fail(vstate *v, ctosa_code code, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool fail(vstate *v, ctosa_code code, uint64_t at, const char *fmt, ...) {
    if (v->err) return false;
    strbuf sb;
    sb_init(&sb);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    v->err = ctosa_error_new(code, "%s: byte %llu: %s", v->b->name, (unsigned long long)at,
                             sb.s ? sb.s : "out of memory");
    sb_free(&sb);
    return false;
}

static bool visit(vstate *v, uint64_t at, uint64_t n) {
    v->visits += n;
    if (v->visits > v->max_visits)
        return fail(v, CTOSA_ERR_FORMAT, at,
                    "more than %llu tables, strings and vector elements in a file of %llu bytes "
                    "(objects shared many times over?)",
                    (unsigned long long)v->max_visits, (unsigned long long)v->b->size);
    return true;
}

/* Follows the uoffset at pos (which lies inside the buffer). */
static bool follow(vstate *v, uint64_t pos, const char *what, uint64_t *target) {
    uint32_t o = rd_u32(v->b->p + pos);
    if (o == 0) return fail(v, CTOSA_ERR_FORMAT, pos, "%s: offset 0 points at itself", what);
    uint64_t t = pos + o;
    if (t + 4 > v->b->size)
        return fail(v, CTOSA_ERR_FORMAT, pos,
                    "%s: offset %u points to byte %llu, past the end of the file (size %llu)", what, o,
                    (unsigned long long)t, (unsigned long long)v->b->size);
    *target = t;
    return true;
}

static bool check_vector(vstate *v, uint64_t at, uint64_t elem, const char *what, uint32_t *n) {
    if (at + 4 > v->b->size)
        return fail(v, CTOSA_ERR_FORMAT, at, "%s: vector length past the end of the file", what);
    *n = rd_u32(v->b->p + at);
    uint64_t end = at + 4 + (uint64_t)*n * elem;
    if (end > v->b->size)
        return fail(v, CTOSA_ERR_FORMAT, at,
                    "%s: vector length %u (%llu bytes) runs past the end of the file (size %llu)", what, *n,
                    (unsigned long long)((uint64_t)*n * elem), (unsigned long long)v->b->size);
    return true;
}

static bool check_string(vstate *v, uint64_t at, const char *what) {
    if (!visit(v, at, 1)) return false;
    if (at + 4 > v->b->size)
        return fail(v, CTOSA_ERR_FORMAT, at, "%s: string length past the end of the file", what);
    uint32_t n = rd_u32(v->b->p + at);
    uint64_t nul = at + 4 + (uint64_t)n;
    if (nul >= v->b->size)
        return fail(v, CTOSA_ERR_FORMAT, at, "%s: string length %u runs past the end of the file (size %llu)",
                    what, n, (unsigned long long)v->b->size);
    if (v->b->p[nul] != 0)
        return fail(v, CTOSA_ERR_FORMAT, nul, "%s: string of length %u is not NUL-terminated", what, n);
    return true;
}

static bool check_table(vstate *v, uint64_t at, const fb_tdef *def);

/* The table header: returns the vtable position, its size and the table size. */
static bool table_header(vstate *v, uint64_t at, const char *tname, uint64_t *vt_out, uint16_t *vsize_out,
                         uint16_t *tsize_out) {
    const fb_buf *b = v->b;
    if (at + 4 > b->size)
        return fail(v, CTOSA_ERR_FORMAT, at, "%s: table starts past the end of the file", tname);
    int32_t so = (int32_t)rd_u32(b->p + at);
    int64_t vt = (int64_t)at - so;
    if (vt < 0 || (uint64_t)vt + 4 > b->size)
        return fail(v, CTOSA_ERR_FORMAT, at,
                    "%s: vtable offset %d points to byte %lld, outside the file (size %llu)", tname, so,
                    (long long)vt, (unsigned long long)b->size);
    uint16_t vsize = rd_u16(b->p + vt), tsize = rd_u16(b->p + vt + 2);
    if (vsize < 4 || (vsize & 1))
        return fail(v, CTOSA_ERR_FORMAT, (uint64_t)vt, "%s: invalid vtable size %u", tname, vsize);
    if ((uint64_t)vt + vsize > b->size)
        return fail(v, CTOSA_ERR_FORMAT, (uint64_t)vt,
                    "%s: vtable of %u bytes runs past the end of the file (size %llu)", tname, vsize,
                    (unsigned long long)b->size);
    if (tsize < 4) return fail(v, CTOSA_ERR_FORMAT, (uint64_t)vt, "%s: invalid table size %u", tname, tsize);
    if (at + tsize > b->size)
        return fail(v, CTOSA_ERR_FORMAT, at,
                    "%s: table of %u bytes runs past the end of the file (size %llu)", tname, tsize,
                    (unsigned long long)b->size);
    *vt_out = (uint64_t)vt;
    *vsize_out = vsize;
    *tsize_out = tsize;
    return true;
}

/* Position of the field in slot i (0 if absent), checked against the table size. */
static bool field_pos(vstate *v, uint64_t at, uint64_t vt, uint16_t vsize, uint16_t tsize, unsigned i,
                      unsigned fsize, const char *tname, const char *fname, uint64_t *pos) {
    *pos = 0;
    uint64_t so = 4 + 2 * (uint64_t)i;
    if (so + 2 > vsize) return true;
    uint16_t fo = rd_u16(v->b->p + vt + so);
    if (!fo) return true;
    if (fo < 4 || (uint64_t)fo + fsize > tsize)
        return fail(v, CTOSA_ERR_FORMAT, vt + so,
                    "%s.%s: field offset %u (+%u bytes) lies outside its table of %u bytes", tname, fname, fo,
                    fsize, tsize);
    *pos = at + fo;
    return true;
}

/* Verifies the attribute table of op kind `type` (its fields come from
 * ctosa_op_attr_fields, in vtable slot order). */
static bool check_attribute(vstate *v, uint64_t at, uint32_t type) {
    const char *tname = ctosa_op_attr_table((ctosa_op_kind)type);
    uint32_t nf = 0;
    const ctosa_attr_field *f = ctosa_op_attr_fields((ctosa_op_kind)type, &nf);
    if (!tname || !f) return fail(v, CTOSA_ERR_FORMAT, at, "unknown attribute type %u", type);
    if (!visit(v, at, 1)) return false;
    uint64_t vt;
    uint16_t vsize, tsize;
    if (!table_header(v, at, tname, &vt, &vsize, &tsize)) return false;
    for (uint32_t i = 0; i < nf; i++) {
        unsigned fsize = f[i].kind == CTOSA_FIELD_BOOL ? 1 : 4;
        uint64_t pos;
        if (!field_pos(v, at, vt, vsize, tsize, i, fsize, tname, f[i].name, &pos)) return false;
        if (!pos) continue;
        uint64_t t;
        uint32_t n;
        switch (f[i].kind) {
        case CTOSA_FIELD_I32_VEC:
        case CTOSA_FIELD_BYTES:
            if (!follow(v, pos, f[i].name, &t) ||
                !check_vector(v, t, f[i].kind == CTOSA_FIELD_BYTES ? 1 : 4, f[i].name, &n) ||
                !visit(v, t, 1 + (f[i].kind == CTOSA_FIELD_BYTES ? n / 16 : n)))
                return false;
            break;
        case CTOSA_FIELD_STRING:
            if (!follow(v, pos, f[i].name, &t) || !check_string(v, t, f[i].name)) return false;
            break;
        default: break;
        }
    }
    return true;
}

static bool check_field(vstate *v, uint64_t at, uint64_t pos, const fb_fdef *fd, uint64_t union_type_pos,
                        const char *tname) {
    char what[96];
    snprintf(what, sizeof what, "%s.%s", tname, fd->name);
    uint64_t t;
    uint32_t n;
    switch (fd->kind) {
    case FK_SCALAR: return true;
    case FK_STRING: return follow(v, pos, what, &t) && check_string(v, t, what);
    case FK_VEC:
        /* Constant data ([ubyte]) is never touched byte by byte: it costs one visit. */
        return follow(v, pos, what, &t) && check_vector(v, t, fd->size, what, &n) &&
               visit(v, t, 1 + (fd->size == 1 ? 0 : n));
    case FK_VEC_STR:
        if (!follow(v, pos, what, &t) || !check_vector(v, t, 4, what, &n) || !visit(v, t, 1)) return false;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t s;
            if (!follow(v, t + 4 + 4 * (uint64_t)i, what, &s) || !check_string(v, s, what)) return false;
        }
        return true;
    case FK_VEC_TBL:
        if (!follow(v, pos, what, &t) || !check_vector(v, t, 4, what, &n) || !visit(v, t, 1)) return false;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t s;
            if (!follow(v, t + 4 + 4 * (uint64_t)i, what, &s) || !check_table(v, s, fd->sub)) return false;
        }
        return true;
    case FK_TBL: return follow(v, pos, what, &t) && check_table(v, t, fd->sub);
    case FK_UNION: {
        uint32_t type = union_type_pos ? v->b->p[union_type_pos] : 0;
        if (type == 0) return true; /* NONE: the value is ignored */
        if (type > v->max_union)
            return fail(v, CTOSA_ERR_FORMAT, union_type_pos,
                        "%s: union type %u is out of range (at most %u for this TOSA version)", what, type,
                        v->max_union);
        return follow(v, pos, what, &t) && check_attribute(v, t, type);
    }
    }
    (void)at;
    return true;
}

static bool check_table(vstate *v, uint64_t at, const fb_tdef *def) {
    if (!visit(v, at, 1)) return false;
    if (v->depth >= FB_MAX_DEPTH)
        return fail(v, CTOSA_ERR_FORMAT, at, "%s: tables nested deeper than %d", def->name, FB_MAX_DEPTH);
    uint64_t vt;
    uint16_t vsize, tsize;
    if (!table_header(v, at, def->name, &vt, &vsize, &tsize)) return false;
    v->depth++;
    uint64_t prev_pos = 0;
    bool ok = true;
    for (uint32_t i = 0; ok && i < def->n; i++) {
        const fb_fdef *fd = &def->f[i];
        unsigned fsize = fd->kind == FK_SCALAR ? fd->size : 4;
        uint64_t pos;
        if (!field_pos(v, at, vt, vsize, tsize, i, fsize, def->name, fd->name, &pos)) {
            ok = false;
            break;
        }
        if (!pos) {
            if (fd->required)
                ok = fail(v, CTOSA_ERR_FORMAT, at, "%s: required field '%s' is missing", def->name, fd->name);
        } else {
            ok = check_field(v, at, pos, fd, prev_pos, def->name);
        }
        prev_pos = pos;
    }
    v->depth--;
    return ok;
}

ctosa_error *fb_verify(const fb_buf *b, bool require_identifier, fb_summary *out) {
    memset(out, 0, sizeof *out);
    vstate v = {.b = b};
    v.max_visits = b->size / 2 + 1024;
    if (b->size < 8)
        return ctosa_error_new(CTOSA_ERR_FORMAT,
                               "%s: byte 0: file of %llu bytes is too short for a flatbuffer "
                               "(needs at least 8)",
                               b->name, (unsigned long long)b->size);
    if (b->size > UINT64_MAX / 4) return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: file too large", b->name);
    out->has_identifier = memcmp(b->p + 4, "TOSA", 4) == 0;
    if (require_identifier && !out->has_identifier)
        return ctosa_error_new(CTOSA_ERR_FORMAT,
                               "%s: byte 4: file identifier is not \"TOSA\" (not a TOSA file?)", b->name);
    uint64_t root;
    if (!follow(&v, 0, "root table", &root)) return v.err;
    out->root = root;

    /* The root table header and its version first: the version decides the
     * union range used while checking operators. */
    uint64_t vt;
    uint16_t vsize, tsize;
    if (!table_header(&v, root, "TosaGraph", &vt, &vsize, &tsize)) return v.err;
    uint64_t vpos;
    if (!field_pos(&v, root, vt, vsize, tsize, FB_GRAPH_VERSION, 4, "TosaGraph", "version", &vpos))
        return v.err;
    if (!vpos) {
        fail(&v, CTOSA_ERR_FORMAT, root, "TosaGraph: required field 'version' is missing");
        return v.err;
    }
    uint64_t vtab;
    if (!follow(&v, vpos, "TosaGraph.version", &vtab) || !check_table(&v, vtab, &t_version)) return v.err;
    out->major = fb_i32(b, vtab, FB_VERSION_MAJOR, -1);
    out->minor = fb_i32(b, vtab, FB_VERSION_MINOR, -1);
    out->patch = fb_i32(b, vtab, FB_VERSION_PATCH, -1);
    out->draft = fb_u8(b, vtab, FB_VERSION_DRAFT, 1) != 0;
    const char *dr = out->draft ? " draft" : "";
    if (out->major == 0 || (out->major == 1 && out->minor < 0) || out->major < 0) {
        if (out->major < 0)
            return ctosa_error_new(CTOSA_ERR_FORMAT,
                                   "%s: byte %llu: TOSA version is missing (Version._major unset)", b->name,
                                   (unsigned long long)vtab);
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "%s: TOSA version %d.%d.%d%s uses pre-1.0 numbering and is not "
                               "supported (ctosa reads 1.0 and 1.1)",
                               b->name, out->major, out->minor, out->patch, dr);
    }
    if (out->major != 1 || out->minor > 1)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED,
                               "%s: TOSA version %d.%d.%d%s is not supported (ctosa reads 1.0 "
                               "and 1.1)",
                               b->name, out->major, out->minor, out->patch, dr);
    v.max_union = out->minor >= 1 ? CTOSA_OP_COUNT - 1 : CTOSA_OP_CONST_SHAPE;
    if (!check_table(&v, root, &t_graph)) return v.err;
    out->has_software_version = fb_field(b, root, FB_GRAPH_SOFTWARE_VERSION) != 0;
    return NULL;
}
