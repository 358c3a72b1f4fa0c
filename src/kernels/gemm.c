/* gemm: weight rows times a batch of activation rows, for prefill (the
 * "matrix-matrix" block of kernels.h).
 *
 * Design. Decode streams every weight once per token; a prompt of B tokens
 * processed together streams it once per batch. A caller's chunk is a block
 * of weight rows (about 32 KiB) times all B tokens of the batch, so the
 * block is read from memory once and then from cache.
 *
 * Every output Y[t][r] is the same bits as the decode path's
 * vec_dot(row r, x_t) at the ISA level in use, so a batched prefill gives the
 * same logits as token-by-token decoding, whatever the chunking and the
 * batch size:
 *  - Q8_0 / Q4_0 weights, and Q5_0 on x86 as the Q8_0 blocks it equals
 *    (true matrix-matrix kernels). vec_dot's order is
 *    the generic's at every level (kernels_impl.h): per block the exact
 *    integer sum, then acc = acc + (float)sumi * (dw * dx), blocks in
 *    ascending order. The SIMD kernels keep it per output: a register holds
 *    the same 4-element group of 8 (AVX2) or 16 (AVX-512) weight rows
 *    (repacked per row group into thread scratch), the token's 4 activation
 *    bytes are broadcast, and the integer dot (vpdpbusd with VNNI, or
 *    pmaddubsw + pmaddwd on AVX2) leaves one row's exact block sum in each
 *    lane; no horizontal sums, and the float step is the generic's, lane by
 *    lane, with no FMA.
 *  - F32 / F16 / BF16 weights: each ISA level has its own lane order and FMA
 *    in vec_dot (kernels_impl.h), which the other kernels' authors may tune.
 *    A level that has a matmat kernel (kernels_impl.h; AVX-512: 4 rows x 3
 *    tokens register-blocked, written next to its matvec with the same
 *    per-output sequence) runs it; otherwise gemm_rows runs the level's own
 *    matvec_rows once per token over the chunk's rows: the rows come from
 *    cache after the first token (tiled for cache, not register-blocked).
 *    gemm_rows_generic is the generic's vec_dot per output; the levels
 *    agree with it within the float-dot tolerance of test_kernels.
 *
 * Dispatch follows the level in use (kernels_ops, kernels_impl.h): the
 * level of the matvec kernels is the level of the matrix-matrix ones. */
#include "kernels/gemm_impl.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* ------------------------------------------------------------- scratch */

/* Two buffers per thread, behind a key whose destructor frees them when
 * the thread exits (the gang's workers live as long as the gang). */
typedef struct gemm_tls {
	void *buf[2];
	size_t cap[2];
} gemm_tls_t;

static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
	gemm_tls_t *s = p;
	free(s->buf[0]);
	free(s->buf[1]);
	free(s);
}

static void key_make(void) { pthread_key_create(&g_key, tls_free); }

void *gemm_scratch(int k, size_t bytes)
{
	pthread_once(&g_key_once, key_make);
	gemm_tls_t *s = pthread_getspecific(g_key);
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s || pthread_setspecific(g_key, s) != 0) {
			free(s);
			return NULL;
		}
	}
	if (s->cap[k] < bytes) {
		void *p = NULL;
		size_t cap = (bytes + 4095) & ~(size_t)4095;
		if (posix_memalign(&p, 64, cap) != 0)
			return NULL;
		free(s->buf[k]);
		s->buf[k] = p;
		s->cap[k] = cap;
	}
	return s->buf[k];
}

/* ------------------------------------------------------------- generic */

void gemm_rows_generic(dtype_t wt, const void *W, const void *X, size_t xs,
		       float *Y, int64_t ys, int64_t n, int64_t r0, int64_t r1,
		       int64_t ntok)
{
	size_t rb = dtype_row_bytes(wt, n);
	for (int64_t t = 0; t < ntok; t++)
		for (int64_t r = r0; r < r1; r++)
			Y[t * ys + r] = vec_dot_generic(wt, (const char *)W + (size_t)r * rb,
							(const char *)X + (size_t)t * xs, n);
}

