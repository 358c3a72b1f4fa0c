/* Tests of the amx level's BF16 kernels (gemm_amx_bf16.c) and of
 * TDPBF16PS in the tile layer (amx_tile.h), on any x86-64 host with the
 * avx512vnni level (the lanes and the emulated kernel use AVX-512):
 *  - test_amx_bf16_instruction: the emulated TDPBF16PS against values
 *    worked out by hand from the SDM's Operation section (two chains per
 *    C element, even and odd, added to C last; the pairs' halves; DAZ on
 *    A, B and C; FTZ with x86's tininess after rounding; inf and NaN), each
 *    also against the host's own scalar FMA and add under MXCSR.DAZ and
 *    FTZ; and a shape the hardware faults on;
 *  - test_gemm_amx_bf16_emu: the file's contract, with the tiles emulated:
 *    (c) the tile kernel and the level's matmat, bit for bit, against a
 *    plain-C reference of the tile order (ref_gemm: scalar SSE FMA and add
 *    under MXCSR.DAZ and FTZ, an implementation of the rounding apart from
 *    the emulation's), NaN against NaN; (a) every token's outputs from a
 *    batch of 1..40 tokens (and 64, 65) the bits of the lanes' matvec of
 *    that token alone and of vec_dot; (b) within the bound derived in
 *    gemm_amx_bf16.c of the generic twin (and of the float activations
 *    before act_prepare), per output; odd rows, rows and row ranges that
 *    are not whole groups, n from 1 to 2048 (odd, and not multiples of
 *    32), NaN, infinities, denormals and tiny products;
 *  - test_gemm_amx_bf16_hw: the same with the instructions, where the amx
 *    level runs; SKIP elsewhere.
 *
 * `test_gemm_amx_bf16 --bench [rows n ntok reps]` times, in thread CPU time
 * (the best of reps), BF16 rows x ntok tokens: avx512vnni's kernels (the
 * matvec per token, and its packed form where that level reads one; from 2
 * tokens its matmat) against the amx level's lanes (matvec_bf16_amx per
 * token, matmat_bf16_amx_emu below 16 tokens, which has no tile
 * instruction there), alternating them; one summary line. */
#include "kernels/kernels_impl.h"

#include <math.h>
#include <stdbool.h>
#include <time.h>

#include "base/base.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define EGANG_AMX_EMU 1
#include "kernels/amx_tile.h"
#endif

#include "testutil.h" /* after kernels.h: ISA levels */

#if defined(__x86_64__)

/* Same bits, or both NaN (the SDM leaves which NaN TDPBF16PS returns
 * unspecified, and x86's FMA picks by operand order). */
static bool same_float(float a, float b)
{
	return f2u(a) == f2u(b) || (isnan(a) && isnan(b));
}

/* ------------------------------------------------ the plain-C reference */

/* MXCSR: DAZ, FTZ, rounding control (0: nearest even). */
#define REF_DAZ 0x0040u
#define REF_FTZ 0x8000u
#define REF_RC 0x6000u

/* fma and add as the scalar SSE instructions compute them; under the
 * MXCSR that ref_with_dazftz sets they are fp32 with DAZ and FTZ, rounded
 * to nearest even: the hardware's own definition of those modes. */
