#!/usr/bin/env bash
# stories260K on ARM64 (qemu-user, tests/arm64/run.sh) against the native
# x86-64 egang: the same text, and the same logits hashes (every token's
# logits, bit for bit) level against level:
#   ARM64 generic      = x86-64 generic  (the scalar code; no FMA contraction
#                                          on either side, Makefile)
#   ARM64 neon/dotprod = x86-64 avx2     (kernels_neon.c sums the float
#                                          rows in the avx2 level's order)
# EGANG: the native egang; EGANG_ARM64: the ARM64 one (a qemu wrapper).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

run() { # run EGANG_BIN ISA TAG: text to $TMP/TAG.txt, hashes to $TMP/TAG.hash
	EGANG_ISA=$2 "$1" generate -m "$REPO_MODELS/stories260K.bin" -z "$REPO_MODELS/tok512.bin" \
		-t 0 -n 196 -p "Once upon a time" --logits-hash "$TMP/$3.hash" >"$TMP/$3.txt" 2>"$TMP/$3.err"
}

if have_repo_models "stories260K on ARM64"; then
	run "$EGANG" generic x86-generic
	have_avx2=0
	run "$EGANG" avx2 x86-avx2 && grep -q . "$TMP/x86-avx2.txt" &&
		! grep -q "lacks" "$TMP/x86-avx2.err" && have_avx2=1
	for isa in generic neon dotprod; do
		run "$EGANG_ARM64" $isa arm-$isa
		check "ARM64 $isa generates" test -s "$TMP/arm-$isa.hash"
		check "ARM64 $isa text equals x86-64's" cmp "$TMP/arm-$isa.txt" "$TMP/x86-generic.txt"
		if [[ $isa == generic ]]; then
			check "ARM64 generic logits hashes equal x86-64 generic's" \
				cmp "$TMP/arm-generic.hash" "$TMP/x86-generic.hash"
		elif [[ $have_avx2 == 1 ]]; then
			check "ARM64 $isa logits hashes equal x86-64 avx2's" \
				cmp "$TMP/arm-$isa.hash" "$TMP/x86-avx2.hash"
		else
			skip "ARM64 $isa logits hashes equal x86-64 avx2's" "this CPU lacks avx2"
		fi
	done
	check "ARM64 dotprod level in use under -cpu max" grep -q "(dotprod," "$TMP/arm-dotprod.err"
	if have_models "stories260K on ARM64 against run.c"; then
		check "ARM64 text equals llama2.c run.c's" cmp "$TMP/arm-dotprod.txt" \
			"$MODELS/expected/stories260K.once_t0_n200.stdout"
	fi
fi
