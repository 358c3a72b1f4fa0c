#!/usr/bin/env bash
# doc/kv/bench-attn.sh OUT: one decode token's attention over a whole
# llama3.2-1b KV cache (16 layers, 8 KV heads of 64, 4 query heads each)
# at depths 512, 4096 and 16384, per KV cache type, at the avx512vnni and
# avx2 levels (test_gemm --bench-attn; thread CPU time, best of 5).
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-doc/kv/attn.txt}
T=${TEST_GEMM:-build/gcc-release/tests/test_gemm}
{
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD); command: doc/kv/bench-attn.sh $OUT"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(nproc) vCPUs)"
echo "# flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|f16c|avx512f|avx512_vnni|avx512_bf16|avx512_fp16|amx_int8|amx_bf16' | tr '\n' ' ')"
echo "# load: $(cat /proc/loadavg)"
./egang bench membw --cores 0 --reps 3 -q 2>&1
for isa in avx512vnni avx2; do
	for npos in 512 4096 16384; do
		EGANG_ISA=$isa "$T" --bench-attn $npos 16 8 4 64 5
	done
done
echo "# end $(date -u +%FT%TZ) load: $(cat /proc/loadavg)"
} 2>&1 | tee "$OUT"
