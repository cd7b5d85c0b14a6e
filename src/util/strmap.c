/* strmap.c - string-keyed open-addressing hash map (names -> objects). */
#include <stdlib.h>
#include <string.h>

#include "util.h"

uint64_t hash_str(const char *s) {
    /* FNV-1a 64 */
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void strmap_init(strmap *m) { memset(m, 0, sizeof *m); }

void strmap_free(strmap *m) {
    free(m->keys);
    free(m->vals);
    strmap_init(m);
}

static bool strmap_grow(strmap *m) {
    uint32_t cap = m->cap ? m->cap * 2 : 16;
    if (cap < m->cap) return false;
    const char **keys = calloc(cap, sizeof *keys);
    void **vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        uint32_t j = (uint32_t)hash_str(m->keys[i]) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

bool strmap_put(strmap *m, const char *key, void *val) {
    if ((m->count + 1) * 4 > m->cap * 3 && !strmap_grow(m)) return false;
    uint32_t j = (uint32_t)hash_str(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            m->vals[j] = val;
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->count++;
    return true;
}

static int64_t strmap_find(const strmap *m, const char *key) {
    if (!m->cap || !key) return -1;
    uint32_t j = (uint32_t)hash_str(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) return j;
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

void *strmap_get(const strmap *m, const char *key) {
    int64_t j = strmap_find(m, key);
    return j < 0 ? NULL : m->vals[j];
}

bool strmap_has(const strmap *m, const char *key) { return strmap_find(m, key) >= 0; }
