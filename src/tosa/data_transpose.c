/* data_transpose.c - the streamed transposer: constant bytes viewed as
 * [batch, rows, cols] units with the last two axes swapped, produced chunk
 * by chunk (ctosa_transpose_view_read). Behind
 * ctosa_tensor_set_data_transposed and the lowering's permuted weights
 * (OIHW -> OHWI, Gemm transB), so a weight of any size is transposed on
 * its way to the file with at most one tile of it in memory. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ctosa/graph.h"
#include "util/util.h"

static ctosa_error *src_read(const ctosa_data *src, uint64_t off, void *buf, size_t n) {
    ctosa_tensor t;
    memset(&t, 0, sizeof t);
    t.name = "transposed source";
    t.data = *src;
    return ctosa_tensor_read_data(&t, off, buf, n);
}

/* Largest tile read from a file source at once (bounded memory). */
#define TILE_BYTES ((uint64_t)4 << 20)

/* cnt units of U bytes from src (stride bytes apart) to contiguous dst. */
static void gather(uint8_t *dst, const uint8_t *src, uint64_t stride, uint64_t cnt, uint64_t U) {
    if (U == 4) {
        for (uint64_t i = 0; i < cnt; i++) memcpy(dst + 4 * i, src + i * stride, 4);
    } else if (U == 2) {
        for (uint64_t i = 0; i < cnt; i++) memcpy(dst + 2 * i, src + i * stride, 2);
    } else {
        for (uint64_t i = 0; i < cnt; i++) memcpy(dst + U * i, src + i * stride, (size_t)U);
    }
}

/* nrows whole output rows (each R units, consecutive c) from a tile whose
 * rows (r) are `stride` bytes apart and whose columns are U bytes apart:
 * blocks of 8 output rows, so the tile is read along its rows. */
static void transpose_rows(uint8_t *dst, const uint8_t *src, uint64_t stride, uint64_t R, uint64_t nrows,
                           uint64_t U) {
    uint64_t c = 0;
    /* constant-size copies (one load / store each, no library call) */
    if (U == 4)
        for (; c + 8 <= nrows; c += 8)
            for (uint64_t r = 0; r < R; r++) {
                const uint8_t *sp = src + r * stride + c * 4;
                uint8_t *dp = dst + (c * R + r) * 4;
                for (uint64_t j = 0; j < 8; j++) memcpy(dp + j * R * 4, sp + j * 4, 4);
            }
    else if (U == 2)
        for (; c + 8 <= nrows; c += 8)
            for (uint64_t r = 0; r < R; r++) {
                const uint8_t *sp = src + r * stride + c * 2;
                uint8_t *dp = dst + (c * R + r) * 2;
                for (uint64_t j = 0; j < 8; j++) memcpy(dp + j * R * 2, sp + j * 2, 2);
            }
    for (; c < nrows; c++) gather(dst + c * R * U, src + c * U, stride, R, U);
}

/* Output bytes [offset, offset + n): output unit k = (b, c, r) is source
 * unit (b, r, c). A memory source is read in place as one tile; a file
 * source is read in tiles of at most TILE_BYTES bytes (whole [R, C] slabs
 * when they fit, else R runs of w columns), never one unit per read. */
