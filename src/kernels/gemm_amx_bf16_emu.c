/* gemm: gemm_amx_bf16.c compiled with the AMX tile instructions emulated
 * in C (amx_tile.h): dot_bf16_amx_emu, matvec_bf16_amx_emu,
 * matmat_bf16_amx_emu and gemm_tiles_bf16_amx_emu, the amx level's BF16
 * kernels for tests on hosts without AMX. In no level's table: they are
 * never chosen to run a model. */
#define EGANG_AMX_EMU 1
#include "kernels/gemm_amx_bf16.c"
