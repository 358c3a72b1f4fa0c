/* egang info: a model file's architecture, hyperparameters, tensors and
 * the bytes a decoded token streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "kernels/kernels.h"
#include "model/chat.h"
#include "model/forward.h"
#include "model/gguf.h"
#include "model/model.h"

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

/* The file, the name and the hyperparameters. */
static void print_config(const model_t *m, const char *path)
{
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
}

/* The architecture's optional features, one line when it has any. */
static void print_facts(const model_t *m)
{
	const model_config_t *k = &m->cfg;
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
}

/* The sliding-window layers and the global ones between them. */
static void print_swa(const model_t *m)
{
	const model_config_t *k = &m->cfg;
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

/* The chat template kind egang renders for m's tokenizer.chat_template. */
static void print_chat(const model_t *m)
{
	gguf_str_t ts;
	char *text = NULL;
	if (m->gguf && gguf_get_str(m->gguf, "tokenizer.chat_template", &ts) == 0 &&
	    !(text = strndup(ts.s, (size_t)ts.n)))
		abort(); /* out of memory */
	chat_kind_t k = chat_kind(text, m->tok);
	printf("chat template: %s\n", !text ? "none (the file has no tokenizer.chat_template)"
			: k == CHAT_NONE ? "none egang knows (tokenizer.chat_template unrecognised)"
			: chat_name(k));
	free(text);
}

/* The tokenizer, the classifier, the bytes per token and the ISA level. */
static void print_runtime(const model_t *m)
{
	const char *pre = tokenizer_pre(m->tok);
	printf("tokenizer:     %s%s%s), %d tokens, bos %d, eos %d, BOS %s\n",
	       tokenizer_kind(m->tok) == TOKENIZER_GPT2 ? "gpt2 (byte-level BPE"
							: "llama (SentencePiece BPE",
	       pre ? ", pre-tokenizer " : "", pre ? (*pre ? pre : "default") : "",
	       tokenizer_n_vocab(m->tok), tokenizer_bos(m->tok),
	       tokenizer_eos(m->tok), tokenizer_add_bos(m->tok) ? "added" : "not added");
	print_chat(m);
	printf("classifier:    %s\n", m->output.data == m->tok_embd.data
					      ? "tied to the embedding" : "separate");
	printf("bytes/token:   %llu (weights streamed per decoded token, from the packed "
	       "copies the level reads)\n",
	       (unsigned long long)model_bytes_per_token(m));
	printf("isa:           %s (kernel level in use; EGANG_ISA forces a lower one)\n",
	       kernels_isa());
	printf("kv cache:      f16 (default, --kv-type) %zu bytes/position",
	       forward_kv_pos_bytes(m, KV_F16));
	printf(", f32 %zu", forward_kv_pos_bytes(m, KV_F32));
	if (forward_kv_unfit(m, KV_Q8_0))
		printf(", q8_0 unfit (head dim %d: not a multiple of 32)\n", m->cfg.head_dim);
	else
		printf(", q8_0 %zu\n", forward_kv_pos_bytes(m, KV_Q8_0));
}

/* A GGUF's header, its types and every tensor. */
static void print_gguf(const model_t *m)
{
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
}

/* A llama2.c checkpoint's tensors of layer 0. */
static void print_llama2c(const model_t *m)
{
	printf("tensors (layer 0 of %d shown):\n", m->cfg.n_layers);
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

int cmd_info(int argc, char **argv)
{
	const char *tok = NULL, *path = NULL;
	const cli_opt_t opts[] = {OPT_STR("tokenizer", 'z', &tok), CLI_END};
	const cli_cmd_t cmd = {.name = "info", .help = info_help, .opts = opts,
			       .operands = &path, .min_operands = 1,
			       .max_operands = 1, .operands_name = "MODEL"};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	model_set_weights(MODEL_WEIGHTS_MAP); /* info reads headers, not weights */
	model_t *m = model_load(path, tok);
	if (!m) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	print_config(m, path);
	print_facts(m);
	if (m->cfg.swa_window)
		print_swa(m);
	print_runtime(m);
	if (m->gguf)
		print_gguf(m);
	else
		print_llama2c(m);
	model_free(m);
	return EXIT_OK;
}
