#!/usr/bin/env bash
# Bad input on the command line and in model files: a one-line error that
# names the problem and exit code 2; --help everywhere exits 0.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

for cmd in "" generate info synth convert; do
	"$EGANG" $cmd --help >$TMP/help 2>&1
	if [[ $? -eq 0 && $(grep -c usage $TMP/help) -ge 1 ]]; then pass "egang $cmd --help"
	else fail "egang $cmd --help"; fi
done
expect_exit "no command" 2 "usage|COMMAND" "$EGANG"
expect_exit "unknown command" 2 "unknown command 'frobnicate'" "$EGANG" frobnicate
expect_exit "generate without -m" 2 "-m/--model is required" "$EGANG" generate
expect_exit "unknown flag" 2 "unrecognized option|see .egang generate --help" "$EGANG" generate --bogus
expect_exit "-n not a number" 2 "-n: 'abc' is not an integer" "$EGANG" generate -m x -n abc
for cmd in generate chat serve "bench decode" "bench width"; do
	expect_exit "$cmd --kv-type unknown" 2 "--kv-type: 'q4' is not one of f16, f32, q8_0" \
		"$EGANG" $cmd -m x --kv-type q4
done
# --kv-type q8_0 needs whole blocks of 32 per head (stories260k: head_dim 8)
"$EGANG" synth stories260k -o $TMP/st260.gguf -q
for cmd in generate chat serve "bench decode"; do
	expect_exit "$cmd --kv-type q8_0 on head_dim 8" 2 \
		"--kv-type q8_0: a q8_0 KV cache needs a head_dim that is a multiple of 32 \(this model's is 8\)" \
		"$EGANG" $cmd -m $TMP/st260.gguf --kv-type q8_0
done
expect_exit "-n negative" 2 "-n: -5 is out of range" "$EGANG" generate -m x -n -5
expect_exit "-t out of range" 2 "-t: 1000 is out of range" "$EGANG" generate -m x -t 1000
expect_exit "--top-p 0" 2 "--top-p: 0 is out of range" "$EGANG" generate -m x --top-p 0
expect_exit "--sampler bogus" 2 "--sampler: 'x' is not" "$EGANG" generate -m x --sampler x
expect_exit "--cores outside the mask" 2 "CPUs 1000 are not in this process" "$EGANG" generate -m x --cores 1000
expect_exit "--cores beyond CPUMASK_MAX" 2 "CPU 1024 is beyond the limit of 1023 \(CPUMASK_MAX\)" "$EGANG" generate -m x --cores 0,1024
expect_exit "--cores beyond the gang's slots" 2 "--cores 0-40: 41 CPUs, but the gang has 32 slots \(GANG_MAX_SLOTS\)" "$EGANG" generate -m x --cores 0-40
expect_exit "--cores malformed" 2 "CPU list '0-': expected a number" "$EGANG" generate -m x --cores 0-
expect_exit "--cores reversed" 2 "range 1-0 is reversed" "$EGANG" generate -m x --cores 1-0
expect_exit "--membership bogus" 2 "not random:SEED" "$EGANG" generate -m x --membership sometimes
expect_exit "--membership file missing" 2 "No such file" "$EGANG" generate -m x --membership file:/nonexistent
printf '0x3\nzz\n' >$TMP/badmasks
expect_exit "--membership file bad line" 2 "line 2: 'zz' is not a mask" "$EGANG" generate -m x --membership file:$TMP/badmasks
expect_exit "missing model file" 2 "No such file" "$EGANG" generate -m /nonexistent.gguf
expect_exit "model is a directory" 2 "not a regular file" "$EGANG" generate -m /tmp
expect_exit "synth unknown shape" 2 "unknown shape 'gpt-5'" "$EGANG" synth gpt-5 -o $TMP/x.gguf
expect_exit "synth bad type" 2 "--type 'q3_q' is not one of" "$EGANG" synth stories260k --type q3_q -o $TMP/x.gguf
expect_exit "synth without -o" 2 "-o/--output is required" "$EGANG" synth stories260k
expect_exit "convert without tokenizer" 2 "-z/--tokenizer is required" "$EGANG" convert x.bin -o y.gguf
expect_exit "info two files" 2 "info: unexpected argument .b." "$EGANG" info a b

