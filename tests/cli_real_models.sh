#!/usr/bin/env bash
# The real models of tools/models.sh (doc/models.md): SmolLM2-135M-Instruct
# (llama, gpt2 BPE with the smollm pre-tokenizer, ChatML) and Gemma 3 270M
# (gemma3: sliding-window and global layers, QK-norm, Q4_K_M's mixed
# types). Without them in the cache each group says SKIP (the test never
# downloads then); under CI=true it installs them with tools/models.sh and
# a model that cannot be had is a failure. Checks: the installer's command
# line; `egang info` reads each file as what it is; greedy answers equal
# the text egang and llama.cpp both give (tools/llamacpp/agreement,
# doc/agreement/); the logits bit-identical on one core and on all cores
# with the gang's membership changed at random before every token; the
# models' chat templates rendered as python3-jinja2 renders them; and,
# when node-llama-cpp is in the cache, the tokenizers equal llama.cpp's on
# tests/data/tokenizer-corpus.txt and the greedy tokens of one chat prompt
# equal llama.cpp's.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
ROOT=$PWD

# ---- the installer's command line (no network) ----
if tools/models.sh --help | grep -q '^  smollm2-135m-instruct '; then pass "models.sh --help"
else fail "models.sh --help"; fi
expect_exit "models.sh: an unknown model" 2 "unknown model 'nope'" tools/models.sh nope
expect_exit "models.sh: no model" 2 "name a model" tools/models.sh
expect_exit "models.sh: an unknown option" 2 "unknown option '--nope'" tools/models.sh --nope
if [[ $(tools/models.sh --path gemma3-270m) == */models/gemma-3-270m-q4_k_m.gguf &&
	$(tools/models.sh --list | wc -l) -eq 2 ]]; then pass "models.sh --path, --list"
else fail "models.sh --path, --list" "$(tools/models.sh --list 2>&1 | head -3)"; fi

# model NAME: MP = the GGUF's path when installed (installing it under
# CI=true, which also checks its sha256); otherwise SKIP (FAIL under CI)
# and status 1
model() {
	MP=$(tools/models.sh --path "$1")
	if [[ ${CI:-} == true ]]; then
		tools/models.sh "$1" >/dev/null 2>"$TMP/install.err" && return 0
		missing_model "$1" "tools/models.sh $1 failed: $(tail -1 "$TMP/install.err")"
		return 1
	fi
	[[ -f $MP ]] && return 0
	missing_model "$1" "not installed (tools/models.sh $1)"
	return 1
}

# greedy NAME WANT ARGS...: egang generate's greedy text (-t 0, one core, an
# f32 KV cache as in llama.cpp's run.mjs check, which gave WANT too) begins
# with WANT
greedy() {
	local name=$1 want=$2 got; shift 2
	got=$("$EGANG" generate -t 0 --cores 0 --kv-type f32 -q --no-echo "$@" 2>"$TMP/g.err")
	if [[ $got == "$want"* ]]; then pass "$name"
	else fail "$name" "got [${got:0:160}] $(tail -1 "$TMP/g.err")"; fi
}

# bitexact NAME ARGS...: the logits of every generated token equal, bit
# for bit, on one core and on every core with a random membership
bitexact() {
	local name=$1; shift
	"$EGANG" generate -t 0 --cores 0 -q --no-echo "$@" --logits-hash "$TMP/one.hash" >/dev/null 2>&1
	"$EGANG" generate -t 0 -q --no-echo "$@" --membership random:11 \
		--logits-hash "$TMP/all.hash" >/dev/null 2>"$TMP/all.err"
	local n
	n=$(wc -l <"$TMP/one.hash" 2>/dev/null)
	if [[ ${n:-0} -gt 0 ]] && cmp -s "$TMP/one.hash" "$TMP/all.hash"; then pass "$name ($n tokens)"
	else fail "$name" "lines ${n:-0}; $(tail -1 "$TMP/all.err")"; fi
}

