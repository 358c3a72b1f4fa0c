#!/usr/bin/env bash
# egang policy list/show/set/status, policy library files, the control word,
# generate --control (invalid indices are inert: the same logits hashes),
# serve --policies/--control/--policy (/metrics, the guard), bench switch.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
CW=$TMP/cw

# ---- the library ----
"$EGANG" policy --help >"$TMP/help" 2>&1
if [[ $? -eq 0 ]] && grep -q "usage: egang policy" "$TMP/help"; then pass "policy --help"; else fail "policy --help"; fi
"$EGANG" policy list --cores 0 >"$TMP/list1"
"$EGANG" policy list >"$TMP/list"
if grep -Eq '^ +0 +elastic .*\(default\)' "$TMP/list" && grep -Eq '^ +1 +knee ' "$TMP/list" &&
   grep -Eq '^ +2 +latency .*preempt +50' "$TMP/list" && grep -Eq '^ +3 +throughput ' "$TMP/list" &&
   ! grep -q static: "$TMP/list1"; then pass "policy list: built-ins with indices"
else fail "policy list: built-ins with indices" "$(cat "$TMP/list")"; fi
"$EGANG" policy show latency >"$TMP/show"
if grep -q '^acquire = preempt' "$TMP/show" && grep -q '^keep_ms = 50' "$TMP/show"; then pass "policy show NAME"
else fail "policy show NAME" "$(cat "$TMP/show")"; fi
"$EGANG" policy show 0 | grep -q '^\[elastic\]' && pass "policy show INDEX" || fail "policy show INDEX"
expect_exit "policy show: no such record" 2 "policy show: '99' names no record" "$EGANG" policy show 99
expect_exit "policy: unknown action" 2 "unknown action 'frob'" "$EGANG" policy frob
expect_exit "policy: missing action" 2 "missing list, show, set or status" "$EGANG" policy
expect_exit "policy: unknown option" 2 "unknown option" "$EGANG" policy list --bogus

# ---- the CPU notice: only for commands that run a gang ----
# hwloc's synthetic topology puts CPUs 0 and 1 on two NUMA nodes: a gang
# over both gets the NUMA notice; policy and control size a library only
if ! "$EGANG" policy list --cores 0-1 >/dev/null 2>&1; then
	skip "CPU notice only where a gang runs" "CPUs 0-1 are not both allowed here"
else
	numa() { HWLOC_SYNTHETIC="node:2 core:1 pu:1" "$@" --cores 0-1 2>&1 >/dev/null | grep -c 'NUMA'; }
	g=$(numa "$EGANG" generate -m "$TMP/none")
	p=$(numa "$EGANG" policy list)$(numa "$EGANG" policy status --control "$TMP/none")
	c=$(numa "$EGANG" control --control "$TMP/none" --oracle x)
	if [[ $g == 1 && $p == 00 && $c == 0 ]]; then pass "CPU notice only where a gang runs"
	else fail "CPU notice only where a gang runs" "generate $g, policy $p, control $c"; fi
fi

cat >"$TMP/good.ini" <<'EOF'
# a user library
[fast]
width = knee
acquire = preempt
keep_ms = 10

[tight]
cores = 0
guard_ttft_p99_ms = 0.001
guard_checks = 1
EOF
"$EGANG" policy list --cores 0 --policies "$TMP/good.ini" >"$TMP/ulist"
if grep -Eq '^ +4 +fast +knee' "$TMP/ulist" && grep -Eq '^ +5 +tight +static .*x1' "$TMP/ulist"; then
	pass "policy list --policies: user records after the built-ins"
else fail "policy list --policies: user records after the built-ins" "$(cat "$TMP/ulist")"; fi

