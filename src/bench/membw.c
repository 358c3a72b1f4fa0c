/* membw: read bandwidth and the matvec kernels against it (membw.h). */
#include "bench/membw.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ---- read bandwidth ---- */

/* bytes of anonymous memory, 2 MiB aligned so every page can be a huge
 * one, with MADV_HUGEPAGE (huge) or MADV_NOHUGEPAGE: a hint; NULL on
 * failure. munmap(*map, *len) frees it. */
static uint8_t *alloc_aligned(size_t bytes, bool huge, void **map, size_t *len)
{
	const size_t h = 2u << 20;
	*len = bytes + h;
	*map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*map == MAP_FAILED)
		return NULL;
	uint8_t *p = (uint8_t *)(((uintptr_t)*map + h - 1) & ~(uintptr_t)(h - 1));
	(void)madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return p;
}

/* Each repetition streams a thread's buffer this many times over at least
 * 1 GiB: one pass of the default 256 MiB lasts ~9 ms on two cores here, and
 * a host hiccup of a few ms in that window read as half the bandwidth
 * (two-core medians of 30 to 61 GB/s minutes apart while decode streamed
 * a steady 53). */
#define MB_REP_BYTES (1ull << 30)

typedef struct mb_shared {
	pthread_barrier_t start, end;
	int reps, passes;
	size_t bytes;
	membw_read_fn rd;
	_Atomic int failed; /* a thread could not pin or allocate */
} mb_shared_t;

typedef struct mb_thread {
	mb_shared_t *s;
	int cpu;
	uint64_t *t0, *t1; /* per repetition (reps + 1: warm-up first) */
	uint64_t sink;
	pthread_t th;
} mb_thread_t;

static void *mb_main(void *arg)
{
	mb_thread_t *t = arg;
	mb_shared_t *s = t->s;
	void *map = MAP_FAILED;
	uint8_t *buf = NULL;
	size_t len = 0;
	/* seq_cst stores of failed, read after the start barrier (which
	 * orders them): every thread then skips the timed passes */
	if (affinity_pin_self(t->cpu) < 0) {
		atomic_store(&s->failed, 1);
	} else if (!(buf = alloc_aligned(s->bytes, true, &map, &len))) {
		atomic_store(&s->failed, 2);
	} else {
		/* first touch on this core, with non-zero data (a zero page
		 * could be shared) */
		for (size_t i = 0; i < s->bytes; i += 4096)
			((volatile uint8_t *)buf)[i] = (uint8_t)(i >> 12 | 1);
	}
	for (int r = 0; r <= s->reps; r++) {
		pthread_barrier_wait(&s->start);
		if (atomic_load(&s->failed)) {
			pthread_barrier_wait(&s->end);
			continue;
		}
		t->t0[r] = time_now_ns();
		for (int p = 0; p < s->passes; p++)
			t->sink ^= s->rd(buf, s->bytes);
		t->t1[r] = time_now_ns();
		pthread_barrier_wait(&s->end);
	}
	if (map != MAP_FAILED)
		munmap(map, len);
	return NULL;
}

