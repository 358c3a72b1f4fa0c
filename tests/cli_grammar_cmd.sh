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

# match: a whole text, a beginning, a text that fails at a byte
printf '{"a": [1, "x"], "b": {"c": null}}' >"$TMP/t1"
printf '{"a": [1, "x' >"$TMP/t2"
printf '{"a" 1}' >"$TMP/t3"
echo '{"type":"object"}' | "$EGANG" grammar from-schema - >"$TMP/o.gbnf"
out=$("$EGANG" grammar match "$TMP/o.gbnf" "$TMP/t1"); rc=$?
[[ $rc == 0 && $out == complete ]] && pass "match: a complete object" || fail "match complete" "$rc $out"
out=$("$EGANG" grammar match "$TMP/o.gbnf" "$TMP/t2"); rc=$?
[[ $rc == 1 && $out == "prefix: 12 bytes" ]] && pass "match: the beginning of one" || fail "match prefix" "$rc $out"
out=$("$EGANG" grammar match "$TMP/o.gbnf" "$TMP/t3"); rc=$?
[[ $rc == 1 && $out == "no: at byte 5" ]] && pass "match: where it fails" || fail "match no" "$rc $out"
expect_exit "match without a text file" 2 'match needs' "$EGANG" grammar match "$TMP/o.gbnf"
expect_exit "check with two files" 2 'takes one FILE' "$EGANG" grammar check "$TMP/o.gbnf" "$TMP/t1"

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

# allowed: a model's mask per step along given ids (a synthetic stories260k
# shape: its tokenizer is all that is read)
if "$EGANG" synth stories260k --layers 1 -o "$TMP/s.gguf" -q 2>"$TMP/err"; then
	printf 'root ::= " "? ("yes" | "no") "."\n' >"$TMP/yn.gbnf"
	ids=$("$EGANG" tokenize -m "$TMP/s.gguf" --no-bos "no." | tr ' ' ',')
	"$EGANG" grammar allowed -m "$TMP/s.gguf" "$TMP/yn.gbnf" "$ids" >"$TMP/masks" 2>"$TMP/err"
	first=$(awk 'NR==1{print $2}' "$TMP/masks") last=$(tail -1 "$TMP/masks" | awk '{print $2}')
	nl=$(wc -l <"$TMP/masks") nid=$(tr ',' '\n' <<<"$ids" | wc -l)
	[[ $first -ge 2 && $last == 1 && $nl == $((nid + 1)) ]] && pass "allowed: $nl steps, $first tokens at the start, only the end token after \"no.\"" ||
		fail "allowed" "$first $last $nl $nid $(cat "$TMP/err")"
	printf 'root ::= "a"\n' >"$TMP/a.gbnf"
	expect_exit "allowed: an id the grammar refuses, its step" 2 'step 0' "$EGANG" grammar allowed -m "$TMP/s.gguf" "$TMP/a.gbnf" "$ids"
	expect_exit "allowed without -m" 2 'needs -m MODEL' "$EGANG" grammar allowed "$TMP/yn.gbnf" "$ids"
else
	fail "synth for allowed" "$(cat "$TMP/err")"
fi
