/* egang generate: one prompt, streamed text, optional gang membership
 * experiments and traces. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "model/model.h"
#include "policy/control.h"
#include "policy/policy.h"
#include "server/engine.h"

static const char generate_help[] =
	"usage: egang generate -m MODEL [options]\n"
	"\n"
	"Generates text and streams it to stdout; speed goes to stderr.\n"
	"\n"
	"  -m, --model FILE        GGUF file or llama2.c checkpoint (required)\n"
	"  -z, --tokenizer FILE    llama2.c tokenizer.bin (required for .bin models)\n"
	"  -p, --prompt TEXT       prompt (default: empty, BOS only)\n"
	"      --prompt-ids LIST   the prompt as token ids, comma-separated, used as\n"
	"                          given (no BOS added); instead of -p\n"
	"  -n, --n-predict N       tokens to generate after the prompt (default 256);\n"
	"                          llama2.c's -n counts the prompt too: its -n S is\n"
	"                          egang's -n S+1-(prompt tokens incl. BOS)\n"
	"  -t, --temp T            temperature, 0 = greedy (default 0.8)\n"
	"      --top-k K           keep the K most likely tokens (default 0 = off)\n"
	"      --top-p P           nucleus sampling threshold (default 0.9; 1 = off)\n"
	"  -s, --seed S            sampler seed (default 42)\n"
	"      --sampler MODE      egang (default) or llama2c (run.c's exact sampler)\n"
	"      --ctx N             context length (default: the model's, at most 4096)\n"
	"      --logits-hash FILE  write 'position token hash' per generated token\n"
	"      --cores LIST        gang CPUs, e.g. 0-1 or 0,2 (default: all allowed;\n"
	"                          1 CPU = run serially on this thread)\n"
	"      --membership SPEC   random:SEED  a random requested mask before each token\n"
	"                          file:PATH    one mask per token (hex or decimal),\n"
	"                                       the last repeated\n"
	"                          flip:MS      another thread toggles random slots every\n"
	"                                       MS milliseconds\n"
	"      --control PATH      read the policy index from this control word before\n"
	"                          every token (`egang policy set` writes it; created\n"
	"                          0600 if absent); not with --membership\n"
	"      --policies FILE     a user policy library after the built-ins (with\n"
	"                          --control; see `egang policy --help`)\n"
	"      --trace FILE        one line per token: tag, participant mask, time (us)\n"
	"      --ids FILE          write 'prompt_ids: ...' and 'sequence_ids: ...' lines\n"
	"                          (the format of ../shared/models/expected/*.ids)\n"
	"      --no-echo           do not print the prompt's text\n"
	"      --stop STR          stop before STR is generated (repeatable, up to 8)\n"
	"  -q, --quiet             no speed report\n"
	"  -h, --help              this text\n";

typedef enum membership_kind {
	MEMBER_FIXED,
	MEMBER_RANDOM,
	MEMBER_FILE,
	MEMBER_FLIP,
	MEMBER_COUNT
} membership_kind_t;

typedef struct run_ctx {
	gang_t *g;
	membership_kind_t kind;
	rng_t rng;
	uint32_t *masks; /* file: */
	size_t n_masks;
	uint32_t flip_ms;
	_Atomic bool flip_stop;
	FILE *trace;
	uint64_t last_ns;
	uint64_t tokens;
	policy_rt_t *rt; /* --control: the policy runtime */
} run_ctx_t;

static int on_text(void *user, const char *s, size_t n)
{
	(void)user;
	fwrite(s, 1, n, stdout);
	fflush(stdout);
	return 0;
}

static void before_token(void *user, uint64_t index)
{
	run_ctx_t *rc = user;
	if (!rc->g) {
		if (rc->rt)
			policy_rt_before_token(rc->rt, index);
		return;
	}
	if (rc->trace && index > 0) {
		gang_stats_t st;
		uint64_t now = time_now_ns();
		gang_stats(rc->g, &st);
		fprintf(rc->trace, "%llu %#x %.1f\n",
			(unsigned long long)st.tokens, st.last_mask,
			(double)(now - rc->last_ns) / 1e3);
	}
	rc->last_ns = time_now_ns();
	if (rc->rt) {
		policy_rt_before_token(rc->rt, index);
		return;
	}
	uint32_t all = gang_all(rc->g);
	switch (rc->kind) {
	case MEMBER_RANDOM:
		gang_request(rc->g, (uint32_t)rng_next(&rc->rng) & all);
		break;
	case MEMBER_FILE: {
		size_t i = index < rc->n_masks ? index : rc->n_masks - 1;
		gang_request(rc->g, rc->masks[i] & all);
		break;
	}
	default:
		break;
	}
}

