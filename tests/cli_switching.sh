#!/usr/bin/env bash
# egang bench switching: a tiny run (stories260K, 1 s phases, 1 repetition,
# the throughput and oracle arms) checked for its structure: one summary
# line per arm, the CSV rows, the request and timeline files, the PNG; then
# bad flags (one-line error, exit 2). No timing assertions.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# ---- flags ----
"$EGANG" bench switching --help >"$TMP/help" 2>&1
if [[ $? -eq 0 ]] && grep -q "usage: egang bench switching" "$TMP/help"; then
	pass "bench switching --help"; else fail "bench switching --help"; fi
M=$MODELS/stories260K.gguf
[[ -r $M ]] || M=/nonexistent-model
expect_exit "switching: missing -m" 2 "bench switching: -m/--model is required" "$EGANG" bench switching
expect_exit "switching: unreadable model" 2 "-m /nonexistent-model" \
	"$EGANG" bench switching -m /nonexistent-model
if [[ -r $MODELS/stories260K.gguf ]]; then
expect_exit "switching: two rates" 2 "--rates: '1,2' is not three numbers" \
	"$EGANG" bench switching -m "$M" --rates 1,2
expect_exit "switching: bad phase seconds" 2 "--phase-seconds: '1,x,1' is not three numbers" \
	"$EGANG" bench switching -m "$M" --phase-seconds 1,x,1
expect_exit "switching: unknown arm" 2 "--arms: 'fast' is not latency, throughput" \
	"$EGANG" bench switching -m "$M" --arms oracle,fast
expect_exit "switching: --reps 0" 2 "--reps: 0 is out of range" \
	"$EGANG" bench switching -m "$M" --reps 0
expect_exit "switching: unknown option" 2 "unknown option" \
	"$EGANG" bench switching -m "$M" --bogus
expect_exit "switching: stray operand" 2 "extra" \
	"$EGANG" bench switching -m "$M" extra
expect_exit "switching: bad --cores" 2 "cores" \
	"$EGANG" bench switching -m "$M" --cores 999
fi

# ---- a tiny run ----
if have_models "bench switching: tiny run"; then
	OUT=$TMP/sw
	shm_before=$(ls /dev/shm | grep -c '^egang-switching-')
	"$EGANG" bench switching -m "$MODELS/stories260K.gguf" --reps 1 \
		--arms throughput,oracle --phase-seconds 1,1,1 --rates 5,20,5 \
		--max-tokens 8 --burns-per-core 1 --drain-seconds 10 --out "$OUT" -q \
		>"$TMP/run.out" 2>"$TMP/run.err"
	rc=$?
	if [[ $rc -eq 0 ]]; then pass "bench switching: tiny run exits 0"
	else fail "bench switching: tiny run exits 0" "exit $rc: $(tail -3 "$TMP/run.err")"; fi
	n=$(grep -c '^bench switching: arm ' "$TMP/run.out")
	if [[ $n -eq 2 ]] && grep -Eq '^bench switching: arm throughput reps 1 steady1 ttft_p50 [0-9.]+\+-[0-9.]+ ms p99 .* burst .* steady2 .* served [0-9]+/[0-9]+ antagonist .* guard_fallbacks [0-9]+' "$TMP/run.out" &&
	   grep -Eq '^bench switching: arm oracle .*\[last control: decisions=[0-9]+, switches=[0-9]+.*mode=oracle\]' "$TMP/run.out"
	then pass "bench switching: one summary line per arm"
	else fail "bench switching: one summary line per arm" "$(head -c 600 "$TMP/run.out")"; fi
	# 1 header + 2 arms x 1 repetition x 3 phases, 15 columns each
	if [[ -r $OUT/switching.csv ]] && [[ $(wc -l <"$OUT/switching.csv") -eq 7 ]] &&
	   head -1 "$OUT/switching.csv" | grep -q '^arm,rep,phase,rate_per_s' &&
	   [[ $(awk -F, 'NR > 1 && NF == 15' "$OUT/switching.csv" | wc -l) -eq 6 ]] &&
	   [[ $(grep -c '^oracle,1,' "$OUT/switching.csv") -eq 3 ]] &&
	   grep -q '^throughput,1,burst,20,1,' "$OUT/switching.csv"
	then pass "bench switching: switching.csv rows"
	else fail "bench switching: switching.csv rows" "$(head -c 600 "$OUT/switching.csv" 2>&1)"; fi
	# every request sent is in requests.csv; served ones have a TTFT
	sent=$(awk -F, 'NR > 1 {s += $6} END {print s + 0}' "$OUT/switching.csv")
	served=$(awk -F, 'NR > 1 {s += $7} END {print s + 0}' "$OUT/switching.csv")
	rows=$(($(wc -l <"$OUT/requests.csv") - 1))
	with_ttft=$(awk -F, 'NR > 1 && $5 != "nan" && $6 == 200' "$OUT/requests.csv" | wc -l)
	if [[ $sent -gt 0 && $rows -eq $sent && $with_ttft -eq $served ]]; then
		pass "bench switching: requests.csv ($rows requests, $served served)"
	else fail "bench switching: requests.csv" "sent $sent rows $rows served $served with_ttft $with_ttft"; fi
	if grep -q '^oracle,1,ttft,' "$OUT/timeline.csv" && grep -q '^oracle,1,tenant,' "$OUT/timeline.csv"
	then pass "bench switching: timeline.csv has the oracle's TTFT and tenant series"
	else fail "bench switching: timeline.csv" "$(head -c 300 "$OUT/timeline.csv")"; fi
	if [[ -s $OUT/switching.png ]] && [[ $(head -c 4 "$OUT/switching.png" | tail -c 3) == PNG ]]
	then pass "bench switching: switching.png written"
	else fail "bench switching: switching.png written"; fi
	# --no-plot (a machine without gnuplot: the QEMU guest): the script, no PNG
	"$EGANG" bench switching -m "$MODELS/stories260K.gguf" --reps 1 --arms oracle \
		--phase-seconds 1,1,1 --rates 5,20,5 --max-tokens 8 --burns-per-core 1 \
		--drain-seconds 10 --no-plot --out "$TMP/sw2" -q >"$TMP/run2.out" 2>"$TMP/run2.err"
	rc=$?
	if [[ $rc -eq 0 && -s $TMP/sw2/switching.gp && ! -e $TMP/sw2/switching.png ]]
	then pass "bench switching --no-plot: switching.gp, no PNG, exit 0"
	else fail "bench switching --no-plot" "rc=$rc $(tail -2 "$TMP/run2.err")"; fi
	# other engineers' runs may leave theirs: ours must not add any
	shm_after=$(ls /dev/shm | grep -c '^egang-switching-')
	if [[ $shm_after -le $shm_before ]]; then pass "bench switching: control words removed"
	else fail "bench switching: control words removed" "$shm_before before, $shm_after after"; fi
fi
