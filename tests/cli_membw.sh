#!/usr/bin/env bash
# egang bench membw: one summary line (or JSON object) per core count, with
# min <= median <= max and positive figures; bad flags are usage errors.
# The bandwidth itself is never asserted (the machine is shared).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

"$EGANG" bench membw --help >$TMP/h 2>&1
if [[ $? -eq 0 ]] && grep -q "^usage: egang bench membw" $TMP/h; then pass "bench membw --help"
else fail "bench membw --help" "$(head -3 $TMP/h)"; fi

n=$(nproc)
"$EGANG" bench membw --mb 16 --reps 2 -q >$TMP/m 2>$TMP/m.err
rc=$?
lines=$(grep -c '^bench membw: cores=.* threads=[0-9]* mb=16 reps=2 GB/s min/median/max ' $TMP/m)
if [[ $rc -eq 0 && $lines -eq $n ]]; then pass "bench membw: one line per core count ($n)"
else fail "bench membw: one line per core count" "rc=$rc lines=$lines $(cat $TMP/m $TMP/m.err | head -5)"; fi
if awk '{split($(NF-2), v, "/"); if (!(v[1] > 0 && v[1] <= v[2] && v[2] <= v[3])) bad=1}
	END {exit bad}' $TMP/m; then pass "bench membw: 0 < min <= median <= max"
else fail "bench membw: 0 < min <= median <= max" "$(cat $TMP/m)"; fi

"$EGANG" bench membw --cores 0 --mb 8 --reps 3 --json >$TMP/j 2>&1
if /usr/bin/python3 -c '
import json, sys
o = [json.loads(l) for l in open(sys.argv[1])]
assert len(o) == 1 and o[0]["bench"] == "membw" and o[0]["threads"] == 1
assert o[0]["cores"] == "0" and o[0]["mb"] == 8 and o[0]["reps"] == 3
g = o[0]["gb_s"]; assert 0 < g["min"] <= g["median"] <= g["max"]
' $TMP/j 2>$TMP/j.err; then pass "bench membw --json"
else fail "bench membw --json" "$(cat $TMP/j $TMP/j.err | head -5)"; fi

expect_exit "bench membw --mb too small" 2 "--mb: 2 is out of range" "$EGANG" bench membw --mb 2
expect_exit "bench membw --reps 0" 2 "--reps: 0 is out of range" "$EGANG" bench membw --reps 0
expect_exit "bench membw unknown flag" 2 "--bogus" "$EGANG" bench membw --bogus
expect_exit "bench membw stray operand" 2 "." "$EGANG" bench membw extra
expect_exit "bench membw bad cores" 2 "--cores" "$EGANG" bench membw --cores 999

# bench matvec: one line per type with an L2 figure per ISA level and the
# large matrix in both page sizes
"$EGANG" bench matvec --types q8_0,f16 --mb 8 --reps 1 -q >$TMP/mv 2>$TMP/mv.err
rc=$?
if [[ $rc -eq 0 && $(grep -c '^bench matvec: .* L2 generic [0-9.]*/[0-9.]*.* huge pages [0-9.]*/[0-9.]*, 4 KiB pages [0-9.]*/' $TMP/mv) -eq 2 ]]
then pass "bench matvec: one line per type"
else fail "bench matvec: one line per type" "rc=$rc $(cat $TMP/mv $TMP/mv.err | head -4)"; fi
# the packed (pack16) figure: on q8_0 where the level in use has the packed
# kernel (AVX-512), never on f16. Which level is in use is decided here from
# the CPU's flags (the features kernels_init requires) and EGANG_ISA, not
# from egang's own output.
cpu_isa=generic
flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
has() { local f; for f; do [[ $flags == *" $f "* ]] || return 1; done; }
if has avx2 fma f16c; then cpu_isa=avx2
	if has avx512f avx512bw avx512vl avx512dq; then cpu_isa=avx512
		if has avx512_vnni; then cpu_isa=avx512vnni
			# Linux lists the AMX flags where it grants the tile state
			if has amx_tile amx_int8; then cpu_isa=amx; fi
		fi
	fi
