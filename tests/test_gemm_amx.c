/* Tests of the amx level's quantized gemm (gemm_amx.c) and of the tile
 * layer it is written against (amx_tile.h), on any x86-64 host:
 *  - test_amx_emu_instructions: the emulated instructions against values
 *    worked out by hand from the Intel SDM's definitions (signedness of
 *    each operand, the 4-byte groups, accumulation onto C with 32-bit
 *    wraparound, what a store writes), and the faults the hardware raises
 *    (a reserved configuration byte, shapes that do not agree, a tile op
 *    after TILERELEASE) ending the process with a line that names them;
 *  - test_gemm_amx_emu: the kernel with the tile instructions emulated
 *    (gemm_tiles_amx_emu) against the generic twin, bit for bit, for
 *    Q8_0, Q4_0 and Q5_0 weights: 1..40 tokens (full tiles of 16 and
 *    padded tails), 16, 40 and 105 rows (groups of 16 with tails), row
 *    ranges that start and end inside a group, with and without the
 *    packed copy, K from one block to 64 (odd and even block counts);
 *  - test_gemm_kq_amx_emu: the K-quant kernel with emulated tiles
 *    (gemm_tiles_kq_amx_emu) against the generic twin, bit for bit, for
 *    Q4_K, Q5_K and Q6_K weights (raw random blocks) against Q8_K
 *    activations: 1..40 tokens on 105 rows, 1 to 9 super-blocks on 16
 *    and 40 rows, the same row ranges, from the rows, from the rows and
 *    the packed copy, and from the packed copy alone;
 *  - test_gemm_amx_hw: the same with the instructions (gemm_tiles_amx, and
 *    gemm_quant_amx with its crossover; gemm_tiles_kq_amx, and the amx
 *    level's K-quant entries through gemm_rows_packed), where the amx
 *    level runs; SKIP elsewhere (no amx_int8, or Linux refused the tile
 *    state).
 * Both kernels need AVX-512 (the float step); on a host without it the
 * kernel tests say SKIP. Every other test program runs its level tests at
 * amx where the CPU has it (testutil.h TEST_ISA_LEVELS). */
#include "kernels/kernels_impl.h"

#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "base/base.h"

#if defined(__x86_64__)
#define EGANG_AMX_EMU 1
#include "kernels/amx_tile.h"
#endif

#include "testutil.h" /* after kernels.h: ISA levels */

#if defined(__x86_64__)

/* -------------------------------------------------- the emulated tiles */

/* A 2 x 8-byte A (K = 2 dwords), a 2 x 8-byte B (2 dword columns) and a
 * 2 x 2 int32 C in tiles 1, 2, 0; C stored 16 bytes a row. */
static const int8_t emu_a[2][8] = { { 1, 2, 3, 4, -1, -2, -3, -4 },
				    { 127, -128, 0, 1, 5, 6, 7, 8 } };
static const uint8_t emu_b[2][8] = { { 1, 1, 1, 1, 255, 0, 0, 2 },
				     { 10, 20, 30, 40, 1, 2, 3, 4 } };

static void emu_config_small(void)
{
	amx_tilecfg_t cfg = { .palette = 1 };
	for (int t = 0; t < 3; t++) {
		cfg.rows[t] = 2;
		cfg.colsb[t] = 8;
	}
	AMX_LOADCONFIG(&cfg);
}

/* C = c0 + A B by the instruction op (0: TDPBSSD, 1: TDPBSUD, 2:
 * TDPBUSD) -> out (2 x 2). */
static void emu_product(int op, const int32_t c0[2][2], int32_t out[2][2])
{
	emu_config_small();
	uint8_t cbuf[2][16];
	memset(cbuf, 0xAA, sizeof cbuf);
	memcpy(cbuf[0], c0[0], 8);
	memcpy(cbuf[1], c0[1], 8);
	AMX_LOAD(0, cbuf, 16);
	AMX_LOAD(1, emu_a, 8);
	AMX_LOAD(2, emu_b, 8);
	if (op == 0)
		AMX_DPBSSD(0, 1, 2);
	else if (op == 1)
		AMX_DPBSUD(0, 1, 2);
	else
		AMX_DPBUSD(0, 1, 2);
	memset(cbuf, 0xAA, sizeof cbuf);
	AMX_STORE(0, cbuf, 16);
	/* a store writes rows(C) x colsb(C) bytes, nothing past them */
	for (int r = 0; r < 2; r++)
		for (int j = 8; j < 16; j++)
			assert_int_equal(cbuf[r][j], 0xAA);
	memcpy(out[0], cbuf[0], 8);
	memcpy(out[1], cbuf[1], 8);
	AMX_RELEASE();
}

