/* synth: random-weight GGUF models of named real shapes, and the llama2.c
 * -> GGUF converter; both write the same metadata.
 *
 * A synthetic model's output is legible text: the logit rows (the output
 * matrix, or the tied embedding) of the tokens whose text is not printable
 * UTF-8 on its own are zero, so their logits are 0 while the others spread
 * over several units either side; greedy decoding never picks them and
 * sampling almost never does. Those are the byte tokens that stand for one
 * byte of a multi-byte character or for a control character (<0xE3>, the
 * byte-level chars of 0x80..0xFF), BOS/EOS and other control tokens: the
 * vocabulary keeps them, since encoding any text needs them
 * (tokenizer_synth). With a tied embedding those tokens also enter the
 * model as zero vectors. The other weights are as random as before. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model/model.h"
#include "model/utf8.h"

/* Shapes of public models (from their config.json); weights are random.
 * The last six fields: head_dim (when not dim / heads), sliding window,
 * the sliding layers' RoPE base, llama3 rope scaling's factor, the rope
 * scaling's original context, the sliding-window pattern key (-1:
 * not written). */
const synth_shape_t synth_shapes[] = {
	{"stories260k", ARCH_LLAMA, 64, 172, 5, 8, 4, 512, 512, 10000.0f, 1e-5f, 1, TOKENIZER_LLAMA, 0, 0, 0, 0, 0, -1, 0},
	{"smollm-135m", ARCH_LLAMA, 576, 1536, 30, 9, 3, 49152, 2048, 10000.0f, 1e-5f, 1, TOKENIZER_GPT2, 0, 0, 0, 0, 0, -1, 0},
	{"smollm2-360m", ARCH_LLAMA, 960, 2560, 32, 15, 5, 49152, 8192, 100000.0f, 1e-5f, 1, TOKENIZER_GPT2, 0, 0, 0, 0, 0, -1, 0},
	{"qwen2.5-0.5b", ARCH_QWEN2, 896, 4864, 24, 14, 2, 151936, 32768, 1000000.0f, 1e-6f, 1, TOKENIZER_GPT2, 0, 0, 0, 0, 0, -1, 0},
	{"tinyllama-1.1b", ARCH_LLAMA, 2048, 5632, 22, 32, 4, 32000, 2048, 10000.0f, 1e-5f, 0, TOKENIZER_LLAMA, 0, 0, 0, 0, 0, -1, 0},
	{"llama2-7b", ARCH_LLAMA, 4096, 11008, 32, 32, 32, 32000, 4096, 10000.0f, 1e-5f, 0, TOKENIZER_LLAMA, 0, 0, 0, 0, 0, -1, 0},
	/* Llama-3.2-1B: llama3 rope scaling (factor 32, low 1, high 4,
	 * original context 8192) as the rope_freqs tensor */
	{"llama3.2-1b", ARCH_LLAMA, 2048, 8192, 16, 32, 8, 128256, 131072, 500000.0f, 1e-5f, 1, TOKENIZER_GPT2, 0, 0, 0, 32.0f, 8192, -1, 0},
	{"qwen3-0.6b", ARCH_QWEN3, 1024, 3072, 28, 16, 8, 151936, 40960, 1000000.0f, 1e-6f, 1, TOKENIZER_GPT2, 128, 0, 0, 0, 0, -1, 0},
	{"gemma3-270m", ARCH_GEMMA3, 640, 2048, 18, 4, 1, 262144, 32768, 1000000.0f, 1e-6f, 1, TOKENIZER_LLAMA, 256, 512, 10000.0f, 0, 0, -1, 0},
	{"gemma3-1b", ARCH_GEMMA3, 1152, 6912, 26, 4, 1, 262144, 32768, 1000000.0f, 1e-6f, 1, TOKENIZER_LLAMA, 256, 512, 10000.0f, 0, 0, -1, 0},
	/* Phi-3-mini-4k-instruct (its sliding_window 2047 is written, as the
	 * converter does, and ignored, as llama.cpp does) */
	{"phi3-mini", ARCH_PHI3, 3072, 8192, 32, 32, 32, 32064, 4096, 10000.0f, 1e-5f, 0, TOKENIZER_LLAMA, 0, 2047, 0, 0, 4096, -1, 0},
	/* Mistral-7B-Instruct-v0.2 */
	{"mistral-7b", ARCH_LLAMA, 4096, 14336, 32, 32, 8, 32000, 32768, 1000000.0f, 1e-5f, 0, TOKENIZER_LLAMA, 0, 0, 0, 0, 0, -1, 0},
};
const int synth_n_shapes = (int)EG_ARRAY_LEN(synth_shapes);

