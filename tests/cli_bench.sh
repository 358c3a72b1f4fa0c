#!/usr/bin/env bash
# The benchmarks and the tenant run end to end on a tiny model and print
# their summary lines (timings are never asserted here: they live in the
# benchmarks' output); the co-scheduling run must keep every token's logits
# bit-exact with the solo run.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

for b in "bench" "bench protocol" "bench decode" "bench prefill" "bench width" "bench overhead" "bench coschedule" "bench switch-cost" "bench switch" "burn"; do
	"$EGANG" $b --help >$TMP/h 2>&1
	if [[ $? -eq 0 && $(grep -c usage $TMP/h) -ge 1 ]]; then pass "egang $b --help"; else fail "egang $b --help"; fi
done
"$EGANG" bench coschedule --help >$TMP/h 2>&1
if tr '\n' ' ' <$TMP/h | grep -q 'without gnuplot the run exits 1 .*--no-plot'; then pass "bench coschedule --help: exit 1 without gnuplot, --no-plot"
else fail "bench coschedule --help: exit 1 without gnuplot, --no-plot"; fi
"$EGANG" burn --seconds 0.5 --report-ms 100 >$TMP/burn 2>&1
if grep -q "^burn t=" $TMP/burn && grep -q "^burn total: [1-9][0-9]* units" $TMP/burn; then pass "burn reports its rate"
else fail "burn reports its rate" "$(cat $TMP/burn)"; fi
"$EGANG" burn --seconds 0.3 --mode mem --threads 2 -q >$TMP/burn 2>&1
if grep -q "^burn total: .*(mem, 2 threads)" $TMP/burn; then pass "burn --mode mem"; else fail "burn --mode mem" "$(cat $TMP/burn)"; fi
expect_exit "burn bad mode" 2 "--mode: 'gpu' is not one of cpu, mem" "$EGANG" burn --mode gpu
expect_exit "bench unknown" 2 "unknown benchmark 'x'" "$EGANG" bench x
expect_exit "coschedule bad duty" 2 "--duty: 150 is out of range" "$EGANG" bench coschedule -m x --duty 0,150
expect_exit "coschedule missing -m" 2 "bench coschedule: -m/--model is required" "$EGANG" bench coschedule
expect_exit "decode missing -m" 2 "bench decode: -m/--model is required" "$EGANG" bench decode
expect_exit "burn stray operand" 2 "burn: unexpected argument 'x'" "$EGANG" burn x
# switch-cost is the command's name, switch its alias: the same experiment
"$EGANG" bench switch-cost --switches 5 -q >$TMP/sc 2>&1
if grep -Eq '^bench switch: switches [1-5] .*write_ns p50 [0-9]+ ' $TMP/sc; then pass "bench switch-cost: one summary line"
else fail "bench switch-cost: one summary line" "$(cat $TMP/sc)"; fi
expect_exit "switch-cost bad --switches" 2 "--switches: 0 is out of range" "$EGANG" bench switch-cost --switches 0

if [[ $(nproc) -ge 2 ]]; then
	"$EGANG" bench protocol --reps 100 >$TMP/proto 2>&1
	if grep -q "^bench protocol summary:" $TMP/proto; then pass "bench protocol runs"
	else fail "bench protocol runs" "$(tail -3 $TMP/proto)"; fi
else
	skip "bench protocol runs" "needs 2 CPUs"
fi

"$EGANG" synth stories260k --type q8_0 --seed 2 -o $TMP/m.gguf -q
# knee_check FILE: every "bench width" summary line's knee is the one its
# printed rates imply (knee_of_rates, tolerance 0.95: the widest width whose
# core time per token, width / rate, is within 1/0.95 of the cheapest
# width's) and best= is their largest; prints "batch:knee" per line, or the
# line that disagrees. The rates are printed to 0.01 tok/s: a width on the
# 0.95 boundary within that rounding may go either way.
knee_check() {
	awk '/^bench width .* knee=/ {
		knee = -1; best = -1; n = 0; batch = 1
		for (i = 1; i <= NF; i++)
			if ($i ~ /^knee=/) knee = substr($i, 6) + 0
			else if ($i ~ /^best=/) best = substr($i, 6) + 0
			else if ($i ~ /^batch=/) batch = substr($i, 7) + 0
			else if ($i ~ /^1\.\.[0-9]+:$/) { n = substr($i, 4) + 0; at = i + 1 }
		if (knee < 1 || n < 1) { print "unparsed: " $0; exit 1 }
		max = 0; min = 0
		for (w = 1; w <= n; w++) {
			r[w] = $(at + w - 1) + 0
			if (r[w] > max) max = r[w]
			if (r[w] > 0 && (min == 0 || r[w] < min)) min = r[w]
		}
		eps = 2 * 0.005 / min + 1e-9
		lo = knee_at(r, n, 0.95 * (1 + eps)); hi = knee_at(r, n, 0.95 * (1 - eps))
		if (best != max || knee < lo || knee > hi) {
			print "knee " knee " (rates imply " lo ".." hi "), best " best " (max " max "): " $0
			exit 1
		}
		printf "%s%d:%d", sep, batch, knee; sep = ","
	}
	function knee_at(r, n, tol,   w, cheapest, k) {
		cheapest = 0
		for (w = 1; w <= n; w++)
			if (r[w] > 0 && (cheapest == 0 || w / r[w] < cheapest)) cheapest = w / r[w]
		k = 0
		for (w = 1; w <= n; w++)
			if (r[w] > 0 && w / r[w] * tol <= cheapest) k = w
		return k ? k : n
	}' "$1"
}
"$EGANG" bench width -m $TMP/m.gguf --tokens 16 --reps 1 >$TMP/w 2>&1
k=$(knee_check $TMP/w)
if [[ $? -eq 0 && $k =~ ^1:[0-9]+$ ]]; then pass "bench width: the knee its rates imply ($k)"
else fail "bench width: the knee its rates imply" "$k $(cat $TMP/w)"; fi
# the knee per batch size: a summary line per batch and a knees line that a
# knee record of a policy library takes as it is, each knee the one the
# batch's rates imply
"$EGANG" bench width -m $TMP/m.gguf --tokens 8 --reps 1 --batch 1,3,8 >$TMP/wb 2>&1
k=$(knee_check $TMP/wb)
if [[ $? -eq 0 && $k =~ ^1:[0-9]+,3:[0-9]+,8:[0-9]+$ ]] && grep -qx "knees = $k" $TMP/wb; then
	pass "bench width --batch: the knee per batch size its rates imply ($k)"
