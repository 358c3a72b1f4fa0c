#!/usr/bin/env bash
# egang generate --grammar on stories260K (models/, offline): the text
# matches the grammar for greedy and sampled runs over several seeds, the
# end comes at EOS only where the grammar is complete, greedy's shortcut
# (the argmax checked first) gives the tokens of the full mask (top-k 1);
# max tokens before completion ends with length; a stuck grammar ends
# with one error line; malformed grammar files are refused with the line
# and column, exit 2.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
have_repo_models "grammar" || exit 0
M=(-m "$REPO_MODELS/stories260K.bin" -z "$REPO_MODELS/tok512.bin")
gen() { "$EGANG" generate "${M[@]}" -p "Once upon a time" --no-echo "$@"; }

cat >"$TMP/story.gbnf" <<'EOF'
# a sentence about one of three names
root ::= " " name " " words "." ("\n")?
name ::= "Lily" | "Tom" | "the " [a-z]+
words ::= [a-z]+ ( ","? " " [a-z]+ ){1,6}
EOF
# the same language as an extended regex
RE='^ (Lily|Tom|the [a-z]+) [a-z]+(,? [a-z]+){1,6}\.$'
ok=0 eos=0
for s in 0 1 2 3 4 5 6 7; do
	if ((s == 0)); then args=(-t 0); else args=(-t 1 -s "$s"); fi
	gen "${args[@]}" -n 80 --grammar "$TMP/story.gbnf" >"$TMP/out.$s" 2>"$TMP/err.$s"
	rc=$?
	text=$(head -1 "$TMP/out.$s")
	if [[ $rc == 0 && $text =~ $RE ]]; then ok=$((ok + 1)); else
		fail "grammar run $s" "rc $rc: '$text' $(head -c 200 "$TMP/err.$s")"; fi
	grep -q "stop: eos" "$TMP/err.$s" && eos=$((eos + 1))
done
[[ $ok == 8 ]] && pass "generate --grammar: 8 runs (greedy, 7 seeds) each match the grammar"
[[ $eos == 8 ]] && pass "generate --grammar: each ends at EOS once complete" ||
	fail "grammar eos" "$eos of 8 ended at EOS"
# free text from the same prompt does not follow it: the mask did the work
free=$(gen -t 0 -n 40 -q | head -1)
[[ ! $free =~ $RE ]] && pass "generate without the grammar: the text does not match it" ||
	fail "free text matched the grammar" "$free"
# greedy checks the argmax first; temperature 1 with top-k 1 masks every
# step: the same tokens
gen -t 0 -n 80 --grammar "$TMP/story.gbnf" --ids "$TMP/greedy.ids" -q >/dev/null
gen -t 1 --top-k 1 -n 80 --grammar "$TMP/story.gbnf" --ids "$TMP/topk1.ids" -q >/dev/null
check "grammar: greedy's shortcut gives the full mask's tokens" cmp "$TMP/greedy.ids" "$TMP/topk1.ids"
# the same logits hashes with and without the grammar up to the first
# token the grammar changes: the mask comes after the logits
printf 'root ::= [a-z ,.]+\n' >"$TMP/loose.gbnf"
gen -t 0 -n 30 --logits-hash "$TMP/free.hash" -q >/dev/null
gen -t 0 -n 30 --grammar "$TMP/loose.gbnf" --logits-hash "$TMP/loose.hash" -q >/dev/null
[[ $(head -1 "$TMP/free.hash" | cut -d' ' -f1,3) == $(head -1 "$TMP/loose.hash" | cut -d' ' -f1,3) ]] &&
	pass "grammar: the first position's logits hash is the same as without it" ||
	fail "logits hash" "$(head -1 "$TMP/free.hash") vs $(head -1 "$TMP/loose.hash")"

# max tokens before the grammar is complete: length, as without one
printf 'root ::= [a-z ]+ "."\n' >"$TMP/long.gbnf"
gen -t 0 -n 5 --grammar "$TMP/long.gbnf" >"$TMP/len.out" 2>"$TMP/len.err"
rc=$?
[[ $rc == 0 ]] && grep -q "stop: length" "$TMP/len.err" &&
	pass "grammar: -n before completion ends with length" || fail "length" "rc $rc $(cat "$TMP/len.err")"

# stuck: no token of the vocabulary gives the byte 0x01 (a control byte
# the engine drops): an error after the text so far, exit 1
printf 'root ::= " Tom" "\\x01"\n' >"$TMP/stuck.gbnf"
expect_exit "grammar: a stuck grammar ends with one error line" 1 \
	"grammar: no token of the vocabulary can continue the text at position [0-9]+ \\(the grammar is stuck\\)" \
	gen -t 0 -n 20 -q --grammar "$TMP/stuck.gbnf"

