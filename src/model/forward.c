/* forward: the decoder's token step as waves of chunks (see forward.h). */
#include "model/forward.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/base.h"

enum {
	STEP_QKV,
	STEP_ATTN,
	STEP_WO,
	STEP_FFN1,
	STEP_FFN2,
	STEP_COUNT
};

/* The batch plan's waves of a layer: each matrix step, then a wave of one
 * chunk per token for what the decode plan does in that step's serial
 * finish (the batch's per-token steps, below b_act_fill_row). */
enum {
	BSTEP_QKV,
	BSTEP_QKV_TOK,
	BSTEP_ATTN,
	BSTEP_ATTN_TOK,
	BSTEP_WO,
	BSTEP_WO_TOK,
	BSTEP_FFN1,
	BSTEP_FFN1_TOK,
	BSTEP_FFN2,
	BSTEP_FFN2_TOK,
	BSTEP_COUNT
};

/* Default weight bytes per chunk. Decode: larger chunks stream better
 * (fewer claims, fewer cold starts of a row group): 256 KiB for quantized
 * weights, 128 KiB for float ones, the best of 32 / 128 / 256 KiB
 * (doc/measurements.md). Batched prefill keeps 32 KiB: a chunk's rows are
 * read once per token tile and should stay in L1/L2. */
#ifndef DECODE_CHUNK_Q
#define DECODE_CHUNK_Q (256u << 10)
#endif
#ifndef DECODE_CHUNK_F
#define DECODE_CHUNK_F (128u << 10)
#endif
#define BATCH_CHUNK_BYTES (32u << 10)

struct forward {
	const model_t *m;
	model_config_t c;
	int32_t ctx;
	int32_t token, pos;
	/* activations */
	float *x;      /* (dim) residual stream */
	float *xb;     /* (dim) normed input of the next matrices */
	void *xb_q;    /* (dim) xb as Q8_0 blocks when a consumer needs it */
	float *q;      /* (n_heads * head_dim) */
	float *att;    /* (n_heads * head_dim) attention output */
	void *att_q;   /* att as Q8_0 */
	float *scores; /* (n_heads, ctx) */
	float *hb;     /* (hidden) */
	void *hb_q;    /* hb as Q8_0 */
	float *logits; /* (vocab) */
	/* the KV cache the decode plan reads and writes: the own one, or a
	 * sequence's (forward_set_input_kv); (layer, kv_cap) rows of kv_rb
	 * bytes (kv_dim elements of type kvt) */
	uint8_t *k_cache, *v_cache;
	int32_t kv_cap;
	kv_type_t kvt;
	size_t kv_rb;
	forward_kv_t own; /* the own cache, ctx positions */
	/* the token's K and V rows as floats before they are stored (kv_dim
	 * each; the QKV finish converts them into the cache) */
	float *k_new, *v_new;
	/* RoPE's (cos, sin) table of the token's position (rope_table), rope_dim
	 * floats per position, computed once per token (forward_set_input) or
	 * per batch (forward_set_batch: bmax rows) instead of once per
	 * rotation: the sinf/cosf/powf of 2 rotations x 22 layers were ~75 us
	 * of serial finish time per tinyllama-1.1b token */
	float *rope_cs;
	/* the same for the sliding-window layers (their own base), or NULL */
	float *rope_cs_swa;
	/* the global layers' RoPE factors (model_t: rope_freqs, or phi3's
	 * short or long by the context), or NULL */
	const float *rope_ff;
	float *ytmp;   /* (dim) wo's or down's output before its post-norm */
	/* chunking */
	uint32_t rows_qkv, rows_wo, rows_ffn1, rows_ffn2, rows_cls;
	wave_t *waves;
	wave_plan_t plan;
	/* batched prefill (forward_set_batch): bmax tokens at most, bn in
	 * this batch; activations one row per token */
	int32_t bmax, bn;
	int32_t *btok;    /* (bmax) */
	/* the batch's sequences (forward_set_segs): token k is at position
	 * bpos_of[k] of segment bseg_of[k]; its K and V rows go to bk, bv
	 * first and into the segment's cache at the QKV finish */
	forward_seg_t *bsegs; /* (bmax) */
	int32_t bnseg;
	int32_t *bseg_of, *bpos_of; /* (bmax) */
	float *bk, *bv;   /* (bmax, kv_dim) */
	/* logits: bnlog rows, one per segment that asks (in segment order),
	 * into f->logits when there is one row, else into blog */
	int32_t bnlog, blog_cap;
	int32_t *blog_tok; /* (bmax) the batch token of each logits row */
	int32_t *blog_row; /* (bmax) each segment's logits row or -1 */
	float *blog;       /* (blog_cap, vocab) */
	float *bx, *bxb;  /* (bmax, dim) */
	void *bxb_q;      /* (bmax) rows of xq_row(dim) bytes */
	float *bq, *batt; /* (bmax, n_heads * head_dim) */
	void *batt_q;     /* (bmax) rows of xq_row(Q) bytes */
	float *bhb;       /* (bmax, hidden) */
	void *bhb_q;      /* (bmax) rows of xq_row(hidden) bytes */
	float *btmp;      /* (bmax, max(dim, hidden)) matrix outputs before use */
	void *bxb_aux, *batt_aux, *bhb_aux; /* gemm_aux_prepare of the *_q rows */
	uint32_t brows_qkv, brows_wo, brows_ffn1, brows_ffn2;
	wave_t *bwaves;
	wave_plan_t bplan;
	/* an attention chunk of the batch found no scratch memory (set by
	 * any participant, relaxed: the token's last barrier, whose release
	 * and acquire every chunk passes before the leader returns from the
	 * plan, orders it before forward_batch_status reads it) */
	_Atomic bool batt_failed;
};

/* Tokens of a batch per attention chunk. */
#define ATT_TOKENS 16

/* Whether matrices of type t read the float activations as they are (F32;
 * F16 and BF16 read them rounded to their type, act_prepare). */
static inline bool act_raw(dtype_t t)
{
	return dtype_info[t].act == DTYPE_F32 && t != DTYPE_F16 && t != DTYPE_BF16;
}

/* The key of t's prepared activations: the activation type, or t itself for
 * F16 / BF16 (rounded floats, each in its own rows). */
static inline dtype_t act_key(dtype_t t)
{
	return act_raw(t) || dtype_info[t].act != DTYPE_F32 ? dtype_info[t].act : t;
}

/* Bytes of one token's activations for matrices of type t (n elements). */
static inline size_t act_row(dtype_t t, int64_t n)
{
	dtype_t a = dtype_info[t].act;
	return a == DTYPE_F32 ? (size_t)n * sizeof(float) : dtype_row_bytes(a, n);
}

/* The prepared activation buffers (xb_q, att_q, hb_q and the batch's)
 * hold `rows` rows of Q8_0 and after them, from act_k_off, `rows` rows of
 * Q8_K, from act_1_off `rows` rows of Q8_1, then (act_f_off) `rows` float rows rounded to F16 and `rows` rounded
 * to BF16: the matrices that read one input may take different activation
 * types (a mixed file: attn_q q4_K, attn_v q8_0 or q5_0, ffn_down f16), and
 * each type gets its own rows. */
static inline size_t act_k_off(int64_t n, int64_t rows)
{
	size_t q8 = dtype_row_bytes(DTYPE_Q8_0, n / QK * QK) * (size_t)rows;
	return (q8 + 63) & ~(size_t)63;
}

static inline size_t act_1_off(int64_t n, int64_t rows)
{
	size_t end = act_k_off(n, rows) + dtype_row_bytes(DTYPE_Q8_K, n / QK_K * QK_K) * (size_t)rows;
	return (end + 63) & ~(size_t)63;
}

static inline size_t act_f_off(int64_t n, int64_t rows)
{
	size_t end = act_1_off(n, rows) + dtype_row_bytes(DTYPE_Q8_1, n / QK * QK) * (size_t)rows;
	return (end + 63) & ~(size_t)63;
}

static inline size_t act_q_bytes(int64_t n, int64_t rows)
{
	return act_f_off(n, rows) + 2 * (size_t)n * sizeof(float) * (size_t)rows + 64;
}

/* Where the activation rows of type act (of `rows` rows of n) start. */
static inline void *act_region(dtype_t t, void *xq, int64_t n, int64_t rows)
{
	if (t == DTYPE_F16 || t == DTYPE_BF16)
		return (char *)xq + act_f_off(n, rows) +
		       (t == DTYPE_BF16 ? (size_t)n * sizeof(float) * (size_t)rows : 0);
	if (dtype_info[t].act == DTYPE_Q8_1)
		return (char *)xq + act_1_off(n, rows);
	return dtype_info[t].act == DTYPE_Q8_K ? (char *)xq + act_k_off(n, rows) : xq;
}