const synth_shape_t *synth_find(const char *name)
{
	for (int i = 0; i < synth_n_shapes; i++)
		if (strcmp(synth_shapes[i].name, name) == 0)
			return &synth_shapes[i];
	return NULL;
}

/* The hyperparameter keys every egang-written GGUF carries. */
static void write_config(gguf_writer_t *w, const model_config_t *c,
			 const char *name)
{
	const char *a = arch_info[c->arch].name;
	char k[96];
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", a, s), k)
	gguf_writer_set_str(w, "general.architecture", a);
	gguf_writer_set_str(w, "general.name", name);
	gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)c->ctx);
	gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)c->dim);
	gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)c->hidden_dim);
	gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)c->n_layers);
	gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)c->n_heads);
	gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)c->n_kv_heads);
	gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)c->rope_dim);
	gguf_writer_set_f32(w, KEY("rope.freq_base"), c->rope_theta);
	gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), c->rms_eps);
#undef KEY
}

/* The keys of a shape's architecture beyond write_config's, as llama.cpp's
 * converter writes them. */
static void write_arch_keys(gguf_writer_t *w, const synth_shape_t *s,
			    const model_config_t *c)
{
	const char *a = arch_info[c->arch].name;
	char k[96];
#define KEY(x) (snprintf(k, sizeof k, "%s.%s", a, x), k)
	if (s->head_dim) {
		gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)c->head_dim);
		gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)c->head_dim);
	}
	if (s->swa_window)
		gguf_writer_set_u32(w, KEY("attention.sliding_window"), (uint32_t)s->swa_window);
	if (s->swa_window && s->swa_pattern >= 0)
		gguf_writer_set_u32(w, KEY("attention.sliding_window_pattern"),
				    (uint32_t)s->swa_pattern);
	if (s->rope_theta_swa > 0)
		gguf_writer_set_f32(w, KEY("rope.freq_base_swa"), s->rope_theta_swa);
	if (s->rope_orig_ctx && c->arch == ARCH_PHI3)
		gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"),
				    (uint32_t)s->rope_orig_ctx);
#undef KEY
}

/* Llama 3's rope scaling as factors per rotated pair (the rope_freqs
 * tensor llama.cpp's converter derives from rope_scaling: factor, low 1,
 * high 4, the original context): out (rope_dim / 2). */
static void llama3_rope_factors(const synth_shape_t *s, int rope_dim, float *out)
{
	const double pi = 3.14159265358979323846;
	double lo_wl = s->rope_orig_ctx / 1.0, hi_wl = s->rope_orig_ctx / 4.0;
	for (int i = 0; i < rope_dim / 2; i++) {
		float freq = 1.0f / powf(s->rope_theta, (float)(2 * i) / (float)rope_dim);
		double wl = 2 * pi / freq;
		if (wl < hi_wl) {
			out[i] = 1.0f;
		} else if (wl > lo_wl) {
			out[i] = s->llama3_factor;
		} else {
			double smooth = (s->rope_orig_ctx / wl - 1.0) / (4.0 - 1.0);
			out[i] = (float)(1.0 / ((1 - smooth) / s->llama3_factor + smooth));
		}
	}
}

/* llama.cpp gives the tokens <unk>, <s>, </s> and <|endoftext|> Phi-3's
 * attributes, and fails to load the vocabulary when one is missing, in
 * every model whose general.name contains "phi3" or "phi-3": a vocabulary
 * without them (the synthetic one) gets a name without those letters. */
static void phi3_name(gguf_writer_t *w, const synth_shape_t *s, const tokenizer_t *tok)
{
	static const char *const need[] = {"<unk>", "<s>", "</s>", "<|endoftext|>"};
	if (s->arch != ARCH_PHI3)
		return;
	for (size_t i = 0; i < EG_ARRAY_LEN(need); i++)
		if (tokenizer_find(tok, need[i]) < 0) {
			gguf_writer_set_str(w, "general.name", "phi_3-mini (synthetic vocabulary)");
			return;
		}
}

/* ---- synthetic weights ---- */

enum { KIND_MATRIX, KIND_NORM, KIND_BIAS, KIND_EMBED, KIND_VALUES };