int membw_run(const int *cpus, int k, size_t bytes, int reps, membw_read_fn rd,
	      stats_summary_t *out, uint64_t *sink)
{
	mb_shared_t s = {.reps = reps, .bytes = bytes, .rd = rd,
			 .passes = (int)((MB_REP_BYTES + bytes - 1) / bytes)};
	pthread_barrier_init(&s.start, NULL, (unsigned)k);
	pthread_barrier_init(&s.end, NULL, (unsigned)k);
	mb_thread_t *t = calloc((size_t)k, sizeof *t);
	for (int i = 0; i < k; i++) {
		t[i].s = &s;
		t[i].cpu = cpus[i];
		t[i].t0 = calloc((size_t)reps + 1, sizeof(uint64_t));
		t[i].t1 = calloc((size_t)reps + 1, sizeof(uint64_t));
	}
	for (int i = 1; i < k; i++)
		pthread_create(&t[i].th, NULL, mb_main, &t[i]);
	mb_main(&t[0]);
	for (int i = 1; i < k; i++)
		pthread_join(t[i].th, NULL);
	int failed = atomic_load(&s.failed); /* after the joins */
	double *gbs = failed ? NULL : malloc((size_t)reps * sizeof *gbs);
	for (int r = 1; r <= reps && gbs; r++) {
		uint64_t lo = UINT64_MAX, hi = 0;
		for (int i = 0; i < k; i++) {
			lo = t[i].t0[r] < lo ? t[i].t0[r] : lo;
			hi = t[i].t1[r] > hi ? t[i].t1[r] : hi;
		}
		gbs[r - 1] = (double)k * (double)bytes * s.passes / (double)(hi - lo);
	}
	for (int i = 0; i < k; i++) {
		*sink ^= t[i].sink;
		free(t[i].t0);
		free(t[i].t1);
	}
	free(t);
	pthread_barrier_destroy(&s.start);
	pthread_barrier_destroy(&s.end);
	if (failed == 1)
		return err_set("bench membw: cannot pin a thread to its CPU");
	if (failed || !gbs)
		return err_set("bench membw: cannot allocate %zu MiB per thread",
			       bytes >> 20);
	/* gbs are bytes per ns, that is GB/s */
	*out = stats_summarize(gbs, (size_t)reps);
	free(gbs);
	return 0;
}

/* ---- matvec ---- */

static double thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Random weights of type t: rows of rb bytes, valid finite values. */
static void fill_weights(dtype_t t, uint8_t *w, size_t bytes, rng_t *r)
{
	for (size_t i = 0; i + 8 <= bytes; i += 8) {
		uint64_t v = rng_next(r);
		memcpy(w + i, &v, 8);
	}
	size_t bb = dtype_info[t].block_bytes;
	if (t == DTYPE_Q8_0 || t == DTYPE_Q4_0) {
		for (size_t i = 0; i + bb <= bytes; i += bb) {
			w[i] = 0x00; /* d = 2^-7 as a half */
			w[i + 1] = 0x20;
		}
	} else if (t == DTYPE_F16 || t == DTYPE_BF16) {
		for (size_t i = 1; i < bytes; i += 2)
			w[i] &= 0x3F; /* small positive exponents: finite */
	} else {
		for (size_t i = 3; i < bytes; i += 4)
			w[i] &= 0x3F;
	}
}

/* GB/s (best, median) of matvec over W (rows x n; P: its pack16 copy or
 * NULL) in chunks of about chunk_kib KiB. */
static void time_matvec(dtype_t t, const uint8_t *W, const void *P, int64_t rows,
			int64_t n, size_t chunk_kib, const void *xa, float *y, int reps,
			double *best, double *med)
{
	size_t rb = dtype_row_bytes(t, n);
	int64_t grp = dtype_info[t].block > 1 ? 16 : 4; /* as forward.c's rows_per_chunk */
	int64_t chunk = (int64_t)((chunk_kib << 10) / rb);
	chunk = chunk < grp ? grp : (chunk + grp - 1) & ~(grp - 1);
	double *g = malloc((size_t)reps * sizeof *g);
	for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
		double t0 = thread_cpu_s();
		for (int64_t r0 = 0; r0 < rows; r0 += chunk)
			matvec_range(t, W, P, rows, xa, y + r0, n, r0,
				     r0 + chunk < rows ? r0 + chunk : rows);
		double dt = thread_cpu_s() - t0;
		if (r >= 0)
			g[r] = (double)rows * (double)rb / (dt > 0 ? dt : 1e-9) / 1e9;
	}
	stats_summary_t s = stats_summarize(g, (size_t)reps);
	*best = s.max;
	*med = s.p50;
	free(g);
}



