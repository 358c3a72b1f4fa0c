/* kernels: AVX-512 (F, BW, VL, DQ, VNNI, BF16) level (see kernels_impl.h). */
#include "kernels/kernels_impl.h"

#if defined(__x86_64__)
const kernel_ops_t kops_avx512 = { .name = "avx512" };
#endif
