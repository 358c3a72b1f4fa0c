/* kernels: tensor element types, quantization and the math of the forward
 * pass. Every SIMD kernel has a scalar *_generic twin (the reference and the
 * fallback); kernels_init() picks one implementation per process, so every
 * core runs the same code and a row's result never depends on which core
 * computed it.
 *
 * Block layouts (little endian, as in GGUF / ggml):
 *  F32   4 bytes per element.
 *  F16   IEEE binary16.
 *  BF16  upper 16 bits of a binary32.
 *  Q8_0  blocks of 32: { uint16 d (f16 scale); int8 qs[32] }  = 34 bytes;
 *        x[i] = d * qs[i].
 *  Q4_0  blocks of 32: { uint16 d (f16 scale); uint8 qs[16] } = 18 bytes;
 *        x[j] = d * ((qs[j] & 0xF) - 8), x[j+16] = d * ((qs[j] >> 4) - 8).
 *  Q4_1, Q5_0, Q5_1 (blocks of 32) and the K-quants Q2_K .. Q6_K, Q8_K
 *  (super-blocks of 256): kquants.h. */
#ifndef EGANG_KERNELS_H
#define EGANG_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef enum dtype {
	DTYPE_F32,
	DTYPE_F16,
	DTYPE_BF16,
	DTYPE_Q8_0,
	DTYPE_Q4_0,
	DTYPE_Q4_1,
	DTYPE_Q5_0,
	DTYPE_Q5_1,
	DTYPE_Q8_K, /* activations only (the K-quants' dot products) */
	DTYPE_Q2_K,
	DTYPE_Q3_K,
	DTYPE_Q4_K,
	DTYPE_Q5_K,
	DTYPE_Q6_K,
	DTYPE_Q8_1, /* activations only (Q4_1 / Q5_1 dot products) */
	DTYPE_IQ4_NL,
	DTYPE_IQ4_XS,
	DTYPE_COUNT
} dtype_t;

#define QK 32 /* elements per quantized block */
#define QK_K 256 /* elements per K-quant super-block (kquants.h) */

typedef struct { uint16_t d; int8_t qs[QK]; } block_q8_0;      /* 34 bytes */
typedef struct { uint16_t d; uint8_t qs[QK / 2]; } block_q4_0; /* 18 bytes */

typedef struct dtype_info {
	const char *name;     /* "f32", "q8_0", ... */
	uint32_t ggml_id;     /* the GGUF tensor type id */
	uint32_t block;       /* elements per block (1 for float types) */
	uint32_t block_bytes; /* bytes per block */
	dtype_t act;          /* type the activations take for a dot product
				 with this weight type (F32, Q8_0, Q8_1
				 or Q8_K) */
} dtype_info_t;

extern const dtype_info_t dtype_info[DTYPE_COUNT];

/* dtype of a GGUF type id; -1 if unknown / unsupported (Q8_K, Q8_1:
 * activation types, not loadable). */
int dtype_from_ggml(uint32_t ggml_id);
/* dtype of a name ("q8_0"); -1 if unknown. */
int dtype_from_name(const char *name);
/* Bytes of a row of n elements; n must be a multiple of the block size
 * (0 is returned otherwise). */
size_t dtype_row_bytes(dtype_t t, int64_t n);

/* Byte offset, in data (nbytes of whole blocks of type t), of the first
 * block whose f16 scale or min is NaN or infinite, for the types of
 * kquants.h (Q4_1 .. Q6_K, IQ4_NL, IQ4_XS); -1 if none, or for the other
 * types. */
int64_t kq_bad_block(int t, const void *data, size_t nbytes);

/* Picks SIMD implementations for this CPU (idempotent, thread-safe after
 * the first call returns). EGANG_ISA forces a level: generic|avx2|avx512|
 * avx512vnni|amx on x86-64, generic|neon|dotprod on ARM64 (kernels.c lists
 * what each checks for); an unknown level or one this CPU lacks leaves the
 * best level in use and makes kernels_check_env fail. */
void kernels_init(void);
/* kernels_init, then -1 with a message if EGANG_ISA named an unknown level
 * or one this CPU lacks (the CLI exits 2 on it), else 0. */