# jinja NAME MODEL TEMPLATE BOS EOS ARGS...: every conversation of
# tests/data/chat-conversations.json rendered by `egang chat --render`
# (ARGS: how egang picks the template) equals python3-jinja2's rendering
# of TEMPLATE; a conversation Jinja refuses must be refused (exit 2)
jinja() {
	local name=$1 m=$2 tmpl=$3 bos=$4 eos=$5 c ref ok=0 bad=""; shift 5
	/usr/bin/python3 -c 'import jinja2' 2>/dev/null || { skip "$name" "python3-jinja2 is not installed"; return; }
	rm -rf "$TMP/conv" && mkdir -p "$TMP/conv/ref"
	/usr/bin/python3 - tests/data/chat-conversations.json "$TMP/conv" <<'PY'
import json, sys
for i, c in enumerate(json.load(open(sys.argv[1]))):
    json.dump(c, open(f"{sys.argv[2]}/c{i}.json", "w"), ensure_ascii=False)
PY
	/usr/bin/python3 tests/chat_template_ref.py --out-dir "$TMP/conv/ref" "$tmpl" "$bos" "$eos" "$TMP"/conv/c*.json ||
		{ fail "$name" "the reference renderer failed"; return; }
	for c in "$TMP"/conv/c*.json; do
		ref=$TMP/conv/ref/$(basename "$c")
		"$EGANG" chat -m "$m" "$@" --render "$c" >"$TMP/got" 2>/dev/null
		local rc=$?
		if [[ -f $ref.refused ]]; then [[ $rc -eq 2 ]] && ok=$((ok + 1)) || bad+=" $(basename "$c"):exit$rc"
		elif [[ $rc -eq 0 ]] && cmp -s "$ref.ref" "$TMP/got"; then ok=$((ok + 1))
		else bad+=" $(basename "$c")"; fi
	done
	if [[ -z $bad ]]; then pass "$name ($ok conversations)"; else fail "$name" "differ:$bad"; fi
}

# gguf_str FILE KEY: a string value of a GGUF's header (an independent
# reader: no egang code), to stdout
gguf_str() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb")
def take(fmt):
    n = struct.calcsize("<" + fmt)
    return struct.unpack("<" + fmt, f.read(n))[0]
def string():
    return f.read(take("Q"))
SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip(t):
    if t in SIZE: f.seek(SIZE[t], 1)
    elif t == 8: string()
    else:
        et, n = take("I"), take("Q")
        if et in SIZE: f.seek(SIZE[et] * n, 1)
        else:
            for _ in range(n): skip(et)
assert f.read(4) == b"GGUF"
take("I"); take("Q"); nkv = take("Q")
for _ in range(nkv):
    k = string().decode(); t = take("I")
    if k == sys.argv[2] and t == 8:
        sys.stdout.buffer.write(string()); sys.exit(0)
    skip(t)
sys.exit(1)
PY
}

NLC=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}/node-llama-cpp
have_llamacpp() { [[ -d $NLC/node_modules/node-llama-cpp ]] && command -v node >/dev/null; }

# ---- SmolLM2-135M-Instruct ----
S="" G=""
if model smollm2-135m-instruct; then
	S=$MP
	"$EGANG" info "$S" >"$TMP/info" 2>&1
	if grep -q '^architecture: *llama$' "$TMP/info" &&
		grep -q '^dim 576, hidden 1536, layers 30, heads 9, kv heads 3, head dim 64$' "$TMP/info" &&
		grep -q '^tokenizer: *gpt2 (byte-level BPE, pre-tokenizer smollm), 49152 tokens, bos 1, eos 2, BOS not added$' "$TMP/info" &&
		grep -q '^chat template: chatml$' "$TMP/info" && grep -Eq '^  q4_1 +210 tensors' "$TMP/info"
	then pass "smollm2: info (llama, gpt2 BPE smollm, ChatML, Q4_1)"
	else fail "smollm2: info" "$(sed -n '2,8p' "$TMP/info" | tr '\n' '|')"; fi
	greedy "smollm2: a greedy chat answer" \
		"1. Stay hydrated: Drink at least 8 glasses of water per day" \
		-m "$S" --chat -p "Give me three tips for staying healthy." -n 16
	bitexact "smollm2: chat logits bit-identical, one core and random membership" \
		-m "$S" --chat -p "What is gravity?" -n 24
	gguf_str "$S" tokenizer.chat_template >"$TMP/smollm2.jinja"
	jinja "smollm2: its own chat template as python3-jinja2 renders it" "$S" \
		"$TMP/smollm2.jinja" "<|im_start|>" "<|im_end|>"
fi

