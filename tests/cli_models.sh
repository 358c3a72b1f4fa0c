#!/usr/bin/env bash
# The in-repository models (models/): their checksums, and egang's GGUF
# writer against an outside oracle: `egang convert` of models/stories260K.bin
# read by an independent GGUF reader (python, below; it shares no code with
# src/model/gguf.c) and compared with llama.cpp's own conversion of the same
# checkpoint (../shared/models/stories260K.gguf): the same tensor names,
# shapes, types and bytes, and the header fields llama.cpp's loader needs.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh

# ---- checksums: the digests models/README.md gives (fixed here, so a
# changed file fails even when SHA256SUMS is changed with it) ----
if have_repo_models "models/ checksums"; then
	want="b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696  stories260K.bin
037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312  tok512.bin"
	got=$(cd "$REPO_MODELS" && sha256sum stories260K.bin tok512.bin)
	if [[ $got == "$want" ]]; then pass "models/: stories260K.bin and tok512.bin have their sha256"
	else fail "models/: stories260K.bin and tok512.bin have their sha256" "$got"; fi
	check "models/SHA256SUMS verifies" bash -c "cd '$REPO_MODELS' && sha256sum --quiet -c SHA256SUMS"
	if [[ -r $MODELS/SHA256SUMS ]]; then
		if grep -E ' (stories260K|tok512)\.bin$' "$MODELS/SHA256SUMS" | sort -k2 | diff -q - <(sort -k2 "$REPO_MODELS/SHA256SUMS") >/dev/null
		then pass "models/ digests equal ../shared/models/SHA256SUMS"
		else fail "models/ digests equal ../shared/models/SHA256SUMS"; fi
	fi
fi

# ---- GGUF writer against llama.cpp's file ----
cat >"$TMP/gguf_oracle.py" <<'EOF'
# usage: gguf_oracle.py OURS LLAMACPP. Prints one line per problem; exit 1
# if any. A GGUF v3 reader written from the format's description.
import struct, sys

SCALAR = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?',
          10: 'Q', 11: 'q', 12: 'd'}
TYPE_SIZE = {0: (1, 4), 1: (1, 2)}  # ggml type -> (block elements, block bytes): F32, F16

