/* amx_tile: the AMX tile operations the AMX kernels use (gemm_amx.c), with
 * two backends chosen by EGANG_AMX_EMU before the include:
 *   0  the instructions themselves (Intel AMX-TILE, AMX-INT8 and
 *      AMX-BF16, by the <immintrin.h> intrinsics; functions calling them
 *      need the target features X86_AMX_FEATURES, simd_x86.h);
 *   1  a plain-C emulation of exactly those instructions (the Intel SDM's
 *      pseudocode for LDTILECFG, TILELOADD, TILESTORED, TILEZERO,
 *      TILERELEASE, TDPB[SU][SU]D and TDPBF16PS), test-only
 *      (tests/test_gemm_amx.c, tests/test_gemm_amx_bf16.c): it lets a host
 *      without AMX run the kernel source as it is, only the tile
 *      instructions swapped.
 * x86-64 only; include after kernels_impl.h.
 *
 * The architecture (palette 1). Eight tile registers tmm0..tmm7, each up
 * to 16 rows of up to 64 bytes. LDTILECFG takes a 64-byte configuration:
 *   byte 0       palette (1; 0 = the init state: tiles released)
 *   byte 1       start_row (0: for restarting an interrupted load)
 *   bytes 2-15   0
 *   bytes 16-31  colsb of tiles 0..7, little-endian uint16 (bytes a row)
 *   bytes 32-47  0
 *   bytes 48-55  rows of tiles 0..7
 *   bytes 56-63  0
 * A tile not used has rows = colsb = 0. Anything else is #GP.
 * TILELOADD t, [base + stride]: row r < rows(t) = colsb(t) bytes at
 * base + r * stride, the rest of each row and the rows past rows(t) zero.
 * TILESTORED: rows(t) rows of colsb(t) bytes to base + r * stride.
 * TDPBSUD c, a, b (the other three: the operands' signedness):
 *     for m < rows(c), k < colsb(a) / 4, n < colsb(c) / 4:
 *         c.row[m].dword[n] += sum over i < 4 of
 *             SignExtend(a.row[m].byte[4k + i]) * ZeroExtend(b.row[k].byte[4n + i])
 * with 32-bit wraparound, the four products added to the dword in one
 * step; #UD unless the shapes agree: rows(a) = rows(c), colsb(a) / 4 =
 * rows(b), colsb(b) = colsb(c), all colsb multiples of 4 and c, a, b three
 * different tiles; so a product is (M x K bytes) x (K/4 x N dwords) ->
 * M x N int32, M <= 16, K <= 64, N <= 16.
 * TDPBF16PS c, a, b (AMX-BF16; the SDM's Operation section, which the
 * Intrinsics Guide's shorter text does not match): each dword of a and b
 * a pair of bf16 (low half first), c fp32; per C row m:
 *     e[n] = o[n] = +0                  (the SDM's temp1[2n], temp1[2n+1])
 *     for k < colsb(a) / 4, n < colsb(c) / 4:
 *         e[n] = fma(a.row[m].bf16[2k],     b.row[k].bf16[2n],     e[n])
 *         o[n] = fma(a.row[m].bf16[2k + 1], b.row[k].bf16[2n + 1], o[n])
 *     for n: c.row[m].fp32[n] = c.row[m].fp32[n] + (e[n] + o[n])
 * every operation fp32, rounded to nearest even, "DAZ=FTZ=1": inputs that
 * are denormal (a bf16 is the high half of a float, so its denormals are
 * the float's) read as zero of their sign, and a result that is tiny is
 * flushed to zero of its sign, tiny as x86 defines it (SDM vol. 1, 4.9.1.5:
 * non-zero and below 2^-126 after rounding with an unbounded exponent);
 * MXCSR is neither read nor written. The products of two bf16 (8 x 8
 * significant bits) are exact in fp32 except where they underflow. The #UD
 * shapes are TDPB*D's.
 *
 * The emulation checks what the hardware faults on (a configuration that
 * is #GP, a tile operation before LDTILECFG or on an unconfigured tile, the
 * #UD shapes above) and aborts with a line naming it: a kernel that passes
 * its tests emulated does not fault on the real thing for these reasons.
 * What it cannot show: timing, and faults of the real memory accesses
 * (page permissions are the same: it reads and writes the same bytes).
 *
 * The operations are macros over literal tile numbers: the instructions
 * encode the register in the opcode, so the intrinsics take constants. */
