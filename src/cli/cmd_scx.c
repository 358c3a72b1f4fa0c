/* egang scx: the sched_ext backend (src/scx/scx.h, bpf/egang.bpf.c): load
 * the BPF scheduler, show its state and counters, switch the policy index
 * with one map update, detach; run a command in SCHED_EXT. */
#include <stdio.h>
#include <string.h>

#include "bench/scx_first.h"
#include "cli/cli.h"
#include "policy/policy.h"
#include "scx/scx.h"
#include "engine/engine_open.h"

static const char scx_help[] =
	"usage: egang scx load|status|set P|unload|bench|progs|waits|exec [options] [-- CMD ARGS]\n"
	"\n"
	"  load        load and verify the BPF scheduler and every policy program,\n"
	"              fill the tail-call arrays from the library, attach it in\n"
	"              partial-switch mode and pin it under /sys/fs/bpf/egang\n"
	"  status      sched_ext state, the index, and per slot the transfers into\n"
	"              its policy and the fall-throughs, one line each\n"
	"  set P       switch the policy: one update of the index map (P: index or\n"
	"              name); it takes effect at each CPU's next callback\n"
	"  unload      detach the scheduler, remove the pins, print its exit reason\n"
	"  bench       cost of one index write (map update), alternating two\n"
	"              populated slots: min, median, p99, max in ns; then store to\n"
	"              first transfer (write -> first callback into the new\n"
	"              slot) by a store into the mmapped index and by a map update\n"
	"  progs       every loaded struct_ops program: JIT image and translated\n"
	"              sizes (Gate 1's variants are printed by load)\n"
	"  waits       the gang's acquire latency (runnable -> running) and the\n"
	"              tenants' stints (running -> preempted or slice end) since\n"
	"              the last --reset: n, p10, p50, p90, p99, max in us\n"
	"  exec -- CMD run CMD in SCHED_EXT (its threads inherit the class);\n"
	"              with --gang its threads are the gang for the policies\n"
	"\n"
	"      --cores LIST     the gang's CPUs, slot order (default: all allowed)\n"
	"      --policies FILE  a user library appended to the built-ins\n"
	"      --policy P       load: the index in force at attach (default 0)\n"
	"      --force          set: write an index that names no kernel policy\n"
	"                       (inert by construction: it falls through to the\n"
	"                       default scheduling, counted as fall-throughs)\n"
	"      --gang           exec: name CMD's threads the gang\n"
	"      --reset          waits: zero the histograms after reading\n"
	"      --reps N         bench: writes (default 10000; 2000 at most for\n"
	"                       store to first transfer)\n"
	"      --yielders N     bench: threads in SCHED_EXT yielding in a loop\n"
	"                       while it measures (default 2; 0..64)\n"
	"  -q, --quiet          no confirmation lines\n"
	"  -h, --help           this text\n"
	"\n"
	"Needs a kernel with sched_ext (Linux 6.12+, CONFIG_SCHED_CLASS_EXT=y),\n"
	"root, and an egang built with `make SCX=1`.\n";

typedef struct scx_opts {
	const char *policies, *policy;
	bool force, gang, reset;
	int64_t reps, yielders;
	cli_cpus_t cpus;
	policy_lib_t lib;
	char **cmd; /* exec: the command and its arguments */
	const char *arg; /* set: P */
} scx_opts_t;

/* The actions: EXIT_OK, or an exit code with err_get() saying why (cmd_scx
 * prints it as "scx ACTION: why"). */

static int do_status(scx_opts_t *o)
{
	return scx_print_status(&o->lib, stdout) < 0 ? EXIT_FAIL : EXIT_OK;
}

static int do_bench(scx_opts_t *o)
{
	scx_first_write_t w;
	if (scx_first_write_cost((int)o->reps, &w) < 0)
		return EXIT_FAIL;
	scx_first_print_write(&w, stdout);
	/* store to first transfer, both paths, the same load */
	scx_first_t f[2];
	if (scx_first_run(o->reps < 2000 ? (int)o->reps : 2000, (int)o->yielders, f) < 0)
		return EXIT_FAIL;
	scx_first_print(f, (int)o->yielders, stdout);
	return EXIT_OK;
}

static int do_waits(scx_opts_t *o)
{
	static struct egang_acq a;
	if (scx_acq(&a, o->reset) < 0)
		return EXIT_FAIL;
	scx_print_acq(&a, stdout);
	return EXIT_OK;
}

static int do_progs(scx_opts_t *o)
{
	return scx_print_progs(stdout) < 0 ? EXIT_FAIL : EXIT_OK;
}

static int do_exec(scx_opts_t *o)
{
	/* returns only when it failed */
	return scx_exec(o->cmd, o->gang) == SCX_EXEC_NOT_FOUND ? EXIT_INPUT : EXIT_FAIL;
}

static int do_load(scx_opts_t *o)
{
	const policy_lib_t *lib = &o->lib;
	int idx = 0;
	if (o->policy && (idx = policy_lib_find(lib, o->policy)) < 0)
		return err_set("--policy '%s' names no record (%d in the library)",
			       o->policy, lib->n), EXIT_INPUT;
	if (scx_load(lib, o->cpus.cpu, o->cpus.n, (uint32_t)idx) < 0)
		return EXIT_FAIL;
	log_info("scx: scheduler 'egang' attached, %d policies in the "
		 "library, index %d (%s)", lib->n, idx, lib->rec[idx].name);
	return EXIT_OK;
}

