#!/usr/bin/env bash
# Regenerates the figures in README.md on this machine (run it on a quiet
# machine: the numbers are medians over repetitions, but other load still
# shows). Usage: tools/figures.sh [decode|protocol|gang|coschedule|switching|all]
# Models are made with `egang synth` into build/models (about 700 MB).
set -eu
cd "$(dirname "$0")/.."
EGANG=./egang
what=${1:-all}
mkdir -p build/models
model() { # model SHAPE TYPE -> path
	local f=build/models/$1-$2.gguf
	[[ -s $f ]] || $EGANG synth "$1" --type "$2" --seed 1 -o "$f" -q
	echo "$f"
}
# decode_stats NAME REPS ARGS...: min/median/max decode tok/s of egang generate
decode_stats() {
	local name=$1 reps=$2; shift 2
	local v=()
	for ((i = 0; i < reps; i++)); do
		v+=("$($EGANG generate "$@" 2>&1 >/dev/null | sed -n 's/.*decode: [0-9]* tokens, \([0-9.]*\) tok\/s.*/\1/p')")
	done
	printf '%s\n' "${v[@]}" | sort -g | awk -v n="$name" '{a[NR]=$1} END {
		printf "| %s | %.1f | %.1f | %.1f |\n", n, a[1], a[int((NR+1)/2)], a[NR]}'
}
if [[ $what == decode || $what == all ]]; then
	M=../shared/models
	echo "| decode, 1 core | min tok/s | median | max |"
	echo "|---|---|---|---|"
	decode_stats "smollm-135m f32" 5 -m "$(model smollm-135m f32)" -p Hello -n 64 -t 0 --cores 0
	decode_stats "smollm-135m q8_0" 5 -m "$(model smollm-135m q8_0)" -p Hello -n 64 -t 0 --cores 0
	if [[ -r $M/stories260K.bin ]]; then
		decode_stats "stories260K (llama2.c)" 5 -m $M/stories260K.bin -z $M/tok512.bin -n 256 -t 0 --cores 0
	fi
	decode_stats "smollm-135m q8_0, all cores" 5 -m "$(model smollm-135m q8_0)" -p Hello -n 64 -t 0
fi
if [[ $what == protocol || $what == all ]]; then
	$EGANG bench protocol --reps 4000
fi
if [[ $what == gang || $what == all ]]; then
	$EGANG bench width -m "$(model smollm-135m q8_0)" --tokens 64 --reps 5
	$EGANG bench overhead -m "$(model smollm-135m q8_0)" --tokens 64 --reps 9
fi
if [[ $what == coschedule || $what == all ]]; then
	$EGANG bench coschedule -m "$(model smollm-135m q8_0)" --seconds 6 --out build/coschedule
	cp build/coschedule/coschedule.png build/coschedule/coschedule.csv doc/ 2>/dev/null || true
fi
if [[ $what == switching || $what == all ]]; then
	if [[ -r ../shared/models/stories260K.gguf ]]; then
		$EGANG bench switching -m ../shared/models/stories260K.gguf --out build/switching
		cp build/switching/switching.png doc/switching.png
		cp build/switching/switching.csv doc/switching.csv
	fi
fi
