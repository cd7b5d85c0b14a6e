/* onnx_tensor.c - TensorProto: header parsing, dense decoding of every
 * storage form, standalone .pb tensor files, dtype tables. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ctosa's ONNX reader returns raw_data in place and assumes a little-endian host"
#endif

/* TensorProto field numbers. */
enum {
    TP_DIMS = 1,
    TP_DATA_TYPE = 2,
    TP_SEGMENT = 3,
    TP_FLOAT_DATA = 4,
    TP_INT32_DATA = 5,
    TP_STRING_DATA = 6,
    TP_INT64_DATA = 7,
    TP_NAME = 8,
    TP_RAW_DATA = 9,
    TP_DOUBLE_DATA = 10,
    TP_UINT64_DATA = 11,
    TP_DOC_STRING = 12,
    TP_EXTERNAL_DATA = 13,
    TP_DATA_LOCATION = 14,
    TP_METADATA_PROPS = 16
};

typedef struct dtype_info {
    const char *name, *numpy;
    uint8_t bits;  /* bits per element when stored densely (complex: both parts) */
    uint8_t field; /* typed field that carries it */
} dtype_info;

static const dtype_info DTYPES[CTOSA_ONNX_DTYPE_MAX + 1] = {
    [CTOSA_ONNX_FLOAT] = {"FLOAT", "float32", 32, TP_FLOAT_DATA},
    [CTOSA_ONNX_UINT8] = {"UINT8", "uint8", 8, TP_INT32_DATA},
    [CTOSA_ONNX_INT8] = {"INT8", "int8", 8, TP_INT32_DATA},
    [CTOSA_ONNX_UINT16] = {"UINT16", "uint16", 16, TP_INT32_DATA},
    [CTOSA_ONNX_INT16] = {"INT16", "int16", 16, TP_INT32_DATA},
    [CTOSA_ONNX_INT32] = {"INT32", "int32", 32, TP_INT32_DATA},
    [CTOSA_ONNX_INT64] = {"INT64", "int64", 64, TP_INT64_DATA},
    [CTOSA_ONNX_STRING] = {"STRING", "object", 0, TP_STRING_DATA},
    [CTOSA_ONNX_BOOL] = {"BOOL", "bool", 8, TP_INT32_DATA},
    [CTOSA_ONNX_FLOAT16] = {"FLOAT16", "float16", 16, TP_INT32_DATA},
    [CTOSA_ONNX_DOUBLE] = {"DOUBLE", "float64", 64, TP_DOUBLE_DATA},
    [CTOSA_ONNX_UINT32] = {"UINT32", "uint32", 32, TP_UINT64_DATA},
    [CTOSA_ONNX_UINT64] = {"UINT64", "uint64", 64, TP_UINT64_DATA},
    [CTOSA_ONNX_COMPLEX64] = {"COMPLEX64", "complex64", 64, TP_FLOAT_DATA},
    [CTOSA_ONNX_COMPLEX128] = {"COMPLEX128", "complex128", 128, TP_DOUBLE_DATA},
    [CTOSA_ONNX_BFLOAT16] = {"BFLOAT16", "bfloat16", 16, TP_INT32_DATA},
    [CTOSA_ONNX_FLOAT8E4M3FN] = {"FLOAT8E4M3FN", "float8_e4m3fn", 8, TP_INT32_DATA},
    [CTOSA_ONNX_FLOAT8E4M3FNUZ] = {"FLOAT8E4M3FNUZ", "float8_e4m3fnuz", 8, TP_INT32_DATA},
    [CTOSA_ONNX_FLOAT8E5M2] = {"FLOAT8E5M2", "float8_e5m2", 8, TP_INT32_DATA},
    [CTOSA_ONNX_FLOAT8E5M2FNUZ] = {"FLOAT8E5M2FNUZ", "float8_e5m2fnuz", 8, TP_INT32_DATA},
    [CTOSA_ONNX_UINT4] = {"UINT4", "uint4", 4, TP_INT32_DATA},
    [CTOSA_ONNX_INT4] = {"INT4", "int4", 4, TP_INT32_DATA},
    [CTOSA_ONNX_FLOAT4E2M1] = {"FLOAT4E2M1", "float4_e2m1fn", 4, TP_INT32_DATA},
    [CTOSA_ONNX_FLOAT8E8M0] = {"FLOAT8E8M0", "float8_e8m0fnu", 8, TP_INT32_DATA},
    [CTOSA_ONNX_UINT2] = {"UINT2", "uint2", 2, TP_INT32_DATA},
    [CTOSA_ONNX_INT2] = {"INT2", "int2", 2, TP_INT32_DATA},
};

