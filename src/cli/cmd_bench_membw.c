/* egang bench membw | matvec: read bandwidth with 1..n cores, and the
 * matvec kernels against it (the method: bench/membw.h). One summary line
 * per core count or weight type:
 *   bench membw: cores=LIST threads=K mb=N reps=R GB/s min/median/max A/B/C
 * or with --json one object per line:
 *   {"bench":"membw","cores":"0-1","threads":2,"mb":256,"reps":5,
 *    "gb_s":{"min":..,"median":..,"max":..},"isa":"avx512"}. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/membw.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"
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
	"  --reps R       timed repetitions per core count, each at least 1 GiB\n"
	"                 per thread (the buffer read over and over; default 5)\n"
	"  --json         one JSON object per line instead of the summary lines\n"
	"  -q, --quiet    no progress on the terminal\n"
	"  -h, --help     this text\n";

static void print_membw(const int *cpus, int k, int64_t mb, int64_t reps,
			const stats_summary_t *s, const char *isa, bool json)
{
	cpumask_t mask = cpumask_of_cpus(cpus, k);
	char list[CPUMASK_LIST_CAP];
	cpumask_format(&mask, list, sizeof list);
	if (json)
		printf("{\"bench\":\"membw\",\"cores\":\"%s\",\"threads\":%d,"
		       "\"mb\":%lld,\"reps\":%lld,\"gb_s\":{\"min\":%.2f,"
		       "\"median\":%.2f,\"max\":%.2f},\"isa\":\"%s\"}\n",
		       list, k, (long long)mb, (long long)reps, s->min, s->p50, s->max, isa);
	else
		printf("bench membw: cores=%s threads=%d mb=%lld reps=%lld "
		       "GB/s min/median/max %.2f/%.2f/%.2f (%s loads)\n",
		       list, k, (long long)mb, (long long)reps, s->min, s->p50, s->max, isa);
	fflush(stdout);
}

int cmd_bench_membw(int argc, char **argv)
{
	int64_t mb = 256, reps = 5;
	bool json = false;
	cli_cpus_t cpus = {0};
	const cli_opt_t opts[] = {
		OPT_CPUS("cores", &cpus, GANG_MAX_SLOTS),
		OPT_INT("mb", 0, &mb, 8, 1 << 20),
		OPT_INT("reps", 0, &reps, 1, 10000),
		OPT_FLAG("json", 0, &json),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench membw", .help = membw_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	const char *isa;
	membw_read_fn rd = membw_reader(&isa);
	uint64_t sink = 0;
	bool tty = !log_quiet && !json && isatty(2);
	for (int k = 1; k <= cpus.n; k++) {
		if (tty)
			fprintf(stderr, "\rbench membw: %d of %d cores ...", k, cpus.n);
		stats_summary_t s;
		if (membw_run(cpus.cpu, k, (size_t)mb << 20, (int)reps, rd, &s, &sink) < 0) {
			log_error("%s", err_get());
			return EXIT_FAIL;
		}
		if (tty)
			fputs("\r\033[K", stderr);
		print_membw(cpus.cpu, k, mb, reps, &s, isa, json);
	}
	/* the xor of all data read, so no read can be optimized away */
	if (sink == 0x5eed)
		log_info("bench membw: (checksum %llx)", (unsigned long long)sink);
	return EXIT_OK;
}

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

static void matvec_progress(const char *msg)
{
	if (!log_quiet && isatty(2))
		fprintf(stderr, "\rbench matvec: %s ...", msg);
}

