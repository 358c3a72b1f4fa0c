#!/bin/bash
# 16-token batch steps, base against new, 5 alternated rounds on two
# cores: usage width16.sh BASE_EGANG NEW_EGANG > width16.txt
cd "$(dirname "$0")/../../.."
A=$1 B=$2 M=~/.cache/egang/models
date -u
for r in 1 2 3 4 5; do
	for e in "$A" "$B"; do
		for m in tinyllama-1.1b-q8_0 smollm-135m-q8_0; do
			echo "round $r $e $m"
			$e bench width -m $M/$m.gguf --cores 0-1 --tokens 64 --reps 3 --batch 16 2>&1 |
				grep '^batch  16 width  2'
		done
	done
done
$B bench membw --cores 0-1 --quiet
date -u
