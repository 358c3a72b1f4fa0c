#!/usr/bin/env bash
# The gang's bit-exact contract on the real models: for each chat prompt of
# tests/data/chat-prompts.json, greedy generation under five membership
# schedules (one core serially, all cores fixed, a random mask before every
# token, another thread flipping random slots every millisecond, a mask
# file alternating between the first core and all), and every generated
# token's logits hash compared with the serial run's. Prints one row per
# model, prompt and schedule, and a summary line; exits 1 on any difference.
set -eu
usage() {
	cat <<EOF
usage: tools/membership-check.sh [options]

  --models LIST   comma-separated names of tools/models.sh (default
                  smollm2-135m-instruct,gemma3-270m)
  --prompts N     the first N prompts of tests/data/chat-prompts.json
                  (default 20)
  -n N            tokens per generation (default 64)
  --kv-type T     f16 (default), f32 or q8_0
  --out FILE      also write the rows to FILE
  -q, --quiet     only the summary line
  -h, --help      this text
Needs ./egang (make) and the models (tools/models.sh NAME installs one).
EOF
}
cd "$(dirname "$0")/.."
cmdline="tools/membership-check.sh $*"
models=smollm2-135m-instruct,gemma3-270m n_prompts=20 n=64 kv=f16 out= quiet=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--models) models=${2:?--models needs a value}; shift ;;
	--prompts) n_prompts=${2:?--prompts needs a value}; shift ;;
	-n) n=${2:?-n needs a value}; shift ;;
	--kv-type) kv=${2:?--kv-type needs a value}; shift ;;
	--out) out=${2:?--out needs a value}; shift ;;
	-q|--quiet) quiet=1 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "membership-check: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[[ $n_prompts =~ ^[0-9]+$ && $n =~ ^[0-9]+$ ]] ||
	{ echo "membership-check: --prompts and -n take whole numbers" >&2; exit 2; }
EGANG=./egang
[[ -x $EGANG ]] || { echo "membership-check: ./egang is missing: run make" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ncpu=$(nproc)
all=$(( (1 << ncpu) - 1 ))
# alternating: the first core, then all of them
for ((i = 0; i < n; i++)); do ((i % 2)) && echo $all || echo 1; done >"$TMP/masks"
schedules=("cores-all:" "random:7:--membership random:7" "flip-1ms:--membership flip:1"
	"file-alternating:--membership file:$TMP/masks")
row() { ((quiet)) || echo "$1"; [[ -z $out ]] || echo "$1" >>"$out"; }
[[ -z $out ]] || : >"$out"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
fam=$(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
mod=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|avx512f|avx512_vnni|amx_int8' | tr '\n' ' ')
row "# $cmdline"
row "# $cpu (family $fam model $mod; $flags), $ncpu CPUs, kv $kv, $n tokens, greedy"
row "# model prompt schedule tokens identical-to-serial"
runs=0 bad=0
IFS=, read -ra names <<<"$models"
for name in "${names[@]}"; do
	path=$(tools/models.sh --path "$name") && [[ -f $path ]] ||
		{ echo "membership-check: model $name is not installed (tools/models.sh $name)" >&2; exit 2; }
	# Gemma 3 270M's package is the pretrained model: no template in its GGUF
	tmpl=()
	[[ $name == gemma3-* ]] && tmpl=(--chat-template gemma3)
	for ((p = 0; p < n_prompts; p++)); do
		text=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open("tests/data/chat-prompts.json"))[int(sys.argv[1])]["user"])' "$p") ||
			break
		gen() { $EGANG generate -m "$path" --chat "${tmpl[@]}" -p "$text" --no-echo -n "$n" -t 0 -q \
			--kv-type "$kv" "$@" >/dev/null; }
		gen --cores 0 --logits-hash "$TMP/serial.hash"
		for s in "${schedules[@]}"; do
			label=${s%%:*} flags=${s#*:}
			[[ $label == random ]] && { label=random-7; flags=${flags#7:}; }
			# shellcheck disable=SC2086
			gen $flags --logits-hash "$TMP/s.hash"
			k=$(wc -l <"$TMP/serial.hash")
			runs=$((runs + 1))
			if cmp -s "$TMP/serial.hash" "$TMP/s.hash"; then same=yes; else same=NO; bad=$((bad + 1)); fi
			row "$name $p $label $k $same"
		done
	done
done
echo "membership-check: $((runs - bad)) of $runs runs bit-identical to serial ($models, kv $kv)"
[[ $bad -eq 0 ]]
