#!/usr/bin/env bash
# The architectures (model.h arch_info): a small synthetic model of each new
# one loads as its architecture and keeps the gang's bit-exactness: the same
# logits, bit for bit, on 1 core, on 2, under random and flipping
# membership, and with batched prefill against token by token. gemma3 with
# a sliding window of 8 (6 layers: 5 sliding, 1 global) so that the prompt
# and the generation cross it, and its sliding_window_pattern key. Then
# malformed files of these architectures: a one-line error naming the key
# or tensor, exit 2.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

gen() { "$EGANG" generate -q "$@"; }
PROMPT="the quick brown fox jumps over the lazy dog while the cat sleeps on a warm mat by the door"

# arch_exact NAME ARCH FILE: every membership and batch size against the
# single-core token-by-token run
arch_exact() {
	local name=$1 arch=$2 f=$3 ok=1 why=""
	if "$EGANG" info "$f" 2>/dev/null | grep -q "^architecture: *$arch\$"; then pass "$name loads as $arch"
	else fail "$name loads as $arch" "$("$EGANG" info "$f" 2>&1 | head -3 | tr '\n' ' ')"; fi
	EGANG_PREFILL_BATCH=0 gen -m "$f" -t 0 -n 16 -p "$PROMPT" --cores 0 --logits-hash $TMP/ref.hash >$TMP/ref.txt
	for run in "128 --cores 0-1" "128 --membership random:4" "5 --membership flip:1" "0 --membership random:7"; do
		read -r b spec <<<"$run"
		EGANG_PREFILL_BATCH=$b gen -m "$f" -t 0 -n 16 -p "$PROMPT" $spec --logits-hash $TMP/b.hash >$TMP/b.txt
		cmp -s $TMP/b.hash $TMP/ref.hash || { ok=0; why="$why batch=$b $spec: logits;"; }
		cmp -s $TMP/b.txt $TMP/ref.txt || { ok=0; why="$why batch=$b $spec: text;"; }
	done
	local n
	n=$(wc -l <$TMP/ref.hash)
	if [[ $ok -eq 1 && $n -eq 16 ]]; then pass "$name: logits bit-exact across memberships and prefill batches"
	else fail "$name: logits bit-exact across memberships and prefill batches" "lines=$n$why"; fi
}

"$EGANG" synth llama3.2-1b --vocab 4096 --layers 2 --type q4_0 --seed 5 -o $TMP/llama3.gguf -q
arch_exact "llama3.2-1b (rope_freqs)" llama $TMP/llama3.gguf
"$EGANG" synth qwen3-0.6b --vocab 4096 --layers 2 --type q4_0 --seed 5 -o $TMP/qwen3.gguf -q
arch_exact "qwen3-0.6b" qwen3 $TMP/qwen3.gguf
"$EGANG" synth gemma3-270m --vocab 4096 --layers 6 --sliding-window 8 --type q4_0 --seed 5 -o $TMP/gemma3.gguf -q
arch_exact "gemma3-270m (window 8)" gemma3 $TMP/gemma3.gguf
"$EGANG" synth phi3-mini --vocab 4096 --layers 1 --type q4_0 --seed 5 -o $TMP/phi3.gguf -q
arch_exact "phi3-mini (fused)" phi3 $TMP/phi3.gguf

# The window is in effect: the same weights with gemma3's own window (512,
# never crossed here) give other logits.
"$EGANG" synth gemma3-270m --vocab 4096 --layers 6 --type q4_0 --seed 5 -o $TMP/gemma3-512.gguf -q
gen -m $TMP/gemma3-512.gguf -t 0 -n 16 -p "$PROMPT" --logits-hash $TMP/w512.hash >/dev/null
gen -m $TMP/gemma3.gguf -t 0 -n 16 -p "$PROMPT" --logits-hash $TMP/w8.hash >/dev/null
if [[ -s $TMP/w8.hash ]] && ! cmp -s $TMP/w8.hash $TMP/w512.hash; then pass "gemma3: a sliding window of 8 changes the logits"
else fail "gemma3: a sliding window of 8 changes the logits"; fi
expect_exit "synth --sliding-window on a shape without one" 2 "has no sliding-window layers" \
	"$EGANG" synth qwen3-0.6b --sliding-window 8 -o $TMP/x.gguf

# gemma3.attention.sliding_window_pattern, as llama.cpp's set_swa_pattern:
# layer l slides unless (l + 1) % N == 0, 0: every layer slides, absent: 6.
# One file written with N = 6, then its u32 value (type, value after the key
# string) rewritten in place: setkey FILE TYPE VALUE-BYTES-HEX
setkey() {
	/usr/bin/python3 - "$@" <<'PY'
import struct, sys
path, typ, val = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
key = b"gemma3.attention.sliding_window_pattern"
with open(path, "r+b") as f:
    head = f.read(1 << 20)
    i = head.find(key)
    if i < 0:
        sys.exit("setkey: key not found")
    f.seek(i + len(key))
    f.write(struct.pack("<I", typ) + val)
PY
}
u32() { /usr/bin/python3 -c "import struct,sys; print(struct.pack('<I', int(sys.argv[1])).hex())" "$1"; }
SP=$TMP/gemma3-pat.gguf
"$EGANG" synth gemma3-270m --vocab 4096 --layers 6 --sliding-window 8 --sliding-window-pattern 6 --type q4_0 --seed 5 -o $SP -q
ok=1 why=""
for pw in "0 none" "1 0,1,2,3,4,5" "3 2,5" "4 3" "6 5" "7 none"; do
	read -r n want <<<"$pw"
	setkey $SP 4 "$(u32 $n)"
	got=$("$EGANG" info $SP 2>&1 | sed -n 's/.*global layers: \(.*\))$/\1/p')
	[[ $got == "$want" ]] || { ok=0; why="$why pattern $n: global '$got', want '$want';"; }
	gen -m $SP -t 0 -n 16 -p "$PROMPT" --logits-hash $TMP/p$n.hash >/dev/null