bad_lib() { # NAME TEXT PATTERN
	printf '%b' "$2" >"$TMP/bad.ini"
	expect_exit "library refused: $1" 2 "$3" "$EGANG" policy list --cores 0 --policies "$TMP/bad.ini"
}
bad_lib "unknown key" '[a]\nwidht = all\n' "bad.ini:2: \[a\] widht: unknown key"
bad_lib "out-of-range width" '[a]\nmax_width = 3\n' "bad.ini:2: \[a\] max_width: '3' is out of range \[1, 1\]"
bad_lib "core set outside the slots" '[a]\ncores = 0,4\n' "bad.ini:2: \[a\] cores: slot 4 is outside the gang's slots 0..0"
bad_lib "empty name" '[]\n' "bad.ini:1: \[\] name: the record name is empty"
bad_lib "duplicate name" '[x]\n[x]\n' "bad.ini:2: \[x\] name: duplicate"
bad_lib "built-in name" '[knee]\n' "bad.ini:1: \[knee\] name: duplicate of record 1"
bad_lib "garbage line" '[a]\n%%%% garbage\n' "bad.ini:2: '%%%% garbage' is not \[name\]"
bad_lib "binary garbage" '\x7fELF\x01\x02\n' "bad.ini:1: '.*' is not \[name\]"
printf '[a]\ncores = 1\n' >"$TMP/lead.ini"
if [[ $(nproc) -ge 2 ]]; then
	expect_exit "library refused: missing leader" 2 "lead.ini:2: \[a\] cores: must include the leader" \
		"$EGANG" policy list --cores 0-1 --policies "$TMP/lead.ini"
else skip "library refused: missing leader" "one CPU: no slot 1"; fi
expect_exit "library refused: missing file" 2 "--policies: /nonexistent.ini" \
	"$EGANG" policy list --policies /nonexistent.ini
expect_exit "serve refuses a bad library" 2 "bad.ini:1: '.*' is not \[name\]" \
	"$EGANG" serve -m x --cores 0 --policies "$TMP/bad.ini"

# ---- set and the control word ----
"$EGANG" policy set knee --cores 0 --control "$CW" -q
mode=$(stat -c %a "$CW" 2>/dev/null)
if [[ $mode == 600 ]]; then pass "control word created 0600"; else fail "control word created 0600" "mode $mode"; fi
"$EGANG" policy status --control "$CW" >"$TMP/st"
grep -q '^index=1$' "$TMP/st" && pass "policy set NAME writes the index" || fail "policy set NAME writes the index" "$(cat "$TMP/st")"
expect_exit "policy set: out of range refused" 2 "policy set: '7' names no record .*--force" \
	"$EGANG" policy set 7 --cores 0 --control "$CW"
expect_exit "policy set: not a number refused" 2 "names no record" "$EGANG" policy set bogus --control "$CW"
"$EGANG" policy set --force 7 --cores 0 --control "$CW" -q
"$EGANG" policy status --control "$CW" | grep -q '^index=7$' && pass "policy set --force writes an invalid index" ||
	fail "policy set --force writes an invalid index"
"$EGANG" policy set --force --control "$CW" -q -- -1
"$EGANG" policy status --control "$CW" | grep -q '^index=4294967295$' && pass "policy set --force -- -1" ||
	fail "policy set --force -- -1"
expect_exit "policy set --force: not an integer" 2 "not an integer" "$EGANG" policy set --force 1x --control "$CW"
chmod 660 "$CW"
expect_exit "control word: group-writable refused" 2 "mode 0660 gives group/other access" \
	"$EGANG" policy set 0 --control "$CW"
chmod 600 "$CW"
head -c 100 /dev/urandom >"$TMP/short"; chmod 600 "$TMP/short"
expect_exit "control word: truncated refused" 2 "100 bytes, not 4096: truncated" \
	"$EGANG" policy status --control "$TMP/short"
head -c 4096 /dev/zero | tr '\0' 'x' >"$TMP/junk"; chmod 600 "$TMP/junk"
expect_exit "control word: garbage refused" 2 "bad magic" "$EGANG" policy set 0 --control "$TMP/junk"
ln -s "$CW" "$TMP/link"
expect_exit "control word: symbolic link refused" 2 "symbolic link" "$EGANG" policy set 0 --control "$TMP/link"

# ---- generate --control: an invalid index is inert ----
"$EGANG" synth stories260k --layers 2 --seed 3 -o "$TMP/m.gguf" -q
G=("$EGANG" generate -m "$TMP/m.gguf" -n 300 -p "Once upon a time" -t 0.8 -s 5 --no-echo -q)
expect_exit "generate: --control with --membership refused" 2 "--control and --membership" \
	"${G[@]}" --control "$CW" --membership random:1
expect_exit "generate: --policies needs --control" 2 "--policies needs --control" \
	"${G[@]}" --policies "$TMP/good.ini"
