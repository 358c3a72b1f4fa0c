#!/usr/bin/env bash
# The corrupt-file corpus (tests/corrupt_corpus.py): some 700 malformed GGUF
# and llama2.c files made from models/ (stories260K.bin + tok512.bin, the
# GGUF `egang convert` makes of them, small `egang synth` files), each run
# through `egang info` and `egang generate` (greedy, and -t 1 --top-p 0.9).
# Every case exits 1 or 2 with exactly one line on stderr, or, where the
# file is still a valid model (a flipped bit in a weight), runs normally;
# a model whose weights give non-finite logits is refused by generate,
# naming the position. Never a crash, a case over 20 s, an empty or
# multi-line error or a sanitizer report (the suite's sanitizer build runs
# this too). One PASS/FAIL line per class of case; a failing case prints
# its recipe and the command that reruns it alone.
#   CORRUPT_CASES=N  about N cases, evenly spread (default: all)
#   CORRUPT_JOBS=N   cases at a time (default 2)
#   CORRUPT_VERBOSE=1  every case's outcome
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

have_repo_models "corrupt-file corpus" || exit 0
v=()
[[ ${CORRUPT_VERBOSE:-0} == 1 ]] && v=(-v)
/usr/bin/python3 tests/corrupt_corpus.py run --egang "$EGANG" \
	--models "$REPO_MODELS" --work "$TMP" --jobs "${CORRUPT_JOBS:-2}" \
	--cases "${CORRUPT_CASES:-0}" "${v[@]}"
rc=$?
# the runner's own failure (a bug in it, not a case): one FAIL line
if ((rc != 0)); then fail "corrupt-file corpus: the runner" "exit $rc"; fi
exit 0
