/* tensor_file.c - the public tensor-file API (ctosa/tensor_file.h): a thin
 * layer over npy.c (.npy parsing, writing, host conversion) and
 * tensor_load.c (.pb via the ONNX reader), so the CLI and library users
 * get the same reader and the same messages as the tests. */
#include <stdlib.h>
#include <string.h>

#include "ctosa/tensor_file.h"
#include "tensorfile/tensorfile.h"

/* The TOSA dtype whose host encoding an array already is. */
static ctosa_dtype exact_dtype(char kind, uint32_t itemsize) {
    switch (kind) {
    case 'f':
        return itemsize == 4 ? CTOSA_DTYPE_FP32 : itemsize == 2 ? CTOSA_DTYPE_FP16 : CTOSA_DTYPE_UNKNOWN;
    case 'B': return CTOSA_DTYPE_BF16;
    case 'b': return CTOSA_DTYPE_BOOL;
    case 'i':
        switch (itemsize) {
        case 1: return CTOSA_DTYPE_INT8;
        case 2: return CTOSA_DTYPE_INT16;
        case 4: return CTOSA_DTYPE_INT32;
        default: return CTOSA_DTYPE_INT64;
        }
    default: return CTOSA_DTYPE_UNKNOWN;
    }
}

/* Moves a (data ownership included) into the public value. */
static void from_npy(npy_array *a, ctosa_tensor_file *out) {
    memset(out, 0, sizeof *out);
    out->dtype = exact_dtype(a->kind, a->itemsize);
    out->kind = a->kind;
    out->itemsize = a->itemsize;
    out->type_name = npy_kind_name(a->kind, a->itemsize);
    char k = a->kind == 'B' ? 'u' : a->kind;
    snprintf(out->descr, sizeof out->descr, "%c%c%u", a->itemsize == 1 ? '|' : '<', k, (unsigned)a->itemsize);
    out->rank = a->rank;
    for (uint32_t i = 0; i < a->rank && i < CTOSA_TENSOR_FILE_MAX_RANK; i++) out->shape[i] = a->shape[i];
    out->count = a->count;
    out->data = a->data;
    out->size = a->count * a->itemsize;
    a->data = NULL;
}

static void to_npy(const ctosa_tensor_file *t, npy_array *a) {
    memset(a, 0, sizeof *a);
    a->kind = t->kind;
    a->itemsize = t->itemsize;
    a->rank = t->rank;
    for (uint32_t i = 0; i < t->rank && i < NPY_MAX_RANK; i++) a->shape[i] = t->shape[i];
    a->count = t->count;
    a->data = t->data;
}

_Static_assert(CTOSA_TENSOR_FILE_MAX_RANK == NPY_MAX_RANK, "rank limits agree");

ctosa_error *ctosa_tensor_file_read(const char *path, ctosa_tensor_file *out) {
    memset(out, 0, sizeof *out);
    if (!path) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_tensor_file_read: no path");
    npy_array a;
    ctosa_error *e = npy_read_tensor_file(path, &a);
    if (e) return e;
    from_npy(&a, out);
    return NULL;
}

ctosa_error *ctosa_tensor_file_parse_npy(const void *buf, uint64_t size, const char *name,
                                         ctosa_tensor_file *out) {
    memset(out, 0, sizeof *out);
    if (!buf && size) return ctosa_error_new(CTOSA_ERR_USAGE, "ctosa_tensor_file_parse_npy: no buffer");
    npy_array a;
    ctosa_error *e = npy_parse(buf, size, name ? name : "<memory>", &a);
    if (e) {
        npy_free(&a);
        return e;
    }
    from_npy(&a, out);
    return NULL;
}

void ctosa_tensor_file_free(ctosa_tensor_file *t) {
    if (!t) return;
    free(t->data);
    t->data = NULL;
}

ctosa_error *ctosa_tensor_file_to_host(const ctosa_tensor_file *t, ctosa_dtype dtype, const char *what,
                                       void **host, uint64_t *size) {
    *host = NULL;
    *size = 0;
    if (!t || (!t->data && t->count) || !strchr("fiubB", t->kind) || !t->kind || !t->itemsize)
        return ctosa_error_new(CTOSA_ERR_USAGE, "%s: not a tensor read by ctosa_tensor_file_read",
                               what ? what : "tensor");
    npy_array a;
    to_npy(t, &a);
    return npy_to_host(&a, dtype, what ? what : "tensor", host, size);
}

const char *ctosa_npy_descr(ctosa_dtype dtype) { return npy_descr_for(dtype); }

ctosa_error *ctosa_tensor_file_write_npy(const char *path, const ctosa_interp_tensor *t) {
    const char *descr = npy_descr_for(t->dtype);
    if (!descr)
        return ctosa_error_new(CTOSA_ERR_UNSUPPORTED, "%s: dtype %s cannot be written as .npy", path,
                               ctosa_dtype_short(t->dtype) ? ctosa_dtype_short(t->dtype) : "?");
    size_t es = ctosa_host_elem_size(t->dtype);
    if (t->rank > CTOSA_TENSOR_FILE_MAX_RANK || (t->rank && !t->shape) || (t->size && !t->data) ||
        t->size != t->count * es)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "%s: tensor '%s' has rank %u and %llu bytes for %llu "
                               "%s elements",
                               path, t->name ? t->name : "", t->rank, (unsigned long long)t->size,
                               (unsigned long long)t->count, ctosa_dtype_short(t->dtype));
    return npy_write_file(path, descr, t->rank, t->shape, t->data, t->size);
}
