/* alloc: allocations with a failure hook (alloc.h). */
#include "base/alloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

/* fail_at: the count at which the allocation fails (0: never); count: the
 * points passed. Relaxed: each is one independent counter; a test arms the
 * hook and then allocates on the same thread, or across a pthread_create
 * or a gang token, which order the store before the workers' loads. */
static _Atomic uint64_t fail_at, count;
static _Atomic int env_read; /* 0, 1 reading, 2 done */

static void read_env(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong_explicit(&env_read, &expect, 1,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return;
	const char *e = getenv("EGANG_ALLOC_FAIL");
	if (e && *e)
		atomic_store_explicit(&fail_at, strtoull(e, NULL, 10), memory_order_relaxed);
	atomic_store_explicit(&env_read, 2, memory_order_relaxed);
}

bool eg_alloc_fault(void)
{
	if (atomic_load_explicit(&env_read, memory_order_relaxed) != 2)
		read_env();
	uint64_t at = atomic_load_explicit(&fail_at, memory_order_relaxed);
	uint64_t n = atomic_fetch_add_explicit(&count, 1, memory_order_relaxed) + 1;
	if (at && n == at) {
		errno = ENOMEM;
		return true;
	}
	return false;
}

void eg_alloc_fail_at(uint64_t n)
{
	atomic_store_explicit(&env_read, 2, memory_order_relaxed);
	atomic_store_explicit(&count, 0, memory_order_relaxed);
	atomic_store_explicit(&fail_at, n, memory_order_relaxed);
}

uint64_t eg_alloc_count(void)
{
	return atomic_load_explicit(&count, memory_order_relaxed);
}

void *eg_malloc(size_t n)
{
	return eg_alloc_fault() ? NULL : malloc(n);
}

void *eg_calloc(size_t n, size_t size)
{
	return eg_alloc_fault() ? NULL : calloc(n, size);
}

void *eg_realloc(void *p, size_t n)
{
	return eg_alloc_fault() ? NULL : realloc(p, n);
}

int eg_memalign(void **p, size_t align, size_t n)
{
	return eg_alloc_fault() ? ENOMEM : posix_memalign(p, align, n);
}
