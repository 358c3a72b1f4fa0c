#!/bin/bash
# tools/figures/arch/dist-run.sh: the runs of doc/arch/dist-2026-12-04.txt
# (EGANG=binary, D=scratch folder; the untied files are
# tools/llamacpp/compare-llamacpp --check --models archs' cache)
E=${EGANG:-$PWD/egang}
D=${D:-/tmp/flatm}; mkdir -p $D
cd "$(dirname "$0")/../../.."
for sh in llama3.2-1b qwen3-0.6b gemma3-270m gemma3-1b; do
  l=2; [[ $sh == gemma3* ]] && l=6
  for ty in f16 q8_0 q4_k_m; do
    f=$D/$sh-$ty-l$l-flat.gguf
    [[ -f $f ]] || $E synth $sh --layers $l --type $ty --flat-logits -o $f -q
    EGANG=$E tools/figures/arch/dist-check.sh $f
  done
done
# untied shapes (their classifier's logits already spread)
for sh in phi3-mini mistral-7b; do EGANG=$E tools/figures/arch/dist-check.sh ${EGANG_CACHE:-$HOME/.cache/egang}/models/$sh-f16-l2.gguf; done
# control: llama.cpp reads gemma3-270m with sliding-window pattern 3, egang the default (6)
$E synth gemma3-270m --layers 6 --type f16 --flat-logits --sliding-window 8 -o $D/g-w8.gguf -q
$E synth gemma3-270m --layers 6 --type f16 --flat-logits --sliding-window 8 --sliding-window-pattern 3 -o $D/g-w8-p3.gguf -q
echo "# control: egang gemma3-270m-f16-l6 window 8 pattern 6, llama.cpp the same with pattern 3"
EGANG=$E tools/figures/arch/dist-check.sh $D/g-w8.gguf $D/g-w8-p3.gguf
echo "# the same file for both"
EGANG=$E tools/figures/arch/dist-check.sh $D/g-w8.gguf