int kernels_check_env(void);
/* Name of the level in use ("generic", "avx2", "avx512", "avx512vnni",
 * "amx", "neon", "dotprod"). */
const char *kernels_isa(void);
/* Switches the process to level name (tests and benches only: not safe
 * while another thread runs a kernel); -1 with a message if the name is
 * unknown or this CPU lacks the level (the level in use is kept). */
int kernels_set_isa(const char *name);

/* Half / bfloat conversion (round to nearest even). */
float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

/* x (n,) float -> y (n,) of type t; n a multiple of the block size. */
void quantize_row(dtype_t t, const float *x, void *y, int64_t n);
/* x (n,) of type t -> y (n,) float. */
void dequantize_row(dtype_t t, const void *x, float *y, int64_t n);

/* Activations for a dot product against weights of type wt:
 * x (n,) float -> xa in dtype_info[wt].act (a plain copy for F32; for F16
 * and BF16 weights each value rounded to that type and kept as a float,
 * as ggml's CPU backend feeds its F16/BF16 dot products). A quantized
 * block (Q8_0, Q8_1, Q8_K) whose floats hold a NaN or an infinity gets a
 * NaN scale, so that every dot product reading it is NaN. */
void act_prepare(dtype_t wt, const float *x, void *xa, int64_t n);

/* Dot product of one weight row w (n,) of type wt with prepared
 * activations xa (n,); fixed reduction order for a given ISA level.
 * Q8_0 activations must come from act_prepare (quants in [-127, 127]).
 * Quantized weights give the same bits at every level; float weights agree
 * across levels within about n * 2^-23 * sum|w x|. wt is a weight type
 * (not Q8_1, an activation type: an assert). */
float vec_dot(dtype_t wt, const void *w, const void *xa, int64_t n);
float vec_dot_generic(dtype_t wt, const void *w, const void *xa, int64_t n);

/* W (rows, n) of type wt, rows r0..r1-1 @ xa (n,) -> y[r0..r1-1]; rows are
 * dtype_row_bytes(wt, n) apart, at any byte address. y[r] is the same bits
 * as vec_dot(wt, row r, xa, n), whatever r0 and r1 (chunking-invariant). */
void matvec_rows(dtype_t wt, const void *W, const void *xa, float *y,
		 int64_t n, int64_t r0, int64_t r1);

/* ---- weights packed in row groups (decode matvec, prefill gemm) ----
 *
 * The AVX-512 matvec puts 16 rows in the 16 dword lanes of a register
 * (kernels_avx512.c). From the rows as stored that costs per block 32
 * 128-bit loads with lane inserts, two 4x4 transposes and 16 scalar scale
 * loads; a packed copy holds each group of 16 rows already in that order,
 * so a block is a few aligned 512-bit loads and one 256-bit load of the 16
 * scales, in one linear stream per group (the hardware prefetcher's best
 * case; per-row streams of long rows are its worst). Packing moves bytes
 * only: the packed matvec computes the same integer block sums and the
 * same float steps as the other forms, so every row keeps its bits.
 *
 * Layout of Q8_0 / Q4_0 / Q5_0 rows 0 .. 16 G - 1 (G = rows / 16 groups;
 * the last rows % 16 rows are not packed), n elements a row, nb = n / 32 blocks:
 * group g at g * pack16_group_bytes(t, n); inside a group, blocks in pairs
 * (b, b + 1): 64 bytes of scales (the 16 rows' fp16 d of block b, then of
 * block b + 1; the second half unused when b + 1 = nb), then the quants of
 * block b, then of block b + 1. The quants of one block are vectors of 64
 * bytes, vector v holding bytes 4v .. 4v + 3 of every row's qs, row i at
 * 4 i: Q8_0 8 vectors with the bytes made unsigned (q + 128, what vpdpbusd
 * wants), Q4_0 4 vectors of the nibble bytes as stored. Q5_0 is packed as
 * the Q8_0 blocks it equals (kernels_impl.h q8_form: the same d, quants
 * q - 16, so bytes q + 112), and read by the Q8_0 packed kernels with the
 * same bits as its own dot product; its copy is 34/22 of its rows' bytes.
 * Q4_1 / Q5_1 (the AVX-512 levels' packed kernels): per block 64 bytes of
 * scales (the 16 rows' fp16 d, then their m), Q5_1's 16 qh words (64
 * bytes, row i at 4 i), then 4 vectors of the nibble bytes as Q4_0's: the
 * size of the rows' blocks.
 *
 * F32 / F16 / BF16 rows are packed 4 at a time (the float kernels' row
 * group), n a multiple of 32: per step of 32 elements, the step of row 0,
 * then of rows 1, 2, 3 (64 bytes each for F16 / BF16, 128 for F32). The
 * float kernels read a row's step where they read it before, only the
 * stride between a row's steps changes: the same loads, FMAs and sums, so
 * the same bits, from one linear stream instead of four row streams. The
 * level reads them packed only while a group is at most 12 KiB (short
 * rows: smollm-135m f16 decode +20-60% on one core; with long rows the four
 * prefetched row streams were faster; kernels.c PACK_FLOAT_GROUP_MAX). */
