/* egang info / synth / convert: model files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "kernels/kernels.h"
#include "model/model.h"

/* cli_parse for a command of one operand (`what` names it in messages). */
static bool parse_one(const char *name, const char *help, const cli_opt_t *opts,
		      const char **operand, const char *what, int argc,
		      char **argv, int *status)
{
	const cli_cmd_t cmd = {.name = name, .help = help, .opts = opts,
			       .operands = operand, .min_operands = 1,
			       .max_operands = 1, .operands_name = what};
	return cli_parse(&cmd, argc, argv, status);
}

/* ---- info ---- */

static const char info_help[] =
	"usage: egang info [-z TOKENIZER] MODEL\n"
	"\n"
	"Prints a model's architecture, hyperparameters, tensor table, file size\n"
	"and the bytes streamed per decoded token.\n"
	"\n"
	"  -z, --tokenizer FILE   llama2.c tokenizer.bin (for .bin checkpoints)\n"
	"  -h, --help             this text\n";

static void print_tensor(const char *name, const tensor_t *t)
{
	printf("  %-28s %-5s [%6lld, %6lld] %12llu bytes\n", name,
	       dtype_info[t->type].name, (long long)t->cols, (long long)t->rows,
	       (unsigned long long)((uint64_t)t->rows * dtype_row_bytes(t->type, t->cols)));
}

/* Per tensor type: tensors, bytes in the file, bytes a token streams. */
static void print_types(const model_t *m)
{
	model_type_use_t use[DTYPE_COUNT];
	model_type_usage(m, use);
	printf("types:         (tensors, bytes in the file, bytes streamed per token)\n");
	for (int t = 0; t < DTYPE_COUNT; t++)
		if (use[t].tensors)
			printf("  %-6s %5lld tensors %12llu bytes %12llu bytes/token\n",
			       dtype_info[t].name, (long long)use[t].tensors,
			       (unsigned long long)use[t].file_bytes,
			       (unsigned long long)use[t].token_bytes);
}