/* The faults, each in a child process that must abort naming it. */
static void emu_fault_reserved(void)
{
	amx_tilecfg_t cfg = { .palette = 1 };
	cfg.rows[0] = 1;
	cfg.colsb[0] = 4;
	cfg.reserved1[3] = 1;
	AMX_LOADCONFIG(&cfg);
}

static void emu_fault_k(void) /* colsb(A) / 4 != rows(B) */
{
	amx_tilecfg_t cfg = { .palette = 1 };
	cfg.rows[0] = cfg.rows[1] = 2;
	cfg.colsb[0] = cfg.colsb[1] = cfg.colsb[2] = 8;
	cfg.rows[2] = 3;
	AMX_LOADCONFIG(&cfg);
	AMX_DPBSUD(0, 1, 2);
}

static void emu_fault_m(void) /* rows(A) != rows(C) */
{
	amx_tilecfg_t cfg = { .palette = 1 };
	cfg.rows[0] = 3;
	cfg.rows[1] = cfg.rows[2] = 2;
	cfg.colsb[0] = cfg.colsb[1] = cfg.colsb[2] = 8;
	AMX_LOADCONFIG(&cfg);
	AMX_DPBSUD(0, 1, 2);
}

static void emu_fault_released(void)
{
	emu_config_small();
	AMX_RELEASE();
	AMX_ZERO(0);
}


static void test_amx_emu_instructions(void **state)
{
	(void)state;
	/* C[m][n] = c0 + sum over k < 2, i < 4 of A[m][4k + i] B[k][4n + i],
	 * worked out by hand; B's 255 is -1 signed, A's -1..-4 are 255..252
	 * and -128 is 128 unsigned; C[1][0] starts at INT32_MAX and wraps */
	static const int32_t c0[2][2] = { { 0, 0 }, { INT32_MAX, 5 } };
	static const int32_t want[3][2][2] = {
		{ { -290, -23 }, { (int32_t)(INT32_MIN + 699), -50 } }, /* ssd */
		{ { -290, 233 }, { (int32_t)(INT32_MIN + 699), 32462 } }, /* sud */
		{ { 25310, 2537 }, { (int32_t)(INT32_MIN + 955), -50 } }, /* usd */
	};
	static const char *const names[3] = { "tdpbssd", "tdpbsud", "tdpbusd" };
	for (int op = 0; op < 3; op++) {
		int32_t out[2][2];
		emu_product(op, c0, out);
		for (int m = 0; m < 2; m++)
			for (int n = 0; n < 2; n++)
				if (out[m][n] != want[op][m][n])
					fail_msg("%s: C[%d][%d] = %d, want %d", names[op], m, n,
						 out[m][n], want[op][m][n]);
	}
	char msg[256];
	test_abort_message(emu_fault_reserved, msg, sizeof msg);
	assert_non_null(strstr(msg, "ldtilecfg: reserved bytes 32-47 not zero"));
	test_abort_message(emu_fault_k, msg, sizeof msg);
	assert_non_null(strstr(msg, "tdpbsud: colsb(a) / 4 != rows(b)"));
	test_abort_message(emu_fault_m, msg, sizeof msg);
	assert_non_null(strstr(msg, "tdpbsud: rows(a) != rows(c)"));
	test_abort_message(emu_fault_released, msg, sizeof msg);
	assert_non_null(strstr(msg, "tilezero: tiles not configured"));
}

/* ---------------------------------------------------------- the kernel */

/* A quantized test matrix (rows, n) of type wt at an odd address, with
 * its packed copy (NULL when rows < 16), and ntok prepared Q8_0
 * activation rows with their gemm aux. */
typedef struct amx_fixture {
	dtype_t wt;
	int64_t rows, n, ntok;
	uint8_t *wbuf, *W, *P, *X;
	size_t rb, xs;
	float *dx;
	int32_t *sx;
} amx_fixture_t;

