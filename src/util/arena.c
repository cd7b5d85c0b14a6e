/* arena.c - bump allocator used for everything owned by a graph or model. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fault.h"
#include "util.h"

struct arena_chunk {
    arena_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

void arena_init(arena *a, size_t chunk_size) {
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : (64u << 10);
    a->total = 0;
    a->limit = 0;
    a->refused = 0;
}

bool (*util_alloc_fault)(const void *site);

void *arena_alloc(arena *a, size_t size) {
    if (__builtin_expect(util_alloc_fault != NULL, 0) && util_alloc_fault(__builtin_return_address(0)))
        return NULL;
    size_t need = (size + 15u) & ~(size_t)15u;
    if (need < size) return NULL;
    /* A caller with a memory budget learns of a request past it before
     * anything is asked of malloc (see lower_core.c). */
    if (a->limit && (need > a->limit || a->total > a->limit - need)) {
        a->refused = need;
        return NULL;
    }
    arena_chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t csize = need > a->chunk_size / 4 ? need : a->chunk_size;
        if (csize > SIZE_MAX - sizeof(arena_chunk)) return NULL;
        arena_chunk *n = malloc(sizeof(arena_chunk) + csize);
        if (!n) return NULL;
        n->used = 0;
        n->size = csize;
        if (csize == need && c) {
            /* Oversized request: keep the current chunk at the head so its
             * free space is not wasted. */
            n->next = c->next;
            c->next = n;
        } else {
            n->next = c;
            a->head = n;
        }
        c = n;
    }
    void *p = c->data + c->used;
    c->used += need;
    a->total += need;
    return p;
}

void *arena_zalloc(arena *a, size_t size) {
    void *p = arena_alloc(a, size);
    if (p) memset(p, 0, size);
    return p;
}

void *arena_memdup(arena *a, const void *p, size_t size) {
    void *q = arena_alloc(a, size ? size : 1);
    if (q && size) memcpy(q, p, size);
    return q;
}

char *arena_strndup(arena *a, const char *s, size_t n) {
    if (!s) return NULL;
    char *q = arena_alloc(a, n + 1);
    if (!q) return NULL;
    memcpy(q, s, n);
    q[n] = 0;
    return q;
}

char *arena_strdup(arena *a, const char *s) {
    if (!s) return NULL;
    return arena_strndup(a, s, strlen(s));
}

char *arena_printf(arena *a, const char *fmt, ...) {
    strbuf b;
    sb_init(&b);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    char *r = b.failed ? NULL : arena_strndup(a, b.s ? b.s : "", b.len);
    sb_free(&b);
    return r;
}

void arena_free(arena *a) {
    arena_chunk *c = a->head;
    while (c) {
        arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->total = 0;
}