done
if ((ok)); then pass "gemma3: sliding_window_pattern 0/1/3/4/6/7 give llama.cpp's global layers"
else fail "gemma3: sliding_window_pattern 0/1/3/4/6/7 give llama.cpp's global layers" "$why"; fi
# the pattern is in effect: 6 written = the key absent (gemma3.gguf above,
# same weights); 4 moves the global layer and 0 removes it
if [[ -s $TMP/p6.hash ]] && cmp -s $TMP/p6.hash $TMP/w8.hash && ! cmp -s $TMP/p4.hash $TMP/p6.hash &&
	! cmp -s $TMP/p0.hash $TMP/p6.hash; then pass "gemma3: pattern 6 = no key; 4 and 0 change the logits"
else fail "gemma3: pattern 6 = no key; 4 and 0 change the logits"; fi
# bad values: a negative int32, a float
setkey $SP 5 ffffffff
expect_exit "gemma3: sliding_window_pattern -1" 2 "key 'gemma3.attention.sliding_window_pattern' = -1 is out of range" \
	"$EGANG" info $SP
setkey $SP 6 "$(/usr/bin/python3 -c "import struct; print(struct.pack('<f', 6.0).hex())")"
expect_exit "gemma3: sliding_window_pattern as a float" 2 "key 'gemma3.attention.sliding_window_pattern' is not an integer" \
	"$EGANG" info $SP
rm -f $SP
expect_exit "synth --sliding-window-pattern on a shape without a window" 2 "has no sliding-window layers" \
	"$EGANG" synth phi3-mini --sliding-window-pattern 3 -o $TMP/x.gguf
expect_exit "synth --sliding-window-pattern -1" 2 "sliding-window-pattern: -1 is out of range" \
	"$EGANG" synth gemma3-270m --sliding-window-pattern -1 -o $TMP/x.gguf

# Malformed files: one string of the header changed in place (same length)
# and back. patch FILE OLD NEW: the first OLD in the first 16 MiB -> NEW.
patch() {
	/usr/bin/python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
assert len(old) == len(new)
with open(path, "r+b") as f:
    head = f.read(16 << 20)
    i = head.find(old)
    if i < 0:
        sys.exit("patch: %r not found" % old)
    f.seek(i)
    f.write(new)
PY
}
# malformed NAME FILE OLD NEW REGEX: the patched file fails with REGEX
malformed() {
	local name=$1 f=$2 old=$3 new=$4 re=$5
	patch "$f" "$old" "$new" || { fail "$name" "cannot patch"; return; }
	expect_exit "$name" 2 "$re" "$EGANG" info "$f"
	patch "$f" "$new" "$old"
}
G=$TMP/gemma3.gguf P=$TMP/phi3.gguf Q=$TMP/qwen3.gguf
# general.architecture is the first key, its value the first "gemma3"
malformed "unknown architecture" $G gemma3 gemmaX "general.architecture 'gemmaX' is not supported"
malformed "gemma3 without embedding_length" $G "gemma3.embedding_length" "gemma3.embedding_lengtX" \
	"required key 'gemma3.embedding_length' is missing"
malformed "gemma3 without attn_q_norm" $G "blk.0.attn_q_norm.weight" "blk.0.attn_q_norX.weight" \
	"required tensor 'blk.0.attn_q_norm.weight' is missing"
malformed "gemma3 without post_ffw_norm" $G "blk.3.post_ffw_norm.weight" "blk.3.post_ffw_norX.weight" \
	"required tensor 'blk.3.post_ffw_norm.weight' is missing"
# without key_length the head width is dim / heads (160), not value_length
malformed "gemma3 without key_length" $G "gemma3.attention.key_length" \
	"gemma3.attention.key_lengtX" "key 'gemma3.attention.value_length' = 256 differs from key_length 160"
malformed "qwen3 without attn_k_norm" $Q "blk.1.attn_k_norm.weight" "blk.1.attn_k_norX.weight" \
	"required tensor 'blk.1.attn_k_norm.weight' is missing"
malformed "phi3 without ffn_up" $P "blk.0.ffn_up.weight" "blk.0.ffn_uX.weight" \
	"required tensor 'blk.0.ffn_up.weight' is missing"
# without attn_qkv, phi3 reads attn_q, attn_k and attn_v (llama.cpp's rule)
malformed "phi3 without attn_qkv nor attn_q" $P "blk.0.attn_qkv.weight" "blk.0.attn_qkX.weight" \
	"required tensor 'blk.0.attn_q.weight' is missing"
