#!/usr/bin/env bash
# Regenerates the figures in README.md on this machine (run it on a quiet
# machine: the numbers are medians over repetitions, but other load still
# shows). Usage: tools/figures.sh [decode|membw|protocol|gang|coschedule|switching|llamacpp|all]
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
if [[ $what == membw || $what == all ]]; then
	# decode's effective bandwidth against `bench membw`, alternated round by
	# round (the host's memory speed drifts by 2x within minutes here, so
	# only a ratio taken in one round means anything): tinyllama-1.1b q8_0
	# on all cores, the issue's 80% figure
	f=$(model tinyllama-1.1b q8_0)
	r=()
	for ((i = 1; i <= 5; i++)); do
		bw=$($EGANG bench membw --reps 3 --json -q | tail -1 |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["gb_s"]["median"])')
		dec=$($EGANG bench decode -m "$f" --tokens 32 --reps 3 -q |
			sed -n 's/.* GB\/s \([0-9.]*\) .*/\1/p')
		r+=("$(awk -v d="$dec" -v b="$bw" 'BEGIN {printf "%.3f", d / b}')")
		echo "round $i: membw (all cores) $bw GB/s, decode $dec GB/s, ratio ${r[-1]}"
	done
	printf '%s\n' "${r[@]}" | sort -g | awk '{a[NR]=$1} END {
		printf "decode / membw, tinyllama-1.1b q8_0, all cores: min/median/max %.2f/%.2f/%.2f\n", a[1], a[3], a[5]}'
fi
if [[ $what == llamacpp || $what == all ]]; then
	mkdir -p doc/llamacpp doc/llamacpp-busy
	bench/compare-llamacpp --reps 3 --out doc/llamacpp | tee doc/llamacpp/tables.txt
	bench/compare-llamacpp --busy --reps 3 --models stories260K,smollm-135m-q8_0,tinyllama-1.1b-q8_0 \
		--timeout 180 --out doc/llamacpp-busy | tee doc/llamacpp-busy/tables.txt
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