static void print_matvec(dtype_t t, int64_t n, int cpu, int64_t mb,
			 const matvec_result_t *r, bool json)
{
	char l2[256] = "", pk[96] = "";
	size_t o = 0;
	for (int i = 0; i < r->n_l2; i++)
		o += (size_t)snprintf(l2 + o, sizeof l2 - o,
				      json ? "%s\"%s\":{\"best\":%.2f,\"median\":%.2f}"
					   : "%s%s %.1f/%.1f",
				      json ? (i ? "," : "") : " ", r->l2_name[i],
				      r->l2[i].best, r->l2[i].median);
	if (json)
		snprintf(pk, sizeof pk, r->has_packed ? "{\"best\":%.2f,\"median\":%.2f}"
						      : "null",
			 r->packed.best, r->packed.median);
	else if (r->has_packed)
		snprintf(pk, sizeof pk, ", packed %.1f/%.1f", r->packed.best,
			 r->packed.median);
	if (json)
		printf("{\"bench\":\"matvec\",\"type\":\"%s\",\"n\":%lld,\"cpu\":%d,"
		       "\"l2_gb_s\":{%s},\"isa\":\"%s\",\"mb\":%lld,"
		       "\"huge_gb_s\":{\"best\":%.2f,\"median\":%.2f},"
		       "\"small_pages_gb_s\":{\"best\":%.2f,\"median\":%.2f},"
		       "\"packed_gb_s\":%s}\n",
		       dtype_info[t].name, (long long)n, cpu, l2, r->isa, (long long)mb,
		       r->huge.best, r->huge.median, r->small_pages.best,
		       r->small_pages.median, pk);
	else
		printf("bench matvec: %-4s n=%lld cpu=%d GB/s best/median: L2%s; "
		       "%lld MiB (%s) huge pages %.1f/%.1f, 4 KiB pages %.1f/%.1f%s\n",
		       dtype_info[t].name, (long long)n, cpu, l2, (long long)mb, r->isa,
		       r->huge.best, r->huge.median, r->small_pages.best,
		       r->small_pages.median, pk);
	fflush(stdout);
}

/* "f32,q8_0": the types; the count, or -1 after a one-line error. */
static int parse_types(const char *types, dtype_t *want)
{
	int nt = 0;
	char buf[128];
	snprintf(buf, sizeof buf, "%s", types);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int t = dtype_from_name(tok);
		if (t < 0 || t > DTYPE_Q4_0) { /* the types with SIMD kernels */
			log_error("--types: '%s' is not f32, f16, bf16, q8_0 or q4_0", tok);
			return -1;
		}
		if (nt < DTYPE_COUNT)
			want[nt++] = (dtype_t)t;
	}
	if (!nt)
		log_error("--types: empty list");
	return nt ? nt : -1;
}

int cmd_bench_matvec(int argc, char **argv)
{
	const char *types = "f32,f16,bf16,q8_0,q4_0";
	int64_t n = 2048, mb = 256, reps = 5;
	bool json = false;
	cli_cpus_t cpus = {0};
	const cli_opt_t opts[] = {
		OPT_STR("types", 0, &types),
		OPT_INT("n", 0, &n, 32, 1 << 18),
		OPT_INT("mb", 0, &mb, 8, 1 << 20),
		OPT_INT("reps", 0, &reps, 1, 10000),
		OPT_CPUS("cores", &cpus, GANG_MAX_SLOTS),
		OPT_FLAG("json", 0, &json),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench matvec", .help = matvec_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	if (n % 32) {
		log_error("--n: %lld is not a multiple of 32", (long long)n);
		return EXIT_INPUT;
	}
	dtype_t want[DTYPE_COUNT];
	int nt = parse_types(types, want);
	if (nt < 0)
		return EXIT_INPUT;
	if (cpus.n < 1 || affinity_pin_self(cpus.cpu[0]) < 0) {
		log_error("bench matvec: cannot pin to CPU %d", cpus.n ? cpus.cpu[0] : -1);
		return EXIT_FAIL;
	}
	rng_t r;
	rng_seed(&r, 1);
	for (int k = 0; k < nt; k++) {
		matvec_result_t res;
		int rc = matvec_run(want[k], n, mb, (int)reps, &r,
				    json ? NULL : matvec_progress, &res);
		if (!json && !log_quiet && isatty(2))
			fputs("\r\033[K", stderr);
		if (rc < 0) {
			log_error("%s", err_get());
			return EXIT_FAIL;
		}
		print_matvec(want[k], n, cpus.cpu[0], mb, &res, json);
	}
	return EXIT_OK;
}