/* ----------------------------------------------------------------- aux */

/* Bytes of one aux region (per token and block a float and 4 bytes). */
static size_t aux_region_bytes(int64_t n, int64_t ntok)
{
	return (size_t)(n / QK) * (size_t)ntok * (sizeof(float) + sizeof(int32_t));
}

/* aux = the Q8_0 region, dx (ntok * nb floats) then sx (ntok * nb int32),
 * then the Q8_1 region, dx then sf (the blocks' s as floats). */
size_t gemm_aux_bytes(int64_t n, int64_t ntok)
{
	return 2 * aux_region_bytes(n, ntok);
}

void gemm_aux_generic(const uint8_t *X, size_t xs, int64_t nb, int64_t ntok, float *dx,
		      int32_t *sx)
{
	for (int64_t k = 0; k < ntok; k++)
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *blk = X + (size_t)k * xs + (size_t)b * sizeof(block_q8_0);
			int32_t sum = 0;
			for (int j = 0; j < QK; j++)
				sum += (int8_t)blk[2 + j];
			dx[k * nb + b] = fp16_to_f32_inline(ld_u16(blk));
			sx[k * nb + b] = sum;
		}
}

/* The Q8_1 region: each block's d and s (block_q8_1) as floats. */
static void gemm_aux_q8_1(const uint8_t *X, size_t xs, int64_t nb, int64_t ntok, float *dx,
			  float *sf)
{
	const size_t bb = dtype_info[DTYPE_Q8_1].block_bytes;
	for (int64_t k = 0; k < ntok; k++)
		for (int64_t b = 0; b < nb; b++) {
			const uint8_t *blk = X + (size_t)k * xs + (size_t)b * bb;
			dx[k * nb + b] = fp16_to_f32_inline(ld_u16(blk));
			sf[k * nb + b] = fp16_to_f32_inline(ld_u16(blk + 2));
		}
}

/* The region of aux for wt's activations (Q8_0 or Q8_1): its dx, and
 * after nb * ntok floats its sx (Q8_0) or sf (Q8_1). */
static float *aux_region(dtype_t wt, const void *aux, int64_t n, int64_t ntok)
{
	assert(dtype_info[wt].act == DTYPE_Q8_0 || dtype_info[wt].act == DTYPE_Q8_1);
	size_t off = dtype_info[wt].act == DTYPE_Q8_1 ? aux_region_bytes(n, ntok) : 0;
	return (float *)(void *)((char *)(uintptr_t)aux + off);
}

void gemm_aux_prepare(dtype_t wt, const void *X, size_t xs, int64_t n, int64_t ntok,
		      void *aux)
{
	int64_t nb = n / QK;
	float *dx = aux_region(wt, aux, n, ntok);
	if (dtype_info[wt].act == DTYPE_Q8_1)
		gemm_aux_q8_1(X, xs, nb, ntok, dx, dx + nb * ntok);
	else
		kernels_ops()->gemm_aux(X, xs, nb, ntok, dx, (int32_t *)(void *)(dx + nb * ntok));
}

/* ------------------------------------------------------------ dispatch */

/* The level's quantized gemm, or NULL where it has none. */
static gemm_quant_fn quant_kernel(void)
{
	gemm_quant_fn k = kernels_ops()->gemm_quant;
	return k == gemm_quant_absent ? NULL : k;
}

/* Whether wt runs gemm_quant_*: Q8_0, Q4_0, and on x86 Q5_0 (as the Q8_0
 * blocks it equals, kernels_impl.h q8_form; the ARM64 kernels read Q8_0 and
 * Q4_0 blocks only, so Q5_0 there takes the matvec per token); Q4_1 and
 * Q5_1 at the avx512vnni and amx levels, whose avx512vnni kernel reads them
 * against Q8_1 (elsewhere their matmat). */