static void amx_fixture_make(amx_fixture_t *f, dtype_t wt, int64_t rows, int64_t n,
			     int64_t ntok, uint64_t seed)
{
	rng_t r;
	rng_seed(&r, seed);
	f->wt = wt;
	f->rows = rows;
	f->n = n;
	f->ntok = ntok;
	f->rb = dtype_row_bytes(wt, n);
	f->wbuf = malloc(f->rb * (size_t)rows + 1);
	f->W = f->wbuf + 1;
	/* raw random bytes: every quant (-128 included) and high bit;
	 * scales random halves of both signs */
	for (size_t j = 0; j < f->rb * (size_t)rows; j++)
		f->W[j] = (uint8_t)rng_next(&r);
	const size_t bb = dtype_info[wt].block_bytes;
	for (size_t b = 0; b < f->rb * (size_t)rows / bb; b++) {
		uint16_t h = f32_to_fp16((rng_float(&r) - 0.5f) * 0.02f);
		memcpy(f->W + b * bb, &h, 2);
	}
	f->P = NULL;
	if (pack16_bytes(wt, rows, n)) {
		f->P = malloc(pack16_bytes(wt, rows, n));
		pack16(wt, f->W, rows, n, f->P);
	}
	f->xs = dtype_row_bytes(DTYPE_Q8_0, n);
	f->X = malloc(f->xs * (size_t)ntok);
	float *x = malloc(sizeof(float) * (size_t)n);
	for (int64_t t = 0; t < ntok; t++) {
		for (int64_t j = 0; j < n; j++)
			x[j] = t == 1 ? (j % 3 ? 4.0f : -4.0f) /* quants of +-127 */
				      : rng_normal(&r);
		act_prepare(wt, x, f->X + (size_t)t * f->xs, n);
	}
	free(x);
	f->dx = malloc(gemm_aux_bytes(n, ntok));
	f->sx = (int32_t *)(f->dx + (n / QK) * ntok);
	gemm_aux_prepare(wt, f->X, f->xs, n, ntok, f->dx); /* the Q8_0 region: first */
}

static void amx_fixture_free(amx_fixture_t *f)
{
	free(f->wbuf);
	free(f->P);
	free(f->X);
	free(f->dx);
}

/* ntok rows of ys = rows + 3 outputs, every one -7 (a sentinel: what a
 * kernel writes outside its rows shows). */
static float *amx_outputs(int64_t rows, int64_t ntok)
{
	const int64_t len = (rows + 3) * ntok;
	float *Y = malloc(sizeof(float) * (size_t)len);
	assert_non_null(Y);
	for (int64_t i = 0; i < len; i++)
		Y[i] = -7.0f;
	return Y;
}

/* Y (amx_outputs, a kernel's over rows [r0, r1) of W times X) equals the
 * generic twin's bit for bit, sentinels included; frees Y. how: the
 * variant, for the message. */
static void amx_expect_generic(const char *name, const char *how, dtype_t wt, const uint8_t *W,
			       const uint8_t *X, size_t xs, int64_t rows, int64_t n, int64_t ntok,
			       int64_t r0, int64_t r1, float *Y)
{
	const int64_t ys = rows + 3;
	float *G = amx_outputs(rows, ntok);
	gemm_rows_generic(wt, W, X, xs, G, ys, n, r0, r1, ntok);
	const int64_t i = first_bits_diff(Y, G, ys * ntok);
	if (i >= 0)
		fail_msg("%s %s rows=%lld n=%lld ntok=%lld [%lld, %lld)%s: Y[%lld][%lld] = %a, "
			 "generic %a", name, dtype_info[wt].name, (long long)rows, (long long)n,
			 (long long)ntok, (long long)r0, (long long)r1, how, (long long)(i / ys),
			 (long long)(i % ys), (double)Y[i], (double)G[i]);
	free(Y);
	free(G);
}

/* kern over rows [r0, r1) of f (from its packed copy when packed) equals
 * the generic twin bit for bit, and writes nothing else of Y. */
static void amx_check(gemm_quant_kernel_t *kern, const char *name, const amx_fixture_t *f,
		      bool packed, int64_t r0, int64_t r1)
{
	float *Y = amx_outputs(f->rows, f->ntok);
	const uint8_t *P = packed ? f->P : NULL;
	kern(f->wt, f->W, f->rb, P, P ? f->rows & ~(int64_t)15 : 0, f->X, f->xs, f->dx, f->sx, Y,
	     f->rows + 3, f->n / QK, r0, r1, f->ntok);
	amx_expect_generic(name, packed ? " packed" : "", f->wt, f->W, f->X, f->xs, f->rows, f->n,
			   f->ntok, r0, r1, Y);
}