typedef struct synth_tensor {
	int kind;
	dtype_t type;
	int64_t rows, cols;
	uint64_t seed;
	const uint8_t *mute; /* (rows) rows to write as zeros, or NULL */
	float scale;         /* KIND_NORM: the values' factor (1 unless flat_logits) */
	const float *values; /* KIND_VALUES: the one row, given */
} synth_tensor_t;

typedef struct synth_ctx {
	synth_tensor_t *t;
	int64_t n;
} synth_ctx_t;

/* Rows of uniform values with unit output variance for a matvec:
 * U(-a, a) with a = sqrt(3 / cols); norms near 1; biases small. */
static int synth_fill(void *user, int64_t index, void *dst, size_t nbytes)
{
	synth_ctx_t *sc = user;
	const synth_tensor_t *t = &sc->t[index];
	if (t->kind == KIND_VALUES) {
		memcpy(dst, t->values, (size_t)t->cols * sizeof(float));
		return 0;
	}
	rng_t rng;
	rng_seed(&rng, t->seed);
	float *row = malloc((size_t)t->cols * sizeof(float));
	size_t rb = dtype_row_bytes(t->type, t->cols);
	float a = t->kind == KIND_MATRIX ? sqrtf(3.0f / (float)t->cols)
		: t->kind == KIND_EMBED  ? 1.0f
					 : 0.1f;
	for (int64_t r = 0; r < t->rows; r++) {
		for (int64_t i = 0; i < t->cols; i++) {
			float u = rng_float(&rng) * 2.0f - 1.0f;
			row[i] = t->kind == KIND_NORM ? (1.0f + 0.1f * u) * t->scale : a * u;
		}
		if (t->mute && t->mute[r]) /* drawn all the same: the rng
					      stream of the other rows stays */
			memset(row, 0, (size_t)t->cols * sizeof *row);
		quantize_row(t->type, row, (char *)dst + (size_t)r * rb, t->cols);
	}
	free(row);
	(void)nbytes;
	return 0;
}

/* True when text[0..n) is non-empty, well-formed UTF-8 and has no control
 * character but newline and tab (C0, DEL, C1). */
static bool printable(const char *text, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq_len(text + i, n - i);
		unsigned char c = (unsigned char)text[i];
		if (!k || (k == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)) ||
		    (k == 2 && c == 0xC2 && (unsigned char)text[i + 1] < 0xA0))
			return false;
		i += k;
	}
	return true;
}

/* (n_vocab) 1 for each token whose text is not printable on its own. */
static uint8_t *unprintable_tokens(const tokenizer_t *tok)
{
	int32_t n = tokenizer_n_vocab(tok);
	uint8_t *mute = malloc((size_t)n);
	if (!mute)
		return err_sys("malloc"), NULL;
	for (int32_t id = 0; id < n; id++) {
		char piece[512];
		int k = tokenizer_decode(tok, -1, id, piece, sizeof piece);
		mute[id] = !printable(piece, k > 0 ? (size_t)k : 0);
	}
	return mute;
}

int synth_write(const synth_shape_t *s, dtype_t type, uint64_t seed,
		int32_t n_layers, const char *path, synth_progress_fn progress,
		void *user)
{
	quant_mix_t mix = quant_mix_pure(type);
	return synth_write_mix(s, &mix, seed, n_layers, path, progress, user);
}

int synth_write_mix(const synth_shape_t *s, const quant_mix_t *mix, uint64_t seed,
		    int32_t n_layers, const char *path, synth_progress_fn progress,
		    void *user)
{
	return synth_write_tok(s, mix, seed, n_layers, NULL, NULL, path, progress,
			       user);
}

