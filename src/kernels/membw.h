/* membw: the memory-streaming kernels of `egang bench membw`. Each reads
 * every 64-byte line of a buffer once, folding every load into an xor so no
 * load can be dropped, 4 lines per step, with the widest vector loads of
 * its level. All levels return the same value: the xor of the buffer's
 * 64-bit words (as one 64-bit word, folded lane-wise, see membw.c). */
#ifndef EGANG_KERNELS_MEMBW_H
#define EGANG_KERNELS_MEMBW_H

#include <stddef.h>
#include <stdint.h>

/* p: 64-byte aligned; bytes: a multiple of 256. */
typedef uint64_t (*membw_read_fn)(const void *p, size_t bytes);

uint64_t membw_read_generic(const void *p, size_t bytes);
#if defined(__x86_64__)
uint64_t membw_read_avx2(const void *p, size_t bytes);   /* needs AVX2 */
uint64_t membw_read_avx512(const void *p, size_t bytes); /* needs AVX-512F */
#endif

/* The reader of the kernel level in use (kernels_isa(), so EGANG_ISA
 * applies; kernels_init() is called here) and its load width's name
 * ("avx512", "avx2" or "scalar") in *name. */
membw_read_fn membw_reader(const char **name);

#endif
