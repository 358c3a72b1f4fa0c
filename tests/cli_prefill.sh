#!/usr/bin/env bash
# End to end: the batched prefill (forward.h) gives the same logits, bit for
# bit, as the prompt run token by token (EGANG_PREFILL_BATCH=0), at any
# batch size, on 1 core, on all cores and under random and asynchronous
# membership changes; and the same text, prompt echo included.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

gen() { "$EGANG" generate -q "$@"; }

# prompts longer than one batch so several batches and a ragged last
# one run; `hash_all NAME ARGS`: every batch size and membership against
# the token-by-token reference
hash_all() {
	local name=$1; shift
	EGANG_PREFILL_BATCH=0 gen "$@" --cores 0 --logits-hash $TMP/ref.hash >$TMP/ref.txt
	local ok=1 why=""
	for b in $BATCHES; do
		for spec in "--cores 0-1" "--membership random:5" "--membership flip:1"; do
			EGANG_PREFILL_BATCH=$b gen "$@" $spec --logits-hash $TMP/b.hash >$TMP/b.txt
			if ! cmp -s $TMP/b.hash $TMP/ref.hash; then ok=0; why="$why batch=$b $spec: logits;"; fi
			if ! cmp -s $TMP/b.txt $TMP/ref.txt; then ok=0; why="$why batch=$b $spec: text;"; fi
		done
	done
	local n
	n=$(wc -l <$TMP/ref.hash)
	if [[ $ok -eq 1 && $n -gt 0 ]]; then pass "$name: batched prefill bit-exact with token by token"
	else fail "$name: batched prefill bit-exact with token by token" "lines=$n$why"; fi
}

LONG="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw a big red ball under a tree. She ran to the ball and picked it up. It was very shiny and round. Lily was happy and wanted to show it to her mom. Her mom smiled and said"

if have_repo_models "prefill on stories260K"; then
	M=$REPO_MODELS
	BATCHES="128 1 3 17 64"
	hash_all "stories260K" -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 40 -p "$LONG" --ctx 512
	# -n 0: the prompt only (all but its last position run, as before)
	check "prefill with -n 0" gen -m $M/stories260K.bin -z $M/tok512.bin -n 0 -p "$LONG"
fi
if have_models "prefill against run.c"; then
	# the echoed prompt and the generated text equal the reference output
	# of llama2.c (the same as tests/cli_generate.sh, batches of 3)
	EGANG_PREFILL_BATCH=3 gen --kv-type f32 -m $REPO_MODELS/stories260K.bin -z $REPO_MODELS/tok512.bin -t 0 -n 196 \
		-p "Once upon a time" >$TMP/once.txt
	check "stories260K with prefill batches of 3 equals run.c" cmp $TMP/once.txt \
		$MODELS/expected/stories260K.once_t0_n200.stdout
fi

# Synthetic models of every type (2 layers), and the quantized ones at
# every ISA level (their bits are the same at all levels).
PROMPT=$(for i in $(seq 1 20); do printf 'the quick brown fox %d ' $i; done)
BATCHES="128 17"
for type in f32 f16 bf16 q8_0 q4_0; do
	"$EGANG" synth smollm-135m --layers 2 --vocab 4096 --type $type --seed 3 -o $TMP/s.gguf -q
	hash_all "synthetic $type" -m $TMP/s.gguf -t 0 -n 8 -p "$PROMPT"
done
# the other KV cache types (the loop above: the default f16)
for kv in f32 q8_0; do
	hash_all "synthetic q4_0, kv $kv" -m $TMP/s.gguf -t 0 -n 8 -p "$PROMPT" --kv-type $kv
done
"$EGANG" synth smollm-135m --layers 2 --vocab 4096 --type q4_0 --seed 3 -o $TMP/s.gguf -q
for kv in f16 q8_0; do
	EGANG_PREFILL_BATCH=0 gen -m $TMP/s.gguf -t 0 -n 8 -p "$PROMPT" --kv-type $kv \
		--logits-hash $TMP/ref.hash >/dev/null
	ok=1
	for isa in generic avx2 avx512 avx512vnni amx; do
		rm -f $TMP/i.hash
		EGANG_ISA=$isa gen -m $TMP/s.gguf -t 0 -n 8 -p "$PROMPT" --kv-type $kv \
			--logits-hash $TMP/i.hash >/dev/null 2>$TMP/isa.err
		# a level this CPU lacks is refused (exit 2), not compared
		[[ $? -eq 2 ]] && grep -q "this CPU lacks" $TMP/isa.err && continue
		cmp -s $TMP/i.hash $TMP/ref.hash || ok=0
	done
	if [[ $ok -eq 1 ]]; then pass "q4_0, kv $kv: prefill the same bits at every ISA level"
	else fail "q4_0, kv $kv: prefill the same bits at every ISA level"; fi
done

# A bad EGANG_PREFILL_BATCH is named and the default used.
EGANG_PREFILL_BATCH=x gen -m $TMP/s.gguf -t 0 -n 2 -p "hi" >/dev/null 2>$TMP/err
if grep -q "EGANG_PREFILL_BATCH=x" $TMP/err; then pass "a bad EGANG_PREFILL_BATCH is reported"
else fail "a bad EGANG_PREFILL_BATCH is reported" "$(head -c 200 $TMP/err)"; fi
