/* egang policy: list / show the policy library, set the index in the
 * control word, print its telemetry (src/policy/policy.h, control.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "policy/control.h"
#include "policy/policy.h"
#include "scx/scx.h"
#include "engine/engine_open.h"

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

typedef struct policy_opts {
	const char *policies, *control;
	bool force;
	cli_cpus_t cpus;
	policy_lib_t lib; /* loaded for every action but status */
} policy_opts_t;

/* Opens the control word; NULL after a one-line error. */
static control_t *open_word(const char *path, bool create)
{
	control_t *cw = control_open(path, create);
	if (!cw)
		log_error("%s", err_get());
	return cw;
}

static int do_status(policy_opts_t *o, const char *arg)
{
	(void)arg;
	control_t *cw = open_word(o->control, false);
	if (!cw)
		return EXIT_INPUT;
	control_print_status(cw, o->control, stdout);
	control_close(cw);
	/* the kernel's guard, when egang's sched_ext scheduler is loaded */
	struct egang_kguard g;
	if (scx_loaded() && scx_read_kguard(&g) == 0)
		scx_print_kguard(&g, NULL, stdout);
	return EXIT_OK;
}

/* One `policy list` row's slot set and guard. */
static void list_row(const policy_lib_t *lib, int i)
{
	const policy_t *p = &lib->rec[i];
	char slots[64] = "", guard[160] = "-";
	uint32_t all = lib->n_slots >= 32 ? ~0u : (1u << lib->n_slots) - 1;
	cpumask_t s = cpumask_of_bits(p->width == WIDTH_STATIC ? p->static_mask
							       : all & ~p->reserved_mask);
	cpumask_format(&s, slots, sizeof slots);
	if (p->guard_checks) {
		int k = 0;
		if (p->guard_ttft_p99_ms > 0)
			k = snprintf(guard, sizeof guard, "ttft_p99<=%gms ",
				     p->guard_ttft_p99_ms);
		if (p->guard_queue_depth)
			k += snprintf(guard + k, sizeof guard - (size_t)k,
				      "queue<=%u ", p->guard_queue_depth);
		snprintf(guard + k, sizeof guard - (size_t)k, "x%u", p->guard_checks);
	}
	if (p->kguard_wait_p99_us) {
		size_t k = strcmp(guard, "-") ? strlen(guard) : 0;
		snprintf(guard + k, sizeof guard - k, "%skernel:wait_p99<=%uus x%u/%ums",
			 k ? " " : "", p->kguard_wait_p99_us, p->kguard_windows,
			 p->kguard_window_ms);
	}
	printf("%5d  %-16s %-7s %-7s %-8s %7u  %s%s\n", i, p->name,
	       policy_width_name(p->width), slots, policy_acquire_name(p->acquire),
	       p->keep_ms, guard, i == 0 ? "  (default)" : "");
}

static int do_list(policy_opts_t *o, const char *arg)
{
	(void)arg;
	printf("%5s  %-16s %-7s %-7s %-8s %7s  %s\n", "index", "name", "width",
	       "slots", "acquire", "keep_ms", "guard");
	for (int i = 0; i < o->lib.n; i++)
		list_row(&o->lib, i);
	return EXIT_OK;
}

static int do_show(policy_opts_t *o, const char *arg)
{
	int idx = policy_lib_find(&o->lib, arg);
	if (idx < 0) {
		log_error("policy show: '%s' names no record (indices 0..%d; "
			  "see `egang policy list`)", arg, o->lib.n - 1);
		return EXIT_INPUT;
	}
	printf("# index %d%s\n", idx, idx == 0 ? " (default)" : "");
	policy_print(&o->lib.rec[idx], o->lib.n_slots, stdout);
	return EXIT_OK;
}