int cmd_info(int argc, char **argv)
{
	const char *tok = NULL, *path = NULL;
	const cli_opt_t opts[] = {OPT_STR("tokenizer", 'z', &tok), CLI_END};
	int status;
	if (!parse_one("info", info_help, opts, &path, "MODEL", argc, argv, &status))
		return status;
	model_set_weights(MODEL_WEIGHTS_MAP); /* info reads headers, not weights */
	model_t *m = model_load(path, tok);
	if (!m) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	const model_config_t *k = &m->cfg;
	printf("file:          %s (%s, %.2f MB)\n", path, m->format,
	       (double)m->file_size / 1e6);
	printf("name:          %s\n", m->name);
	printf("architecture:  %s\n", arch_info[k->arch].name);
	printf("parameters:    %llu\n", (unsigned long long)model_n_params(m));
	printf("dim %d, hidden %d, layers %d, heads %d, kv heads %d, head dim %d\n",
	       k->dim, k->hidden_dim, k->n_layers, k->n_heads, k->n_kv_heads,
	       k->head_dim);
	printf("vocab %d, context %d, rope %s dim %d theta %g, rms eps %g\n",
	       k->vocab_size, k->ctx, k->rope_neox ? "neox" : "adjacent-pairs",
	       k->rope_dim, (double)k->rope_theta, (double)k->rms_eps);
	const char *facts[] = {
		k->qk_norm ? "qk-norm" : NULL, k->post_norms ? "post-norms" : NULL,
		k->gelu ? "gelu-tanh ffn" : NULL,
		k->embed_scale != 0.0f ? "scaled embedding" : NULL,
		m->rope_freqs ? "rope_freqs" : NULL,
		m->rope_short ? "rope factors short/long" : NULL,
		k->rope_scale != 1.0f || k->rope_mscale != 1.0f ? "scaled rope" : NULL,
		k->logit_softcap != 0.0f ? "logit softcap" : NULL,
	};
	bool any = false;
	for (size_t i = 0; i < sizeof facts / sizeof *facts; i++)
		if (facts[i]) {
			printf("%s%s", any ? ", " : "architecture facts: ", facts[i]);
			any = true;
		}
	if (any)
		putchar('\n');
	if (k->swa_window) {
		int n = 0;
		char global[256] = "";
		size_t gl = 0;
		for (int l = 0; l < k->n_layers; l++) {
			n += m->layers[l].swa;
			if (!m->layers[l].swa && gl < sizeof global - 16)
				gl += (size_t)snprintf(global + gl, sizeof global - gl, "%s%d",
						       gl ? "," : "", l);
		}
		printf("sliding window: %d positions on %d of %d layers (rope theta %g; "
		       "global layers: %s)\n", k->swa_window, n, k->n_layers,
		       (double)k->rope_theta_swa, gl ? global : "none");
	}
	printf("tokenizer:     %s, %d tokens, bos %d, eos %d\n",
	       tokenizer_kind(m->tok) == TOKENIZER_GPT2 ? "gpt2 (byte-level BPE)"
							: "llama (SentencePiece BPE)",
	       tokenizer_n_vocab(m->tok), tokenizer_bos(m->tok),
	       tokenizer_eos(m->tok));
	printf("classifier:    %s\n", m->output.data == m->tok_embd.data
					      ? "tied to the embedding" : "separate");
	printf("bytes/token:   %llu (weights streamed per decoded token, from the packed "
	       "copies the level reads)\n",
	       (unsigned long long)model_bytes_per_token(m));
	printf("isa:           %s (kernel level in use; EGANG_ISA forces a lower one)\n",
	       kernels_isa());
	if (m->gguf) {
		printf("gguf:          version %u, %lld keys, %lld tensors, data at %zu\n",
		       gguf_version(m->gguf), (long long)gguf_n_kv(m->gguf),
		       (long long)gguf_n_tensors(m->gguf), gguf_data_offset(m->gguf));
		print_types(m);
		printf("tensors:\n");
		for (int64_t i = 0; i < gguf_n_tensors(m->gguf); i++) {
			const gguf_tensor_t *t = gguf_tensor(m->gguf, i);
			char dims[96] = "";
			int n = 0;
			for (uint32_t d = 0; d < t->n_dims; d++)
				n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%lld",
					      d ? ", " : "", (long long)t->ne[d]);
			printf("  %-28.*s %-5s [%s] %llu bytes at +%llu\n",
			       (int)t->name.n, t->name.s, dtype_info[t->type].name,
			       dims, (unsigned long long)t->nbytes,
			       (unsigned long long)t->offset);
		}
	} else {
		printf("tensors (layer 0 of %d shown):\n", k->n_layers);
		print_tensor("token_embedding", &m->tok_embd);
		print_tensor("wq", &m->layers[0].wq);
		print_tensor("wk", &m->layers[0].wk);
		print_tensor("wv", &m->layers[0].wv);
		print_tensor("wo", &m->layers[0].wo);
		print_tensor("w1 (gate)", &m->layers[0].w_gate);
		print_tensor("w2 (down)", &m->layers[0].w_down);
		print_tensor("w3 (up)", &m->layers[0].w_up);
		if (m->output.data != m->tok_embd.data)
			print_tensor("wcls", &m->output);
	}
	model_free(m);
	return EXIT_OK;
}

/* ---- synth ---- */

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

