#!/usr/bin/env bash
# egang control: the oracle follows a phase schedule, the bandit (UCB1) and
# the agent (a synthetic model, constrained decoding) write only valid
# indices; one-line errors for bad input; SIGTERM ends with the summary.
# No timing assertions: phases are checked by the index the controller
# reports and the control word holds.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
LPID=
cleanup() {
	[[ -n $LPID ]] && kill -9 "$LPID" 2>/dev/null
	lib_cleanup
}
trap cleanup EXIT
CW=$TMP/cw

# ---- flags ----
"$EGANG" control --help >"$TMP/help" 2>&1
if [[ $? -eq 0 ]] && grep -q "usage: egang control" "$TMP/help"; then pass "control --help"; else fail "control --help"; fi
expect_exit "control: missing --control" 2 "--control is required" "$EGANG" control --bandit
expect_exit "control: no controller" 2 "missing --oracle SCHEDULE, --bandit or --agent" \
	"$EGANG" control --control "$CW"
expect_exit "control: --oracle and --bandit" 2 "only one of --oracle, --bandit, --agent" \
	"$EGANG" control --control "$CW" --oracle "0-1s:latency" --bandit
expect_exit "control: --agent without -m" 2 "missing -m MODEL" "$EGANG" control --control "$CW" --agent
expect_exit "control: --chat-template without --agent" 2 "-m/-z/--chat-template are only for --agent" \
	"$EGANG" control --control "$CW" --bandit --chat-template chatml
expect_exit "control: bad --period-ms" 2 "--period-ms: 0 is out of range" \
	"$EGANG" control --control "$CW" --bandit --period-ms 0
expect_exit "control: unknown option" 2 "unknown option" "$EGANG" control --control "$CW" --bogus
expect_exit "oracle: unknown policy name" 2 "at character 14 \(phase 2\): 'bogus' names no record" \
	"$EGANG" control --control "$CW" --oracle "0-1s:latency,1-2s:bogus"
expect_exit "oracle: malformed end" 2 "at character 16 \(phase 2\): expected the end in seconds" \
	"$EGANG" control --control "$CW" --oracle "0-1s:latency,1-xs:knee"
expect_exit "oracle: missing ':'" 2 "at character 5 \(phase 1\): expected ':'" \
	"$EGANG" control --control "$CW" --oracle "0-1s"
expect_exit "oracle: missing policy" 2 "at character 6 \(phase 1\): missing the policy" \
	"$EGANG" control --control "$CW" --oracle "0-1s:"
expect_exit "oracle: phase ends before it starts" 2 "at character 1 \(phase 1\): the phase ends" \
	"$EGANG" control --control "$CW" --oracle "2-1s:knee"
expect_exit "oracle: overlapping phases" 2 "at character 11 \(phase 2\): the phase starts at 1s, before" \
	"$EGANG" control --control "$CW" --oracle "0-2s:knee,1-3s:latency"
expect_exit "oracle: empty schedule" 2 "the schedule is empty" "$EGANG" control --control "$CW" --oracle ""
printf '# phases\n0 1 latency\n1 2 3\n2 x knee\n' >"$TMP/bad.sched"
expect_exit "oracle file: malformed line named" 2 "bad.sched:4: 'x' is not an end in seconds" \
	"$EGANG" control --control "$CW" --oracle "$TMP/bad.sched"
printf '0 1 latency extra\n' >"$TMP/bad2.sched"
expect_exit "oracle file: extra field" 2 "bad2.sched:1: expected START_S END_S POLICY" \
	"$EGANG" control --control "$CW" --oracle "$TMP/bad2.sched"
printf '0 1 nosuch\n' >"$TMP/bad3.sched"
expect_exit "oracle file: unknown policy" 2 "bad3.sched:1: 'nosuch' names no record" \
	"$EGANG" control --control "$CW" --oracle "$TMP/bad3.sched"

# ---- oracle: three ~1 s phases against a control file ----
"$EGANG" control --control "$CW" --cores 0 --oracle "0-1s:latency,1-2s:throughput,2-3s:knee" \
	--period-ms 100 >"$TMP/oracle.out" 2>"$TMP/oracle.err" &
