/* egang synth: a GGUF with random weights in the shape of a real model,
 * with a working tokenizer (model.h: synth_write_tok). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/model.h"

static const char synth_help[] =
	"usage: egang synth SHAPE -o FILE [--type T] [--seed S] [--layers N]\n"
	"                   [--vocab N] [--sliding-window N] [--sliding-window-pattern N]\n"
	"                   [--tokenizer FILE [--tokenizer-config FILE]] [-q]\n"
	"\n"
	"Writes a GGUF with random weights (deterministic from the seed) and a\n"
	"working synthetic tokenizer, in the shape of a real model.\n"
	"\n"
	"  -o, --output FILE   the GGUF to write (required)\n"
	"      --type T        a type (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1,\n"
	"                      q3_k, q4_k, q5_k; default q8_0) or a llama-quantize\n"
	"                      preset (q2_k, q3_k_s/m/l, q4_k_s/m, q5_k_s/m, q6_k,\n"
	"                      iq4_nl, iq4_xs);\n"
	"                      matrices whose rows are not whole blocks fall back\n"
	"                      as llama-quantize's (q4_k -> q5_0, ..., then f16)\n"
	"      --seed S        (default 1)\n"
	"      --layers N      override the layer count (small test models)\n"
	"      --vocab N       override the vocabulary size, 259 or more (small\n"
	"                      test models: the classifier and the embedding are\n"
	"                      most of a shape's work when it has few layers; the\n"
	"                      synthetic tokenizer keeps its bytes and specials,\n"
	"                      with fewer merges)\n"
	"      --sliding-window N  override the sliding layers' window (gemma3;\n"
	"                      small test models that cross it)\n"
	"      --sliding-window-pattern N  write gemma3's sliding_window_pattern:\n"
	"                      layer l slides unless (l + 1) % N == 0, 0: every\n"
	"                      layer slides (default: no key; llama.cpp assumes 6)\n"
	"      --flat-logits   a tied classifier's logits with an sd near 1 (the\n"
	"                      final norm scaled by sqrt(3 / dim)) instead of one\n"
	"                      token taking all the probability; for agreement\n"
	"                      checks (no effect on an untied classifier)\n"
	"      --tokenizer FILE         a Hugging Face tokenizer.json: its vocabulary,\n"
	"                      merges, token types and special tokens go into the\n"
	"                      GGUF as llama.cpp's converter writes them, and the\n"
	"                      model's vocab size follows it (tools/tokenizers.sh\n"
	"                      fetches Llama 3, Qwen3 and Gemma 3 ones)\n"
	"                      (or a llama2.c tokenizer.bin of the shape's vocab)\n"
	"      --tokenizer-config FILE  its tokenizer_config.json: bos/eos/pad,\n"
	"                      add_bos_token and the chat template\n"
	"  -q, --quiet         no progress\n"
	"  -h, --help          this text\n"
	"\nshapes:\n";

/* The help text with the shapes' table after it. */
static const char *synth_usage(void)
{
	static char buf[sizeof synth_help + 4096];
	size_t k = (size_t)snprintf(buf, sizeof buf, "%s", synth_help);
	for (int i = 0; i < synth_n_shapes && k < sizeof buf; i++) {
		const synth_shape_t *s = &synth_shapes[i];
		k += (size_t)snprintf(buf + k, sizeof buf - k,
			"  %-15s %s dim %d, hidden %d, %d layers, %d/%d heads, vocab %d\n",
			s->name, arch_info[s->arch].name, s->dim,
			s->hidden_dim, s->n_layers, s->n_heads, s->n_kv_heads, s->vocab);
	}
	return buf;
}

/* The flags of one `egang synth` run: the file to write, its type, the
 * shape and the overrides of it, the tokenizer files, the seed. */
typedef struct synth_opts {
	const char *out, *type, *shape, *tok_json, *tok_cfg;
	int64_t seed, layers, window, pattern, vocab;
	bool flat;
} synth_opts_t;