/* One matrix and batch: every row range below, with and without the
 * packed copy. */
static void amx_check_ranges(gemm_quant_kernel_t *kern, const char *name, dtype_t wt,
			     int64_t rows, int64_t n, int64_t ntok, uint64_t seed)
{
	amx_fixture_t f;
	amx_fixture_make(&f, wt, rows, n, ntok, seed);
	/* all rows; a range that starts and ends inside groups; one group */
	const int64_t cuts[3][2] = { { 0, rows }, { 3, rows - 2 }, { 16, rows < 32 ? rows : 32 } };
	for (int c = 0; c < 3; c++)
		for (int packed = 0; packed < (f.P ? 2 : 1); packed++)
			amx_check(kern, name, &f, packed, cuts[c][0], cuts[c][1]);
	amx_fixture_free(&f);
}

/* The shapes, for one kernel. */
static void amx_sweep(gemm_quant_kernel_t *kern, const char *name)
{
	static const dtype_t types[] = { DTYPE_Q8_0, DTYPE_Q4_0, DTYPE_Q5_0 };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(types); ti++) {
		dtype_t wt = types[ti];
		/* every batch size of 1..40 tokens: 105 rows, 5 blocks */
		for (int64_t ntok = 1; ntok <= 40; ntok++)
			amx_check_ranges(kern, name, wt, 105, 160, ntok, 100 + (uint64_t)ntok);
		/* K: 1, 2, 3, 18 and 64 blocks; 16 and 40 rows */
		static const int64_t ns[] = { 32, 64, 96, 576, 2048 };
		static const int64_t toks[] = { 1, 16, 17, 33 };
		for (size_t ni = 0; ni < EG_ARRAY_LEN(ns); ni++)
			for (size_t k = 0; k < EG_ARRAY_LEN(toks); k++) {
				amx_check_ranges(kern, name, wt, 40, ns[ni], toks[k], 7 * ni + k);
				amx_check_ranges(kern, name, wt, 16, ns[ni], toks[k], 9 * ni + k);
			}
	}
}

/* ------------------------------------------------ the K-quant kernel */

/* A K-quant test matrix (rows, n) of type wt (Q4_K, Q5_K, Q6_K) at an odd
 * address, with its packed copy (NULL when rows < 16), and ntok Q8_K
 * activation rows, also at an odd address. */
typedef struct amx_kq_fixture {
	dtype_t wt;
	int64_t rows, n, ntok;
	uint8_t *wbuf, *W, *P, *xbuf, *X;
	size_t rb, xs;
} amx_kq_fixture_t;

static void amx_kq_fixture_make(amx_kq_fixture_t *f, dtype_t wt, int64_t rows, int64_t n,
				int64_t ntok, uint64_t seed)
{
	rng_t r;
	rng_seed(&r, seed);
	f->wt = wt;
	f->rows = rows;
	f->n = n;
	f->ntok = ntok;
	f->rb = dtype_row_bytes(wt, n);
	const size_t wbytes = f->rb * (size_t)rows, bb = dtype_info[wt].block_bytes;
	f->wbuf = malloc(wbytes + 1);
	f->W = f->wbuf + 1;
	/* raw random bytes: every quant, high bit, 6-bit scale and min (Q6_K:
	 * every int8 scale, -128 included); d (and dmin) random finite halves
	 * of both signs: Q6_K's d at byte 208, Q4_K / Q5_K's d, dmin at 0, 2 */
	for (size_t j = 0; j < wbytes; j++)
		f->W[j] = (uint8_t)rng_next(&r);
	for (size_t b = 0; b < wbytes / bb; b++) {
		uint8_t *blk = f->W + b * bb;
		for (int k = 0; k < (wt == DTYPE_Q6_K ? 1 : 2); k++) {
			uint16_t h = f32_to_fp16((rng_float(&r) - 0.5f) * 0.02f);
			memcpy(blk + (wt == DTYPE_Q6_K ? 208 : 2 * k), &h, 2);
		}
	}
	f->P = NULL;
	if (pack16_bytes(wt, rows, n)) {
		f->P = malloc(pack16_bytes(wt, rows, n));
		pack16(wt, f->W, rows, n, f->P);
	}
	f->xs = dtype_row_bytes(DTYPE_Q8_K, n);
	f->xbuf = malloc(f->xs * (size_t)ntok + 1);
	f->X = f->xbuf + 1;
	float *x = malloc(sizeof(float) * (size_t)n);
	for (int64_t t = 0; t < ntok; t++) {
		for (int64_t j = 0; j < n; j++)
			x[j] = t == 1 ? (j % 3 ? 4.0f : -4.0f) /* quants of +-127 */
				      : rng_normal(&r);
		act_prepare(wt, x, f->X + (size_t)t * f->xs, n);
	}
	free(x);
}