# malformed files: one line naming the file, line and column; exit 2
bad() { # name text pattern
	printf '%b' "$2" >"$TMP/bad.gbnf"
	expect_exit "grammar file: $1" 2 "--grammar: grammar $TMP/bad.gbnf: $3" \
		gen -t 0 -n 5 --grammar "$TMP/bad.gbnf"
}
bad "empty" '' "line 1, column 1: empty grammar"
bad "undefined rule" 'root ::= a b\na ::= "x"\n' "line 1, column 12: undefined rule 'b'"
bad "unterminated string" 'root ::= "abc\n' "line 1, column 10: unterminated string literal"
bad "bad escape" 'root ::= "\\q"\n' "line 1, column 11: unknown escape '\\\\q'"
bad "no root" 'start ::= "a"\n' "line 1, column 1: no rule named 'root'"
bad "left recursion" 'root ::= root "a" | "a"\n' "line 1, column 1: rule 'root' is left-recursive"
bad "never ends" 'root ::= "a" x\nx ::= "b" x\n' "line 2, column 1: rule 'x' can never end"
bad "missing ::=" '# c\n\nroot "a"\n' "line 3, column 6: expecting '::='"
expect_exit "grammar file: missing file" 2 "--grammar: grammar /nonexistent.gbnf: No such file" \
	gen -t 0 -n 5 --grammar /nonexistent.gbnf
"$EGANG" generate --help | grep -q -- "--grammar FILE" && pass "generate --help lists --grammar" ||
	fail "--help" "no --grammar"

# bench grammar: the summary line, on the story grammar and the built-in
# JSON one (which the tiny model follows only through the mask)
"$EGANG" bench grammar "${M[@]}" -p "Once upon a time" -n 24 -r 1 -q --grammar "$TMP/story.gbnf" >"$TMP/bench.out" 2>&1
rc=$?
grep -Eq '^bench grammar: .* vocab=512 trie_nodes=[0-9]+ .* greedy tok/s free/grammar [0-9.]+/[0-9.]+ .* sampled tok/s free/grammar [0-9.]+/[0-9.]+ .* mask_us p50/p99/max [0-9.]+/[0-9.]+/[0-9.]+ .* vocab_ms [0-9.]+$' "$TMP/bench.out" &&
	[[ $rc == 0 ]] && pass "bench grammar --grammar FILE: the summary line" || fail "bench grammar" "rc $rc $(tail -2 "$TMP/bench.out")"
"$EGANG" bench grammar "${M[@]}" -n 24 -r 1 -q >"$TMP/bench.out" 2>&1
rc=$?
grep -q '^bench grammar: .* grammar=json ' "$TMP/bench.out" && [[ $rc == 0 ]] &&
	pass "bench grammar: the built-in JSON grammar" || fail "bench grammar json" "rc $rc $(tail -2 "$TMP/bench.out")"

# generate --json-schema: the text is JSON valid under the schema (greedy
# and sampled), which the free text is not; a schema file that is not
# JSON, a keyword the compiler refuses, both constraints at once: one
# line naming the problem, exit 2
cat >"$TMP/pet.json" <<'EOF2'
{"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 12},
  "age": {"type": "integer"},
  "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}, "maxItems": 3}},
 "required": ["name", "age", "pets"]}
EOF2
ok=0
for s in 0 1 2 3; do
	if ((s == 0)); then args=(-t 0); else args=(-t 1 -s "$s"); fi
	gen "${args[@]}" -n 120 -q --json-schema "$TMP/pet.json" >"$TMP/js.$s" 2>"$TMP/jserr.$s"
	rc=$?
	v=$(/usr/bin/python3 tests/json_validate.py "$TMP/pet.json" "$(cat "$TMP/js.$s")" 2>&1)
	if [[ $rc == 0 && $v == ok ]]; then ok=$((ok + 1)); else
		fail "json-schema run $s" "rc $rc: $v: $(head -c 200 "$TMP/js.$s") $(head -c 200 "$TMP/jserr.$s")"; fi
done
[[ $ok == 4 ]] && pass "generate --json-schema: 4 runs (greedy, 3 seeds) each valid under the schema"
v=$(/usr/bin/python3 tests/json_validate.py "$TMP/pet.json" "$(gen -t 0 -n 40 -q)" 2>&1)
[[ $v != ok ]] && pass "generate without the schema: the text is not valid under it" ||
	fail "free text valid under the schema" "$v"
printf '{"type": "object", "minProperties": 1}\n' >"$TMP/unsup.json"
expect_exit "json-schema: unsupported keyword" 2 \
	'--json-schema: json schema .*unsup.json: json_schema: at #/minProperties: unsupported keyword "minProperties"' \
	gen -t 0 -n 5 --json-schema "$TMP/unsup.json"
printf '{"type":\n' >"$TMP/notjson.json"
expect_exit "json-schema: not JSON" 2 '--json-schema: json schema .*notjson.json: line 2, column 0: ' \
	gen -t 0 -n 5 --json-schema "$TMP/notjson.json"
expect_exit "json-schema and grammar together" 2 "--grammar and --json-schema both constrain" \
	gen -t 0 -n 5 --json-schema "$TMP/pet.json" --grammar "$TMP/story.gbnf"
