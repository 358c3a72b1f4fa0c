#!/usr/bin/env bash
# Installs what `make test-arm64` needs (README "ARM64"): Debian 12's aarch64
# cross compiler, qemu-user, and the arm64 builds of egang's libraries.
# Only the arm64 tier runs this; the ordinary build never does.
# Runs as root (or with sudo); prints nothing when all are there.
set -eu
pkgs=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
      libcmocka-dev:arm64 libhwloc-dev:arm64 libjansson-dev:arm64
      libmicrohttpd-dev:arm64 libpcre2-dev:arm64 libcurl4-openssl-dev:arm64)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "egang: adding the arm64 architecture to dpkg" >&2
	sudo=""
	[[ $(id -u) -ne 0 ]] && sudo="sudo"
	$sudo dpkg --add-architecture arm64
fi
exec "$(dirname "$0")/apt-ensure.sh" --label arm64 "${pkgs[@]}"
