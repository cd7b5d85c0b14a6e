/* pb.h - a bounds-checked protobuf wire-format reader over a byte buffer
 * (normally an mmap of the whole file). Nothing is copied: fields are
 * returned as pointers into the buffer.
 *
 *     pb_doc d = {.name = "model.onnx", .base = buf, .size = n};
 *     pb_cursor c;
 *     pb_cursor_init(&c, &d, buf, n);
 *     pb_field f;
 *     bool more;
 *     while (!(err = pb_next(&c, &f, &more)) && more) {
 *         switch (f.num) { case 1: ...; default: break; }   // unknown: ignored
 *     }
 *     if (err) err = pb_finish_error(&d, err);   // "model.onnx: byte 12: ..."
 *
 * Every problem is a CTOSA_ERR_FORMAT error; the offset of the offending
 * byte is stored in doc->err_off (messages from this module do not include
 * it, so that callers can add their own context before pb_finish_error()
 * puts "file: byte N: " in front). Groups (wire types 3/4, deprecated but
 * legal) are skipped as a whole, nested up to PB_MAX_GROUP_DEPTH. */
#ifndef CTOSA_ONNX_PB_H
#define CTOSA_ONNX_PB_H

#include "ctosa/common.h"
#include "util/util.h"

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_SGROUP = 3, PB_EGROUP = 4, PB_I32 = 5 };

#define PB_MAX_GROUP_DEPTH 64
#define PB_MAX_FIELD ((1u << 29) - 1)

typedef struct pb_doc {
    const char *name;    /* file name for messages */
    const uint8_t *base; /* first byte of the buffer */
    uint64_t size;
    uint64_t err_off; /* offset of the last problem reported */
} pb_doc;

typedef struct pb_cursor {
    pb_doc *doc;
    const uint8_t *p, *end;
} pb_cursor;

typedef struct pb_field {
    uint32_t num;
    uint8_t wire;
    const uint8_t *at;   /* the tag's first byte */
    uint64_t u;          /* value of VARINT, I64 and I32 fields */
    const uint8_t *data; /* LEN payload, or group body */
    uint64_t len;
} pb_field;

static inline uint64_t pb_offset(const pb_doc *d, const uint8_t *at) { return (uint64_t)(at - d->base); }
static inline int64_t pb_zigzag64(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }
static inline int32_t pb_zigzag32(uint32_t v) { return (int32_t)(v >> 1) ^ -(int32_t)(v & 1); }

/* A FORMAT error at `at` (records the offset in d->err_off). */
ctosa_error *pb_error(pb_doc *d, const uint8_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, with another code (CTOSA_ERR_LIMIT, CTOSA_ERR_UNSUPPORTED...). */
ctosa_error *pb_error_code(pb_doc *d, ctosa_code code, const uint8_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Puts "name: byte N: " (N = d->err_off) in front of err. */
ctosa_error *pb_finish_error(const pb_doc *d, ctosa_error *err);

void pb_cursor_init(pb_cursor *c, pb_doc *d, const uint8_t *p, uint64_t n);

/* Reads one varint at *p (< end) and advances *p. Rejects truncation,
 * encodings longer than 10 bytes and values above 2^64-1. */
ctosa_error *pb_varint(pb_doc *d, const uint8_t **p, const uint8_t *end, uint64_t *v);

/* Reads the next field. At the end of the message: NULL and *more = false. */
ctosa_error *pb_next(pb_cursor *c, pb_field *f, bool *more);

/* Checks a field's wire type; `what` names the field in the message. */
ctosa_error *pb_expect(pb_doc *d, const pb_field *f, int wire, const char *what);

/* Repeated scalar fields may arrive packed (one LEN field) or one element
 * per field; elem_wire is PB_VARINT, PB_I32 or PB_I64. Counts the elements
 * carried by f, validating the packed encoding. */
ctosa_error *pb_repeated_count(pb_doc *d, const pb_field *f, int elem_wire, const char *what,
                               uint64_t *count);
/* Stores the elements of f (raw 64-bit values; I32 elements zero-extended)
 * into out[0..max) and sets *n. Call pb_repeated_count first. */
void pb_repeated_get(const pb_field *f, int elem_wire, uint64_t *out, uint64_t max, uint64_t *n);

/* Field value helpers. */
static inline float pb_f32(uint64_t u) {
    uint32_t b = (uint32_t)u;
    float f;
    __builtin_memcpy(&f, &b, 4);
    return f;
}
static inline double pb_f64(uint64_t u) {
    double f;
    __builtin_memcpy(&f, &u, 8);
    return f;
}

#endif