static inline int64_t kv_dim(const model_config_t *c)
{
	return (int64_t)c->n_kv_heads * c->head_dim;
}

/* Row of position pos of layer l in a cache of cap positions at base. */
static inline uint8_t *kv_at(const forward_t *f, void *base, int32_t cap, int64_t l,
			     int32_t pos)
{
	return (uint8_t *)base + ((size_t)l * (size_t)cap + (size_t)pos) * f->kv_rb;
}

/* Byte offset of KV head kvh's elements in a row. */
static inline size_t kv_head_off(const forward_t *f, int64_t kvh)
{
	return kv_row_bytes(f->kvt, kvh * f->c.head_dim);
}

static inline int64_t q_dim(const model_config_t *c)
{
	return (int64_t)c->n_heads * c->head_dim;
}

/* Activations for matrix w (w->cols elements) from float x and its
 * quantized twins xq (act_k_off). */
static inline const void *act_for(const tensor_t *w, const float *x, const void *xq)
{
	if (act_raw(w->type))
		return x;
	return act_region(w->type, (void *)xq, w->cols, 1);
}

/* y[0 .. r1 - r0) = rows r0 .. r1 - 1 of w @ xa, from w's packed copy
 * where it has one (the same bits either way). */
static inline void mv(const tensor_t *w, const void *xa, float *y, int64_t r0, int64_t r1)
{
	matvec_range(w->type, w->data, w->packed, w->rows, xa, y, w->cols, r0, r1);
}

/* Prepares the quantized twin of x (n) that matrices of type t read, if
 * they read one. */
static inline void act_fill(dtype_t t, const float *x, void *xq, int64_t n)
{
	if (!act_raw(t))
		act_prepare(t, x, act_region(t, xq, n, 1), n);
}

/* The types of the k <= 3 matrices ws that need prepared activations, one
 * per prepared form (act_key), into t; their count. */
static int act_types(const tensor_t *const *ws, int k, dtype_t t[3])
{
	bool done[DTYPE_COUNT] = { false };
	int n = 0;
	for (int i = 0; i < k; i++) {
		dtype_t w = ws[i]->type, a = act_key(w);
		if (!act_raw(w) && !done[a])
			t[n++] = w;
		done[a] = true;
	}
	return n;
}

/* act_fill for each activation type the k matrices ws read. */
static void act_fill_for(const tensor_t *const *ws, int k, const float *x, void *xq,
			 int64_t n)
{
	dtype_t t[3];
	for (int i = 0, nt = act_types(ws, k, t); i < nt; i++)
		act_fill(t[i], x, xq, n);
}

static inline void rows_of(uint32_t chunk, uint32_t per, int64_t total,
			   int64_t *r0, int64_t *r1)
{
	*r0 = (int64_t)chunk * per;
	*r1 = *r0 + per < total ? *r0 + per : total;
}

static inline const layer_t *layer_of(const forward_t *f, uint32_t wave)
{
	return &f->m->layers[(wave - 1) / STEP_COUNT];
}

/* The layer of a batch plan's wave, and the layer itself. */
static inline int64_t b_layer(uint32_t wave) { return (wave - 1) / BSTEP_COUNT; }

static inline const layer_t *b_layer_of(const forward_t *f, uint32_t wave)
{
	return &f->m->layers[b_layer(wave)];
}

/* ---- the architectures' steps (arch_info) ---- */

/* x (dim) times the embedding scale (gemma3: sqrt(dim)), if any. */
static void scale_embedding(const forward_t *f, float *x)
{
	if (f->c.embed_scale != 0.0f)
		for (int64_t i = 0; i < f->c.dim; i++)
			x[i] *= f->c.embed_scale;
}

/* RoPE's (cos, sin) table at pos for the global layers (swa false: base
 * rope_theta, the factors, linear scale and attn_factor) or the sliding
 * ones (base rope_theta_swa, nothing else); without factors, scaling or
 * attn_factor it is rope_table's, bit for bit. */
static void rope_fill(const forward_t *f, float *cs, int32_t pos, bool swa)
{
	const model_config_t *c = &f->c;
	int rd = c->rope_dim;
	float theta = swa ? c->rope_theta_swa : c->rope_theta;
	const float *ff = swa ? NULL : f->rope_ff;
	float scale = swa ? 1.0f : c->rope_scale, ms = swa ? 1.0f : c->rope_mscale;
	if (!ff && scale == 1.0f && ms == 1.0f) {
		rope_table(cs, rd, pos, theta);
		return;
	}
	for (int i = 0; i < rd; i += 2) {
		float freq = 1.0f / powf(theta, (float)i / (float)rd);
		float val = (float)pos * freq;
		if (ff)
			val /= ff[i / 2];
		val *= scale;
		cs[i] = cosf(val) * ms;
		cs[i + 1] = sinf(val) * ms;
	}
}

/* One token's q (n_heads heads) and k (n_kv_heads) after the QKV matrices:
 * the per-head RMSNorm (qwen3, gemma3), RoPE with the layer's table, and
 * q's extra scale (q_scale). */
static void qk_finish(const forward_t *f, const layer_t *y, float *q, float *k,
		      const float *cs)
{
	const model_config_t *c = &f->c;
	int64_t hd = c->head_dim;
	if (y->q_norm) {
		for (int h = 0; h < c->n_heads; h++)
			rmsnorm(q + h * hd, q + h * hd, y->q_norm, hd, c->rms_eps);
		for (int h = 0; h < c->n_kv_heads; h++)
			rmsnorm(k + h * hd, k + h * hd, y->k_norm, hd, c->rms_eps);
	}
	rope_with(q, c->n_heads, c->head_dim, c->rope_dim, cs, c->rope_neox);
	rope_with(k, c->n_kv_heads, c->head_dim, c->rope_dim, cs, c->rope_neox);
	if (c->q_scale != 1.0f)
		for (int64_t i = 0; i < (int64_t)c->n_heads * hd; i++)
			q[i] *= c->q_scale;
}

/* The first cached position a query at pos attends in layer y: 0, or the
 * start of its sliding window (the last swa_window positions, itself
 * included, as llama.cpp's standard SWA mask). */
static inline int32_t attn_start(const forward_t *f, const layer_t *y, int32_t pos)
{
	int32_t w = f->c.swa_window;
	return y->swa && pos >= w ? pos + 1 - w : 0;
}

/* o = gelu_tanh(a) * b (gemma3's FFN): the published tanh approximation
 * in float, in index order (o may alias a). */
static void geglu(float *o, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float x = a[i];
		float g = 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * x *
						   (1.0f + 0.044715f * x * x)));
		o[i] = g * b[i];
	}
}

/* The FFN's activation of the layer's architecture. */
static inline void ffn_act(const forward_t *f, float *o, const float *a, const float *b,
			   int64_t n)
{
	if (f->c.gelu)
		geglu(o, a, b, n);
	else
		swiglu(o, a, b, n);
}

/* logits[r0..r1) = cap * tanh(logits / cap) when the model caps them. */
static void softcap(const forward_t *f, float *logits, int64_t n)
{
	float cap = f->c.logit_softcap;
	if (cap == 0.0f)
		return;
	for (int64_t i = 0; i < n; i++)
		logits[i] = cap * tanhf(logits[i] * (1.0f / cap));
}

/* x += norm(y, w) (post-norm; w NULL: x += y). */
static void add_residual(const forward_t *f, float *x, float *y, const float *w)
{
	if (w)
		rmsnorm(y, y, w, f->c.dim, f->c.rms_eps);
	for (int64_t i = 0; i < f->c.dim; i++)
		x[i] += y[i];
}

/* ---- EMBED ---- */

static void embed_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const tensor_t *e = &f->m->tok_embd;
	const char *row = (const char *)e->data +
			  (size_t)f->token * dtype_row_bytes(e->type, e->cols);
	dequantize_row(e->type, row, f->x, e->cols);
	scale_embedding(f, f->x);
}

/* xb = rmsnorm(x, w); quantized for the k matrices ws that read it. */
static void norm_into_xb(forward_t *f, const float *w, const tensor_t *const *ws, int k)
{
	rmsnorm(f->xb, f->x, w, f->c.dim, f->c.rms_eps);
	act_fill_for(ws, k, f->xb, f->xb_q, f->c.dim);
}

/* The matrices that read a layer's attention input. */
#define QKV_OF(y) (const tensor_t *const[3]){ &(y)->wq, &(y)->wk, &(y)->wv }, 3
#define FFN1_OF(y) (const tensor_t *const[2]){ &(y)->w_gate, &(y)->w_up }, 2

static void embed_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const layer_t *y = &f->m->layers[0];
	norm_into_xb(f, y->attn_norm, QKV_OF(y));
}

