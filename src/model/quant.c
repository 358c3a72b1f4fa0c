/* quant: which type each tensor of a model gets (one type throughout, or a
 * llama-quantize preset mix), and `egang quantize`'s file rewrite.
 *
 * The preset rules are llama.cpp's llama-quantize (src/llama-quant.cpp,
 * llama_tensor_get_type) for dense llama / qwen2 models without an
 * importance matrix: a preset has a base type, and raises
 *  - output.weight (and token_embd.weight when the classifier is tied to
 *    it) to Q6_K (Q8_0 when its rows are not whole super-blocks);
 *  - attn_v, attn_output and ffn_down in some layers, by the preset; a
 *    fused attn_qkv (phi3) is an attn_v to llama-quantize (its
 *    category_is_attn_v), so it gets attn_v's rule, layer by layer;
 * then any type whose block does not divide the row length falls back
 * (Q2_K, Q3_K -> Q4_0; Q4_K -> Q5_0; Q5_K -> Q5_1; Q6_K -> Q8_0; IQ4_XS ->
 * IQ4_NL; then F16
 * when rows are not whole 32-blocks either). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "model/model.h"

enum {
	PRESET_PURE,
	PRESET_Q2_K,
	PRESET_Q3_K_S,
	PRESET_Q3_K_M,
	PRESET_Q3_K_L,
	PRESET_Q4_K_S,
	PRESET_Q4_K_M,
	PRESET_Q5_K_S,
	PRESET_Q5_K_M,
	PRESET_Q6_K,
	PRESET_IQ4_NL,
	PRESET_IQ4_XS,
};

static const struct {
	const char *name;
	int preset;
	dtype_t base;
	uint32_t ftype; /* llama_ftype, for general.file_type */
} presets[] = {
	{ "q2_k", PRESET_Q2_K, DTYPE_Q2_K, 10 },     { "q3_k_s", PRESET_Q3_K_S, DTYPE_Q3_K, 11 },
	{ "q3_k_m", PRESET_Q3_K_M, DTYPE_Q3_K, 12 }, { "q3_k_l", PRESET_Q3_K_L, DTYPE_Q3_K, 13 },
	{ "q4_k_s", PRESET_Q4_K_S, DTYPE_Q4_K, 14 }, { "q4_k_m", PRESET_Q4_K_M, DTYPE_Q4_K, 15 },
	{ "q5_k_s", PRESET_Q5_K_S, DTYPE_Q5_K, 16 }, { "q5_k_m", PRESET_Q5_K_M, DTYPE_Q5_K, 17 },
	{ "q6_k", PRESET_Q6_K, DTYPE_Q6_K, 18 },     { "iq4_nl", PRESET_IQ4_NL, DTYPE_IQ4_NL, 25 },
	{ "iq4_xs", PRESET_IQ4_XS, DTYPE_IQ4_XS, 30 },
};

/* llama_ftype of a pure type (general.file_type). */
static uint32_t pure_ftype(dtype_t t)
{
	static const uint32_t ft[DTYPE_COUNT] = {
		[DTYPE_F32] = 0,  [DTYPE_F16] = 1,  [DTYPE_BF16] = 32, [DTYPE_Q8_0] = 7,
		[DTYPE_Q4_0] = 2, [DTYPE_Q4_1] = 3, [DTYPE_Q5_0] = 8,  [DTYPE_Q5_1] = 9,
		[DTYPE_Q2_K] = 10, [DTYPE_Q3_K] = 12, [DTYPE_Q4_K] = 15, [DTYPE_Q5_K] = 17,
		[DTYPE_Q6_K] = 18, [DTYPE_IQ4_NL] = 25, [DTYPE_IQ4_XS] = 30,
	};
	return ft[t];
}

quant_mix_t quant_mix_pure(dtype_t t)
{
	return (quant_mix_t){ dtype_info[t].name, t, PRESET_PURE, pure_ftype(t) };
}

int quant_mix_from_name(const char *name, quant_mix_t *out)
{
	for (size_t i = 0; i < EG_ARRAY_LEN(presets); i++)
		if (strcasecmp(name, presets[i].name) == 0) {
			*out = (quant_mix_t){ presets[i].name, presets[i].base, presets[i].preset,
					      presets[i].ftype };
			return 0;
		}
	int t = dtype_from_name(name);
	if (t < 0)
		return -1;
	*out = quant_mix_pure((dtype_t)t);
	return 0;
}

const char *quant_mix_names(void)
{
	return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q3_k (one type), "
	       "q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_nl, "
	       "iq4_xs (presets)";
}

/* A type whose block does not divide cols -> llama-quantize's fallback. */
static dtype_t fallback(dtype_t t, int64_t cols)
{
	if (cols % dtype_info[t].block == 0)
		return t;
	switch (t) {
	case DTYPE_Q2_K:
	case DTYPE_Q3_K: t = DTYPE_Q4_0; break;
	case DTYPE_Q4_K: t = DTYPE_Q5_0; break;
	case DTYPE_Q5_K: t = DTYPE_Q5_1; break;
	case DTYPE_Q6_K: t = DTYPE_Q8_0; break;
	case DTYPE_IQ4_XS: t = DTYPE_IQ4_NL; break;
	default: break;
	}
	return cols % dtype_info[t].block == 0 ? t : DTYPE_F16;
}