static const dtype_info *dtype_get(int32_t t) {
    if (t <= 0 || t > CTOSA_ONNX_DTYPE_MAX) return NULL;
    return DTYPES[t].name ? &DTYPES[t] : NULL;
}

const char *ctosa_onnx_dtype_name(int32_t dtype) {
    const dtype_info *d = dtype_get(dtype);
    return d ? d->name : NULL;
}

const char *onnx_dtype_numpy_name(int32_t dtype) {
    const dtype_info *d = dtype_get(dtype);
    return d ? d->numpy : NULL;
}

bool ctosa_onnx_dtype_storage(int32_t dtype, uint64_t count, uint64_t *bytes) {
    const dtype_info *d = dtype_get(dtype);
    if (!d || d->bits == 0) return false;
    uint64_t bits;
    if (!mul_u64(count, d->bits, &bits)) return false;
    *bytes = bits / 8 + (bits % 8 != 0);
    return true;
}

static const char *field_name(uint32_t f) {
    switch (f) {
    case TP_FLOAT_DATA: return "float_data";
    case TP_INT32_DATA: return "int32_data";
    case TP_STRING_DATA: return "string_data";
    case TP_INT64_DATA: return "int64_data";
    case TP_DOUBLE_DATA: return "double_data";
    case TP_UINT64_DATA: return "uint64_data";
    case TP_RAW_DATA: return "raw_data";
    default: return "?";
    }
}

static void dims_text(const ctosa_onnx_tensor *t, char *buf, size_t size) {
    size_t k = 0;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, size - k, "[");
    for (uint32_t i = 0; i < t->rank && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

/* Strict decimal for external_data offset / length. */
static bool parse_u64(const char *s, uint64_t *v) {
    if (!*s) return false;
    uint64_t r = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        if (r > (UINT64_MAX - 9) / 10) return false;
        r = r * 10 + (uint64_t)(*s - '0');
    }
    *v = r;
    return true;
}

/* Best-effort: the value of string field `num` in a message (for error
 * context when parsing stopped before the name was reached). */
static void peek_name(pb_doc *d, const uint8_t *p, uint64_t n, uint32_t num, char *buf, size_t size) {
    pb_doc tmp = *d; /* keep the real error offset */
    pb_cursor c;
    pb_cursor_init(&c, &tmp, p, n);
    pb_field f;
    bool more;
    buf[0] = 0;
    for (;;) {
        ctosa_error *e = pb_next(&c, &f, &more);
        if (e) {
            ctosa_error_free(e);
            return;
        }
        if (!more) return;
        if (f.num == num && f.wire == PB_LEN) {
            size_t k = f.len < size - 1 ? (size_t)f.len : size - 1;
            memcpy(buf, f.data, k);
            buf[k] = 0;
        }
    }
}

