/* fileio.c - mapped inputs and atomic (temporary + rename) outputs. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

ctosa_error *file_map_open(const char *path, file_map *m) {
    memset(m, 0, sizeof *m);
    m->fd = -1;
    /* O_NONBLOCK: opening a FIFO (say, an external-data location naming
     * one) must not hang; only regular files pass the check below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ctosa_error_new(CTOSA_ERR_IO, "%s: not a regular file", path);
    }
    m->size = (uint64_t)st.st_size;
    m->fd = fd;
    if (m->size == 0) {
        static const uint8_t empty[1];
        m->data = empty;
        return NULL;
    }
    void *p = mmap(NULL, (size_t)m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        m->fd = -1;
        return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot map: %s", path, strerror(e));
    }
    m->data = p;
    m->mapped = true;
    return NULL;
}

void file_map_close(file_map *m) {
    if (m->mapped) munmap((void *)m->data, (size_t)m->size);
    if (m->fd >= 0) close(m->fd);
    memset(m, 0, sizeof *m);
    m->fd = -1;
}

ctosa_error *out_file_open(out_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    size_t n = strlen(path);
    f->path = malloc(n + 1);
    f->tmp_path = malloc(n + 16);
    if (!f->path || !f->tmp_path) {
        free(f->path);
        free(f->tmp_path);
        return ctosa_error_nomem();
    }
    memcpy(f->path, path, n + 1);
    memcpy(f->tmp_path, path, n);
    memcpy(f->tmp_path + n, ".tmp.XXXXXX", 12);
    int fd = mkostemp(f->tmp_path, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        free(f->path);
        free(f->tmp_path);
        f->path = f->tmp_path = NULL;
        return ctosa_error_new(CTOSA_ERR_IO, "%s: cannot create: %s", path, strerror(e));
    }
    /* mkostemp creates 0600; give the file the usual umask-derived mode. */
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um);
    f->fd = fd;
    return NULL;
}

ctosa_error *out_file_write(out_file *f, const void *p, size_t n) {
    const uint8_t *q = p;
    while (n) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        ssize_t w = write(f->fd, q, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return ctosa_error_new(CTOSA_ERR_IO, "%s: write failed: %s", f->path, strerror(errno));
        }
        q += w;
        n -= (size_t)w;
        f->written += (uint64_t)w;
    }
    return NULL;
}

ctosa_error *out_file_pad(out_file *f, size_t n) {
    static const uint8_t zeros[256];
    while (n) {
        size_t c = n > sizeof zeros ? sizeof zeros : n;
        ctosa_error *e = out_file_write(f, zeros, c);
        if (e) return e;
        n -= c;
    }
    return NULL;
}

ctosa_error *out_file_copy_range(out_file *f, int in_fd, uint64_t off, uint64_t n, const char *in_name) {
    loff_t in_off = (loff_t)off;
    bool use_cfr = true;
    while (n) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
        if (use_cfr) {
            ssize_t w = copy_file_range(in_fd, &in_off, f->fd, NULL, chunk, 0);
            if (w > 0) {
                n -= (uint64_t)w;
                f->written += (uint64_t)w;
                continue;
            }
            if (w == 0)
                return ctosa_error_new(CTOSA_ERR_IO, "%s: unexpected end of file at byte %llu",
                                       in_name ? in_name : "input", (unsigned long long)in_off);
            if (errno == EINTR) continue;
            use_cfr = false; /* EXDEV, EINVAL, ENOSYS...: fall back to read/write */
        }
        uint8_t buf[1 << 16];
        size_t c = chunk > sizeof buf ? sizeof buf : chunk;
        ssize_t r = pread(in_fd, buf, c, in_off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return ctosa_error_new(CTOSA_ERR_IO, "%s: read failed at byte %llu: %s",
                                   in_name ? in_name : "input", (unsigned long long)in_off, strerror(errno));
        }
        if (r == 0)
            return ctosa_error_new(CTOSA_ERR_IO, "%s: unexpected end of file at byte %llu",
                                   in_name ? in_name : "input", (unsigned long long)in_off);
        ctosa_error *e = out_file_write(f, buf, (size_t)r);
        if (e) return e;
        in_off += r;
        n -= (uint64_t)r;
    }
    return NULL;
}

ctosa_error *out_file_commit(out_file *f) {
    ctosa_error *e = NULL;
    if (close(f->fd) != 0)
        e = ctosa_error_new(CTOSA_ERR_IO, "%s: close failed: %s", f->path, strerror(errno));
    f->fd = -1;
    if (!e && rename(f->tmp_path, f->path) != 0)
        e = ctosa_error_new(CTOSA_ERR_IO, "%s: cannot rename into place: %s", f->path, strerror(errno));
    if (e) unlink(f->tmp_path);
    free(f->path);
    free(f->tmp_path);
    f->path = f->tmp_path = NULL;
    return e;
}

void out_file_abort(out_file *f) {
    if (f->fd >= 0) close(f->fd);
    if (f->tmp_path) unlink(f->tmp_path);
    free(f->path);
    free(f->tmp_path);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

ctosa_error *read_whole_file(const char *path, uint64_t max_size, char **buf, size_t *size) {
    *buf = NULL;
    *size = 0;
    file_map m;
    ctosa_error *e = file_map_open(path, &m);
    if (e) return e;
    if (max_size && m.size > max_size) {
        file_map_close(&m);
        return ctosa_error_new(CTOSA_ERR_LIMIT, "%s: file is %llu bytes, more than the limit of %llu", path,
                               (unsigned long long)m.size, (unsigned long long)max_size);
    }
    char *p = malloc((size_t)m.size + 1);
    if (!p) {
        file_map_close(&m);
        return ctosa_error_nomem();
    }
    memcpy(p, m.data, (size_t)m.size);
    p[m.size] = 0;
    *buf = p;
    *size = (size_t)m.size;
    file_map_close(&m);
    return NULL;
}

ctosa_error *write_whole_file(const char *path, const void *p, size_t n) {
    out_file f;
    ctosa_error *e = out_file_open(&f, path);
    if (e) return e;
    e = out_file_write(&f, p, n);
    if (e) {
        out_file_abort(&f);
        return e;
    }
    return out_file_commit(&f);
}

int cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
