#!/usr/bin/env bash
# TTFT with ~256-token prompts against one `egang serve --parallel 16`:
# 1 stream, then 8 streams started at once (a burst of 8 first requests)
# and 8 streams started over RAMP seconds (`bench serve --ramp`), in
# alternation, REPS rounds. Appends "streams ramp rep loadavg | bench serve
# ..." lines to OUT/raw.txt.
# usage: tools/figures/serve-batch/ttft-ramp/run.sh EGANG MODEL OUT [REPS] [SECONDS] [RAMP]
set -u
EGANG=$1 MODEL=$2 OUT=$3 REPS=${4:-2} SECS=${5:-40} RAMP=${6:-8}
mkdir -p "$OUT"
PROMPT=$(for i in $(seq 1 36); do printf 'the cat %d ' $i; done) # ~256 tokens
port=18390
"$EGANG" serve -m "$MODEL" --port $port --cores 0-1 --ctx 1024 --parallel 16 --max-queue 64 -q &
SPID=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.3; done
for r in $(seq 1 "$REPS"); do
	for cfg in "1 0" "8 0" "8 $RAMP"; do
		set -- $cfg
		line=$("$EGANG" bench serve --url "http://127.0.0.1:$port" --clients "$1" --ramp "$2" \
			--seconds "$SECS" --max-tokens 32 --prompt "$PROMPT" --vary \
			--request-timeout 600 2>&1 | tail -1)
		echo "streams=$1 ramp=$2 rep=$r loadavg=$(cut -d' ' -f1 /proc/loadavg) | $line" | tee -a "$OUT/raw.txt"
	done
done
kill -TERM $SPID; wait $SPID
