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
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cli/cli.h"
#include "gang/gang.h"

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
	"  --reps R       timed passes per core count (default 5)\n"
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

typedef struct mb_shared {
	pthread_barrier_t start, end;
	int reps;
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
	mb_shared_t s = {.reps = reps, .bytes = bytes, .rd = rd};
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
		gbs[r - 1] = (double)k * (double)bytes / (double)(hi - lo);
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
