/* membw: this machine's read bandwidth and the matvec kernels against it
 * (`egang bench membw`, `egang bench matvec`).
 *
 * membw method. k threads are pinned one per core (the cpus order); each
 * streams its own buffer of `bytes`, far larger than the last-level cache,
 * with the membw kernel of the level in use (kernels/membw.h). A buffer is
 * anonymous memory with MADV_HUGEPAGE, first touched by its own thread, as
 * the weights are after model_load: the figure is the best a decoder
 * reading its weights this way can see. Each repetition starts all k
 * threads at a barrier and takes, as its time, from the earliest start to
 * the latest end, so GB/s = k * bytes read / that time (1 GB = 1e9 bytes).
 * One warm-up pass per thread is not counted.
 *
 * matvec method. For a weight type: a matrix of rows of n elements is
 * multiplied by one prepared activation vector in chunks of about 32 KiB of
 * weights, on the calling (pinned) thread, (a) from a 1 MiB matrix that
 * stays in L2 (the kernel's compute rate, at every ISA level this CPU has),
 * (b) from an mb MiB matrix in huge pages and (c) the same in 4 KiB pages
 * (MADV_NOHUGEPAGE), at the level in use, and (d) for Q8_0 / Q4_0 where the
 * level has a packed kernel, from the huge-page matrix's pack16 copy (what
 * decode reads) in chunks of 256 KiB (forward.c's decode chunk): GB/s of
 * weights. Time is the thread's CPU time, so a shared machine's
 * descheduling does not count (its contention for memory still does).
 * Matrices hold random quants with a fixed scale (random halves for float
 * types), made without the quantizer so a large one is quick to fill. */
#ifndef EGANG_BENCH_MEMBW_H
#define EGANG_BENCH_MEMBW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/stats.h"
#include "kernels/kernels.h"
#include "kernels/membw.h"

/* k threads on cpus[0..k), `bytes` each (a multiple of 2 MiB), reps timed
 * repetitions of at least 1 GiB per thread; *s: GB/s over them. *sink
 * accumulates the data read (so no read can be dropped). -1 + err_get()
 * when a thread cannot pin or allocate. */
int membw_run(const int *cpus, int k, size_t bytes, int reps, membw_read_fn rd,
	      stats_summary_t *s, uint64_t *sink);

typedef struct matvec_figure {
	double best, median; /* GB/s of weights */
} matvec_figure_t;

typedef struct matvec_result {
	const char *l2_name[4];   /* the ISA levels measured in L2 */
	matvec_figure_t l2[4];
	int n_l2;
	const char *isa;          /* the level in use */
	matvec_figure_t huge, small_pages, packed;
	bool has_packed;          /* the level in use reads q8_0/q4_0 packed */
} matvec_result_t;

/* Measures type t (rows of n elements, n a multiple of 32; mb MiB for the
 * large matrix) with reps repetitions on the calling thread, which the
 * caller pins. progress(msg), if set, names each phase. -1 + err_get()
 * when memory runs out. */
int matvec_run(dtype_t t, int64_t n, int64_t mb, int reps, rng_t *r,
	       void (*progress)(const char *msg), matvec_result_t *res);

#endif
