#!/usr/bin/env bash
# make test-large: every shape in full (all layers) in q8_0, q4_0 and the
# q4_k_m mix, every type with one layer, each loaded and decoding; bit-exact
# logits across gang memberships (1 core, all cores, random:, flip:) on the
# full smollm-135m q8_0 and on every full q4_k_m shape. Needs ~8 GB of /tmp: one
# model at a time, the largest being llama2-7b q8_0 (~7.2 GB).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh
EGANG_LARGE=1 bash tests/cli_synth.sh
for shape in stories260k smollm-135m smollm2-360m qwen2.5-0.5b tinyllama-1.1b llama2-7b; do
	for type in q8_0 q4_0 q4_k_m; do
		f=$TMP/$shape-$type.gguf
		"$EGANG" synth $shape --type $type --seed 1 -o $f -q
		out=$("$EGANG" generate -m $f -n 8 -p "Hello world" -t 0 2>$TMP/err); rc=$?
		if [[ $rc -eq 0 && -n $out ]]; then pass "full $shape $type decodes ($(grep -o 'decode: .*tok/s' $TMP/err))"
		else fail "full $shape $type decodes" "$(cat $TMP/err)"; fi
		if [[ $shape == smollm-135m && $type == q8_0 ]]; then
			"$EGANG" generate -m $f -n 200 -t 0 -q --cores 0 --logits-hash $TMP/a >/dev/null
			"$EGANG" generate -m $f -n 200 -t 0 -q --membership random:5 --logits-hash $TMP/b >/dev/null
			check "full smollm-135m q8_0 bit-exact under random membership" cmp $TMP/a $TMP/b
		fi
		if [[ $type == q4_k_m ]]; then
			"$EGANG" generate -m $f -n 64 -t 0 -q --cores 0 --logits-hash $TMP/a >/dev/null
			"$EGANG" generate -m $f -n 64 -t 0 -q --logits-hash $TMP/b >/dev/null
			"$EGANG" generate -m $f -n 64 -t 0 -q --membership random:5 --logits-hash $TMP/c >/dev/null
			"$EGANG" generate -m $f -n 64 -t 0 -q --membership flip:1 --logits-hash $TMP/d >/dev/null
			[[ -s $TMP/a ]] && cmp -s $TMP/a $TMP/b && cmp -s $TMP/a $TMP/c && cmp -s $TMP/a $TMP/d
			check "full $shape q4_k_m bit-exact: 1 core, all cores, random:, flip:" test $? -eq 0
		fi
		rm -f $f
	done
done
