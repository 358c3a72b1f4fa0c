#!/usr/bin/env bash
# K-quants and the other added GGUF types: every type and llama-quantize
# preset synthesizes, loads and generates (smollm-135m: its ffn_down rows
# are whole super-blocks; test_kernels checks every type's dot product); a small q4_k_m model gives the
# same logits hashes on one core, all cores, random: and flip: membership
# and at every ISA level; the presets give the tensors llama-quantize's
# types; egang quantize rewrites a real model (stories260K) that then
# generates, refuses to requantize, and names bad arguments.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

for type in q4_1 q5_0 q5_1 q3_k q4_k q5_k q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k \
	iq4_nl iq4_xs; do
	synth_generates smollm-135m $type 2 --vocab 2048
done

# the q4_k_m mix on a shape with whole super-blocks (tinyllama, 8 layers):
# output q6_K, attn_v / ffn_down q6_K in layers 0, 3, 6, 7 (use_more_bits),
# the rest q4_K; info counts them per type
m=$TMP/mix.gguf
"$EGANG" synth tinyllama-1.1b --vocab 4096 --type q4_k_m --layers 8 --seed 2 -o $m -q
"$EGANG" info $m >$TMP/info
ok=1
grep -Eq "^  output.weight +q6_k" $TMP/info || ok=0
grep -Eq "^  token_embd.weight +q4_k" $TMP/info || ok=0
for l in 0 1 2 3 4 5 6 7; do
	want=q4_k; case $l in 0|3|6|7) want=q6_k;; esac
	grep -Eq "^  blk\.$l\.attn_v\.weight +$want" $TMP/info || ok=0
	grep -Eq "^  blk\.$l\.ffn_down\.weight +$want" $TMP/info || ok=0
	grep -Eq "^  blk\.$l\.attn_q\.weight +q4_k" $TMP/info || ok=0
done
# info's per-type counts: q6_K the output, 4 attn_v, 4 ffn_down; q4_K the
# other 48 matrices and token_embd
grep -Eq "^  q6_k +9 tensors .* bytes/token" $TMP/info || { ok=0; echo "# $(grep -A4 '^types:' $TMP/info)"; }
grep -Eq "^  q4_k +49 tensors" $TMP/info || ok=0
if ((ok)); then pass "q4_k_m: llama-quantize's types per tensor"; else fail "q4_k_m: llama-quantize's types per tensor" "$(grep -E 'blk\.[0-9]\.(attn_v|ffn_down)|output' $TMP/info | head -5)"; fi
# smollm's rows of 576 are not whole super-blocks: q4_K falls back to q5_0,
# the tied classifier to q8_0
"$EGANG" synth smollm-135m --vocab 4096 --type q4_k_m --layers 2 --seed 2 -o $TMP/sm.gguf -q
"$EGANG" info $TMP/sm.gguf >$TMP/info2
if grep -Eq "^  token_embd.weight +q8_0" $TMP/info2 && grep -Eq "^  blk.0.attn_q.weight +q5_0" $TMP/info2 &&
	grep -Eq "^  blk.0.ffn_down.weight +q4_k" $TMP/info2; then pass "q4_k_m falls back as llama-quantize on rows of 576"
else fail "q4_k_m falls back as llama-quantize on rows of 576"; fi

# phi3's fused attn_qkv is an attn_v to llama-quantize (category_is_attn_v):
# with 2 layers use_more_bits picks layer 1 only, so attn_qkv is q4_K in
# layer 0 and q6_K in layer 1, as ffn_down
"$EGANG" synth phi3-mini --vocab 4096 --type q4_k_m --layers 2 --seed 2 -o $TMP/phi3.gguf -q
"$EGANG" info $TMP/phi3.gguf >$TMP/info3
if grep -Eq "^  blk.0.attn_qkv.weight +q4_k" $TMP/info3 && grep -Eq "^  blk.1.attn_qkv.weight +q6_k" $TMP/info3 &&
	grep -Eq "^  blk.1.ffn_down.weight +q6_k" $TMP/info3 && grep -Eq "^  blk.1.ffn_up.weight +q4_k" $TMP/info3
