/* egang bench membw: read bandwidth of this machine for 1..n cores, the
 * physical limit of decoding (a token streams every weight once).
 *
 * Method. For k = 1..n, k threads are pinned one per core (the --cores
 * order); each streams its own buffer of --mb MiB, far larger than the
 * last-level cache, with the widest vector loads the CPU has (AVX-512,
 * else AVX2, else 64-bit words), folding every load into an xor so no load
 * can be dropped. A buffer is anonymous memory with MADV_HUGEPAGE and is
 * first touched by its own thread, as the weights are after model_load: the
 * figure is the best a decoder reading its weights this way can see. Each
 * repetition starts all k threads at a barrier and takes, as its time, from
 * the earliest start to the latest end, so GB/s = k * bytes / that time
 * (1 GB = 1e9 bytes). One warm-up pass per thread is not counted.
 * One summary line per core count:
 *   bench membw: cores=LIST threads=K mb=N reps=R GB/s min/median/max A/B/C
 * or with --json one object per line:
 *   {"bench":"membw","cores":"0-1","threads":2,"mb":256,"reps":5,
 *    "gb_s":{"min":..,"median":..,"max":..},"isa":"avx512"}. */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cli/cli.h"
#include "gang/gang.h"
#include "kernels/kernels.h"

static const char membw_help[] =
	"usage: egang bench membw [--cores LIST] [--mb N] [--reps R] [--json] [--quiet]\n"
	"\n"
	"Read bandwidth of this machine with 1..n cores: k threads pinned one per\n"
	"core each stream their own buffer of N MiB (anonymous memory, huge pages\n"
	"where the kernel gives them) with the widest vector loads the CPU has.\n"
	"This is the physical limit for decode (a token streams every weight once).\n"
	"Prints one line per core count: GB/s min/median/max over R repetitions\n"
	"(1 GB = 1e9 bytes).\n"
	"\n"
	"  --cores LIST   CPUs, in the order they are added (default: all allowed,\n"
	"                 physical cores first)\n"
	"  --mb N         MiB per thread (default 256; at least 8)\n"
	"  --reps R       timed repetitions per core count, each at least 1 GiB\n"
	"                 per thread (the buffer read over and over; default 5)\n"
	"  --json         one JSON object per line instead of the summary lines\n"
	"  -q, --quiet    no progress on the terminal\n"
	"  -h, --help     this text\n";

/* ---- the read loops: xor of every 64-byte line, 4 lines per step ---- */

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static uint64_t read_avx512(const void *p, size_t bytes)
{
	const __m512i *v = p;
	__m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
	for (size_t i = 0; i < bytes / 64; i += 4) {
		a = _mm512_xor_si512(a, _mm512_load_si512(v + i));
		b = _mm512_xor_si512(b, _mm512_load_si512(v + i + 1));
		c = _mm512_xor_si512(c, _mm512_load_si512(v + i + 2));
		d = _mm512_xor_si512(d, _mm512_load_si512(v + i + 3));
	}
	a = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d));
	return (uint64_t)_mm512_reduce_or_epi64(a);
}

__attribute__((target("avx2"))) static uint64_t read_avx2(const void *p, size_t bytes)
{
	const __m256i *v = p;
	__m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
	for (size_t i = 0; i < bytes / 32; i += 4) {
		a = _mm256_xor_si256(a, _mm256_load_si256(v + i));
		b = _mm256_xor_si256(b, _mm256_load_si256(v + i + 1));
		c = _mm256_xor_si256(c, _mm256_load_si256(v + i + 2));
		d = _mm256_xor_si256(d, _mm256_load_si256(v + i + 3));
	}
	a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
	return (uint64_t)_mm256_extract_epi64(a, 0) ^ (uint64_t)_mm256_extract_epi64(a, 3);
}
#endif

static uint64_t read_words(const void *p, size_t bytes)
{
	const uint64_t *v = p;
	uint64_t a = 0, b = 0, c = 0, d = 0;
	for (size_t i = 0; i < bytes / 8; i += 4) {
		a ^= v[i];
		b ^= v[i + 1];
		c ^= v[i + 2];
		d ^= v[i + 3];
	}
	return a ^ b ^ c ^ d;
}

typedef uint64_t (*read_fn)(const void *, size_t);

static read_fn pick_reader(const char **isa)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		*isa = "avx512";
		return read_avx512;
	}
	if (__builtin_cpu_supports("avx2")) {
		*isa = "avx2";
		return read_avx2;
	}
#endif
	*isa = "scalar";
	return read_words;
}