static void *flip_main(void *arg)
{
	run_ctx_t *rc = arg;
	uint32_t all = gang_all(rc->g);
	while (!atomic_load(&rc->flip_stop)) {
		usleep(rc->flip_ms * 1000u);
		uint32_t bit = 1u << (rng_next(&rc->rng) % (uint64_t)gang_n_slots(rc->g));
		gang_request(rc->g, (gang_requested(rc->g) ^ bit) & all);
	}
	return NULL;
}

static int load_masks(run_ctx_t *rc, const char *path)
{
	size_t len;
	char *text = file_read_all(path, &len);
	if (!text)
		return err_wrap("--membership file");
	size_t cap = 64, line = 0;
	rc->masks = malloc(cap * sizeof *rc->masks);
	for (char *save = NULL, *tok = strtok_r(text, "\n", &save); tok;
	     tok = strtok_r(NULL, "\n", &save)) {
		line++;
		char *end;
		errno = 0;
		unsigned long v = strtoul(tok, &end, 0);
		while (*end == ' ' || *end == '\r' || *end == '\t')
			end++;
		if (end == tok || *end || errno || v > 0xffffffffu) {
			err_set("--membership file %s: line %zu: '%.40s' is not "
				"a mask", path, line, tok);
			free(text);
			return -1;
		}
		if (rc->n_masks == cap)
			rc->masks = realloc(rc->masks, (cap *= 2) * sizeof *rc->masks);
		rc->masks[rc->n_masks++] = (uint32_t)v;
	}
	free(text);
	if (!rc->n_masks)
		return err_set("--membership file %s: no masks", path);
	return 0;
}

static int parse_membership(run_ctx_t *rc, const char *spec)
{
	int64_t v;
	if (!strncmp(spec, "random:", 7)) {
		if (cli_int("--membership random", spec + 7, 0, INT64_MAX, &v) < 0)
			return -1;
		rc->kind = MEMBER_RANDOM;
		rng_seed(&rc->rng, (uint64_t)v);
		return 0;
	}
	if (!strncmp(spec, "flip:", 5)) {
		if (cli_int("--membership flip", spec + 5, 1, 60000, &v) < 0)
			return -1;
		rc->kind = MEMBER_FLIP;
		rc->flip_ms = (uint32_t)v;
		rng_seed(&rc->rng, 1);
		return 0;
	}
	if (!strncmp(spec, "file:", 5)) {
		rc->kind = MEMBER_FILE;
		if (load_masks(rc, spec + 5) < 0) {
			log_error("%s", err_get());
			return -1;
		}
		return 0;
	}
	log_error("--membership: '%s' is not random:SEED, file:PATH or flip:MS",
		  spec);
	return -1;
}

static int write_ids(const char *path, const engine_result_t *r)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set("--ids %s: %s", path, strerror(errno));
	fputs("prompt_ids:", f);
	for (int64_t i = 0; i < r->n_prompt; i++)
		fprintf(f, " %d", r->ids[i]);
	fputs("\nsequence_ids:", f);
	for (int64_t i = 0; i < r->n_prompt + r->n_gen; i++)
		fprintf(f, " %d", r->ids[i]);
	fputc('\n', f);
	if (fclose(f) != 0)
		return err_set("--ids %s: write failed", path);
	return 0;
}

