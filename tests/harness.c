/* harness.c - see harness.h. */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int th_checks, th_failures;
const char *th_current = "";
static char tmpdir[256];

static void cleanup_tmp(void) {
    if (tmpdir[0] && !getenv("CTOSA_KEEP_TMP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    }
}

int th_finish(void) {
    printf("%d checks, %d failed\n", th_checks, th_failures);
    return th_failures ? 1 : 0;
}

void th_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("SKIPPED: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    exit(77);
}

const char *th_shared_dir(void) {
    static char buf[1024];
    static int done;
    if (!done) {
        done = 1;
        const char *env = getenv("CTOSA_SHARED_DIR");
        snprintf(buf, sizeof buf, "%s", env ? env : CTOSA_SOURCE_DIR "/../shared");
        struct stat st;
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) buf[0] = 0;
    }
    return buf[0] ? buf : NULL;
}

const char *th_shared_path(const char *rel) {
    const char *d = th_shared_dir();
    if (!d) th_skip("../shared is not beside the source tree (needed for %s)", rel);
    return th_path(d, rel);
}

const char *th_tmpdir(void) {
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "%s/ctosa-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(cleanup_tmp);
    }
    return tmpdir;
}

const char *th_path(const char *dir, const char *name) {
    static char bufs[8][1024];
    static int k;
    char *b = bufs[k++ & 7];
    snprintf(b, 1024, "%s/%s", dir, name);
    return b;
}

int th_run(char **out, const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8300];
    snprintf(full, sizeof full, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += r;
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
    }
    if (buf) buf[len] = 0;
    int st = pclose(p);
    if (out) *out = buf;
    else free(buf);
    if (st == -1) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

const char *th_ctosa(void) {
    const char *env = getenv("CTOSA_BIN");
    return env ? env : CTOSA_BINARY_DIR "/ctosa";
}

int th_have(const char *prog) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

unsigned char *th_read(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (size) *size = n > 0 ? (size_t)n : 0;
    return b;
}

int th_write(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}