static ctosa_error *parse_tensor_fields(onnx_ctx *ctx, const uint8_t *p, uint64_t n, ctosa_onnx_tensor *t) {
    pb_doc *d = &ctx->doc;
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    int64_t dims[ONNX_MAX_RANK];
    uint32_t rank = 0;
    bool has_raw = false, external = false;
    uint32_t typed = 0;
    const uint8_t *typed_at = NULL;
    uint64_t n_ext = 0;

    pb_cursor_init(&c, d, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        switch (f.num) {
        case TP_DIMS: {
            uint64_t k, got, tmp[ONNX_MAX_RANK];
            if ((e = pb_repeated_count(d, &f, PB_VARINT, "dims", &k))) return e;
            if (k > ONNX_MAX_RANK - rank)
                return pb_error_code(d, CTOSA_ERR_LIMIT, f.at, "more than %d dims", ONNX_MAX_RANK);
            pb_repeated_get(&f, PB_VARINT, tmp, k, &got);
            for (uint64_t i = 0; i < got; i++) dims[rank++] = (int64_t)tmp[i];
            break;
        }
        case TP_DATA_TYPE:
            if ((e = pb_expect(d, &f, PB_VARINT, "data_type"))) return e;
            t->dtype = (int32_t)(uint32_t)f.u;
            break;
        case TP_SEGMENT: t->has_segment = true; break;
        case TP_NAME:
            if ((e = onnx_str(ctx, &f, "name", &t->name))) return e;
            break;
        case TP_RAW_DATA:
            if ((e = pb_expect(d, &f, PB_LEN, "raw_data"))) return e;
            has_raw = true;
            t->data = f.data;
            t->nbytes = f.len;
            break;
        case TP_FLOAT_DATA:
        case TP_INT32_DATA:
        case TP_STRING_DATA:
        case TP_INT64_DATA:
        case TP_DOUBLE_DATA:
        case TP_UINT64_DATA: {
            int ew = f.num == TP_FLOAT_DATA      ? PB_I32
                     : (f.num == TP_DOUBLE_DATA) ? PB_I64
                     : f.num == TP_STRING_DATA   ? PB_LEN
                                                 : PB_VARINT;
            if (f.num == TP_STRING_DATA) {
                if ((e = pb_expect(d, &f, PB_LEN, "string_data"))) return e;
            } else if (f.wire != ew && f.wire != PB_LEN) {
                return pb_expect(d, &f, ew, field_name(f.num));
            }
            if (typed && typed != f.num)
                return pb_error(d, f.at, "both %s and %s are set", field_name(typed), field_name(f.num));
            typed = f.num;
            if (!typed_at) typed_at = f.at;
            break;
        }
        case TP_EXTERNAL_DATA: {
            if ((e = pb_expect(d, &f, PB_LEN, "external_data"))) return e;
            const char *key = "", *val = "";
            pb_cursor kc;
            pb_field kf;
            bool kmore;
            pb_cursor_init(&kc, d, f.data, f.len);
            while (!(e = pb_next(&kc, &kf, &kmore)) && kmore) {
                if (kf.num == 1 && (e = onnx_str(ctx, &kf, "key", &key))) return e;
                if (kf.num == 2 && (e = onnx_str(ctx, &kf, "value", &val))) return e;
            }
            if (e) return e;
            if (++n_ext > 64)
                return pb_error_code(d, CTOSA_ERR_LIMIT, f.at, "more than 64 external_data entries");
            if (!strcmp(key, "location")) {
                t->ext.location = val;
            } else if (!strcmp(key, "offset")) {
                if (!parse_u64(val, &t->ext.offset))
                    return pb_error(d, f.at, "external_data offset '%.200s' is not a non-negative integer",
                                    val);
                t->ext.has_offset = true;
            } else if (!strcmp(key, "length")) {
                if (!parse_u64(val, &t->ext.length))
                    return pb_error(d, f.at, "external_data length '%.200s' is not a non-negative integer",
                                    val);
                t->ext.has_length = true;
            } else if (!strcmp(key, "checksum")) {
                t->ext.checksum = val;
            }
            break;
        }
        case TP_DATA_LOCATION:
            if ((e = pb_expect(d, &f, PB_VARINT, "data_location"))) return e;
            if (f.u > 1)
                return pb_error(d, f.at, "data_location %llu is neither DEFAULT (0) nor EXTERNAL (1)",
                                (unsigned long long)f.u);
            external = f.u == 1;
            break;
        default: break; /* doc_string, metadata_props, unknown */
        }
    }
    if (e) return e;

    /* Shape. */
    int64_t *dd = arena_alloc(ctx->a, (rank ? rank : 1) * sizeof *dd);
    if (!dd) return ctosa_error_nomem();
    uint64_t count = 1;
    for (uint32_t i = 0; i < rank; i++) {
        if (dims[i] < 0) return pb_error(d, p, "dims[%u] = %lld is negative", i, (long long)dims[i]);
        if (!mul_u64(count, (uint64_t)dims[i], &count) || count > (UINT64_C(1) << 61))
            return pb_error_code(d, CTOSA_ERR_LIMIT, p, "element count overflows");
        dd[i] = dims[i];
    }
    t->dims = dd;
    t->rank = rank;
    t->count = count;

    /* Where the data is. */
    int forms = (has_raw ? 1 : 0) + (typed ? 1 : 0) + (external ? 1 : 0);
    if (forms > 1)
        return pb_error(d, p, "data is given in more than one form (%s%s%s)", has_raw ? "raw_data " : "",
                        typed ? field_name(typed) : "", external ? " external" : "");
    const dtype_info *di = dtype_get(t->dtype);
    uint64_t need = 0;
    bool sized = di && ctosa_onnx_dtype_storage(t->dtype, count, &need);
    if (has_raw) {
        t->storage = CTOSA_ONNX_DATA_RAW;
        if (t->dtype == CTOSA_ONNX_STRING) return pb_error(d, p, "STRING tensors cannot use raw_data");
        if (sized && t->nbytes != need) {
            char dt[256];
            dims_text(t, dt, sizeof dt);
            return pb_error(d, t->data, "raw_data has %llu bytes, %s %s needs %llu",
                            (unsigned long long)t->nbytes, di->name, dt, (unsigned long long)need);
        }
    } else if (typed) {
        t->storage = CTOSA_ONNX_DATA_TYPED;
        t->typed_field = typed;
        if (di && di->field != typed)
            return pb_error(d, typed_at, "%s cannot carry %s elements (they go in %s)", field_name(typed),
                            di->name, field_name(di->field));
    } else if (external) {
        t->storage = CTOSA_ONNX_DATA_EXTERNAL;
        if (!t->ext.location[0]) return pb_error(d, p, "external data without a location");
        if (t->dtype == CTOSA_ONNX_STRING) return pb_error(d, p, "STRING tensors cannot use external data");
        if (ctx->ext && !ctx->ext->skip) {
            if ((e = onnx_ext_resolve(ctx, p, t))) return e;
            if (sized && t->nbytes != need) {
                char dt[256];
                dims_text(t, dt, sizeof dt);
                return pb_error(d, p, "external data '%.200s' has %llu bytes, %s %s needs %llu",
                                t->ext.location, (unsigned long long)t->nbytes, di->name, dt,
                                (unsigned long long)need);
            }
        } else if (!ctx->ext) {
            return pb_error_code(d, CTOSA_ERR_UNSUPPORTED, p,
                                 "external data '%.200s' but no folder to resolve it in", t->ext.location);
        }
    }
    return NULL;
}