then pass "q4_k_m: phi3's attn_qkv gets attn_v's rule"
else fail "q4_k_m: phi3's attn_qkv gets attn_v's rule" "$(grep -E 'attn_qkv' $TMP/info3)"; fi
rm -f $TMP/phi3.gguf

# bit-exact under membership, cores and ISA level (a q4_k_m model with
# q4_K, q6_K, q5_0 and q8_0 matrices: smollm-135m, 2 layers)
h() { "$EGANG" generate -m $TMP/sm.gguf -p "The quick brown fox" -n 12 -t 0 -q --no-echo --logits-hash "$@" >/dev/null 2>>$TMP/err; }
h $TMP/h1 --cores 0
h $TMP/hall
h $TMP/hrand --membership random:7
h $TMP/hflip --membership flip:1
EGANG_ISA=generic h $TMP/hgen --cores 0
ok=1
for x in hall hrand hflip hgen; do cmp -s $TMP/h1 $TMP/$x || { ok=0; fail "q4_k_m logits hashes: 1 core = $x"; }; done
[[ -s $TMP/h1 ]] || { ok=0; fail "q4_k_m logits hashes written"; }
((ok)) && pass "q4_k_m: the same logits hashes on 1 core, all cores, random:, flip: and the generic level"
# batched prefill against token-by-token: the same hashes
EGANG_PREFILL_BATCH=0 h $TMP/hnob --cores 0
check "q4_k_m: prefill batched or not, the same logits hashes" cmp $TMP/h1 $TMP/hnob

# IQ4_XS / IQ4_NL as llama-quantize mixes them (tinyllama, 8 layers, n_gqa
# 8): output q6_K, attn_v q5_K (n_gqa >= 4), ffn_down q5_K in layer 0 (the
# first eighth), the rest iq4_xs; smollm's rows of 576 fall back to iq4_nl.
# Then the logits hashes of an iq4_xs model (iq4_xs, iq4_nl and q8_0
# matrices) on 1 core, all cores, random:, flip: and the generic level.
"$EGANG" synth tinyllama-1.1b --vocab 4096 --type iq4_xs --layers 8 --seed 2 -o $TMP/iq.gguf -q
"$EGANG" info $TMP/iq.gguf >$TMP/iqi
ok=1
grep -Eq "^  output.weight +q6_k" $TMP/iqi || ok=0
for l in 0 1 7; do
	grep -Eq "^  blk\.$l\.attn_v\.weight +q5_k" $TMP/iqi || ok=0
	want=iq4_xs; [[ $l == 0 ]] && want=q5_k
	grep -Eq "^  blk\.$l\.ffn_down\.weight +$want" $TMP/iqi || ok=0
	grep -Eq "^  blk\.$l\.attn_q\.weight +iq4_xs" $TMP/iqi || ok=0
done
if ((ok)); then pass "iq4_xs: llama-quantize's types per tensor"; else fail "iq4_xs: llama-quantize's types per tensor" "$(grep -E 'blk\.0\.|output' $TMP/iqi | head -9)"; fi
"$EGANG" synth smollm-135m --vocab 4096 --type iq4_xs --layers 2 --seed 2 -o $TMP/smiq.gguf -q
"$EGANG" info $TMP/smiq.gguf >$TMP/smiq
if grep -Eq "^  blk.0.attn_q.weight +iq4_nl" $TMP/smiq && grep -Eq "^  blk.0.ffn_down.weight +iq4_xs" $TMP/smiq; then
	pass "iq4_xs falls back to iq4_nl on rows of 576"