size_t pack16_group_bytes(dtype_t t, int64_t n);
/* Rows in a packed group: 16 for the quantized types, 4 for float types. */
int pack16_group_rows(dtype_t t);
/* Bytes of the packed copy of a (rows, n) matrix; 0 when n is not a
 * positive multiple of 32, rows are fewer than a group, or t has no packed
 * layout. */
size_t pack16_bytes(dtype_t t, int64_t rows, int64_t n);
/* Packs the whole groups of W (rows, n; rows dtype_row_bytes apart) into P
 * (pack16_bytes of them). */
void pack16(dtype_t t, const void *W, int64_t rows, int64_t n, void *P);
/* Whether the level in use reads packed copies of type t with n elements a
 * row (else matvec_range reads W). */
int pack16_used(dtype_t t, int64_t n);
/* Rows r0 .. r1 - 1 of a (rows, n) matrix of type t: [*a, *b) are the whole
 * packed groups among them, [r0, *a) and [*b, r1) the rows read as stored. */
void pack16_split(dtype_t t, int64_t rows, int64_t r0, int64_t r1, int64_t *a, int64_t *b);
/* y[0 .. r1 - r0) = rows r0 .. r1 - 1 of W (rows, n) @ xa: as matvec_rows
 * (the same bits), with the rows' whole groups read from P, W's packed
 * copy (NULL: none), when the level in use has a packed kernel. */
void matvec_range(dtype_t wt, const void *W, const void *P, int64_t rows,
		  const void *xa, float *y, int64_t n, int64_t r0, int64_t r1);

/* The forward pass's float math. Each has a scalar *_generic twin written
 * to match llama2.c's run.c operation for operation, and the dispatched
 * version gives the SAME BITS at every ISA level (tests/test_kernels.c
 * compares them with memcmp): the SIMD levels vectorize only what does not
 * change a rounding. Elementwise products and divisions are the same IEEE
 * operations in any lane (no FMA contraction, kernels_impl.h); every sum
 * that run.c does sequentially stays sequential, per lane where the lanes
 * are independent outputs (attention's scores: 16 positions per vector,
 * each summed over i in order), or scalar where there is only one sum
 * (rmsnorm's sum of squares, softmax's sum of exps: one add per element;
 * decode attention interleaves the sums of a KV head's query heads, each
 * still sequential). expf runs as libm's (the x86 levels' vector form has
 * its bits, checked at first use, attn.c). So stories260K still
 * reproduces run.c's text and ids, and the sampler's softmax (the same
 * function) stays run.c's.
 *
 * o (n,) = x * w / sqrt(mean(x^2) + eps); fixed order, o may alias x. The
 * sum of squares is ggml's (in double, kernels_impl.h rmsnorm_scale), so
 * the greedy path follows llama.cpp's through near-ties. */
