#!/usr/bin/env bash
# Installs the Debian 12 packages egang needs, when any is missing.
# Runs as root (or with sudo); prints nothing when all are there.
set -eu
pkgs=(gcc clang make python3 libcmocka-dev libhwloc-dev libjansson-dev
      libmicrohttpd-dev libpcre2-dev libcurl4-openssl-dev curl gnuplot-nox
      python3-jinja2 python3-pip tmux
      spin libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "egang: installing missing packages: ${missing[*]}" >&2
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
