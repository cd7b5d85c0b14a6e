/* alloc_fault.h - test-only allocation failures.
 *
 * When util_alloc_fault is set, arena_alloc asks it first and returns NULL
 * when it answers true; site is arena_alloc's caller. The allocation-failure
 * sweep (tests/test_alloc_fail.c) sets it, and wraps malloc & co of the
 * library at link time with the same counter, to fail the Nth allocation of
 * a lowering or an interpreter run. NULL (the default) costs one load and
 * branch per arena allocation. */
#ifndef CTOSA_UTIL_ALLOC_FAULT_H
#define CTOSA_UTIL_ALLOC_FAULT_H

#include <stdbool.h>

extern bool (*util_alloc_fault)(const void *site);

#endif
