#!/usr/bin/env bash
# egang scx and serve --backend: usage errors everywhere, and in a build
# without SCX=1 the one-line refusal (exit 1). The scheduler itself is
# tested in a sched_ext kernel under QEMU: make test-scx (tests/scx/).
source "$(dirname "$0")/lib.sh"

check "scx --help" "$EGANG" scx --help
expect_exit "scx: no action" 2 'missing load, status' "$EGANG" scx
expect_exit "scx: unknown action" 2 "unknown action 'frob'" "$EGANG" scx frob
expect_exit "scx set: no policy" 2 'missing the policy' "$EGANG" scx set
expect_exit "scx exec: no command" 2 'missing the command' "$EGANG" scx exec
expect_exit "scx status: stray operand" 2 "unexpected argument 'x'" "$EGANG" scx status x
expect_exit "scx load: --gang does not apply" 2 'does not apply' "$EGANG" scx load --gang
expect_exit "scx bench: bad --reps" 2 'reps' "$EGANG" scx bench --reps 0
expect_exit "serve: bad --backend" 2 "--backend: 'gpu' is not one of user, scx" \
	"$EGANG" serve -m x --backend gpu
# the CPU notice only where the CPUs are the gang's (load): hwloc's
# synthetic topology puts CPUs 0 and 1 on two NUMA nodes (load names no
# record: it loads nothing even where it could)
if "$EGANG" policy list --cores 0-1 >/dev/null 2>&1; then
	numa() { HWLOC_SYNTHETIC="node:2 core:1 pu:1" "$EGANG" scx "$1" --cores 0-1 "${@:2}" 2>&1 >/dev/null | grep -c 'NUMA'; }
	n=$(numa load --policy none)$(numa status)$(numa progs)$(numa waits)$(numa exec -- /nonexistent/cmd)
	if [[ $n == 10000 ]]; then pass "scx: CPU notice for load only"
	else fail "scx: CPU notice for load only" "load, status, progs, waits, exec: $n"; fi
else skip "scx: CPU notice for load only" "CPUs 0-1 are not both allowed here"; fi
# Whether this egang is an SCX=1 build, decided without asking egang (a
# regression in its refusal must fail, not turn into a skip): the Makefile
# passes EGANG_SCX_BUILD=$(SCX); otherwise SCX=1 binaries live in a
# build/<cc>-<variant>-scx folder.
scx_build=${EGANG_SCX_BUILD:-}
if [[ -z $scx_build ]]; then
	case $(readlink -f "$EGANG") in */build/*-scx/*) scx_build=1 ;; *) scx_build=0 ;; esac
fi
if [[ $scx_build == 1 ]]; then
	skip "scx: refusal without SCX=1" "this egang is an SCX=1 build"
	"$EGANG" scx status >/dev/null 2>"$TMP/e"
	if grep -q 'this build has no sched_ext support' "$TMP/e"; then
		fail "SCX=1 build has sched_ext support" "$(head -c 300 "$TMP/e")"
	else pass "SCX=1 build has sched_ext support"; fi
else
	expect_exit "scx status without SCX=1" 1 '^egang: error: scx: this build has no sched_ext support \(rebuild with `make SCX=1`' \
		"$EGANG" scx status
	expect_exit "scx load without SCX=1" 1 'no sched_ext support' "$EGANG" scx load
	expect_exit "serve --backend scx without SCX=1" 1 'no sched_ext support' \
		"$EGANG" serve -m x --backend scx
fi
