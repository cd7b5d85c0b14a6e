/* external_data.c - tensors stored outside the model file.
 *
 * A location is relative to the model's folder. It must not be absolute,
 * must not contain a ".." component, and its real path (symlinks resolved)
 * must still be inside the real path of that folder: a model must not be
 * able to make us read arbitrary files. Each file is mapped once and every
 * tensor in it points into the mapping (zero copy). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_internal.h"

void onnx_ext_init(onnx_ext_files *x) {
    memset(x, 0, sizeof *x);
    strmap_init(&x->by_path);
}

void onnx_ext_free(onnx_ext_files *x) {
    for (uint32_t i = 0; i < x->n_maps; i++) {
        file_map_close(x->maps[i]);
        free(x->maps[i]);
    }
    free(x->maps);
    strmap_free(&x->by_path);
    memset(x, 0, sizeof *x);
}

ctosa_error *onnx_ext_dir_of(const char *path, char **out) {
    *out = NULL;
    size_t n = strlen(path);
    char *dir = malloc(n + 2);
    if (!dir) return ctosa_error_nomem();
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == dir) {
        dir[1] = 0;
    } else {
        *slash = 0;
    }
    char *real = realpath(dir, NULL);
    int err = errno;
    free(dir);
    if (!real) return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot resolve its folder: %s", path, strerror(err));
    *out = real;
    return NULL;
}

static bool has_dotdot(const char *s) {
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') return true;
        if (!e) break;
        s = e + 1;
    }
    return false;
}

ctosa_error *onnx_ext_resolve(onnx_ctx *ctx, const uint8_t *at, ctosa_onnx_tensor *t) {
    onnx_ext_files *x = ctx->ext;
    pb_doc *d = &ctx->doc;
    const char *loc = t->ext.location;
    if (!x->dir)
        return pb_error_code(d, CTOSA_ERR_UNSUPPORTED, at,
                             "external data '%.200s' but no folder to resolve it in", loc);
    if (loc[0] == '/')
        return pb_error(d, at, "external data location '%.200s' is an absolute path (refused)", loc);
    if (has_dotdot(loc))
        return pb_error(d, at, "external data location '%.200s' contains '..' (refused)", loc);

    size_t dn = strlen(x->dir), ln = strlen(loc);
    char *joined = malloc(dn + ln + 2);
    if (!joined) return ctosa_error_nomem();
    memcpy(joined, x->dir, dn);
    joined[dn] = '/';
    memcpy(joined + dn + 1, loc, ln + 1);
    char *real = realpath(joined, NULL);
    int err = errno;
    free(joined);
    if (!real)
        return pb_error_code(d, CTOSA_ERR_IO, at, "external data '%.200s': cannot open: %s", loc,
                             strerror(err));
    /* Inside the folder: "<dir>/..." (or anything below "/" when dir is "/"). */
    bool inside = (dn == 1 && x->dir[0] == '/') || (strncmp(real, x->dir, dn) == 0 && real[dn] == '/');
    if (!inside) {
        ctosa_error *e = pb_error(d, at,
                                  "external data location '%.200s' resolves to '%.200s', outside the model's "
                                  "folder '%.200s' (refused)",
                                  loc, real, x->dir);
        free(real);
        return e;
    }
    const char *key = arena_strdup(ctx->a, real);
    free(real);
    if (!key) return ctosa_error_nomem();
    file_map *m = strmap_get(&x->by_path, key);
    if (!m) {
        if (x->n_maps == x->cap_maps) {
            uint32_t cap = x->cap_maps ? x->cap_maps * 2 : 8;
            file_map **nm = realloc(x->maps, cap * sizeof *nm);
            if (!nm) return ctosa_error_nomem();
            x->maps = nm;
            x->cap_maps = cap;
        }
        m = malloc(sizeof *m);
        if (!m) return ctosa_error_nomem();
        ctosa_error *e = file_map_open(key, m);
        if (e) {
            free(m);
            ctosa_error *e2 = pb_error_code(d, ctosa_error_code(e), at, "external data '%.200s': %s", loc,
                                            ctosa_error_message(e));
            ctosa_error_free(e);
            return e2;
        }
        if (!strmap_put(&x->by_path, key, m)) {
            file_map_close(m);
            free(m);
            return ctosa_error_nomem();
        }
        x->maps[x->n_maps++] = m;
    }
    uint64_t off = t->ext.has_offset ? t->ext.offset : 0;
    if (off > m->size)
        return pb_error(d, at, "external data '%.200s': offset %llu is past the end of the file (%llu bytes)",
                        loc, (unsigned long long)off, (unsigned long long)m->size);
    uint64_t len = t->ext.has_length ? t->ext.length : m->size - off, end;
    if (!add_u64(off, len, &end) || end > m->size)
        return pb_error(d, at,
                        "external data '%.200s': range %llu+%llu runs past the end of the file (%llu bytes)",
                        loc, (unsigned long long)off, (unsigned long long)len, (unsigned long long)m->size);
    t->ext.path = key;
    t->ext.length = len;
    t->data = m->data + off;
    t->nbytes = len;
    return NULL;
}