void rmsnorm(float *o, const float *x, const float *w, int64_t n, float eps);
void rmsnorm_generic(float *o, const float *x, const float *w, int64_t n, float eps);
/* In-place softmax over x (n,). */
void softmax(float *x, int64_t n);
void softmax_generic(float *x, int64_t n);
/* RoPE on one vector of n_heads heads of head_dim at position pos.
 * neox = 0: rotate adjacent pairs (x[2i], x[2i+1]) (llama);
 * neox = 1: rotate (x[i], x[i + rot_dim/2]), i < rot_dim/2 (qwen2 / NEOX).
 * rot_dim <= head_dim dimensions are rotated; freq_i = theta^(-2i/rot_dim).
 * The (cos, sin) of each pair are computed once per call, not per head;
 * above rot_dim 1024 (no such model) the generic loop runs instead. */
void rope(float *x, int n_heads, int head_dim, int rot_dim, int pos,
	  float theta, int neox);
void rope_generic(float *x, int n_heads, int head_dim, int rot_dim, int pos,
		  float theta, int neox);
/* rope() in two steps, for callers that rotate several vectors at one
 * position (the forward pass: q and k of every layer): rope_table fills
 * cs (rot_dim floats) with pair j's cos at cs[2j] and sin at cs[2j + 1],
 * computed as rope_generic computes them; rope_with rotates x with it, the
 * same bits as rope(). */
void rope_table(float *cs, int rot_dim, int pos, float theta);
void rope_with(float *x, int n_heads, int head_dim, int rot_dim, const float *cs,
	       int neox);
/* One query head's attention over positions 0..n_pos-1 of the KV cache
 * (k_t = k + t * stride, v_t = v + t * stride, hd floats each):
 *   s[t] = (sum_i q[i] k_t[i], in i order) / sqrtf(hd); softmax(s);
 *   out[i] = sum_t s[t] v_t[i], in t order, from 0.
 * scores (n_pos,) is scratch and is left holding the probabilities. */
void attention_head(float *out, const float *q, const float *k, const float *v,
		    int64_t stride, int n_pos, int hd, float *scores);
void attention_head_generic(float *out, const float *q, const float *k,
			    const float *v, int64_t stride, int n_pos, int hd,
			    float *scores);
/* nh query heads that share one KV head (grouped-query attention): head h's
 * query q + h hd, output out + h hd, scores scores + h ss (ss >= n_pos);
 * each head the same bits as attention_head (the x86 levels load and
 * convert each key and value row once for 4 heads). */
void attention_heads(float *out, const float *q, const float *k, const float *v,
		     int64_t stride, int n_pos, int hd, float *scores, int nh, int64_t ss);
void attention_heads_generic(float *out, const float *q, const float *k,
			     const float *v, int64_t stride, int n_pos, int hd,
			     float *scores, int nh, int64_t ss);
/* ---- the KV cache's element types (model/forward.h) ----
 * K and V rows as llama.cpp's --cache-type-k / -v name them: KV_F16 IEEE
 * halves (f32_to_fp16: round to nearest even, as F16C's vcvtps2ph), KV_F32
 * floats, KV_Q8_0 Q8_0 blocks of 32 (quantize_row: d = amax / 127 as f16,
 * q = x * (127 / amax) rounded half to even, as ggml-cpu's x86
 * quantize_row_q8_0 stores a K or V row). KV_F16 is 0: the default.
 * Attention reads each element converted to float, which is exact for all
 * three (a half is a float; a Q8_0 element d * q has at most 11 + 7
 * significant bits), then does the f32 arithmetic below: for a given cache
 * content every level gives the bits of attention_head on the converted
 * values. */
typedef enum kv_type { KV_F16, KV_F32, KV_Q8_0, KV_TYPE_COUNT } kv_type_t;
/* "f16", "f32", "q8_0", NULL (indexed by kv_type_t). */
extern const char *const kv_type_names[KV_TYPE_COUNT + 1];
/* Bytes of a row of n elements of type t (Q8_0: n a multiple of 32, else 0). */
size_t kv_row_bytes(kv_type_t t, int64_t n);
/* x (n floats) -> a row of type t at row (any byte address). */
void kv_store_row(kv_type_t t, const float *x, void *row, int64_t n);
/* A row of type t -> y (n floats), the values attention reads. */
void kv_load_row(kv_type_t t, const void *row, float *y, int64_t n);

