#!/usr/bin/env bash
# Runs test programs and sums their results into one closing line
# "N passed, N failed, N skipped".
#  - cmocka binaries: their "[  PASSED  ] N test(s)" / "[  FAILED  ] N
#    test(s)" / "[  SKIPPED ] N test(s)" lines are summed;
#  - shell tests print "PASS: name", "FAIL: name" or "SKIP: name" lines.
# A program that exits non-zero without reporting a failure counts as one
# failure (a crash, a timeout).
#
# TEST_JOBS=N runs N programs at once (default 2; 1: one after the other,
# in the order given). Most of the suite's programs wait on processes they
# start (servers, python clients, the model writer), so two at a time on
# two cores finish sooner; every test's results are bit-exactness and
# behaviour, never timings, so they do not depend on what runs beside
# them. The longest programs start first, so that one of them does not
# start last and run alone. A program's line is printed when it ends (the
# order of the lines then varies), a failing one's log after it.
set -u
per_test_timeout=${TEST_TIMEOUT:-600}
jobs=${TEST_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: TEST_JOBS='$jobs' is not a positive integer" >&2; exit 2; }

# the longest programs, longest first (a few minutes on two cores; the
# rest take seconds)
slow=(verify.sh cli_kquant.sh cli_serve_batch.sh cli_corrupt.sh cli_synth.sh cli_arch.sh
	cli_serve.sh cli_switching.sh cli_errors.sh cli_prefill.sh cli_chat_template.sh)
order=()
for s in "${slow[@]}"; do
	for t in "$@"; do [[ $(basename "$t") == "$s" ]] && order+=("$t"); done
done
for t in "$@"; do
	in=0
	for s in "${slow[@]}"; do [[ $(basename "$t") == "$s" ]] && in=1; done
	((in)) || order+=("$t")
done
((jobs == 1)) && order=("$@")

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run_one I PROGRAM: runs it; writes $out/I.res ("name pass fail skip
# seconds") and keeps its log in $out/I.log
run_one() {
	local i=$1 t=$2 name log rc p f s start
	name=$(basename "$t")
	log=$out/$i.log
	start=$(date +%s)
	if [[ $t == *.sh ]]; then
		timeout -k 5 "$per_test_timeout" bash "$t" >"$log" 2>&1
	else
		timeout -k 5 "$per_test_timeout" "$t" >"$log" 2>&1
	fi
	rc=$?
	if [[ $t == *.sh ]]; then
		p=$(grep -c '^PASS: ' "$log")
		f=$(grep -c '^FAIL: ' "$log")
		s=$(grep -c '^SKIP: ' "$log")
	else
		p=$(grep -o '\[  PASSED  \] [0-9]* test' "$log" | tail -1 | tr -dc 0-9)
		f=$(grep -o '\[  FAILED  \] [0-9]* test' "$log" | tail -1 | tr -dc 0-9)
		s=$(grep -o '\[  SKIPPED \] [0-9]* test' "$log" | tail -1 | tr -dc 0-9)
		p=${p:-0} f=${f:-0} s=${s:-0}
	fi
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		f=1
		echo "FAIL: $name exited with status $rc" >>"$log"
	fi
	echo "$name $p $f $s $(($(date +%s) - start))" >"$out/$i.res.tmp"
	mv "$out/$i.res.tmp" "$out/$i.res"
}

pass=0 fail=0 skip=0
failed_names=()
declare -A shown=()
# report: the lines of the programs that have ended and are not shown yet
report() {
	local r i name p f s d
	for r in "$out"/*.res; do
		[[ -e $r ]] || continue
		i=$(basename "$r" .res)
		[[ -n ${shown[$i]:-} ]] && continue
		shown[$i]=1
		read -r name p f s d <"$r"
		printf '%-28s %4d passed %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" "$d"
		if [[ $f -ne 0 ]]; then
			failed_names+=("$name")
			sed 's/^/    | /' "$out/$i.log" | grep -v '^    | \[ \(RUN\|       OK\) ' | tail -40
		fi
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	done
}

running=0
for i in "${!order[@]}"; do
	while ((running >= jobs)); do
		wait -n
		running=$((running - 1))
		report
	done
	run_one "$i" "${order[$i]}" &
	running=$((running + 1))
done
wait
report
[[ ${#failed_names[@]} -gt 0 ]] && echo "failing: ${failed_names[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