#ifndef EGANG_AMX_TILE_H
#define EGANG_AMX_TILE_H

#if defined(__x86_64__)

#ifndef EGANG_AMX_EMU
#define EGANG_AMX_EMU 0
#endif

/* The configuration LDTILECFG reads (the layout above). */
typedef struct amx_tilecfg {
	uint8_t palette, start_row, reserved0[14];
	uint16_t colsb[8];
	uint8_t reserved1[16];
	uint8_t rows[8];
	uint8_t reserved2[8];
} __attribute__((aligned(64))) amx_tilecfg_t;
_Static_assert(sizeof(amx_tilecfg_t) == 64, "LDTILECFG reads 64 bytes");

#if EGANG_AMX_EMU

#include <stdio.h>
#include <stdlib.h>

/* The emulated tile state of the calling thread (the hardware's is per
 * thread too). */
typedef struct amx_emu_state {
	int configured;
	uint8_t rows[8];
	uint16_t colsb[8];
	uint8_t t[8][16][64];
} amx_emu_state_t;

static __thread amx_emu_state_t amx_emu;

/* What the hardware would fault on: one line, then abort. */
static inline void amx_emu_fault(const char *insn, const char *why)
{
	fprintf(stderr, "amx emulation: %s: %s (a fault on AMX hardware)\n", insn, why);
	abort();
}

/* LDTILECFG: checks the configuration as the hardware does. */
static inline void amx_emu_loadconfig(const amx_tilecfg_t *c)
{
	const uint8_t *b = (const uint8_t *)c;
	if (c->palette == 0) { /* the init state */
		memset(&amx_emu, 0, sizeof amx_emu);
		return;
	}
	if (c->palette != 1)
		amx_emu_fault("ldtilecfg", "palette other than 0 or 1 (#GP)");
	if (c->start_row != 0)
		amx_emu_fault("ldtilecfg", "start_row not 0");
	for (int i = 2; i < 16; i++)
		if (b[i])
			amx_emu_fault("ldtilecfg", "reserved bytes 2-15 not zero (#GP)");
	for (int i = 32; i < 48; i++)
		if (b[i])
			amx_emu_fault("ldtilecfg", "reserved bytes 32-47 not zero (#GP)");
	for (int i = 56; i < 64; i++)
		if (b[i])
			amx_emu_fault("ldtilecfg", "reserved bytes 56-63 not zero (#GP)");
	for (int t = 0; t < 8; t++) {
		uint16_t cb;
		memcpy(&cb, b + 16 + 2 * t, 2);
		if (c->rows[t] > 16 || cb > 64)
			amx_emu_fault("ldtilecfg", "a tile over 16 rows or 64 bytes a row (#GP)");
		if ((c->rows[t] == 0) != (cb == 0))
			amx_emu_fault("ldtilecfg", "a tile with rows but no colsb, or colsb but no rows (#GP)");
		amx_emu.rows[t] = c->rows[t];
		amx_emu.colsb[t] = cb;
	}
	memset(amx_emu.t, 0, sizeof amx_emu.t);
	amx_emu.configured = 1;
}

/* TILERELEASE: back to the init state. */
static inline void amx_emu_release(void) { memset(&amx_emu, 0, sizeof amx_emu); }

static inline void amx_emu_check_tile(const char *insn, int t)
{
	if (!amx_emu.configured)
		amx_emu_fault(insn, "tiles not configured (#UD)");
	if (t < 0 || t > 7 || amx_emu.rows[t] == 0)
		amx_emu_fault(insn, "a tile the configuration leaves unused (#UD)");
}

static inline void amx_emu_zero(int t)
{
	amx_emu_check_tile("tilezero", t);
	memset(amx_emu.t[t], 0, sizeof amx_emu.t[t]);
}

static inline void amx_emu_load(int t, const void *base, size_t stride)
{
	amx_emu_check_tile("tileloadd", t);
	memset(amx_emu.t[t], 0, sizeof amx_emu.t[t]);
	for (int r = 0; r < amx_emu.rows[t]; r++)
		memcpy(amx_emu.t[t][r], (const uint8_t *)base + (size_t)r * stride,
		       amx_emu.colsb[t]);
}

static inline void amx_emu_store(int t, void *base, size_t stride)
{
	amx_emu_check_tile("tilestored", t);
	for (int r = 0; r < amx_emu.rows[t]; r++)
		memcpy((uint8_t *)base + (size_t)r * stride, amx_emu.t[t][r], amx_emu.colsb[t]);
}