# ---- Gemma 3 270M (pretrained; no chat template of its own) ----
if model gemma3-270m; then
	G=$MP
	"$EGANG" info "$G" >"$TMP/info" 2>&1
	if grep -q '^architecture: *gemma3$' "$TMP/info" &&
		grep -q '^architecture facts: qk-norm, post-norms, gelu-tanh ffn, scaled embedding$' "$TMP/info" &&
		grep -q '^sliding window: 512 positions on 15 of 18 layers (rope theta 10000; global layers: 5,11,17)$' "$TMP/info" &&
		grep -q '^tokenizer: *llama (SentencePiece BPE), 262144 tokens, bos 2, eos 1, BOS added$' "$TMP/info" &&
		grep -Eq '^  q5_0 +81 tensors' "$TMP/info" && grep -Eq '^  q4_k +27 tensors' "$TMP/info" &&
		grep -Eq '^  q6_k +9 tensors' "$TMP/info" && grep -Eq '^  q8_0 +10 tensors' "$TMP/info"
	then pass "gemma3: info (sliding window, global layers, Q4_K_M's types)"
	else fail "gemma3: info" "$(sed -n '2,10p' "$TMP/info" | tr '\n' '|')"; fi
	greedy "gemma3: a greedy continuation" " the capital of the country of France. It is the largest city in France." \
		-m "$G" -p "The capital of France is" -n 16
	# 616 prompt tokens: the name is 600 positions back, past the sliding
	# window of 512, where only the global layers see it (the text
	# llama.cpp gives too)
	long="My name is Alice and I live in Lisbon. $(printf 'The weather was mild and the streets were quiet. %.0s' {1..60})Again, my name is"
	greedy "gemma3: a greedy continuation that recalls text from past the sliding window" \
		" Alice and I live in Lisbon." -m "$G" -p "$long" -n 8
	bitexact "gemma3: logits bit-identical past the sliding window, one core and random membership" \
		-m "$G" -p "$long" -n 8
	bitexact "gemma3: chat logits bit-identical, one core and random membership" \
		-m "$G" --chat-template gemma3 -p "What is gravity?" -n 16
	if TOK=$(tools/tokenizers.sh 2>/dev/null); then
		/usr/bin/python3 -c "import json,sys; sys.stdout.write(json.load(open('$TOK/gemma3/tokenizer_config.json'))['chat_template'])" >"$TMP/gemma3.jinja"
		jinja "gemma3: the Gemma 3 template on its vocabulary as python3-jinja2 renders it" "$G" \
			"$TMP/gemma3.jinja" "<bos>" "<eos>" --chat-template gemma3
	else
		skip "gemma3: the Gemma 3 template" "its Jinja source could not be fetched (tools/tokenizers.sh)"
	fi
fi

# ---- against llama.cpp, when node-llama-cpp is in the cache ----
if [[ -n $S || -n $G ]]; then
	if have_llamacpp; then
		v=""; [[ -n $S ]] && v=smollm2-135m-instruct; [[ -n $G ]] && v+=${v:+,}gemma3-270m
		EGANG=$EGANG tools/llamacpp/tokenizer-check "$v" >"$TMP/tc" 2>&1
		check "tokenizers equal llama.cpp's on the corpus ($v)" test $? -eq 0
		[[ -s $TMP/tc ]] && grep -E '^(smollm2|gemma3)' "$TMP/tc" | sed 's/^/# /'
		if [[ -n $S ]]; then
			/usr/bin/python3 -c 'import json; json.dump([{"kind": "fact", "user": "What is the capital of Japan?"}], open("'"$TMP"'/p.json", "w"))'
			EGANG=$EGANG tools/llamacpp/agreement --models smollm2-135m-instruct --prompts "$TMP/p.json" \
				-n 16 --builds none -q --out "$TMP/agree" >/dev/null 2>"$TMP/agree.err"
			if grep -q '^  smollm2-135m-instruct: 1 of 1 prompts agree' "$TMP/agree/table.txt" 2>/dev/null
			then pass "smollm2: greedy chat tokens equal llama.cpp's"
			else fail "smollm2: greedy chat tokens equal llama.cpp's" "$(tail -3 "$TMP/agree/table.txt" "$TMP/agree.err" 2>/dev/null | tr '\n' ' ')"; fi
		fi
	else
		skip "real models against llama.cpp" "node-llama-cpp is not in the cache (tools/llamacpp/compare-llamacpp --prepare)"
	fi
fi
