/* harness.h - the tiny test framework every tests/test_*.c uses.
 *
 *     static void test_roundtrip(void) { CHECK(x == 1); CHECK_OK(call()); }
 *     int main(void) { RUN(test_roundtrip); return th_finish(); }
 *
 * A failed CHECK prints file:line and the expression and the test goes on.
 * th_skip() exits 77 (ctest reports "skipped") after printing why. */
#ifndef CTOSA_TEST_HARNESS_H
#define CTOSA_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctosa/ctosa.h"

extern int th_checks, th_failures;
extern const char *th_current;

#define CHECK(cond)                                                                                   \
    do {                                                                                              \
        th_checks++;                                                                                  \
        if (!(cond)) {                                                                                \
            th_failures++;                                                                            \
            fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", __FILE__, __LINE__, th_current, #cond); \
        }                                                                                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                          \
    do {                                                                                              \
        th_checks++;                                                                                  \
        if (!(cond)) {                                                                                \
            th_failures++;                                                                            \
            fprintf(stderr, "%s:%d: [%s] CHECK failed: %s: ", __FILE__, __LINE__, th_current, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                             \
            fputc('\n', stderr);                                                                      \
        }                                                                                             \
    } while (0)

/* Checks that an expression returning ctosa_error* succeeded (frees it). */
#define CHECK_OK(expr)                                                                            \
    do {                                                                                          \
        ctosa_error *th_e_ = (expr);                                                              \
        th_checks++;                                                                              \
        if (th_e_) {                                                                              \
            th_failures++;                                                                        \
            fprintf(stderr, "%s:%d: [%s] %s failed: %s\n", __FILE__, __LINE__, th_current, #expr, \
                    ctosa_error_message(th_e_));                                                  \
            ctosa_error_free(th_e_);                                                              \
        }                                                                                         \
    } while (0)

/* Checks that expr failed with code and a message containing needle. */
#define CHECK_ERR(expr, code, needle)                                                                       \
    do {                                                                                                    \
        ctosa_error *th_e_ = (expr);                                                                        \
        th_checks++;                                                                                        \
        if (!th_e_) {                                                                                       \
            th_failures++;                                                                                  \
            fprintf(stderr, "%s:%d: [%s] %s unexpectedly succeeded\n", __FILE__, __LINE__, th_current,      \
                    #expr);                                                                                 \
        } else if (ctosa_error_code(th_e_) != (code) || !strstr(ctosa_error_message(th_e_), (needle))) {    \
            th_failures++;                                                                                  \
            fprintf(stderr, "%s:%d: [%s] %s: expected code %d with '%s', got %d: %s\n", __FILE__, __LINE__, \
                    th_current, #expr, (int)(code), (needle), (int)ctosa_error_code(th_e_),                 \
                    ctosa_error_message(th_e_));                                                            \
        }                                                                                                   \
        ctosa_error_free(th_e_);                                                                            \
    } while (0)

#define RUN(fn)                                                                       \
    do {                                                                              \
        th_current = #fn;                                                             \
        int th_before_ = th_failures;                                                 \
        fn();                                                                         \
        fprintf(stderr, "%s %s\n", th_failures == th_before_ ? "ok  " : "FAIL", #fn); \
    } while (0)

/* Prints "N checks, N failed" and returns the exit status for main. */
int th_finish(void);
/* Prints the reason and exits 77 (skipped). */
void th_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ../shared beside the source tree, or NULL when absent (a user's clone). */
const char *th_shared_dir(void);
/* Path under ../shared; exits 77 with a message when ../shared is absent. */
const char *th_shared_path(const char *rel);
/* A fresh temporary directory (removed at exit unless CTOSA_KEEP_TMP is set). */
const char *th_tmpdir(void);
/* Joins dir and name in a static rotating buffer. */
const char *th_path(const char *dir, const char *name);
/* Runs a shell command; returns its exit status (or -1), output in *out
 * (malloc'd, stdout and stderr together) when out is not NULL. */
int th_run(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The built CLI (build/ctosa). */
const char *th_ctosa(void);
/* Whether a program is on PATH. */
int th_have(const char *prog);
/* Reads a whole file (malloc'd); NULL if unreadable. */
unsigned char *th_read(const char *path, size_t *size);
int th_write(const char *path, const void *p, size_t n);

#endif