/* A byte of a tile as the instruction reads it: sign- or zero-extended. */
static inline int32_t amx_emu_byte(int t, int r, int j, int is_signed)
{
	uint8_t v = amx_emu.t[t][r][j];
	return is_signed ? (int32_t)(int8_t)v : (int32_t)v;
}

/* The #UD checks of a tile product c += a b (TDPB*D, TDPBF16PS). */
static inline void amx_emu_check_dp(const char *insn, int c, int a, int b)
{
	amx_emu_check_tile(insn, c);
	amx_emu_check_tile(insn, a);
	amx_emu_check_tile(insn, b);
	if (c == a || c == b || a == b)
		amx_emu_fault(insn, "the same tile twice (#UD)");
	if (amx_emu.colsb[c] % 4 || amx_emu.colsb[a] % 4 || amx_emu.colsb[b] % 4)
		amx_emu_fault(insn, "colsb not a multiple of 4 (#UD)");
	if (amx_emu.rows[a] != amx_emu.rows[c])
		amx_emu_fault(insn, "rows(a) != rows(c) (#UD)");
	if (amx_emu.colsb[a] / 4 != amx_emu.rows[b])
		amx_emu_fault(insn, "colsb(a) / 4 != rows(b) (#UD)");
	if (amx_emu.colsb[b] != amx_emu.colsb[c])
		amx_emu_fault(insn, "colsb(b) != colsb(c) (#UD)");
}

/* TDPB{a_signed ? S : U}{b_signed ? S : U}D c, a, b. The dword adds wrap
 * (done in uint32_t: a signed overflow would be undefined in C). */
static inline void amx_emu_dp(const char *insn, int c, int a, int b, int a_signed,
			      int b_signed)
{
	amx_emu_check_dp(insn, c, a, b);
	for (int m = 0; m < amx_emu.rows[c]; m++) {
		uint32_t row[16];
		memcpy(row, amx_emu.t[c][m], 64);
		for (int k = 0; k < amx_emu.colsb[a] / 4; k++)
			for (int n = 0; n < amx_emu.colsb[c] / 4; n++) {
				uint32_t s = 0;
				for (int i = 0; i < 4; i++)
					s += (uint32_t)(amx_emu_byte(a, m, 4 * k + i, a_signed) *
							amx_emu_byte(b, k, 4 * n + i, b_signed));
				row[n] += s;
			}
		/* write_row_and_zero: the bytes past colsb(c) become 0 */
		memset(amx_emu.t[c][m], 0, 64);
		memcpy(amx_emu.t[c][m], row, amx_emu.colsb[c]);
	}
}

/* A float with DAZ applied: a denormal reads as zero of its sign. */
static inline float amx_emu_daz(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	if ((u & 0x7F800000u) == 0)
		u &= 0x80000000u;
	memcpy(&x, &u, 4);
	return x;
}

/* bf16 element j of row r of tile t as the fp32 it extends to, DAZ. */
static inline float amx_emu_bf16(int t, int r, int j)
{
	uint16_t h;
	memcpy(&h, &amx_emu.t[t][r][2 * j], 2);
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return amx_emu_daz(f);
}

/* fma(a, b, c) with FTZ, for inputs without denormals (DAZ applied).
 * fmaf rounds once with gradual underflow; x86's FTZ flushes what is
 * below 2^-126 after rounding with an unbounded exponent. The two agree
 * except where fmaf returns a denormal or +-2^-126 (e.g. a b + c =
 * 2^-126 - 1.5 2^-151: fmaf gives 2^-126, the unbounded rounding 2^-126 -
 * 2^-150, tiny, so 0). There the exact sum is non-zero and below 2^-125,
 * which needs |c| and |a b| below 2^-100 (else both are multiples of
 * 2^-123 and cancel to 0 or to at least that), so it is recomputed scaled
 * by 2^64 without overflow, in the normal range, where fmaf's rounding is
 * the unbounded one: at or above 2^-62 there it is +-2^-126 here, below it
 * is flushed. An fmaf result of 0 is the flushed result already (an exact
 * sum that rounds to 0 is below 2^-150), with its sign. */
static inline float amx_emu_fma_ftz(float a, float b, float c)
{
	float r = fmaf(a, b, c);
	if (!(fabsf(r) <= 0x1p-126f) || r == 0.0f) /* normal, inf, NaN, or 0 */
		return r;
	float s = fmaf(a, b * 0x1p64f, c * 0x1p64f);
	return fabsf(s) >= 0x1p-62f ? s * 0x1p-64f : copysignf(0.0f, s);
}

