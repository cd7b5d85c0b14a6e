/* pb.c - protobuf wire-format reader (see pb.h). */
#include <stdarg.h>
#include <string.h>

#include "onnx/pb.h"

static const char *wire_name(int w) {
    static const char *const names[] = {"varint",    "fixed64", "length-delimited", "group start",
                                        "group end", "fixed32", "invalid (6)",      "invalid (7)"};
    return names[w & 7];
}

ctosa_error *pb_error_code(pb_doc *d, ctosa_code code, const uint8_t *at, const char *fmt, ...) {
    d->err_off = at ? pb_offset(d, at) : 0;
    va_list ap;
    va_start(ap, fmt);
    ctosa_error *e = ctosa_error_vnew(code, fmt, ap);
    va_end(ap);
    return e;
}

ctosa_error *pb_error(pb_doc *d, const uint8_t *at, const char *fmt, ...) {
    d->err_off = at ? pb_offset(d, at) : 0;
    va_list ap;
    va_start(ap, fmt);
    ctosa_error *e = ctosa_error_vnew(CTOSA_ERR_FORMAT, fmt, ap);
    va_end(ap);
    return e;
}

ctosa_error *pb_finish_error(const pb_doc *d, ctosa_error *err) {
    if (!err) return NULL;
    return ctosa_error_prefix(err, "%s: byte %llu", d->name ? d->name : "<memory>",
                              (unsigned long long)d->err_off);
}

void pb_cursor_init(pb_cursor *c, pb_doc *d, const uint8_t *p, uint64_t n) {
    c->doc = d;
    c->p = p;
    c->end = p + n;
}

ctosa_error *pb_varint(pb_doc *d, const uint8_t **pp, const uint8_t *end, uint64_t *v) {
    const uint8_t *p = *pp, *start = p;
    /* Fast path: one byte (tags, small lengths, most dims). */
    if (p < end && *p < 0x80) {
        *v = *p;
        *pp = p + 1;
        return NULL;
    }
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return pb_error(d, start, "truncated varint");
        uint8_t b = *p++;
        if (i == 9 && b >= 0x80) break;
        if (i == 9 && b > 1) return pb_error(d, start, "varint does not fit in 64 bits");
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *v = r;
            *pp = p;
            return NULL;
        }
    }
    return pb_error(d, start, "varint longer than 10 bytes");
}

/* Reads a tag; validates the field number and wire type. */
static ctosa_error *read_tag(pb_doc *d, const uint8_t **p, const uint8_t *end, uint32_t *num, int *wire) {
    const uint8_t *at = *p;
    *num = 0;
    *wire = 0;
    uint64_t t;
    ctosa_error *e = pb_varint(d, p, end, &t);
    if (e) return e;
    if (t > UINT32_MAX) return pb_error(d, at, "field tag %llu out of range", (unsigned long long)t);
    *num = (uint32_t)(t >> 3);
    *wire = (int)(t & 7);
    if (*num == 0) return pb_error(d, at, "field number 0");
    if (*wire > 5) return pb_error(d, at, "field %u: invalid wire type %d", *num, *wire);
    return NULL;
}

/* Skips the value of a non-group field whose tag was just read. */
static ctosa_error *skip_value(pb_doc *d, const uint8_t **p, const uint8_t *end, uint32_t num, int wire,
                               const uint8_t *at) {
    uint64_t v;
    switch (wire) {
    case PB_VARINT: return pb_varint(d, p, end, &v);
    case PB_I64:
        if ((uint64_t)(end - *p) < 8) return pb_error(d, at, "field %u: truncated fixed64", num);
        *p += 8;
        return NULL;
    case PB_I32:
        if ((uint64_t)(end - *p) < 4) return pb_error(d, at, "field %u: truncated fixed32", num);
        *p += 4;
        return NULL;
    case PB_LEN: {
        ctosa_error *e = pb_varint(d, p, end, &v);
        if (e) return e;
        if (v > (uint64_t)(end - *p))
            return pb_error(d, at, "field %u: length %llu runs past the end of its message (%llu bytes left)",
                            num, (unsigned long long)v, (unsigned long long)(end - *p));
        *p += v;
        return NULL;
    }
    default: return pb_error(d, at, "field %u: unexpected %s", num, wire_name(wire));
    }
}

/* Skips a group body (after its start tag) up to and including the matching
 * end tag. Nested groups are tracked on a fixed stack. */
static ctosa_error *skip_group(pb_doc *d, const uint8_t **p, const uint8_t *end, uint32_t num,
                               const uint8_t *at, const uint8_t **body_end) {
    uint32_t stack[PB_MAX_GROUP_DEPTH];
    int depth = 0;
    stack[depth++] = num;
    while (depth > 0) {
        if (*p >= end) return pb_error(d, at, "group %u is not closed", num);
        const uint8_t *tag_at = *p;
        uint32_t n;
        int w;
        ctosa_error *e = read_tag(d, p, end, &n, &w);
        if (e) return e;
        if (w == PB_SGROUP) {
            if (depth == PB_MAX_GROUP_DEPTH)
                return pb_error_code(d, CTOSA_ERR_LIMIT, tag_at, "groups nested deeper than %d",
                                     PB_MAX_GROUP_DEPTH);
            stack[depth++] = n;
        } else if (w == PB_EGROUP) {
            if (stack[depth - 1] != n)
                return pb_error(d, tag_at, "group end %u does not match group start %u", n, stack[depth - 1]);
            depth--;
            if (depth == 0) *body_end = tag_at;
        } else {
            e = skip_value(d, p, end, n, w, tag_at);
            if (e) return e;
        }
    }
    return NULL;
}

