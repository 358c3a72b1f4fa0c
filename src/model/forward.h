/* forward: one token of the decoder as a list of waves of chunks
 * (base/wave.h). Per token: wave 0 embeds the token, then five waves per
 * layer, then the classifier:
 *
 *   wave            chunks (rows)                   finish (runs once)
 *   EMBED           1                               x -> xb = rmsnorm(x)
 *   QKV   (layer l) rows of [wq; wk; wv] -> q, k, v  RoPE on q and k
 *   ATTN  (layer l) one per query head -> att       quantize att
 *   WO    (layer l) rows of wo: x += wo @ att        xb = rmsnorm(x)
 *   FFN1  (layer l) rows of gate/up -> hb            quantize hb
 *   FFN2  (layer l) rows of down: x += down @ hb     xb = rmsnorm(x) (next
 *                                                    layer's or the final)
 *   CLS             rows of the classifier -> logits
 *
 * The architecture's facts (model.h arch_info) change steps, not waves: the
 * embedding's scale, QK-norm before RoPE and the sliding layers' RoPE
 * table and window (QKV and ATTN), GELU instead of SiLU (FFN1), and with
 * post-norms WO and FFN2 write their rows aside and their finish adds
 * norm(rows) to x; the classifier's softcap per row.
 *
 * Every chunk writes only its own output rows and reads only what previous
 * waves finished; every row is one dot product with a fixed reduction order
 * (kernels.h), so the logits are the same bits however chunks are spread
 * over threads. Chunk boundaries are fixed at forward_new() from the model
 * alone, never from the gang's membership. */
#ifndef EGANG_FORWARD_H
#define EGANG_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/wave.h"
#include "model/model.h"

typedef struct forward forward_t; /* opaque */

/* Run state for contexts of up to ctx positions (<= the model's; 0 = the
 * model's) with KV caches of type kv (kernels.h kv_type_t: K and V rows
 * stored as f16, f32 or q8_0; q8_0 needs a head_dim that is a multiple of
 * 32, else NULL + err_get()). chunk_bytes: target weight bytes per chunk
 * (0 = default). For a given KV type the logits keep every contract below
 * (the same bits whatever the membership, batch and level); across types
 * they differ by the cache's rounding. */
forward_t *forward_new_kv(const model_t *m, int32_t ctx, kv_type_t kv, uint32_t chunk_bytes);
/* forward_new_kv with the default KV type (KV_F16). */
forward_t *forward_new(const model_t *m, int32_t ctx, uint32_t chunk_bytes);
void forward_free(forward_t *f);

int32_t forward_ctx(const forward_t *f);
kv_type_t forward_kv_type(const forward_t *f);
/* NULL if a cache of type kv can hold m's keys and values, else why not
 * (q8_0 and a head_dim that is no multiple of 32). */
const char *forward_kv_unfit(const model_t *m, kv_type_t kv);
/* Bytes of one position's K and V over all layers in a cache of type kv. */
size_t forward_kv_pos_bytes(const model_t *m, kv_type_t kv);

/* Prepares the plan for token `token` at position pos (0 <= pos < ctx);
 * the caller then runs forward_plan() (serially or on the gang), and reads
 * forward_logits(). -1 if pos or token is out of range. */
int forward_set_input(forward_t *f, int32_t token, int32_t pos);
const wave_plan_t *forward_plan(const forward_t *f);
/* Logits of the last run token (vocab,). */
float *forward_logits(forward_t *f);

/* Batched prefill (forward.c): the same waves over a batch of prompt
 * tokens, matrix-matrix (kernels.h gemm_rows), each weight chunk streamed
 * once per batch, and after each matrix wave a wave of one chunk per token
 * for what the decode plan does in that wave's finish (norms, RoPE, the KV
 * store, quantizing the next input). The KV cache and the logits are the
 * same bits as running the tokens one by one through forward_set_input, at
 * any batch size and whatever the membership; the matrix waves' chunk
 * boundaries depend on the model and the maximum batch size only, and only
 * the per-token waves' chunk counts change after forward_new (set with the
 * batch, read only while the plan runs).
 *
 * Tokens per batch at most: 128, or EGANG_PREFILL_BATCH=N (0..1024) read at
 * forward_new; 0 turns batching off (callers then go token by token). */
int32_t forward_batch_max(const forward_t *f);
/* Prepares the batch plan for tokens[0..n) at positions pos..pos+n-1
 * (1 <= n <= forward_batch_max, pos + n <= ctx). With logits, the plan ends
 * with the classifier for the last token (forward_logits); without, it
 * stops after the last layer. -1 if out of range. */
int forward_set_batch(forward_t *f, const int32_t *tokens, int32_t n,
		      int32_t pos, bool logits);
const wave_plan_t *forward_batch_plan(const forward_t *f);
/* After running the batch plan: 0, or -1 + err_get() when a chunk could
 * not allocate its scratch (the batch's results are then invalid). */
int forward_batch_status(forward_t *f);

/* ---- many sequences in one batch (continuous batching) ----------------
 * (doc/ARCHITECTURE.md "The server".)
 * A sequence's own KV cache: (n_layers, cap) rows each for K and V, of
 * kv_dim elements of the forward's KV type (kv_row_bytes(type, kv_dim)
 * bytes), position p of layer l at row l * cap + p. */
typedef struct forward_kv {
	void *k, *v;
	int32_t cap;
	kv_type_t type;
} forward_kv_t;

/* Bytes of a cache of cap positions (forward_kv_pos_bytes each). */
size_t forward_kv_bytes(const forward_t *f, int32_t cap);
/* 0, or -1 + err_get() (no memory; kv then holds nothing). */
int forward_kv_alloc(const forward_t *f, forward_kv_t *kv, int32_t cap);
void forward_kv_free(forward_kv_t *kv);
/* Positions 0..n-1 of src into dst (n <= both caps). */
void forward_kv_copy(const forward_t *f, forward_kv_t *dst, const forward_kv_t *src,
		     int32_t n);

/* forward_set_input on a sequence's cache kv (NULL: the own one); the
 * decode plan then reads and writes kv. */
int forward_set_input_kv(forward_t *f, int32_t token, int32_t pos, forward_kv_t *kv);

/* One sequence's part of a batch: n tokens at positions pos..pos+n-1 of
 * the cache kv; with logits, the classifier runs for its last token. */
typedef struct forward_seg {
	forward_kv_t *kv;
	const int32_t *tokens;
	int32_t n, pos;
	bool logits;
} forward_seg_t;

/* Prepares the batch plan (forward_batch_plan) for nseg sequences at once
 * (decode tokens and prefill chunks mixed; all tokens together at most
 * forward_batch_max). Each output of a token is the same bits as the
 * decode plan gives for that token alone on its sequence: the matrices
 * through gemm_rows (each output = the matvec's bits), attention per
 * sequence with the decode arithmetic (kernels.h attn_rows), the finish
 * steps per token. So a sequence's logits do not depend on what else is in
 * the batch (batch invariance). -1 + err_get() on a bad segment. */
int forward_set_segs(forward_t *f, const forward_seg_t *segs, int32_t nseg);
/* After the run: segment i's logits (vocab), NULL if it asked for none;
 * valid until the next forward_set_segs. */
float *forward_seg_logits(forward_t *f, int32_t i);

#endif
