/* alloc: the allocations of library paths that must fail cleanly (forward,
 * engine, prefill attention), with a test hook that makes the N-th of them
 * fail, so tests can walk every failure point (tests/test_alloc.c).
 *
 * Each function behaves as its libc namesake; a NULL (or nonzero from
 * eg_memalign) sets errno = ENOMEM and the caller reports it with
 * err_set/err_sys. */
#ifndef EGANG_ALLOC_H
#define EGANG_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *eg_malloc(size_t n);
void *eg_calloc(size_t n, size_t size);
void *eg_realloc(void *p, size_t n);
/* posix_memalign's contract: 0, or an error number (*p untouched). */
int eg_memalign(void **p, size_t align, size_t n);

/* True when the allocation point about to run is the one to fail; called
 * by the functions above, and by code whose allocation happens elsewhere
 * (a thread's scratch) but must honour the hook. */
bool eg_alloc_fault(void);

/* Test hook: the n-th allocation point from now (1 = the next) fails, and
 * only that one; 0 disarms. EGANG_ALLOC_FAIL=N in the environment arms
 * it at the first allocation point (egang's CLI tests). Any thread. */
void eg_alloc_fail_at(uint64_t n);
/* Allocation points passed since the last eg_alloc_fail_at (or start). */
uint64_t eg_alloc_count(void);

#endif