ctosa_error *onnx_parse_tensor(onnx_ctx *ctx, const uint8_t *p, uint64_t n, ctosa_onnx_tensor *t) {
    memset(t, 0, sizeof *t);
    t->name = "";
    t->ext.location = "";
    t->offset = pb_offset(&ctx->doc, p);
    t->msg_ = p;
    t->msg_len_ = n;
    t->file_ = ctx->file;
    t->file_base_ = ctx->doc.base;
    ctosa_error *e = parse_tensor_fields(ctx, p, n, t);
    if (e) {
        char name[128];
        peek_name(&ctx->doc, p, n, TP_NAME, name, sizeof name);
        e = ctosa_error_prefix(e, "tensor '%.200s'", name);
    }
    return e;
}

ctosa_error *onnx_parse_sparse_tensor(onnx_ctx *ctx, const uint8_t *p, uint64_t n,
                                      ctosa_onnx_sparse_tensor *st) {
    pb_doc *d = &ctx->doc;
    memset(st, 0, sizeof *st);
    st->offset = pb_offset(d, p);
    st->values.name = st->indices.name = "";
    st->values.ext.location = st->indices.ext.location = "";
    int64_t dims[ONNX_MAX_RANK];
    uint32_t rank = 0;
    bool has_values = false;
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    pb_cursor_init(&c, d, p, n);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num == 1 || f.num == 2) {
            if ((e = pb_expect(d, &f, PB_LEN, f.num == 1 ? "values" : "indices"))) return e;
            ctosa_onnx_tensor *t = f.num == 1 ? &st->values : &st->indices;
            if ((e = onnx_parse_tensor(ctx, f.data, f.len, t)))
                return ctosa_error_prefix(e, "sparse tensor %s", f.num == 1 ? "values" : "indices");
            if (f.num == 1) has_values = true;
        } else if (f.num == 3) {
            uint64_t k, got, tmp[ONNX_MAX_RANK];
            if ((e = pb_repeated_count(d, &f, PB_VARINT, "dims", &k))) return e;
            if (k > ONNX_MAX_RANK - rank)
                return pb_error_code(d, CTOSA_ERR_LIMIT, f.at, "more than %d dims", ONNX_MAX_RANK);
            pb_repeated_get(&f, PB_VARINT, tmp, k, &got);
            for (uint64_t i = 0; i < got; i++) {
                if ((int64_t)tmp[i] < 0) return pb_error(d, f.at, "negative sparse tensor dim");
                dims[rank++] = (int64_t)tmp[i];
            }
        }
    }
    if (e) return e;
    if (!has_values) return pb_error(d, p, "sparse tensor without values");
    int64_t *dd = arena_memdup(ctx->a, dims, rank * sizeof *dd);
    if (!dd) return ctosa_error_nomem();
    st->dims = dd;
    st->rank = rank;
    return NULL;
}

