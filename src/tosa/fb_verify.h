/* fb_verify.h - bounds-checked access to TOSA flatbuffers (internal).
 *
 * fb_verify() walks the whole file against the TOSA schema before anything
 * else looks at it: every offset, vtable, vector, string and union member is
 * checked to lie inside the buffer. After it succeeded, the fb_* accessors
 * below may be used on any table it visited; they still never read outside
 * the buffer on their own (each takes the buffer size), so a bug in the
 * decoder cannot turn into an out-of-bounds read.
 *
 * Positions are byte offsets from the start of the buffer (uint64_t so that
 * sums cannot wrap). 0 means "absent" (no table or vector lives at byte 0:
 * that is where the root offset is).
 */
#ifndef CTOSA_FB_VERIFY_H
#define CTOSA_FB_VERIFY_H

#include "util/util.h"

typedef struct fb_buf {
    const uint8_t *p;
    uint64_t size;
    const char *name; /* for messages */
} fb_buf;

/* Vtable slots of the TOSA tables (slot id = field index in the schema). */
enum {
    FB_GRAPH_VERSION = 0,
    FB_GRAPH_REGIONS = 1,
    FB_GRAPH_SOFTWARE_VERSION = 2,
    FB_VERSION_MAJOR = 0,
    FB_VERSION_MINOR = 1,
    FB_VERSION_PATCH = 2,
    FB_VERSION_DRAFT = 3,
    FB_SWV_MAJOR = 0,
    FB_SWV_MINOR = 1,
    FB_SWV_MICRO = 2,
    FB_SWV_MODIFIER = 3,
    FB_REGION_NAME = 0,
    FB_REGION_BLOCKS = 1,
    FB_BLOCK_NAME = 0,
    FB_BLOCK_OPERATORS = 1,
    FB_BLOCK_TENSORS = 2,
    FB_BLOCK_INPUTS = 3,
    FB_BLOCK_OUTPUTS = 4,
    FB_BLOCK_SHAPES = 5,
    FB_OP_OP = 0,
    FB_OP_ATTRIBUTE_TYPE = 1,
    FB_OP_ATTRIBUTE = 2,
    FB_OP_INPUTS = 3,
    FB_OP_OUTPUTS = 4,
    FB_OP_LOCATION = 5,
    FB_LOCATION_TEXT = 0,
    FB_TENSOR_NAME = 0,
    FB_TENSOR_SHAPE = 1,
    FB_TENSOR_TYPE = 2,
    FB_TENSOR_DATA = 3,
    FB_TENSOR_VARIABLE = 4,
    FB_TENSOR_IS_UNRANKED = 5,
    FB_TENSOR_VARIABLE_NAME = 6,
    FB_TENSOR_OFFSET = 7,
    FB_TENSOR_SIZE = 8,
    FB_SHAPE_NAME = 0,
    FB_SHAPE_RANK = 1,
    FB_SHAPE_DATA = 2
};

/* What the verifier learnt that the decoder needs. */
typedef struct fb_summary {
    uint64_t root;       /* position of the TosaGraph table */
    bool has_identifier; /* bytes 4..7 are "TOSA" */
    int32_t major, minor, patch;
    bool draft;
    bool has_software_version;
} fb_summary;

/* Verifies buf completely. Errors are CTOSA_ERR_FORMAT ("NAME: byte N: ...")
 * or CTOSA_ERR_UNSUPPORTED for versions ctosa does not read. */
ctosa_error *fb_verify(const fb_buf *b, bool require_identifier, fb_summary *out);

/* ---- accessors (valid on verified tables; bounds-checked anyway) ---- */

/* Absolute position of field `slot` of the table at t, or 0 if absent. */
static inline uint64_t fb_field(const fb_buf *b, uint64_t t, unsigned slot) {
    if (!t || t + 4 > b->size) return 0;
    int64_t vt = (int64_t)t - (int32_t)rd_u32(b->p + t);
    if (vt < 0 || (uint64_t)vt + 4 > b->size) return 0;
    uint16_t vsize = rd_u16(b->p + vt);
    uint64_t so = 4 + 2 * (uint64_t)slot;
    if (so + 2 > vsize || (uint64_t)vt + so + 2 > b->size) return 0;
    uint16_t fo = rd_u16(b->p + vt + so);
    return fo ? t + fo : 0;
}

static inline uint32_t fb_u32(const fb_buf *b, uint64_t t, unsigned slot, uint32_t def) {
    uint64_t f = fb_field(b, t, slot);
    return f && f + 4 <= b->size ? rd_u32(b->p + f) : def;
}
static inline int32_t fb_i32(const fb_buf *b, uint64_t t, unsigned slot, int32_t def) {
    return (int32_t)fb_u32(b, t, slot, (uint32_t)def);
}
static inline uint8_t fb_u8(const fb_buf *b, uint64_t t, unsigned slot, uint8_t def) {
    uint64_t f = fb_field(b, t, slot);
    return f && f < b->size ? b->p[f] : def;
}
static inline uint64_t fb_u64(const fb_buf *b, uint64_t t, unsigned slot, uint64_t def) {
    uint64_t f = fb_field(b, t, slot);
    return f && f + 8 <= b->size ? rd_u64(b->p + f) : def;
}
/* Follows the uoffset stored at position pos; 0 if it leaves the buffer. */
static inline uint64_t fb_deref(const fb_buf *b, uint64_t pos) {
    if (!pos || pos + 4 > b->size) return 0;
    uint64_t r = pos + rd_u32(b->p + pos);
    return r < b->size ? r : 0;
}
/* The table/vector/string referenced by field slot of table t (0 if absent). */
static inline uint64_t fb_ref(const fb_buf *b, uint64_t t, unsigned slot) {
    return fb_deref(b, fb_field(b, t, slot));
}
/* Length of the vector or string at v (0 when v is 0). */
static inline uint32_t fb_len(const fb_buf *b, uint64_t v) {
    return v && v + 4 <= b->size ? rd_u32(b->p + v) : 0;
}
/* Position of element i of a vector of offsets (the element's target). */
static inline uint64_t fb_vec_ref(const fb_buf *b, uint64_t v, uint32_t i) {
    return v ? fb_deref(b, v + 4 + 4 * (uint64_t)i) : 0;
}

#endif
