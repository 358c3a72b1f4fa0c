#!/usr/bin/env bash
# Installs what the sched_ext backend and its QEMU test need, when missing:
# clang-19 (BPF target), libbpf-dev >= 1.4 and bpftool 7.5 from Debian's
# bookworm-backports suite (added here once), the 6.12 kernel source and
# its build tools, QEMU and a static busybox for the test guest.
# Runs as root (or with sudo); prints nothing when all are there.
set -eu
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
bp=/etc/apt/sources.list.d/egang-bookworm-backports.list
have_bp=0
grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && have_bp=1
pkgs=(clang-19 llvm-19 linux-source-6.12 qemu-system-x86 busybox-static
      bison flex bc libelf-dev libssl-dev cpio kmod xz-utils dwarves pkg-config)
bppkgs=(libbpf-dev bpftool)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
bpmissing=0
pkg-config --atleast-version=1.4 libbpf 2>/dev/null || bpmissing=1
command -v bpftool >/dev/null && bpftool version 2>/dev/null | grep -q 'libbpf v1\.[4-9]' || bpmissing=1
[[ ${#missing[@]} -eq 0 && $bpmissing -eq 0 ]] && exit 0
if [[ $have_bp -eq 0 ]]; then
	echo "egang: adding bookworm-backports to apt sources ($bp)" >&2
	echo "deb http://deb.debian.org/debian bookworm-backports main" | $sudo tee "$bp" >/dev/null
fi
echo "egang: installing sched_ext packages: ${missing[*]} ${bppkgs[*]}" >&2
$sudo apt-get update -qq >&2
[[ ${#missing[@]} -gt 0 ]] &&
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
[[ $bpmissing -eq 1 ]] &&
	$sudo apt-get install -y -qq --no-install-recommends -t bookworm-backports "${bppkgs[@]}" >&2
exit 0
