#!/usr/bin/env bash
# End to end: egang generate against llama2.c's reference outputs, GGUF
# conversion, and bit-exact logits whatever the gang's membership.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

gen() { "$EGANG" generate -q "$@"; }

if have_models "reference outputs"; then
	M=$MODELS E=$MODELS/expected
	# llama2.c's -n S counts every position: egang -n = S + 1 - prompt tokens
	gen -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 196 -p "Once upon a time" \
		--ids $TMP/once.ids --logits-hash $TMP/once.bin.hash >$TMP/once.txt
	check "stories260K greedy text equals run.c" cmp $TMP/once.txt $E/stories260K.once_t0_n200.stdout
	check "stories260K greedy ids equal run.c" cmp $TMP/once.ids $E/stories260K.once_t0_n200.ids
	gen -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 200 --ids $TMP/np.ids >$TMP/np.txt
	check "stories260K no prompt equals run.c" cmp $TMP/np.txt $E/stories260K.noprompt_t0_n200.stdout
	check "stories260K no prompt ids equal run.c" cmp $TMP/np.ids $E/stories260K.noprompt_t0_n200.ids
	gen -m $M/stories260K.bin -z $M/tok512.bin -t 0.0 -n 256 >$TMP/doc.txt
	check "stories260K doc sample (greedy) equals run.c" cmp $TMP/doc.txt $E/stories260K.doc_t0.stdout
	gen -m $M/stories260K.bin -z $M/tok512.bin -t 1.0 --top-p 0.9 -s 133742 \
		--sampler llama2c -n 256 --ids $TMP/seed.ids >$TMP/seed.txt
	check "stories260K seeded top-p sample equals run.c" cmp $TMP/seed.txt $E/stories260K.doc_t1_p09_s133742.stdout
	check "stories260K seeded ids equal run.c" cmp $TMP/seed.ids $E/stories260K.doc_t1_p09_s133742.ids
	gen -m $M/babyllama105.bin -z $M/tok105.bin -t 0 -n 183 -p "Once upon a time" \
		--ids $TMP/baby.ids >$TMP/baby.txt
	check "babyllama105 greedy text equals run.c" cmp $TMP/baby.txt $E/babyllama105.once_t0_n200.stdout
	check "babyllama105 greedy ids equal run.c" cmp $TMP/baby.ids $E/babyllama105.once_t0_n200.ids

	# GGUF: converted by egang, and llama.cpp's own conversion
	"$EGANG" convert $M/stories260K.bin -z $M/tok512.bin -o $TMP/conv.gguf 2>/dev/null
	gen -m $TMP/conv.gguf -t 0 -n 196 -p "Once upon a time" --logits-hash $TMP/once.conv.hash >$TMP/conv.txt
	check "converted GGUF gives the same text" cmp $TMP/conv.txt $E/stories260K.once_t0_n200.stdout
	check "converted GGUF gives the same logits hashes" cmp $TMP/once.conv.hash $TMP/once.bin.hash
	gen -m $M/stories260K.gguf -t 0 -n 196 -p "Once upon a time" --logits-hash $TMP/once.gguf.hash >$TMP/gguf.txt
	check "llama.cpp's stories260K.gguf gives the same text" cmp $TMP/gguf.txt $E/stories260K.once_t0_n200.stdout
	check "llama.cpp's stories260K.gguf gives the same logits hashes" cmp $TMP/once.gguf.hash $TMP/once.bin.hash

	# Bit-exact whatever the membership: 1 core, all cores, random masks
	# before every token (several seeds), asynchronous flips.
	gen -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 300 -p "Once upon a time" --ctx 512 \
		--cores 0 --logits-hash $TMP/ref.hash >/dev/null
	for spec in "--cores 0-1" "--membership random:1" "--membership random:2" \
		"--membership random:3" "--membership flip:1" "--membership flip:3"; do
		gen -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 300 -p "Once upon a time" \
			--ctx 512 $spec --trace $TMP/trace --logits-hash $TMP/m.hash >/dev/null
		check "stories260K logits bit-exact with $spec" cmp $TMP/m.hash $TMP/ref.hash
	done
	# the random membership really changed the latch
	changes=$(awk '{print $2}' $TMP/trace | uniq | wc -l)
	if [[ $(wc -l <$TMP/trace) -ge 300 ]]; then pass "trace has a line per token"; else fail "trace has a line per token"; fi
	gen -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 300 --membership random:9 --trace $TMP/trace2 >/dev/null
	changes=$(awk '{print $2}' $TMP/trace2 | uniq | wc -l)
	# (how often depends on how soon the workers get a core: a loaded
	# machine may leave them out of most tokens, so ask for one join and
	# one departure, not a count)
	if [[ $changes -ge 3 ]]; then pass "random membership changes the latch ($changes runs)"
	else fail "random membership changes the latch" "$changes runs"; fi
	# A membership file: one mask per token
	printf '0x1\n0x3\n0x2\n0x3\n' >$TMP/masks
	gen -m $M/stories260K.bin -z $M/tok512.bin -t 0 -n 300 -p "Once upon a time" --ctx 512 \
		--membership file:$TMP/masks --logits-hash $TMP/f.hash >/dev/null
	check "stories260K logits bit-exact with a membership file" cmp $TMP/f.hash $TMP/ref.hash
fi

# Synthetic models of every type: bit-exact across memberships too.
for type in f32 f16 bf16 q8_0 q4_0; do
	"$EGANG" synth smollm-135m --layers 2 --type $type --seed 7 -o $TMP/s.gguf -q
	gen -m $TMP/s.gguf -t 0 -n 200 -p "hello world" --cores 0 --logits-hash $TMP/s1.hash >/dev/null
	ok=1
	for spec in "--cores 0-1" "--membership random:4" "--membership flip:2"; do
		gen -m $TMP/s.gguf -t 0 -n 200 -p "hello world" $spec --logits-hash $TMP/s2.hash >/dev/null
		cmp -s $TMP/s1.hash $TMP/s2.hash || ok=0
	done
	n=$(wc -l <$TMP/s1.hash)
	if [[ $ok -eq 1 && $n -eq 200 ]]; then pass "synthetic $type logits bit-exact across memberships"
	else fail "synthetic $type logits bit-exact across memberships" "ok=$ok lines=$n"; fi
	# matrices are read from their packed copies (kernels.h pack16: every
	# quantized one, float ones with short rows) where the CPU has AVX-512;
	# without the copies: the same bits
	EGANG_PACK=0 gen -m $TMP/s.gguf -t 0 -n 200 -p "hello world" --cores 0-1 \
		--logits-hash $TMP/s3.hash >/dev/null
	check "synthetic $type logits the same without packed weights" cmp $TMP/s1.hash $TMP/s3.hash
done

# Stop strings: the text ends right before the first stop string, even
# when it spans tokens, and never contains it.
if have_models "stop strings"; then
	out=$("$EGANG" generate -q -m $MODELS/stories260K.bin -z $MODELS/tok512.bin -t 0 -n 196 \
		-p "Once upon a time" --stop "red ball" --stop "zebra")
	if [[ $out == "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, " ]]; then
		pass "stop string ends the text before it"
	else fail "stop string ends the text before it" "$out"; fi
fi