OPID=$!
# sample the control word until the controller exits (no sleeps to line
# up with its phases: a loaded machine may start it late)
: >"$TMP/seen"
while kill -0 $OPID 2>/dev/null; do
	"$EGANG" policy status --control "$CW" | sed -n 's/^index=//p' >>"$TMP/seen"
	sleep 0.05
done
wait $OPID; orc=$?
# the sequence of indices the controller wrote, runs collapsed
seq_written=$(sed -n 's/^control t=[0-9.]* index=\([0-9]*\) reason=phase.*/\1/p' "$TMP/oracle.out" | uniq | tr '\n' ' ')
if [[ $orc -eq 0 && $seq_written == "2 3 1 " ]]; then pass "oracle: follows the 3-phase schedule (2 3 1)"
else fail "oracle: follows the 3-phase schedule (2 3 1)" "rc=$orc written: $seq_written"; fi
# what the control word held, runs collapsed: each phase's index in turn
# (after whatever the word held before the controller's first write)
seen=$(uniq "$TMP/seen" | tr '\n' ' ')
if [[ " $seen" =~ \ 2\ 3\ 1\ $ ]]; then
	pass "oracle: the control word holds each phase's index in turn"
else fail "oracle: the control word holds each phase's index in turn" "$seen"; fi
if grep -Eq '^control summary: decisions=[0-9]+, switches=2, invalid_raw=0, decision_ms p50=[0-9.]+ p99=[0-9.]+' "$TMP/oracle.out"; then
	pass "oracle: summary line, 2 switches"
else fail "oracle: summary line, 2 switches" "$(tail -1 "$TMP/oracle.out")"; fi
printf '0 0.3 latency\n0.3 0.6 3 # by index\n' >"$TMP/good.sched"
"$EGANG" control --control "$CW" --cores 0 --oracle "$TMP/good.sched" --period-ms 50 >"$TMP/of.out" 2>&1
seq_written=$(sed -n 's/^control t=[0-9.]* index=\([0-9]*\) reason=phase.*/\1/p' "$TMP/of.out" | uniq | tr '\n' ' ')
[[ $seq_written == "2 3 " ]] && pass "oracle: schedule file (names and indices)" ||
	fail "oracle: schedule file (names and indices)" "$seq_written"

# ---- bandit against a running server ----
"$EGANG" synth stories260k --type f32 --layers 2 --seed 3 -o "$TMP/m.gguf" -q
if ! command -v curl >/dev/null; then
	skip "bandit against a server" "no curl"
elif start_server bandit -m "$TMP/m.gguf" --cores 0 --control "$CW" -q; then
	( while :; do curl -s --max-time 10 -o /dev/null -H 'Content-Type: application/json' \
		-d '{"prompt":"Once","max_tokens":8}' "$URL/v1/completions"; sleep 0.05; done ) &
	LPID=$!
	"$EGANG" control --control "$CW" --cores 0 --bandit --seconds 4 --period-ms 100 --seed 7 \
		>"$TMP/bandit.out" 2>"$TMP/bandit.err"
	brc=$?
	kill "$LPID" 2>/dev/null; wait "$LPID" 2>/dev/null; LPID=
	n_pol=$("$EGANG" policy status --control "$CW" | sed -n 's/^n_policies=//p')
	bad=$(sed -n 's/^control t=[0-9.]* index=\([0-9-]*\) .*/\1/p' "$TMP/bandit.out" |
		awk -v n="$n_pol" '$1 < 0 || $1 >= n' | wc -l)
	lines=$(grep -c '^control t=' "$TMP/bandit.out")
	if [[ $brc -eq 0 && -n $n_pol && $lines -gt 0 && $bad -eq 0 ]]; then
		pass "bandit: writes only valid indices (of $n_pol) against a serving leader"
	else fail "bandit: writes only valid indices (of $n_pol) against a serving leader" \
		"rc=$brc lines=$lines bad=$bad $(head -c 300 "$TMP/bandit.err")"; fi
	if grep -Eq '^control summary: decisions=[1-9][0-9]*, switches=[0-9]+, invalid_raw=0, decision_ms p50=[0-9.]+ p99=[0-9.]+.*mode=bandit' "$TMP/bandit.out"; then
		pass "bandit: summary line"
	else fail "bandit: summary line" "$(tail -1 "$TMP/bandit.out")"; fi
	if grep -q 'reason=ucb:score=' "$TMP/bandit.out"; then pass "bandit: scores arms from the leader's telemetry"
	else fail "bandit: scores arms from the leader's telemetry" "$(grep -c skip "$TMP/bandit.out") skipped periods"; fi
	stop_server "bandit server"
