#!/usr/bin/env bash
# Builds the test guest's initramfs: busybox (Debian's busybox-static) for
# the userland, egang (the SCX=1 build) with the shared libraries ldd names,
# the model files and tests/scx/guest.sh as /init.
# usage: tools/scx-kernel/initramfs.sh EGANG_BIN MODELS_DIR OUT.cpio.gz
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$1 models=$2 out=$3
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,run,models,etc,usr/bin,usr/sbin}
cp /bin/busybox "$root/bin/busybox"
file "$root/bin/busybox" 2>/dev/null | grep -q 'statically linked' ||
	ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' ||
	{ echo "initramfs: /bin/busybox is not static (apt-get install busybox-static)" >&2; exit 1; }
ln -s busybox "$root/bin/sh"
cp "$bin" "$root/bin/egang"
# the dynamic loader and every library egang links, at their host paths
for lib in $(ldd "$bin" | grep -o '/[^ ]*' | sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
for f in stories260K.bin tok512.bin; do
	cp "$models/$f" "$root/models/$f"
done
cp tests/scx/guest.sh "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out"
