#!/bin/bash
# mkvar.sh NAME SRCDIR DEFS...: test_kernels with kq_pack from SRCDIR/kernels built with DEFS
set -e
cd /work/wt/q6kmem
n=$1; S=$2; shift 2
F="-std=gnu11 -O2 -g -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wvla -I$S -Isrc -pthread -fno-strict-aliasing -D_GNU_SOURCE"
d=/tmp/q6kmem/v/$n; mkdir -p $d
gcc $F "$@" -c -o $d/a.o $S/kernels/kq_pack_avx512.c
gcc $F "$@" -c -o $d/b.o $S/kernels/kq_pack_avx512vnni.c
gcc $F -Itests -o $d/test_kernels tests/test_kernels.c $d/a.o $d/b.o build/gcc-release/libegang.a -lcmocka -lhwloc -lpcre2-8 -ljansson -lmicrohttpd -lcurl -lm -pthread