int synth_write_tok(const synth_shape_t *s, const quant_mix_t *mix, uint64_t seed,
		    int32_t n_layers, const tokenizer_t *real_tok,
		    const char *chat_template, const char *path,
		    synth_progress_fn progress, void *user)
{
	model_config_t c = {
		.arch = s->arch, .dim = s->dim, .hidden_dim = s->hidden_dim,
		.n_layers = n_layers > 0 ? n_layers : s->n_layers,
		.n_heads = s->n_heads, .n_kv_heads = s->n_kv_heads,
		.head_dim = s->head_dim ? s->head_dim : s->dim / s->n_heads,
		.vocab_size = s->vocab, .ctx = s->ctx,
		.rope_dim = s->head_dim ? s->head_dim : s->dim / s->n_heads,
		.rope_neox = arch_info[s->arch].rope_neox, .rope_theta = s->rope_theta,
		.rms_eps = s->rms_eps,
	};
	const arch_info_t *ai = &arch_info[s->arch];
	gguf_writer_t *w = gguf_writer_new();
	write_config(w, &c, s->name);
	write_arch_keys(w, s, &c);
	gguf_writer_set_u32(w, "egang.synth.seed", (uint32_t)seed);
	gguf_writer_set_str(w, "egang.synth.type", mix->name);
	gguf_writer_set_u32(w, "general.file_type", mix->ftype);
	tokenizer_t *tok = real_tok ? NULL
			   : tokenizer_synth(s->tok_kind, s->vocab, seed);
	if (!tok && !real_tok) {
		gguf_writer_free(w);
		return -1;
	}
	if (real_tok) /* the model's vocabulary follows the tokenizer */
		c.vocab_size = tokenizer_n_vocab(real_tok);
	tokenizer_write_gguf(real_tok ? real_tok : tok, w);
	phi3_name(w, s, real_tok ? real_tok : tok);
	if (chat_template)
		gguf_writer_set_str(w, "tokenizer.chat_template", chat_template);
	uint8_t *mute = unprintable_tokens(real_tok ? real_tok : tok);
	tokenizer_free(tok);
	if (!mute) {
		gguf_writer_free(w);
		return -1;
	}

	int64_t D = c.dim, H = c.hidden_dim, Q = (int64_t)c.n_heads * c.head_dim,
		KV = (int64_t)c.n_kv_heads * c.head_dim;
	int64_t cap = 4 + 16 * (int64_t)c.n_layers;
	float rope_freqs[512];
	if (s->llama3_factor > 0)
		llama3_rope_factors(s, c.rope_dim < 1024 ? c.rope_dim : 1024, rope_freqs);
	synth_ctx_t sc = {calloc((size_t)cap, sizeof *sc.t), 0};
	uint64_t h0 = seed * 0x9e3779b97f4a7c15ull + 1;
	/* A quantized type needs rows of whole blocks; a matrix whose rows are
	 * not (stories260k's hidden width 172) falls back as llama.cpp's
	 * quantizer does (quant_tensor_type: a K-quant to a 32-block type, then
	 * f16). */
	const int gqa = c.n_heads / c.n_kv_heads;
#define ADD(name_, kind_, rows_, cols_)                                          \
	do {                                                                     \
		dtype_t t_ = (kind_) == KIND_NORM || (kind_) == KIND_BIAS ||    \
				     (kind_) == KIND_VALUES ? DTYPE_F32                 \
			     : quant_tensor_type(mix, name_, (cols_), c.n_layers, gqa, \
						 s->tied);                        \
		int64_t ne_[2] = {(cols_), (rows_)};                             \
		sc.t[sc.n] = (synth_tensor_t){(kind_), t_, (rows_), (cols_),     \
					      hash64(name_, strlen(name_), h0), NULL, 1.0f, NULL}; \
		if (!strcmp(name_, s->tied ? "token_embd.weight" : "output.weight")) \
			sc.t[sc.n].mute = mute;                                  \
		gguf_writer_add_tensor(w, name_, t_, (rows_) == 1 ? 1 : 2, ne_, NULL); \
		sc.n++;                                                          \
	} while (0)
	char n[96];
	ADD("token_embd.weight", KIND_EMBED, (int64_t)c.vocab_size, D);
	for (int l = 0; l < c.n_layers; l++) {
#define NAME(suffix) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), n)
		ADD(NAME("attn_norm.weight"), KIND_NORM, 1, D);
		if (ai->fused) {
			ADD(NAME("attn_qkv.weight"), KIND_MATRIX, Q + 2 * KV, D);
		} else {
			ADD(NAME("attn_q.weight"), KIND_MATRIX, Q, D);
			ADD(NAME("attn_k.weight"), KIND_MATRIX, KV, D);
			ADD(NAME("attn_v.weight"), KIND_MATRIX, KV, D);
		}
		if (ai->qkv_bias) {
			ADD(NAME("attn_q.bias"), KIND_BIAS, 1, Q);
			ADD(NAME("attn_k.bias"), KIND_BIAS, 1, KV);
			ADD(NAME("attn_v.bias"), KIND_BIAS, 1, KV);
		}
		if (ai->qk_norm) {
			ADD(NAME("attn_q_norm.weight"), KIND_NORM, 1, (int64_t)c.head_dim);
			ADD(NAME("attn_k_norm.weight"), KIND_NORM, 1, (int64_t)c.head_dim);
		}
		ADD(NAME("attn_output.weight"), KIND_MATRIX, D, Q);
		if (ai->post_norms)
			ADD(NAME("post_attention_norm.weight"), KIND_NORM, 1, D);
		ADD(NAME("ffn_norm.weight"), KIND_NORM, 1, D);
		if (ai->fused) { /* gate rows, then up rows */
			ADD(NAME("ffn_up.weight"), KIND_MATRIX, 2 * H, D);
			ADD(NAME("ffn_down.weight"), KIND_MATRIX, D, H);
		} else {
			ADD(NAME("ffn_gate.weight"), KIND_MATRIX, H, D);
			ADD(NAME("ffn_down.weight"), KIND_MATRIX, D, H);
			ADD(NAME("ffn_up.weight"), KIND_MATRIX, H, D);
		}
		if (ai->post_norms)
			ADD(NAME("post_ffw_norm.weight"), KIND_NORM, 1, D);
#undef NAME
	}
	ADD("output_norm.weight", KIND_NORM, 1, D);
	/* The tied classifier is the embedding (entries U(-1, 1), sd 0.58):
	 * against a normalized hidden state of norm sqrt(D) its logits have
	 * an sd of about 0.58 sqrt(D) (26 at D = 2048), one token takes all the
	 * probability and greedy agreement says little. --flat-logits scales
	 * the final norm so the logits' sd is about 1, as the untied
	 * classifier's (U(-a, a), a = sqrt(3 / D)). */
	if (s->tied && s->flat_logits)
		sc.t[sc.n - 1].scale = sqrtf(3.0f / (float)D);
	if (s->llama3_factor > 0) {
		ADD("rope_freqs.weight", KIND_VALUES, 1, (int64_t)c.rope_dim / 2);
		sc.t[sc.n - 1].values = rope_freqs;
	}
	if (!s->tied)
		ADD("output.weight", KIND_MATRIX, (int64_t)c.vocab_size, D);
#undef ADD
	gguf_writer_set_fill(w, synth_fill, &sc);
	gguf_writer_set_progress(w, progress, user);
	int rc = gguf_writer_write(w, path);
	gguf_writer_free(w);
	free(sc.t);
	free(mute);
	return rc;
}