/* attention_heads over a cache of type kt: k and v point at the KV head's
 * elements of position 0 (a whole number of blocks into the row for Q8_0:
 * hd a multiple of 32), position t rb bytes further. Each head the bits of
 * attention_head on kv_load_row's values, at every level. */
void attention_heads_kv(kv_type_t kt, float *out, const float *q, const void *k,
			const void *v, size_t rb, int n_pos, int hd, float *scores, int nh,
			int64_t ss);
void attention_heads_kv_generic(kv_type_t kt, float *out, const float *q, const void *k,
				const void *v, size_t rb, int n_pos, int hd, float *scores,
				int nh, int64_t ss);

/* silu(a) * b, elementwise into o (o may alias a): val / (1 + e^-val) as
 * llama2.c computes it, with the project's exp (kernels_impl.h exp_eg,
 * within 8.2e-8 of e^x relatively) for libm's expf, so the SIMD level has
 * a bit-exact twin. */
void swiglu(float *o, const float *a, const float *b, int64_t n);
void swiglu_generic(float *o, const float *a, const float *b, int64_t n);

/* ---- matrix-matrix: weight rows x a batch of tokens (prefill; gemm.c) ----
 * W (rows, n) of type wt, rows r0..r1-1, times ntok prepared activation rows
 * X (ntok, n) (act_prepare each; row t at X + t * xs bytes) ->
 * Y[t * ys + r] for r0 <= r < r1. aux: NULL, or for Q8_0 / Q8_1
 * activations the batch's side data from gemm_aux_prepare (computed once
 * per batch instead of once per call). Every output is the same bits as
 * vec_dot(wt, row r, X + t * xs, n) at the level in use (decode's matvec),
 * whatever r0, r1, ntok and the other rows and tokens (chunking- and
 * batching-invariant). Q8_0 / Q4_0, and Q5_0 on x86: register-blocked
 * SIMD kernels (AVX2, AVX-512 VNNI); Q4_1 / Q5_1: AVX-512 VNNI's, else
 * the level's matmat; float types: the level's register-blocked matmat where it
 * has one (AVX-512), else its matvec_rows per token over the rows, which
 * stay in cache. Thread-safe; uses per-thread scratch. */
void gemm_rows(dtype_t wt, const void *W, const void *X, size_t xs,
	       const void *aux, float *Y, int64_t ys, int64_t n, int64_t r0,
	       int64_t r1, int64_t ntok);
/* gemm_rows with W's packed copy P (pack16 of W's `rows` rows; NULL:
 * none), which the x86 SIMD levels read for the whole groups; the same bits. */
void gemm_rows_packed(dtype_t wt, const void *W, const void *P, int64_t rows,
		      const void *X, size_t xs, const void *aux, float *Y, int64_t ys,
		      int64_t n, int64_t r0, int64_t r1, int64_t ntok);
/* 1 when gemm_rows_packed at this level reads the whole packed groups of
 * type t in place for a few tokens (AVX-512 VNNI, and amx, which runs
 * VNNI's kernel below its crossover; Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1: one
 * weight load, a dot product per token), so that it is faster than the matvec
 * once per token from 2 tokens on; 0 otherwise. */
int gemm_small_batch(dtype_t t);
/* Side data of ntok activation rows of n elements for gemm_rows, per
 * token and block: Q8_0 rows the scale as a float and the sum of the
 * quants, Q8_1 rows (Q4_1 / Q5_1 weights) the scale and the block's s as
 * floats. gemm_aux_bytes(n, ntok) bytes hold both kinds, each in its own
 * region; gemm_aux_prepare fills the region of weight type wt's
 * activations (wt's act is Q8_0 or Q8_1). */
size_t gemm_aux_bytes(int64_t n, int64_t ntok);
void gemm_aux_prepare(dtype_t wt, const void *X, size_t xs, int64_t n, int64_t ntok,
		      void *aux);
/* The generic twin: vec_dot_generic per output. */
void gemm_rows_generic(dtype_t wt, const void *W, const void *X, size_t xs,
		       float *Y, int64_t ys, int64_t n, int64_t r0, int64_t r1,
		       int64_t ntok);

