/* egang policy: list / show the policy library, set the index in the
 * control word, print its telemetry (src/policy/policy.h, control.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "policy/control.h"
#include "policy/policy.h"

static const char policy_help[] =
	"usage: egang policy list|show P|set P|status [options]\n"
	"\n"
	"  list               the library: built-ins, then --policies records\n"
	"  show P             one record's fields (P: index or name)\n"
	"  set P              write the index into the control word; the leader\n"
	"                     applies it at its next token\n"
	"  status             the control word's telemetry, one key=value a line\n"
	"\n"
	"      --policies FILE  a user library (INI: [name] then key = value\n"
	"                       lines; `egang policy show` prints the syntax)\n"
	"      --cores LIST     the gang's CPUs; slots and static:K follow them\n"
	"                       (default: all allowed; use the server's --cores)\n"
	"      --control PATH   control word file (default $XDG_RUNTIME_DIR/\n"
	"                       egang-control or /dev/shm/egang-control-$UID)\n"
	"      --force          set: write an index that names no record (it is\n"
	"                       inert: the leader uses record 0 and counts it;\n"
	"                       a negative value goes after --: set --force -- -1)\n"
	"  -q, --quiet          set: no confirmation line\n"
	"  -h, --help           this text\n";

/* Library for the gang --cores names (+ --policies). */
static int lib_setup(policy_lib_t *lib, const char *cores, const char *file)
{
	int cpus[GANG_MAX_SLOTS];
	int n = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (n < 0) {
		log_error("%s", err_get());
		return -1;
	}
	policy_lib_builtin(lib, n);
	if (file && policy_lib_load(lib, file) < 0) {
		log_error("--policies %s", err_get());
		return -1;
	}
	return 0;
}

static void print_status(const control_word_t *w, const char *path)
{
	control_word_t *c = (control_word_t *)w;
#define LD(f) (unsigned long long)atomic_load_explicit(&c->f, memory_order_relaxed)
	/* relaxed loads: each field stands alone (control.h) */
	printf("control=%s\nindex=%llu\neffective=%llu\nfallback=%llu\n"
	       "n_policies=%llu\nn_slots=%llu\ntokens=%llu\ngenerations=%llu\n"
	       "invalid_reads=%llu\nguard_fallbacks=%llu\napplied_seq=%llu\n"
	       "applied_raw=%llu\nqueue_depth=%llu\nttft_p50_us=%llu\n"
	       "ttft_p99_us=%llu\ndecode_tok_s=%.3f\ngang_width=%llu\n"
	       "tenant_width=%llu\nleader_pid=%llu\n",
	       path, LD(index), LD(effective), LD(fallback), LD(n_policies),
	       LD(n_slots), LD(tokens), LD(generations), LD(invalid_reads),
	       LD(guard_fallbacks), LD(applied_seq), LD(applied_raw),
	       LD(queue_depth), LD(ttft_p50_us), LD(ttft_p99_us),
	       (double)LD(decode_mtok_s) / 1e3, LD(gang_width), LD(tenant_width),
	       LD(leader_pid));
#undef LD
}