/* The named shape with the flags' overrides in *s; an exit code. */
static int synth_shape(const synth_opts_t *o, synth_shape_t *s)
{
	const synth_shape_t *f = synth_find(o->shape);
	if (!f) {
		log_error("synth: unknown shape '%s' (see `egang synth --help`)", o->shape);
		return EXIT_INPUT;
	}
	*s = *f;
	if ((o->window || o->pattern >= 0) && (!s->swa_window || s->arch != ARCH_GEMMA3)) {
		log_error("synth: --sliding-window%s: shape '%s' has no sliding-window layers",
			  o->window ? "" : "-pattern", o->shape);
		return EXIT_INPUT;
	}
	if (o->window)
		s->swa_window = (int32_t)o->window;
	if (o->pattern >= 0)
		s->swa_pattern = (int32_t)o->pattern;
	if (o->vocab && o->tok_json) {
		log_error("synth: --vocab: the vocabulary follows --tokenizer");
		return EXIT_INPUT;
	}
	if (o->vocab)
		s->vocab = (int32_t)o->vocab;
	s->flat_logits = o->flat;
	return EXIT_OK;
}

/* --tokenizer: a llama2.c tokenizer.bin, else a Hugging Face
 * tokenizer.json (*tmpl: its chat template); NULL without the flag or
 * after a one-line error (*status). */
static tokenizer_t *synth_tokenizer(const synth_opts_t *o, int32_t vocab,
				    char **tmpl, int *status)
{
	*tmpl = NULL;
	*status = EXIT_OK;
	if (o->tok_cfg && !o->tok_json) {
		log_error("synth: --tokenizer-config needs --tokenizer");
		*status = EXIT_INPUT;
		return NULL;
	}
	if (!o->tok_json)
		return NULL;
	size_t tl = strlen(o->tok_json);
	tokenizer_t *tok = tl > 4 && !strcmp(o->tok_json + tl - 4, ".bin")
		? tokenizer_load_llama2c(o->tok_json, vocab)
		: tokenizer_load_hf(o->tok_json, o->tok_cfg, vocab, tmpl);
	if (!tok) {
		log_error("synth: %s", err_get());
		*status = EXIT_INPUT;
	}
	return tok;
}

int cmd_synth(int argc, char **argv)
{
	synth_opts_t o = {.type = "q8_0", .seed = 1, .pattern = -1};
	const cli_opt_t opts[] = {
		OPT_STR("output", 'o', &o.out, .required = true),
		OPT_STR("tokenizer", 0, &o.tok_json),
		OPT_STR("tokenizer-config", 0, &o.tok_cfg),
		OPT_STR("type", 0, &o.type),
		OPT_INT("seed", 's', &o.seed, 0, UINT32_MAX),
		OPT_INT("layers", 0, &o.layers, 1, 1024),
		OPT_INT("vocab", 0, &o.vocab, 259, 1 << 26),
		OPT_INT("sliding-window", 0, &o.window, 1, 1 << 20),
		OPT_INT("sliding-window-pattern", 0, &o.pattern, 0, 1 << 20),
		OPT_FLAG("flat-logits", 0, &o.flat),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "synth", .help = synth_usage(), .opts = opts,
			       .operands = &o.shape, .min_operands = 1,
			       .max_operands = 1, .operands_name = "SHAPE"};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	synth_shape_t s;
	if ((status = synth_shape(&o, &s)) != EXIT_OK)
		return status;
	quant_mix_t mix;
	if (quant_mix_from_name(o.type, &mix) < 0) {
		log_error("synth: --type '%s' is not one of %s", o.type, quant_mix_names());
		return EXIT_INPUT;
	}
	char *tmpl;
	tokenizer_t *tok = synth_tokenizer(&o, s.vocab, &tmpl, &status);
	if (status != EXIT_OK)
		return status;
	int rc = synth_write_tok(&s, &mix, (uint64_t)o.seed, (int32_t)o.layers, tok,
				 tmpl, o.out, cli_progress, NULL);
	tokenizer_free(tok);
	free(tmpl);
	if (rc < 0) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	log_info("wrote %s: %s, %s, seed %lld", o.out, s.name, o.type, (long long)o.seed);
	return EXIT_OK;
}
