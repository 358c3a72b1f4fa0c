/* kernels: AVX2 + FMA + F16C level (see kernels_impl.h). */
#include "kernels/kernels_impl.h"

#if defined(__x86_64__)
const kernel_ops_t kops_avx2 = { .name = "avx2" };
#endif