static void amx_kq_fixture_free(amx_kq_fixture_t *f)
{
	free(f->wbuf);
	free(f->P);
	free(f->xbuf);
}

/* How the kernel gets the weights: the rows only, the rows and the packed
 * copy, or the packed copy only (the amx level's matmat_p16 entries). */
enum { AMX_KQ_ROWS, AMX_KQ_BOTH, AMX_KQ_PACKED, AMX_KQ_MODES };
static const char *const amx_kq_mode_name[AMX_KQ_MODES] = { " rows", " rows+packed",
							    " packed" };

/* kern over rows [r0, r1) of f equals the generic twin bit for bit, and
 * writes nothing else of Y. */
static void amx_kq_check(gemm_kq_kernel_t *kern, const char *name, const amx_kq_fixture_t *f,
			 int mode, int64_t r0, int64_t r1)
{
	float *Y = amx_outputs(f->rows, f->ntok);
	const uint8_t *W = mode == AMX_KQ_PACKED ? NULL : f->W;
	const uint8_t *P = mode == AMX_KQ_ROWS ? NULL : f->P;
	kern(f->wt, W, W ? f->rb : 0, P, P ? f->rows & ~(int64_t)15 : 0, f->X, f->xs, Y,
	     f->rows + 3, f->n, r0, r1, f->ntok);
	amx_expect_generic(name, amx_kq_mode_name[mode], f->wt, f->W, f->X, f->xs, f->rows, f->n,
			   f->ntok, r0, r1, Y);
}

/* One matrix and batch: all rows, a range that starts and ends inside
 * groups, one group, from the rows and with the packed copy; the whole
 * groups from the packed copy alone. */
static void amx_kq_check_ranges(gemm_kq_kernel_t *kern, const char *name, dtype_t wt,
				int64_t rows, int64_t n, int64_t ntok, uint64_t seed)
{
	amx_kq_fixture_t f;
	amx_kq_fixture_make(&f, wt, rows, n, ntok, seed);
	const int64_t cuts[3][2] = { { 0, rows }, { 3, rows - 2 }, { 16, rows < 32 ? rows : 32 } };
	for (int c = 0; c < 3; c++)
		for (int mode = AMX_KQ_ROWS; mode < (f.P ? AMX_KQ_PACKED : AMX_KQ_BOTH); mode++)
			amx_kq_check(kern, name, &f, mode, cuts[c][0], cuts[c][1]);
	const int64_t np = rows & ~(int64_t)15;
	if (f.P) {
		amx_kq_check(kern, name, &f, AMX_KQ_PACKED, 0, np);
		if (np > 16)
			amx_kq_check(kern, name, &f, AMX_KQ_PACKED, 16, np);
	}
	amx_kq_fixture_free(&f);
}

/* The shapes, for one kernel. */
static void amx_kq_sweep(gemm_kq_kernel_t *kern, const char *name)
{
	static const dtype_t types[] = { DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(types); ti++) {
		dtype_t wt = types[ti];
		/* every batch size of 1..40 tokens: 105 rows, one super-block */
		for (int64_t ntok = 1; ntok <= 40; ntok++)
			amx_kq_check_ranges(kern, name, wt, 105, 256, ntok, 300 + (uint64_t)ntok);
		/* K: 2, 3 and 9 super-blocks; 16 and 40 rows */
		static const int64_t ns[] = { 512, 768, 2304 };
		static const int64_t toks[] = { 1, 16, 17, 33 };
		for (size_t ni = 0; ni < EG_ARRAY_LEN(ns); ni++)
			for (size_t k = 0; k < EG_ARRAY_LEN(toks); k++) {
				amx_kq_check_ranges(kern, name, wt, 40, ns[ni], toks[k], 11 * ni + k);
				amx_kq_check_ranges(kern, name, wt, 16, ns[ni], toks[k], 13 * ni + k);
			}
	}
}