static bool quant_type(dtype_t wt)
{
#if defined(__x86_64__)
	if (wt == DTYPE_Q5_0)
		return true;
	if (q8_1_form(wt))
		return quant_kernel() == gemm_quant_avx512vnni ||
		       quant_kernel() == gemm_quant_amx;
#endif
	return wt == DTYPE_Q8_0 || wt == DTYPE_Q4_0;
}

int gemm_small_batch(dtype_t t)
{
#if defined(__x86_64__)
	/* amx: below its crossover it runs the avx512vnni kernel */
	return quant_type(t) && (quant_kernel() == gemm_quant_avx512vnni ||
				 quant_kernel() == gemm_quant_amx);
#else
	(void)t;
	return 0;
#endif
}

void gemm_rows(dtype_t wt, const void *W, const void *X, size_t xs,
	       const void *aux, float *Y, int64_t ys, int64_t n, int64_t r0,
	       int64_t r1, int64_t ntok)
{
	gemm_rows_packed(wt, W, NULL, 0, X, xs, aux, Y, ys, n, r0, r1, ntok);
}

void gemm_rows_packed(dtype_t wt, const void *W, const void *P, int64_t rows,
		      const void *X, size_t xs, const void *aux, float *Y, int64_t ys,
		      int64_t n, int64_t r0, int64_t r1, int64_t ntok)
{
	assert((unsigned)wt < DTYPE_COUNT && n % dtype_info[wt].block == 0);
	if (r1 <= r0 || ntok <= 0)
		return;
	if (quant_type(wt)) {
		gemm_quant_fn k = quant_kernel();
		if (k && !aux) {
			aux = gemm_scratch(0, gemm_aux_bytes(n, ntok));
			if (aux)
				gemm_aux_prepare(wt, X, xs, n, ntok, (void *)aux);
		}
		if (k && aux) {
			const float *dx = aux_region(wt, aux, n, ntok);
			/* Q8_1: the floats sf (gemm_quant_kernel_t) */
			const int32_t *sx = (const int32_t *)(const void *)(dx + (n / QK) * ntok);
			if (!pack16_bytes(wt, rows, n))
				P = NULL;
			k(wt, W, dtype_row_bytes(wt, n), P, rows & ~(int64_t)15, X, xs, dx, sx,
			  Y, ys, n / QK, r0, r1, ntok);
			return;
		}
		gemm_rows_generic(wt, W, X, xs, Y, ys, n, r0, r1, ntok);
		return;
	}
	const kernel_type_ops_t *to = &kernels_ops()->type[wt];
	matmat_fn mm = to->matmat == matmat_absent ? NULL : to->matmat;
	matmat_p16_fn mp = to->matmat_p16 == matmat_p16_absent ? NULL : to->matmat_p16;
	if (mm && mp && P && pack16_used(wt, n) && pack16_bytes(wt, rows, n)) {
		/* rows [r0, a) and [b, r1) as stored, the whole groups [a, b)
		 * from the packed copy */
		const size_t rb = dtype_row_bytes(wt, n);
		int64_t a, b;
		pack16_split(wt, rows, r0, r1, &a, &b);
		if (a > r0)
			mm(W, rb, X, xs, Y, ys, n, r0, a, ntok);
		const int64_t G = pack16_group_rows(wt);
		if (b > a)
			mp((const uint8_t *)P + (size_t)(a / G) * pack16_group_bytes(wt, n), X, xs,
			   Y + a, ys, n, (b - a) / G, ntok);
		if (r1 > b)
			mm(W, rb, X, xs, Y, ys, n, b, r1, ntok);
		return;
	}
	if (mm) {
		mm(W, dtype_row_bytes(wt, n), X, xs, Y, ys, n, r0, r1, ntok);
		return;
	}
	for (int64_t t = 0; t < ntok; t++)
		matvec_rows(wt, W, (const char *)X + (size_t)t * xs, Y + t * ys,
			    n, r0, r1);
}
