/* egang bench: the benchmark dispatcher, and `bench protocol` (the gang
 * protocol's latencies: bench/protocol.h). Every benchmark prints one
 * greppable summary line starting "bench ", skips warm-up, and reports
 * min / median / p99 / max over repetitions (or min / median / max where
 * reps are few); the experiments themselves live in src/bench/. */
#include <stdio.h>
#include <string.h>

#include "bench/protocol.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"
#include "gang/gang.h"

static const char protocol_help[] =
	"usage: egang bench protocol [--cores LIST] [--reps N]\n"
	"\n"
	"Measures the gang protocol's latencies (median and p99 over N reps):\n"
	"  latch publish-to-observe   leader publishes a token, a worker starts it\n"
	"  wave barrier               one wave barrier on all cores (and, measured\n"
	"                             in the same run, pthread_barrier and a\n"
	"                             centralized spinning barrier as ggml uses)\n"
	"  return                     a core leaves at a token boundary -> a tenant\n"
	"                             pinned to it runs again (tenant timestamps)\n"
	"  acquire idle / busy        request -> the worker's ack, on an idle core\n"
	"                             and on a core busy with a CPU-bound process\n"
	"Needs at least 2 CPUs.\n";

static void print_probe(protocol_probe_t p, const stats_summary_t *s)
{
	printf("bench protocol %-30s p50=%.0fns p99=%.0fns min=%.0f max=%.0f n=%zu\n",
	       protocol_names[p], s->p50, s->p99, s->min, s->max, s->n);
}

int cmd_bench_protocol(int argc, char **argv)
{
	int64_t reps = 2000;
	cli_cpus_t cpus = {0};
	const cli_opt_t opts[] = {
		OPT_CPUS("cores", &cpus, GANG_MAX_SLOTS),
		OPT_INT("reps", 0, &reps, 20, 10000000),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "bench protocol", .help = protocol_help,
			       .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	if (cpus.n < 2) {
		log_error("bench protocol: needs at least 2 CPUs (have %d)", cpus.n);
		return EXIT_INPUT;
	}
	protocol_result_t r;
	if (protocol_run(cpus.cpu, cpus.n, (int)reps, &r) < 0) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	print_probe(PROTOCOL_LATCH, &r.s[PROTOCOL_LATCH]);
	print_probe(PROTOCOL_BARRIER, &r.s[PROTOCOL_BARRIER]);
	printf("bench protocol %-30s mean=%.0fns\n", "pthread_barrier", r.pthread_barrier_ns);
	printf("bench protocol %-30s mean=%.0fns\n", "spin_barrier_ggml_style",
	       r.spin_barrier_ns);
	for (int p = PROTOCOL_RETURN; p < PROTOCOL_COUNT; p++)
		print_probe((protocol_probe_t)p, &r.s[p]);
	printf("bench protocol summary: latch %.0f ns, barrier %.0f ns (pthread %.0f, "
	       "spin %.0f), return %.1f us, acquire idle %.1f us, busy %.1f us "
	       "(p50; %d cores)\n",
	       r.s[PROTOCOL_LATCH].p50, r.s[PROTOCOL_BARRIER].p50, r.pthread_barrier_ns,
	       r.spin_barrier_ns, r.s[PROTOCOL_RETURN].p50 / 1e3,
	       r.s[PROTOCOL_ACQUIRE_IDLE].p50 / 1e3, r.s[PROTOCOL_ACQUIRE_BUSY].p50 / 1e3,
	       cpus.n);
	return EXIT_OK;
}

static const char bench_help[] =
	"usage: egang bench WHAT [options]\n"
	"\n"
	"  protocol    latch, barrier, return and acquire latencies\n"
	"  decode      decode tok/s and effective bandwidth at a core count\n"
	"  prefill     prompt processing tok/s at a core count\n"
	"  width       decode tok/s at gang widths 1..n and the knee\n"
	"  overhead    the gang against a plain fixed thread pool, same chunks\n"
	"  coschedule  inference and CPU-bound tenants: static splits, elastic,\n"
	"              knee and a fixed pool across duty cycles (CSV + PNG)\n"
	"  serve       load generator for `egang serve` (streaming clients)\n"
	"  switch-cost policy index write and write-to-in-force latency\n"
	"              (`switch` is the same)\n"
	"  switching   the policy-switching experiment: serve + antagonists,\n"
	"              steady/burst/steady load, fixed vs switched policies\n"
	"  membw       read bandwidth with 1..n cores (the limit for decode)\n"
	"  matvec      GB/s of the matvec kernels per type, in L2 and from memory\n"
	"  knobs       a scalar scheduler knob's cost against the index store\n"
	"  agent       the agent controller over fixed telemetry regimes\n"
	"  grammar     decode tok/s with and without a grammar, the mask's cost\n"
	"\n`egang bench WHAT --help` lists its options.\n";

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} benches[] = {
	{"protocol", cmd_bench_protocol},
	{"decode", cmd_bench_decode},
	{"prefill", cmd_bench_prefill},
	{"width", cmd_bench_width},
	{"overhead", cmd_bench_overhead},
	{"coschedule", cmd_bench_coschedule},
	{"serve", cmd_bench_serve},
	{"switch-cost", cmd_bench_switch_cost},
	{"switch", cmd_bench_switch_cost}, /* the name before switch-cost */
	{"switching", cmd_bench_switching},
	{"membw", cmd_bench_membw},
	{"knobs", cmd_bench_knobs},
	{"agent", cmd_bench_agent},
	{"grammar", cmd_bench_grammar},
	{"matvec", cmd_bench_matvec},
};

int cmd_bench(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(bench_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_INPUT : EXIT_OK;
	}
	for (size_t i = 0; i < EG_ARRAY_LEN(benches); i++)
		if (!strcmp(argv[1], benches[i].name))
			return benches[i].run(argc - 1, argv + 1);
	log_error("bench: unknown benchmark '%s' (see `egang bench --help`)", argv[1]);
	return EXIT_INPUT;
}