/* The amx level's K-quant entries as the forward pass calls them
 * (gemm_rows_packed: the rows outside whole groups by matmat, the groups
 * by matmat_p16, each through the crossover) against the generic, with
 * and without the packed copy. Needs the amx level in use. */
static void amx_kq_level_check(void)
{
	static const dtype_t types[] = { DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K };
	static const int64_t toks[] = { 1, 15, 16, 17, 40 };
	for (size_t ti = 0; ti < EG_ARRAY_LEN(types); ti++)
		for (size_t k = 0; k < EG_ARRAY_LEN(toks); k++) {
			amx_kq_fixture_t f;
			amx_kq_fixture_make(&f, types[ti], 105, 768, toks[k], 500 + k);
			const int64_t ys = f.rows, len = ys * f.ntok;
			float *Y = malloc(sizeof(float) * (size_t)len);
			float *G = malloc(sizeof(float) * (size_t)len);
			gemm_rows_generic(f.wt, f.W, f.X, f.xs, G, ys, f.n, 0, f.rows, f.ntok);
			for (int packed = 0; packed < 2; packed++) {
				gemm_rows_packed(f.wt, f.W, packed ? f.P : NULL, f.rows, f.X, f.xs, NULL,
						 Y, ys, f.n, 3, f.rows, f.ntok);
				for (int64_t t = 0; t < f.ntok; t++) {
					const int64_t o = t * ys + 3;
					const int64_t i = first_bits_diff(Y + o, G + o, f.rows - 3);
					if (i >= 0)
						fail_msg("amx level %s ntok=%lld%s: Y[%lld][%lld] = %a, "
							 "generic %a", dtype_info[f.wt].name,
							 (long long)f.ntok, packed ? " packed" : "",
							 (long long)t, (long long)(3 + i),
							 (double)Y[o + i], (double)G[o + i]);
				}
			}
			free(Y);
			free(G);
			amx_kq_fixture_free(&f);
		}
}

/* Whether this CPU runs the avx512vnni level (the kernels' float step
 * and repacking use its instructions); the level in use is kept. */
static bool cpu_has_vnni(void)
{
	const char *keep = kernels_isa();
	bool ok = kernels_set_isa("avx512vnni") == 0;
	assert_int_equal(kernels_set_isa(keep), 0);
	return ok;
}

static void test_gemm_amx_emu(void **state)
{
	(void)state;
	if (!cpu_has_vnni()) {
		print_message("this CPU lacks avx512vnni, which the emulated kernel's float "
			      "step uses: skipped\n");
		skip();
	}
	amx_sweep(gemm_tiles_amx_emu, "gemm_tiles_amx_emu");
}

static void test_gemm_kq_amx_emu(void **state)
{
	(void)state;
	if (!cpu_has_vnni()) {
		print_message("this CPU lacks avx512vnni, which the emulated kernel's float "
			      "step uses: skipped\n");
		skip();
	}
	amx_kq_sweep(gemm_tiles_kq_amx_emu, "gemm_tiles_kq_amx_emu");
}

static void test_gemm_amx_hw(void **state)
{
	(void)state;
	const char *keep = kernels_isa();
	if (kernels_set_isa("amx") != 0) {
		print_message("%s: the AMX instructions did not run\n", err_get());
		skip();
	}
	amx_sweep(gemm_tiles_amx, "gemm_tiles_amx");
	amx_sweep(gemm_quant_amx, "gemm_quant_amx");
	amx_kq_sweep(gemm_tiles_kq_amx, "gemm_tiles_kq_amx");
	amx_kq_level_check();
	assert_int_equal(kernels_set_isa(keep), 0);
}

#else

static void test_amx_none(void **state)
{
	(void)state;
	print_message("AMX is x86-64's: nothing to test on this architecture\n");
	skip();
}

#endif /* __x86_64__ */

int main(void)
{
	kernels_init();
	const struct CMUnitTest tests[] = {
#if defined(__x86_64__)
		cmocka_unit_test(test_amx_emu_instructions),
		cmocka_unit_test(test_gemm_amx_emu),
		cmocka_unit_test(test_gemm_kq_amx_emu),
		cmocka_unit_test(test_gemm_amx_hw),
#else
		cmocka_unit_test(test_amx_none),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
