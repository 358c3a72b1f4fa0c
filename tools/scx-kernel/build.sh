#!/usr/bin/env bash
# Builds egang's sched_ext test kernel from Debian's linux-source-6.12 with
# tools/scx-kernel/scx.config, caching the result by content:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/egang/kernel-<hash>/{bzImage,vmlinux}
# where <hash> covers the source package version, the fragment and the
# build recipe (RECIPE below: bump it when a change here changes the
# kernel; comments and paths do not). A fresh clone (CI) on the same machine reuses it; $1 (default
# build/kernel) is made a symlink to the cache entry. Prints the path.
set -euo pipefail
cd "$(dirname "$0")/../.."
link=${1:-build/kernel}
tarball=/usr/src/linux-source-6.12.tar.xz
[[ -f $tarball ]] || { echo "tools/scx-kernel/build.sh: $tarball missing (run tools/deps-scx.sh)" >&2; exit 1; }
ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
RECIPE="allnoconfig+fragment; bzImage vmlinux .config; v1"
hash=$( { echo "$ver"; echo "$RECIPE"; cat tools/scx-kernel/scx.config; } | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/egang
out=$cache/kernel-$hash
mkdir -p "$(dirname "$link")"
if [[ -f $out/bzImage && -f $out/vmlinux ]]; then
	ln -sfn "$out" "$link"
	echo "$out"
	exit 0
fi
src=$cache/src-$ver
if [[ ! -f $src/.extracted ]]; then
	echo "kernel: extracting $tarball" >&2
	rm -rf "$src"; mkdir -p "$src"
	tar -xf "$tarball" -C "$src" --strip-components=1
	touch "$src/.extracted"
fi
# one object folder for every configuration: Kbuild rebuilds only what a
# changed fragment touches (a full build is ~10 minutes of both cores)
obj=$cache/obj
mkdir -p "$obj"
jobs=${KERNEL_JOBS:-$(nproc)}
echo "kernel: configuring in $obj (allnoconfig + tools/scx-kernel/scx.config)" >&2
make -s -C "$src" O="$obj" ARCH=x86_64 KCONFIG_ALLCONFIG="$PWD/tools/scx-kernel/scx.config" allnoconfig >&2
# every =y (and every value) the fragment asks for must be in the result
bad=0
while IFS= read -r line; do
	[[ $line =~ ^CONFIG_ ]] || continue
	grep -qx "$line" "$obj/.config" || { echo "kernel: $line did not survive Kconfig" >&2; bad=1; }
done < tools/scx-kernel/scx.config
[[ $bad -eq 0 ]] || exit 1
echo "kernel: building bzImage with $jobs jobs (about 10 minutes on 2 cores)" >&2
# the kernel's own tools (resolve_btfids' libbpf) have failed to link in a
# parallel build on a loaded machine: one serial retry finishes the rest
make -s -C "$src" O="$obj" ARCH=x86_64 -j"$jobs" bzImage >&2 ||
	{ echo "kernel: the parallel build failed; retrying with one job" >&2
	  make -s -C "$src" O="$obj" ARCH=x86_64 -j1 bzImage >&2; }
mkdir -p "$out.tmp"
cp "$obj/arch/x86/boot/bzImage" "$obj/vmlinux" "$obj/.config" "$out.tmp/"
rm -rf "$out"; mv "$out.tmp" "$out"
ln -sfn "$out" "$link"
echo "$out"