/* ---- QKV: rows of the stacked [wq; wk; wv] ---- */

static void qkv_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const model_config_t *c = &f->c;
	const layer_t *y = layer_of(f, wave);
	int64_t Q = q_dim(c), KV = kv_dim(c);
	float *kc = f->k_new, *vc = f->v_new;
	const struct {
		const tensor_t *w;
		const float *b;
		float *out;
		int64_t base;
	} part[3] = {{&y->wq, y->bq, f->q, 0},
		     {&y->wk, y->bk, kc, Q},
		     {&y->wv, y->bv, vc, Q + KV}};
	int64_t r0, r1;
	rows_of(chunk, f->rows_qkv, Q + 2 * KV, &r0, &r1);
	for (int p = 0; p < 3; p++) {
		int64_t lo = r0 > part[p].base ? r0 : part[p].base;
		int64_t hi = part[p].base + part[p].w->rows;
		if (r1 < hi)
			hi = r1;
		if (lo >= hi)
			continue;
		const tensor_t *w = part[p].w;
		mv(w, act_for(w, f->xb, f->xb_q), part[p].out + (lo - part[p].base),
		   lo - part[p].base, hi - part[p].base);
		if (part[p].b)
			for (int64_t r = lo - part[p].base; r < hi - part[p].base; r++)
				part[p].out[r] += part[p].b[r];
	}
}

static void qkv_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const model_config_t *c = &f->c;
	const layer_t *y = layer_of(f, wave);
	int64_t l = (wave - 1) / STEP_COUNT, KV = kv_dim(c);
	qk_finish(f, y, f->q, f->k_new, y->swa ? f->rope_cs_swa : f->rope_cs);
	kv_store_row(f->kvt, f->k_new, kv_at(f, f->k_cache, f->kv_cap, l, f->pos), KV);
	kv_store_row(f->kvt, f->v_new, kv_at(f, f->v_cache, f->kv_cap, l, f->pos), KV);
}

/* ---- ATTN: one chunk per group of up to ATTN_GROUP query heads of one
 * KV head ---- */

/* The query heads that share a KV head (grouped-query attention) are split
 * into parts of at most ATTN_GROUP heads, one chunk each: the kernel loads
 * and transposes each block of keys once per 4 heads (attention_heads),
 * and the wave keeps n_kv_heads * parts chunks to spread over the gang
 * (tinyllama-1.1b: 4 KV heads x 2 parts of 4; heads without sharing: one
 * chunk per head, as before). Every head's arithmetic is attention_head's,
 * so the grouping changes no bit. */
#define ATTN_GROUP 4

static inline int64_t attn_parts(const model_config_t *c)
{
	int64_t g = c->n_heads / c->n_kv_heads;
	return (g + ATTN_GROUP - 1) / ATTN_GROUP;
}

/* Chunk = part (chunk % parts) of KV head (chunk / parts): query heads
 * h0..h1-1 of the wave's layer at f->pos, each against the cached keys
 * 0..pos -> f->att (head_dim per head), f->scores (ctx per head) scratch.
 * Prefill's attn_rows does the same arithmetic per query (kernels.h), so a
 * position's attention is the same bits either way. */
static void attn_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const model_config_t *c = &f->c;
	int64_t l = (wave - 1) / STEP_COUNT, hd = c->head_dim;
	int64_t g = c->n_heads / c->n_kv_heads, parts = attn_parts(c);
	int64_t kvh = chunk / parts, per = (g + parts - 1) / parts;
	int64_t h0 = kvh * g + (chunk % parts) * per, h1 = kvh * g + g;
	if (h0 + per < h1)
		h1 = h0 + per;
	int32_t t0 = attn_start(f, layer_of(f, wave), f->pos);
	const uint8_t *kc = kv_at(f, f->k_cache, f->kv_cap, l, t0) + kv_head_off(f, kvh);
	const uint8_t *vc = kv_at(f, f->v_cache, f->kv_cap, l, t0) + kv_head_off(f, kvh);
	attention_heads_kv(f->kvt, f->att + h0 * hd, f->q + h0 * hd, kc, vc, f->kv_rb,
			   f->pos + 1 - t0, (int)hd, f->scores + (size_t)h0 * f->ctx,
			   (int)(h1 - h0), f->ctx);
}

static void attn_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const layer_t *y = layer_of(f, wave);
	act_fill(y->wo.type, f->att, f->att_q, q_dim(&f->c));
}

/* ---- WO: x += wo @ att ---- */

/* The rows of chunk (per rows each) of x += w @ a (a's Q8_0 twin aq), or
 * with a norm on w's output (post_norm) the product alone into ytmp: the
 * residual add then waits for the norm (wo_finish, ffn2_finish). */
static void residual_rows(forward_t *f, const tensor_t *w, const float *a, const void *aq,
			  uint32_t per, uint32_t chunk, bool post_norm)
{
	int64_t r0, r1;
	float tmp[256];
	rows_of(chunk, per, w->rows, &r0, &r1);
	if (post_norm) {
		mv(w, act_for(w, a, aq), f->ytmp + r0, r0, r1);
		return;
	}
	/* rows_wo, rows_ffn2 <= 256 (forward_new), so tmp holds the chunk */
	mv(w, act_for(w, a, aq), tmp, r0, r1);
	for (int64_t r = r0; r < r1; r++)
		f->x[r] += tmp[r - r0];
}

static void wo_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const layer_t *y = layer_of(f, wave);
	residual_rows(f, &y->wo, f->att, f->att_q, f->rows_wo, chunk,
		      y->post_attn_norm != NULL);
}

static void wo_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const layer_t *y = layer_of(f, wave);
	if (y->post_attn_norm)
		add_residual(f, f->x, f->ytmp, y->post_attn_norm);
	norm_into_xb(f, y->ffn_norm, FFN1_OF(y));
}

/* ---- FFN1: hb = silu(gate @ xb) * (up @ xb) ---- */

static void ffn1_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const layer_t *y = layer_of(f, wave);
	int64_t r0, r1;
	float up[256];
	rows_of(chunk, f->rows_ffn1, y->w_gate.rows, &r0, &r1);
	mv(&y->w_gate, act_for(&y->w_gate, f->xb, f->xb_q), f->hb + r0, r0, r1);
	mv(&y->w_up, act_for(&y->w_up, f->xb, f->xb_q), up, r0, r1);
	ffn_act(f, f->hb + r0, f->hb + r0, up, r1 - r0);
}

static void ffn1_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const layer_t *y = layer_of(f, wave);
	act_fill(y->w_down.type, f->hb, f->hb_q, f->c.hidden_dim);
}

/* ---- FFN2: x += down @ hb ---- */

static void ffn2_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const layer_t *y = layer_of(f, wave);
	residual_rows(f, &y->w_down, f->hb, f->hb_q, f->rows_ffn2, chunk,
		      y->post_ffn_norm != NULL);
}

static void ffn2_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	uint32_t l = (wave - 1) / STEP_COUNT;
	if (f->m->layers[l].post_ffn_norm)
		add_residual(f, f->x, f->ytmp, f->m->layers[l].post_ffn_norm);
	if (l + 1 < (uint32_t)f->c.n_layers) {
		const layer_t *y = &f->m->layers[l + 1];
		norm_into_xb(f, y->attn_norm, QKV_OF(y));
	} else {
		norm_into_xb(f, f->m->output_norm, (const tensor_t *const[1]){ &f->m->output }, 1);
	}
}

/* ---- CLS: logits = output @ xb ---- */

static void cls_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const tensor_t *w = &f->m->output;
	int64_t r0, r1;
	rows_of(chunk, f->rows_cls, w->rows, &r0, &r1);
	mv(w, act_for(w, f->xb, f->xb_q), f->logits + r0, r0, r1);
	softcap(f, f->logits + r0, r1 - r0);
}

/* ---- batched prefill: the same waves over bn tokens ----
 *
 * Each wave computes, for every token of the batch, exactly what the
 * decode wave above computes for one token: the matrices through gemm_rows
 * (each output the same bits as decode's matvec_rows), attention through
 * attn_chunk, and the decode finishes' rmsnorm / rope / act_fill in waves
 * of their own, a chunk per token (the per-token steps below). So a
 * batched prefill leaves the same KV cache and the same logits, bit for
 * bit, as token-by-token decoding, at any batch size and whatever the
 * membership. A matrix chunk is a block of weight rows (a multiple of 16,
 * about chunk_bytes of weights) times all tokens of the batch: the block is
 * streamed once per batch, then read from cache. The waves are fixed at
 * forward_new (from the model and the maximum batch size): an attention
 * chunk is (head, group of 16 tokens), and chunks that a smaller batch does
 * not need, or the classifier when no logits are wanted, return at once;
 * only the per-token waves' chunk counts follow the batch (b_set_tokens). */

