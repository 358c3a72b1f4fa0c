/* egang control: a controller process (src/policy/controller.h). Every
 * period it reads the control word's telemetry and writes a policy index
 * chosen by the oracle, the UCB1 bandit or the agent.
 *
 * Output: one "control t=... index=N reason=..." line a period (stdout,
 * unless -q) and one "control summary: ..." line at the end (always).
 * SIGINT/SIGTERM end the run cleanly with the summary. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "engine/agent_model.h"
#include "cli/cli.h"
#include "policy/control.h"
#include "policy/controller.h"
#include "policy/policy.h"
#include "engine/engine.h"
#include "engine/engine_open.h"

static const char control_help[] =
	"usage: egang control --control PATH (--oracle SCHEDULE | --bandit |\n"
	"                     --agent -m MODEL [-z TOK]) [options]\n"
	"\n"
	"A controller: every period it reads the control word's telemetry and\n"
	"writes a policy index (see `egang policy --help`).\n"
	"\n"
	"      --control PATH     the control word file (required; created 0600\n"
	"                         if absent, as `egang policy set` does)\n"
	"      --oracle SCHEDULE  follow phases: \"0-10s:latency,10-20s:2\" or a\n"
	"                         file of \"START_S END_S POLICY\" lines (POLICY:\n"
	"                         a name or an index; '#' comments). Without\n"
	"                         --seconds it ends at the last phase's end\n"
	"      --bandit           UCB1 over the library's records. Reward in\n"
	"                         [0,1]: w*r_ttft + (1-w)*r_tenant, r_ttft = best\n"
	"                         TTFT p50 seen / the arm's TTFT p50, r_tenant =\n"
	"                         tenant units/s / best rate seen (--tenant-units)\n"
	"                         or the mean tenant_width / n_slots (telemetry).\n"
	"                         Periods without a new generation are skipped\n"
	"      --agent            ask a model (-m) for one digit; decoding is\n"
	"                         constrained to valid indices (at most 0..9)\n"
	"  -m, --model PATH       the agent's model (GGUF or llama2.c)\n"
	"  -z, --tokenizer PATH   tokenizer.bin for a llama2.c checkpoint\n"
	"      --chat-template NAME  the agent's prompt as a user message of this\n"
	"                         template (chatml, llama2, llama3, llama31, zephyr,\n"
	"                         qwen3, gemma3) or none: plain text (default: the\n"
	"                         model's tokenizer.chat_template when known)\n"
	"      --period-ms N      the period (default 100; 1..60000)\n"
	"      --seconds S        run this long (default: until SIGINT/SIGTERM;\n"
	"                         oracle: until the schedule ends)\n"
	"      --hold N           bandit: periods a choice is held (default 1)\n"
	"      --ttft-weight W    bandit: weight of r_ttft (default 0.5, 0..1)\n"
	"      --tenant-units FILE  bandit: a file holding the tenant's\n"
	"                         cumulative work units (one number)\n"
	"      --seed N           bandit: order of the first tries (default 1)\n"
	"      --policies FILE    a user library appended to the built-ins\n"
	"      --cores LIST       the gang's CPUs (use the server's --cores)\n"
	"  -q, --quiet            no per-period lines (the summary stays)\n"
	"  -h, --help             this text\n";

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

typedef struct control_opts {
	const char *control, *oracle, *model, *tok, *units, *policies, *tmpl;
	bool bandit, agent;
	int64_t period_ms, hold, seed;
	double seconds, w_ttft;
	cli_cpus_t cpus;
} control_opts_t;

/* The combinations cli_parse cannot check; the controller's kind. */
static int check_opts(const control_opts_t *o, controller_kind_t *kind)
{
	int n_modes = (o->oracle != NULL) + o->bandit + o->agent;
	if (n_modes != 1) {
		log_error("control: %s", n_modes ? "give only one of --oracle, "
			  "--bandit, --agent" : "missing --oracle SCHEDULE, "
			  "--bandit or --agent");
		return -1;
	}
	*kind = o->oracle ? CONTROLLER_ORACLE : o->bandit ? CONTROLLER_BANDIT
							  : CONTROLLER_AGENT;
	const char *bad = NULL;
	if (o->agent && !o->model)
		bad = "control --agent: missing -m MODEL";
	else if (!o->agent && (o->model || o->tok || o->tmpl))
		bad = "control: -m/-z/--chat-template are only for --agent";
	else if (!o->bandit && o->units)
		bad = "control: --tenant-units is only for --bandit";
	if (bad)
		log_error("%s", bad);
	return bad ? -1 : 0;
}

