/*
 * util.h - internal helpers shared by every module: arena, growable string
 * buffer, string hash map, file mapping, atomic output files, JSON writing.
 * Not part of the public API.
 */
#ifndef CTOSA_UTIL_H
#define CTOSA_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include "ctosa/common.h"

#define CTOSA_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* -------------------------------------------------------------- errors */
/* Returns a ctosa_error for a failed allocation (static, never NULL). */
ctosa_error *ctosa_error_nomem(void);
ctosa_error *ctosa_error_vnew(ctosa_code code, const char *fmt, va_list ap);

/* Collects several problems into one error, up to a cap (the rest are
 * counted and summarised in a last line). */
typedef struct diag_list {
    char *text;
    size_t len, cap;
    uint32_t count, max;
    ctosa_code code;
} diag_list;
void diag_init(diag_list *d, uint32_t max /* 0 = 100 */);
void diag_add(diag_list *d, ctosa_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Returns NULL if nothing was added; otherwise an error holding every line.
 * Resets d. */
ctosa_error *diag_finish(diag_list *d);
void diag_free(diag_list *d);

/* --------------------------------------------------------------- arena */
/* Bump allocator: many small allocations, freed together. Blocks are
 * 16-byte aligned. Large requests get their own chunk. */
typedef struct arena_chunk arena_chunk;
typedef struct arena {
    arena_chunk *head;
    size_t chunk_size;
    size_t total;   /* bytes handed out */
    size_t limit;   /* 0 = none; else allocations never take total past it */
    size_t refused; /* the size of the last request the limit refused */
} arena;
void arena_init(arena *a, size_t chunk_size /* 0 = 64 KiB */);
void *arena_alloc(arena *a, size_t size);  /* uninitialised */
void *arena_zalloc(arena *a, size_t size); /* zeroed */
void *arena_memdup(arena *a, const void *p, size_t size);
char *arena_strdup(arena *a, const char *s); /* NULL -> NULL */
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_printf(arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(arena *a);

/* Overflow-checked arithmetic. Return false on overflow. */
static inline bool mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool add_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
/* Greatest common divisor of |a| and |b| (0 when both are 0); a and b
 * must not be INT64_MIN. */
static inline int64_t gcd_i64(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ------------------------------------------------------------- strbuf */
typedef struct strbuf {
    char *s;
    size_t len, cap;
    bool failed; /* an allocation failed; contents are truncated */
} strbuf;
void sb_init(strbuf *b);
void sb_free(strbuf *b);
void sb_putc(strbuf *b, char c);
void sb_puts(strbuf *b, const char *s);
void sb_putn(strbuf *b, const char *s, size_t n);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *b, const char *fmt, va_list ap);
/* Appends s as a JSON string literal (quotes, escapes, invalid UTF-8 as \ufffd). */
void sb_json_str(strbuf *b, const char *s);
void sb_json_strn(strbuf *b, const char *s, size_t n);
/* Appends a double as JSON (shortest round-trip form; NaN/Inf as strings). */
void sb_json_double(strbuf *b, double v);
/* Takes ownership of the buffer (NUL-terminated; "" if empty). */
char *sb_take(strbuf *b);

/* ------------------------------------------------------------- strmap */
/* Open-addressing hash map from NUL-terminated string keys (not copied:
 * they must outlive the map) to pointers. */
typedef struct strmap {
    const char **keys;
    void **vals;
    uint32_t cap, count;
} strmap;
void strmap_init(strmap *m);
void strmap_free(strmap *m);
/* Inserts or replaces. Returns false on allocation failure. */
bool strmap_put(strmap *m, const char *key, void *val);
void *strmap_get(const strmap *m, const char *key);
bool strmap_has(const strmap *m, const char *key);
uint64_t hash_str(const char *s);

/* ------------------------------------------------------------- files */
/* A read-only mapping of a whole file (an empty file maps to a non-NULL
 * zero-length buffer). */
typedef struct file_map {
    const uint8_t *data;
    uint64_t size;
    int fd;      /* kept open for copy_file_range users; -1 if none */
    bool mapped; /* munmap needed */
} file_map;
ctosa_error *file_map_open(const char *path, file_map *m);
void file_map_close(file_map *m);

/* An output file written to "<path>.tmp.XXXXXX" and renamed on commit; on
 * abort (or if commit is never called before out_file_abort) the temporary
 * is removed. */
typedef struct out_file {
    int fd;
    char *path;
    char *tmp_path;
    uint64_t written;
} out_file;
ctosa_error *out_file_open(out_file *f, const char *path);
ctosa_error *out_file_write(out_file *f, const void *p, size_t n);
/* Copies n bytes from offset off of in_fd (copy_file_range, then read/write
 * fallback) without holding them in memory. */
ctosa_error *out_file_copy_range(out_file *f, int in_fd, uint64_t off, uint64_t n, const char *in_name);
ctosa_error *out_file_pad(out_file *f, size_t n); /* n zero bytes */
ctosa_error *out_file_commit(out_file *f);        /* fsync-free close + rename */
void out_file_abort(out_file *f);

/* Reads a whole (small) file into a malloc'd NUL-terminated buffer. */
ctosa_error *read_whole_file(const char *path, uint64_t max_size, char **buf, size_t *size);
/* Writes a whole file atomically (temporary + rename). */
ctosa_error *write_whole_file(const char *path, const void *p, size_t n);

/* ------------------------------------------------------------- misc */
/* Little-endian loads/stores that are safe on unaligned pointers. */
static inline uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t rd_u64(const uint8_t *p) {
    return (uint64_t)rd_u32(p) | ((uint64_t)rd_u32(p + 4) << 32);
}
static inline void wr_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void wr_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void wr_u64(uint8_t *p, uint64_t v) {
    wr_u32(p, (uint32_t)v);
    wr_u32(p + 4, (uint32_t)(v >> 32));
}

/* Number of online CPUs (>= 1). */
int cpu_count(void);
/* Monotonic seconds. */
double now_seconds(void);

#endif /* CTOSA_UTIL_H */