/* ---- threads ---- */

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
	read_fn rd;
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
	const size_t huge = 2u << 20, len = s->bytes + huge;
	if (affinity_pin_self(t->cpu) < 0) {
		atomic_store(&s->failed, 1);
	} else {
		map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED) {
			atomic_store(&s->failed, 2);
		} else {
			/* 2 MiB aligned, so every page can be a huge one */
			buf = (uint8_t *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
			(void)madvise(buf, s->bytes, MADV_HUGEPAGE); /* a hint */
			/* first touch on this core, with non-zero data
			 * (a zero page could be shared) */
			for (size_t i = 0; i < s->bytes; i += 4096)
				((volatile uint8_t *)buf)[i] = (uint8_t)(i >> 12 | 1);
		}
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Runs k threads on cpus[0..k-1]; gbs[0..reps-1] sorted. 0, or -1 after a
 * message. */
static int membw_run(const int *cpus, int k, size_t bytes, int reps, read_fn rd,
		     double *gbs, uint64_t *sink)
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
	int failed = atomic_load(&s.failed);
	for (int r = 1; r <= reps && !failed; r++) {
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
		log_error("bench membw: cannot pin a thread to its CPU");
	else if (failed)
		log_error("bench membw: cannot allocate %zu MiB per thread", bytes >> 20);
	if (failed)
		return -1;
	qsort(gbs, (size_t)reps, sizeof *gbs, cmp_double);
	return 0;
}

int cmd_bench_membw(int argc, char **argv)
{
	static const struct option opts[] = {
		{"cores", required_argument, 0, 'C'},
		{"mb", required_argument, 0, 'M'},
		{"reps", required_argument, 0, 'r'},
		{"json", no_argument, 0, 'j'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *cores = NULL;
	int64_t mb = 256, reps = 5;
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'C': cores = optarg; break;
		case 'M':
			if (cli_int("--mb", optarg, 8, 1 << 20, &mb) < 0)
				return EXIT_INPUT;
			break;
		case 'r':
			if (cli_int("--reps", optarg, 1, 10000, &reps) < 0)
				return EXIT_INPUT;
			break;
		case 'j': json = true; break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(membw_help, stdout); return EXIT_OK;
		default: return cli_usage_error("bench membw", argv[optind - 1]);
		}
	}
	if (cli_no_more_args("bench membw", argc, argv) < 0)
		return EXIT_INPUT;
	int cpus[GANG_MAX_SLOTS];
	int n = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (n < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	const char *isa;
	read_fn rd = pick_reader(&isa);
	size_t bytes = (size_t)mb << 20;
	double *gbs = malloc((size_t)reps * sizeof *gbs);
	uint64_t sink = 0;
	bool tty = !log_quiet && !json && isatty(2);
	for (int k = 1; k <= n; k++) {
		if (tty)
			fprintf(stderr, "\rbench membw: %d of %d cores ...", k, n);
		if (membw_run(cpus, k, bytes, (int)reps, rd, gbs, &sink) < 0) {
			free(gbs);
			return EXIT_FAIL;
		}
		if (tty)
			fputs("\r\033[K", stderr);
		cpumask_t mask = 0;
		for (int i = 0; i < k; i++)
			mask |= 1ull << cpus[i];
		char list[128];
		cpumask_format(mask, list, sizeof list);
		/* gbs are bytes per ns, that is GB/s */
		double lo = gbs[0], med = gbs[reps / 2], hi = gbs[reps - 1];
		if (json)
			printf("{\"bench\":\"membw\",\"cores\":\"%s\",\"threads\":%d,"
			       "\"mb\":%lld,\"reps\":%lld,\"gb_s\":{\"min\":%.2f,"
			       "\"median\":%.2f,\"max\":%.2f},\"isa\":\"%s\"}\n",
			       list, k, (long long)mb, (long long)reps, lo, med, hi, isa);
		else
			printf("bench membw: cores=%s threads=%d mb=%lld reps=%lld "
			       "GB/s min/median/max %.2f/%.2f/%.2f (%s loads)\n",
			       list, k, (long long)mb, (long long)reps, lo, med, hi, isa);
		fflush(stdout);
	}
	free(gbs);
	/* the xor of all data read, so no read can be optimized away */
	if (sink == 0x5eed)
		log_info("bench membw: (checksum %llx)", (unsigned long long)sink);
	return EXIT_OK;
}

/* ---- bench matvec: the matvec kernels against that limit ----
 *
 * For each weight type: a matrix of rows of --n elements is multiplied by
 * one prepared activation vector in chunks of about 32 KiB of weights, on
 * one pinned core, (a) from a 1 MiB matrix that stays in L2 (the kernel's
 * compute rate, at every ISA level this CPU has), (b) from a --mb MiB
 * matrix in huge pages and (c) the same in 4 KiB pages (MADV_NOHUGEPAGE),
 * at the level in use, and (d) for Q8_0 / Q4_0 where the level has a packed
 * kernel, from the huge-page matrix's pack16 copy (what decode reads) in
 * chunks of 256 KiB (forward.c's decode chunk): GB/s of weights. Time is the
 * thread's CPU time, so a shared machine's descheduling does not count
 * (its contention for memory still does). Matrices hold random quants with
 * a fixed scale (random halves for float types), made without the
 * quantizer so a large one is quick to fill. */

static const char matvec_help[] =
	"usage: egang bench matvec [--types LIST] [--n N] [--mb N] [--reps R] [--cores CPU] [--json]\n"
	"\n"
	"GB/s of weights streamed by the matvec kernels on one pinned core: from a\n"
	"1 MiB matrix (in L2) at every ISA level this CPU has, and from a matrix of\n"
	"N MiB in huge pages and in 4 KiB pages at the level in use, and for\n"
	"q8_0/q4_0 from that matrix packed 16 rows at a time (what decode reads,\n"
	"in decode's 256 KiB chunks) where the level has a packed kernel. Best and\n"
	"median over R repetitions of the thread's CPU time. Compare with\n"
	"`egang bench membw` (one core).\n"
	"\n"
	"  --types LIST   weight types (default f32,f16,bf16,q8_0,q4_0)\n"
	"  --n N          elements per row (default 2048; a multiple of 32)\n"
	"  --mb N         MiB of the large matrix (default 256; at least 8)\n"
	"  --reps R       repetitions (default 5)\n"
	"  --cores CPU    the CPU to run on (default: the first allowed)\n"
	"  --json         one JSON object per type\n"
	"  -q, --quiet    no progress on the terminal\n"
	"  -h, --help     this text\n";

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
	qsort(g, (size_t)reps, sizeof *g, cmp_double);
	*best = g[reps - 1];
	*med = g[reps / 2];
	free(g);
}

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

int cmd_bench_matvec(int argc, char **argv)
{
	static const struct option opts[] = {
		{"types", required_argument, 0, 'T'},
		{"n", required_argument, 0, 'n'},
		{"mb", required_argument, 0, 'M'},
		{"reps", required_argument, 0, 'r'},
		{"cores", required_argument, 0, 'C'},
		{"json", no_argument, 0, 'j'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *types = "f32,f16,bf16,q8_0,q4_0", *cores = NULL;
	int64_t n = 2048, mb = 256, reps = 5;
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'T': types = optarg; break;
		case 'n':
			if (cli_int("--n", optarg, 32, 1 << 18, &n) < 0)
				return EXIT_INPUT;
			break;
		case 'M':
			if (cli_int("--mb", optarg, 8, 1 << 20, &mb) < 0)
				return EXIT_INPUT;
			break;
		case 'r':
			if (cli_int("--reps", optarg, 1, 10000, &reps) < 0)
				return EXIT_INPUT;
			break;
		case 'C': cores = optarg; break;
		case 'j': json = true; break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(matvec_help, stdout); return EXIT_OK;
		default: return cli_usage_error("bench matvec", argv[optind - 1]);
		}
	}
	if (cli_no_more_args("bench matvec", argc, argv) < 0)
		return EXIT_INPUT;
	if (n % 32) {
		log_error("--n: %lld is not a multiple of 32", (long long)n);
		return EXIT_INPUT;
	}
	int want[DTYPE_COUNT], nt = 0;
	char buf[128];
	snprintf(buf, sizeof buf, "%s", types);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int t = dtype_from_name(tok);
		if (t < 0 || t > DTYPE_Q4_0) { /* the types with SIMD kernels */
			log_error("--types: '%s' is not f32, f16, bf16, q8_0 or q4_0", tok);
			return EXIT_INPUT;
		}
		if (nt < DTYPE_COUNT)
			want[nt++] = t;
	}
	if (!nt) {
		log_error("--types: empty list");
		return EXIT_INPUT;
	}
	int cpus[GANG_MAX_SLOTS];
	int ncpu = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (ncpu < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	if (ncpu < 1 || affinity_pin_self(cpus[0]) < 0) {
		log_error("bench matvec: cannot pin to CPU %d", ncpu ? cpus[0] : -1);
		return EXIT_FAIL;
	}
	kernels_init();
	const char *in_use = kernels_isa();
	static const char *const levels[] = {"generic", "avx2", "avx512"};
	bool tty = !log_quiet && !json && isatty(2);
	rng_t r;
	rng_seed(&r, 1);
	int rc = EXIT_OK;
	for (int k = 0; k < nt && rc == EXIT_OK; k++) {
		dtype_t t = (dtype_t)want[k];
		size_t rb = dtype_row_bytes(t, n);
		int64_t rows_s = (int64_t)((1u << 20) / rb), rows_l = (int64_t)(((size_t)mb << 20) / rb);
		rows_s = rows_s < 4 ? 4 : rows_s;
		float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)rows_l * sizeof *y);
		void *xa = malloc((size_t)n * sizeof(float) + 64);
		for (int64_t i = 0; i < n; i++)
			x[i] = rng_float(&r) * 2.0f - 1.0f;
		act_prepare(t, x, xa, n);
		void *map;
		size_t len;
		uint8_t *ws = alloc_aligned((size_t)rows_s * rb, true, &map, &len);
		if (!ws) {
			log_error("bench matvec: cannot allocate");
			rc = EXIT_FAIL;
			break;
		}
		fill_weights(t, ws, (size_t)rows_s * rb, &r);
		char l2[256] = "", l2j[256] = "";
		size_t o = 0, oj = 0;
		for (size_t l = 0; l < EG_ARRAY_LEN(levels); l++) {
			if (kernels_set_isa(levels[l]) < 0)
				continue;
			double best, med;
			time_matvec(t, ws, NULL, rows_s, n, 32, xa, y, (int)reps, &best, &med);
			o += (size_t)snprintf(l2 + o, sizeof l2 - o, " %s %.1f/%.1f", levels[l], best, med);
			oj += (size_t)snprintf(l2j + oj, sizeof l2j - oj, "%s\"%s\":{\"best\":%.2f,\"median\":%.2f}",
					       oj ? "," : "", levels[l], best, med);
		}
		kernels_set_isa(in_use);
		munmap(map, len);
		double dram[2][2] = {{0}}, packed[2] = {0};
		const bool pk = pack16_used(t, n);
		for (int huge = 1; huge >= 0 && rc == EXIT_OK; huge--) {
			if (tty)
				fprintf(stderr, "\rbench matvec: %s, %lld MiB in %s pages ...",
					dtype_info[t].name, (long long)mb, huge ? "huge" : "4 KiB");
			uint8_t *wl = alloc_aligned((size_t)rows_l * rb, huge, &map, &len);
			if (!wl) {
				log_error("bench matvec: cannot allocate %lld MiB", (long long)mb);
				rc = EXIT_FAIL;
				break;
			}
			fill_weights(t, wl, (size_t)rows_l * rb, &r);
			time_matvec(t, wl, NULL, rows_l, n, 32, xa, y, (int)reps, &dram[huge][0],
				    &dram[huge][1]);
			if (huge && pk) {
				void *pmap;
				size_t plen, pb = pack16_bytes(t, rows_l, n);
				uint8_t *P = alloc_aligned(pb, true, &pmap, &plen);
				if (P) {
					if (tty)
						fprintf(stderr, "\rbench matvec: %s, %lld MiB packed ...",
							dtype_info[t].name, (long long)mb);
					pack16(t, wl, rows_l, n, P);
					time_matvec(t, wl, P, rows_l & ~(int64_t)15, n, 256, xa, y,
						    (int)reps, &packed[0], &packed[1]);
					munmap(pmap, plen);
				}
			}
			munmap(map, len);
		}
		if (tty)
			fputs("\r\033[K", stderr);
		if (rc == EXIT_OK) {
			char pbuf[96] = "";
			if (pk && json)
				snprintf(pbuf, sizeof pbuf, "{\"best\":%.2f,\"median\":%.2f}",
					 packed[0], packed[1]);
			else if (json)
				snprintf(pbuf, sizeof pbuf, "null");
			else if (pk)
				snprintf(pbuf, sizeof pbuf, ", packed %.1f/%.1f", packed[0], packed[1]);
			if (json)
				printf("{\"bench\":\"matvec\",\"type\":\"%s\",\"n\":%lld,\"cpu\":%d,"
				       "\"l2_gb_s\":{%s},\"isa\":\"%s\",\"mb\":%lld,"
				       "\"huge_gb_s\":{\"best\":%.2f,\"median\":%.2f},"
				       "\"small_pages_gb_s\":{\"best\":%.2f,\"median\":%.2f},"
				       "\"packed_gb_s\":%s}\n",
				       dtype_info[t].name, (long long)n, cpus[0], l2j, in_use,
				       (long long)mb, dram[1][0], dram[1][1], dram[0][0], dram[0][1],
				       pbuf);
			else
				printf("bench matvec: %-4s n=%lld cpu=%d GB/s best/median: L2%s; "
				       "%lld MiB (%s) huge pages %.1f/%.1f, 4 KiB pages %.1f/%.1f%s\n",
				       dtype_info[t].name, (long long)n, cpus[0], l2, (long long)mb,
				       in_use, dram[1][0], dram[1][1], dram[0][0], dram[0][1], pbuf);
			fflush(stdout);
		}
		free(x);
		free(y);
		free(xa);
	}
	return rc;
}
