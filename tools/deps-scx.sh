#!/usr/bin/env bash
# Installs what the sched_ext backend and its QEMU test need, when missing:
# clang-19 (BPF target), libbpf-dev >= 1.4 and bpftool 7.5 from Debian's
# bookworm-backports suite (added here once), the 6.12 kernel source and
# its build tools, QEMU and a static busybox for the test guest.
# Runs as root (or with sudo); prints nothing when all are there.
set -eu
here=$(dirname "$0")
"$here/apt-ensure.sh" --label sched_ext clang-19 llvm-19 linux-source-6.12 \
	qemu-system-x86 busybox-static bison flex bc libelf-dev libssl-dev cpio \
	kmod xz-utils dwarves pkg-config
pkg-config --atleast-version=1.4 libbpf 2>/dev/null &&
	bpftool version 2>/dev/null | grep -q 'libbpf v1\.[4-9]' && exit 0
bp=/etc/apt/sources.list.d/egang-bookworm-backports.list
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "egang: adding bookworm-backports to apt sources ($bp)" >&2
	sudo=""
	[[ $(id -u) -ne 0 ]] && sudo="sudo"
	echo "deb http://deb.debian.org/debian bookworm-backports main" | $sudo tee "$bp" >/dev/null
fi
# installed from the older suite already, so apt-ensure's check would pass:
# ask for the backports versions outright
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "egang: installing sched_ext packages from bookworm-backports: libbpf-dev bpftool" >&2
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends -t bookworm-backports libbpf-dev bpftool >&2
