#!/usr/bin/env bash
# egang grammar: `check` parses a GBNF file (ok: N rules, or one line with
# the line and column, exit 2), `from-schema` prints the GBNF of a JSON
# schema (or one line naming the unsupported keyword and its schema path,
# exit 2); every grammar and schema of tools/llamacpp/grammars compiles and
# parses, and a compiled schema parses with `check` (the two agree).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

G=tools/llamacpp/grammars
"$EGANG" grammar --help >"$TMP/h" 2>&1 && grep -q "from-schema" "$TMP/h" && pass "grammar --help" || fail "grammar --help"
for f in "$G"/*.gbnf; do
	out=$("$EGANG" grammar check "$f" 2>&1)
	[[ $out == "ok: "*" rules" ]] && pass "check $(basename "$f"): $out" || fail "check $f" "$out"
done
for f in "$G"/*.json; do
	[[ $f == */cases.json ]] && continue
	if "$EGANG" grammar from-schema "$f" >"$TMP/s.gbnf" 2>"$TMP/err" && out=$("$EGANG" grammar check "$TMP/s.gbnf" 2>&1) &&
		[[ $(head -1 "$TMP/s.gbnf") == "root ::= "* ]]; then
		pass "from-schema $(basename "$f") then check: $out"
	else fail "from-schema $f" "$(cat "$TMP/err") $out"; fi
done
echo '{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}' >"$TMP/a.json"
"$EGANG" grammar from-schema - <"$TMP/a.json" >"$TMP/a.gbnf" 2>&1 && grep -q '"\\"a\\"" ws ":" ws integer' "$TMP/a.gbnf" &&
	pass "from-schema from stdin" || fail "from-schema from stdin" "$(head -3 "$TMP/a.gbnf")"

printf 'root ::= "a" x\n' >"$TMP/undef.gbnf"
expect_exit "check: an undefined rule, its line and column" 2 'undef.gbnf: grammar: line 1, column [0-9]+: .*x' \
	"$EGANG" grammar check "$TMP/undef.gbnf"
printf 'root ::= "a"\nx ::= ("b"\n' >"$TMP/open.gbnf"
expect_exit "check: an unclosed group" 2 'grammar: line [0-9]+, column [0-9]+' "$EGANG" grammar check "$TMP/open.gbnf"
: >"$TMP/empty.gbnf"
expect_exit "check: an empty file" 2 'grammar' "$EGANG" grammar check "$TMP/empty.gbnf"
expect_exit "check: a missing file" 2 'nope.gbnf' "$EGANG" grammar check "$TMP/nope.gbnf"
echo '{"type":"object","properties":{"a":{"type":"array","items":{"type":"number","minimum":0}}}}' >"$TMP/min.json"
expect_exit "from-schema: an unsupported keyword with its path" 2 \
	'json_schema: at #/properties/a/items/minimum: unsupported keyword "minimum"' "$EGANG" grammar from-schema "$TMP/min.json"
echo '{"type":"string","pattern":"^(?=a)b$"}' >"$TMP/la.json"
expect_exit "from-schema: a pattern it cannot translate" 2 'at #/pattern: pattern at offset [0-9]+: lookaround' \
	"$EGANG" grammar from-schema "$TMP/la.json"
echo '{"type": "object",' >"$TMP/trunc.json"
expect_exit "from-schema: malformed JSON, line and column" 2 'trunc.json: line [0-9]+, column [0-9]+' \
	"$EGANG" grammar from-schema "$TMP/trunc.json"
expect_exit "an unknown action" 2 "unknown action 'frob'" "$EGANG" grammar frob x
expect_exit "a missing operand" 2 'ACTION FILE|missing' "$EGANG" grammar check
