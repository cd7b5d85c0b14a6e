/* fb_build.c - front-to-back flatbuffer builder; see fb_build.h. */
#include "fb_build.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void fbb_init(fbb *b) { memset(b, 0, sizeof *b); }

void fbb_free(fbb *b) {
    free(b->buf);
    free(b->vt);
    memset(b, 0, sizeof *b);
}

/* Makes room for n more bytes (zero-filled). Returns the old length, or
 * SIZE_MAX after a failure. */
static size_t grow(fbb *b, size_t n) {
    if (b->failed) return SIZE_MAX;
    if (n > FB_MAX_SIZE || b->len + n > FB_MAX_SIZE) {
        b->failed = true;
        return SIZE_MAX;
    }
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n) nc *= 2;
        uint8_t *p = realloc(b->buf, nc);
        if (!p) {
            b->failed = b->nomem = true;
            return SIZE_MAX;
        }
        memset(p + b->cap, 0, nc - b->cap); /* padding bytes must be zero: determinism */
        b->buf = p;
        b->cap = nc;
    }
    size_t at = b->len;
    b->len += n;
    return at;
}

size_t fbb_align(fbb *b, size_t align, size_t phase) {
    size_t need = (align - ((b->len + phase) & (align - 1))) & (align - 1);
    if (need) grow(b, need);
    return b->len;
}

void fbb_put(fbb *b, const void *p, size_t n) {
    size_t at = grow(b, n);
    if (at != SIZE_MAX && n) memcpy(b->buf + at, p, n);
}

void fbb_put_u32(fbb *b, uint32_t v) {
    size_t at = grow(b, 4);
    if (at != SIZE_MAX) wr_u32(b->buf + at, v);
}

