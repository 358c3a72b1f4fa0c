/* egang burn: a tenant that does fixed units of work and reports its rate.
 * --mode cpu: integer work in registers (no memory traffic); --mode mem:
 * streaming reads over a buffer larger than the caches. */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/burn.h"

/* One unit of CPU work: ~1 us of dependent integer arithmetic. */
uint64_t burn_cpu_unit(uint64_t x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/* One unit of memory work: 64 KiB of reads from buf (len bytes, a multiple
 * of 64 KiB), starting at *pos. */
uint64_t burn_mem_unit(const uint64_t *buf, size_t len, size_t *pos)
{
	uint64_t s = 0;
	const uint64_t *p = buf + *pos / sizeof *buf;
	for (size_t i = 0; i < 65536 / sizeof *buf; i += 8)
		s += p[i] ^ p[i + 1] ^ p[i + 2] ^ p[i + 3] ^ p[i + 4] ^ p[i + 5] ^
		     p[i + 6] ^ p[i + 7];
	*pos = (*pos + 65536) % len;
	return s;
}

typedef struct burner {
	burn_mode_t mode;
	int cpu; /* -1: not pinned */
	_Atomic uint64_t *units;
	_Atomic bool *stop;
	pthread_t thread;
} burner_t;

static void *burner_main(void *arg)
{
	burner_t *b = arg;
	if (b->cpu >= 0)
		affinity_pin_self(b->cpu);
	burn_loop(b->mode, b->units, b->stop);
	return NULL;
}

int burn_mode_parse(const char *flag, const char *s, burn_mode_t *mode)
{
	if (!strcmp(s, "cpu"))
		*mode = BURN_CPU;
	else if (!strcmp(s, "mem"))
		*mode = BURN_MEM;
	else {
		log_error("%s: '%s' is not cpu or mem", flag, s);
		return -1;
	}
	return 0;
}

void burn_loop(burn_mode_t mode, _Atomic uint64_t *units, _Atomic bool *stop)
{
	size_t len = 64u << 20, pos = 0;
	uint64_t *buf = NULL;
	if (mode == BURN_MEM) {
		buf = malloc(len);
		for (size_t i = 0; i < len / sizeof *buf; i++)
			buf[i] = i * 0x9e3779b97f4a7c15ull;
	}
	volatile uint64_t sink = 0;
	uint64_t x = 1;
	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int k = 0; k < 16; k++)
			x ^= mode == BURN_MEM ? burn_mem_unit(buf, len, &pos)
					      : burn_cpu_unit(x);
		/* relaxed: a counter read by the reporter, no ordering */
		atomic_fetch_add_explicit(units, 16, memory_order_relaxed);
	}
	sink = x;
	(void)sink;
	free(buf);
}

static const char burn_help[] =
	"usage: egang burn [--seconds S] [--report-ms MS] [--mode cpu|mem]\n"
	"                  [--threads N] [--cores LIST] [-q]\n"
	"\n"
	"A tenant for experiments: N threads doing fixed units of work (cpu: ~1 us\n"
	"of integer arithmetic; mem: 64 KiB of streaming reads) and reporting the\n"
	"rate every MS ms (to stdout, 'burn t=SECONDS units/s=RATE') and in total.\n"
	"\n"
	"  --seconds S     run time (default 10; 0 = until killed)\n"
	"  --report-ms MS  report period (default 1000; 0 = only the total)\n"
	"  --mode M        cpu (default) or mem\n"
	"  --threads N     worker threads (default 1)\n"
	"  --cores LIST    pin thread i to the i-th CPU of LIST (round robin)\n"
	"  -q, --quiet     only the total line\n";

int cmd_burn(int argc, char **argv)
{
	static const struct option opts[] = {
		{"seconds", required_argument, 0, 's'},
		{"report-ms", required_argument, 0, 'r'},
		{"mode", required_argument, 0, 'M'},
		{"threads", required_argument, 0, 't'},
		{"cores", required_argument, 0, 'C'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	double seconds = 10;
	int64_t report_ms = 1000, threads = 1;
	burn_mode_t mode = BURN_CPU;
	const char *cores = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 's': bad = cli_float("--seconds", optarg, 0, 1e7, &seconds); break;
		case 'r': bad = cli_int("--report-ms", optarg, 0, 3600000, &report_ms); break;
		case 't': bad = cli_int("--threads", optarg, 1, 1024, &threads); break;
		case 'C': cores = optarg; break;
		case 'M': bad = burn_mode_parse("--mode", optarg, &mode); break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(burn_help, stdout); return EXIT_OK;
		default: return cli_usage_error("burn", argv[optind - 1]);
		}
		if (bad)
			return EXIT_INPUT;
	}
	if (cli_no_more_args("burn", argc, argv) < 0)
		return EXIT_INPUT;
	int cpus[CPUMASK_MAX], n_cpus = 0;
	if (cores && (n_cpus = cli_cores(cores, cpus, CPUMASK_MAX)) < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	_Atomic uint64_t units = 0;
	_Atomic bool stop = false;
	burner_t *b = calloc((size_t)threads, sizeof *b);
	for (int64_t i = 0; i < threads; i++) {
		b[i] = (burner_t){.mode = mode, .cpu = n_cpus ? cpus[i % n_cpus] : -1,
				  .units = &units, .stop = &stop};
		pthread_create(&b[i].thread, NULL, burner_main, &b[i]);
	}
	uint64_t t0 = time_now_ns(), last_t = t0, last_u = 0;
	uint64_t end = seconds > 0 ? t0 + (uint64_t)(seconds * 1e9) : UINT64_MAX;
	for (;;) {
		uint64_t now = time_now_ns();
		if (now >= end)
			break;
		uint64_t step = report_ms ? (uint64_t)report_ms * 1000000ull : end - now;
		uint64_t next = last_t + step < end ? last_t + step : end;
		struct timespec ts = {(time_t)((next - now) / 1000000000ull),
				      (long)((next - now) % 1000000000ull)};
		nanosleep(&ts, NULL);
		now = time_now_ns();
		uint64_t u = atomic_load(&units);
		if (report_ms && !log_quiet && now < end) {
			printf("burn t=%.3f units/s=%.0f\n", (double)(now - t0) / 1e9,
			       (double)(u - last_u) / ((double)(now - last_t) / 1e9));
			fflush(stdout);
		}
		last_t = now;
		last_u = u;
	}
	atomic_store(&stop, true);
	for (int64_t i = 0; i < threads; i++)
		pthread_join(b[i].thread, NULL);
	uint64_t t1 = time_now_ns(), u = atomic_load(&units);
	printf("burn total: %llu units in %.3f s = %.0f units/s (%s, %lld thread%s)\n",
	       (unsigned long long)u, (double)(t1 - t0) / 1e9,
	       (double)u / ((double)(t1 - t0) / 1e9), mode == BURN_MEM ? "mem" : "cpu",
	       (long long)threads, threads > 1 ? "s" : "");
	free(b);
	return EXIT_OK;
}