# ---- malformed llama2.c checkpoints (the header is 7 int32) ----
mkbin() { # mkbin FILE dim hidden layers heads kv vocab seq [payload floats]
	local f=$1; shift
	/usr/bin/python3 - "$f" "$@" <<'PY'
import struct, sys
f = sys.argv[1]; h = [int(x) for x in sys.argv[2:9]]
n = int(sys.argv[9]) if len(sys.argv) > 9 else 0
with open(f, "wb") as o:
    o.write(struct.pack("<7i", *h)); o.write(b"\0" * (4 * n))
PY
}
printf '\x07\x00\x00\x00' >$TMP/tok.bin   # placeholder tokenizer, never reached
mkbin $TMP/h0.bin 64 172 5 8 4 512 512
head -c 10 $TMP/h0.bin >$TMP/short.bin
expect_exit "llama2.c header truncated" 2 "header at offset 0: file is 10 bytes" "$EGANG" generate -m $TMP/short.bin -z $TMP/tok.bin
mkbin $TMP/neg.bin -64 172 5 8 4 512 512
expect_exit "llama2.c negative dim" 2 "field dim at offset 0: invalid value -64" "$EGANG" generate -m $TMP/neg.bin -z $TMP/tok.bin
mkbin $TMP/heads.bin 64 172 5 7 7 512 512
expect_exit "llama2.c heads do not divide dim" 2 "n_heads 7 does not divide dim 64" "$EGANG" generate -m $TMP/heads.bin -z $TMP/tok.bin
mkbin $TMP/kv.bin 64 172 5 8 3 512 512
expect_exit "llama2.c kv heads do not divide heads" 2 "n_kv_heads 3 does not divide n_heads 8" "$EGANG" generate -m $TMP/kv.bin -z $TMP/tok.bin
mkbin $TMP/huge.bin 65536 262144 1024 64 8 512 512
expect_exit "llama2.c shapes past the file" 2 "shapes need [0-9]+ bytes but the file has 28" "$EGANG" generate -m $TMP/huge.bin -z $TMP/tok.bin
mkbin $TMP/over.bin 2147483647 2147483647 2147483647 1 1 2147483647 2147483647
expect_exit "llama2.c overflowing shapes" 2 "out of range" "$EGANG" generate -m $TMP/over.bin -z $TMP/tok.bin

if have_repo_models "malformed tokenizers"; then
	head -c 3000 $REPO_MODELS/tok512.bin >$TMP/tok-trunc.bin
	expect_exit "tokenizer truncated" 2 "tok-trunc.bin.*(offset|record)" "$EGANG" generate -m $REPO_MODELS/stories260K.bin -z $TMP/tok-trunc.bin
	printf '\x07\x00\x00\x00' >$TMP/tok-empty.bin
	expect_exit "tokenizer with an empty vocabulary" 2 "tok-empty.bin" "$EGANG" generate -m $REPO_MODELS/stories260K.bin -z $TMP/tok-empty.bin
	expect_exit "llama2.c model without -z" 2 "needs a tokenizer" "$EGANG" generate -m $REPO_MODELS/stories260K.bin
	expect_exit "prompt longer than --ctx" 2 "the context holds 8" "$EGANG" generate -m $REPO_MODELS/stories260K.bin -z $REPO_MODELS/tok512.bin --ctx 8 -p "Once upon a time there was a dog"
fi
if have_models "truncated GGUF"; then
	# truncations of a real GGUF at many offsets: never a crash, always exit 2
	bad=0
	for off in 0 3 4 7 8 15 16 23 24 100 1000 5000 14000 14176 14177 200000 1185375; do
		head -c $off $MODELS/stories260K.gguf >$TMP/t.gguf
		"$EGANG" info $TMP/t.gguf >/dev/null 2>$TMP/t.err; rc=$?
		if [[ $rc -ne 2 || $(wc -l <$TMP/t.err) -ne 1 ]]; then bad=1; echo "offset $off: rc=$rc $(cat $TMP/t.err)"; fi
	done
	if [[ $bad -eq 0 ]]; then pass "truncated GGUF at 17 offsets: one-line error, exit 2"; else fail "truncated GGUF"; fi
fi

# Out of memory (base/alloc.h's hook: EGANG_ALLOC_FAIL=N fails the N-th
# allocation point): the first point is forward_new's state (exit 1, one
# line); every later one up to the end of a short generation is a one-line
# error with exit 1 (a runtime failure, not bad input) or, where a smaller
# fallback exists, a normal run; never a crash.
if have_repo_models "allocation failures"; then
	R=$REPO_MODELS
	expect_exit "out of memory in forward_new: exit 1, one line" 1 "cannot allocate the forward state" \
		env EGANG_ALLOC_FAIL=1 "$EGANG" generate -m $R/stories260K.bin -z $R/tok512.bin -n 8 -q
	bad=0 errs=0
	for n in $(seq 1 120); do
		EGANG_ALLOC_FAIL=$n EGANG_ISA=generic "$EGANG" generate -m $R/stories260K.bin -z $R/tok512.bin \
			-p "Once upon a time" -n 8 -q --stop zzz >/dev/null 2>$TMP/oom.err
		rc=$?
		if [[ $rc -eq 0 ]]; then continue; fi
		errs=$((errs + 1))
		if [[ $rc -ne 1 || $(wc -l <$TMP/oom.err) -ne 1 ]] || ! grep -q "cannot allocate" $TMP/oom.err; then
			bad=1; echo "EGANG_ALLOC_FAIL=$n: rc=$rc $(head -c 200 $TMP/oom.err)"
		fi
	done
	if [[ $bad -eq 0 && $errs -gt 20 ]]; then pass "out of memory at each of 120 points: one-line errors, exit 1 ($errs), no crash"
	else fail "out of memory at each of 120 points: one-line errors, no crash" "bad=$bad errs=$errs"; fi
fi