def read(path):
    b = open(path, 'rb').read()
    pos = [0]
    def take(fmt):
        v = struct.unpack_from('<' + fmt, b, pos[0])
        pos[0] += struct.calcsize('<' + fmt)
        return v[0]
    def string():
        n = take('Q')
        v = b[pos[0]:pos[0] + n].decode('utf-8')
        pos[0] += n
        return v
    def value(t):
        if t in SCALAR:
            return take(SCALAR[t])
        if t == 8:
            return string()
        if t == 9:
            et, n = take('I'), take('Q')
            return (et, [value(et) for _ in range(n)])
        raise ValueError('%s: value type %d' % (path, t))
    if b[:4] != b'GGUF':
        raise ValueError('%s: no GGUF magic' % path)
    pos[0] = 4
    version, n_tensors, n_kv = take('I'), take('Q'), take('Q')
    kv = {}
    for _ in range(n_kv):
        k = string()
        t = take('I')
        kv[k] = (t, value(t))
    tensors = {}
    order = []
    for _ in range(n_tensors):
        name = string()
        dims = [take('Q') for _ in range(take('I'))]
        tensors[name] = (dims, take('I'), take('Q'))
        order.append(name)
    align = kv.get('general.alignment', (4, 32))[1]
    base = (pos[0] + align - 1) // align * align
    data = {}
    for name, (dims, t, off) in tensors.items():
        n = 1
        for d in dims:
            n *= d
        per, size = TYPE_SIZE[t]
        data[name] = b[base + off: base + off + n // per * size]
        if off % align or base + off + n // per * size > len(b):
            raise ValueError('%s: tensor %s at %d is misaligned or past the end' % (path, name, off))
    return version, kv, tensors, order, data

ours, ref = read(sys.argv[1]), read(sys.argv[2])
bad = []
if ours[0] != 3:
    bad.append('version %d, expected 3' % ours[0])
okv, rkv = ours[1], ref[1]
# what llama.cpp's llama loader reads for this architecture
need = ['general.architecture', 'llama.embedding_length', 'llama.feed_forward_length',
        'llama.block_count', 'llama.attention.head_count', 'llama.attention.head_count_kv',
        'llama.rope.dimension_count', 'llama.attention.layer_norm_rms_epsilon',
        'tokenizer.ggml.model', 'tokenizer.ggml.tokens', 'tokenizer.ggml.scores',
        'tokenizer.ggml.token_type', 'tokenizer.ggml.bos_token_id',
        'tokenizer.ggml.eos_token_id', 'tokenizer.ggml.unknown_token_id']
for k in need:
    if k not in okv:
        bad.append('missing key %s' % k)
    elif okv[k] != rkv[k]:
        bad.append('key %s: %r, llama.cpp has %r' % (k, str(okv[k])[:80], str(rkv[k])[:80]))
ctx = okv.get('llama.context_length')
if not ctx or ctx[0] != 4 or ctx[1] <= 0:
    bad.append('llama.context_length missing or not a positive uint32: %r' % (ctx,))
ot, rt = ours[2], ref[2]
for name in ot:
    if name not in rt:
        bad.append('tensor %s: not in llama.cpp\'s file' % name)
    elif ot[name][:2] != rt[name][:2]:
        bad.append('tensor %s: shape/type %r, llama.cpp has %r' % (name, ot[name][:2], rt[name][:2]))
    elif ours[4][name] != ref[4][name]:
        bad.append('tensor %s: data differs' % name)
for name in rt:
    if name in ot:
        continue
    # the classifier is tied to the embedding in the checkpoint; llama.cpp
    # stores a copy, egang's writer does not
    if name == 'output.weight' and ref[4][name] == ours[4].get('token_embd.weight'):
        continue
    bad.append('tensor %s of llama.cpp\'s file is missing' % name)
for line in bad:
    print(line)
print('%d tensors compared, %d problems' % (len(ot), len(bad)))
sys.exit(1 if bad else 0)
EOF
if have_repo_models "GGUF writer against llama.cpp" &&
   { [[ -r $MODELS/stories260K.gguf ]] || { missing_model "GGUF writer against llama.cpp" "no $MODELS/stories260K.gguf"; false; }; }; then
	"$EGANG" convert "$REPO_MODELS/stories260K.bin" -z "$REPO_MODELS/tok512.bin" -o "$TMP/conv.gguf" 2>"$TMP/conv.err"
	if /usr/bin/python3 "$TMP/gguf_oracle.py" "$TMP/conv.gguf" "$MODELS/stories260K.gguf" >"$TMP/oracle.out" 2>&1; then
		pass "GGUF writer: tensors and header equal llama.cpp's stories260K.gguf ($(tail -1 "$TMP/oracle.out"))"
	else fail "GGUF writer: tensors and header equal llama.cpp's stories260K.gguf" "$(head -5 "$TMP/oracle.out" | tr '\n' ' ')"; fi
	# the oracle can fail: one flipped weight byte in our file is caught
	/usr/bin/python3 - "$TMP/conv.gguf" "$TMP/flip.gguf" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[-5] ^= 0x40  # inside the last tensor's data
open(sys.argv[2], 'wb').write(b)
EOF
	if ! /usr/bin/python3 "$TMP/gguf_oracle.py" "$TMP/flip.gguf" "$MODELS/stories260K.gguf" >"$TMP/oracle2.out" 2>&1 &&
	   grep -q 'data differs' "$TMP/oracle2.out"; then pass "GGUF oracle catches a flipped weight"
	else fail "GGUF oracle catches a flipped weight" "$(tail -2 "$TMP/oracle2.out" | tr '\n' ' ')"; fi
fi