int cmd_generate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, 0, 'm'},
		{"tokenizer", required_argument, 0, 'z'},
		{"prompt", required_argument, 0, 'p'},
		{"n-predict", required_argument, 0, 'n'},
		{"temp", required_argument, 0, 't'},
		{"top-k", required_argument, 0, 'K'},
		{"top-p", required_argument, 0, 'P'},
		{"seed", required_argument, 0, 's'},
		{"sampler", required_argument, 0, 'S'},
		{"ctx", required_argument, 0, 'c'},
		{"logits-hash", required_argument, 0, 'H'},
		{"cores", required_argument, 0, 'C'},
		{"membership", required_argument, 0, 'M'},
		{"trace", required_argument, 0, 'T'},
		{"control", required_argument, 0, 'W'},
		{"policies", required_argument, 0, 'L'},
		{"ids", required_argument, 0, 'I'},
		{"prompt-ids", required_argument, 0, 'D'},
		{"no-echo", no_argument, 0, 'E'},
		{"stop", required_argument, 0, 'X'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *model_path = NULL, *tok_path = NULL, *prompt = "",
		   *hash_path = NULL, *cores = NULL, *membership = NULL,
		   *trace_path = NULL, *ids_path = NULL, *control = NULL,
		   *policies = NULL;
	int64_t n_predict = 256, top_k = 0, seed = 42, ctx = 0;
	double temp = 0.8, top_p = 0.9;
	sampler_mode_t mode = SAMPLER_EGANG;
	bool echo = true;
	const char *stops[8];
	int n_stop = 0;
	int32_t pids[4096];
	int64_t n_pids = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:z:p:n:t:s:qh", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'm': model_path = optarg; break;
		case 'z': tok_path = optarg; break;
		case 'p': prompt = optarg; break;
		case 'n': bad = cli_int("-n", optarg, 0, 1 << 24, &n_predict); break;
		case 't': bad = cli_float("-t", optarg, 0, 100, &temp); break;
		case 'K': bad = cli_int("--top-k", optarg, 0, 1 << 24, &top_k); break;
		case 'P': bad = cli_float("--top-p", optarg, 1e-6, 1, &top_p); break;
		case 's': bad = cli_int("-s", optarg, 0, INT64_MAX, &seed); break;
		case 'c': bad = cli_int("--ctx", optarg, 2, 1 << 22, &ctx); break;
		case 'S':
			if (!strcmp(optarg, "egang"))
				mode = SAMPLER_EGANG;
			else if (!strcmp(optarg, "llama2c"))
				mode = SAMPLER_LLAMA2C;
			else {
				log_error("--sampler: '%s' is not egang or llama2c", optarg);
				bad = -1;
			}
			break;
		case 'H': hash_path = optarg; break;
		case 'C': cores = optarg; break;
		case 'M': membership = optarg; break;
		case 'T': trace_path = optarg; break;
		case 'W': control = optarg; break;
		case 'L': policies = optarg; break;
		case 'I': ids_path = optarg; break;
		case 'D': {
			char *end;
			const char *q = optarg;
			n_pids = 0;
			do {
				long v = strtol(q, &end, 10);
				if (end == q || v < 0 || v > INT32_MAX || n_pids == 4096 ||
				    (*end && *end != ',')) {
					log_error("--prompt-ids: '%s' is not a list of up to 4096 "
						  "token ids", optarg);
					return EXIT_INPUT;
				}
				pids[n_pids++] = (int32_t)v;
				q = end + 1;
			} while (*end == ',');
			break;
		}
		case 'E': echo = false; break;
		case 'X':
			if (n_stop == 8 || !*optarg) {
				log_error("--stop: at most 8 non-empty strings");
				bad = -1;
			} else {
				stops[n_stop++] = optarg;
			}
			break;
		case 'q': log_quiet = true; break;
		case 'h': fputs(generate_help, stdout); return EXIT_OK;
		default: return cli_usage_error("generate", argv[optind - 1]);
		}
		if (bad)
			return EXIT_INPUT;
	}
	if (cli_no_more_args("generate", argc, argv) < 0)
		return EXIT_INPUT;
	if (!model_path) {
		log_error("generate: -m MODEL is required");
		return EXIT_INPUT;
	}
	if (control && membership) {
		log_error("generate: --control and --membership both set the "
			  "gang's membership; use one");
		return EXIT_INPUT;
	}
	if (policies && !control) {
		log_error("generate: --policies needs --control");
		return EXIT_INPUT;
	}
	run_ctx_t rc = {0};
	if (membership && parse_membership(&rc, membership) < 0) {
		free(rc.masks);
		return EXIT_INPUT;
	}
	int cpus[GANG_MAX_SLOTS];
	int n_cpus = cli_cores(cores, cpus, GANG_MAX_SLOTS);
	if (n_cpus < 0) {
		log_error("%s", err_get());
		free(rc.masks);
		return EXIT_INPUT;
	}
	static policy_lib_t lib; /* frozen once loaded */
	static policy_rt_t rt;
	control_t *cw = NULL;
	if (control) {
		policy_lib_builtin(&lib, n_cpus);
		if (policies && policy_lib_load(&lib, policies) < 0) {
			log_error("--policies %s", err_get());
			return EXIT_INPUT;
		}
		if (!(cw = control_open(control, true))) {
			log_error("%s", err_get());
			return EXIT_INPUT;
		}
	}
	model_t *m = model_load(model_path, tok_path);
	if (!m) {
		log_error("%s", err_get());
		free(rc.masks);
		control_close(cw);
		return EXIT_INPUT;
	}
	if (ctx == 0)
		ctx = m->cfg.ctx < 4096 ? m->cfg.ctx : 4096;
	forward_t *f = forward_new(m, (int32_t)ctx, 0);
	FILE *hash = NULL;
	int status = EXIT_OK;
	if (!f) {
		log_error("%s", err_get());
		status = EXIT_FAIL;
		goto out;
	}
	if (hash_path && !(hash = fopen(hash_path, "w"))) {
		log_error("--logits-hash %s: %s", hash_path, strerror(errno));
		status = EXIT_INPUT;
		goto out;
	}
	if (trace_path && !(rc.trace = fopen(trace_path, "w"))) {
		log_error("--trace %s: %s", trace_path, strerror(errno));
		status = EXIT_INPUT;
		goto out;
	}
	if (n_cpus > 1 || membership || trace_path) {
		gang_config_t gc = {.cpus = cpus, .n_cpus = n_cpus, .pin = true};
		if (cw) /* the keep spin of the record in force at start */
			gc.keep_us = policy_keep_us(&lib, atomic_load_explicit(
				&cw->w->index, memory_order_relaxed));
		rc.g = gang_init(&gc);
		if (!rc.g) {
			log_error("%s", err_get());
			status = EXIT_FAIL;
			goto out;
		}
		gang_request(rc.g, gang_all(rc.g));
	}
	if (cw) {
		policy_rt_init(&rt, &lib, cw->w, rc.g);
		rc.rt = &rt;
	}
	pthread_t flipper;
	if (rc.kind == MEMBER_FLIP)
		pthread_create(&flipper, NULL, flip_main, &rc);
	engine_params_t ep = {
		.prompt = prompt,
		.prompt_ids = n_pids ? pids : NULL,
		.n_prompt_ids = n_pids,
		.n_predict = (int32_t)n_predict,
		.sampler = {.temp = (float)temp, .top_p = (float)top_p,
			    .top_k = (int32_t)top_k, .seed = (uint64_t)seed,
			    .mode = mode},
		.echo_prompt = echo,
		.logits_hash = hash,
		.before_token = before_token,
		.on_text = on_text,
		.user = &rc,
		.stop = stops,
		.n_stop = n_stop,
	};
	engine_result_t r;
	int grc = engine_generate(m, f, rc.g, &ep, &r);
	if (rc.kind == MEMBER_FLIP) {
		atomic_store(&rc.flip_stop, true);
		pthread_join(flipper, NULL);
	}
	if (grc < 0) {
		log_error("%s", err_get());
		status = EXIT_INPUT;
		goto out;
	}
	if (rc.rt) {
		policy_rt_generation_end(rc.rt, r.n_gen > 0 ? r.first_token_s : -1,
					 r.decode_s > 0 ? (double)r.decode_steps / r.decode_s : 0,
					 0);
		rc.rt = NULL; /* the trace line below must not read the index */
	}
	before_token(&rc, 1); /* trace the last token */
	if (ids_path && write_ids(ids_path, &r) < 0) {
		log_error("%s", err_get());
		status = EXIT_FAIL;
	}
	fputc('\n', stdout);
	fflush(stdout);
	if (!log_quiet) {
		fprintf(stderr, "prompt: %lld tokens, %.1f tok/s; decode: %lld "
				"tokens, %.2f tok/s (%s, %d core%s, %s); stop: %s\n",
			(long long)r.n_prompt,
			r.prefill_s > 0 ? (double)r.n_prompt / r.prefill_s : 0.0,
			(long long)r.n_gen,
			r.decode_s > 0 ? (double)r.decode_steps / r.decode_s : 0.0,
			kernels_isa(), n_cpus, n_cpus > 1 ? "s" : "",
			rc.g ? "gang" : "serial", engine_stop_name(r.stop));
		if (rc.g) {
			gang_stats_t st;
			gang_stats(rc.g, &st);
			fprintf(stderr, "gang: %llu tokens, %llu latch changes, "
					"%llu joins, %llu departures, participation",
				(unsigned long long)st.tokens,
				(unsigned long long)st.latch_changes,
				(unsigned long long)st.joins,
				(unsigned long long)st.departures);
			for (int i = 0; i < st.n_slots; i++)
				fprintf(stderr, " cpu%d=%llu", st.cpus[i],
					(unsigned long long)st.participation[i]);
			fputc('\n', stderr);
		}
	}
	engine_result_free(&r);
out:
	if (hash && fclose(hash) != 0 && status == EXIT_OK) {
		log_error("--logits-hash: write failed");
		status = EXIT_FAIL;
	}
	if (rc.trace)
		fclose(rc.trace);
	gang_free(rc.g);
	forward_free(f);
	model_free(m);
	free(rc.masks);
	control_close(cw);
	return status;
}
