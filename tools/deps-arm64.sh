#!/usr/bin/env bash
# Installs what `make test-arm64` needs (README "ARM64"): Debian 12's aarch64
# cross compiler, qemu-user, and the arm64 builds of egang's libraries.
# Only the arm64 tier runs this; the ordinary build never does.
# Runs as root (or with sudo); prints nothing when all are there.
set -eu
pkgs=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
      libcmocka-dev:arm64 libhwloc-dev:arm64 libjansson-dev:arm64
      libmicrohttpd-dev:arm64 libpcre2-dev:arm64 libcurl4-openssl-dev:arm64)
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "egang: installing missing arm64 packages: ${missing[*]}" >&2
dpkg --print-foreign-architectures | grep -qx arm64 ||
	$sudo dpkg --add-architecture arm64
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
