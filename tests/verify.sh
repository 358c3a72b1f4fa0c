#!/usr/bin/env bash
# Model-checks the gang protocol (spec/gang.pml) with spin, exhaustively.
# One line per check: "PASS: name (...)" or "FAIL: name (...)"; exits 1 on
# any failure. Without spin (or a C compiler): "SKIP: ..." lines, exit 0;
# with CI=true that is a failure instead.
#   VERIFY_JOBS   parallel pan runs (default 2)
#   VERIFY_KEEP=1 keep the work directory (pan, trails, logs) and print it
# Run from anywhere; pan is built in a temporary directory.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
model=$root/spec/gang.pml
cc=${CC:-gcc}
jobs=${VERIFY_JOBS:-2}
limit=${VERIFY_TIMEOUT:-900}    # seconds per pan run (a hang guard: a few seconds on a quiet machine, minutes under load)

missing=
command -v spin >/dev/null 2>&1 || missing="spin"
command -v "$cc" >/dev/null 2>&1 || missing="$missing $cc"
if [[ -n $missing ]]; then
	if [[ ${CI:-} == true ]]; then
		echo "FAIL: verify (not installed:$missing)"
		exit 1
	fi
	echo "SKIP: verify (not installed:$missing; apt-get install spin)"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/egang-verify.XXXXXX")
if [[ ${VERIFY_KEEP:-0} == 1 ]]; then
	echo "work directory: $work"
else
	trap 'rm -rf "$work"' EXIT
fi

# Each check: name | expect (ok / caught) | spin -D flags | cc flags | pan flags
# "ok" needs "errors: 0" from a complete search; "caught" needs an error.
# The longest runs come first (two run at a time). spec/README.md maps them
# to the invariants of gang.h.
checks=(
	"join-live|ok|-DLTL_JOIN|-DNFAIR=3|-a -f -N join_live"
	"join-bound|ok|-DLTL_JOIN|-DSAFETY|-N join_bound"
	"deadlock|ok||-DSAFETY|"
	"barrier|ok|-DP_BARRIER|-DSAFETY|"
	"member|ok|-DP_MEMBER|-DSAFETY|"
	"mutation leave-store|caught|-DMUT_LEAVE_STORE|-DSAFETY|"
	"mutation leader-nocas|caught|-DMUT_LEADER_NOCAS|-DSAFETY|"
	"mutation ack-first|caught|-DMUT_ACK_FIRST|-DSAFETY|"
	"mutation ignore-mask|caught|-DMUT_IGNORE_MASK -DP_MEMBER|-DSAFETY|-E"
	"mutation ignore-mask-barrier|caught|-DMUT_IGNORE_MASK -DP_BARRIER|-DSAFETY|-E"
	"mutation no-clear|caught|-DMUT_NO_CLEAR -DLTL_JOIN|-DSAFETY|-N join_bound"
	"mutation leader-waits|caught|-DMUT_LEADER_WAITS -DLTL_JOIN|-DNFAIR=3|-a -f -N join_live"
	"mutation spec-literal-leave|caught|-DSPEC_LITERAL -DP_MEMBER|-DSAFETY|-E"
	"mutation steal-split|caught|-DMUT_STEAL_SPLIT -DP_MEMBER|-DSAFETY|"
)
# VERIFY_LONG=1: also every fair run terminates (about 2 min, 0.7 GB alone).
[[ ${VERIFY_LONG:-0} == 1 ]] && checks=("finish-live|ok|-DLTL_FINISH|-DNFAIR=3|-a -f -N finish" "${checks[@]}")

# run_check INDEX: builds and runs pan for checks[INDEX], writes the verdict
# line to $work/INDEX.line.
run_check() {
	local i=$1 name expect sflags cflags pflags d verdict
	IFS='|' read -r name expect sflags cflags pflags <<<"${checks[$i]}"
	d=$work/$i
	mkdir -p "$d"
	cp "$model" "$d/gang.pml"
	local start=$SECONDS
	if ! (cd "$d" && spin -a $sflags gang.pml >spin.log 2>&1 &&
		"$cc" -O2 -w $cflags -o pan pan.c >cc.log 2>&1); then
		echo "FAIL: $name (spin -a or $cc failed, see $d)" >"$work/$i.line"
		return
	fi
	(cd "$d" && timeout "$limit" ./pan -m200000 -w25 $pflags >pan.log 2>&1)
	local rc=$? log=$d/pan.log
	local errors states mem secs what=
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | tail -1)
	states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' "$log" | tail -1)
	mem=$(sed -n 's/^ *\([0-9.]*\).*total actual memory usage.*/\1/p' "$log" | tail -1)
	secs=$((SECONDS - start))
	if grep -q 'pan:1: acceptance cycle' "$log"; then
		what="acceptance cycle, ltl ${pflags##* }"
	elif [[ $pflags == *-N* ]] && grep -q 'pan:1: assertion violated' "$log"; then
		what="ltl ${pflags##* } violated"
	elif grep -q 'pan:1: assertion violated' "$log"; then
		what="assertion violated"
	elif grep -q 'pan:1: invalid end state' "$log"; then
		what="invalid end state"
	fi
	local stats="states ${states:-?}, ${mem:-?} MB, ${secs} s"
	if [[ $rc -eq 124 ]]; then
		verdict="FAIL: $name (timed out after ${limit} s)"
	elif grep -q 'max search depth too small\|out of memory' "$log"; then
		verdict="FAIL: $name (search incomplete: depth or memory)"
	elif [[ $expect == ok ]]; then
		if [[ $errors == 0 ]]; then
			verdict="PASS: $name ($stats)"
		else
			verdict="FAIL: $name (${what:-error}; spin -t -p gang.pml in $d)"
		fi
	else
		if [[ -n $errors && $errors != 0 ]]; then
			verdict="PASS: $name caught (${what:-error}; $stats)"
		else
			verdict="FAIL: $name not caught ($stats)"
		fi
	fi
	echo "$verdict" >"$work/$i.line"
}

running=0
for i in "${!checks[@]}"; do
	run_check "$i" &
	running=$((running + 1))
	if ((running >= jobs)); then
		wait -n
		running=$((running - 1))
	fi
done
wait

fail=0
for i in "${!checks[@]}"; do
	if [[ -f $work/$i.line ]]; then
		cat "$work/$i.line"
		grep -q '^FAIL' "$work/$i.line" && fail=1
	else
		echo "FAIL: check $i (no result)"
		fail=1
	fi
done
exit $fail
