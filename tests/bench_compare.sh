#!/usr/bin/env bash
# tools/llamacpp/compare-llamacpp without the network: its command line,
# the pool shim compiled with gcc and clang against the llama.cpp headers,
# and, when node-llama-cpp is already in the cache, a tiny end-to-end run
# on stories260K (the shim attaches a pool, the engines agree on the greedy
# tokens, the tables and CSV come out). Timings are never asserted. Parts
# that need the npm package say SKIP when the cache does not have it (the
# first `tools/llamacpp/compare-llamacpp --prepare` fetches it); nothing
# here installs.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

CMP=tools/llamacpp/compare-llamacpp
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}

out=$("$CMP" --help 2>&1); rc=$?
if [[ $rc -eq 0 && $out == usage:* && $out == *--busy* && $out == *--reps* ]]; then pass "compare-llamacpp --help"
else fail "compare-llamacpp --help" "exit $rc"; fi
expect_exit "compare-llamacpp unknown flag" 2 "^compare-llamacpp: unknown argument '--bogus'" "$CMP" --bogus
expect_exit "compare-llamacpp --reps 0" 2 "^compare-llamacpp: --reps: '0' is not a positive integer" "$CMP" --reps 0
expect_exit "compare-llamacpp --reps without a value" 2 "^compare-llamacpp: --reps needs a value" "$CMP" --reps
expect_exit "compare-llamacpp bad --threads" 2 "^compare-llamacpp: --threads: '1,x' is not a list" "$CMP" --threads 1,x
expect_exit "compare-llamacpp bad model name" 2 "^compare-llamacpp: --models: 'gpt-q8_0' is neither" "$CMP" --models gpt-q8_0
expect_exit "compare-llamacpp unreadable model" 2 "^compare-llamacpp: --models: cannot read '/nonexistent.gguf'" "$CMP" --models /nonexistent.gguf
expect_exit "compare-llamacpp prompt too long" 2 "^compare-llamacpp: --prompt-tokens: '501' is not in 1..500" "$CMP" --prompt-tokens 501
expect_exit "compare-llamacpp --long too long" 2 "^compare-llamacpp: --long: '16321' is not in 2..16320" "$CMP" --long 16321
expect_exit "compare-llamacpp --long past 16384 positions" 2 "^compare-llamacpp: --long 16300 with --decode-tokens 100: more than 16384 positions" "$CMP" --long 16300 --decode-tokens 100
expect_exit "compare-llamacpp --long with --check" 2 "^compare-llamacpp: --long goes with neither --check nor --busy" "$CMP" --long 64 --check

# The shim, against the headers of the llama.cpp source the package bundles.
hdr=$(ls -d "$CACHE"/llama.cpp-*/ 2>/dev/null | head -1)
if [[ -n $hdr && -r $hdr/include/llama.h ]]; then
	for cc in gcc clang; do
		if ! command -v $cc >/dev/null; then skip "pool shim compiles with $cc" "no $cc"; continue; fi
		check "pool shim compiles with $cc (-Werror)" $cc -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared \
			-I"$hdr/include" -I"$hdr/ggml/include" -o "$TMP/shim-$cc.so" tools/llamacpp/pool-shim.c -ldl -pthread
	done
	if nm -D --defined-only "$TMP/shim-gcc.so" 2>/dev/null | grep -q ' T llama_init_from_model$'; then
		pass "pool shim interposes llama_init_from_model"
	else fail "pool shim interposes llama_init_from_model"; fi
else
	skip "pool shim compiles" "no llama.cpp headers in $CACHE (tools/llamacpp/compare-llamacpp --prepare fetches node-llama-cpp)"
fi

# End to end on stories260K, only from the cache (no install, no network).
nlc=$CACHE/node-llama-cpp/node_modules
if [[ ! -r $nlc/node-llama-cpp/package.json || ! -d $nlc/@node-llama-cpp/linux-x64 || -z $hdr ]]; then
	skip "compare-llamacpp end to end" "node-llama-cpp is not in $CACHE (tools/llamacpp/compare-llamacpp --prepare)"
