/* gemm: gemm_amx.c compiled with the AMX tile instructions emulated in C
 * (amx_tile.h): gemm_tiles_amx_emu and gemm_tiles_kq_amx_emu, the amx
 * kernels for tests on hosts without AMX. In no level's table: never
 * chosen to run a model. */
#define EGANG_AMX_EMU 1
#include "kernels/gemm_amx.c"
