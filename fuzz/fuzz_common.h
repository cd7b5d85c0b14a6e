/* fuzz_common.h - shared by the fuzz targets in this folder.
 *
 * Every target defines its entry point with FUZZ_ENTRY(name). Built for
 * libFuzzer (fuzz/CMakeLists.txt, CTOSA_FUZZ=ON, clang) it is
 * LLVMFuzzerTestOneInput; built with -DCTOSA_FUZZ_REPLAY (the normal test
 * suite, tests/test_fuzz_replay.c) it is ctosa_fuzz_<name>, so that one
 * program can replay the committed corpora of every target with any C
 * compiler.
 *
 * A target returns 0 for every input; an input that breaks an invariant
 * the target checks (e.g. a graph that writes but does not read back)
 * calls fuzz_fail(), which aborts so that libFuzzer records it. */
#ifndef CTOSA_FUZZ_COMMON_H
#define CTOSA_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctosa/common.h"

#ifdef CTOSA_FUZZ_REPLAY
#define FUZZ_ENTRY(name) int ctosa_fuzz_##name(const uint8_t *data, size_t size)
#else
#define FUZZ_ENTRY(name)                                          \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#endif

static inline void fuzz_fail(const char *what, const ctosa_error *e) {
    fprintf(stderr, "fuzz invariant broken: %s%s%s\n", what, e ? ": " : "", e ? ctosa_error_message(e) : "");
    abort();
}

/* Every ctosa error must carry a message; frees it. */
static inline void fuzz_drop(ctosa_error *e) {
    if (!e) return;
    const char *m = ctosa_error_message(e);
    if (!m || !m[0]) fuzz_fail("error without a message", NULL);
    ctosa_error_free(e);
}

/* A private scratch folder for targets that need files (created once per
 * process, under $TMPDIR or /tmp). Returns NULL if it cannot be made. */
const char *fuzz_scratch_dir(void);
/* Writes size bytes to <scratch>/name (replacing it); returns the path in a
 * static buffer, or NULL on failure. */
const char *fuzz_write_scratch(const char *name, const void *data, size_t size);
/* Writes the fixed external-data file <scratch>/ext.bin (256 bytes 0..255)
 * once; returns the scratch folder or NULL. */
const char *fuzz_sandbox_with_ext(void);

#endif
