/* burn: the tenant's work loop, shared by `egang burn` and the
 * co-scheduling benchmark (which runs it in forked processes). */
#ifndef EGANG_BURN_H
#define EGANG_BURN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum burn_mode {
	BURN_CPU,
	BURN_MEM,
	BURN_COUNT
} burn_mode_t;

/* "cpu" or "mem" -> *mode; -1 after a one-line error naming flag. */
int burn_mode_parse(const char *flag, const char *s, burn_mode_t *mode);

/* Works until *stop, adding completed units to *units. */
void burn_loop(burn_mode_t mode, _Atomic uint64_t *units, _Atomic bool *stop);
uint64_t burn_cpu_unit(uint64_t x);
uint64_t burn_mem_unit(const uint64_t *buf, size_t len, size_t *pos);

#endif