/* The batch's activations for matrix w: float rows, or the quantized rows
 * of its activation type (act_k_off, bmax rows). */
static inline const void *b_act(const forward_t *f, const tensor_t *w, const float *x,
				const void *xq)
{
	if (act_raw(w->type))
		return x;
	return act_region(w->type, (void *)xq, w->cols, f->bmax);
}

/* W's rows r0..r1 times ntok activation rows (gemm_rows_packed's
 * arguments): gemm_rows_packed, or for at most MV_TOKENS tokens (a small
 * decode batch) the decode matvec once per token over the chunk's rows,
 * which stay in cache after the first token, so each row still comes from
 * memory once per step. gemm_rows' tile setup (a repacked copy of each row
 * group) costs more than it saves below about 8 tokens (a serial step of
 * smollm-135m q8_0: 4 tokens 115 against 240 ms, 16 tokens 308 against 284
 * ms, on a loaded machine); where the level reads a packed matrix's groups
 * in place (gemm_small_batch) the GEMM is the faster from 2 tokens on
 * (`test_gemm --bench 2048 2048 NTOK`, q8_0, thread CPU time: 1.14x the
 * matvec per token at 2 tokens, 1.65x at 4). Both give every output the
 * matvec's bits (kernels.h), so the switch changes no bit
 * (tests/test_batch.c runs both sides of it). */
#define MV_TOKENS 4

static void b_mm(const tensor_t *w, const void *X, size_t xs, const void *aux, float *Y,
		 int64_t ys, int64_t n, int64_t r0, int64_t r1, int64_t ntok)
{
	if (ntok == 1 ||
	    (ntok <= MV_TOKENS && !(w->packed && gemm_small_batch(w->type)))) {
		for (int64_t t = 0; t < ntok; t++)
			matvec_range(w->type, w->data, w->packed, w->rows, (const char *)X + t * xs,
				     Y + t * ys + r0, n, r0, r1);
		return;
	}
	gemm_rows_packed(w->type, w->data, w->packed, w->rows, X, xs, aux, Y, ys, n, r0, r1,
			 ntok);
}

/* Token j's row of x (bn, n) prepared for each activation type the k
 * matrices ws read (as act_fill; xq holds bmax rows per type). */
static void b_act_fill_row(const forward_t *f, const tensor_t *const *ws, int k,
			   const float *x, void *xq, int64_t n, int32_t j)
{
	dtype_t t[3];
	for (int i = 0, nt = act_types(ws, k, t); i < nt; i++)
		act_prepare(t[i], x + j * n,
			    (char *)act_region(t[i], xq, n, f->bmax) + j * act_row(t[i], n), n);
}

/* The gemm aux of the first `rows` rows of xq's Q8_0 and Q8_1 regions that
 * the k matrices ws read (gemm_aux_prepare, over the rows at once). */
static void b_aux_fill(const forward_t *f, const tensor_t *const *ws, int k, void *xq,
		       void *aux, int64_t n, int32_t rows)
{
	dtype_t t[3];
	for (int i = 0, nt = act_types(ws, k, t); i < nt; i++) {
		dtype_t a = dtype_info[t[i]].act;
		if (a == DTYPE_Q8_0 || a == DTYPE_Q8_1)
			gemm_aux_prepare(t[i], act_region(t[i], xq, n, f->bmax), act_row(t[i], n),
					 n, rows, aux);
	}
}

/* Token j: xb = rmsnorm(x, w), prepared for the k matrices ws. */
static void b_norm_row(forward_t *f, const float *w, const tensor_t *const *ws, int k,
		       int32_t j)
{
	int64_t d = f->c.dim;
	rmsnorm(f->bxb + j * d, f->bx + j * d, w, d, f->c.rms_eps);
	b_act_fill_row(f, ws, k, f->bxb, f->bxb_q, d, j);
}

/* ---- the batch's per-token steps ----
 *
 * What a decode finish does for its one token (rmsnorm, RoPE, the KV
 * store, the activations' quantization), the batch plan does for each of
 * its bn tokens in a wave of its own, a chunk per token (forward_set_segs
 * sets the count), so that the gang shares it: run by a wave's last
 * arriver while the others waited, it was about 5% of a 16-token step's
 * CPU time on two cores, and its share of the step grows with the cores.
 * A token's rows are computed by the same functions in the same order as
 * the decode finish's, so the bits are those of token-by-token decoding.
 * Such a wave's finish computes the gemm aux of its quantized rows. */

static void b_embed_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const tensor_t *e = &f->m->tok_embd;
	const layer_t *y = &f->m->layers[0];
	size_t rb = dtype_row_bytes(e->type, e->cols);
	float *x = f->bx + (size_t)chunk * f->c.dim;
	dequantize_row(e->type, (const char *)e->data + (size_t)f->btok[chunk] * rb, x, e->cols);
	scale_embedding(f, x);
	b_norm_row(f, y->attn_norm, QKV_OF(y), (int32_t)chunk);
}

static void b_embed_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const layer_t *y = &f->m->layers[0];
	b_aux_fill(f, QKV_OF(y), f->bxb_q, f->bxb_aux, f->c.dim, f->bn);
}

static void b_qkv_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const model_config_t *c = &f->c;
	const layer_t *y = b_layer_of(f, wave);
	int64_t Q = q_dim(c), KV = kv_dim(c);
	const struct {
		const tensor_t *w;
		const float *b;
		float *out;
		int64_t base, ys;
	} part[3] = {{&y->wq, y->bq, f->bq, 0, Q},
		     {&y->wk, y->bk, f->bk, Q, KV},
		     {&y->wv, y->bv, f->bv, Q + KV, KV}};
	int64_t r0, r1;
	rows_of(chunk, f->brows_qkv, Q + 2 * KV, &r0, &r1);
	for (int p = 0; p < 3; p++) {
		int64_t lo = r0 > part[p].base ? r0 : part[p].base;
		int64_t hi = part[p].base + part[p].w->rows;
		if (r1 < hi)
			hi = r1;
		if (lo >= hi)
			continue;
		const tensor_t *w = part[p].w;
		int64_t ys = part[p].ys;
		lo -= part[p].base;
		hi -= part[p].base;
		b_mm(w, b_act(f, w, f->bxb, f->bxb_q), act_row(w->type, c->dim), f->bxb_aux,
		     part[p].out, ys, c->dim, lo, hi, f->bn);
		if (part[p].b)
			for (int32_t k = 0; k < f->bn; k++)
				for (int64_t r = lo; r < hi; r++)
					part[p].out[k * ys + r] += part[p].b[r];
	}
}

/* Token k's q and k rows normed and rotated, its K and V rows into its
 * sequence's cache, as the decode finish stores them (the same bits). */
static void b_qkv_tok(void *ctx, uint32_t wave, uint32_t k)
{
	forward_t *f = ctx;
	const model_config_t *c = &f->c;
	const layer_t *y = b_layer_of(f, wave);
	int64_t l = b_layer(wave), Q = q_dim(c), KV = kv_dim(c);
	const float *tab = y->swa ? f->rope_cs_swa : f->rope_cs;
	qk_finish(f, y, f->bq + k * Q, f->bk + k * KV, tab + (size_t)k * (size_t)c->rope_dim);
	const forward_kv_t *kv = f->bsegs[f->bseg_of[k]].kv;
	kv_store_row(f->kvt, f->bk + k * KV, kv_at(f, kv->k, kv->cap, l, f->bpos_of[k]), KV);
	kv_store_row(f->kvt, f->bv + k * KV, kv_at(f, kv->v, kv->cap, l, f->bpos_of[k]), KV);
}

static inline uint32_t att_groups(int32_t n)
{
	return (uint32_t)((n + ATT_TOKENS - 1) / ATT_TOKENS);
}

/* One run a..b-1 of one sequence's tokens, query heads h0..h1-1 of KV
 * head kvh (attn_rows_group_kv and attn_rows_heads_kv give each query the
 * decode path's bits). */
