/* npy.c - .npy reading/writing and conversion to the host encoding. The
 * header is a Python dict literal; we parse just the three keys numpy writes
 * ('descr', 'fortran_order', 'shape') and report the byte offset of the
 * first thing we do not understand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfile/tensorfile.h"
#include "util/floatfmt.h"

static ctosa_error *bad(const char *name, uint64_t off, const char *what) {
    return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: byte %llu: %s", name, (unsigned long long)off, what);
}

void npy_free(npy_array *a) {
    if (!a) return;
    free(a->data);
    a->data = NULL;
}

typedef struct hp {
    const char *s;
    size_t n, i;
    uint64_t base; /* file offset of s[0] */
} hp;

static void skip_ws(hp *p) {
    while (p->i < p->n &&
           (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static bool eat(hp *p, char c) {
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == c) {
        p->i++;
        return true;
    }
    return false;
}

/* A quoted Python string (no escapes needed for our keys and descrs). */
static bool read_str(hp *p, char *out, size_t cap) {
    skip_ws(p);
    if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"')) return false;
    char q = p->s[p->i++];
    size_t k = 0;
    while (p->i < p->n && p->s[p->i] != q) {
        if (k + 1 >= cap) return false;
        out[k++] = p->s[p->i++];
    }
    if (p->i >= p->n) return false;
    p->i++;
    out[k] = 0;
    return true;
}

ctosa_error *npy_parse(const uint8_t *buf, uint64_t size, const char *name, npy_array *out) {
    memset(out, 0, sizeof *out);
    if (size < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return bad(name, 0, "not a .npy file (missing \\x93NUMPY magic)");
    uint8_t major = buf[6];
    uint64_t hlen, hstart;
    if (major == 1) {
        hlen = rd_u16(buf + 8);
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) return bad(name, 8, "truncated header length");
        hlen = rd_u32(buf + 8);
        hstart = 12;
    } else {
        return bad(name, 6, "unsupported .npy format version");
    }
    if (hlen > size - hstart) return bad(name, 8, "header length runs past the end of the file");
    hp p = {(const char *)buf + hstart, (size_t)hlen, 0, hstart};
    char descr[32] = "";
    bool have_descr = false, have_shape = false, fortran = false;
    if (!eat(&p, '{')) return bad(name, hstart + p.i, "header does not start with '{'");
    for (;;) {
        if (eat(&p, '}')) break;
        char key[32];
        uint64_t kpos = hstart + p.i;
        if (!read_str(&p, key, sizeof key)) return bad(name, kpos, "expected a quoted key");
        if (!eat(&p, ':')) return bad(name, hstart + p.i, "expected ':'");
        skip_ws(&p);
        uint64_t vpos = hstart + p.i;
        if (strcmp(key, "descr") == 0) {
            if (!read_str(&p, descr, sizeof descr))
                return bad(name, vpos, "'descr' must be a simple type string such as '<f4'");
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (p.n - p.i >= 4 && memcmp(p.s + p.i, "True", 4) == 0) {
                fortran = true;
                p.i += 4;
            } else if (p.n - p.i >= 5 && memcmp(p.s + p.i, "False", 5) == 0) {
                p.i += 5;
            } else {
                return bad(name, vpos, "'fortran_order' must be True or False");
            }
        } else if (strcmp(key, "shape") == 0) {
            if (!eat(&p, '(')) return bad(name, vpos, "'shape' must be a tuple");
            for (;;) {
                if (eat(&p, ')')) break;
                skip_ws(&p);
                uint64_t dpos = hstart + p.i;
                if (p.i >= p.n || p.s[p.i] < '0' || p.s[p.i] > '9')
                    return bad(name, dpos, "expected a dimension");
                uint64_t v = 0;
                while (p.i < p.n && p.s[p.i] >= '0' && p.s[p.i] <= '9') {
                    if (v > (UINT64_C(1) << 50)) return bad(name, dpos, "dimension too large");
                    v = v * 10 + (uint64_t)(p.s[p.i++] - '0');
                }
                while (p.i < p.n && p.s[p.i] == 'L') p.i++; /* Python 2 longs */
                if (out->rank >= NPY_MAX_RANK) return bad(name, dpos, "more than 16 dimensions");
                out->shape[out->rank++] = (int64_t)v;
                if (!eat(&p, ',')) {
                    if (!eat(&p, ')')) return bad(name, hstart + p.i, "expected ',' or ')'");
                    break;
                }
            }
            have_shape = true;
        } else {
            return bad(name, kpos, "unknown header key");
        }
        if (!eat(&p, ',')) {
            if (!eat(&p, '}')) return bad(name, hstart + p.i, "expected ',' or '}'");
            break;
        }
    }
    if (!have_descr || !have_shape) return bad(name, hstart, "header lacks 'descr' or 'shape'");
    if (fortran) return bad(name, hstart, "fortran_order arrays are not supported");
    /* descr: byte order, kind, size */
    char order = descr[0], kind = descr[1];
    char *end;
    long isz = strtol(descr + 2, &end, 10);
    if (!(order == '<' || order == '>' || order == '|' || order == '=') || !strchr("fiub", kind) || *end ||
        isz <= 0 || isz > 8 || (isz & (isz - 1)))
        return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: byte %llu: unsupported dtype '%s'", name,
                               (unsigned long long)hstart, descr);
    if (kind == 'f' && isz == 1)
        return ctosa_error_new(CTOSA_ERR_FORMAT, "%s: unsupported dtype '%s'", name, descr);
    out->kind = kind;
    out->itemsize = (uint32_t)isz;
    uint64_t count = 1;
    for (uint32_t i = 0; i < out->rank; i++)
        if (!mul_u64(count, (uint64_t)out->shape[i], &count) || count > (UINT64_C(1) << 60))
            return bad(name, hstart, "element count overflows");
    out->count = count;
    uint64_t dstart = hstart + hlen, nbytes;
    if (!mul_u64(count, (uint64_t)isz, &nbytes)) return bad(name, hstart, "data size overflows");
    if (size - dstart != nbytes)
        return ctosa_error_new(CTOSA_ERR_FORMAT,
                               "%s: byte %llu: data has %llu bytes, shape and "
                               "dtype '%s' need %llu",
                               name, (unsigned long long)dstart, (unsigned long long)(size - dstart), descr,
                               (unsigned long long)nbytes);
    if (nbytes > SIZE_MAX) return ctosa_error_nomem();
    out->data = malloc(nbytes ? (size_t)nbytes : 1);
    if (!out->data) return ctosa_error_nomem();
    memcpy(out->data, buf + dstart, (size_t)nbytes);
    if (order == '>' && isz > 1) {
        uint8_t *d = out->data;
        for (uint64_t i = 0; i < count; i++)
            for (long a = 0, b = isz - 1; a < b; a++, b--) {
                uint8_t t = d[i * (uint64_t)isz + (uint64_t)a];
                d[i * (uint64_t)isz + (uint64_t)a] = d[i * (uint64_t)isz + (uint64_t)b];
                d[i * (uint64_t)isz + (uint64_t)b] = t;
            }
    }
    return NULL;
}

ctosa_error *npy_read_file(const char *path, npy_array *out) {
    file_map m;
    memset(out, 0, sizeof *out);
    ctosa_error *e = file_map_open(path, &m);
    if (e) return e;
    e = npy_parse(m.data, m.size, path, out);
    file_map_close(&m);
    return e;
}

const char *npy_descr_for(ctosa_dtype t) {
    switch (t) {
    case CTOSA_DTYPE_BOOL: return "|b1";
    case CTOSA_DTYPE_INT4:
    case CTOSA_DTYPE_INT8: return "|i1";
    case CTOSA_DTYPE_INT16: return "<i2";
    case CTOSA_DTYPE_INT32: return "<i4";
    case CTOSA_DTYPE_INT48:
    case CTOSA_DTYPE_INT64:
    case CTOSA_DTYPE_SHAPE: return "<i8";
    case CTOSA_DTYPE_FP32: return "<f4";
    case CTOSA_DTYPE_FP16: return "<f2";
    case CTOSA_DTYPE_BF16: return "<u2";
    case CTOSA_DTYPE_FP8E4M3:
    case CTOSA_DTYPE_FP8E5M2: return "|u1";
    default: return NULL;
    }
}

ctosa_error *npy_encode(const char *descr, uint32_t rank, const int64_t *shape, const void *data,
                        uint64_t nbytes, uint8_t **buf, size_t *size) {
    strbuf h;
    sb_init(&h);
    sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (uint32_t i = 0; i < rank; i++)
        sb_printf(&h, "%lld,%s", (long long)shape[i], i + 1 < rank ? " " : "");
    sb_puts(&h, "), }");
    /* pad with spaces so that magic + length + header + '\n' is a multiple
     * of 64 (what numpy writes; keeps the data aligned) */
    size_t total = 10 + h.len + 1;
    size_t pad = (64 - total % 64) % 64;
    for (size_t i = 0; i < pad; i++) sb_putc(&h, ' ');
    sb_putc(&h, '\n');
    if (h.failed || h.len > 65535 || nbytes > SIZE_MAX - 10 - h.len) {
        sb_free(&h);
        return ctosa_error_nomem();
    }
    size_t n = 10 + h.len + (size_t)nbytes;
    uint8_t *b = malloc(n);
    if (!b) {
        sb_free(&h);
        return ctosa_error_nomem();
    }
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    wr_u16(b + 8, (uint16_t)h.len);
    memcpy(b + 10, h.s, h.len);
    if (nbytes) memcpy(b + 10 + h.len, data, (size_t)nbytes);
    sb_free(&h);
    *buf = b;
    *size = n;
    return NULL;
}

ctosa_error *npy_write_file(const char *path, const char *descr, uint32_t rank, const int64_t *shape,
                            const void *data, uint64_t nbytes) {
    out_file f;
    ctosa_error *e = out_file_open(&f, path);
    if (e) return e;
    /* Header first, then the data straight from the caller's buffer. */
    uint8_t *hdr;
    size_t hn;
    if ((e = npy_encode(descr, rank, shape, NULL, 0, &hdr, &hn))) {
        out_file_abort(&f);
        return e;
    }
    e = out_file_write(&f, hdr, hn);
    free(hdr);
    for (uint64_t off = 0; !e && off < nbytes;) {
        size_t chunk = nbytes - off > (UINT64_C(1) << 30) ? (size_t)1 << 30 : (size_t)(nbytes - off);
        e = out_file_write(&f, (const char *)data + off, chunk);
        off += chunk;
    }
    if (e) {
        out_file_abort(&f);
        return e;
    }
    return out_file_commit(&f);
}

const char *npy_kind_name(char kind, uint32_t itemsize) {
    switch (kind) {
    case 'f': return itemsize == 2 ? "float16" : itemsize == 4 ? "float32" : "float64";
    case 'i': return itemsize == 1 ? "int8" : itemsize == 2 ? "int16" : itemsize == 4 ? "int32" : "int64";
    case 'u': return itemsize == 1 ? "uint8" : itemsize == 2 ? "uint16" : itemsize == 4 ? "uint32" : "uint64";
    case 'b': return "bool";
    case 'B': return "bfloat16";
    default: return "?";
    }
}

/* ------------------------------------------------------------ conversion */

static double get_float(const npy_array *a, uint64_t i) {
    const uint8_t *p = (const uint8_t *)a->data + i * a->itemsize;
    if (a->kind == 'B') return ff_bf16_to_f32(rd_u16(p));
    switch (a->itemsize) {
    case 2: return ff_fp16_to_f32(rd_u16(p));
    case 4: {
        uint32_t u = rd_u32(p);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default: {
        uint64_t u = rd_u64(p);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    }
}

/* Integer value; *ok false for uint64 values past INT64_MAX. */
static int64_t get_int(const npy_array *a, uint64_t i, bool *ok) {
    const uint8_t *p = (const uint8_t *)a->data + i * a->itemsize;
    uint64_t u = 0;
    switch (a->itemsize) {
    case 1: u = p[0]; break;
    case 2: u = rd_u16(p); break;
    case 4: u = rd_u32(p); break;
    default: u = rd_u64(p); break;
    }
    if (a->kind == 'i') {
        unsigned bits = a->itemsize * 8;
        if (bits < 64 && (u >> (bits - 1)) & 1) u |= ~UINT64_C(0) << bits;
        return (int64_t)u;
    }
    if (u > INT64_MAX) *ok = false;
    return (int64_t)u;
}

ctosa_error *npy_to_host(const npy_array *a, ctosa_dtype t, const char *what, void **host, uint64_t *size) {
    size_t hs = ctosa_host_elem_size(t);
    const char *want = npy_descr_for(t);
    if (!hs || !want)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: dtype %s has no host encoding", what,
                               ctosa_dtype_short(t));
    uint64_t n = a->count * hs;
    if (n > SIZE_MAX) return ctosa_error_nomem();
    uint8_t *d = malloc(n ? (size_t)n : 1);
    if (!d) return ctosa_error_nomem();
    *host = d;
    *size = n;
    char wkind = want[1];
    uint32_t wsize = (uint32_t)(want[2] - '0');
    /* Same encoding: copy (then range-check INT4/INT48/BOOL in set_input). */
    if (a->kind == wkind && a->itemsize == wsize) {
        if (n) memcpy(d, a->data, (size_t)n);
        return NULL;
    }
    bool src_float = a->kind == 'f' || a->kind == 'B';
    bool dst_float = ctosa_dtype_is_float(t);
    if (src_float && dst_float) {
        for (uint64_t i = 0; i < a->count; i++) {
            float f = (float)get_float(a, i);
            switch (t) {
            case CTOSA_DTYPE_FP32: memcpy(d + 4 * i, &f, 4); break;
            case CTOSA_DTYPE_FP16: wr_u16(d + 2 * i, ff_f32_to_fp16(f)); break;
            case CTOSA_DTYPE_BF16: wr_u16(d + 2 * i, ff_f32_to_bf16(f)); break;
            case CTOSA_DTYPE_FP8E4M3: d[i] = ff_f32_to_fp8e4m3(f); break;
            default: d[i] = ff_f32_to_fp8e5m2(f); break;
            }
        }
        return NULL;
    }
    bool src_int = a->kind == 'i' || a->kind == 'u' || a->kind == 'b';
    if (src_int && !dst_float) {
        int64_t lo, hi;
        switch (t) {
        case CTOSA_DTYPE_BOOL:
            lo = 0;
            hi = 1;
            break;
        case CTOSA_DTYPE_INT4:
            lo = -8;
            hi = 7;
            break;
        case CTOSA_DTYPE_INT8:
            lo = INT8_MIN;
            hi = INT8_MAX;
            break;
        case CTOSA_DTYPE_INT16:
            lo = INT16_MIN;
            hi = INT16_MAX;
            break;
        case CTOSA_DTYPE_INT32:
            lo = INT32_MIN;
            hi = INT32_MAX;
            break;
        case CTOSA_DTYPE_INT48:
            lo = -(INT64_C(1) << 47);
            hi = (INT64_C(1) << 47) - 1;
            break;
        default:
            lo = INT64_MIN;
            hi = INT64_MAX;
            break;
        }
        for (uint64_t i = 0; i < a->count; i++) {
            bool ok = true;
            int64_t v = get_int(a, i, &ok);
            if (!ok || v < lo || v > hi) {
                free(d);
                *host = NULL;
                /* A uint8 boundary tensor of a quantized partition is an
                 * INT8 tensor holding the uint8 bits (TOSA has no uint8):
                 * say how to pass it rather than reinterpreting silently. */
                bool u8_carrier = a->kind == 'u' && a->itemsize == 1 && t == CTOSA_DTYPE_INT8;
                return ctosa_error_new(CTOSA_ERR_FORMAT,
                                       "%s: element %llu (%s %lld) does not fit "
                                       "%s%s",
                                       what, (unsigned long long)i, npy_kind_name(a->kind, a->itemsize),
                                       (long long)v, ctosa_dtype_short(t),
                                       u8_carrier ? " (a uint8 tensor of a quantized partition is carried "
                                                    "as the INT8 bit pattern: pass the array viewed as int8, "
                                                    "numpy x.view(np.int8))"
                                                  : "");
            }
            switch (hs) {
            case 1: d[i] = (uint8_t)v; break;
            case 2: wr_u16(d + 2 * i, (uint16_t)v); break;
            case 4: wr_u32(d + 4 * i, (uint32_t)v); break;
            default: wr_u64(d + 8 * i, (uint64_t)v); break;
            }
        }
        return NULL;
    }
    free(d);
    *host = NULL;
    return ctosa_error_new(CTOSA_ERR_USAGE,
                           "%s: the graph expects %s (numpy '%s'), the file holds "
                           "%s",
                           what, ctosa_dtype_short(t), want, npy_kind_name(a->kind, a->itemsize));
}