else fail "iq4_xs falls back to iq4_nl on rows of 576"; fi
hi() { "$EGANG" generate -m $TMP/smiq.gguf -p "The quick brown fox" -n 12 -t 0 -q --no-echo --logits-hash "$@" >/dev/null 2>>$TMP/err; }
hi $TMP/i1 --cores 0
hi $TMP/iall
hi $TMP/irand --membership random:5
hi $TMP/iflip --membership flip:1
EGANG_ISA=generic hi $TMP/igen --cores 0
EGANG_PREFILL_BATCH=0 hi $TMP/inob --cores 0
ok=1
for x in iall irand iflip igen inob; do cmp -s $TMP/i1 $TMP/$x || { ok=0; fail "iq4_xs logits hashes: 1 core = $x"; }; done
[[ -s $TMP/i1 ]] || { ok=0; fail "iq4_xs logits hashes written"; }
((ok)) && pass "iq4_xs: the same logits hashes on 1 core, all cores, random:, flip:, the generic level and unbatched prefill"

# egang quantize on a real model
if have_models "quantize stories260K"; then
	for type in q4_k_m q5_1 q8_0; do
		if "$EGANG" quantize $MODELS/stories260K.gguf $TMP/st-$type.gguf $type -q --threads 2 2>$TMP/err &&
			out=$("$EGANG" generate -m $TMP/st-$type.gguf -p "Once upon a time" -n 20 -t 0 -q 2>>$TMP/err) &&
			[[ $out == *"Once upon a time"* && ${#out} -gt 30 ]]; then pass "quantize stories260K $type, generate"
		else fail "quantize stories260K $type, generate" "$(tail -1 $TMP/err)"; fi
	done
	# metadata copied: the same tokenizer and names
	"$EGANG" info $TMP/st-q8_0.gguf >$TMP/qi
	if grep -q "tokenizer:" $TMP/qi && grep -Eq "^  blk.0.attn_q.weight +q8_0" $TMP/qi; then pass "quantize keeps the metadata"
	else fail "quantize keeps the metadata"; fi
	expect_exit "quantize refuses a quantized input" 2 "already q8_0.*--allow-requantize" \
		"$EGANG" quantize $TMP/st-q8_0.gguf $TMP/x.gguf q4_0 -q
	check "quantize --allow-requantize" "$EGANG" quantize $TMP/st-q8_0.gguf $TMP/x.gguf q4_0 -q --allow-requantize
fi
expect_exit "quantize: unknown type" 2 "TYPE 'q7_k' is not one of" "$EGANG" quantize a.gguf b.gguf q7_k
expect_exit "quantize: missing input" 2 "nonexistent" "$EGANG" quantize /nonexistent.gguf $TMP/y.gguf q4_k_m -q
expect_exit "quantize: arguments" 2 "missing IN.gguf OUT.gguf TYPE" "$EGANG" quantize a.gguf
expect_exit "synth: unknown type" 2 "is not one of" "$EGANG" synth stories260k --type q9_k -o $TMP/z.gguf

# malformed K-quant data: a NaN scale and an infinite min in a q4_K block,
# an infinite q6_K scale, a file cut inside a K-quant tensor
corrupt() { # IN OUT TENSOR BLOCK_BYTES BLOCK FIELD_OFF VALUE
	/usr/bin/python3 - "$@" <<'PY'
import os, struct, subprocess, sys
src, dst, name, bb, blk, fo, val = sys.argv[1:8]
info = subprocess.run([os.environ["EGANG"], "info", src],
                      capture_output=True, text=True).stdout
data = int(info.split('data at ')[1].split()[0])
line = [l for l in info.splitlines() if l.split()[:1] == [name]][0]
pos = data + int(line.split('at +')[1]) + int(bb) * int(blk) + int(fo)
b = bytearray(open(src, 'rb').read())
b[pos:pos + 2] = struct.pack('<H', int(val, 16))
open(dst, 'wb').write(b)
print(pos - int(fo))
PY
}
export EGANG
off=$(corrupt $TMP/sm.gguf $TMP/nan.gguf blk.1.ffn_down.weight 210 5 208 7e00)
expect_exit "a NaN q6_K scale: tensor and offset named" 2 "tensor 'blk.1.ffn_down.weight' \(q6_k\): the block at offset $off has a NaN or infinite scale" \
	"$EGANG" generate -m $TMP/nan.gguf -n 1 -q
off=$(corrupt $TMP/sm.gguf $TMP/inf.gguf blk.0.ffn_down.weight 144 2 2 7c00)
expect_exit "an infinite q4_K min: tensor and offset named" 2 "tensor 'blk.0.ffn_down.weight' \(q4_k\): the block at offset $off has" \
	"$EGANG" generate -m $TMP/inf.gguf -n 1 -q
off=$(corrupt $TMP/smiq.gguf $TMP/iqnan.gguf blk.1.attn_q.weight 18 3 0 7e00)
expect_exit "a NaN iq4_nl scale: tensor and offset named" 2 "tensor 'blk.1.attn_q.weight' \(iq4_nl\): the block at offset $off has a NaN or infinite scale" \
	"$EGANG" generate -m $TMP/iqnan.gguf -n 1 -q
"$EGANG" info $TMP/sm.gguf >$TMP/smi
data=$(sed -n 's/.*data at \([0-9]*\).*/\1/p' $TMP/smi)
o=$(awk '$1 == "blk.1.ffn_down.weight" { sub(/^\+/, "", $NF); print $NF }' $TMP/smi)
head -c $((data + o + 1000)) $TMP/sm.gguf >$TMP/cut.gguf
expect_exit "a file cut inside a K-quant tensor: tensor and offset named" 2 \
	"tensor 'blk.1.ffn_down.weight' data at offset $data\+$o: 725760 bytes exceed" \
	"$EGANG" generate -m $TMP/cut.gguf -n 1 -q

# header edits: a tensor's type or shape changed in its tensor info
retag() { # IN OUT TENSOR [type=N] [ne0=N] [ne1=N]
	/usr/bin/python3 - "$@" <<'PY'
import struct, sys
src, dst, name = sys.argv[1:4]
ch = dict(a.split('=') for a in sys.argv[4:])
b = bytearray(open(src, 'rb').read())
off = 8
nt, nk = struct.unpack_from('<QQ', b, off); off += 16
def skip(t):
    global off
    if t == 8:
        off += 8 + struct.unpack_from('<Q', b, off)[0]
    elif t == 9:
        at, n = struct.unpack_from('<IQ', b, off); off += 12
        for _ in range(n): skip(at)
    else:
        off += {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[t]
for _ in range(nk):
    skip(8); t = struct.unpack_from('<I', b, off)[0]; off += 4; skip(t)
for _ in range(nt):
    n = struct.unpack_from('<Q', b, off)[0]; nm = b[off + 8:off + 8 + n].decode(); off += 8 + n
    nd = struct.unpack_from('<I', b, off)[0]; off += 4
    if nm == name:
        for k in range(nd):
            if f'ne{k}' in ch: struct.pack_into('<Q', b, off + 8 * k, int(ch[f'ne{k}']))
    off += 8 * nd
    if nm == name and 'type' in ch: struct.pack_into('<I', b, off, int(ch['type']))
    off += 12
open(dst, 'wb').write(b)
PY
}
# a q5_0 matrix of rows of 576 retagged q4_K (type 12): rows not whole super-blocks
retag $TMP/sm.gguf $TMP/r576.gguf blk.0.attn_q.weight type=12
expect_exit "a K-quant row of 576 (not a multiple of 256): tensor and offset named" 2 \
	"tensor 2 'blk.0.attn_q.weight' at offset [0-9]+: ne\[0\] = 576 is not a multiple of the q4_k block size 256" \
	"$EGANG" generate -m $TMP/r576.gguf -n 1 -q
# a mixed file whose layer 1 disagrees with the model's shape (the q5_0
# attn_k as [192, 576]: the same bytes, the other orientation)
retag $TMP/sm.gguf $TMP/shape.gguf blk.1.attn_k.weight ne0=192 ne1=576
expect_exit "a mixed file with an inconsistent shape: tensor named" 2 \
	"tensor 'blk.1.attn_k.weight' has shape \[192, 576\] \(2 dims\), expected \[576, 192\]" \
	"$EGANG" generate -m $TMP/shape.gguf -n 1 -q