static void b_attn_run(forward_t *f, const layer_t *y, int64_t l, int64_t kvh,
		       int64_t h0, int64_t h1, int32_t a, int32_t b)
{
	const model_config_t *c = &f->c;
	int64_t hd = c->head_dim, Q = q_dim(c);
	const forward_kv_t *kv = f->bsegs[f->bseg_of[a]].kv;
	const uint8_t *K = kv_at(f, kv->k, kv->cap, l, 0) + kv_head_off(f, kvh);
	const uint8_t *V = kv_at(f, kv->v, kv->cap, l, 0) + kv_head_off(f, kvh);
	size_t rb = f->kv_rb;
	kv_type_t kt = f->kvt;
	bool failed = false;
	if (b - a == 1) {
		/* a decode token: its heads at once, keys and values read
		 * once for them (attn_rows_heads: the decode kernel) */
		int32_t t0 = attn_start(f, y, f->bpos_of[a]);
		failed = attn_rows_heads_kv(kt, f->bq + a * Q + h0 * hd, hd, K + (size_t)t0 * rb,
					    V + (size_t)t0 * rb, rb, f->batt + a * Q + h0 * hd,
					    hd, hd, f->bpos_of[a] - t0, (int32_t)(h1 - h0)) < 0;
	} else if (attn_start(f, y, f->bpos_of[b - 1]) == 0) {
		/* the heads' queries together: each key and value row
		 * converted once for all of them */
		failed = attn_rows_group_kv(kt, f->bq + a * Q + h0 * hd, Q, hd, K, V, rb,
					    f->batt + a * Q + h0 * hd, Q, hd, hd, f->bpos_of[a],
					    b - a, (int32_t)(h1 - h0)) < 0;
	} else {
		/* a sliding window cuts some of these queries' pasts: one
		 * token at a time from its window's start, its heads at once
		 * (as a decode token) */
		for (int32_t k = a; k < b; k++) {
			int32_t t0 = attn_start(f, y, f->bpos_of[k]);
			failed |= attn_rows_heads_kv(kt, f->bq + k * Q + h0 * hd, hd,
						     K + (size_t)t0 * rb, V + (size_t)t0 * rb, rb,
						     f->batt + k * Q + h0 * hd, hd, hd,
						     f->bpos_of[k] - t0, (int32_t)(h1 - h0)) < 0;
		}
	}
	if (failed)
		atomic_store_explicit(&f->batt_failed, true, memory_order_relaxed);
}

/* Chunk = (head, group of ATT_TOKENS tokens); the chunk of a part's first
 * head does the part's heads (attn_parts: up to ATTN_GROUP query heads of
 * one KV head, as decode), the part's other chunks return. Causal: token k
 * attends to positions 0..bpos_of[k] of its sequence, all in the cache
 * after this layer's QKV wave; a group that spans sequences runs once per
 * run of one sequence's tokens. */
static void b_attn_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const model_config_t *c = &f->c;
	int64_t l = b_layer(wave);
	int64_t g = c->n_heads / c->n_kv_heads, parts = attn_parts(c);
	int64_t per = (g + parts - 1) / parts;
	uint32_t groups = att_groups(f->bmax);
	int64_t h = chunk / groups, kvh = h / g;
	int32_t k0 = (int32_t)(chunk % groups) * ATT_TOKENS;
	if (k0 >= f->bn || (h % g) % per) /* past the batch, or not a part's first */
		return;
	int64_t h1 = h + per < kvh * g + g ? h + per : kvh * g + g;
	int32_t k1 = k0 + ATT_TOKENS < f->bn ? k0 + ATT_TOKENS : f->bn;
	const layer_t *y = b_layer_of(f, wave);
	for (int32_t a = k0, b; a < k1; a = b) {
		for (b = a + 1; b < k1 && f->bseg_of[b] == f->bseg_of[a]; b++)
			;
		b_attn_run(f, y, l, kvh, h, h1, a, b);
	}
}

/* Token k's attention output prepared for wo. */
static void b_attn_tok(void *ctx, uint32_t wave, uint32_t k)
{
	forward_t *f = ctx;
	const tensor_t *w = &b_layer_of(f, wave)->wo;
	b_act_fill_row(f, &w, 1, f->batt, f->batt_q, q_dim(&f->c), (int32_t)k);
}

static void b_attn_tok_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const tensor_t *w = &b_layer_of(f, wave)->wo;
	b_aux_fill(f, &w, 1, f->batt_q, f->batt_aux, q_dim(&f->c), f->bn);
}

/* x += W @ in for rows r0..r1 of the chunk, every token (WO and FFN2);
 * with a post-norm only btmp = W @ in (the finish adds). */
static void b_residual(forward_t *f, const tensor_t *w, const float *in,
		       const void *in_q, const void *aux, uint32_t rows,
		       uint32_t chunk, bool post)
{
	int64_t r0, r1, d = f->c.dim;
	rows_of(chunk, rows, w->rows, &r0, &r1);
	b_mm(w, b_act(f, w, in, in_q), act_row(w->type, w->cols), aux, f->btmp, d, w->cols, r0,
	     r1, f->bn);
	if (post)
		return;
	for (int32_t k = 0; k < f->bn; k++)
		for (int64_t r = r0; r < r1; r++)
			f->bx[k * d + r] += f->btmp[k * d + r];
}

static void b_wo_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const layer_t *y = b_layer_of(f, wave);
	b_residual(f, &y->wo, f->batt, f->batt_q, f->batt_aux, f->brows_wo, chunk,
		   y->post_attn_norm != NULL);
}

/* Token k: with a post-norm x += norm(btmp) (the residual add), then the
 * FFN's input. */
static void b_wo_tok(void *ctx, uint32_t wave, uint32_t k)
{
	forward_t *f = ctx;
	const layer_t *y = b_layer_of(f, wave);
	int64_t d = f->c.dim;
	if (y->post_attn_norm)
		add_residual(f, f->bx + k * d, f->btmp + k * d, y->post_attn_norm);
	b_norm_row(f, y->ffn_norm, FFN1_OF(y), (int32_t)k);
}

static void b_wo_tok_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const layer_t *y = b_layer_of(f, wave);
	b_aux_fill(f, FFN1_OF(y), f->bxb_q, f->bxb_aux, f->c.dim, f->bn);
}

static void b_ffn1_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const layer_t *y = b_layer_of(f, wave);
	int64_t r0, r1, d = f->c.dim, H = f->c.hidden_dim;
	rows_of(chunk, f->brows_ffn1, y->w_gate.rows, &r0, &r1);
	const tensor_t *g = &y->w_gate, *u = &y->w_up;
	b_mm(g, b_act(f, g, f->bxb, f->bxb_q), act_row(g->type, d), f->bxb_aux, f->bhb, H, d,
	     r0, r1, f->bn);
	b_mm(u, b_act(f, u, f->bxb, f->bxb_q), act_row(u->type, d), f->bxb_aux, f->btmp, H, d,
	     r0, r1, f->bn);
	for (int32_t k = 0; k < f->bn; k++)
		ffn_act(f, f->bhb + k * H + r0, f->bhb + k * H + r0, f->btmp + k * H + r0,
			r1 - r0);
}

/* Token k's FFN activation prepared for down. */
static void b_ffn1_tok(void *ctx, uint32_t wave, uint32_t k)
{
	forward_t *f = ctx;
	const tensor_t *w = &b_layer_of(f, wave)->w_down;
	b_act_fill_row(f, &w, 1, f->bhb, f->bhb_q, f->c.hidden_dim, (int32_t)k);
}

static void b_ffn1_tok_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	const tensor_t *w = &b_layer_of(f, wave)->w_down;
	b_aux_fill(f, &w, 1, f->bhb_q, f->bhb_aux, f->c.hidden_dim, f->bn);
}

static void b_ffn2_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const layer_t *y = b_layer_of(f, wave);
	b_residual(f, &y->w_down, f->bhb, f->bhb_q, f->bhb_aux, f->brows_ffn2, chunk,
		   y->post_ffn_norm != NULL);
}

/* Token k: with a post-norm x += norm(btmp), then the next layer's input
 * (after the last layer: b_ffn2_tok_finish). */
static void b_ffn2_tok(void *ctx, uint32_t wave, uint32_t k)
{
	forward_t *f = ctx;
	int64_t l = b_layer(wave), d = f->c.dim;
	const layer_t *y = &f->m->layers[l];
	if (y->post_ffn_norm)
		add_residual(f, f->bx + k * d, f->btmp + k * d, y->post_ffn_norm);
	if (l + 1 < f->c.n_layers) {
		const layer_t *next = &f->m->layers[l + 1];
		b_norm_row(f, next->attn_norm, QKV_OF(next), (int32_t)k);
	}
}

/* The next layer's aux; after the last layer the classifier's input: row j
 * of xb is the j-th token with logits (blog_tok[j] >= j, so this runs once
 * every token's residual is in, here rather than per token). */
static void b_ffn2_tok_finish(void *ctx, uint32_t wave)
{
	forward_t *f = ctx;
	int64_t l = b_layer(wave), d = f->c.dim;
	if (l + 1 < f->c.n_layers) {
		const layer_t *next = &f->m->layers[l + 1];
		b_aux_fill(f, QKV_OF(next), f->bxb_q, f->bxb_aux, d, f->bn);
		return;
	}
	const tensor_t *w = &f->m->output;
	for (int32_t j = 0; j < f->bnlog; j++) {
		rmsnorm(f->bxb + j * d, f->bx + (int64_t)f->blog_tok[j] * d, f->m->output_norm, d,
			f->c.rms_eps);
		b_act_fill_row(f, &w, 1, f->bxb, f->bxb_q, d, j);
	}
	if (f->bnlog)
		b_aux_fill(f, &w, 1, f->bxb_q, f->bxb_aux, d, f->bnlog);
}

