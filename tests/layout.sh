#!/usr/bin/env bash
# The layering rules of doc/ARCHITECTURE.md ("Layers", "The server"),
# checked by tools/codemap.py: no include of a later layer, no shell in
# src/, no file in src/cli/ over 250 lines, the server's stages calling
# only downward with no two files calling each other. Then each rule is
# broken once in a copy of src/, and the check must name it.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
ROOT=$PWD
codemap() { /usr/bin/python3 "$ROOT/tools/codemap.py" check; }

out=$(codemap 2>&1)
for rule in layers no-shell cli-size server-one-way; do
	if grep -qx "ok $rule" <<<"$out"; then pass "layout-$rule"
	else fail "layout-$rule" "$(grep "^$rule: " <<<"$out" | head -3 | tr '\n' ' ')"; fi
done

# mutant RULE FILE TEXT: TEXT appended to FILE in a copy of src/ makes the
# check fail and name RULE
mutant() {
	local rule=$1 file=$2 text=$3 dir=$TMP/mutant-$1
	rm -rf "$dir"; mkdir -p "$dir"; cp -r src bpf "$dir/"
	printf '%s\n' "$text" >>"$dir/$file"
	local got rc
	got=$(cd "$dir" && codemap 2>&1); rc=$?
	if [[ $rc -ne 0 ]] && grep -q "^$rule: " <<<"$got"; then pass "layout-catches-$rule"
	else fail "layout-catches-$rule" "exit $rc: $(tail -3 <<<"$got" | tr '\n' ' ')"; fi
}
mutant layers src/engine/engine.c '#include "server/server.h"'
mutant no-shell src/bench/burn.c 'int burn_mutant(void) { return system("true"); }'
mutant cli-size src/cli/main.c "$(printf '/* line */\n%.0s' $(seq 300))"
# a leaf (metrics) calling the transport
mutant server-one-way src/server/metrics.c 'int http_port(const void *h);
int metrics_mutant(void) { return http_port(0); }'
