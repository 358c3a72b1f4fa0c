/* kernels: the avx512vnni level, kernels_avx512.c compiled with VNNI
 * (vpdpbusd in place of its vpmaddubsw/vpmaddwd emulation; avx512_lanes.h). */
#define EGANG_AVX512_VNNI 1
#include "kernels/kernels_avx512.c"