int cmd_synth(int argc, char **argv)
{
	const char *out = NULL, *type = "q8_0", *shape = NULL, *tok_json = NULL,
		   *tok_cfg = NULL;
	int64_t seed = 1, layers = 0, window = 0, pattern = -1, vocab = 0;
	bool flat = false;
	const cli_opt_t opts[] = {
		OPT_STR("output", 'o', &out, .required = true),
		OPT_STR("tokenizer", 0, &tok_json),
		OPT_STR("tokenizer-config", 0, &tok_cfg),
		OPT_STR("type", 0, &type),
		OPT_INT("seed", 's', &seed, 0, UINT32_MAX),
		OPT_INT("layers", 0, &layers, 1, 1024),
		OPT_INT("vocab", 0, &vocab, 259, 1 << 26),
		OPT_INT("sliding-window", 0, &window, 1, 1 << 20),
		OPT_INT("sliding-window-pattern", 0, &pattern, 0, 1 << 20),
		OPT_FLAG("flat-logits", 0, &flat),
		CLI_END,
	};
	int status;
	if (!parse_one("synth", synth_usage(), opts, &shape, "SHAPE", argc, argv,
		       &status))
		return status;
	const synth_shape_t *s = synth_find(shape);
	if (!s) {
		log_error("synth: unknown shape '%s' (see `egang synth --help`)", shape);
		return EXIT_INPUT;
	}
	synth_shape_t copy = *s;
	if ((window || pattern >= 0) && (!s->swa_window || s->arch != ARCH_GEMMA3)) {
		log_error("synth: --sliding-window%s: shape '%s' has no sliding-window layers",
			  window ? "" : "-pattern", shape);
		return EXIT_INPUT;
	}
	if (window)
		copy.swa_window = (int32_t)window;
	if (pattern >= 0)
		copy.swa_pattern = (int32_t)pattern;
	if (vocab && tok_json) {
		log_error("synth: --vocab: the vocabulary follows --tokenizer");
		return EXIT_INPUT;
	}
	if (vocab)
		copy.vocab = (int32_t)vocab;
	copy.flat_logits = flat;
	s = &copy;
	quant_mix_t mix;
	if (quant_mix_from_name(type, &mix) < 0) {
		log_error("synth: --type '%s' is not one of %s", type, quant_mix_names());
		return EXIT_INPUT;
	}
	if (tok_cfg && !tok_json) {
		log_error("synth: --tokenizer-config needs --tokenizer");
		return EXIT_INPUT;
	}
	tokenizer_t *tok = NULL;
	char *tmpl = NULL;
	size_t tl = tok_json ? strlen(tok_json) : 0;
	if (tl > 4 && !strcmp(tok_json + tl - 4, ".bin")) /* llama2.c's */
		tok = tokenizer_load_llama2c(tok_json, s->vocab);
	else if (tok_json)
		tok = tokenizer_load_hf(tok_json, tok_cfg, s->vocab, &tmpl);
	if (tok_json && !tok) {
		log_error("synth: %s", err_get());
		return EXIT_INPUT;
	}
	int rc = synth_write_tok(s, &mix, (uint64_t)seed, (int32_t)layers, tok,
				 tmpl, out, cli_progress, NULL);
	tokenizer_free(tok);
	free(tmpl);
	if (rc < 0) {
		log_error("%s", err_get());
		return EXIT_FAIL;
	}
	log_info("wrote %s: %s, %s, seed %lld", out, s->name, type, (long long)seed);
	return EXIT_OK;
}

/* ---- convert ---- */

static const char convert_help[] =
	"usage: egang convert CHECKPOINT.bin -z TOKENIZER.bin -o OUT.gguf\n"
	"\n"
	"Converts a llama2.c checkpoint and its tokenizer into one F32 GGUF with\n"
	"the tokenizer inside (tied classifier kept tied).\n"
	"\n"
	"  -z, --tokenizer FILE   llama2.c tokenizer.bin (required)\n"
	"  -o, --output FILE      the GGUF to write (required)\n"
	"  -h, --help             this text\n";

int cmd_convert(int argc, char **argv)
{
	const char *tok = NULL, *out = NULL, *in = NULL;
	const cli_opt_t opts[] = {
		OPT_STR("tokenizer", 'z', &tok, .required = true),
		OPT_STR("output", 'o', &out, .required = true),
		CLI_END,
	};
	int status;
	if (!parse_one("convert", convert_help, opts, &in, "CHECKPOINT", argc,
		       argv, &status))
		return status;
	if (model_convert_llama2c(in, tok, out) < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	log_info("wrote %s", out);
	return EXIT_OK;
}
