#!/usr/bin/env bash
# egang synth: every named shape, every tensor type, loads and generates;
# the same seed gives the same file, another seed another one.
# (Layer counts are cut to 1 and the float types of the shapes with big
# embeddings are left to `make test-large`, to keep the suite short: the
# shape of every tensor is the real one. EGANG_LARGE=1 does them all.)
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

for shape in stories260k smollm-135m smollm2-360m qwen2.5-0.5b tinyllama-1.1b llama2-7b; do
	types="f32 f16 bf16 q8_0 q4_0"
	case $shape in stories260k|smollm-135m) ;; *) [[ -z ${EGANG_LARGE:-} ]] && types="q8_0 q4_0";; esac
	for type in $types; do
		synth_generates $shape $type 4
	done
done

"$EGANG" synth smollm-135m --layers 2 --type q8_0 --seed 5 -o $TMP/a.gguf -q
"$EGANG" synth smollm-135m --layers 2 --type q8_0 --seed 5 -o $TMP/b.gguf -q
"$EGANG" synth smollm-135m --layers 2 --type q8_0 --seed 6 -o $TMP/c.gguf -q
check "synth is deterministic from its seed" cmp $TMP/a.gguf $TMP/b.gguf
if cmp -s $TMP/a.gguf $TMP/c.gguf; then fail "another seed gives other weights"; else pass "another seed gives other weights"; fi
"$EGANG" info $TMP/a.gguf >$TMP/info
if grep -q "bytes/token" $TMP/info && grep -q "blk.1.ffn_down.weight" $TMP/info; then pass "info describes a synthetic model"
else fail "info describes a synthetic model"; fi
# a write into a missing folder fails cleanly and leaves nothing behind
expect_exit "synth into a missing folder" 1 "nonexistent" "$EGANG" synth stories260k -o /nonexistent/dir/x.gguf -q

# --flat-logits: a tied classifier's logits spread (sd near 1) where the
# default's have an sd of tens; the greedy pick is the same (the scale of
# the final norm does not reorder the logits)
sd() { /usr/bin/python3 -c 'import struct,sys,statistics as s; b=open(sys.argv[1],"rb").read(); v=struct.unpack("<%df" % (len(b)//4), b); print(round(s.pstdev([x for x in v if x != 0.0]), 2))' "$1"; }
"$EGANG" synth smollm-135m --layers 2 --type q8_0 --seed 5 --flat-logits -o $TMP/flat.gguf -q
for f in a flat; do
	"$EGANG" generate -m $TMP/$f.gguf --prompt-ids 1,500,900 -n 1 -t 0 -q --no-echo \
		--logits-dump $TMP/$f.dump --ids $TMP/$f.ids >/dev/null 2>&1
done
s_a=$(sd $TMP/a.dump) s_f=$(sd $TMP/flat.dump)
if awk -v a="$s_a" -v f="$s_f" 'BEGIN { exit !(f > 0.3 && f < 3 && a > 8) }' &&
	cmp -s <(sed -n 's/^sequence_ids: //p' $TMP/a.ids) <(sed -n 's/^sequence_ids: //p' $TMP/flat.ids); then
	pass "synth --flat-logits: logit sd $s_f (default $s_a), the same greedy pick"
else fail "synth --flat-logits: logit sd $s_f (default $s_a)"; fi

# --vocab: a smaller vocabulary (the tests' small models); info reports it,
# the model generates; a vocabulary without room for the bytes and
# specials, and --vocab with --tokenizer, are refused
"$EGANG" synth smollm-135m --layers 1 --vocab 1024 --type q8_0 -o $TMP/v.gguf -q
if "$EGANG" info $TMP/v.gguf | grep -q '^vocab 1024,' &&
	[[ -n $("$EGANG" generate -m $TMP/v.gguf -p "Hello" -n 4 -t 0 -q 2>/dev/null) ]]; then
	pass "synth --vocab 1024: info reports it, it generates"
else fail "synth --vocab 1024: info reports it, it generates"; fi
expect_exit "synth --vocab 258 is refused" 2 "--vocab: 258 is out of range" \
	"$EGANG" synth smollm-135m --vocab 258 -o $TMP/x.gguf -q
expect_exit "synth --vocab with --tokenizer is refused" 2 "--vocab: the vocabulary follows --tokenizer" \
	"$EGANG" synth smollm-135m --vocab 1024 --tokenizer $TMP/none.json -o $TMP/x.gguf -q