"${G[@]}" --logits-hash "$TMP/h.fixed" >/dev/null
"$EGANG" policy set --force 123456 --control "$CW" -q
"${G[@]}" --control "$CW" --logits-hash "$TMP/h.invalid" >/dev/null
"$EGANG" policy status --control "$CW" >"$TMP/st"
tokens=$(sed -n 's/^tokens=//p' "$TMP/st"); invalid=$(sed -n 's/^invalid_reads=//p' "$TMP/st")
if cmp -s "$TMP/h.fixed" "$TMP/h.invalid" && [[ -n $tokens && $tokens -gt 0 && $invalid == "$tokens" ]] &&
   grep -q '^effective=0$' "$TMP/st"; then
	pass "generate --control: an invalid index runs the default, same hashes, every read counted"
else fail "generate --control: an invalid index runs the default, same hashes, every read counted" \
	"tokens=$tokens invalid=$invalid $(cmp "$TMP/h.fixed" "$TMP/h.invalid" 2>&1)"; fi
# random writes (invalid and valid) while generating
( for i in $(seq 40); do
	"$EGANG" policy set --force --control "$CW" -q -- "$(( (RANDOM % 7) - 2 ))" 2>/dev/null
	"$EGANG" policy set --force --control "$CW" -q "$(( RANDOM * 65536 ))" 2>/dev/null
  done ) &
WPID=$!
ok=1
for k in 1 2 3; do
	"${G[@]}" --control "$CW" --policies "$TMP/good.ini" --logits-hash "$TMP/h.race" >/dev/null || ok=0
	cmp -s "$TMP/h.fixed" "$TMP/h.race" || ok=0
done
wait $WPID
if [[ $ok == 1 ]]; then pass "generate --control: random index writes mid-generation, same hashes"
else fail "generate --control: random index writes mid-generation, same hashes"; fi

# ---- serve: the initial policy, /metrics, the guard ----
if ! command -v curl >/dev/null; then
	skip "serve policy checks" "no curl"
elif start_server policy -m "$TMP/m.gguf" --cores 0 --policies "$TMP/good.ini" \
	--control "$CW" --policy tight -q; then
	curl -s "$URL/metrics" >"$TMP/m0"
	if grep -q '^egang_policy_index 5$' "$TMP/m0" && grep -q '^egang_policy_guard_fallbacks_total 0$' "$TMP/m0"; then
		pass "serve --policy NAME: the initial index is in force"
	else fail "serve --policy NAME: the initial index is in force" "$(grep policy "$TMP/m0" | tr '\n' ' ')"; fi
	curl -s --max-time 30 -o /dev/null -H 'Content-Type: application/json' \
		-d '{"prompt":"Once","max_tokens":8}' "$URL/v1/completions"
	curl -s "$URL/metrics" >"$TMP/m1"
	if grep -q '^egang_policy_guard_fallbacks_total 1$' "$TMP/m1" && grep -q '^egang_policy_index 0$' "$TMP/m1" &&
	   grep -q '^egang_policy_guard_fallback 1$' "$TMP/m1"; then
		pass "serve: a forced guard breach falls back to the default and is counted"
	else fail "serve: a forced guard breach falls back to the default and is counted" "$(grep policy "$TMP/m1" | tr '\n' ' ')"; fi
	"$EGANG" policy set --force 99 --control "$CW" -q
	curl -s --max-time 30 -o /dev/null -H 'Content-Type: application/json' \
		-d '{"prompt":"Once","max_tokens":8}' "$URL/v1/completions"
	curl -s "$URL/metrics" >"$TMP/m2"
	inv=$(sed -n 's/^egang_policy_invalid_index_total //p' "$TMP/m2")
	if [[ -n $inv && $inv -gt 0 ]] && grep -q '^egang_policy_requested_index 99$' "$TMP/m2" &&
	   grep -q '^egang_policy_index 0$' "$TMP/m2" && grep -q '^egang_policy_guard_fallback 0$' "$TMP/m2"; then
		pass "serve: an invalid index is counted in /metrics and runs the default"
	else fail "serve: an invalid index is counted in /metrics and runs the default" "$(grep policy "$TMP/m2" | tr '\n' ' ')"; fi
	stop_server "serve with a control word"
fi

# ---- bench switch ----
"$EGANG" bench switch --switches 20 -q >"$TMP/bs" 2>&1
if grep -Eq '^bench switch: switches 20 .*write_ns p50 [0-9]+ .*in_force_tokens p50 [0-9]+ .*in_force_us p50 [0-9.]+' "$TMP/bs"; then
	pass "bench switch: one summary line"
else fail "bench switch: one summary line" "$(cat "$TMP/bs")"; fi
expect_exit "bench switch: bad --switches" 2 "--switches" "$EGANG" bench switch --switches 0
