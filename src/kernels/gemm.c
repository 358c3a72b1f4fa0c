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
 *  - Q8_0 / Q4_0 weights (true matrix-matrix kernels). vec_dot's order is
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
 *    To stay bit-exact with decode at every level without depending on that
 *    order, gemm_rows runs the level's own matvec_rows once per token over
 *    the chunk's rows: the rows come from cache after the first token (tiled
 *    for cache, not register-blocked). gemm_rows_generic is the generic's
 *    vec_dot per output; the levels agree with it within the float-dot
 *    tolerance of test_kernels.
 *
 * Dispatch follows kernels_isa(): the level of the matvec kernels is the
 * level of the matrix-matrix ones. */
#include "kernels/gemm_impl.h"

#include <assert.h>
#include <pthread.h>
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

/* ------------------------------------------------------------ dispatch */

static gemm_quant_fn quant_kernel(void)
{
#if defined(__x86_64__)
	const char *isa = kernels_isa();
	if (strcmp(isa, "avx512") == 0)
		return gemm_quant_avx512;
	if (strcmp(isa, "avx2") == 0)
		return gemm_quant_avx2;
#endif
	return NULL;
}

void gemm_rows(dtype_t wt, const void *W, const void *X, size_t xs, float *Y,
	       int64_t ys, int64_t n, int64_t r0, int64_t r1, int64_t ntok)
{
	assert((unsigned)wt < DTYPE_COUNT && n % dtype_info[wt].block == 0);
	if (r1 <= r0 || ntok <= 0)
		return;
	if (wt == DTYPE_Q8_0 || wt == DTYPE_Q4_0) {
		gemm_quant_fn k = quant_kernel();
		if (k) {
			k(wt, W, dtype_row_bytes(wt, n), X, xs, Y, ys, n / QK, r0,
			  r1, ntok);
			return;
		}
		gemm_rows_generic(wt, W, X, xs, Y, ys, n, r0, r1, ntok);
		return;
	}
	for (int64_t t = 0; t < ntok; t++)
		matvec_rows(wt, W, (const char *)X + (size_t)t * xs, Y + t * ys,
			    n, r0, r1);
}