/* ------------------------------------------------------------ decoding */

/* Counts the values of typed field `num` across the whole message (it may
 * be split into several packed runs or be unpacked). */
static ctosa_error *count_typed(pb_doc *d, const ctosa_onnx_tensor *t, uint32_t num, int ew,
                                uint64_t *total) {
    pb_cursor c;
    pb_field f;
    bool more;
    ctosa_error *e;
    *total = 0;
    pb_cursor_init(&c, d, t->msg_, t->msg_len_);
    while (!(e = pb_next(&c, &f, &more)) && more) {
        if (f.num != num) continue;
        uint64_t k = 1;
        if (ew != PB_LEN && (e = pb_repeated_count(d, &f, ew, field_name(num), &k))) return e;
        if (!add_u64(*total, k, total)) return pb_error(d, f.at, "too many values");
    }
    return e;
}

static ctosa_error *decode_typed(pb_doc *d, const ctosa_onnx_tensor *t, arena *a, onnx_tensor_value *out) {
    const dtype_info *di = dtype_get(t->dtype);
    uint32_t num = t->typed_field;
    int ew = num == TP_FLOAT_DATA    ? PB_I32
             : num == TP_DOUBLE_DATA ? PB_I64
             : num == TP_STRING_DATA ? PB_LEN
                                     : PB_VARINT;
    /* Values the field must hold, and bytes each one becomes. */
    uint64_t units = t->count, width = 0;
    switch (num) {
    case TP_FLOAT_DATA:
        width = 4;
        if (t->dtype == CTOSA_ONNX_COMPLEX64) units *= 2;
        break;
    case TP_DOUBLE_DATA:
        width = 8;
        if (t->dtype == CTOSA_ONNX_COMPLEX128) units *= 2;
        break;
    case TP_INT64_DATA: width = 8; break;
    case TP_UINT64_DATA: width = di->bits / 8; break;
    case TP_STRING_DATA: width = sizeof(ctosa_onnx_bytes); break;
    case TP_INT32_DATA:
        if (di->bits < 8) { /* one int32 value per packed byte */
            width = 1;
            units = (t->count * di->bits + 7) / 8;
        } else {
            width = di->bits / 8;
        }
        break;
    }
    uint64_t have;
    ctosa_error *e = count_typed(d, t, num, ew, &have);
    if (e) return e;
    if (have != units) {
        char dt[256];
        dims_text(t, dt, sizeof dt);
        return pb_error(d, t->msg_, "%s has %llu values, %s %s needs %llu", field_name(num),
                        (unsigned long long)have, di->name, dt, (unsigned long long)units);
    }
    uint64_t nbytes = units * width; /* units <= message bytes, cannot overflow */
    uint8_t *buf = arena_alloc(a, nbytes ? nbytes : 1);
    if (!buf) return ctosa_error_nomem();
    uint64_t k = 0;
    pb_cursor c;
    pb_field f;
    bool more;
    pb_cursor_init(&c, d, t->msg_, t->msg_len_);
    while (!(e = pb_next(&c, &f, &more)) && more && k < units) {
        if (f.num != num) continue;
        if (num == TP_STRING_DATA) {
            ctosa_onnx_bytes s = {f.data, f.len};
            memcpy(buf + k * width, &s, sizeof s);
            k++;
            continue;
        }
        if (f.wire != PB_LEN) { /* one unpacked element */
            uint64_t v = f.u;
            if (ew == PB_I32) v &= 0xffffffffu;
            uint8_t tmp[8];
            wr_u64(tmp, v);
            memcpy(buf + k * width, tmp, width);
            k++;
            continue;
        }
        const uint8_t *q = f.data, *end = f.data + f.len;
        if (ew == PB_I32 || ew == PB_I64) { /* packed fixed: already little-endian */
            uint64_t m = f.len / (ew == PB_I32 ? 4 : 8);
            memcpy(buf + k * width, q, m * width);
            k += m;
            continue;
        }
        while (q < end && k < units) {
            uint64_t v;
            if ((e = pb_varint(d, &q, end, &v))) return e;
            uint8_t tmp[8];
            wr_u64(tmp, v);
            memcpy(buf + k * width, tmp, width);
            k++;
        }
    }
    if (e) return e;
    out->data = buf;
    out->nbytes = nbytes;
    return NULL;
}