/* Causal attention of nq consecutive query positions of one head (attn.c):
 * query j (hd floats at q + j * qs) is at position pos0 + j and attends the
 * cached keys and values of positions 0..pos0+j (K + t * kvs, V + t * kvs)
 * -> out + j * os (hd) = sum_t softmax_t(q.k_t / sqrt(hd)) v_t. Every level
 * gives the same bits as attn_rows_generic, whose arithmetic per query is
 * the decode path's (forward.c). Thread-safe; uses per-thread scratch:
 * 0, or -1 when that scratch cannot be allocated (out is then not written;
 * no err_set: the caller, often a gang worker, reports it on its leader's
 * thread, forward_batch_status). */
int attn_rows(const float *q, int64_t qs, const float *K, const float *V,
	      int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos0,
	      int32_t nq);
int attn_rows_generic(const float *q, int64_t qs, const float *K,
		       const float *V, int64_t kvs, float *out, int64_t os,
		       int64_t hd, int32_t pos0, int32_t nq);
/* nh queries (query heads sharing one KV head: q + h * qs -> out + h * os)
 * all at position pos, each against keys 0..pos: each head the same bits
 * as attn_rows of that query alone (and so as decode). 0, or -1 as
 * attn_rows. */
int attn_rows_heads(const float *q, int64_t qs, const float *K, const float *V,
		    int64_t kvs, float *out, int64_t os, int64_t hd, int32_t pos,
		    int32_t nh);
int attn_rows_heads_generic(const float *q, int64_t qs, const float *K,
			    const float *V, int64_t kvs, float *out, int64_t os,
			    int64_t hd, int32_t pos, int32_t nh);
/* y[i] = expf(x[i]), i < n, as prompt attention's softmax computes it at
 * the level in use: the x86 levels' vector form of libm's expf where it
 * agrees with this process's expf on a probe (attn.c), else expf itself;
 * always expf's bits (for tests). Returns the vector form's lanes, or 0
 * where expf itself ran. */
int attn_expf_rows(const float *x, float *y, int64_t n);
/* attn_rows and attn_rows_heads over a cache of type kt (K, V and rb as
 * attention_heads_kv): each query the bits of attn_rows on kv_load_row's
 * values, at every level. 0, or -1 as attn_rows. */
int attn_rows_kv(kv_type_t kt, const float *q, int64_t qs, const void *K, const void *V,
		 size_t rb, float *out, int64_t os, int64_t hd, int32_t pos0, int32_t nq);
int attn_rows_kv_generic(kv_type_t kt, const float *q, int64_t qs, const void *K,
			 const void *V, size_t rb, float *out, int64_t os, int64_t hd,
			 int32_t pos0, int32_t nq);
int attn_rows_heads_kv(kv_type_t kt, const float *q, int64_t qs, const void *K,
		       const void *V, size_t rb, float *out, int64_t os, int64_t hd,
		       int32_t pos, int32_t nh);
int attn_rows_heads_kv_generic(kv_type_t kt, const float *q, int64_t qs, const void *K,
			       const void *V, size_t rb, float *out, int64_t os, int64_t hd,
			       int32_t pos, int32_t nh);
/* attn_rows_kv for nh query heads that share one KV head (grouped-query
 * attention; a prompt's attention chunk): head h's queries at q + h * qh
 * (query j at q + h * qh + j * qs), its outputs at out + h * oh + j * os.
 * Each head's outputs are the bits of attn_rows_kv on that head alone, at
 * every level; each key row and each tile of value rows is converted to
 * float once for all the heads and queries. attn_rows_kv is its nh = 1.
 * 0, or -1 as attn_rows. */
int attn_rows_group_kv(kv_type_t kt, const float *q, int64_t qs, int64_t qh, const void *K,
		       const void *V, size_t rb, float *out, int64_t os, int64_t oh, int64_t hd,
		       int32_t pos0, int32_t nq, int32_t nh);
int attn_rows_group_kv_generic(kv_type_t kt, const float *q, int64_t qs, int64_t qh,
			       const void *K, const void *V, size_t rb, float *out, int64_t os,
			       int64_t oh, int64_t hd, int32_t pos0, int32_t nq, int32_t nh);

#endif
