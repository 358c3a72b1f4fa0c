#!/usr/bin/env bash
# Models whose weights produce non-finite logits are reported, not sampled
# from. A synthetic model is written, then copies of it with
# tensor bytes patched (offsets from `egang info`: "data at N" and each
# tensor's "+OFFSET"): one token's embedding row NaN (the logits turn NaN
# at the position that reads that token, mid-generation), the final norm
# NaN, +Inf, or finite but huge (an overflow in the forward pass). `egang
# generate` must print the text before that position, then one error line
# naming the position, and exit 1, whatever the sampler; the server must
# answer 500 with a JSON error (plain) or an SSE error event after the
# streamed text (stream), with one request at a time and with batching.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# patch IN OUT TENSOR ROW VALUE: OUT is IN with row ROW of TENSOR (or the
# whole tensor when ROW is "all") set to VALUE (a Python float literal);
# TENSOR is f32 or f16
patch() {
	/usr/bin/python3 - "$EGANG" "$@" <<'PY'
import re, struct, subprocess, sys
egang, src, dst, name, row, value = sys.argv[1:7]
info = subprocess.run([egang, "info", src], capture_output=True, text=True, check=True).stdout
data = int(re.search(r"data at (\d+)", info).group(1))
m = re.search(r"^\s*%s\s+(f32|f16)\s+\[([0-9, ]+)\]\s+(\d+) bytes at \+(\d+)" % re.escape(name), info, re.M)
typ, dims = m.group(1), [int(d) for d in m.group(2).split(",")]
size, off = int(m.group(3)), data + int(m.group(4))
if row != "all":
    size //= dims[1]
    off += int(row) * size
b = bytearray(open(src, "rb").read())
fmt = "<f" if typ == "f32" else "<e"
b[off:off + size] = struct.pack(fmt, float(value)) * (size // struct.calcsize(fmt))
open(dst, "wb").write(b)
PY
}

# GOOD: one layer of tinyllama's shape in f16. Its classifier is not the
# embedding, so a NaN embedding row spoils only the positions that read
# that token; float weights, because a quantized matrix's activations go
# through an integer quantization that turns NaN into finite numbers.
# SMALL: stories260k in f32, for the final norm's patches.
GOOD=$TMP/good.gguf SMALL=$TMP/small.gguf
if ! "$EGANG" synth tinyllama-1.1b --layers 1 --vocab 512 --type f16 -o "$GOOD" -q 2>"$TMP/err" ||
   ! "$EGANG" synth stories260k --type f32 -o "$SMALL" -q 2>"$TMP/err"; then
	fail "synth" "$(cat "$TMP/err")"
	exit 0
fi
PROMPT="Once upon a time"
# the greedy path on the good model: the first generated token X that no
# earlier position reads, and the position K that reads it
"$EGANG" generate -m "$GOOD" -p "$PROMPT" -n 8 -t 0 --ids "$TMP/ids" -q >/dev/null 2>&1
read -r X K NP < <(/usr/bin/python3 - "$TMP/ids" <<'PY'
import sys
lines = dict(l.split(":", 1) for l in open(sys.argv[1]))
p, s = lines["prompt_ids"].split(), lines["sequence_ids"].split()
for k in range(len(p), len(s)):
    if s[k] not in s[:k]:
        print(s[k], k, len(p))
        break
PY
)
if [[ -z ${K:-} ]]; then
	fail "the good model's greedy path has a new token" "$(cat "$TMP/ids")"
	exit 0
fi
# what generate prints before position K's logits: the prompt and the
# tokens up to X
first=$("$EGANG" generate -m "$GOOD" -p "$PROMPT" -n $((K - NP + 1)) -t 0 -q 2>/dev/null)

patch "$GOOD" "$TMP/row.gguf" token_embd.weight "$X" nan
patch "$SMALL" "$TMP/norm-nan.gguf" output_norm.weight all nan
patch "$SMALL" "$TMP/norm-inf.gguf" output_norm.weight all inf
patch "$SMALL" "$TMP/norm-huge.gguf" output_norm.weight all 3e38

# ---- egang generate ----
MSG="the model produced non-finite logits"
expect_exit "generate: NaN embedding row, error at position $K" 1 \
	"^egang: error: position $K: $MSG \(NaN at id [0-9]+; [0-9]+ of 512 not finite\)" \
	"$EGANG" generate -m "$TMP/row.gguf" -p "$PROMPT" -n 8 -t 0
if [[ $(cat "$TMP/ee.out") == "$first" && -n $first ]]; then
	pass "generate: the text before the bad position is printed"
else fail "generate: the text before the bad position" "'$(cat "$TMP/ee.out")' vs '$first'"; fi
# the small model's prompt ends at the same position (the same synthetic
# tokenizer): its first sampled position
last=$((NP - 1))
for s in "egang -t 0.8 --top-p 0.9" "egang -t 1 --top-p 1 --top-k 5" "llama2c -t 0.8 --top-p 0.9" \
	"llama2c -t 1 --top-p 1" "egang -t 0"; do
	read -r mode flags <<<"$s"
	# shellcheck disable=SC2086 # flags are words
	expect_exit "generate: NaN final norm, --sampler $mode $flags: position $last" 1 \
		"^egang: error: position $last: $MSG \(NaN at id 0; 512 of 512 not finite\)" \
		"$EGANG" generate -m "$TMP/norm-nan.gguf" -p "$PROMPT" -n 8 --sampler "$mode" $flags -q
done
expect_exit "generate: +Inf final norm" 1 "^egang: error: position $last: $MSG \(" \
	"$EGANG" generate -m "$TMP/norm-inf.gguf" -p "$PROMPT" -n 8 -q
expect_exit "generate: finite weights that overflow (final norm 3e38)" 1 \
	"^egang: error: position $last: $MSG \(" \
	"$EGANG" generate -m "$TMP/norm-huge.gguf" -p "$PROMPT" -n 8 -q
expect_exit "generate: batched prompt off (EGANG_PREFILL_BATCH=0), same error" 1 \
	"^egang: error: position $K: $MSG" \
	env EGANG_PREFILL_BATCH=0 "$EGANG" generate -m "$TMP/row.gguf" -p "$PROMPT" -n 8 -t 0 -q
if "$EGANG" generate -m "$GOOD" -p "$PROMPT" -n 8 -q >/dev/null 2>"$TMP/err"; then
	pass "generate: the good model still generates"
else fail "generate: the good model" "$(cat "$TMP/err")"; fi

# ---- egang serve ----
# serve_checks NAME: a plain and a streamed request on the server at $URL
serve_checks() {
	local name=$1 st
	st=$(curl -s --max-time 60 -o "$TMP/r.json" -w '%{http_code}' \
		-d "{\"prompt\":\"$PROMPT\",\"max_tokens\":8,\"temperature\":0}" "$URL/v1/completions")
	if [[ $st == 500 ]] && /usr/bin/python3 - "$TMP/r.json" "position $K: $MSG" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert e["type"] == "server_error" and e["message"].startswith(sys.argv[2]), e
PY
	then pass "$name: plain request -> 500, JSON error naming position $K"
	else fail "$name: plain request" "status $st: $(head -c 300 "$TMP/r.json")"; fi
	curl -sN --max-time 60 -o "$TMP/s.txt" -w '%{http_code}' >"$TMP/s.st" \
		-d "{\"prompt\":\"$PROMPT\",\"max_tokens\":8,\"temperature\":0,\"stream\":true}" "$URL/v1/completions"
	if [[ $(cat "$TMP/s.st") == 200 ]] && /usr/bin/python3 - "$TMP/s.txt" "position $K: $MSG" "${first#"$PROMPT"}" <<'PY'
import json, sys
ev = [l[6:] for l in open(sys.argv[1]).read().split("\n") if l.startswith("data: ")]
assert "[DONE]" not in ev, ev
err = json.loads(ev[-1])["error"]
assert err["type"] == "server_error" and err["message"].startswith(sys.argv[2]), err
text = "".join(json.loads(e)["choices"][0]["text"] for e in ev[:-1])
assert text == sys.argv[3], (text, sys.argv[3])
assert all(json.loads(e)["choices"][0]["finish_reason"] is None for e in ev[:-1]), ev
PY
	then pass "$name: stream -> the text before position $K, then an SSE error event, no [DONE]"
	else fail "$name: stream" "$(head -c 400 "$TMP/s.txt")"; fi
	st=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/health")
	[[ $st == 200 ]] && pass "$name: still healthy" || fail "$name: /health" "$st"
}
for par in 1 4; do
	if start_server "par$par" -m "$TMP/row.gguf" --ctx 64 --parallel "$par" -q; then
		serve_checks "serve --parallel $par"
		stop_server "par$par"
	fi
done