/* Logits of the tokens that want them, as cls_chunk (gemm_rows: each
 * output the same bits as the decode matvec). */
static void b_cls_chunk(void *ctx, uint32_t wave, uint32_t chunk)
{
	forward_t *f = ctx;
	const tensor_t *w = &f->m->output;
	int64_t r0, r1, d = f->c.dim;
	if (!f->bnlog)
		return;
	rows_of(chunk, f->rows_cls, w->rows, &r0, &r1);
	float *out = f->bnlog == 1 ? f->logits : f->blog;
	b_mm(w, b_act(f, w, f->bxb, f->bxb_q), act_row(w->type, d), f->bxb_aux, out,
	     f->c.vocab_size, d, r0, r1, f->bnlog);
	for (int32_t j = 0; j < f->bnlog; j++)
		softcap(f, out + (size_t)j * (size_t)f->c.vocab_size + r0, r1 - r0);
}

/* Rows per chunk so that a chunk reads about `bytes` of weights: a multiple
 * of the kernels' row group (16 for quantized weights, the AVX-512
 * kernel's; 4 for float ones), at least one group, at most cap (a multiple
 * of 16). */
static uint32_t rows_per_chunk(const tensor_t *w, uint32_t bytes, uint32_t cap)
{
	size_t rb = dtype_row_bytes(w->type, w->cols);
	size_t g = dtype_info[w->type].block > 1 ? 16 : 4;
	size_t r = rb ? bytes / rb : g;
	r = (r + g - 1) & ~(g - 1);
	if (r < g)
		r = g;
	if (r > cap)
		r = cap;
	return (uint32_t)r;
}

static uint32_t div_up(int64_t a, uint32_t b) { return (uint32_t)((a + b - 1) / b); }

/* The default decode chunk of one matrix: at most `bytes`, and small
 * enough that the matrix has at least two chunks per online CPU (so a
 * small matrix on a many-core machine still feeds every member: 256 KiB
 * chunks would give smollm-135m's 576 x 576 q8_0 matrices two chunks),
 * but never below 32 KiB. ncpu 0: `bytes` as given (an explicit size).
 * Chunking never changes a row's bits, only who computes it. */
static uint32_t spread_bytes(const tensor_t *w, uint32_t bytes, int ncpu)
{
	if (ncpu <= 0)
		return bytes;
	size_t total = dtype_row_bytes(w->type, w->cols) * (size_t)w->rows;
	size_t even = total / (2 * (size_t)ncpu);
	if (even < (32u << 10))
		even = 32u << 10;
	return even < bytes ? (uint32_t)even : bytes;
}

/* Batch chunks: a multiple of 16 rows (the AVX-512 kernel's row group),
 * about `bytes` of weights, at least 16. */
static uint32_t batch_rows_per_chunk(const tensor_t *w, uint32_t bytes)
{
	size_t rb = dtype_row_bytes(w->type, w->cols);
	size_t r = rb ? bytes / rb : 16;
	r = (r + 15) & ~(size_t)15;
	return r < 16 ? 16 : (uint32_t)r;
}

#define DEFAULT_BATCH 128
#define MAX_BATCH 1024

/* Tokens per prefill batch: EGANG_PREFILL_BATCH (0 = off) or the default. */
static int32_t batch_max_from_env(void)
{
	const char *e = getenv("EGANG_PREFILL_BATCH");
	if (!e || !*e)
		return DEFAULT_BATCH;
	char *end;
	long v = strtol(e, &end, 10);
	if (*end || v < 0 || v > MAX_BATCH) {
		log_error("EGANG_PREFILL_BATCH=%s: not a number in 0..%d; using %d\n",
			  e, MAX_BATCH, DEFAULT_BATCH);
		return DEFAULT_BATCH;
	}
	return (int32_t)v;
}

/* Zeroed memory for n elements of size bytes, aligned to a cache line
 * (NULL if short). */
