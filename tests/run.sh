#!/usr/bin/env bash
# Runs test programs and sums their results into one closing line
# "N passed, N failed, N skipped".
#  - cmocka binaries: their "[  PASSED  ] N test(s)" / "[  FAILED  ] N
#    test(s)" / "[  SKIPPED ] N test(s)" lines are summed;
#  - shell tests print "PASS: name", "FAIL: name" or "SKIP: name" lines.
# A program that exits non-zero without reporting a failure counts as one
# failure (a crash, a timeout).
set -u
pass=0 fail=0 skip=0
per_test_timeout=${TEST_TIMEOUT:-600}
failed_names=()
for t in "$@"; do
	name=$(basename "$t")
	log=$(mktemp)
	start=$(date +%s)
	if [[ $t == *.sh ]]; then
		timeout -k 5 "$per_test_timeout" bash "$t" >"$log" 2>&1
	else
		timeout -k 5 "$per_test_timeout" "$t" >"$log" 2>&1
	fi
	rc=$?
	p=0 f=0 s=0
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
	dur=$(( $(date +%s) - start ))
	printf '%-28s %4d passed %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" "$dur"
	if [[ $f -ne 0 ]]; then
		failed_names+=("$name")
		sed 's/^/    | /' "$log" | grep -v '^    | \[ \(RUN\|       OK\) ' | tail -40
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	rm -f "$log"
done
[[ ${#failed_names[@]} -gt 0 ]] && echo "failing: ${failed_names[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
