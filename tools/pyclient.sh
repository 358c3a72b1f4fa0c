#!/usr/bin/env bash
# tools/pyclient.sh: the `openai` Python client in a virtual environment
# of the egang cache, for the tests that drive `egang serve` with it
# (tests/cli_openai.sh). See usage() below.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
REQ=$ROOT/tools/pyclient.requirements.txt
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
VENV=$CACHE/venv-openai
# holds the sha256 of the requirements file the venv was built from;
# written last, so a venv without it (an install cut short) is rebuilt
STAMP=$VENV/.egang-requirements.sha256

usage() {
	cat <<EOF
usage: tools/pyclient.sh [--check]

Creates $VENV with Debian's /usr/bin/python3 -m venv
(installing the python3-venv package when it is missing) and installs the
pinned \`openai\` client and its dependencies into it from
tools/pyclient.requirements.txt: exact versions, each wheel checked
against its sha256 (pip --require-hashes --no-deps). Prints the venv's
python on stdout. Does nothing when the venv was built from the same
requirements file (a stamp holds its sha256); a changed pin rebuilds it.
Needs PyPI the first time; never run by the default build.

  --check     install nothing: print the venv's python and exit 0 when it
              is there and current, else say why on stderr and exit 1
  -h, --help  this text
EOF
}

# pyclient_die MSG...: one line on stderr, exit 1
pyclient_die() {
	echo "pyclient.sh: $*" >&2
	exit 1
}

# pyclient_is_current: true when the venv's stamp names the requirements
# file as it is now and its python runs
pyclient_is_current() {
	[[ -f $STAMP && -x $VENV/bin/python ]] &&
		[[ $(cat "$STAMP") == "$(sha256sum "$REQ" | cut -d' ' -f1)" ]]
}

# pyclient_need_venv_pkg: installs Debian's python3-venv when missing
# (as tools/deps.sh does for the build's packages)
pyclient_need_venv_pkg() {
	dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed" &&
		return 0
	echo "pyclient.sh: installing the missing package python3-venv" >&2
	local sudo=""
	[[ $(id -u) -ne 0 ]] && sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >&2
	$sudo apt-get install -y -qq --no-install-recommends python3-venv >&2
}

# pyclient_build: a fresh venv at $VENV with the pinned wheels, checked
# (pip check, the openai module imports), then the stamp
pyclient_build() {
	local sum
	sum=$(sha256sum "$REQ" | cut -d' ' -f1)
	rm -rf "$VENV"
	/usr/bin/python3 -m venv "$VENV" >&2 ||
		pyclient_die "/usr/bin/python3 -m venv $VENV failed"
	"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input \
		--require-hashes --no-deps --only-binary=:all: -r "$REQ" >&2 ||
		pyclient_die "pip could not install $REQ into $VENV"
	local problems
	problems=$("$VENV/bin/python" -m pip check --disable-pip-version-check 2>&1) ||
		pyclient_die "$VENV: pip check: $(head -1 <<<"$problems")"
	"$VENV/bin/python" -c 'import openai' ||
		pyclient_die "$VENV: the openai module does not import"
	echo "$sum" >"$STAMP"
}

check=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--check) check=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "pyclient.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[[ -r $REQ ]] || pyclient_die "cannot read $REQ"

if ((check)); then
	pyclient_is_current ||
		pyclient_die "$VENV is missing or was built from another $REQ (run tools/pyclient.sh)"
	echo "$VENV/bin/python"
	exit 0
fi

mkdir -p "$CACHE"
# one install at a time: a second caller waits, then finds it current
exec 9>"$CACHE/venv-openai.lock"
flock 9
if ! pyclient_is_current; then
	pyclient_need_venv_pkg
	pyclient_build
fi
echo "$VENV/bin/python"