elif ! have_models "compare-llamacpp end to end"; then
	:
elif ! command -v node >/dev/null; then
	skip "compare-llamacpp end to end" "no node"
else
	shim=$TMP/shim-gcc.so
	env EGANG_NLC_DIR="$CACHE/node-llama-cpp" NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false \
		EGANG_POOL_VERBOSE=1 EGANG_LLAMA_TIMES="$TMP/times" LD_PRELOAD="$shim" \
		node tools/llamacpp/run.mjs bench "$MODELS/stories260K.gguf" 2 4 8 >"$TMP/run.json" 2>"$TMP/run.err"
	if grep -q "attached a 2-thread pool" "$TMP/run.err" && grep -q '"extra_threads":1,' "$TMP/run.json"; then
		pass "pool shim attaches a persistent 2-thread pool"
	else fail "pool shim attaches a persistent 2-thread pool" "$(cat "$TMP/run.err" "$TMP/run.json" | tail -3)"; fi
	if grep -q '"decode_calls":4,' "$TMP/run.json" && grep -q '"prefill_calls":1,' "$TMP/run.json"; then
		pass "shim times llama_decode per phase"
	else fail "shim times llama_decode per phase" "$(cat "$TMP/run.json")"; fi
	env EGANG_NLC_DIR="$CACHE/node-llama-cpp" NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false \
		EGANG_POOL_OFF=1 EGANG_POOL_VERBOSE=1 LD_PRELOAD="$shim" \
		node tools/llamacpp/run.mjs bench "$MODELS/stories260K.gguf" 2 4 8 >"$TMP/run.json" 2>"$TMP/run.err"
	if ! grep -q "attached" "$TMP/run.err" && grep -Eq '"extra_threads":0[,}]' "$TMP/run.json"; then
		pass "EGANG_POOL_OFF leaves llama.cpp as shipped"
	else fail "EGANG_POOL_OFF leaves llama.cpp as shipped" "$(cat "$TMP/run.err" "$TMP/run.json" | tail -3)"; fi
	EGANG_CACHE=$CACHE "$CMP" --models stories260K --threads 1 --reps 1 --decode-tokens 8 --prompt-tokens 16 \
		--out "$TMP/cmp" -q >"$TMP/cmp.out" 2>&1
	rc=$?
	if [[ $rc -eq 0 ]] && grep -q "^greedy tokens on stories260K.gguf, egang vs llama.cpp: same" "$TMP/cmp.out"; then
		pass "egang and llama.cpp: same greedy tokens on stories260K"
	else fail "egang and llama.cpp: same greedy tokens on stories260K" "exit $rc: $(tail -2 "$TMP/cmp.out")"; fi
	if grep -q "^stories260K  *1  " "$TMP/cmp.out" && grep -q "^stories260K,1,0,egang,decode,1," "$TMP/cmp/summary.csv" &&
		grep -q "^stories260K,1,0,pool,prefill,1," "$TMP/cmp/summary.csv"; then
		pass "compare-llamacpp: tables and summary.csv"
	else fail "compare-llamacpp: tables and summary.csv" "$(tail -5 "$TMP/cmp.out")"; fi
	EGANG_CACHE=$CACHE "$CMP" --long 40 --models stories260K --threads 1 --reps 1 --decode-tokens 4 \
		--out "$TMP/long" -q >"$TMP/long.out" 2>&1
	rc=$?
	if [[ $rc -eq 0 ]] && grep -q "^stories260K	1	[0-9.]* / [0-9.]* = .*	[0-9.]* / [0-9.]*$" "$TMP/long.out" &&
		grep -Eq "^stories260K,1,40,4,egang,[0-9.]+,[0-9.]+,[0-9.]+,1$" "$TMP/long/long.csv" &&
		grep -Eq "^stories260K,1,40,4,llama-pool,[0-9.]+,[0-9.]+,[0-9.]+,1$" "$TMP/long/long.csv"; then
		pass "compare-llamacpp --long: both engines, table and long.csv"
	else fail "compare-llamacpp --long: both engines, table and long.csv" "exit $rc: $(tail -3 "$TMP/long.out")"; fi
fi