/* (a): the 1 MiB matrix at every level this CPU has. */
static int matvec_l2(dtype_t t, int64_t n, const void *xa, float *y, int reps,
		     rng_t *r, matvec_result_t *res)
{
	static const char *const levels[] = {"generic", "avx2", "avx512", "avx512vnni"};
	size_t rb = dtype_row_bytes(t, n);
	int64_t rows = (int64_t)((1u << 20) / rb);
	rows = rows < 4 ? 4 : rows;
	void *map;
	size_t len;
	uint8_t *w = alloc_aligned((size_t)rows * rb, true, &map, &len);
	if (!w)
		return err_set("bench matvec: cannot allocate");
	fill_weights(t, w, (size_t)rows * rb, r);
	res->n_l2 = 0;
	for (size_t l = 0; l < EG_ARRAY_LEN(levels); l++) {
		if (kernels_set_isa(levels[l]) < 0)
			continue;
		matvec_figure_t *f = &res->l2[res->n_l2];
		time_matvec(t, w, NULL, rows, n, 32, xa, y, reps, &f->best, &f->median);
		res->l2_name[res->n_l2++] = levels[l];
	}
	kernels_set_isa(res->isa);
	munmap(map, len);
	return 0;
}

/* (b), (c), (d): the mb MiB matrix in both page sizes, and packed. */
static int matvec_dram(dtype_t t, int64_t n, int64_t mb, const void *xa, float *y,
		       int reps, rng_t *r, void (*progress)(const char *msg),
		       matvec_result_t *res)
{
	size_t rb = dtype_row_bytes(t, n);
	int64_t rows = (int64_t)(((size_t)mb << 20) / rb);
	char msg[128];
	for (int huge = 1; huge >= 0; huge--) {
		snprintf(msg, sizeof msg, "%s, %lld MiB in %s pages", dtype_info[t].name,
			 (long long)mb, huge ? "huge" : "4 KiB");
		if (progress)
			progress(msg);
		void *map;
		size_t len;
		uint8_t *w = alloc_aligned((size_t)rows * rb, huge, &map, &len);
		if (!w)
			return err_set("bench matvec: cannot allocate %lld MiB", (long long)mb);
		fill_weights(t, w, (size_t)rows * rb, r);
		matvec_figure_t *f = huge ? &res->huge : &res->small_pages;
		time_matvec(t, w, NULL, rows, n, 32, xa, y, reps, &f->best, &f->median);
		if (huge && res->has_packed) {
			void *pmap;
			size_t plen;
			uint8_t *P = alloc_aligned(pack16_bytes(t, rows, n), true, &pmap, &plen);
			if (P) {
				snprintf(msg, sizeof msg, "%s, %lld MiB packed",
					 dtype_info[t].name, (long long)mb);
				if (progress)
					progress(msg);
				pack16(t, w, rows, n, P);
				time_matvec(t, w, P, rows & ~(int64_t)15, n, 256, xa, y, reps,
					    &res->packed.best, &res->packed.median);
				munmap(pmap, plen);
			}
		}
		munmap(map, len);
	}
	return 0;
}

int matvec_run(dtype_t t, int64_t n, int64_t mb, int reps, rng_t *r,
	       void (*progress)(const char *msg), matvec_result_t *res)
{
	kernels_init();
	*res = (matvec_result_t){.isa = kernels_isa(), .has_packed = pack16_used(t, n)};
	size_t rb = dtype_row_bytes(t, n);
	int64_t rows_l = (int64_t)(((size_t)mb << 20) / rb);
	float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)rows_l * sizeof *y);
	void *xa = malloc((size_t)n * sizeof(float) + 64);
	int rc = x && y && xa ? 0 : err_set("bench matvec: out of memory");
	if (rc == 0) {
		for (int64_t i = 0; i < n; i++)
			x[i] = rng_float(r) * 2.0f - 1.0f;
		act_prepare(t, x, xa, n);
		rc = matvec_l2(t, n, xa, y, reps, r, res);
	}
	if (rc == 0)
		rc = matvec_dram(t, n, mb, xa, y, reps, r, progress, res);
	free(x);
	free(y);
	free(xa);
	return rc;
}
