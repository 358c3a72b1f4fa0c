/* tools/figures/q5/ggml-matmul.c: one quantized matrix product in egang and
 * in ggml's own CPU library (node-llama-cpp's prebuilt libggml-cpu-*.so,
 * the code llama.cpp runs), against a reference in double.
 *
 *   ggml-matmul TYPE N ROWS NTOK [SEED]
 *
 * Weights: ROWS x N random floats (with a few large ones per row),
 * quantized by egang's quantizer (the files compared are egang's); the same
 * bytes go to ggml. Activations: NTOK x N random floats (a heavy tail, as
 * hidden states have). For each token, egang's act_prepare and ggml's
 * quantize_row_<vec_dot_type> are compared byte for byte; then every
 * output of egang (vec_dot) and of ggml (ggml_mul_mat through
 * ggml_graph_compute_with_ctx, one thread: the vec_dot path for one token,
 * llamafile's tinyBLAS for a batch where ggml takes it) is compared with
 *   ref_q: the exact sum, in double, of the weights as their blocks define
 *          them times the activations as their Q8 blocks define them
 *          (d * q; Q8_1's min term from its stored s, as both engines do)
 * and with each other. Prints per engine the largest and the mean
 * |y - ref_q| in units of the float ulp of the output, and how many
 * outputs differ between the engines and by how many ulps at most.
 *
 * Build (tools/figures/q5/ggml-matmul.sh does this):
 *   cc -O2 -Isrc -I$CACHE/llama.cpp-v0.4.0/ggml/include ggml-matmul.c
 *      build/gcc-release/libegang.a -L$BINS -l:libggml-base.so
 *      -l:libggml-cpu-LIB.so -Wl,-rpath,$BINS $(egang's LDLIBS)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu.h"
#include "kernels/kernels.h"

typedef void (*quantize_row_fn)(const float *x, void *y, int64_t k);
void quantize_row_q8_0(const float *x, void *y, int64_t k);
void quantize_row_q8_1(const float *x, void *y, int64_t k);
void quantize_row_q8_K(const float *x, void *y, int64_t k);

static uint64_t rng_state = 88172645463325252ull;

/* xorshift64*, a uniform float in [0, 1) */
static double rng_uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* a normal draw (Box-Muller) */
static double rng_normal(void)
{
	double u = rng_uniform() + 1e-300, v = rng_uniform();
	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static double f16d(const uint8_t *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return (double)fp16_to_f32(h);
}

/* the 32 quants of a Q5_0 / Q5_1 block (fifth bit j from qh bit j, and
 * j + 16 from bit j + 16), unsigned 0..31 */
static void ref_q5(const uint8_t *qh, const uint8_t *qs, int *q)
{
	uint32_t h;
	memcpy(&h, qh, 4);
	for (int j = 0; j < 16; j++) {
		q[j] = (qs[j] & 15) | (int)((h >> j) & 1) << 4;
		q[j + 16] = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
	}
}

/* the 6-bit scale and min of sub-block s of a Q4_K / Q5_K super-block */
static void ref_scale_min(const uint8_t *sc, int s, int *d, int *m)
{
	if (s < 4) {
		*d = sc[s] & 63;
		*m = sc[s + 4] & 63;
	} else {
		*d = (sc[s + 4] & 15) | (sc[s - 4] >> 6) << 4;
		*m = (sc[s + 4] >> 4) | (sc[s] >> 6) << 4;
	}
}

/* One weight row (n) of type t in double, as its blocks define it. */
static int ref_weights(dtype_t t, const uint8_t *w, int64_t n, double *out)
{
	int q[256];
	if (t == DTYPE_Q5_0 || t == DTYPE_Q5_1 || t == DTYPE_Q4_0 || t == DTYPE_Q4_1 ||
	    t == DTYPE_Q8_0) {
		size_t bb = dtype_info[t].block_bytes;
		for (int64_t b = 0; b < n / 32; b++) {
			const uint8_t *x = w + b * bb;
			double d = f16d(x), m = 0.0;
			if (t == DTYPE_Q5_0) {
				ref_q5(x + 2, x + 6, q);
				for (int j = 0; j < 32; j++)
					q[j] -= 16;
			} else if (t == DTYPE_Q5_1) {
				m = f16d(x + 2);
				ref_q5(x + 4, x + 8, q);
			} else if (t == DTYPE_Q4_0 || t == DTYPE_Q4_1) {
				const uint8_t *qs = x + (t == DTYPE_Q4_0 ? 2 : 4);
				if (t == DTYPE_Q4_1)
					m = f16d(x + 2);
				for (int j = 0; j < 16; j++) {
					q[j] = (qs[j] & 15) - (t == DTYPE_Q4_0 ? 8 : 0);
					q[j + 16] = (qs[j] >> 4) - (t == DTYPE_Q4_0 ? 8 : 0);
				}
			} else {
				for (int j = 0; j < 32; j++)
					q[j] = (int8_t)x[2 + j];
			}
			for (int j = 0; j < 32; j++)
				out[b * 32 + j] = d * q[j] + m;
		}
		return 0;
	}
	if (t == DTYPE_Q5_K || t == DTYPE_Q4_K) {
		size_t bb = dtype_info[t].block_bytes;
		int five = t == DTYPE_Q5_K;
		for (int64_t b = 0; b < n / 256; b++) {
			const uint8_t *x = w + b * bb;
			double d = f16d(x), dmin = f16d(x + 2);
			const uint8_t *sc = x + 4, *qh = x + 16, *qs = x + (five ? 48 : 16);
			for (int c = 0; c < 4; c++)
				for (int l = 0; l < 32; l++) {
					int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
					if (five) {
						lo += (qh[l] >> (2 * c) & 1) * 16;
						hi += (qh[l] >> (2 * c + 1) & 1) * 16;
					}
					q[64 * c + l] = lo;
					q[64 * c + 32 + l] = hi;
				}
			for (int s = 0; s < 8; s++) {
				int a, m;
				ref_scale_min(sc, s, &a, &m);
				for (int l = 0; l < 32; l++)
					out[b * 256 + 32 * s + l] = d * a * q[32 * s + l] - dmin * m;
			}
		}
		return 0;
	}
	return -1;
}

/* The reference product of one row with one token's quantized activations
 * xa (type a), in double; for Q8_1 the min term uses the stored s. */
static double ref_dot(dtype_t t, const uint8_t *w, const double *wd, dtype_t a,
		      const uint8_t *xa, int64_t n)
{
	double acc = 0.0;
	if (a == DTYPE_Q8_K) {
		for (int64_t b = 0; b < n / 256; b++) {
			const uint8_t *x = xa + b * (4 + 256 + 32);
			float d;
			memcpy(&d, x, 4);
			for (int j = 0; j < 256; j++)
				acc += wd[b * 256 + j] * ((double)d * (int8_t)x[4 + j]);
		}
		return acc;
	}
	size_t xb = a == DTYPE_Q8_1 ? 36 : 34, wb = dtype_info[t].block_bytes;
	for (int64_t b = 0; b < n / 32; b++) {
		const uint8_t *x = xa + b * xb;
		double d = f16d(x);
		if (a == DTYPE_Q8_1) {
			/* (d q + m) . x = d (q . x) + m s */
			double dw = f16d(w + b * wb), m = f16d(w + b * wb + 2);
			double sq = 0.0; /* d_x (q . q_x), q = (w - m) / d_w */
			for (int j = 0; j < 32 && dw != 0.0; j++)
				sq += (double)lround((wd[b * 32 + j] - m) / dw) * d * (int8_t)x[4 + j];
			acc += dw * sq + m * f16d(x + 2);
		} else {
			for (int j = 0; j < 32; j++)
				acc += wd[b * 32 + j] * (d * (int8_t)x[2 + j]);
		}
	}
	return acc;
}

static enum ggml_type ggml_type_of(dtype_t t)
{
	return (enum ggml_type)dtype_info[t].ggml_id;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: ggml-matmul TYPE N ROWS NTOK [SEED]\n");
		return 2;
	}
	int ti = dtype_from_name(argv[1]);
	int64_t n = atoll(argv[2]), rows = atoll(argv[3]), ntok = atoll(argv[4]);
	if (argc > 5)
		rng_state ^= (uint64_t)atoll(argv[5]) * 0x9E3779B97F4A7C15ull;
	if (ti < 0 || n <= 0 || rows <= 0 || ntok <= 0) {
		fprintf(stderr, "ggml-matmul: bad arguments\n");
		return 2;
	}
	dtype_t t = (dtype_t)ti, a = dtype_info[t].act;
	kernels_init();
	ggml_cpu_init();
	size_t rb = dtype_row_bytes(t, n), ab = dtype_row_bytes(a, n);
	if (rb == 0 || ab == 0) {
		fprintf(stderr, "ggml-matmul: %lld is not whole blocks of %s\n", (long long)n, argv[1]);
		return 2;
	}
	float *wf = malloc(sizeof(float) * (size_t)n);
	float *x = malloc(sizeof(float) * (size_t)(n * ntok));
	uint8_t *w = malloc(rb * (size_t)rows), *xe = malloc(ab), *xg = malloc(ab);
	double *wd = malloc(sizeof(double) * (size_t)n);
	float *ye = malloc(sizeof(float) * (size_t)(rows * ntok));
	double *ref = malloc(sizeof(double) * (size_t)(rows * ntok));
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < n; j++)
			wf[j] = (float)(0.05 * rng_normal() * (rng_uniform() < 0.01 ? 6.0 : 1.0));
		quantize_row(t, wf, w + r * rb, n);
	}
	for (int64_t j = 0; j < n * ntok; j++)
		x[j] = (float)(rng_normal() * (rng_uniform() < 0.02 ? 8.0 : 1.0));

	/* egang: act_prepare + vec_dot; activation bytes against ggml's */
	quantize_row_fn gq = a == DTYPE_Q8_0 ? quantize_row_q8_0 :
			     a == DTYPE_Q8_1 ? quantize_row_q8_1 : quantize_row_q8_K;
	int64_t act_diff = 0;
	for (int64_t k = 0; k < ntok; k++) {
		act_prepare(t, x + k * n, xe, n);
		gq(x + k * n, xg, n);
		for (size_t i = 0; i < ab; i++)
			act_diff += xe[i] != xg[i];
		for (int64_t r = 0; r < rows; r++) {
			ye[k * rows + r] = vec_dot(t, w + r * rb, xe, n);
			if (ref_weights(t, w + r * rb, n, wd) != 0) {
				fprintf(stderr, "ggml-matmul: no reference for %s\n", argv[1]);
				return 2;
			}
			ref[k * rows + r] = ref_dot(t, w + r * rb, wd, a, xe, n);
		}
	}

	/* ggml: mul_mat through its CPU graph compute, one thread */
	size_t mem = rb * (size_t)rows + sizeof(float) * (size_t)(n * ntok + rows * ntok) * 2 +
		     (64u << 20);
	struct ggml_init_params ip = { .mem_size = mem, .mem_buffer = NULL, .no_alloc = false };
	struct ggml_context *ctx = ggml_init(ip);
	struct ggml_tensor *A = ggml_new_tensor_2d(ctx, ggml_type_of(t), n, rows);
	struct ggml_tensor *B = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, ntok);
	memcpy(A->data, w, rb * (size_t)rows);
	memcpy(B->data, x, sizeof(float) * (size_t)(n * ntok));
	struct ggml_tensor *C = ggml_mul_mat(ctx, A, B);
	struct ggml_cgraph *gf = ggml_new_graph(ctx);
	ggml_build_forward_expand(gf, C);
	if (ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS) {
		fprintf(stderr, "ggml-matmul: ggml's compute failed\n");
		return 1;
	}
	const float *yg = C->data;

	double e_max = 0, e_sum = 0, g_max = 0, g_sum = 0;
	int64_t ndiff = 0;
	double dmax_ulp = 0;
	for (int64_t i = 0; i < rows * ntok; i++) {
		double u = nextafterf(fabsf((float)ref[i]), INFINITY) - fabsf((float)ref[i]);
		double ee = fabs(ye[i] - ref[i]) / u, eg = fabs(yg[i] - ref[i]) / u;
		e_max = fmax(e_max, ee);
		e_sum += ee;
		g_max = fmax(g_max, eg);
		g_sum += eg;
		if (ye[i] != yg[i]) {
			ndiff++;
			dmax_ulp = fmax(dmax_ulp, fabs(ye[i] - yg[i]) / u);
		}
	}
	double cnt = (double)(rows * ntok);
	printf("%-6s n %-5lld rows %-4lld ntok %-3lld act %s bytes differing %lld | "
	       "|y - ref_q| in ulps: egang max %.1f mean %.2f, ggml max %.1f mean %.2f | "
	       "egang != ggml: %lld of %lld (max %.1f ulps)\n",
	       argv[1], (long long)n, (long long)rows, (long long)ntok, dtype_info[a].name,
	       (long long)act_diff, e_max, e_sum / cnt, g_max, g_sum / cnt, (long long)ndiff,
	       (long long)(rows * ntok), dmax_ulp);
	ggml_free(ctx);
	return 0;
}
