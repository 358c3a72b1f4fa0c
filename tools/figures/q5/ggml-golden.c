/* tools/figures/q5/ggml-golden.c: writes tests/data/q5_ggml_golden.h, the
 * Q5 family as llama.cpp computes it, from ggml's own libraries
 * (node-llama-cpp 3.21.1's prebuilt libggml-base.so and libggml-cpu-*.so):
 *
 *   ggml-golden X86_LIB.so GENERIC_LIB.so > tests/data/q5_ggml_golden.h
 *
 * For Q5_0, Q5_1 and Q5_K, two rows of 256 weights quantized by ggml's
 * reference quantizers (quantize_row_q5_*_ref), and one row of 256
 * activations (normal draws, a few large ones, and values that land on a
 * rounding tie of the Q8 quantizers):
 *   - the rows' bytes and ggml's dequantize_row_q5_* of them (float bits);
 *   - the activations as ggml's x86 library quantizes them for each type's
 *     vec_dot_type (quantize_row_q8_0 / q8_1 / q8_K: Q5_0 pairs with Q8_0,
 *     Q5_1 with Q8_1, Q5_K with Q8_K);
 *   - each row's ggml_vec_dot_q5_*_q8_* from the x86 library (its AVX2 sum
 *     order) and from the generic x86-64 library (its scalar C order), and
 *     the exact value of that product in double from the blocks.
 * Build: tools/figures/q5/ggml-golden.sh.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*qrow_fn)(const float *x, void *y, int64_t k);
typedef void (*deq_fn)(const void *x, float *y, int64_t k);
typedef void (*dot_fn)(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy,
		       size_t by, int nrc);
typedef void (*init_fn)(void);

#define N 256
#define ROWS 2

static uint64_t rng_state = 0x5DEECE66Dull;

static double rng_uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double rng_normal(void)
{
	double u = rng_uniform() + 1e-300, v = rng_uniform();
	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "ggml-golden: no %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static void put_bytes(const char *name, const uint8_t *b, size_t n)
{
	printf("static const uint8_t %s[%zu] = {", name, n);
	for (size_t i = 0; i < n; i++)
		printf("%s0x%02x,", i % 12 ? " " : "\n\t", b[i]);
	printf("\n};\n");
}

static void put_floats(const char *name, const float *f, size_t n)
{
	printf("static const uint32_t %s[%zu] = {", name, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &f[i], 4);
		printf("%s0x%08x,", i % 6 ? " " : "\n\t", u);
	}
	printf("\n};\n");
}

static double f16d(const uint8_t *p, float (*h2f)(uint16_t))
{
	uint16_t h;
	memcpy(&h, p, 2);
	return (double)h2f(h);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ggml-golden X86_LIB.so GENERIC_LIB.so\n");
		return 2;
	}
	void *hx = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	void *hg = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	void *hb = dlopen("libggml-base.so", RTLD_NOW | RTLD_GLOBAL);
	if (!hx || !hg || !hb) {
		fprintf(stderr, "ggml-golden: %s\n", dlerror());
		return 1;
	}
	((init_fn)sym(hx, "ggml_cpu_init"))();
	((init_fn)sym(hg, "ggml_cpu_init"))();
	float (*h2f)(uint16_t) = (float (*)(uint16_t))sym(hb, "ggml_fp16_to_fp32");

	static const char *tn[3] = { "q5_0", "q5_1", "q5_K" };
	static const char *an[3] = { "q8_0", "q8_1", "q8_K" };
	static const size_t wbytes[3] = { N / 32 * 22, N / 32 * 24, 176 };
	static const size_t abytes[3] = { N / 32 * 34, N / 32 * 36, 292 };

	float x[N], w[ROWS][N];
	for (int j = 0; j < N; j++)
		x[j] = (float)(rng_normal() * (rng_uniform() < 0.03 ? 6.0 : 1.0));
	/* rounding ties of the Q8 quantizers: in block 1, amax 127 (d = 1)
	 * and values k + 0.5; in the Q8_K super-block the same values are
	 * ties of -127 / max too (max = -127 there) */
	x[32] = -127.0f;
	for (int j = 33; j < 48; j++)
		x[j] = (float)(j - 40) + 0.5f;
	for (int r = 0; r < ROWS; r++)
		for (int j = 0; j < N; j++)
			w[r][j] = (float)(0.04 * rng_normal() + (r ? 0.01 : -0.005));

	printf("/* tests/data/q5_ggml_golden.h: written by tools/figures/q5/ggml-golden.c\n"
	       " * from llama.cpp's ggml (node-llama-cpp 3.21.1, llama.cpp release v0.4.0):\n"
	       " * x86 library %s, generic library %s. Do not edit. */\n",
	       strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1],
	       strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2]);
	printf("#define Q5G_N %d\n#define Q5G_ROWS %d\n", N, ROWS);
	put_floats("q5g_x", x, N);
	for (int t = 0; t < 3; t++) {
		char name[64];
		uint8_t wb[ROWS][176 * 2], ab[292 * 2];
		float deq[ROWS][N], dot_x86[ROWS], dot_gen[ROWS];
		double exact[ROWS];
		snprintf(name, sizeof name, "quantize_row_%s_ref", tn[t]);
		for (int r = 0; r < ROWS; r++)
			((qrow_fn)sym(hb, name))(w[r], wb[r], N);
		snprintf(name, sizeof name, "dequantize_row_%s", tn[t]);
		for (int r = 0; r < ROWS; r++)
			((deq_fn)sym(hb, name))(wb[r], deq[r], N);
		snprintf(name, sizeof name, "quantize_row_%s", an[t]);
		((qrow_fn)sym(hx, name))(x, ab, N);
		uint8_t ab_gen[292 * 2];
		((qrow_fn)sym(hg, name))(x, ab_gen, N);
		if (memcmp(ab, ab_gen, abytes[t]) != 0)
			fprintf(stderr, "ggml-golden: note: the generic library quantizes %s otherwise\n",
				an[t]);
		snprintf(name, sizeof name, "ggml_vec_dot_%s_%s", tn[t], an[t]);
		for (int r = 0; r < ROWS; r++) {
			((dot_fn)sym(hx, name))(N, &dot_x86[r], 0, wb[r], 0, ab, 0, 1);
			((dot_fn)sym(hg, name))(N, &dot_gen[r], 0, wb[r], 0, ab, 0, 1);
			/* exact: the dequantized weights (exact in float: d q or
			 * d q + m with f16 d, m and small q, or d sc q - dmin m)
			 * times the dequantized activations; Q8_1's min term as
			 * ggml defines it, m times the block's stored f16 s */
			double e = 0.0;
			for (int b = 0; b < N / 32 && t < 2; b++) {
				const uint8_t *xa = ab + b * (t ? 36 : 34);
				double dx = f16d(xa, h2f), m = t ? f16d(wb[r] + b * 24 + 2, h2f) : 0.0;
				for (int j = 0; j < 32; j++)
					e += ((double)deq[r][b * 32 + j] - m) * dx * (int8_t)xa[(t ? 4 : 2) + j];
				if (t)
					e += m * f16d(xa + 2, h2f);
			}
			if (t == 2) {
				float dk;
				memcpy(&dk, ab, 4);
				for (int j = 0; j < N; j++)
					e += (double)deq[r][j] * dk * (int8_t)ab[4 + j];
			}
			exact[r] = e;
		}
		snprintf(name, sizeof name, "q5g_%s_w", tn[t]);
		put_bytes(name, wb[0], wbytes[t]);
		snprintf(name, sizeof name, "q5g_%s_w1", tn[t]);
		put_bytes(name, wb[1], wbytes[t]);
		snprintf(name, sizeof name, "q5g_%s_deq", tn[t]);
		put_floats(name, deq[0], N);
		snprintf(name, sizeof name, "q5g_%s_deq1", tn[t]);
		put_floats(name, deq[1], N);
		snprintf(name, sizeof name, "q5g_%s_act", tn[t]);
		put_bytes(name, ab, abytes[t]);
		snprintf(name, sizeof name, "q5g_%s_dot_x86", tn[t]);
		put_floats(name, dot_x86, ROWS);
		snprintf(name, sizeof name, "q5g_%s_dot_generic", tn[t]);
		put_floats(name, dot_gen, ROWS);
		printf("static const double q5g_%s_exact[%d] = { %a, %a };\n", tn[t], ROWS, exact[0],
		       exact[1]);
	}
	return 0;
}
