#!/usr/bin/env bash
# apt-ensure: installs the Debian packages named that are not installed
# yet; prints nothing when all are. The deps*.sh scripts call it with their
# lists. Runs as root, or through sudo (without a terminal sudo must not
# ask for a password). Exit 0 when everything is installed afterwards, 1
# with one line when it is not (no root and no sudo, apt-get failed).
#   tools/apt-ensure.sh [--label WORDS] PKG...
# --label names the group in the messages (fleet, arm64).
set -u
label=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--label) label="${2:?--label needs a value} "; shift 2 ;;
	-h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "apt-ensure: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "egang: installing ${label}packages: ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null ||
		{ echo "egang: not root and no sudo: cannot install ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
	[[ -t 0 ]] || sudo=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get update -qq >&2 ||
	! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; then
	echo "egang: apt-get could not install ${missing[*]}" >&2
	exit 1
fi