static int do_set(policy_opts_t *o, const char *arg)
{
	const policy_lib_t *lib = &o->lib;
	int idx = policy_lib_find(lib, arg);
	uint32_t value;
	if (idx >= 0) {
		value = (uint32_t)idx;
	} else if (o->force) {
		int64_t v;
		if (cli_int("policy set --force", arg, INT32_MIN, UINT32_MAX, &v) < 0)
			return EXIT_INPUT;
		value = (uint32_t)v; /* negative: its two's complement, as a C
					writer storing an int would */
	} else {
		log_error("policy set: '%s' names no record (indices 0..%d); "
			  "--force writes it anyway (it is inert)", arg, lib->n - 1);
		return EXIT_INPUT;
	}
	control_t *cw = open_word(o->control, true);
	if (!cw)
		return EXIT_INPUT;
	/* relaxed: a hint only; the leader's own library decides validity */
	uint32_t live = atomic_load_explicit(&cw->w->n_policies, memory_order_relaxed);
	if (!o->force && live && value >= live) {
		log_error("policy set: index %u is past the running leader's "
			  "library (%u records; does --policies/--cores match the "
			  "server's?); --force writes it anyway", value, live);
		control_close(cw);
		return EXIT_INPUT;
	}
	/* relaxed: hints; a leader that reads the sched_ext scheduler's index
	 * would never see a write to the file's */
	pid_t leader = (pid_t)atomic_load_explicit(&cw->w->leader_pid, memory_order_relaxed);
	if (cw->index == &cw->w->index &&
	    atomic_load_explicit(&cw->w->index_external, memory_order_relaxed) &&
	    leader > 0 && kill(leader, 0) == 0) {
		log_error("policy set: the leader (pid %d) reads the sched_ext "
			  "scheduler's index, which this process cannot map (a "
			  "build without SCX=1, or the scheduler was unloaded)",
			  (int)leader);
		control_close(cw);
		return EXIT_FAIL;
	}
	bool external = cw->index != &cw->w->index;
	control_write_index(cw, value);
	control_close(cw);
	if (!log_quiet)
		fprintf(stderr, "policy index %u (%s) written to %s%s\n", value,
			idx >= 0 ? lib->rec[idx].name : "no record: inert", o->control,
			external ? " (its index: the sched_ext scheduler's page)" : "");
	return EXIT_OK;
}

typedef struct policy_action {
	const char *name;
	bool operand; /* takes P */
	bool library; /* needs the library */
	int (*run)(policy_opts_t *o, const char *arg);
} policy_action_t;

static const policy_action_t actions[] = {
	{"list", false, true, do_list},
	{"show", true, true, do_show},
	{"set", true, true, do_set},
	{"status", false, false, do_status},
};

/* The action named by ops[0] with its operand checked; NULL after an
 * error. */
static const policy_action_t *find_action(const char *const *ops)
{
	if (!ops[0]) {
		log_error("policy: missing list, show, set or status (see `egang "
			  "policy --help`)");
		return NULL;
	}
	const policy_action_t *a = NULL;
	for (size_t i = 0; i < EG_ARRAY_LEN(actions) && !a; i++)
		if (!strcmp(ops[0], actions[i].name))
			a = &actions[i];
	if (!a)
		log_error("policy: unknown action '%s' (list, show, set, status)", ops[0]);
	else if (a->operand && !ops[1])
		log_error("policy %s: missing the policy (an index or a name)", a->name);
	else if (!a->operand && ops[1])
		log_error("policy %s: unexpected argument '%s'", a->name, ops[1]);
	else
		return a;
	return NULL;
}

int cmd_policy(int argc, char **argv)
{
	static policy_opts_t o;
	const cli_opt_t opts[] = {
		OPT_STR("policies", 0, &o.policies),
		OPT_CPUS("cores", &o.cpus, GANG_MAX_SLOTS, .no_notice = true),
		OPT_STR("control", 0, &o.control),
		OPT_FLAG("force", 0, &o.force),
		CLI_END,
	};
	const char *ops[2] = {0};
	const cli_cmd_t cmd = {.name = "policy", .help = policy_help, .opts = opts,
			       .operands = ops, .max_operands = 2};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	const policy_action_t *a = find_action(ops);
	if (!a)
		return EXIT_INPUT;
	if (o.force && a->run != do_set) {
		log_error("policy %s: --force is only for set", a->name);
		return EXIT_INPUT;
	}
	char pathbuf[4096];
	if (!o.control)
		o.control = control_default_path(pathbuf, sizeof pathbuf);
	if (a->library && engine_policies(&o.lib, o.cpus.n, o.policies) < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	return a->run(&o, ops[1]);
}
