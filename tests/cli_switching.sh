#!/usr/bin/env bash
# egang bench switching: bad flags (one-line error, exit 2), then a tiny run
# (the repository's stories260K, 1 s phases, 1 repetition, the throughput
# and oracle arms) checked for its structure: one summary line per arm, the
# CSV rows, the request and timeline files, the PNG (its --out folder named
# with a quote and $(...), which must stay a name), its control words
# removed; --no-plot; and without gnuplot, a one-line error. No timing
# assertions.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# ---- flags ----
"$EGANG" bench switching --help >"$TMP/help" 2>&1
if [[ $? -eq 0 ]] && grep -q "usage: egang bench switching" "$TMP/help" &&
   tr '\n' ' ' <"$TMP/help" | grep -q 'without gnuplot the run exits 1 .*--no-plot'; then
	pass "bench switching --help"; else fail "bench switching --help"; fi
M=$REPO_MODELS/stories260K.bin
TOK=(-z "$REPO_MODELS/tok512.bin")
expect_exit "switching: missing -m" 2 "bench switching: -m/--model is required" "$EGANG" bench switching
expect_exit "switching: unreadable model" 2 "-m /nonexistent-model" \
	"$EGANG" bench switching -m /nonexistent-model
if have_repo_models "bench switching"; then
expect_exit "switching: two rates" 2 "--rates: '1,2' is not three numbers" \
	"$EGANG" bench switching -m "$M" "${TOK[@]}" --rates 1,2
expect_exit "switching: bad phase seconds" 2 "--phase-seconds: '1,x,1' is not three numbers" \
	"$EGANG" bench switching -m "$M" "${TOK[@]}" --phase-seconds 1,x,1
expect_exit "switching: unknown arm" 2 "--arms: 'fast' is not latency, throughput" \
	"$EGANG" bench switching -m "$M" "${TOK[@]}" --arms oracle,fast
expect_exit "switching: --reps 0" 2 "--reps: 0 is out of range" \
	"$EGANG" bench switching -m "$M" "${TOK[@]}" --reps 0
expect_exit "switching: unknown option" 2 "unknown option" \
	"$EGANG" bench switching -m "$M" "${TOK[@]}" --bogus
expect_exit "switching: stray operand" 2 "extra" \
	"$EGANG" bench switching -m "$M" "${TOK[@]}" extra
expect_exit "switching: bad --cores" 2 "cores" \
	"$EGANG" bench switching -m "$M" "${TOK[@]}" --cores 999
fi

# ---- a tiny run ----
if have_repo_models "bench switching: tiny run"; then
	OUT="$TMP/sw it's \$(touch egang-switching-canary)"
	RUN=("$EGANG" bench switching -m "$M" "${TOK[@]}" --reps 1 --phase-seconds 1,1,1
	     --rates 5,20,5 --max-tokens 8 --burns-per-core 1 --drain-seconds 10 -q)
	"${RUN[@]}" --arms throughput,oracle,bandit --out "$OUT" >"$TMP/run.out" 2>"$TMP/run.err" &
	pid=$!
	wait $pid
	rc=$?
	if [[ $rc -eq 0 ]]; then pass "bench switching: tiny run exits 0"
	else fail "bench switching: tiny run exits 0" "exit $rc: $(tail -3 "$TMP/run.err")"; fi
	n=$(grep -c '^bench switching: arm ' "$TMP/run.out")
	if [[ $n -eq 3 ]] && grep -Eq '^bench switching: arm throughput reps 1 steady1 ttft_p50 [0-9.]+\+-[0-9.]+ ms p99 .* burst .* steady2 .* served [0-9]+/[0-9]+ antagonist .* guard_fallbacks [0-9]+' "$TMP/run.out" &&
	   grep -Eq '^bench switching: arm oracle .*\[last control: decisions=[0-9]+, switches=[0-9]+.*mode=oracle\]' "$TMP/run.out"
	then pass "bench switching: one summary line per arm"
	else fail "bench switching: one summary line per arm" "$(head -c 600 "$TMP/run.out")"; fi
	# the bandit's periods against the oracle's schedule: some, each counted
	if grep -Eq '^bench switching: arm bandit .* oracle_agree ([0-9]+)/([1-9][0-9]*) periods \([0-9.]+%\)' "$TMP/run.out" &&
	   ! grep -Eq '^bench switching: arm (oracle|throughput) .*oracle_agree' "$TMP/run.out"
	then pass "bench switching: the bandit's periods counted against the oracle's schedule"
	else fail "bench switching: oracle_agree" "$(grep 'arm bandit' "$TMP/run.out" | head -c 600)"; fi
	# 1 header + 3 arms x 1 repetition x 3 phases, 15 columns each
	if [[ -r $OUT/switching.csv ]] && [[ $(wc -l <"$OUT/switching.csv") -eq 10 ]] &&
	   head -1 "$OUT/switching.csv" | grep -q '^arm,rep,phase,rate_per_s' &&
	   [[ $(awk -F, 'NR > 1 && NF == 15' "$OUT/switching.csv" | wc -l) -eq 9 ]] &&
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
	# the figure, drawn without a shell: the folder's name ran nothing
	if [[ -s $OUT/switching.png ]] && [[ $(head -c 4 "$OUT/switching.png" | tail -c 3) == PNG ]] &&
	   [[ ! -e egang-switching-canary && ! -e $OUT/egang-switching-canary ]]
	then pass "bench switching: switching.png written, the --out name ran nothing"
	else fail "bench switching: switching.png written, the --out name ran nothing"; fi
	# its control words (/dev/shm/egang-switching-PID-RUN) are removed
	left=$(ls /dev/shm | grep -c "^egang-switching-$pid-")
	if [[ $left -eq 0 ]]; then pass "bench switching: control words removed"
	else fail "bench switching: control words removed" "$left left in /dev/shm"; fi
	# --no-plot (a machine without gnuplot: the QEMU guest): the script, no PNG
	"${RUN[@]}" --arms oracle --no-plot --out "$TMP/sw2" >"$TMP/run2.out" 2>"$TMP/run2.err"
	rc=$?
	if [[ $rc -eq 0 ]] && cmp -s "$TMP/sw2/switching.gp" tools/plot/switching.gp &&
	   [[ ! -e $TMP/sw2/switching.png ]]
	then pass "bench switching --no-plot: switching.gp (tools/plot's), no PNG, exit 0"
	else fail "bench switching --no-plot" "rc=$rc $(tail -2 "$TMP/run2.err")"; fi
	# no gnuplot on PATH: the summary lines and CSV files, then one error
	# line (exit 1) saying how to draw the figure later
	PATH=/nonexistent "${RUN[@]}" --arms oracle --out "$TMP/sw3" >"$TMP/run3.out" 2>"$TMP/run3.err"
	rc=$?
	if [[ $rc -eq 1 && $(wc -l <"$TMP/run3.err") -eq 1 ]] &&
	   grep -q '^egang: error: bench switching: gnuplot is not installed (not found on PATH): .*switching.png not drawn; .*gnuplot -c ' "$TMP/run3.err" &&
	   grep -q '^bench switching: arm oracle ' "$TMP/run3.out" && [[ -s $TMP/sw3/timeline.csv ]]
	then pass "bench switching without gnuplot: one error line, exit 1, the CSV files"
	else fail "bench switching without gnuplot" "rc=$rc $(cat "$TMP/run3.err")"; fi
fi
