/* bench_clock.h - the small pieces every benchmark program needs: a
 * monotonic clock and a fatal-error exit naming the program. Header-only
 * (static inline), so a program includes it without unused-function
 * warnings. */
#ifndef CTOSA_BENCH_CLOCK_H
#define CTOSA_BENCH_CLOCK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctosa/common.h"

/* Seconds on the monotonic clock. */
static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Prints "prog: what: <error or errno text>" and exits 1. */
static inline void bench_die(const char *prog, const char *what, ctosa_error *e) {
    fprintf(stderr, "%s: %s: %s\n", prog, what, e ? ctosa_error_message(e) : strerror(errno));
    exit(1);
}

#endif
