#!/usr/bin/env bash
# The UTF-8 policy end to end (src/model/utf8.h): a hand-made model whose
# token pieces split multi-byte characters and hold invalid bytes.
# `egang generate` (stdout) and `egang serve` (plain and streamed) must give
# the same text, and exactly the text the policy prescribes: a split
# character whole, U+FFFD per maximal invalid subpart, a trailing
# incomplete character as U+FFFD, stop strings matched on that text.
#
# The model (written below, no ../shared needed): a llama vocabulary of
# <unk> <s> </s>, the 256 byte tokens <0xNN>, U+2581, "a", "b"; one layer
# of zero weights, so the logits depend on the last token only, through a
# one-hot embedding and an output matrix that names each token's successor.
# After the prompt "a" greedy decoding walks this path, then EOS:
#   E4 B8 AD | b | FF | C0 AF | ED A0 80 | F0 9F 98 | 41 | C3 A9 | E2 82
#   split 中 |   | bad| overlong | surrogate| truncated | A | split é | truncated end
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
SPID=
cleanup() { [[ -n $SPID ]] && kill -9 "$SPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

MODEL=$TMP/split.gguf
/usr/bin/python3 - "$MODEL" <<'PY'
import struct, sys
PATH = [0x260, 0xE4, 0xB8, 0xAD, 0x261, 0xFF, 0xC0, 0xAF, 0xED, 0xA0, 0x80,
        0xF0, 0x9F, 0x98, 0x41, 0xC3, 0xA9, 0xE2, 0x82]
tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["\u2581", "a", "b"]
types = [2, 3, 3] + [6] * 256 + [1, 1, 1]
V, D, H, L = len(tokens), 64, 64, 1
def tid(x):  # 0x260 "a", 0x261 "b", else a byte token
    return {0x260: 260, 0x261: 261}.get(x, 3 + x)
path = [tid(x) for x in PATH] + [2]  # ... then EOS
emb = [[0.0] * D for _ in range(V)]
out = [[0.0] * D for _ in range(V)]
for k, (t, nxt) in enumerate(zip(path, path[1:])):
    emb[t][k] = 1.0
    out[nxt][k] = 10.0
zeros = lambda r, c: [[0.0] * c for _ in range(r)]
ones = lambda n: [[1.0] * n]
tensors = [("token_embd.weight", emb), ("output_norm.weight", ones(D)), ("output.weight", out)]
for name, t in [("attn_norm.weight", ones(D)), ("attn_q.weight", zeros(D, D)),
                ("attn_k.weight", zeros(D, D)), ("attn_v.weight", zeros(D, D)),
                ("attn_output.weight", zeros(D, D)), ("ffn_norm.weight", ones(D)),
                ("ffn_gate.weight", zeros(H, D)), ("ffn_down.weight", zeros(D, H)),
                ("ffn_up.weight", zeros(H, D))]:
    tensors.append(("blk.0." + name, t))
def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b
kv = [("general.architecture", 8, s("llama")), ("general.name", 8, s("split-utf8")),
      ("llama.context_length", 4, struct.pack("<I", 64)),
      ("llama.embedding_length", 4, struct.pack("<I", D)),
      ("llama.feed_forward_length", 4, struct.pack("<I", H)),
      ("llama.block_count", 4, struct.pack("<I", L)),
      ("llama.attention.head_count", 4, struct.pack("<I", 4)),
      ("llama.attention.head_count_kv", 4, struct.pack("<I", 4)),
      ("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5)),
      ("tokenizer.ggml.model", 8, s("llama")),
      ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, V) + b"".join(s(t) for t in tokens)),
      ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, V) + struct.pack("<%df" % V, *([0.0] * V))),
      ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, V) + struct.pack("<%di" % V, *types)),
      ("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 1)),
      ("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2)),
      ("tokenizer.ggml.unknown_token_id", 4, struct.pack("<I", 0))]
head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
for k, t, v in kv:
    head += s(k) + struct.pack("<I", t) + v
data, infos = b"", b""
for name, rows in tensors:
    blob = b"".join(struct.pack("<%df" % len(r), *r) for r in rows)
    dims = [len(rows[0])] if len(rows) == 1 else [len(rows[0]), len(rows)]
    infos += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
    infos += struct.pack("<IQ", 0, len(data))
    data += blob + b"\0" * (-len(blob) % 32)
head += infos
head += b"\0" * (-len(head) % 32)
open(sys.argv[1], "wb").write(head + data)
PY
[[ -s $MODEL ]] || { fail "write the split-UTF-8 model"; exit 0; }

R=$'\xef\xbf\xbd' # U+FFFD
FULL="中b$R$R$R$R$R$R${R}Aé$R"

# cli [generate args]: the text `generate` prints, in hex, without the
# newline it ends its output with (the last byte, checked)
cli() {
	local h
	h=$("$EGANG" generate -m "$MODEL" --ctx 64 -p a -t 0 --no-echo -q --cores 0 "$@" 2>"$TMP/cli.err" | od -An -tx1 | tr -d ' \n')
	[[ $h == *0a ]] && echo "${h%0a}" || echo "no final newline: $h"
}
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }

# the policy's own text, and the CLI's, for three endings
got=$(cli -n 18)
[[ $got == "$(hex "$FULL")" ]] && pass "generate: split characters joined, U+FFFD per maximal subpart, truncated end flushed as U+FFFD (length)" \
	|| fail "generate: UTF-8 policy (length)" "$got vs $(hex "$FULL") $(head -c 200 "$TMP/cli.err")"
got=$(cli -n 40)
[[ $got == "$(hex "$FULL")" ]] && pass "generate: the same text when EOS ends it" || fail "generate: UTF-8 policy (EOS)" "$got"
got=$(cli -n 40 --stop "é")
[[ $got == "$(hex "中b$R$R$R$R$R$R${R}A")" ]] && pass "generate: a stop string split across tokens matches the text" || fail "generate: stop across tokens" "$got"
got=$(cli -n 40 --stop "${R}A")
[[ $got == "$(hex "中b$R$R$R$R$R$R")" ]] && pass "generate: a stop string matches a replaced byte (U+FFFD)" || fail "generate: stop on U+FFFD" "$got"

# ---- the server ----
port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$EGANG" serve -m "$MODEL" --ctx 64 --port "$port" --cores 0 -q >"$TMP/serve.out" 2>"$TMP/serve.err" &
SPID=$!
URL=http://127.0.0.1:$port
up=0
for _ in $(seq 150); do
	if curl -s --max-time 1 "$URL/health" >/dev/null 2>&1; then up=1; break; fi
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.2
done
if [[ $up -eq 0 ]]; then fail "serve the split-UTF-8 model" "$(head -c 300 "$TMP/serve.err")"; exit 0; fi

# server BODY STREAM: the text of a completion as hex (plain or SSE)
server() {
	/usr/bin/python3 - "$URL" "$1" "$2" <<'PY'
import json, sys, urllib.request
url, body, stream = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1"
body.update({"prompt": "a", "temperature": 0, "stream": stream})
req = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
raw = urllib.request.urlopen(req, timeout=60).read().decode("utf-8")  # strict: valid UTF-8
if stream:
    text = "".join(json.loads(l[6:])["choices"][0]["text"] for l in raw.split("\n")
                   if l.startswith("data: ") and l != "data: [DONE]")
else:
    text = json.loads(raw)["choices"][0]["text"]
print(text.encode("utf-8").hex())
PY
}
for stream in 0 1; do
	what=$([[ $stream == 1 ]] && echo streamed || echo plain)
	a=$(cli -n 18); b=$(server '{"max_tokens":18}' $stream)
	[[ -n $a && $a == "$b" ]] && pass "serve ($what) and generate give the same bytes (length)" || fail "serve ($what) = generate (length)" "$b vs $a"
	a=$(cli -n 40); b=$(server '{"max_tokens":40}' $stream)
	[[ -n $a && $a == "$b" ]] && pass "serve ($what) and generate give the same bytes (EOS)" || fail "serve ($what) = generate (EOS)" "$b vs $a"
	a=$(cli -n 40 --stop "é"); b=$(server '{"max_tokens":40,"stop":"é"}' $stream)
	[[ -n $a && $a == "$b" ]] && pass "serve ($what) and generate cut at a stop string split across tokens" || fail "serve ($what) = generate (stop é)" "$b vs $a"
	a=$(cli -n 40 --stop "${R}A"); b=$(server '{"max_tokens":40,"stop":["zz","\ufffdA"]}' $stream)
	[[ -n $a && $a == "$b" ]] && pass "serve ($what) and generate cut at a stop string on U+FFFD" || fail "serve ($what) = generate (stop U+FFFD)" "$b vs $a"
done
kill -TERM "$SPID"; wait "$SPID" 2>/dev/null; SPID=
exit 0