/* ---- llama2.c -> GGUF ---- */

int model_convert_llama2c(const char *bin, const char *tok, const char *out)
{
	model_t *m = model_load(bin, tok);
	if (!m)
		return -1;
	if (strcmp(m->format, "llama2c") != 0) {
		model_free(m);
		return err_set("%s: not a llama2.c checkpoint", bin);
	}
	const model_config_t *c = &m->cfg;
	gguf_writer_t *w = gguf_writer_new();
	write_config(w, c, m->name);
	tokenizer_write_gguf(m->tok, w);
	char n[96];
#define MAT(name_, t_)                                                          \
	gguf_writer_add_tensor(w, name_, DTYPE_F32, 2,                          \
			       (int64_t[2]){(t_).cols, (t_).rows}, (t_).data)
#define VEC(name_, p_, len_)                                                   \
	gguf_writer_add_tensor(w, name_, DTYPE_F32, 1, (int64_t[1]){(len_)}, (p_))
	MAT("token_embd.weight", m->tok_embd);
	for (int l = 0; l < c->n_layers; l++) {
		const layer_t *y = &m->layers[l];
#define NAME(suffix) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), n)
		VEC(NAME("attn_norm.weight"), y->attn_norm, c->dim);
		MAT(NAME("attn_q.weight"), y->wq);
		MAT(NAME("attn_k.weight"), y->wk);
		MAT(NAME("attn_v.weight"), y->wv);
		MAT(NAME("attn_output.weight"), y->wo);
		VEC(NAME("ffn_norm.weight"), y->ffn_norm, c->dim);
		MAT(NAME("ffn_gate.weight"), y->w_gate);
		MAT(NAME("ffn_down.weight"), y->w_down);
		MAT(NAME("ffn_up.weight"), y->w_up);
#undef NAME
	}
	VEC("output_norm.weight", m->output_norm, c->dim);
	if (m->output.data != m->tok_embd.data)
		MAT("output.weight", m->output);
#undef MAT
#undef VEC
	int rc = gguf_writer_write(w, out);
	gguf_writer_free(w);
	model_free(m);
	return rc;
}
