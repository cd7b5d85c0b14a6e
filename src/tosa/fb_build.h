/* fb_build.h - a front-to-back flatbuffer builder (internal to the writer).
 *
 * The usual flatbuffers builder grows a buffer backwards so that every
 * uoffset points forward. This one appends at the end instead and lets the
 * caller place a parent first and patch its uoffset slots once each child has
 * been appended after it (uoffsets are unsigned, so the child must always
 * come later). Positions are absolute byte offsets from the start of the
 * buffer, which is also the start of the output file, so alignment is simply
 * alignment of the position.
 *
 * Vtables are deduplicated (an identical vtable already in the buffer is
 * reused through the table's signed soffset), which keeps 2000 identical ADD
 * operators at 20 bytes each.
 *
 * Errors (out of memory, buffer past 2^31-1 bytes) set `failed` and make
 * every later call a no-op; check it once at the end. */
#ifndef CTOSA_FB_BUILD_H
#define CTOSA_FB_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest flatbuffer we produce: uoffsets and the verifier limit are 31-bit. */
#define FB_MAX_SIZE 0x7fffffffu

typedef struct fbb {
    uint8_t *buf;
    size_t len, cap;
    bool failed, nomem;
    /* vtable dedup: open-addressing set of positions of emitted vtables */
    uint32_t *vt;
    uint32_t vt_cap, vt_count;
} fbb;

/* One field of a table. Refs are 4-byte uoffset slots left zero until
 * fbb_patch() fills them. */
typedef struct fbb_field {
    uint16_t slot;  /* vtable slot id (schema field order) */
    uint8_t size;   /* 1, 2, 4 or 8 bytes */
    bool ref;       /* uoffset to a child appended later (size must be 4) */
    uint64_t value; /* scalar value, stored little-endian in `size` bytes */
} fbb_field;

void fbb_init(fbb *b);
void fbb_free(fbb *b);

/* Appends zero bytes until (len + phase) is a multiple of align (a power of
 * two). Returns the new length. */
size_t fbb_align(fbb *b, size_t align, size_t phase);
void fbb_put(fbb *b, const void *p, size_t n);
void fbb_put_u32(fbb *b, uint32_t v);

/* Appends a table (and its vtable unless an identical one exists). Fields
 * may be given in any order; they are laid out largest first so that no
 * padding is needed inside the table. field_pos[i] receives the absolute
 * position of f[i] (for fbb_patch on refs). Returns the table position. */
uint32_t fbb_table(fbb *b, const fbb_field *f, uint32_t n, uint32_t *field_pos);
/* Appends a string (length, bytes, NUL); s may be NULL for "". */
uint32_t fbb_string(fbb *b, const char *s);
/* Appends a vector of n int32. */
uint32_t fbb_vec_i32(fbb *b, const int32_t *v, uint32_t n);
/* Appends a vector of n bytes whose first byte is aligned to data_align. */
uint32_t fbb_vec_bytes(fbb *b, const uint8_t *p, uint32_t n, uint32_t data_align);
/* Appends a vector of n uoffset slots (to patch at pos + 4 + 4*i). */
uint32_t fbb_vec_refs(fbb *b, uint32_t n);
/* Stores target - slot into the uoffset at slot (target > slot; target may
 * lie beyond the buffer, e.g. in the data area that follows it). */
void fbb_patch(fbb *b, uint32_t slot, uint64_t target);
/* Overwrites a little-endian u64 at pos (an 8-byte scalar field). */
void fbb_set_u64(fbb *b, uint32_t pos, uint64_t v);

#endif
