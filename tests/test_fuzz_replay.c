/* test_fuzz_replay.c - replays every committed fuzz input through the fuzz
 * targets' entry functions (fuzz/fuzz_*.c compiled with
 * -DCTOSA_FUZZ_REPLAY, see the end of tests/CMakeLists.txt), so that every
 * build - any compiler, no libFuzzer - runs the seed corpora
 * (fuzz/corpus/<target>/) and the crash regressions
 * (fuzz/regressions/<target>/). A target aborts on a broken invariant and
 * the sanitizer builds catch memory errors; here each input must simply
 * return 0. Targets with an environment variable CTOSA_FUZZ_ONLY=<name>
 * can be replayed alone. */
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>

#include "harness.h"

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);
#define FUZZ_TARGETS(X) \
    X(onnx) X(tosa_reader) X(tosa_exec) X(spec) X(npy) X(tensor_pb) X(roundtrip) X(lower) X(json) X(report)
#define DECL(n) int ctosa_fuzz_##n(const uint8_t *data, size_t size);
FUZZ_TARGETS(DECL)
#undef DECL

static const struct {
    const char *name;
    fuzz_fn fn;
} targets[] = {
#define ROW(n) {#n, ctosa_fuzz_##n},
    FUZZ_TARGETS(ROW)
#undef ROW
};

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Replays every regular file of dir (sorted, for stable logs); returns how
 * many were replayed. A missing folder counts 0. */
static unsigned replay_dir(const char *target, fuzz_fn fn, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names) abort();
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    unsigned count = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            size_t size = 0;
            unsigned char *buf = th_read(path, &size);
            CHECK_MSG(buf != NULL, "cannot read %s", path);
            if (buf) {
                /* An exact-size copy so that sanitizers see overreads. */
                uint8_t *exact = malloc(size ? size : 1);
                if (!exact) abort();
                memcpy(exact, buf, size);
                int rc = fn(exact, size);
                CHECK_MSG(rc == 0, "%s: %s returned %d", path, target, rc);
                free(exact);
                free(buf);
                count++;
            }
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(void) {
    const char *only = getenv("CTOSA_FUZZ_ONLY");
    unsigned total = 0;
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        if (only && *only && strcmp(only, targets[i].name)) continue;
        th_current = targets[i].name;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", CTOSA_SOURCE_DIR, targets[i].name);
        unsigned seeds = replay_dir(targets[i].name, targets[i].fn, dir);
        snprintf(dir, sizeof dir, "%s/fuzz/regressions/%s", CTOSA_SOURCE_DIR, targets[i].name);
        unsigned regs = replay_dir(targets[i].name, targets[i].fn, dir);
        /* Every target has a committed seed corpus; an empty one means the
         * corpus went missing, not that there is nothing to test. */
        CHECK_MSG(seeds >= 10, "fuzz/corpus/%s holds %u inputs", targets[i].name, seeds);
        fprintf(stderr, "%-12s %4u corpus inputs, %3u regressions replayed\n", targets[i].name, seeds, regs);
        total += seeds + regs;
    }
    fprintf(stderr, "%u inputs replayed\n", total);
    return th_finish();
}
