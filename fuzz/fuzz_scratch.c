/* fuzz_scratch.c - the per-process scratch folder of fuzz_common.h. It
 * holds only flat files the targets write (no sub-folders) and is emptied
 * and removed at exit. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"

static char scratch[512];

static void scratch_remove(void) {
    DIR *d = opendir(scratch);
    if (d) {
        struct dirent *de;
        char path[1024];
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", scratch, de->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(scratch);
}

const char *fuzz_scratch_dir(void) {
    static int state; /* 0 = not tried, 1 = ok, -1 = failed */
    if (state == 0) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0]) tmp = "/tmp";
        snprintf(scratch, sizeof scratch, "%s/ctosa-fuzz-XXXXXX", tmp);
        state = mkdtemp(scratch) ? 1 : -1;
        if (state == 1) atexit(scratch_remove);
    }
    return state == 1 ? scratch : NULL;
}

const char *fuzz_write_scratch(const char *name, const void *data, size_t size) {
    static char path[1024];
    const char *dir = fuzz_scratch_dir();
    if (!dir) return NULL;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    bool ok = fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    return ok ? path : NULL;
}

const char *fuzz_sandbox_with_ext(void) {
    static int done;
    if (!done) {
        uint8_t bytes[256];
        for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i;
        if (!fuzz_write_scratch("ext.bin", bytes, sizeof bytes)) return NULL;
        done = 1;
    }
    return fuzz_scratch_dir();
}