ctosa_error *onnx_tensor_value_of(const ctosa_onnx_tensor *t, arena *a, onnx_tensor_value *out) {
    pb_doc d = {t->file_, t->file_base_, 0, 0};
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (uint32_t i = 0; i < t->rank && i < ONNX_MAX_RANK; i++) out->dims[i] = t->dims[i];
    out->count = t->count;
    ctosa_error *e = NULL;
    const dtype_info *di = dtype_get(t->dtype);
    if (!di) {
        e = pb_error_code(&d, CTOSA_ERR_UNSUPPORTED, t->msg_, "unknown data_type %d", t->dtype);
    } else if (t->storage == CTOSA_ONNX_DATA_RAW || t->storage == CTOSA_ONNX_DATA_EXTERNAL) {
        if (t->storage == CTOSA_ONNX_DATA_EXTERNAL && !t->data && t->count)
            e = pb_error_code(&d, CTOSA_ERR_IO, t->msg_, "external data '%.200s' was not loaded",
                              t->ext.location);
        out->data = t->data ? (const void *)t->data : (const void *)"";
        out->nbytes = t->nbytes;
    } else if (t->storage == CTOSA_ONNX_DATA_TYPED) {
        e = decode_typed(&d, t, a, out);
    } else if (t->count == 0) {
        out->data = "";
    } else {
        e = pb_error(&d, t->msg_, "no data for %llu elements", (unsigned long long)t->count);
    }
    if (e) {
        e = ctosa_error_prefix(e, "tensor '%.200s'", t->name);
        e = pb_finish_error(&d, e);
    }
    return e;
}

ctosa_error *onnx_read_tensor_file(const char *path, arena *a, onnx_tensor_value *out) {
    file_map m;
    ctosa_error *e = file_map_open(path, &m);
    if (e) return e;
    onnx_ext_files ext;
    onnx_ext_init(&ext);
    char *dir = NULL;
    onnx_ctx ctx = {.doc = {path, m.data, m.size, 0},
                    .a = a,
                    .file = path,
                    .ext = &ext,
                    .max_depth = 32,
                    .max_nodes = 1,
                    .max_name = 1u << 20};
    ctosa_onnx_tensor t;
    if ((e = onnx_ext_dir_of(path, &dir))) goto done;
    ext.dir = dir;
    ctx.file = arena_strdup(a, path);
    if (!ctx.file) {
        e = ctosa_error_nomem();
        goto done;
    }
    ctx.doc.name = ctx.file;
    if ((e = onnx_parse_tensor(&ctx, m.data, m.size, &t))) {
        e = pb_finish_error(&ctx.doc, e);
        goto done;
    }
    if ((e = onnx_tensor_value_of(&t, a, out))) goto done;
    /* The mappings close below: copy data that is still in place. */
    if (t.storage == CTOSA_ONNX_DATA_RAW || t.storage == CTOSA_ONNX_DATA_EXTERNAL) {
        void *copy = arena_memdup(a, out->data, out->nbytes);
        if (!copy) {
            e = ctosa_error_nomem();
            goto done;
        }
        out->data = copy;
    } else if (t.dtype == CTOSA_ONNX_STRING) {
        ctosa_onnx_bytes *s = (ctosa_onnx_bytes *)out->data;
        for (uint64_t i = 0; i < out->count; i++) {
            uint8_t *c = arena_memdup(a, s[i].p, s[i].n);
            if (!c) {
                e = ctosa_error_nomem();
                goto done;
            }
            s[i].p = c;
        }
    }
done:
    onnx_ext_free(&ext);
    free(dir);
    file_map_close(&m);
    if (e) memset(out, 0, sizeof *out);
    return e;
}
