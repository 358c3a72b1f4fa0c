#!/usr/bin/env bash
# The main demo (`make demo`): text generated on the elastic gang, with the
# gang's membership changing at random before every token, and the proof
# that the output is the same bits as a serial run.
set -eu
cd "$(dirname "$0")/.."
EGANG=./egang
M=models
OUT=build/demo
mkdir -p $OUT
# models/ is part of the repository (models/README.md): a real llama2.c
# checkpoint and its tokenizer, so every clone tells a real story
echo "== model: stories260K (Karpathy's tinyllamas, a real llama2.c checkpoint in $M/)"
model=(-m $M/stories260K.bin -z $M/tok512.bin)
echo "== generate: greedy, all cores, random gang membership before every token"
$EGANG generate "${model[@]}" -p "Once upon a time" -n 120 -t 0 \
	--membership random:1 --trace $OUT/trace.txt --logits-hash $OUT/elastic.hash
echo "== the same on one core, serially"
$EGANG generate "${model[@]}" -p "Once upon a time" -n 120 -t 0 --cores 0 -q \
	--logits-hash $OUT/serial.hash >/dev/null
if cmp -s $OUT/elastic.hash $OUT/serial.hash; then
	echo "== logits of all $(wc -l <$OUT/serial.hash) generated tokens: bit-identical"
else
	echo "== logits differ: this is a bug" >&2
	exit 1
fi
echo "== first tokens of the membership trace ($OUT/trace.txt: token, participant mask, us)"
head -8 $OUT/trace.txt | sed 's/^/   /'
