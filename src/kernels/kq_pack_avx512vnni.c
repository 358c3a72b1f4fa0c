/* kq_pack: the avx512vnni level, kq_pack_avx512.c compiled with VNNI
 * (vpdpbusd in place of vpmaddubsw + vpmaddwd; avx512_lanes.h). */
#define EGANG_AVX512_VNNI 1
#include "kernels/kq_pack_avx512.c"
