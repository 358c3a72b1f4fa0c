#!/usr/bin/env bash
# Installs what `make test-fleet` needs beyond tools/deps.sh, when missing:
# Debian 12's haproxy (2.6), the balancer in front of the replicas
# (tools/fleet/). Its package starts no listener of its own (Debian's
# /etc/haproxy/haproxy.cfg has no frontend); the tests run their own
# haproxy with tools/fleet/haproxy.cfg on loopback.
# Runs as root or with sudo (without a terminal, sudo must not need a
# password); prints nothing when all is there. Exit status 1, with one
# line, when it cannot install (the caller decides: make test-fleet then
# says SKIP, or fails under CI).
set -u
pkgs=(haproxy)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "egang: installing fleet packages: ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || { echo "egang: not root and no sudo: cannot install ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
	[[ -t 0 ]] || sudo=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get update -qq >&2 ||
	! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; then
	echo "egang: apt-get could not install ${missing[*]}" >&2
	exit 1
fi