ctosa_error *ctosa_transpose_view_read(const ctosa_transpose_view *v, uint64_t offset, void *buf, size_t n) {
    const uint64_t B = v->batch, R = v->rows, C = v->cols, U = v->unit_bytes, slab = R * C;
    const ctosa_data *src = &v->src;
    uint8_t *out = buf, *tile = NULL;
    ctosa_error *e = NULL;
    uint64_t total = 0;
    if (!U || __builtin_mul_overflow(B, slab, &total) || __builtin_mul_overflow(total, U, &total) ||
        total != src->size)
        return ctosa_error_new(CTOSA_ERR_USAGE,
                               "transposed view: %llu x %llu x %llu units of %llu bytes "
                               "do not match its %llu source bytes",
                               (unsigned long long)B, (unsigned long long)R, (unsigned long long)C,
                               (unsigned long long)U, (unsigned long long)src->size);
    if (offset > total || n > total - offset)
        return ctosa_error_new(CTOSA_ERR_USAGE, "transposed view: read past its end");
    bool mem = src->kind == CTOSA_DATA_MEMORY;
    void *map = NULL;
    size_t map_len = 0;
    while (!e && n) {
        uint64_t k = offset / U, within = offset % U;
        uint64_t b = k / slab, c = (k / R) % C, r = k % R;
        uint64_t need = (within + n + U - 1) / U; /* units touched from k on */
        uint64_t kend = k + need;
        const uint8_t *tp;
        uint64_t b0 = b, nb = 1, c0 = c, w;
        if (mem) {
            tp = src->ptr; /* the whole source is the tile */
            b0 = 0;
            nb = B;
            c0 = 0;
            w = C;
        } else if (R * U > TILE_BYTES) {
            /* one unit (or its part): a contiguous source run */
            uint64_t len = U - within < n ? U - within : n;
            e = src_read(src, ((b * R + r) * C + c) * U + within, out, (size_t)len);
            out += len;
            offset += len;
            n -= (size_t)len;
            continue;
        } else {
            if (!tile && !(tile = malloc((size_t)TILE_BYTES))) return ctosa_error_nomem();
            tp = tile;
            if (slab * U <= TILE_BYTES) {
                /* whole slabs b0 .. b0 + nb - 1: one contiguous range,
                 * mapped for the time of this tile (no copy; unmapping
                 * returns the pages) or read */
                nb = TILE_BYTES / (slab * U);
                uint64_t bend = (kend - 1) / slab + 1;
                if (nb > bend - b0) nb = bend - b0;
                c0 = 0;
                w = C;
                uint64_t at = src->offset + b0 * slab * U, len = nb * slab * U;
                uint64_t pg = 4096, a0 = at / pg * pg;
                void *mp =
                    !src->path && src->fd >= 0 && b0 * slab * U + len <= src->size
                        ? mmap(NULL, (size_t)(len + at - a0), PROT_READ, MAP_PRIVATE, src->fd, (off_t)a0)
                        : MAP_FAILED;
                if (mp != MAP_FAILED) {
                    map = mp;
                    map_len = (size_t)(len + at - a0);
                    tp = (const uint8_t *)mp + (at - a0);
                } else {
                    e = src_read(src, b0 * slab * U, tile, (size_t)len);
                }
            } else {
                /* columns c0 .. c0 + w - 1 of every row of slab b */
                w = TILE_BYTES / (R * U);
                uint64_t klast = kend < (b + 1) * slab ? kend : (b + 1) * slab;
                uint64_t cend = (klast - 1) / R % C + 1;
                if (w > cend - c0) w = cend - c0;
                for (uint64_t rr = 0; !e && rr < R; rr++)
                    e = src_read(src, ((b * R + rr) * C + c0) * U, tile + rr * w * U, (size_t)(w * U));
            }
        }
        /* emit every requested unit the tile holds: a partial unit alone,
         * whole output rows by blocks, row pieces by strided gathers */
        uint64_t tend = w == C ? (b0 + nb) * slab : b * slab + (c0 + w) * R;
        uint64_t rstride = (w == C ? C : w) * U; /* bytes between source rows in the tile */
        while (!e && n && offset / U < tend) {
            k = offset / U;
            within = offset % U;
            uint64_t kb = k / slab, kc = (k / R) % C, kr = k % R;
            const uint8_t *base = tp + (w == C ? ((kb - b0) * R + kr) * C + kc : kr * w + (kc - c0)) * U;
            if (within || n < U) {
                uint64_t len = U - within < n ? U - within : n;
                memcpy(out, base + within, (size_t)len);
                out += len;
                offset += len;
                n -= (size_t)len;
                continue;
            }
            uint64_t units = n / U, cnt;
            if (units > tend - k) units = tend - k;
            if (kr == 0 && units >= R) {
                /* whole output rows kc .. kc + rows - 1 of slab kb */
                uint64_t rows = units / R;
                if (rows > C - kc) rows = C - kc;
                transpose_rows(out, base, rstride, R, rows, U);
                cnt = rows * R;
            } else {
                cnt = R - kr < units ? R - kr : units;
                gather(out, base, rstride, cnt, U);
            }
            out += cnt * U;
            offset += cnt * U;
            n -= (size_t)(cnt * U);
        }
        if (map) {
            munmap(map, map_len);
            map = NULL;
        }
    }
    free(tile);
    return e;
}
