#!/usr/bin/env bash
# egang tokenize on stories260K.gguf (tok512), offline: BOS, --no-bos,
# special-token text with and without --no-parse-special, --decode giving
# the text back, --escapes, one output line per input line; bad input of
# tokenize and of synth --tokenizer: one line naming the problem, exit 2.
# (The agreement with llama.cpp on real vocabularies:
# tools/llamacpp/tokenizer-check.)
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
M=$MODELS/stories260K.gguf
[[ -f $M ]] || { missing_model tokenize "no $M"; exit 0; }
out=$("$EGANG" tokenize -m "$M" "Once upon a time")
[[ $out == "1 "* && $(wc -w <<<"$out") -ge 3 ]] && pass "tokenize: BOS first" || fail "tokenize BOS" "$out"
nb=$("$EGANG" tokenize -m "$M" --no-bos "Once upon a time")
[[ "1 $nb" == "$out" ]] && pass "tokenize --no-bos: the same ids without BOS" || fail "--no-bos" "$nb"
sp=$("$EGANG" tokenize -m "$M" --no-bos "<s>")
nsp=$("$EGANG" tokenize -m "$M" --no-bos --no-parse-special "<s>")
[[ $sp == 1 && $nsp != 1 && $(wc -w <<<"$nsp") -ge 2 ]] &&
	pass "tokenize: '<s>' is BOS, text with --no-parse-special" || fail "special text" "$sp / $nsp"
lines=$(printf 'a b\nOnce\n\nthe end\n' | "$EGANG" tokenize -m "$M" - | wc -l)
[[ $lines == 4 ]] && pass "tokenize: one line per input line" || fail "lines" "$lines"
dec=$(printf 'Once upon a time\\nthere was\\t\\xc3\\xa9\n' | "$EGANG" tokenize -m "$M" --escapes --decode -)
[[ $dec == 'Once upon a time\nthere was\té' ]] && pass "tokenize --escapes --decode: the text back" || fail "--decode" "$dec"
pc=$("$EGANG" tokenize -m "$M" --pieces "Once")
[[ $pc == *"1 '<s>'"*"'Once'"* || $pc == *"1 '<s>'"*"'On"* ]] && pass "tokenize --pieces" || fail "--pieces" "$pc"
# bad input
expect2() { # name cmd...: exit 2 and one line on stderr
	local name=$1; shift
	"$@" >/dev/null 2>"$TMP/err" </dev/null
	local rc=$?
	[[ $rc == 2 && $(wc -l <"$TMP/err") == 1 ]] && pass "$name" || fail "$name" "rc $rc: $(head -c 200 "$TMP/err")"
}
expect2 "tokenize: missing model file -> 2" "$EGANG" tokenize -m /nonexistent.gguf hi
expect2 "tokenize: no -m -> 2" "$EGANG" tokenize hi
echo '{"model": {"type": "BPE", "vocab": {' >"$TMP/bad.json"
expect2 "synth --tokenizer: malformed JSON -> 2" "$EGANG" synth stories260k --tokenizer "$TMP/bad.json" -o "$TMP/x.gguf" -q
echo '{"model": {"type": "Unigram", "vocab": []}}' >"$TMP/uni.json"
expect2 "synth --tokenizer: a Unigram model -> 2" "$EGANG" synth stories260k --tokenizer "$TMP/uni.json" -o "$TMP/x.gguf" -q
echo '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a c"]}, "added_tokens": [], "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}}}' >"$TMP/m.json"
expect2 "synth --tokenizer: a merge naming an unknown piece -> 2" "$EGANG" synth stories260k --tokenizer "$TMP/m.json" -o "$TMP/x.gguf" -q
grep -q "merges\[0\]" "$TMP/err" && pass "... and the message names merges[0]" || fail "merge message" "$(cat "$TMP/err")"
expect2 "synth --tokenizer-config without --tokenizer -> 2" "$EGANG" synth stories260k --tokenizer-config "$TMP/m.json" -o "$TMP/x.gguf" -q
expect2 "synth --tokenizer: missing file -> 2" "$EGANG" synth stories260k --tokenizer /nonexistent.json -o "$TMP/x.gguf" -q
