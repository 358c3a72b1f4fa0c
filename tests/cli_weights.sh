#!/usr/bin/env bash
# Weights in huge pages (EGANG_WEIGHTS, src/model/model.h): the copy gives
# the same logits, bit for bit, as reading through the file mapping, for
# GGUF and llama2.c files; a bad value is reported and ignored.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# 2 layers of smollm-135m in q8_0: ~33 MB, above auto's 16 MiB threshold
"$EGANG" synth smollm-135m --type q8_0 --layers 2 --seed 3 -o $TMP/s.gguf -q
for w in map huge auto; do
	EGANG_WEIGHTS=$w "$EGANG" generate -m $TMP/s.gguf -p "Hello" -n 12 -t 0 \
		--logits-hash $TMP/h.$w >/dev/null 2>$TMP/err.$w
done
if grep -Eq "s.gguf: [0-9.]+ MB of weights copied into huge pages" $TMP/err.huge; then
	pass "EGANG_WEIGHTS=huge copies the weights"
else fail "EGANG_WEIGHTS=huge copies the weights" "$(cat $TMP/err.huge)"; fi
check "huge-page weights: same logits as the mapping (synthetic q8_0)" cmp $TMP/h.map $TMP/h.huge
check "auto weights: same logits as the mapping (synthetic q8_0)" cmp $TMP/h.map $TMP/h.auto
EGANG_WEIGHTS=bogus "$EGANG" generate -m $TMP/s.gguf -p "Hello" -n 2 -t 0 -q >/dev/null 2>$TMP/bad
if [[ $? -eq 0 ]] && grep -q "EGANG_WEIGHTS=bogus: not map, huge or auto" $TMP/bad; then
	pass "EGANG_WEIGHTS=bogus is reported and ignored"
else fail "EGANG_WEIGHTS=bogus is reported and ignored" "$(cat $TMP/bad)"; fi

if have_repo_models "huge-page weights on stories260K"; then
	M=$REPO_MODELS
	for w in map huge; do
		EGANG_WEIGHTS=$w "$EGANG" generate -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 64 \
			-p "Once upon a time" --logits-hash $TMP/l.$w -q >/dev/null
	done
	check "huge-page weights: same logits, llama2.c checkpoint" cmp $TMP/l.map $TMP/l.huge
fi