fi

# ---- bandit: determinism, no generations -> skipped, --tenant-units ----
rm -f "$CW"
echo 0 >"$TMP/units"
"$EGANG" control --control "$CW" --cores 0 --bandit --seconds 0.5 --seed 5 --tenant-units "$TMP/units" \
	--period-ms 50 >"$TMP/b1.out" 2>&1
"$EGANG" control --control "$CW" --cores 0 --bandit --seconds 0.5 --seed 5 --tenant-units "$TMP/units" \
	--period-ms 50 >"$TMP/b2.out" 2>&1
i1=$(sed -n 's/.* index=\([0-9]*\) .*/\1/p' "$TMP/b1.out" | head -3 | tr '\n' ' ')
i2=$(sed -n 's/.* index=\([0-9]*\) .*/\1/p' "$TMP/b2.out" | head -3 | tr '\n' ' ')
if [[ -n $i1 && $i1 == "$i2" ]] && grep -q 'reason=skip:no-new-generation' "$TMP/b1.out" &&
   grep -q 'skipped=[1-9]' "$TMP/b1.out"; then
	pass "bandit: same --seed, same first choice; periods without generations skipped"
else fail "bandit: same --seed, same first choice; periods without generations skipped" "$i1 / $i2"; fi
expect_exit "bandit: unreadable --tenant-units" 2 "--tenant-units /nonexistent" \
	"$EGANG" control --control "$CW" --bandit --tenant-units /nonexistent

# ---- agent: a random-weight model, constrained to valid indices ----
"$EGANG" control --control "$CW" --cores 0 --agent -m "$TMP/m.gguf" --seconds 1 --period-ms 100 \
	>"$TMP/agent.out" 2>"$TMP/agent.err"
arc=$?
n_lib=$("$EGANG" policy list --cores 0 | grep -Ec '^ +[0-9]+ ')
bad=$(sed -n 's/^control t=[0-9.]* index=\([0-9-]*\) .*/\1/p' "$TMP/agent.out" | awk -v n="$n_lib" '$1 < 0 || $1 >= n' | wc -l)
lines=$(grep -c '^control t=.*reason=agent:raw=' "$TMP/agent.out")
if [[ $arc -eq 0 && $lines -gt 0 && $bad -eq 0 ]]; then pass "agent: writes only valid indices (of $n_lib)"
else fail "agent: writes only valid indices (of $n_lib)" "rc=$arc lines=$lines bad=$bad $(head -c 300 "$TMP/agent.err")"; fi
if grep -Eq '^control summary: decisions=[1-9][0-9]*, switches=[0-9]+, invalid_raw=[0-9]+, decision_ms p50=[0-9.]+ p99=[0-9.]+.*mode=agent' "$TMP/agent.out"; then
	pass "agent: summary reports invalid_raw and decision latency"
else fail "agent: summary reports invalid_raw and decision latency" "$(tail -1 "$TMP/agent.out")"; fi
expect_exit "agent: missing model file" 2 "control --agent: " \
	"$EGANG" control --control "$CW" --agent -m /nonexistent.gguf

# ---- signals ----
"$EGANG" control --control "$CW" --cores 0 --bandit -q >"$TMP/sig.out" 2>&1 &
CPID=$!
sleep 0.5
kill -INT "$CPID"; wait "$CPID"; src=$?
if [[ $src -eq 0 ]] && grep -q '^control summary: ' "$TMP/sig.out" && ! grep -q '^control t=' "$TMP/sig.out"; then
	pass "control: SIGINT ends cleanly with the summary (-q: no period lines)"
else fail "control: SIGINT ends cleanly with the summary (-q: no period lines)" "rc=$src $(cat "$TMP/sig.out")"; fi