ctosa_error *pb_next(pb_cursor *c, pb_field *f, bool *more) {
    pb_doc *d = c->doc;
    if (c->p >= c->end) {
        *more = false;
        return NULL;
    }
    *more = true;
    memset(f, 0, sizeof *f);
    f->at = c->p;
    int wire;
    ctosa_error *e = read_tag(d, &c->p, c->end, &f->num, &wire);
    if (e) return e;
    f->wire = (uint8_t)wire;
    switch (wire) {
    case PB_VARINT: return pb_varint(d, &c->p, c->end, &f->u);
    case PB_I64:
        if ((uint64_t)(c->end - c->p) < 8) return pb_error(d, f->at, "field %u: truncated fixed64", f->num);
        f->u = rd_u64(c->p);
        c->p += 8;
        return NULL;
    case PB_I32:
        if ((uint64_t)(c->end - c->p) < 4) return pb_error(d, f->at, "field %u: truncated fixed32", f->num);
        f->u = rd_u32(c->p);
        c->p += 4;
        return NULL;
    case PB_LEN: {
        uint64_t n;
        e = pb_varint(d, &c->p, c->end, &n);
        if (e) return e;
        if (n > (uint64_t)(c->end - c->p))
            return pb_error(d, f->at,
                            "field %u: length %llu runs past the end of its message (%llu bytes left)",
                            f->num, (unsigned long long)n, (unsigned long long)(c->end - c->p));
        f->data = c->p;
        f->len = n;
        c->p += n;
        return NULL;
    }
    case PB_SGROUP: {
        const uint8_t *body = c->p, *body_end = c->p;
        e = skip_group(d, &c->p, c->end, f->num, f->at, &body_end);
        if (e) return e;
        f->data = body;
        f->len = (uint64_t)(body_end - body);
        return NULL;
    }
    default: /* PB_EGROUP */ return pb_error(d, f->at, "field %u: group end without a group start", f->num);
    }
}

ctosa_error *pb_expect(pb_doc *d, const pb_field *f, int wire, const char *what) {
    if (f->wire == wire) return NULL;
    return pb_error(d, f->at, "field '%s' (%u) has wire type %s, expected %s", what, f->num,
                    wire_name(f->wire), wire_name(wire));
}

ctosa_error *pb_repeated_count(pb_doc *d, const pb_field *f, int elem_wire, const char *what,
                               uint64_t *count) {
    if (f->wire == elem_wire) {
        *count = 1;
        return NULL;
    }
    if (f->wire != PB_LEN)
        return pb_error(d, f->at, "field '%s' (%u) has wire type %s, expected %s or packed", what, f->num,
                        wire_name(f->wire), wire_name(elem_wire));
    switch (elem_wire) {
    case PB_I32:
        if (f->len % 4)
            return pb_error(d, f->at, "packed field '%s': %llu bytes is not a multiple of 4", what,
                            (unsigned long long)f->len);
        *count = f->len / 4;
        return NULL;
    case PB_I64:
        if (f->len % 8)
            return pb_error(d, f->at, "packed field '%s': %llu bytes is not a multiple of 8", what,
                            (unsigned long long)f->len);
        *count = f->len / 8;
        return NULL;
    default: {
        /* Every varint ends at a byte below 0x80; validate each one so
         * that pb_repeated_get can decode without checks. */
        const uint8_t *p = f->data, *end = f->data + f->len;
        uint64_t n = 0, v;
        while (p < end) {
            ctosa_error *e = pb_varint(d, &p, end, &v);
            if (e) return ctosa_error_prefix(e, "packed field '%s'", what);
            n++;
        }
        *count = n;
        return NULL;
    }
    }
}

void pb_repeated_get(const pb_field *f, int elem_wire, uint64_t *out, uint64_t max, uint64_t *n) {
    *n = 0;
    if (f->wire == elem_wire) {
        if (max) out[(*n)++] = f->u;
        return;
    }
    const uint8_t *p = f->data, *end = f->data + f->len;
    while (p < end && *n < max) {
        uint64_t v = 0;
        if (elem_wire == PB_I32) {
            v = rd_u32(p);
            p += 4;
        } else if (elem_wire == PB_I64) {
            v = rd_u64(p);
            p += 8;
        } else {
            for (int s = 0; p < end && s < 70; s += 7) {
                uint8_t b = *p++;
                v |= (uint64_t)(b & 0x7f) << s;
                if (b < 0x80) break;
            }
        }
        out[(*n)++] = v;
    }
}