static __attribute__((noinline, target("fma"))) float ref_fma(float a, float b, float c)
{
	return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

static __attribute__((noinline)) float ref_add(float a, float b)
{
	return _mm_cvtss_f32(_mm_add_ss(_mm_set_ss(a), _mm_set_ss(b)));
}

/* Element j of a weight row (bf16) and of an activation row (the float's
 * high half), 0 at or past n. */
static float ref_w(const uint8_t *w, int64_t j, int64_t n)
{
	if (j >= n)
		return 0.0f;
	uint16_t h;
	memcpy(&h, w + 2 * j, 2);
	return bf16_to_f32(h);
}

static float ref_x(const float *x, int64_t j, int64_t n)
{
	return j >= n ? 0.0f : u2f(f2u(x[j]) & 0xFFFF0000u);
}

/* One output in the tile order (gemm_amx_bf16.c): per block of 32, two
 * sequential chains of fma over the even and the odd elements, their sum
 * added to the accumulator. MXCSR must hold DAZ and FTZ. */
static __attribute__((noinline)) float ref_out(const uint8_t *w, const float *x, int64_t n)
{
	float acc = 0.0f;
	for (int64_t b = 0; b < n; b += 32) {
		float e = 0.0f, o = 0.0f;
		for (int k = 0; k < 16; k++) {
			e = ref_fma(ref_x(x, b + 2 * k, n), ref_w(w, b + 2 * k, n), e);
			o = ref_fma(ref_x(x, b + 2 * k + 1, n), ref_w(w, b + 2 * k + 1, n), o);
		}
		acc = ref_add(acc, ref_add(e, o));
	}
	return acc;
}

/* a b + c as TDPBF16PS's single fma, under DAZ and FTZ. */
static __attribute__((noinline)) float ref_fma_dazftz(float a, float b, float c)
{
	const unsigned csr = _mm_getcsr();
	_mm_setcsr((csr & ~REF_RC) | REF_DAZ | REF_FTZ);
	float r = ref_fma(a, b, c);
	_mm_setcsr(csr);
	return r;
}

/* ------------------------------------------------ the emulated TDPBF16PS */

/* A 1 x 1 product with K = 2 pairs: C = c0 + the SDM's sequence over
 * A = (a0, a1), (a2, a3) and B's column (b0, b1), (b2, b3). */
static float emu_bf16_1x1(const float a[4], const float b[4], float c0)
{
	amx_tilecfg_t cfg = { .palette = 1 };
	cfg.rows[0] = 1; /* C: 1 x 1 fp32 */
	cfg.colsb[0] = 4;
	cfg.rows[1] = 1; /* A: 1 x 2 pairs */
	cfg.colsb[1] = 8;
	cfg.rows[2] = 2; /* B: 2 pair rows x 1 column */
	cfg.colsb[2] = 4;
	AMX_LOADCONFIG(&cfg);
	uint16_t abuf[4], bbuf[4];
	for (int i = 0; i < 4; i++) {
		abuf[i] = (uint16_t)(f2u(a[i]) >> 16);
		bbuf[i] = (uint16_t)(f2u(b[i]) >> 16);
	}
	AMX_LOAD(0, &c0, 4);
	AMX_LOAD(1, abuf, 8);
	AMX_LOAD(2, bbuf, 4);
	AMX_DPBF16PS(0, 1, 2);
	float c;
	AMX_STORE(0, &c, 4);
	AMX_RELEASE();
	return c;
}

/* The same sequence by the host's FMA and add under DAZ and FTZ. */
static float ref_bf16_1x1(const float a[4], const float b[4], float c0)
{
	const unsigned csr = _mm_getcsr();
	_mm_setcsr((csr & ~REF_RC) | REF_DAZ | REF_FTZ);
	float e = ref_fma(a[2], b[2], ref_fma(a[0], b[0], 0.0f));
	float o = ref_fma(a[3], b[3], ref_fma(a[1], b[1], 0.0f));
	float c = ref_add(c0, ref_add(e, o));
	_mm_setcsr(csr);
	return c;
}

static void emu_fault_bf16_k(void) /* colsb(A) / 4 != rows(B) */
{
	amx_tilecfg_t cfg = { .palette = 1 };
	cfg.rows[0] = cfg.rows[1] = 2;
	cfg.colsb[0] = cfg.colsb[1] = cfg.colsb[2] = 8;
	cfg.rows[2] = 1;
	AMX_LOADCONFIG(&cfg);
	AMX_DPBF16PS(0, 1, 2);
}

static void test_amx_bf16_instruction(void **state)
{
	(void)state;
	const float u = 0x1p-24f;
	const float inf = __builtin_inff();
	static const char *const what[] = {
		"two chains (one chain: 1)",
		"C added last (C first: 1)",
		"a pair's low halves multiply (swapped: 29)",
		"DAZ of A (without: 2^-33)",
		"DAZ of C (without: -0)",
		"FTZ of a product (without: 2^-140)",
		"FTZ after rounding: 2^-126 - 1.5 2^-151 rounds to 2^-126 - 2^-150, tiny "
		"(fmaf: 2^-126)",
		"not tiny after rounding: 2^-126 - 2^-152 rounds to 2^-126 (tiny before "
		"rounding: 0)",
		"inf",
		"inf x 0",
	};
	const struct {
		float a[4], b[4], c0;
		uint32_t want; /* bits; 0x7FC00000: any NaN */
	} cases[] = {
		{ { 1, u, u, u }, { 1, 1, 1, 1 }, 0, 0x3F800001u },
		{ { 1, 1, 1, 1 }, { 0, u, u, 0 }, 1, 0x3F800001u },
		{ { 2, 3, 0, 0 }, { 5, 7, 0, 0 }, 0, 0x41F80000u }, /* 31 */
		{ { u2f(0x00010000u), 0, 0, 0 }, { 0x1p100f, 0, 0, 0 }, 0, 0 },
		{ { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, u2f(0x80000200u), 0 },
		{ { 0x1p-70f, 0, 0, 0 }, { 0x1p-70f, 0, 0, 0 }, 0, 0 },
		{ { 0x1p-63f, 0, 0x1.8p-76f, 0 }, { 0x1p-63f, 0, -0x1p-75f, 0 }, 0, 0 },
		{ { 0x1p-63f, 0, 0x1p-76f, 0 }, { 0x1p-63f, 0, -0x1p-76f, 0 }, 0, 0x00800000u },
		{ { inf, 0, 0, 0 }, { 1, 0, 0, 0 }, 0, 0x7F800000u },
		{ { inf, 0, 0, 0 }, { 0, 0, 0, 0 }, 0, 0x7FC00000u },
	};
	_Static_assert(sizeof cases / sizeof cases[0] == sizeof what / sizeof what[0],
		       "one description a case");
	for (size_t i = 0; i < EG_ARRAY_LEN(cases); i++) {
		float got = emu_bf16_1x1(cases[i].a, cases[i].b, cases[i].c0);
		float hw = ref_bf16_1x1(cases[i].a, cases[i].b, cases[i].c0);
		float want = u2f(cases[i].want);
		if (!same_float(got, want))
			fail_msg("tdpbf16ps case %zu (%s): %a (0x%08x), want %a", i, what[i],
				 (double)got, f2u(got), (double)want);
		if (!same_float(hw, want))
			fail_msg("case %zu (%s): the host's FMA under DAZ/FTZ gives %a, want %a", i,
				 what[i], (double)hw, (double)want);
	}
	/* the emulation's FMA against the host's on tiny sums near 2^-126 */
	rng_t r;
	rng_seed(&r, 34);
	for (int i = 0; i < 200000; i++) {
		float a = ldexpf(1.0f + (float)(rng_next(&r) & 0x7F) / 128.0f, -60 - (int)(rng_next(&r) % 20));
		float b = ldexpf(1.0f + (float)(rng_next(&r) & 0x7F) / 128.0f, -60 - (int)(rng_next(&r) % 20));
		float c = ldexpf(1.0f + (float)(rng_next(&r) & 0x7FFFFF) / 8388608.0f,
				 -126 + (int)(rng_next(&r) % 3));
		if (rng_next(&r) & 1)
			b = -b;
		float e = amx_emu_fma_ftz(a, b, c), h = ref_fma_dazftz(a, b, c);
		if (f2u(e) != f2u(h))
			fail_msg("fma(%a, %a, %a): emulation %a, host %a", (double)a, (double)b,
				 (double)c, (double)e, (double)h);
	}
	char msg[256];
	test_abort_message(emu_fault_bf16_k, msg, sizeof msg);
	assert_non_null(strstr(msg, "tdpbf16ps: colsb(a) / 4 != rows(b)"));
}

/* ---------------------------------------------------------- the kernels */

/* A BF16 matrix (rows, n) at an odd address, and ntok activation rows: raw
 * floats, and act_prepare's (the kernels' input), xs bytes apart. */
typedef struct bf_fixture {
	int64_t rows, n, ntok;
	uint8_t *wbuf, *W;
	size_t rb, xs;
	float *raw, *X;
} bf_fixture_t;

/* The special values mixed in (special = 1): zeros, denormals, the
 * smallest normal, huge, infinities, NaN, and values whose products are
 * tiny. */
static const uint16_t bf_specials[] = { 0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080,
					0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x1C80,
					0x9C80, 0x1D00, 0x3F80 };

static float bf_value(rng_t *r, int special, float scale)
{
	if (special && rng_next(r) % 4 == 0)
		return bf16_to_f32(bf_specials[rng_next(r) % EG_ARRAY_LEN(bf_specials)]);
	return rng_normal(r) * scale;
}

static void bf_fixture_make(bf_fixture_t *f, int64_t rows, int64_t n, int64_t ntok,
			    int special, uint64_t seed)
{
	rng_t r;
	rng_seed(&r, seed);
	f->rows = rows;
	f->n = n;
	f->ntok = ntok;
	f->rb = dtype_row_bytes(DTYPE_BF16, n);
	f->wbuf = malloc(f->rb * (size_t)rows + 1);
	f->W = f->wbuf + 1;
	for (int64_t i = 0; i < rows * n; i++) {
		uint16_t h = f32_to_bf16(bf_value(&r, special, 0.05f));
		memcpy(f->W + 2 * i, &h, 2);
	}
	f->xs = sizeof(float) * (size_t)(n + 3);
	f->raw = malloc(f->xs * (size_t)ntok);
	f->X = malloc(f->xs * (size_t)ntok);
	for (int64_t t = 0; t < ntok; t++) {
		float *x = (float *)(void *)((uint8_t *)f->raw + (size_t)t * f->xs);
		for (int64_t j = 0; j < n + 3; j++)
			x[j] = bf_value(&r, special, 1.0f);
		act_prepare(DTYPE_BF16, x, (uint8_t *)f->X + (size_t)t * f->xs, n);
	}
}

static void bf_fixture_free(bf_fixture_t *f)
{
	free(f->wbuf);
	free(f->raw);
	free(f->X);
}

static const float *bf_x(const bf_fixture_t *f, const float *base, int64_t t)
{
	return (const float *)(const void *)((const uint8_t *)base + (size_t)t * f->xs);
}

/* The reference over rows [r0, r1) of every token -> R (ys = rows + 3). */
static void ref_gemm(const bf_fixture_t *f, float *R, int64_t ys, int64_t r0, int64_t r1)
{
	const unsigned csr = _mm_getcsr();
	_mm_setcsr((csr & ~REF_RC) | REF_DAZ | REF_FTZ);
	for (int64_t t = 0; t < f->ntok; t++)
		for (int64_t r = r0; r < r1; r++)
			R[t * ys + r] = ref_out(f->W + (size_t)r * f->rb, bf_x(f, f->X, t), f->n);
	_mm_setcsr(csr);
}

/* g(k) = k u / (1 - k u), u = 2^-24: a sequential fp32 sum of k + 1
 * terms errs by at most g(k) times the sum of their magnitudes. */
static double gamma_u(double k)
{
	const double u = 0x1p-24;
	return k * u / (1.0 - k * u);
}

/* The largest |y - generic| / bound and |y - exact| / bound seen (b). */
static double bf_worst_gen, bf_worst_raw;

/* (b): y (row r, token t) within the bounds of gemm_amx_bf16.c of the
 * generic twin and of the exact dot product with the raw activations. */
static void bf_check_bound(const bf_fixture_t *f, int64_t r, int64_t t, float y)
{
	const uint8_t *w = f->W + (size_t)r * f->rb;
	const float *xa = bf_x(f, f->X, t), *xr = bf_x(f, f->raw, t);
	const double nb = (double)((f->n + 31) / 32);
	double S = 0.0, Sraw = 0.0, exact = 0.0;
	for (int64_t j = 0; j < f->n; j++) {
		double wj = (double)ref_w(w, j, f->n);
		S += fabs(wj * (double)xa[j]);
		Sraw += fabs(wj * (double)xr[j]);
		exact += wj * (double)xr[j];
	}
	const double tiny = ((double)f->n + 2.0 * nb) * 0x1p-126;
	const double order = gamma_u((double)f->n) + gamma_u(nb + 17.0);
	const double bgen = order * S + tiny;
	const double braw = 0x1p-8 * Sraw + order * (S > Sraw ? S : Sraw) + tiny;
	const float g = vec_dot_generic(DTYPE_BF16, w, xa, f->n);
	const double dgen = fabs((double)y - (double)g), draw = fabs((double)y - exact);
	if (dgen > bgen)
		fail_msg("(b) row %lld token %lld n %lld: |%a - generic %a| = %g > bound %g",
			 (long long)r, (long long)t, (long long)f->n, (double)y, (double)g, dgen,
			 bgen);
	if (draw > braw)
		fail_msg("(b) row %lld token %lld n %lld: |%a - exact %a| = %g > bound %g",
			 (long long)r, (long long)t, (long long)f->n, (double)y, exact, draw, braw);
	if (bgen > 0 && dgen / bgen > bf_worst_gen)
		bf_worst_gen = dgen / bgen;
	if (braw > 0 && draw / braw > bf_worst_raw)
		bf_worst_raw = draw / braw;
}

/* The matmat kernels under test (the tiles for any batch, the level's
 * matmat with its crossover) and the lanes' matvec and vec_dot. */
typedef struct bf_kernels {
	const char *name;
	matmat_kernel_t *tiles, *matmat;
	matvec_kernel_t *matvec;
	vec_dot_kernel_t *dot;
} bf_kernels_t;

/* One fixture and row range: (c) each matmat kernel against the reference
 * (nothing written outside the range), (a) each token's outputs against
 * the lanes' matvec of that token alone and vec_dot, (b) where special is
 * 0, the bound. */
static void bf_check(const bf_kernels_t *k, const bf_fixture_t *f, int64_t r0, int64_t r1,
		     int special)
{
	const int64_t ys = f->rows + 3, len = ys * f->ntok;
	float *R = malloc(sizeof(float) * (size_t)len), *Y = malloc(sizeof(float) * (size_t)len);
	float *v = malloc(sizeof(float) * (size_t)ys);
	for (int64_t i = 0; i < len; i++)
		R[i] = -7.0f;
	ref_gemm(f, R, ys, r0, r1);
	matmat_kernel_t *const mm[2] = { k->tiles, k->matmat };
	static const char *const mname[2] = { "tiles", "matmat" };
	for (int j = 0; j < 2; j++) {
		for (int64_t i = 0; i < len; i++)
			Y[i] = -7.0f;
		mm[j](f->W, f->rb, f->X, f->xs, Y, ys, f->n, r0, r1, f->ntok);
		for (int64_t i = 0; i < len; i++)
			if (!same_float(Y[i], R[i]))
				fail_msg("(c) %s %s rows=%lld n=%lld ntok=%lld [%lld, %lld)%s: "
					 "Y[%lld][%lld] = %a, reference %a", k->name, mname[j],
					 (long long)f->rows, (long long)f->n, (long long)f->ntok,
					 (long long)r0, (long long)r1, special ? " special" : "",
					 (long long)(i / ys), (long long)(i % ys), (double)Y[i],
					 (double)R[i]);
	}
	/* Y holds the batch's outputs (matmat, tiles from 16 tokens) */
	for (int64_t t = 0; t < f->ntok; t++) {
		for (int64_t i = 0; i < ys; i++)
			v[i] = -7.0f;
		k->matvec(f->W, f->rb, bf_x(f, f->X, t), v, f->n, r0, r1);
		for (int64_t r = 0; r < ys; r++)
			if (!same_float(v[r], Y[t * ys + r]))
				fail_msg("(a) %s rows=%lld n=%lld: token %lld of %lld, row %lld: batch "
					 "%a, alone %a", k->name, (long long)f->rows, (long long)f->n,
					 (long long)t, (long long)f->ntok, (long long)r,
					 (double)Y[t * ys + r], (double)v[r]);
		int64_t rr = r0 + (t * 7) % (r1 - r0);
		float d = k->dot(f->W + (size_t)rr * f->rb, bf_x(f, f->X, t), f->n);
		if (!same_float(d, Y[t * ys + rr]))
			fail_msg("(a) %s vec_dot row %lld token %lld: %a, batch %a", k->name,
				 (long long)rr, (long long)t, (double)d, (double)Y[t * ys + rr]);
		if (!special)
			for (int64_t r = r0; r < r1; r++)
				bf_check_bound(f, r, t, Y[t * ys + r]);
	}
	free(R);
	free(Y);
	free(v);
}

/* One fixture, three row ranges: all rows, one that starts and ends inside
 * groups, one group. */
static void bf_check_ranges(const bf_kernels_t *k, int64_t rows, int64_t n, int64_t ntok,
			    int special, uint64_t seed)
{
	bf_fixture_t f;
	bf_fixture_make(&f, rows, n, ntok, special, seed);
	const int64_t cuts[3][2] = { { 0, rows },
				     { rows > 5 ? 3 : 0, rows > 5 ? rows - 2 : rows },
				     { rows > 16 ? 16 : 0, rows < 32 ? rows : 32 } };
	for (int c = 0; c < 3; c++)
		bf_check(k, &f, cuts[c][0], cuts[c][1], special);
	bf_fixture_free(&f);
}

static void bf_sweep(const bf_kernels_t *k)
{
	bf_worst_gen = bf_worst_raw = 0.0;
	/* every batch of 1..40 tokens and 64, 65: 37 rows, n = 100 */
	for (int64_t ntok = 1; ntok <= 40; ntok++)
		bf_check_ranges(k, 37, 100, ntok, 0, 200 + (uint64_t)ntok);
	bf_check_ranges(k, 37, 100, 64, 0, 264);
	bf_check_ranges(k, 37, 100, 65, 0, 265);
	/* K: odd, below one block, around one and two blocks, long rows */
	static const int64_t ns[] = { 1, 2, 31, 32, 33, 64, 96, 101, 576, 2048 };
	static const int64_t rowss[] = { 1, 16, 17, 40 };
	static const int64_t toks[] = { 1, 16, 17, 33 };
	for (size_t ni = 0; ni < EG_ARRAY_LEN(ns); ni++)
		for (size_t ri = 0; ri < EG_ARRAY_LEN(rowss); ri++)
			for (size_t ti = 0; ti < EG_ARRAY_LEN(toks); ti++)
				bf_check_ranges(k, rowss[ri], ns[ni], toks[ti], 0,
						1000 + 100 * ni + 10 * ri + ti);
	/* NaN, infinities, denormals, tiny products */
	for (int64_t ntok = 1; ntok <= 20; ntok++) {
		bf_check_ranges(k, 37, 100, ntok, 1, 300 + (uint64_t)ntok);
		bf_check_ranges(k, 17, 2048, ntok, 1, 400 + (uint64_t)ntok);
	}
	print_message("%s: worst error over the (b) bound: %.3f of it (generic), %.3f "
		      "(exact, float activations)\n", k->name, bf_worst_gen, bf_worst_raw);
}

/* Whether this CPU runs the avx512vnni level (the lanes and the emulated
 * kernel use its instructions); the level in use is kept. */
static bool cpu_has_vnni(void)
{
	const char *keep = kernels_isa();
	bool ok = kernels_set_isa("avx512vnni") == 0;
	assert_int_equal(kernels_set_isa(keep), 0);
	return ok;
}

static void test_gemm_amx_bf16_emu(void **state)
{
	(void)state;
	/* the amx level's BF16 entries are these kernels, with no packed form */
	const kernel_type_ops_t *to = &kernels_table(ISA_AMX)->type[DTYPE_BF16];
	assert_true(to->vec_dot == dot_bf16_amx && to->matvec == matvec_bf16_amx &&
		    to->matmat == matmat_bf16_amx && to->matvec_p16 == matvec_p16_absent &&
		    to->matmat_p16 == matmat_p16_absent);
	if (!cpu_has_vnni()) {
		print_message("this CPU lacks avx512vnni, which the lanes use: skipped\n");
		skip();
	}
	const bf_kernels_t emu = { "emulated", gemm_tiles_bf16_amx_emu, matmat_bf16_amx_emu,
				   matvec_bf16_amx, dot_bf16_amx };
	bf_sweep(&emu);
	const bf_kernels_t emu_lanes = { "emulated, emu lanes", gemm_tiles_bf16_amx_emu,
					 matmat_bf16_amx_emu, matvec_bf16_amx_emu,
					 dot_bf16_amx_emu };
	bf_check_ranges(&emu_lanes, 37, 100, 20, 1, 77);
}

static void test_gemm_amx_bf16_hw(void **state)
{
	(void)state;
	const char *keep = kernels_isa();
	if (kernels_set_isa("amx") != 0) {
		print_message("%s: the AMX instructions did not run\n", err_get());
		skip();
	}
	const bf_kernels_t hw = { "amx", gemm_tiles_bf16_amx, matmat_bf16_amx, matvec_bf16_amx,
				  dot_bf16_amx };
	bf_sweep(&hw);
	assert_int_equal(kernels_set_isa(keep), 0);
}

/* ---------------------------------------------------------- benchmark */

/* The calling thread's CPU time in ns. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ns of one call of the avx512vnni level's kernels (lanes = 0) or the amx
 * lanes (1) over all rows and tokens of f (P: the packed copy or NULL). */
static uint64_t bench_once(const bf_fixture_t *f, const uint8_t *P, int lanes, float *Y)
{
	uint64_t a = cpu_ns();
	if (f->ntok == 1 && lanes)
		matvec_bf16_amx(f->W, f->rb, f->X, Y, f->n, 0, f->rows);
	else if (f->ntok == 1)
		matvec_range(DTYPE_BF16, f->W, P, f->rows, f->X, Y, f->n, 0, f->rows);
	else if (lanes)
		matmat_bf16_amx_emu(f->W, f->rb, f->X, f->xs, Y, f->rows, f->n, 0, f->rows,
				    f->ntok);
	else
		gemm_rows_packed(DTYPE_BF16, f->W, P, f->rows, f->X, f->xs, NULL, Y, f->rows, f->n,
				 0, f->rows, f->ntok);
	return cpu_ns() - a;
}

static int bench(int argc, char **argv)
{
	int64_t rows = argc > 2 ? atoll(argv[2]) : 2048;
	int64_t n = argc > 3 ? atoll(argv[3]) : 2048;
	int64_t ntok = argc > 4 ? atoll(argv[4]) : 1;
	int reps = argc > 5 ? atoi(argv[5]) : 20;
	if (rows < 1 || n < 32 || n % 32 || ntok < 1 || ntok > 15 || reps < 1) {
		fprintf(stderr, "test_gemm_amx_bf16 --bench: rows >= 1, n a multiple of 32, "
				"ntok 1..15 (the lanes' sizes), reps >= 1\n");
		return 2;
	}
	if (kernels_set_isa("avx512vnni") != 0) {
		printf("bench bf16: skipped: %s\n", err_get());
		return 0;
	}
	bf_fixture_t f;
	bf_fixture_make(&f, rows, n, ntok, 0, 11);
	uint8_t *P = NULL;
	if (pack16_used(DTYPE_BF16, n) && pack16_bytes(DTYPE_BF16, rows, n)) {
		P = malloc(pack16_bytes(DTYPE_BF16, rows, n));
		pack16(DTYPE_BF16, f.W, rows, n, P);
	}
	float *Y = malloc(sizeof(float) * (size_t)(rows * ntok));
	uint64_t best[2] = { UINT64_MAX, UINT64_MAX };
	for (int k = 0; k < reps; k++)
		for (int lanes = 0; lanes < 2; lanes++) {
			uint64_t ns = bench_once(&f, P, lanes, Y);
			best[lanes] = ns < best[lanes] ? ns : best[lanes];
		}
	const double bytes = (double)f.rb * (double)rows;
	printf("bench bf16: rows=%lld n=%lld ntok=%lld avx512vnni%s %.2f GB/s amx-lanes %.2f GB/s "
	       "ratio %.2f (weight bytes over thread CPU time, best of %d)\n", (long long)rows,
	       (long long)n, (long long)ntok, P ? "-packed" : "", bytes / (double)best[0],
	       bytes / (double)best[1], (double)best[1] / (double)best[0], reps);
	free(Y);
	free(P);
	bf_fixture_free(&f);
	return 0;
}

#else

static void test_amx_none(void **state)
{
	(void)state;
	print_message("AMX is x86-64's: nothing to test on this architecture\n");
	skip();
}

#endif /* __x86_64__ */

int main(int argc, char **argv)
{
	kernels_init();
#if defined(__x86_64__)
	if (argc > 1 && strcmp(argv[1], "--bench") == 0)
		return bench(argc, argv);
#else
	(void)argc;
	(void)argv;
#endif
	const struct CMUnitTest tests[] = {
#if defined(__x86_64__)
		cmocka_unit_test(test_amx_bf16_instruction),
		cmocka_unit_test(test_gemm_amx_bf16_emu),
		cmocka_unit_test(test_gemm_amx_bf16_hw),
#else
		cmocka_unit_test(test_amx_none),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