/* The arms: the library, cut to the running leader's if it is smaller. */
static int arms(const policy_lib_t *lib, control_t *cw)
{
	controller_snap_t sn;
	controller_snap_read(cw->w, &sn);
	if (!sn.n_policies || (int)sn.n_policies == lib->n)
		return lib->n;
	int n = sn.n_policies < (uint32_t)lib->n ? (int)sn.n_policies : lib->n;
	log_info("control: the leader's library has %u records, this one %d "
		 "(does --policies/--cores match the server's?); using the "
		 "first %d", sn.n_policies, lib->n, n);
	return n;
}

static int run(const control_opts_t *o, controller_config_t *cc, control_t *cw)
{
	static controller_t ctl;
	int status = EXIT_OK;
	static agent_model_t am;
	if (cc->kind == CONTROLLER_AGENT) {
		if (agent_model_open(&am, o->model, o->tok, o->cpus.cpu[0], o->tmpl,
				     &status) < 0) {
			log_error("control --agent: %s", err_get());
			return status;
		}
		log_info("control --agent: prompts through chat template %s",
			 agent_model_template(&am));
		cc->tok = am.e->m->tok;
		cc->vocab = am.e->m->cfg.vocab_size;
		cc->logits = agent_model_logits;
		cc->user = &am;
	}
	if (controller_init(&ctl, cc) < 0) {
		log_error("%s%s", o->agent ? "control --agent: " : "", err_get());
		status = EXIT_INPUT;
	} else {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal; /* no SA_RESTART: nanosleep returns */
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		controller_summary_t s;
		if (controller_run(&ctl, cw, o->period_ms, o->seconds, &stop_flag,
				   log_quiet ? NULL : stdout, &s) < 0) {
			log_error("control --agent: %s", err_get());
			status = EXIT_FAIL;
		}
		printf("control summary: decisions=%llu, switches=%llu, "
		       "invalid_raw=%llu, decision_ms p50=%.3f p99=%.3f, "
		       "skipped=%llu, mode=%s\n", (unsigned long long)s.decisions,
		       (unsigned long long)s.switches,
		       (unsigned long long)s.invalid_raw, s.decision_ms_p50,
		       s.decision_ms_p99, (unsigned long long)s.skipped,
		       controller_kind_name(cc->kind));
		fflush(stdout);
	}
	controller_free(&ctl);
	if (am.e)
		agent_model_close(&am);
	return status;
}

int cmd_control(int argc, char **argv)
{
	control_opts_t o = {.period_ms = 100, .hold = 1, .seed = 1, .w_ttft = 0.5};
	const cli_opt_t opts[] = {
		OPT_STR("control", 0, &o.control, .required = true),
		OPT_STR("oracle", 0, &o.oracle, .empty_ok = true),
		OPT_FLAG("bandit", 0, &o.bandit),
		OPT_FLAG("agent", 0, &o.agent),
		OPT_STR("model", 'm', &o.model),
		OPT_STR("tokenizer", 'z', &o.tok),
		OPT_STR("chat-template", 0, &o.tmpl),
		OPT_INT("period-ms", 0, &o.period_ms, 1, 60000),
		OPT_FLOAT("seconds", 0, &o.seconds, 0.001, 1e7),
		OPT_INT("hold", 0, &o.hold, 1, 1000000),
		OPT_FLOAT("ttft-weight", 0, &o.w_ttft, 0, 1),
		OPT_STR("tenant-units", 0, &o.units),
		OPT_INT("seed", 0, &o.seed, 0, INT64_MAX),
		OPT_STR("policies", 0, &o.policies),
		OPT_CPUS("cores", &o.cpus, GANG_MAX_SLOTS, .no_notice = true),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "control", .help = control_help, .opts = opts};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	controller_kind_t kind;
	if (check_opts(&o, &kind) < 0)
		return EXIT_INPUT;
	static policy_lib_t lib;
	if (engine_policies(&lib, o.cpus.n, o.policies) < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	controller_config_t cc = {
		.kind = kind, .lib = &lib, .n_arms = lib.n, .schedule = o.oracle,
		.bandit = {.hold = o.hold, .w_ttft = o.w_ttft,
			   .seed = (uint64_t)o.seed, .units_path = o.units,
			   .n_slots = (uint32_t)lib.n_slots},
	};
	/* the schedule and the units file are checked before the control
	 * word is created */
	static controller_t check;
	int bad = kind != CONTROLLER_AGENT && controller_init(&check, &cc) < 0;
	controller_free(&check);
	if (bad) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	control_t *cw = control_open(o.control, true);
	if (!cw) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	cc.n_arms = arms(&lib, cw);
	status = run(&o, &cc, cw);
	control_close(cw);
	return status;
}
