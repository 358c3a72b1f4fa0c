/* membw: memory-streaming kernels (membw.h). Every level xors the
 * buffer's 64-bit words into one: a 64-byte line is 8 words, word j of
 * every line lands in lane j of an accumulator, and the lanes are xored at
 * the end, so the result is the same at every level (the scalar twin is
 * the reference in tests/test_bench.c). */
#include "kernels/membw.h"

#include <string.h>

#include "kernels/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

uint64_t membw_read_generic(const void *p, size_t bytes)
{
	const uint64_t *v = p;
	uint64_t a = 0, b = 0, c = 0, d = 0;
	for (size_t i = 0; i < bytes / 8; i += 4) {
		a ^= v[i];
		b ^= v[i + 1];
		c ^= v[i + 2];
		d ^= v[i + 3];
	}
	return a ^ b ^ c ^ d;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t membw_read_avx2(const void *p, size_t bytes)
{
	const __m256i *v = p;
	__m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
	for (size_t i = 0; i < bytes / 32; i += 4) {
		a = _mm256_xor_si256(a, _mm256_load_si256(v + i));
		b = _mm256_xor_si256(b, _mm256_load_si256(v + i + 1));
		c = _mm256_xor_si256(c, _mm256_load_si256(v + i + 2));
		d = _mm256_xor_si256(d, _mm256_load_si256(v + i + 3));
	}
	a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
	uint64_t lane[4];
	_mm256_storeu_si256((__m256i *)lane, a);
	return lane[0] ^ lane[1] ^ lane[2] ^ lane[3];
}

__attribute__((target("avx512f"))) uint64_t membw_read_avx512(const void *p, size_t bytes)
{
	const __m512i *v = p;
	__m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
	for (size_t i = 0; i < bytes / 64; i += 4) {
		a = _mm512_xor_si512(a, _mm512_load_si512(v + i));
		b = _mm512_xor_si512(b, _mm512_load_si512(v + i + 1));
		c = _mm512_xor_si512(c, _mm512_load_si512(v + i + 2));
		d = _mm512_xor_si512(d, _mm512_load_si512(v + i + 3));
	}
	a = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d));
	uint64_t lane[8];
	_mm512_storeu_si512(lane, a);
	return lane[0] ^ lane[1] ^ lane[2] ^ lane[3] ^ lane[4] ^ lane[5] ^ lane[6] ^
	       lane[7];
}
#endif

membw_read_fn membw_reader(const char **name)
{
	kernels_init();
	const char *isa = kernels_isa();
#if defined(__x86_64__)
	if (!strncmp(isa, "avx512", 6) || !strcmp(isa, "amx")) { /* avx512, avx512vnni, amx */
		*name = "avx512";
		return membw_read_avx512;
	}
	if (!strcmp(isa, "avx2")) {
		*name = "avx2";
		return membw_read_avx2;
	}
#endif
	(void)isa;
	*name = "scalar";
	return membw_read_generic;
}