static void *calloc_lines(size_t n, size_t size)
{
	void *p = NULL;
	size_t bytes = n * size;
	if (eg_memalign(&p, 64, bytes ? bytes : 64) != 0)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

/* The batch buffers and wave table; -1 if memory is short. The float
 * activation rows start on cache lines (calloc's large blocks start 16
 * bytes past a page): a chunk's outputs are a multiple of 16 rows, so two
 * chunks that run at once on two cores no longer write into one line of a
 * token's row, and where a row's length is a multiple of 16 the float
 * gemm's 64-byte activation loads no longer straddle lines (faster
 * prefill: doc/measurements.md; aligning the KV cache as well gained
 * nothing measurable). */
static int batch_alloc(forward_t *f, uint32_t chunk_bytes)
{
	const model_config_t *c = &f->c;
	size_t B = (size_t)f->bmax, Q = (size_t)q_dim(c), d = (size_t)c->dim,
	       H = (size_t)c->hidden_dim, big = d > H ? d : H;
	/* Q8_0 rows take 34/32 of a float row's elements in bytes: 2 per
	 * element bounds them */
	f->btok = eg_calloc(B, sizeof *f->btok);
	f->bx = calloc_lines(B * d, sizeof(float));
	f->bxb = calloc_lines(B * d, sizeof(float));
	f->bxb_q = eg_calloc(act_q_bytes((int64_t)d, (int64_t)B), 1);
	f->bq = calloc_lines(B * Q, sizeof(float));
	f->batt = calloc_lines(B * Q, sizeof(float));
	f->batt_q = eg_calloc(act_q_bytes((int64_t)Q, (int64_t)B), 1);
	f->bhb = calloc_lines(B * H, sizeof(float));
	f->bhb_q = eg_calloc(act_q_bytes((int64_t)H, (int64_t)B), 1);
	f->btmp = calloc_lines(B * big, sizeof(float));
	f->bxb_aux = eg_calloc(gemm_aux_bytes((int64_t)d, (int64_t)B) + 64, 1);
	f->batt_aux = eg_calloc(gemm_aux_bytes((int64_t)Q, (int64_t)B) + 64, 1);
	f->bhb_aux = eg_calloc(gemm_aux_bytes((int64_t)H, (int64_t)B) + 64, 1);
	size_t KV = (size_t)kv_dim(c);
	f->bsegs = eg_calloc(B, sizeof *f->bsegs);
	f->bseg_of = eg_calloc(B, sizeof *f->bseg_of);
	f->bpos_of = eg_calloc(B, sizeof *f->bpos_of);
	f->blog_tok = eg_calloc(B, sizeof *f->blog_tok);
	f->blog_row = eg_calloc(B, sizeof *f->blog_row);
	f->bk = calloc_lines(B * KV, sizeof(float));
	f->bv = calloc_lines(B * KV, sizeof(float));
	uint32_t n = 2 + BSTEP_COUNT * (uint32_t)c->n_layers;
	f->bwaves = eg_calloc(n, sizeof *f->bwaves);
	if (!f->bsegs || !f->bseg_of || !f->bpos_of || !f->blog_tok || !f->blog_row ||
	    !f->bk || !f->bv || !f->btok || !f->bx || !f->bxb || !f->bxb_q || !f->bq || !f->batt ||
	    !f->batt_q || !f->bhb || !f->bhb_q || !f->btmp || !f->bxb_aux ||
	    !f->batt_aux || !f->bhb_aux ||
	    !f->bwaves)
		return err_set("cannot allocate prefill buffers for %d tokens",
			       f->bmax);
	const layer_t *y = &f->m->layers[0];
	f->brows_qkv = batch_rows_per_chunk(&y->wq, chunk_bytes);
	f->brows_wo = batch_rows_per_chunk(&y->wo, chunk_bytes);
	f->brows_ffn1 = batch_rows_per_chunk(&y->w_gate, chunk_bytes / 2);
	f->brows_ffn2 = batch_rows_per_chunk(&y->w_down, chunk_bytes);
	/* the per-token waves' chunk counts are the batch's (b_set_tokens) */
	f->bwaves[0] = (wave_t){1, b_embed_chunk, b_embed_finish};
	for (int l = 0; l < c->n_layers; l++) {
		wave_t *w = &f->bwaves[1 + BSTEP_COUNT * l];
		w[BSTEP_QKV] = (wave_t){div_up((int64_t)Q + 2 * kv_dim(c), f->brows_qkv),
					b_qkv_chunk, NULL};
		w[BSTEP_QKV_TOK] = (wave_t){1, b_qkv_tok, NULL};
		w[BSTEP_ATTN] = (wave_t){(uint32_t)c->n_heads * att_groups(f->bmax),
					 b_attn_chunk, NULL};
		w[BSTEP_ATTN_TOK] = (wave_t){1, b_attn_tok, b_attn_tok_finish};
		w[BSTEP_WO] = (wave_t){div_up(c->dim, f->brows_wo), b_wo_chunk, NULL};
		w[BSTEP_WO_TOK] = (wave_t){1, b_wo_tok, b_wo_tok_finish};
		w[BSTEP_FFN1] = (wave_t){div_up(c->hidden_dim, f->brows_ffn1), b_ffn1_chunk,
					 NULL};
		w[BSTEP_FFN1_TOK] = (wave_t){1, b_ffn1_tok, b_ffn1_tok_finish};
		w[BSTEP_FFN2] = (wave_t){div_up(c->dim, f->brows_ffn2), b_ffn2_chunk, NULL};
		w[BSTEP_FFN2_TOK] = (wave_t){1, b_ffn2_tok, b_ffn2_tok_finish};
	}
	f->bwaves[n - 1] = (wave_t){div_up(c->vocab_size, f->rows_cls),
				    b_cls_chunk, NULL};
	f->bplan = (wave_plan_t){f, n, f->bwaves};
	return 0;
}

const char *forward_kv_unfit(const model_t *m, kv_type_t kv)
{
	if ((unsigned)kv >= KV_TYPE_COUNT)
		return "an unknown KV cache type";
	if (kv == KV_Q8_0 && m->cfg.head_dim % QK)
		return "a q8_0 KV cache needs a head_dim that is a multiple of 32";
	return NULL;
}

size_t forward_kv_pos_bytes(const model_t *m, kv_type_t kv)
{
	return 2 * (size_t)m->cfg.n_layers * kv_row_bytes(kv, kv_dim(&m->cfg));
}

forward_t *forward_new(const model_t *m, int32_t ctx, uint32_t chunk_bytes)
{
	return forward_new_kv(m, ctx, KV_F16, chunk_bytes);
}

forward_t *forward_new_kv(const model_t *m, int32_t ctx, kv_type_t kv, uint32_t chunk_bytes)
{
	const model_config_t *c = &m->cfg;
	if (ctx <= 0 || ctx > c->ctx)
		ctx = c->ctx;
	const char *unfit = forward_kv_unfit(m, kv);
	if (unfit) {
		err_set("%s (this model's is %d)", unfit, c->head_dim);
		return NULL;
	}
	uint32_t batch_bytes = chunk_bytes ? chunk_bytes : BATCH_CHUNK_BYTES;
	bool spread = !chunk_bytes; /* default sizes adapt to the machine */
	if (!chunk_bytes)
		chunk_bytes = dtype_info[m->layers[0].wq.type].block > 1 ? DECODE_CHUNK_Q
									  : DECODE_CHUNK_F;
	/* the gang's sync word counts waves in 16 bits (gang.h
	 * GANG_MAX_WAVES; model is below gang, so the bound is restated) */
	if ((uint64_t)2 + (uint64_t)BSTEP_COUNT * (uint64_t)c->n_layers > 0xffffu) {
		err_set("%d layers: a token's plan would exceed the gang's 65535 waves",
			c->n_layers);
		return NULL;
	}
	forward_t *f = eg_calloc(1, sizeof *f);
	if (!f) {
		err_sys("cannot allocate the forward state");
		return NULL;
	}
	f->m = m;
	f->c = *c;
	f->ctx = ctx;
	int64_t Q = q_dim(c), KV = kv_dim(c);
	f->x = eg_calloc((size_t)c->dim, sizeof(float));
	f->xb = eg_calloc((size_t)c->dim, sizeof(float));
	f->xb_q = eg_calloc(act_q_bytes(c->dim, 1), 1);
	f->q = eg_calloc((size_t)Q, sizeof(float));
	f->att = eg_calloc((size_t)Q, sizeof(float));
	f->att_q = eg_calloc(act_q_bytes(Q, 1), 1);
	f->scores = eg_calloc((size_t)c->n_heads * (size_t)ctx, sizeof(float));
	f->hb = eg_calloc((size_t)c->hidden_dim, sizeof(float));
	f->hb_q = eg_calloc(act_q_bytes(c->hidden_dim, 1), 1);
	f->logits = eg_calloc((size_t)c->vocab_size, sizeof(float));
	f->ytmp = eg_calloc((size_t)c->dim, sizeof(float));
	f->k_new = eg_calloc((size_t)KV, sizeof(float));
	f->v_new = eg_calloc((size_t)KV, sizeof(float));
	f->kvt = kv;
	f->kv_rb = kv_row_bytes(kv, KV);
	f->own.k = eg_calloc((size_t)c->n_layers * (size_t)ctx, f->kv_rb);
	f->own.v = eg_calloc((size_t)c->n_layers * (size_t)ctx, f->kv_rb);
	f->own.cap = ctx;
	f->own.type = kv;
	f->k_cache = f->own.k;
	f->v_cache = f->own.v;
	f->kv_cap = ctx;
	if (!f->own.k || !f->own.v || !f->scores || !f->k_new || !f->v_new) {
		err_set("cannot allocate the KV cache for %d positions", ctx);
		forward_free(f);
		return NULL;
	}
	if (!f->x || !f->xb || !f->xb_q || !f->q || !f->att || !f->att_q || !f->hb ||
	    !f->hb_q || !f->logits || !f->ytmp) {
		err_sys("cannot allocate the activations");
		forward_free(f);
		return NULL;
	}
	const layer_t *y = &m->layers[0];
	int ncpu = spread ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 0;
	f->rows_qkv = rows_per_chunk(&y->wq, spread_bytes(&y->wq, chunk_bytes, ncpu), 1u << 20);
	f->rows_wo = rows_per_chunk(&y->wo, spread_bytes(&y->wo, chunk_bytes, ncpu), 256);
	f->rows_ffn1 = rows_per_chunk(&y->w_gate,
				      spread_bytes(&y->w_gate, chunk_bytes / 2, ncpu), 256);
	f->rows_ffn2 = rows_per_chunk(&y->w_down, spread_bytes(&y->w_down, chunk_bytes, ncpu), 256);
	f->rows_cls = rows_per_chunk(&m->output, spread_bytes(&m->output, chunk_bytes, ncpu),
				     1u << 20);

	uint32_t n = 2 + STEP_COUNT * (uint32_t)c->n_layers;
	f->waves = eg_calloc(n, sizeof *f->waves);
	if (!f->waves) {
		err_sys("cannot allocate the wave plan");
		forward_free(f);
		return NULL;
	}
	f->waves[0] = (wave_t){1, embed_chunk, embed_finish};
	for (int l = 0; l < c->n_layers; l++) {
		wave_t *w = &f->waves[1 + STEP_COUNT * l];
		w[STEP_QKV] = (wave_t){div_up(Q + 2 * KV, f->rows_qkv),
				       qkv_chunk, qkv_finish};
		w[STEP_ATTN] = (wave_t){(uint32_t)(c->n_kv_heads * attn_parts(c)),
					attn_chunk, attn_finish};
		w[STEP_WO] = (wave_t){div_up(c->dim, f->rows_wo), wo_chunk,
				      wo_finish};
		w[STEP_FFN1] = (wave_t){div_up(c->hidden_dim, f->rows_ffn1),
					ffn1_chunk, ffn1_finish};
		w[STEP_FFN2] = (wave_t){div_up(c->dim, f->rows_ffn2),
					ffn2_chunk, ffn2_finish};
	}
	f->waves[n - 1] = (wave_t){div_up(c->vocab_size, f->rows_cls),
				   cls_chunk, NULL};
	f->plan = (wave_plan_t){f, n, f->waves};
	f->bmax = batch_max_from_env();
	if (f->bmax > ctx)
		f->bmax = ctx;
	if (f->bmax > 0 && batch_alloc(f, batch_bytes) < 0) {
		forward_free(f);
		return NULL;
	}
	/* a row per batch position (one for decode); + 1: never calloc(0) */
	size_t ncs = (size_t)(f->bmax > 1 ? f->bmax : 1) * (size_t)c->rope_dim + 1;
	f->rope_cs = eg_calloc(ncs, sizeof(float));
	if (c->swa_window > 0)
		f->rope_cs_swa = eg_calloc(ncs, sizeof(float));
	/* phi3: the long factors when this context exceeds the original one
	 * (llama.cpp's choice by its context), else the short */
	f->rope_ff = m->rope_freqs ? m->rope_freqs
		     : m->rope_long && ctx > c->rope_orig_ctx ? m->rope_long : m->rope_short;
	if (!f->rope_cs || (c->swa_window > 0 && !f->rope_cs_swa)) {
		err_sys("cannot allocate the RoPE table");
		forward_free(f);
		return NULL;
	}
	return f;
}

void forward_free(forward_t *f)
{
	if (!f)
		return;
	free(f->x);
	free(f->xb);
	free(f->xb_q);
	free(f->q);
	free(f->att);
	free(f->att_q);
	free(f->scores);
	free(f->hb);
	free(f->hb_q);
	free(f->logits);
	free(f->own.k);
	free(f->own.v);
	free(f->k_new);
	free(f->v_new);
	free(f->waves);
	free(f->bsegs);
	free(f->bseg_of);
	free(f->bpos_of);
	free(f->blog_tok);
	free(f->blog_row);
	free(f->bk);
	free(f->bv);
	free(f->blog);
	free(f->btok);
	free(f->bx);
	free(f->bxb);
	free(f->bxb_q);
	free(f->bq);
	free(f->batt);
	free(f->batt_q);
	free(f->bhb);
	free(f->bhb_q);
	free(f->btmp);
	free(f->bxb_aux);
	free(f->batt_aux);
	free(f->bhb_aux);
	free(f->bwaves);
	free(f->rope_cs);
	free(f->rope_cs_swa);
	free(f->ytmp);
	free(f);
}

int32_t forward_ctx(const forward_t *f) { return f->ctx; }

kv_type_t forward_kv_type(const forward_t *f) { return f->kvt; }

int forward_set_input(forward_t *f, int32_t token, int32_t pos)
{
	return forward_set_input_kv(f, token, pos, NULL);
}

int forward_set_input_kv(forward_t *f, int32_t token, int32_t pos, forward_kv_t *kv)
{
	if (!kv)
		kv = &f->own;
	if (pos < 0 || pos >= kv->cap || pos >= f->ctx)
		return err_set("position %d is outside the context of %d",
			       pos, kv->cap < f->ctx ? kv->cap : f->ctx);
	if (token < 0 || token >= f->c.vocab_size)
		return err_set("token id %d is outside the vocabulary of %d",
			       token, f->c.vocab_size);
	if (kv->type != f->kvt)
		return err_set("a %s KV cache given to a forward pass of %s caches",
			       kv_type_names[kv->type], kv_type_names[f->kvt]);
	rope_fill(f, f->rope_cs, pos, false);
	if (f->rope_cs_swa)
		rope_fill(f, f->rope_cs_swa, pos, true);
	f->token = token;
	f->pos = pos;
	f->k_cache = kv->k;
	f->v_cache = kv->v;
	f->kv_cap = kv->cap;
	return 0;
}

const wave_plan_t *forward_plan(const forward_t *f) { return &f->plan; }

float *forward_logits(forward_t *f) { return f->logits; }

int32_t forward_batch_max(const forward_t *f) { return f->bmax; }

/* The per-token waves get a chunk per token of the batch. Only those
 * counts change between batches; the waves themselves do not: a worker may
 * still read the wave count after the last barrier of the previous token
 * while the leader is here already, but a wave's chunk count is read only
 * while the plan runs (base/wave.h: by the gang's deal, after the latch
 * release that starts the token, so these plain stores are published by
 * it). The matrix waves' chunks past this
 * batch (attention groups, the classifier without logits) return at once. */
static void b_set_tokens(forward_t *f)
{
	uint32_t n = (uint32_t)f->bn;
	f->bwaves[0].n_chunks = n;
	for (int l = 0; l < f->c.n_layers; l++) {
		wave_t *w = &f->bwaves[1 + BSTEP_COUNT * l];
		w[BSTEP_QKV_TOK].n_chunks = w[BSTEP_ATTN_TOK].n_chunks = n;
		w[BSTEP_WO_TOK].n_chunks = w[BSTEP_FFN1_TOK].n_chunks = n;
		w[BSTEP_FFN2_TOK].n_chunks = n;
	}
}

int forward_set_batch(forward_t *f, const int32_t *tokens, int32_t n,
		      int32_t pos, bool logits)
{
	if (n < 1 || n > f->bmax)
		return err_set("a prefill batch of %d tokens is outside 1..%d",
			       n, f->bmax);
	forward_seg_t seg = {&f->own, tokens, n, pos, logits};
	return forward_set_segs(f, &seg, 1);
}

int forward_set_segs(forward_t *f, const forward_seg_t *segs, int32_t nseg)
{
	int32_t total = 0, nlog = 0;
	for (int32_t i = 0; i < nseg; i++) {
		const forward_seg_t *g = &segs[i];
		int32_t cap = g->kv->cap < f->ctx ? g->kv->cap : f->ctx;
		if (g->n < 1 || g->pos < 0 || g->pos + g->n > cap)
			return err_set("positions %d..%d are outside the context of %d",
				       g->pos, g->pos + g->n - 1, cap);
		if (g->kv->type != f->kvt)
			return err_set("a %s KV cache given to a forward pass of %s caches",
				       kv_type_names[g->kv->type], kv_type_names[f->kvt]);
		for (int32_t k = 0; k < g->n; k++)
			if (g->tokens[k] < 0 || g->tokens[k] >= f->c.vocab_size)
				return err_set("token id %d is outside the vocabulary of %d",
					       g->tokens[k], f->c.vocab_size);
		total += g->n;
		nlog += g->logits;
	}
	if (nseg < 1 || total > f->bmax)
		return err_set("a batch of %d tokens is outside 1..%d", total, f->bmax);
	if (nlog > 1 && nlog > f->blog_cap) {
		float *grown = eg_realloc(f->blog, (size_t)nlog * (size_t)f->c.vocab_size *
							   sizeof(float));
		if (!grown)
			return err_sys("cannot allocate the logits of a batch");
		f->blog = grown;
		f->blog_cap = nlog;
	}
	int32_t k = 0;
	f->bnlog = 0;
	for (int32_t i = 0; i < nseg; i++) {
		const forward_seg_t *g = &segs[i];
		f->bsegs[i] = *g;
		memcpy(f->btok + k, g->tokens, (size_t)g->n * sizeof *g->tokens);
		for (int32_t t = 0; t < g->n; t++, k++) {
			f->bseg_of[k] = i;
			f->bpos_of[k] = g->pos + t;
			size_t o = (size_t)k * (size_t)f->c.rope_dim;
			rope_fill(f, f->rope_cs + o, g->pos + t, false);
			if (f->rope_cs_swa)
				rope_fill(f, f->rope_cs_swa + o, g->pos + t, true);
		}
		f->blog_row[i] = g->logits ? f->bnlog : -1;
		if (g->logits)
			f->blog_tok[f->bnlog++] = k - 1;
	}
	f->bn = total;
	f->bnseg = nseg;
	b_set_tokens(f);
	return 0;
}

float *forward_seg_logits(forward_t *f, int32_t i)
{
	if (i < 0 || i >= f->bnseg || f->blog_row[i] < 0)
		return NULL;
	if (f->bnlog == 1)
		return f->logits;
	return f->blog + (size_t)f->blog_row[i] * (size_t)f->c.vocab_size;
}

size_t forward_kv_bytes(const forward_t *f, int32_t cap)
{
	return forward_kv_pos_bytes(f->m, f->kvt) * (size_t)cap;
}

int forward_kv_alloc(const forward_t *f, forward_kv_t *kv, int32_t cap)
{
	size_t n = (size_t)f->c.n_layers * (size_t)cap * f->kv_rb;
	kv->cap = cap;
	kv->type = f->kvt;
	kv->k = eg_malloc(n + 1);
	kv->v = eg_malloc(n + 1);
	if (!kv->k || !kv->v) {
		forward_kv_free(kv);
		return err_sys("cannot allocate a sequence KV cache");
	}
	return 0;
}

void forward_kv_free(forward_kv_t *kv)
{
	free(kv->k);
	free(kv->v);
	kv->k = kv->v = NULL;
	kv->cap = 0;
}

void forward_kv_copy(const forward_t *f, forward_kv_t *dst, const forward_kv_t *src,
		     int32_t n)
{
	size_t row = (size_t)n * f->kv_rb;
	for (int64_t l = 0; l < f->c.n_layers; l++) {
		memcpy(kv_at(f, dst->k, dst->cap, l, 0), kv_at(f, src->k, src->cap, l, 0), row);
		memcpy(kv_at(f, dst->v, dst->cap, l, 0), kv_at(f, src->v, src->cap, l, 0), row);
	}
}

const wave_plan_t *forward_batch_plan(const forward_t *f) { return &f->bplan; }

int forward_batch_status(forward_t *f)
{
	if (!atomic_exchange_explicit(&f->batt_failed, false, memory_order_relaxed))
		return 0;
	errno = ENOMEM;
	return err_sys("prefill attention: cannot allocate its scratch");
}