/* a + b with FTZ, for inputs without denormals: a sum of two such floats
 * below 2^-126 is exact (both are multiples of 2^-149), so flushing the
 * IEEE sum's denormal is x86's FTZ. */
static inline float amx_emu_add_ftz(float a, float b)
{
	float r = a + b;
	return fabsf(r) < 0x1p-126f ? copysignf(0.0f, r) : r;
}

/* TDPBF16PS c, a, b: the SDM's sequence (above) per C element. */
static inline void amx_emu_dpbf16ps(int c, int a, int b)
{
	amx_emu_check_dp("tdpbf16ps", c, a, b);
	for (int m = 0; m < amx_emu.rows[c]; m++) {
		float e[16] = { 0 }, o[16] = { 0 }, row[16];
		memcpy(row, amx_emu.t[c][m], 64);
		for (int k = 0; k < amx_emu.colsb[a] / 4; k++)
			for (int n = 0; n < amx_emu.colsb[c] / 4; n++) {
				e[n] = amx_emu_fma_ftz(amx_emu_bf16(a, m, 2 * k),
						       amx_emu_bf16(b, k, 2 * n), e[n]);
				o[n] = amx_emu_fma_ftz(amx_emu_bf16(a, m, 2 * k + 1),
						       amx_emu_bf16(b, k, 2 * n + 1), o[n]);
			}
		for (int n = 0; n < amx_emu.colsb[c] / 4; n++)
			row[n] = amx_emu_add_ftz(amx_emu_daz(row[n]), amx_emu_add_ftz(e[n], o[n]));
		/* write_row_and_zero, as amx_emu_dp */
		memset(amx_emu.t[c][m], 0, 64);
		memcpy(amx_emu.t[c][m], row, amx_emu.colsb[c]);
	}
}

#define AMX_LOADCONFIG(cfg) amx_emu_loadconfig(cfg)
#define AMX_RELEASE() amx_emu_release()
#define AMX_ZERO(t) amx_emu_zero(t)
#define AMX_LOAD(t, base, stride) amx_emu_load(t, base, stride)
#define AMX_STORE(t, base, stride) amx_emu_store(t, base, stride)
#define AMX_DPBSSD(c, a, b) amx_emu_dp("tdpbssd", c, a, b, 1, 1)
#define AMX_DPBSUD(c, a, b) amx_emu_dp("tdpbsud", c, a, b, 1, 0)
#define AMX_DPBUSD(c, a, b) amx_emu_dp("tdpbusd", c, a, b, 0, 1)
#define AMX_DPBF16PS(c, a, b) amx_emu_dpbf16ps(c, a, b)

#else /* the instructions */

#include <immintrin.h>

/* GCC 12's tile intrinsics are asm statements that name only the base
 * address and stride as operands, not the memory they read or write, so
 * the compiler may move ordinary loads and stores of that memory across
 * them: a compiler barrier (no instruction) before every tile load and
 * after every tile store orders them with the C code around. LDTILECFG's
 * intrinsic declares a read of 8 of its 64 bytes: the barrier makes the
 * whole configuration be stored before it. */
#define AMX_BARRIER() __asm__ volatile("" ::: "memory")
#define AMX_LOADCONFIG(cfg)             \
	do {                            \
		AMX_BARRIER();          \
		_tile_loadconfig(cfg);  \
	} while (0)
#define AMX_RELEASE() _tile_release()
#define AMX_ZERO(t) _tile_zero(t)
#define AMX_LOAD(t, base, stride)                      \
	do {                                           \
		AMX_BARRIER();                         \
		_tile_loadd(t, base, (long)(stride));  \
	} while (0)
#define AMX_STORE(t, base, stride)                     \
	do {                                           \
		_tile_stored(t, base, (long)(stride)); \
		AMX_BARRIER();                         \
	} while (0)
#define AMX_DPBSSD(c, a, b) _tile_dpbssd(c, a, b)
#define AMX_DPBSUD(c, a, b) _tile_dpbsud(c, a, b)
#define AMX_DPBUSD(c, a, b) _tile_dpbusd(c, a, b)
#define AMX_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)

#endif /* EGANG_AMX_EMU */

#endif /* __x86_64__ */

#endif