int cmd_policy(int argc, char **argv)
{
	static const struct option opts[] = {
		{"policies", required_argument, 0, 'P'},
		{"cores", required_argument, 0, 'C'},
		{"control", required_argument, 0, 'c'},
		{"force", no_argument, 0, 'f'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *file = NULL, *cores = NULL, *control = NULL;
	bool force = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'P': file = optarg; break;
		case 'C': cores = optarg; break;
		case 'c': control = optarg; break;
		case 'f': force = true; break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(policy_help, stdout); return EXIT_OK;
		default: return cli_usage_error("policy", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		log_error("policy: missing list, show, set or status (see `egang "
			  "policy --help`)");
		return EXIT_INPUT;
	}
	const char *what = argv[optind++];
	bool needs_arg = !strcmp(what, "show") || !strcmp(what, "set");
	if (!needs_arg && strcmp(what, "list") && strcmp(what, "status")) {
		log_error("policy: unknown action '%s' (list, show, set, status)", what);
		return EXIT_INPUT;
	}
	if (needs_arg && optind >= argc) {
		log_error("policy %s: missing the policy (an index or a name)", what);
		return EXIT_INPUT;
	}
	const char *arg = needs_arg ? argv[optind++] : NULL;
	if (optind < argc) {
		log_error("policy %s: unexpected argument '%s'", what, argv[optind]);
		return EXIT_INPUT;
	}
	if (force && strcmp(what, "set")) {
		log_error("policy %s: --force is only for set", what);
		return EXIT_INPUT;
	}
	char pathbuf[4096];
	if (!control)
		control = control_default_path(pathbuf, sizeof pathbuf);
	if (!strcmp(what, "status")) {
		control_t *cw = control_open(control, false);
		if (!cw) {
			log_error("%s", err_get());
			return EXIT_INPUT;
		}
		print_status(cw->w, control);
		control_close(cw);
		return EXIT_OK;
	}
	static policy_lib_t lib;
	if (lib_setup(&lib, cores, file) < 0)
		return EXIT_INPUT;
	if (!strcmp(what, "list")) {
		printf("%5s  %-16s %-7s %-7s %-8s %7s  %s\n", "index", "name", "width",
		       "slots", "acquire", "keep_ms", "guard");
		for (int i = 0; i < lib.n; i++) {
			const policy_t *p = &lib.rec[i];
			char slots[64] = "", guard[96] = "-";
			uint32_t all = lib.n_slots >= 32 ? ~0u : (1u << lib.n_slots) - 1;
			if (p->width == WIDTH_STATIC)
				cpumask_format(p->static_mask, slots, sizeof slots);
			else
				cpumask_format(all & ~p->reserved_mask, slots, sizeof slots);
			if (p->guard_checks) {
				int k = 0;
				if (p->guard_ttft_p99_ms > 0)
					k = snprintf(guard, sizeof guard, "ttft_p99<=%gms ",
						     p->guard_ttft_p99_ms);
				if (p->guard_queue_depth)
					k += snprintf(guard + k, sizeof guard - (size_t)k,
						      "queue<=%u ", p->guard_queue_depth);
				snprintf(guard + k, sizeof guard - (size_t)k, "x%u",
					 p->guard_checks);
			}
			printf("%5d  %-16s %-7s %-7s %-8s %7u  %s%s\n", i, p->name,
			       policy_width_name(p->width), slots,
			       policy_acquire_name(p->acquire), p->keep_ms, guard,
			       i == 0 ? "  (default)" : "");
		}
		return EXIT_OK;
	}
	int idx = policy_lib_find(&lib, arg);
	if (!strcmp(what, "show")) {
		if (idx < 0) {
			log_error("policy show: '%s' names no record (indices 0..%d; "
				  "see `egang policy list`)", arg, lib.n - 1);
			return EXIT_INPUT;
		}
		printf("# index %d%s\n", idx, idx == 0 ? " (default)" : "");
		policy_print(&lib.rec[idx], lib.n_slots, stdout);
		return EXIT_OK;
	}
	/* set */
	uint32_t value;
	if (idx >= 0) {
		value = (uint32_t)idx;
	} else if (force) {
		int64_t v;
		if (cli_int("policy set --force", arg, INT32_MIN, UINT32_MAX, &v) < 0)
			return EXIT_INPUT;
		value = (uint32_t)v; /* negative: its two's complement, as a C
					writer storing an int would */
	} else {
		log_error("policy set: '%s' names no record (indices 0..%d); "
			  "--force writes it anyway (it is inert)", arg, lib.n - 1);
		return EXIT_INPUT;
	}
	control_t *cw = control_open(control, true);
	if (!cw) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	/* relaxed: a hint only; the leader's own library decides validity */
	uint32_t live = atomic_load_explicit(&cw->w->n_policies, memory_order_relaxed);
	if (!force && live && value >= live) {
		log_error("policy set: index %u is past the running leader's "
			  "library (%u records; does --policies/--cores match the "
			  "server's?); --force writes it anyway", value, live);
		control_close(cw);
		return EXIT_INPUT;
	}
	control_write_index(cw, value);
	control_close(cw);
	if (!log_quiet)
		fprintf(stderr, "policy index %u (%s) written to %s\n", value,
			idx >= 0 ? lib.rec[idx].name : "no record: inert", control);
	return EXIT_OK;
}