/* llama-quantize's use_more_bits: the first and last eighth of the layers
 * and every third one between. */
static bool more_bits(int i, int n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

bool quant_tensor_quantizable(const char *name, uint32_t n_dims)
{
	return n_dims >= 2 && ends_with(name, "weight") && !strstr(name, "_norm.weight");
}

dtype_t quant_tensor_type(const quant_mix_t *q, const char *name, int64_t cols,
			  int n_layers, int n_gqa, bool tied)
{
	const int p = q->preset;
	dtype_t t = q->base;
	int il = -1;
	if (sscanf(name, "blk.%d.", &il) != 1)
		il = -1;
	const bool output = strcmp(name, "output.weight") == 0 ||
			    (tied && strcmp(name, "token_embd.weight") == 0);
	if (p == PRESET_PURE)
		return fallback(t, cols);
	if (output) {
		t = cols % QK_K ? DTYPE_Q8_0 : DTYPE_Q6_K;
	} else if (strstr(name, "attn_v.weight") || strstr(name, "attn_qkv.weight")) {
		if (p == PRESET_Q2_K)
			t = n_gqa >= 4 ? DTYPE_Q4_K : DTYPE_Q3_K;
		else if (p == PRESET_Q3_K_M)
			t = il < 2 ? DTYPE_Q5_K : DTYPE_Q4_K;
		else if (p == PRESET_Q3_K_L)
			t = DTYPE_Q5_K;
		else if ((p == PRESET_Q4_K_M || p == PRESET_Q5_K_M) && more_bits(il, n_layers))
			t = DTYPE_Q6_K;
		else if (p == PRESET_Q4_K_S && il < 4)
			t = DTYPE_Q5_K;
		else if ((p == PRESET_IQ4_NL || p == PRESET_IQ4_XS) && n_gqa >= 4)
			t = DTYPE_Q5_K;
	} else if (strstr(name, "ffn_down")) {
		if (p == PRESET_Q2_K)
			t = DTYPE_Q3_K;
		else if (p == PRESET_Q3_K_M)
			t = il < n_layers / 16 ? DTYPE_Q5_K : DTYPE_Q4_K;
		else if (p == PRESET_Q3_K_L)
			t = DTYPE_Q5_K;
		else if ((p == PRESET_Q4_K_M || p == PRESET_Q5_K_M) && more_bits(il, n_layers))
			t = DTYPE_Q6_K;
		else if (p == PRESET_Q4_K_S && il < n_layers / 8)
			t = DTYPE_Q5_K;
		else if ((p == PRESET_IQ4_NL || p == PRESET_IQ4_XS) && il < n_layers / 8)
			t = DTYPE_Q5_K;
	} else if (strstr(name, "attn_output.weight")) {
		if (p == PRESET_Q2_K)
			t = DTYPE_Q3_K;
		else if (p == PRESET_Q3_K_M)
			t = DTYPE_Q4_K;
		else if (p == PRESET_Q3_K_L)
			t = DTYPE_Q5_K;
	}
	return fallback(t, cols);
}

/* ---- egang quantize ---- */

typedef struct qjob {
	const gguf_tensor_t **src; /* per output tensor: the source */
	dtype_t *type;             /* per output tensor: its type */
	int threads;
} qjob_t;

typedef struct qpart {
	const gguf_tensor_t *t;
	dtype_t to;
	void *dst;
	int64_t cols, r0, r1;
	int rc;
} qpart_t;

/* Rows r0..r1-1 of a source tensor, through float, into type `to`. */
static void *quant_rows(void *arg)
{
	qpart_t *p = arg;
	const size_t sb = dtype_row_bytes(p->t->type, p->cols), db = dtype_row_bytes(p->to, p->cols);
	float *row = malloc((size_t)p->cols * sizeof *row);
	if (!row) {
		p->rc = -1;
		return NULL;
	}
	for (int64_t r = p->r0; r < p->r1; r++) {
		dequantize_row(p->t->type, (const char *)p->t->data + (size_t)r * sb, row, p->cols);
		quantize_row(p->to, row, (char *)p->dst + (size_t)r * db, p->cols);
	}
	free(row);
	p->rc = 0;
	return NULL;
}

static int quant_fill(void *user, int64_t index, void *dst, size_t nbytes)
{
	qjob_t *j = user;
	const gguf_tensor_t *t = j->src[index];
	dtype_t to = j->type[index];
	if (to == t->type) {
		memcpy(dst, t->data, nbytes);
		return 0;
	}
	int64_t cols = t->ne[0], rows = (int64_t)(t->nbytes / dtype_row_bytes(t->type, cols));
	int n = j->threads < 1 ? 1 : j->threads > 64 ? 64 : j->threads;
	if (rows < n)
		n = (int)rows;
	qpart_t parts[64];
	pthread_t tid[64];
	bool started[64] = { false };
	for (int i = 0; i < n; i++)
		parts[i] = (qpart_t){ t, to, dst, cols, rows * i / n, rows * (i + 1) / n, -1 };
	for (int i = 1; i < n; i++) /* parts 1.. on threads, part 0 here */
		started[i] = pthread_create(&tid[i], NULL, quant_rows, &parts[i]) == 0;
	quant_rows(&parts[0]);
	for (int i = 1; i < n; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			quant_rows(&parts[i]); /* no thread: this one does it */
	}
	for (int i = 0; i < n; i++)
		if (parts[i].rc < 0)
			return err_set("quantize: out of memory");
	return 0;
}

static int arch_int(const gguf_t *g, const char *arch, const char *key, int64_t *v)
{
	char full[128];
	snprintf(full, sizeof full, "%s.%s", arch, key);
	return gguf_get_int(g, full, v);
}

int model_quantize_file(const char *in, const char *out, const quant_mix_t *mix,
			bool allow_requantize, int threads, synth_progress_fn progress,
			void *user)
{
	gguf_t *g = gguf_open(in);
	if (!g)
		return -1;
	int rc = -1;
	gguf_writer_t *w = NULL;
	int64_t nt = gguf_n_tensors(g);
	qjob_t j = { calloc((size_t)nt + 1, sizeof *j.src), calloc((size_t)nt + 1, sizeof *j.type),
		     threads };
	gguf_str_t arch_s;
	char arch[64] = "llama";
	if (gguf_get_str(g, "general.architecture", &arch_s) == 0 && arch_s.n < sizeof arch) {
		memcpy(arch, arch_s.s, arch_s.n);
		arch[arch_s.n] = '\0';
	}
	int64_t nl = 0, nh = 1, nkv = 1;
	if (arch_int(g, arch, "block_count", &nl) < 0 || nl <= 0) {
		err_set("%s: key '%s.block_count' is missing or not a positive integer", in, arch);
		goto done;
	}
	if (arch_int(g, arch, "attention.head_count", &nh) < 0 || nh <= 0)
		nh = 1;
	if (arch_int(g, arch, "attention.head_count_kv", &nkv) < 0 || nkv <= 0)
		nkv = nh;
	const bool tied = gguf_find_tensor(g, "output.weight") == NULL;
	if (!j.src || !j.type) {
		err_set("quantize: out of memory");
		goto done;
	}
	w = gguf_writer_new();
	gguf_writer_copy_kv(w, g);
	gguf_writer_set_u32(w, "general.file_type", mix->ftype);
	gguf_writer_set_u32(w, "general.quantization_version", 2);
	for (int64_t i = 0; i < nt; i++) {
		const gguf_tensor_t *t = gguf_tensor(g, i);
		char name[256];
		if (t->name.n >= sizeof name) {
			err_set("%s: tensor %lld's name is longer than %zu bytes", in, (long long)i,
				sizeof name - 1);
			goto done;
		}
		memcpy(name, t->name.s, t->name.n);
		name[t->name.n] = '\0';
		dtype_t to = t->type;
		if (quant_tensor_quantizable(name, t->n_dims)) {
			to = quant_tensor_type(mix, name, t->ne[0], (int)nl, (int)(nh / nkv), tied);
			if (dtype_info[t->type].block > 1 && to != t->type && !allow_requantize) {
				err_set("%s: tensor '%s' is already %s (quantizing it again loses "
					"more; --allow-requantize does it)", in, name,
					dtype_info[t->type].name);
				goto done;
			}
		}
		j.src[i] = t;
		j.type[i] = to;
		if (gguf_writer_add_tensor(w, name, to, t->n_dims, t->ne, NULL) < 0)
			goto done;
	}
	gguf_writer_set_fill(w, quant_fill, &j);
	gguf_writer_set_progress(w, progress, user);
	rc = gguf_writer_write(w, out);
done:
	gguf_writer_free(w);
	free(j.src);
	free(j.type);
	gguf_close(g);
	return rc;
}

void model_type_usage(const model_t *m, model_type_use_t use[DTYPE_COUNT])
{
	memset(use, 0, DTYPE_COUNT * sizeof *use);
	for (int64_t i = 0; m->gguf && i < gguf_n_tensors(m->gguf); i++) {
		const gguf_tensor_t *t = gguf_tensor(m->gguf, i);
		use[t->type].tensors++;
		use[t->type].file_bytes += t->nbytes;
	}
	for (int l = 0; l < m->cfg.n_layers; l++) {
		const layer_t *y = &m->layers[l];
		const tensor_t *w[] = {&y->wq, &y->wk, &y->wv, &y->wo,
				       &y->w_gate, &y->w_up, &y->w_down};
		for (size_t k = 0; k < EG_ARRAY_LEN(w); k++)
			use[w[k]->type].token_bytes += tensor_stream_bytes(w[k]);
	}
	use[m->output.type].token_bytes += tensor_stream_bytes(&m->output);
	use[m->tok_embd.type].token_bytes +=
		dtype_row_bytes(m->tok_embd.type, m->tok_embd.cols);
}