else fail "bench width --batch: the knee per batch size its rates imply" "$k $(cat $TMP/wb)"; fi
{ printf '[bk]\nwidth = knee\n'; grep "^knees = " $TMP/wb; } >$TMP/bk.ini
"$EGANG" policy show bk --policies $TMP/bk.ini >$TMP/bk.show 2>&1
if grep -q "^$(grep "^knees = " $TMP/wb)$" $TMP/bk.show; then pass "bench width --batch: its knees line loads as a policy record"
else fail "bench width --batch: its knees line loads as a policy record" "$(cat $TMP/bk.show)"; fi
expect_exit "bench width --batch not increasing" 2 "--batch: '4,2' is not a list of increasing batch sizes" "$EGANG" bench width -m $TMP/m.gguf --batch 4,2
expect_exit "bench width --batch empty entry" 2 "--batch: '1,,2' is not a list" "$EGANG" bench width -m $TMP/m.gguf --batch 1,,2
expect_exit "bench width --batch out of range" 2 "--batch: 129 is out of range" "$EGANG" bench width -m $TMP/m.gguf --batch 1,129
expect_exit "bench width --batch not a number" 2 "--batch: 'x'" "$EGANG" bench width -m $TMP/m.gguf --batch x
"$EGANG" bench decode -m $TMP/m.gguf --tokens 16 --reps 2 -q >$TMP/d 2>&1
if grep -q "^bench decode: .* q8_0 cores=[0-9].* tok/s min/median/max [0-9.]*/[0-9.]*/[0-9.]*  GB/s" $TMP/d && [[ $(wc -l <$TMP/d) -eq 1 ]]
then pass "bench decode: one summary line"; else fail "bench decode: one summary line" "$(cat $TMP/d)"; fi
"$EGANG" bench prefill -m $TMP/m.gguf --tokens 40 --reps 2 --cores 0 --json >$TMP/p 2>&1
if /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["bench"]=="prefill" and j["threads"]==1 and j["tokens"]==40 and 0<j["tok_s"]["min"]<=j["tok_s"]["median"]<=j["tok_s"]["max"]' $TMP/p
then pass "bench prefill --json: one object"; else fail "bench prefill --json: one object" "$(cat $TMP/p)"; fi
expect_exit "bench prefill prompt past the context" 2 "--tokens 1000 does not fit the model's context of 512" "$EGANG" bench prefill -m $TMP/m.gguf --tokens 1000
expect_exit "bench width has no --json" 2 "unknown option or missing value in '--json'" "$EGANG" bench width -m $TMP/m.gguf --json
expect_exit "bench decode stray operand" 2 "unexpected argument 'extra'" "$EGANG" bench decode -m $TMP/m.gguf extra
"$EGANG" bench overhead -m $TMP/m.gguf --tokens 16 --reps 1 >$TMP/o 2>&1
if grep -q "^bench overhead .*gang/pool=" $TMP/o; then pass "bench overhead runs"; else fail "bench overhead runs" "$(cat $TMP/o)"; fi
if [[ $(nproc) -ge 2 ]]; then
	"$EGANG" bench coschedule -m $TMP/m.gguf --seconds 0.4 --duty 0,100 --gen-tokens 8 \
		--out $TMP/co >$TMP/co.out 2>&1
	rc=$?
	rows=$(grep -c ',' $TMP/co/coschedule.csv 2>/dev/null)
	if [[ $rc -eq 0 && $rows -ge 11 ]] && grep -q "logits mismatches 0" $TMP/co.out; then
		pass "bench coschedule: every arm, bit-exact logits"
	else fail "bench coschedule: every arm, bit-exact logits" "rc=$rc rows=$rows $(tail -3 $TMP/co.out)"; fi
	if [[ -s $TMP/co/coschedule.png ]] && grep -q "wrote $TMP/co/coschedule.csv and $TMP/co/coschedule.png$" $TMP/co.out
	then pass "bench coschedule draws its PNG"; else fail "bench coschedule draws its PNG" "$(tail -1 $TMP/co.out)"; fi
	# no gnuplot on PATH: the rows and the CSV, then one error line, exit 1
	PATH=/nonexistent "$EGANG" bench coschedule -m $TMP/m.gguf --seconds 0.2 --duty 0 \
		--gen-tokens 4 --out $TMP/co2 >$TMP/co2.out 2>$TMP/co2.err
	rc=$?
	if [[ $rc -eq 1 && $(grep -c '^egang: error' $TMP/co2.err) -eq 1 ]] &&
	   grep -q '^egang: error: bench coschedule: gnuplot is not installed (not found on PATH): .*coschedule.png not drawn; .*gnuplot -c ' $TMP/co2.err &&
	   grep -q "logits mismatches 0; wrote $TMP/co2/coschedule.csv$" $TMP/co2.out && [[ -s $TMP/co2/coschedule.csv ]]
	then pass "bench coschedule without gnuplot: one error line, exit 1, the CSV"
	else fail "bench coschedule without gnuplot" "rc=$rc $(cat $TMP/co2.err)"; fi