fi
isa=$cpu_isa
case ${EGANG_ISA:-} in
generic) isa=generic ;;
avx2) [[ $cpu_isa != generic ]] && isa=avx2 ;;
avx512) [[ $cpu_isa == avx512* || $cpu_isa == amx ]] && isa=avx512 ;;
avx512vnni) [[ $cpu_isa == avx512vnni || $cpu_isa == amx ]] && isa=avx512vnni ;;
esac
if [[ $isa == avx512* || $isa == amx ]]; then want_packed=1; else want_packed=0; fi
if [[ $(grep -c '^bench matvec: q8_0 .*, packed [0-9.]*/[0-9.]*$' $TMP/mv) -eq $want_packed &&
      $(grep -c '^bench matvec: f16 .*packed' $TMP/mv) -eq 0 ]]
then pass "bench matvec: packed figure where decode reads packed weights"
else fail "bench matvec: packed figure where decode reads packed weights" "isa=$isa $(cat $TMP/mv)"; fi
# at a level without the packed kernel: no packed figure, whatever the CPU
EGANG_ISA=generic "$EGANG" bench matvec --types q8_0 --mb 8 --reps 1 -q >$TMP/mvg 2>&1
if [[ $(grep -c '^bench matvec: q8_0 ' $TMP/mvg) -eq 1 && $(grep -c 'packed' $TMP/mvg) -eq 0 ]]
then pass "bench matvec: no packed figure under EGANG_ISA=generic"
else fail "bench matvec: no packed figure under EGANG_ISA=generic" "$(cat $TMP/mvg)"; fi
"$EGANG" bench matvec --types q4_0 --n 96 --mb 8 --reps 2 --json >$TMP/mvj 2>&1
if /usr/bin/python3 -c '
import json, sys
o = [json.loads(l) for l in open(sys.argv[1])]
assert len(o) == 1 and o[0]["type"] == "q4_0" and o[0]["n"] == 96
assert o[0]["l2_gb_s"]["generic"]["best"] > 0 and o[0]["huge_gb_s"]["median"] > 0
p = o[0]["packed_gb_s"]
assert o[0]["isa"] == sys.argv[2], (o[0]["isa"], sys.argv[2])
assert (p["median"] > 0) if sys.argv[2].startswith(("avx512", "amx")) else p is None
' $TMP/mvj $isa 2>$TMP/mvj.err; then pass "bench matvec --json"
else fail "bench matvec --json" "$(cat $TMP/mvj $TMP/mvj.err | head -5)"; fi
expect_exit "bench matvec bad type" 2 "--types: 'q5_k' is not" "$EGANG" bench matvec --types q5_k
expect_exit "bench matvec ragged n" 2 "--n: 100 is not a multiple of 32" "$EGANG" bench matvec --n 100

# ISA levels: `egang info` and the decode line name the level in use (the
# one decided above from the CPU's flags and EGANG_ISA); EGANG_ISA forces
# each level the CPU has; an unknown level, or one the CPU lacks, is
# refused with one line and exit 2 before the command runs.
M=$MODELS/stories260K.gguf
if [[ -r $M ]]; then
	if "$EGANG" info "$M" 2>&1 | grep -qx "isa: *$isa (kernel level in use.*"
	then pass "info names the ISA level in use ($isa)"
	else fail "info names the ISA level in use ($isa)" "$("$EGANG" info "$M" 2>&1 | grep isa)"; fi
	rank() { case $1 in generic) echo 0;; avx2) echo 1;; avx512) echo 2;; avx512vnni) echo 3;; amx) echo 4;; esac; }
	for lv in generic avx2 avx512 avx512vnni amx; do
		if (($(rank $lv) <= $(rank $cpu_isa))); then
			EGANG_ISA=$lv "$EGANG" generate -m "$M" -t 0 -n 4 -p "Once" >/dev/null 2>$TMP/gen.err
			if grep -q "decode: .*tok/s ($lv, " $TMP/gen.err
			then pass "EGANG_ISA=$lv: the decode line names it"
			else fail "EGANG_ISA=$lv: the decode line names it" "$(tail -2 $TMP/gen.err)"; fi
		else
			EGANG_ISA=$lv expect_exit "EGANG_ISA=$lv refused on this CPU" 2 \
				"EGANG_ISA=$lv: this CPU lacks it" "$EGANG" info "$M"
		fi
	done
	EGANG_ISA=avx512bf16 expect_exit "EGANG_ISA unknown level" 2 \
		"EGANG_ISA=avx512bf16: unknown level" "$EGANG" info "$M"
fi