static void put_scalar(uint8_t *p, uint8_t size, uint64_t v) {
    for (uint8_t i = 0; i < size; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---------------------------------------------------------- vtable dedup */

static uint32_t vt_hash(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Position of an existing vtable equal to v[0..n), or UINT32_MAX. */
static uint32_t vt_find(const fbb *b, const uint8_t *v, size_t n) {
    if (!b->vt_cap) return UINT32_MAX;
    for (uint32_t i = vt_hash(v, n) & (b->vt_cap - 1);; i = (i + 1) & (b->vt_cap - 1)) {
        uint32_t pos = b->vt[i];
        if (pos == UINT32_MAX) return UINT32_MAX;
        if (rd_u16(b->buf + pos) == n && memcmp(b->buf + pos, v, n) == 0) return pos;
    }
}

static void vt_insert_raw(uint32_t *tab, uint32_t cap, const fbb *b, uint32_t pos) {
    size_t n = rd_u16(b->buf + pos);
    uint32_t i = vt_hash(b->buf + pos, n) & (cap - 1);
    while (tab[i] != UINT32_MAX) i = (i + 1) & (cap - 1);
    tab[i] = pos;
}

static void vt_add(fbb *b, uint32_t pos) {
    if ((b->vt_count + 1) * 2 > b->vt_cap) {
        uint32_t nc = b->vt_cap ? b->vt_cap * 2 : 64;
        uint32_t *t = malloc(nc * sizeof *t);
        if (!t) {
            b->failed = b->nomem = true;
            return;
        }
        memset(t, 0xff, nc * sizeof *t);
        for (uint32_t i = 0; i < b->vt_cap; i++)
            if (b->vt[i] != UINT32_MAX) vt_insert_raw(t, nc, b, b->vt[i]);
        free(b->vt);
        b->vt = t;
        b->vt_cap = nc;
    }
    vt_insert_raw(b->vt, b->vt_cap, b, pos);
    b->vt_count++;
}

/* ---------------------------------------------------------------- tables */

#define FBB_MAX_FIELDS 16

uint32_t fbb_table(fbb *b, const fbb_field *f, uint32_t n, uint32_t *field_pos) {
    if (b->failed || n > FBB_MAX_FIELDS) {
        b->failed = true;
        return 0;
    }
    /* Order: by size descending, then slot (stable and deterministic). */
    uint32_t order[FBB_MAX_FIELDS];
    for (uint32_t i = 0; i < n; i++) order[i] = i;
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0; j--) {
            const fbb_field *a = &f[order[j - 1]], *c = &f[order[j]];
            if (a->size > c->size || (a->size == c->size && a->slot < c->slot)) break;
            uint32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    /* Inline layout relative to the table start: soffset, then fields. */
    uint16_t rel[FBB_MAX_FIELDS];
    uint32_t size = 4, nslots = 0;
    bool has8 = false;
    for (uint32_t k = 0; k < n; k++) {
        const fbb_field *fl = &f[order[k]];
        if (fl->size == 8) has8 = true;
        rel[order[k]] = (uint16_t)size;
        size += fl->size;
        if (fl->slot + 1u > nslots) nslots = fl->slot + 1u;
    }
    /* Build the vtable: [vtable bytes][table bytes][slot offsets...]. */
    uint8_t vt[4 + 2 * 64];
    if (nslots > 64) {
        b->failed = true;
        return 0;
    }
    size_t vtlen = 4 + 2 * (size_t)nslots;
    memset(vt, 0, vtlen);
    wr_u16(vt, (uint16_t)vtlen);
    wr_u16(vt + 2, (uint16_t)size);
    for (uint32_t i = 0; i < n; i++) wr_u16(vt + 4 + 2 * f[i].slot, rel[i]);

    uint32_t vpos = vt_find(b, vt, vtlen);
    if (vpos == UINT32_MAX) {
        fbb_align(b, 2, 0);
        vpos = (uint32_t)b->len;
        fbb_put(b, vt, vtlen);
        if (b->failed) return 0;
        vt_add(b, vpos);
    }
    /* Table start is 4-aligned; with 8-byte fields the first field (at +4)
     * must be 8-aligned, so the start sits at 4 mod 8. */
    if (has8) fbb_align(b, 8, 4);
    else fbb_align(b, 4, 0);
    size_t at = grow(b, size);
    if (at == SIZE_MAX) return 0;
    wr_u32(b->buf + at, (uint32_t)(int32_t)((int64_t)at - (int64_t)vpos));
    for (uint32_t i = 0; i < n; i++) {
        field_pos[i] = (uint32_t)(at + rel[i]);
        if (!f[i].ref) put_scalar(b->buf + at + rel[i], f[i].size, f[i].value);
    }
    return (uint32_t)at;
}

uint32_t fbb_string(fbb *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    fbb_align(b, 4, 0);
    uint32_t pos = (uint32_t)b->len;
    if (n > FB_MAX_SIZE) {
        b->failed = true;
        return 0;
    }
    fbb_put_u32(b, (uint32_t)n);
    fbb_put(b, s, n);
    grow(b, 1); /* NUL */
    return pos;
}

uint32_t fbb_vec_i32(fbb *b, const int32_t *v, uint32_t n) {
    fbb_align(b, 4, 0);
    uint32_t pos = (uint32_t)b->len;
    fbb_put_u32(b, n);
    size_t at = grow(b, (size_t)n * 4);
    if (at != SIZE_MAX)
        for (uint32_t i = 0; i < n; i++) wr_u32(b->buf + at + 4 * (size_t)i, (uint32_t)v[i]);
    return pos;
}

uint32_t fbb_vec_bytes(fbb *b, const uint8_t *p, uint32_t n, uint32_t data_align) {
    if (data_align < 4) data_align = 4;
    fbb_align(b, data_align, 4);
    uint32_t pos = (uint32_t)b->len;
    fbb_put_u32(b, n);
    fbb_put(b, p, n);
    return pos;
}

uint32_t fbb_vec_refs(fbb *b, uint32_t n) {
    fbb_align(b, 4, 0);
    uint32_t pos = (uint32_t)b->len;
    fbb_put_u32(b, n);
    grow(b, (size_t)n * 4);
    return pos;
}

void fbb_patch(fbb *b, uint32_t slot, uint64_t target) {
    if (b->failed) return;
    if (target <= slot || target - slot > FB_MAX_SIZE || (size_t)slot + 4 > b->len) {
        b->failed = true; /* a layout bug or an oversized buffer */
        return;
    }
    wr_u32(b->buf + slot, (uint32_t)(target - slot));
}

void fbb_set_u64(fbb *b, uint32_t pos, uint64_t v) {
    if (b->failed || (size_t)pos + 8 > b->len) return;
    wr_u64(b->buf + pos, v);
}