else
	skip "bench coschedule" "needs 2 CPUs"
fi

# ---- bench agent (AKTS 4.2 harness) and bench knobs (AKTS 4.1) ----
expect_exit "agent missing -m" 2 "bench agent: -m/--model is required" "$EGANG" bench agent
expect_exit "agent bad --decisions" 2 "--decisions: 0 is out of range" "$EGANG" bench agent -m $TMP/m.gguf --decisions 0
"$EGANG" bench agent -m $TMP/m.gguf --decisions 10 > $TMP/agent.out 2>&1; rc=$?
n=$(grep -c '^bench agent: regime ' $TMP/agent.out)
if [[ $rc -eq 0 && $n -eq 5 ]] && grep -q 'decisions 10 valid [0-9]* .* answers_valid 10 (100.0%) .* chance 14.3%' $TMP/agent.out &&
   [[ $(grep '^bench agent: answers' $TMP/agent.out | grep -o '=[0-9]*' | tr -d = | awk '{s += $1} END {print s}') -eq 10 ]]; then
	pass "bench agent: 10 decisions, 5 regimes, 7 choices, answers add up, all valid (the answer grammar)"
else fail "bench agent: 10 decisions" "rc=$rc $(tail -3 $TMP/agent.out)"; fi
"$EGANG" bench agent -m $TMP/m.gguf --decisions 4 --two-choice > $TMP/agent2.out 2>&1
if grep -q 'variant two-choice decisions 4 .* chance 50.0%' $TMP/agent2.out; then
	pass "bench agent --two-choice: two choices"
else fail "bench agent --two-choice" "$(tail -2 $TMP/agent2.out)"; fi
# the prompt goes through a chat template: the model's (none here: a
# synthetic stories260k has no tokenizer.chat_template), a built-in, none
if grep -q '^bench agent: model .* template none variant full' $TMP/agent.out; then
	pass "bench agent: no chat template in the model: plain prompt"
else fail "bench agent: template none by default" "$(head -1 $TMP/agent.out)"; fi
"$EGANG" bench agent -m $TMP/m.gguf --decisions 2 --chat-template chatml > $TMP/agent3.out 2>&1; rc=$?
if [[ $rc -eq 0 ]] && grep -q '^bench agent: model .* template chatml variant full decisions 2 ' $TMP/agent3.out; then
	pass "bench agent --chat-template chatml"
else fail "bench agent --chat-template chatml" "rc=$rc $(tail -2 $TMP/agent3.out)"; fi
"$EGANG" bench agent -m $TMP/m.gguf --decisions 2 --chat-template none > $TMP/agent4.out 2>&1
if grep -q ' template none ' $TMP/agent4.out; then pass "bench agent --chat-template none"
else fail "bench agent --chat-template none" "$(tail -2 $TMP/agent4.out)"; fi
expect_exit "agent unknown --chat-template" 2 "bench agent: --chat-template 'jinja' is not one of none, chatml" \
	"$EGANG" bench agent -m $TMP/m.gguf --chat-template jinja
"$EGANG" bench knobs --reps 50 > $TMP/knobs.out 2>&1; rc=$?
if [[ $rc -eq 0 && $(grep -c '^knob ' $TMP/knobs.out) -eq 6 ]] &&
   grep -q '^knob index store  *reps=50 median_ns=' $TMP/knobs.out; then
	pass "bench knobs: six knobs, the index store timed"
else fail "bench knobs" "rc=$rc $(cat $TMP/knobs.out)"; fi