static int do_unload(scx_opts_t *o)
{
	struct egang_exit ex;
	if (scx_unload(&ex) < 0)
		return EXIT_FAIL;
	log_info("scx: detached (exit kind %lld: %s, code %lld)", (long long)ex.kind,
		 scx_exit_name(ex.kind), (long long)ex.exit_code);
	return EXIT_OK;
}

/* set: the user-space guard of the policy library (scx_index_of). */
static int do_set(scx_opts_t *o)
{
	uint32_t idx;
	uint64_t ns;
	if (scx_index_of(&o->lib, o->cpus.cpu, o->cpus.n, o->arg, o->force, &idx) < 0)
		return EXIT_INPUT;
	if (scx_set_index(idx, &ns) < 0)
		return EXIT_FAIL;
	log_info("scx: index %u written (map update %llu ns)", idx,
		 (unsigned long long)ns);
	return EXIT_OK;
}

typedef struct scx_action {
	const char *name;
	const char *operand; /* what the operand is, for "missing ..." */
	bool command;        /* every operand: a command to run */
	const char *flag;    /* the one action-only flag it takes */
	int (*run)(scx_opts_t *o);
} scx_action_t;

static const scx_action_t actions[] = {
	{"load", NULL, false, "policy", do_load},
	{"status", NULL, false, NULL, do_status},
	{"set", "the policy (an index or a name)", false, "force", do_set},
	{"unload", NULL, false, NULL, do_unload},
	{"bench", NULL, false, NULL, do_bench},
	{"progs", NULL, false, NULL, do_progs},
	{"waits", NULL, false, "reset", do_waits},
	{"exec", "the command (egang scx exec [--gang] -- CMD)", true, "gang", do_exec},
};

/* The action argv[1] names; NULL after an error. */
static const scx_action_t *find_action(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		log_error("scx: missing load, status, set, unload, bench, progs, "
			  "waits or exec (see `egang scx --help`)");
		return NULL;
	}
	for (size_t i = 0; i < EG_ARRAY_LEN(actions); i++)
		if (!strcmp(argv[1], actions[i].name))
			return &actions[i];
	log_error("scx: unknown action '%s' (load, status, set, unload, bench, "
		  "progs, waits, exec)", argv[1]);
	return NULL;
}

/* The operands (n of them, the last n words of argv) and the action-only
 * flags (each taken by one action at most); -1 after an error. */
static int check_args(const scx_action_t *a, scx_opts_t *o, char **argv,
		      int argc, const char **ops, int n)
{
	static const char *const flag[] = {"force", "gang", "policy", "reset"};
	const bool given[] = {o->force, o->gang, o->policy != NULL, o->reset};
	int used = a->command ? n : a->operand != NULL;
	const char *stray = NULL;
	for (size_t i = 0; i < EG_ARRAY_LEN(flag) && !stray; i++)
		if (given[i] && (!a->flag || strcmp(a->flag, flag[i])))
			stray = flag[i];
	if (a->operand && n < 1)
		log_error("scx %s: missing %s", a->name, a->operand);
	else if (n > used)
		log_error("scx %s: unexpected argument '%s'", a->name, ops[used]);
	else if (stray)
		log_error("scx %s: --%s does not apply here", a->name, stray);
	else {
		o->arg = ops[0];
		o->cmd = argv + argc - n;
		return 0;
	}
	return -1;
}

int cmd_scx(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(scx_help, stdout);
		return EXIT_OK;
	}
	const scx_action_t *a = find_action(argc, argv);
	if (!a)
		return EXIT_INPUT;
	static scx_opts_t o = {.reps = 10000, .yielders = 2};
	const cli_opt_t opts[] = {
		/* the notice only where the CPUs are the gang's (load) */
		OPT_CPUS("cores", &o.cpus, GANG_MAX_SLOTS, .no_notice = a->run != do_load),
		OPT_STR("policies", 0, &o.policies),
		OPT_STR("policy", 0, &o.policy),
		OPT_FLAG("force", 0, &o.force),
		OPT_FLAG("gang", 0, &o.gang),
		OPT_FLAG("reset", 0, &o.reset),
		OPT_INT("reps", 0, &o.reps, 1, 10000000),
		OPT_INT("yielders", 0, &o.yielders, 0, 64),
		CLI_END,
	};
	/* argv[1] is the action; options end at the first operand, so that
	 * exec's command keeps its own */
	static const char *ops[256];
	const cli_cmd_t cmd = {.name = "scx", .help = scx_help, .opts = opts,
			       .operands = ops, .max_operands = EG_ARRAY_LEN(ops),
			       .stop_at_operand = true};
	int status;
	if (!cli_parse(&cmd, argc - 1, argv + 1, &status))
		return status;
	int n = 0;
	while (n < (int)EG_ARRAY_LEN(ops) && ops[n])
		n++;
	if (check_args(a, &o, argv, argc, ops, n) < 0)
		return EXIT_INPUT;
	/* "scx: why" before the action runs, "scx ACTION: why" from it */
	int rc = scx_require() < 0 ? EXIT_FAIL
		 : engine_policies(&o.lib, o.cpus.n, o.policies) < 0 ? EXIT_INPUT
		 : EXIT_OK;
	if (rc != EXIT_OK)
		log_error("scx: %s", err_get());
	else if ((rc = a->run(&o)) != EXIT_OK)
		log_error("scx %s: %s", a->name, err_get());
	return rc;
}
