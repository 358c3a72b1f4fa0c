#!/usr/bin/env bash
# Regenerates the main figures of doc/measurements.md (the headline ones
# in README.md) on this machine and keeps their raw data under doc/: every
# target writes doc/<target>.txt (or a folder), whose first lines name the
# date, the commit and the exact commands. Run it on a quiet machine: the
# numbers are medians over repetitions, but other load still shows. The
# figures of one topic each (doc/<topic>/) have their scripts in
# tools/figures/<topic>/.
#
# Usage: tools/figures.sh TARGET...   (default: every quick target)
#   protocol    bench protocol (latch, barrier, return, acquire)  ~1 min
#   gang        bench width + bench overhead (smollm-135m q8_0)   ~2 min
#   switch      bench switch (index write, write to in force)     ~10 s
#   membw       five rounds of bench membw / bench decode          ~3 min
#   serve       serve stories260K + bench serve, 32 clients, 30 s ~40 s
#   verify      make verify-long: the model's state counts        ~10 min
#   coschedule  bench coschedule (CSV + PNG)                      ~5 min
#   switching   bench switching (CSV + PNG + summary)             ~5 min
#   llamacpp    tools/llamacpp/compare-llamacpp, quiet and busy   ~25 min
# Models are made with `egang synth` into build/models (about 700 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
EGANG=./egang
[[ -x $EGANG ]] || make -s egang
mkdir -p build/models doc
models=models # the in-repo stories260K
model() { # model SHAPE TYPE -> path
	local f=build/models/$1-$2.gguf
	[[ -s $f ]] || $EGANG synth "$1" --type "$2" --seed 1 -o "$f" -q
	echo "$f"
}
# header FILE COMMAND...: starts FILE with the date, commit and command
header() {
	local f=$1; shift
	{
		echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo '+changes'), $(nproc) CPUs"
		echo "# command: $*"
	} > "$f"
}
# run FILE COMMAND...: header, then the command's stdout and stderr appended
run() {
	local f=$1; shift
	header "$f" "$@"
	"$@" 2>&1 | tee -a "$f"
}

fig_protocol() { run doc/protocol.txt $EGANG bench protocol --reps 3000; }

fig_gang() {
	local m; m=$(model smollm-135m q8_0)
	run doc/gang-width.txt $EGANG bench width -m "$m" --tokens 64 --reps 5
	run doc/gang-overhead.txt $EGANG bench overhead -m "$m" --tokens 64 --reps 9
}

fig_switch() { run doc/switch.txt $EGANG bench switch; }

# decode's effective bandwidth against `bench membw`, alternated round by
# round: the host's memory speed drifts by 2x within minutes here, so only
# a ratio taken in one round means anything (tinyllama-1.1b q8_0 on all
# cores)
fig_membw() {
	local f m bw dec r=()
	f=doc/membw.txt
	m=$(model tinyllama-1.1b q8_0)
	header $f "5 rounds of: $EGANG bench membw --reps 3 --json -q; $EGANG bench decode -m $m --tokens 32 --reps 3 -q"
	for ((i = 1; i <= 5; i++)); do
		bw=$($EGANG bench membw --reps 3 --json -q | tail -1 |
			/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gb_s"]["median"])')
		dec=$($EGANG bench decode -m "$m" --tokens 32 --reps 3 -q |
			sed -n 's/.* GB\/s \([0-9.]*\) .*/\1/p')
		r+=("$(awk -v d="$dec" -v b="$bw" 'BEGIN {printf "%.3f", d / b}')")
		echo "round $i: membw (all cores) $bw GB/s, decode $dec GB/s, ratio ${r[-1]}" | tee -a $f
	done
	printf '%s\n' "${r[@]}" | sort -g | awk '{a[NR]=$1} END {
		printf "decode / membw, tinyllama-1.1b q8_0, all cores: min/median/max %.2f/%.2f/%.2f\n", a[1], a[3], a[5]}' | tee -a $f
}

fig_serve() {
	local f=doc/serve.txt port=18431 pid
	header $f "$EGANG serve -m stories260K --port $port -q & $EGANG bench serve --url http://127.0.0.1:$port --clients 32 --seconds 30"
	$EGANG serve -m $models/stories260K.bin -z $models/tok512.bin --port $port -q &
	pid=$!
	for _ in $(seq 50); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
	$EGANG bench serve --url http://127.0.0.1:$port --clients 32 --seconds 30 2>&1 | tee -a $f
	kill $pid; wait $pid || true
}

fig_verify() { run doc/verify.txt make --no-print-directory verify-long; }

fig_coschedule() {
	local m; m=$(model smollm-135m q8_0)
	run doc/coschedule.txt $EGANG bench coschedule -m "$m" --seconds 6 --out build/coschedule
	cp build/coschedule/coschedule.png build/coschedule/coschedule.csv doc/
}

fig_switching() {
	run doc/switching.txt $EGANG bench switching -m $models/stories260K.bin \
		-z $models/tok512.bin --out build/switching
	cp build/switching/switching.png build/switching/switching.csv doc/
}

fig_llamacpp() {
	mkdir -p doc/llamacpp doc/llamacpp-busy
	tools/llamacpp/compare-llamacpp --reps 3 --out doc/llamacpp | tee doc/llamacpp/tables.txt
	tools/llamacpp/compare-llamacpp --busy --reps 3 --models stories260K,smollm-135m-q8_0,tinyllama-1.1b-q8_0 \
		--timeout 180 --out doc/llamacpp-busy | tee doc/llamacpp-busy/tables.txt
}

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(protocol gang switch membw serve)
for t in "${targets[@]}"; do
	case $t in
	protocol|gang|switch|membw|serve|verify|coschedule|switching|llamacpp) fig_$t ;;
	-h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "figures.sh: unknown target '$t' (see tools/figures.sh --help)" >&2; exit 2 ;;
	esac
done
