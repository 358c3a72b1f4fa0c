/* egang scx: the sched_ext backend (src/scx/scx.h, bpf/egang.bpf.c): load
 * the BPF scheduler, show its state and counters, switch the policy index
 * with one map update, detach; run a command in SCHED_EXT. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "policy/policy.h"
#include "scx/scx.h"

static const char scx_help[] =
	"usage: egang scx load|status|set P|unload|bench|exec [options] [-- CMD ARGS]\n"
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
	"              populated slots: min, median, p99, max in ns\n"
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
	"      --reps N         bench: writes (default 10000)\n"
	"  -q, --quiet          no confirmation lines\n"
	"  -h, --help           this text\n"
	"\n"
	"Needs a kernel with sched_ext (Linux 6.12+, CONFIG_SCHED_CLASS_EXT=y),\n"
	"root, and an egang built with `make SCX=1`.\n";

static int lib_setup(policy_lib_t *lib, const char *cores, const char *file,
		     int *cpus, int *n)
{
	*n = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (*n < 0) {
		log_error("scx: %s", err_get());
		return -1;
	}
	policy_lib_builtin(lib, *n);
	if (file && policy_lib_load(lib, file) < 0) {
		log_error("scx: --policies %s", err_get());
		return -1;
	}
	return 0;
}

/* enum scx_exit_kind (kernel/sched/ext.c, Linux 6.12) */
static const char *scx_exit_name(int64_t kind)
{
	switch (kind) {
	case 0: return "none";
	case 1: return "done";
	case 64: return "unregistered by user space";
	case 65: return "unregistered by BPF";
	case 66: return "unregistered by the kernel";
	case 67: return "sysrq";
	case 1024: return "error";
	case 1025: return "error raised by BPF";
	case 1026: return "runnable task stall";
	default: return "?";
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int do_status(const policy_lib_t *lib)
{
	char state[64], ops[128];
	if (scx_state(state, sizeof state) < 0) {
		log_error("scx status: %s", err_get());
		return EXIT_FAIL;
	}
	scx_root_ops(ops, sizeof ops);
	printf("state=%s\nops=%s\nloaded=%s\n", state, ops, scx_loaded() ? "yes" : "no");
	if (!scx_loaded())
		return EXIT_OK;
	static scx_counts_t c;
	if (scx_read(&c) < 0) {
		log_error("scx status: %s", err_get());
		return EXIT_FAIL;
	}
	printf("index=%u\ngang_tgid=%u\n", c.index, c.gang);
	uint64_t tx = 0, tf = 0;
	for (int s = 0; s <= EGANG_SLOTS; s++) {
		uint64_t x = 0, f = 0;
		for (int cb = 0; cb < EGANG_CB_COUNT; cb++) {
			x += s < EGANG_SLOTS ? c.xfer[s][cb] : 0;
			f += c.fall[s][cb];
		}
		tx += x;
		tf += f;
		bool populated = s < EGANG_SLOTS && c.krec[s].kind != EGANG_KIND_NONE;
		/* the out-of-range line always: scripts read its count */
		if (!populated && !x && !f && !(s < lib->n) && s < EGANG_SLOTS)
			continue;
		if (s == EGANG_SLOTS)
			printf("slot=out_of_range transfers=0 fallthroughs=%llu\n",
			       (unsigned long long)f);
		else
			printf("slot=%d name=%s kind=%s transfers=%llu fallthroughs=%llu "
			       "select=%llu enqueue=%llu dispatch=%llu\n", s,
			       s < lib->n ? lib->rec[s].name : "-",
			       scx_kind_name(c.krec[s].kind), (unsigned long long)x,
			       (unsigned long long)f,
			       (unsigned long long)(c.xfer[s][0] + c.fall[s][0]),
			       (unsigned long long)(c.xfer[s][1] + c.fall[s][1]),
			       (unsigned long long)(c.xfer[s][2] + c.fall[s][2]));
	}
	printf("transfers=%llu\nfallthroughs=%llu\n", (unsigned long long)tx,
	       (unsigned long long)tf);
	return EXIT_OK;
}

static int do_bench(const policy_lib_t *lib, int reps)
{
	static scx_counts_t c;
	if (scx_read(&c) < 0) {
		log_error("scx bench: %s", err_get());
		return EXIT_FAIL;
	}
	/* two populated slots to alternate between */
	int a = -1, b = -1;
	for (int s = 0; s < EGANG_SLOTS && b < 0; s++)
		if (c.krec[s].kind != EGANG_KIND_NONE) {
			if (a < 0)
				a = s;
			else
				b = s;
		}
	if (b < 0)
		b = a;
	uint64_t *ns = calloc((size_t)reps, sizeof *ns);
	if (!ns) {
		log_error("scx bench: out of memory");
		return EXIT_FAIL;
	}
	for (int i = 0; i < reps; i++)
		if (scx_set_index((uint32_t)(i & 1 ? b : a), &ns[i]) < 0) {
			log_error("scx bench: %s", err_get());
			free(ns);
			return EXIT_FAIL;
		}
	scx_set_index(c.index, NULL);
	qsort(ns, (size_t)reps, sizeof *ns, u64_cmp);
	size_t p99 = (size_t)reps * 99 / 100;
	if (p99 >= (size_t)reps)
		p99 = (size_t)reps - 1;
	printf("scx switch: %d index writes (map update, slots %d<->%d, open "
	       "excluded): min %llu ns, median %llu ns, p99 %llu ns, max %llu ns\n",
	       reps, a, b, (unsigned long long)ns[0],
	       (unsigned long long)ns[reps / 2], (unsigned long long)ns[p99],
	       (unsigned long long)ns[reps - 1]);
	free(ns);
	return EXIT_OK;
}

int cmd_scx(int argc, char **argv)
{
	static const struct option opts[] = {
		{"cores", required_argument, 0, 'C'},
		{"policies", required_argument, 0, 'P'},
		{"policy", required_argument, 0, 'p'},
		{"force", no_argument, 0, 'f'},
		{"gang", no_argument, 0, 'g'},
		{"reps", required_argument, 0, 'r'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(scx_help, stdout);
		return EXIT_OK;
	}
	if (argc < 2 || argv[1][0] == '-') {
		log_error("scx: missing load, status, set, unload, bench or exec "
			  "(see `egang scx --help`)");
		return EXIT_INPUT;
	}
	const char *what = argv[1];
	static const char *const actions[] = {"load", "status", "set", "unload",
					      "bench", "exec"};
	bool known = false;
	for (size_t i = 0; i < EG_ARRAY_LEN(actions); i++)
		known |= !strcmp(what, actions[i]);
	if (!known) {
		log_error("scx: unknown action '%s' (load, status, set, unload, "
			  "bench, exec)", what);
		return EXIT_INPUT;
	}
	const char *cores = NULL, *file = NULL, *policy = NULL;
	bool force = false, gang = false;
	int64_t reps = 10000;
	int c;
	/* argv[1] is the action; '+': exec's command keeps its own options */
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+qh", opts, NULL)) != -1) {
		switch (c) {
		case 'C': cores = optarg; break;
		case 'P': file = optarg; break;
		case 'p': policy = optarg; break;
		case 'f': force = true; break;
		case 'g': gang = true; break;
		case 'r':
			if (cli_int("--reps", optarg, 1, 10000000, &reps) < 0)
				return EXIT_INPUT;
			break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(scx_help, stdout); return EXIT_OK;
		default: return cli_usage_error("scx", argv[optind - 1]);
		}
	}
	bool is_set = !strcmp(what, "set"), is_exec = !strcmp(what, "exec");
	const char *arg = NULL;
	if (is_set) {
		if (optind >= argc) {
			log_error("scx set: missing the policy (an index or a name)");
			return EXIT_INPUT;
		}
		arg = argv[optind++];
	}
	if (is_exec && optind >= argc) {
		log_error("scx exec: missing the command (egang scx exec [--gang] -- CMD)");
		return EXIT_INPUT;
	}
	if (!is_exec && optind < argc) {
		log_error("scx %s: unexpected argument '%s'", what, argv[optind]);
		return EXIT_INPUT;
	}
	if ((force && !is_set) || (gang && !is_exec) ||
	    (policy && strcmp(what, "load"))) {
		log_error("scx %s: --%s does not apply here", what,
			  force && !is_set ? "force" : gang && !is_exec ? "gang" : "policy");
		return EXIT_INPUT;
	}
	if (!scx_built()) {
		log_error("scx: this build has no sched_ext support (rebuild with "
			  "`make SCX=1`; needs libbpf >= 1.4, bpftool, clang-19: "
			  "tools/deps-scx.sh)");
		return EXIT_FAIL;
	}
	static policy_lib_t lib;
	int cpus[GANG_MAX_SLOTS], n;
	if (lib_setup(&lib, cores, file, cpus, &n) < 0)
		return EXIT_INPUT;

	if (is_exec) {
		if (scx_enter(0) < 0) {
			log_error("scx exec: %s", err_get());
			return EXIT_FAIL;
		}
		if (gang && scx_set_gang((uint32_t)getpid()) < 0) {
			log_error("scx exec: %s", err_get());
			return EXIT_FAIL;
		}
		execvp(argv[optind], argv + optind);
		log_error("scx exec: %s: %s", argv[optind], strerror(errno));
		return errno == ENOENT ? EXIT_INPUT : EXIT_FAIL;
	}
	if (!strcmp(what, "status"))
		return do_status(&lib);
	if (!strcmp(what, "bench"))
		return do_bench(&lib, (int)reps);
	if (!strcmp(what, "load")) {
		int idx = 0;
		if (policy && (idx = policy_lib_find(&lib, policy)) < 0) {
			log_error("scx load: --policy '%s' names no record (%d in the "
				  "library)", policy, lib.n);
			return EXIT_INPUT;
		}
		if (scx_load(&lib, cpus, n, (uint32_t)idx) < 0) {
			log_error("scx load: %s", err_get());
			return EXIT_FAIL;
		}
		log_info("scx: scheduler 'egang' attached, %d policies in the "
			 "library, index %d (%s)", lib.n, idx, lib.rec[idx].name);
		return EXIT_OK;
	}
	if (!strcmp(what, "unload")) {
		struct egang_exit ex;
		if (scx_unload(&ex) < 0) {
			log_error("scx unload: %s", err_get());
			return EXIT_FAIL;
		}
		log_info("scx: detached (exit kind %lld: %s, code %lld)",
			 (long long)ex.kind, scx_exit_name(ex.kind),
			 (long long)ex.exit_code);
		return EXIT_OK;
	}
	/* set: the user-space guard of the policy library; --force skips it
	 * and the kernel side stays inert by construction */
	int64_t idx = policy_lib_find(&lib, arg);
	if (idx >= 0) {
		struct egang_krec r;
		scx_krec_from_policy(&lib.rec[idx], cpus, n, &r);
		if (r.kind == EGANG_KIND_NONE && !force) {
			log_error("scx set: '%s' (index %lld) has no kernel form (its "
				  "width is measured in user space); --force writes it "
				  "anyway (falls through)", lib.rec[idx].name, (long long)idx);
			return EXIT_INPUT;
		}
	} else if (!force) {
		log_error("scx set: '%s' names no record (0..%d or a name; --force "
			  "writes any index, inert)", arg, lib.n - 1);
		return EXIT_INPUT;
	} else if (cli_int("scx set", arg, 0, UINT32_MAX, &idx) < 0) {
		return EXIT_INPUT;
	}
	uint64_t ns;
	if (scx_set_index((uint32_t)idx, &ns) < 0) {
		log_error("scx set: %s", err_get());
		return EXIT_FAIL;
	}
	log_info("scx: index %lld written (map update %llu ns)", (long long)idx,
		 (unsigned long long)ns);
	return EXIT_OK;
}
