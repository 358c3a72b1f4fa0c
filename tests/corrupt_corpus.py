#!/usr/bin/python3
"""The corrupt-file corpus: malformed GGUF and llama2.c files made from the
repository's real models, each run through `egang info` and `egang generate`
(4 tokens, seed 7, greedy and temperature 1 with top-p 0.9).

  corrupt_corpus.py run   --egang EGANG [--only NAME] [--cases N] [--jobs N]
  corrupt_corpus.py write DIR --egang EGANG [--only NAME]  (the files only)
  corrupt_corpus.py list  --egang EGANG [-v]               (the cases)

Every case starts from a valid base file that this script makes first with
the egang under test (nothing comes from the network):
  bin  models/stories260K.bin + models/tok512.bin (llama2.c)
  f32  `egang convert` of them (GGUF, F32)
  q8   `egang synth stories260k` (q8_0 and f16 matrices)
  q4   `egang synth stories260k --type q4_0`
  kq   `egang synth smollm-135m --layers 1 --vocab 259 --type q4_k_m`
       (q8_0, q5_0, q6_k matrices)
A case's name starts with its base's tag; the seed (--seed, default 33)
picks the offsets and bits, so a name always means the same bytes.

Each case expects one of:
  refuse     the file is malformed: every command exits 1 or 2 with
             exactly one line on stderr;
  any        the file may still be a valid model (a flipped bit in a weight
             or a name): each command runs normally (exit 0) or refuses as
             above;
  nonfinite  a valid file whose weights make the logits NaN or infinite:
             info may describe it, generate must refuse (exit 1, one line
             naming the position), never sample from them.
Whatever it expects, a case fails on a signal or another exit code, a
command over --timeout (20 s) or a case over it in all, an empty or
multi-line error, a sanitizer report, or a generate that runs on a file
that info refused.

`run` prints, for tests/run.sh, one PASS/FAIL line per class of case with
the exit codes seen, then a closing line (cases, wall time, failures, the
slowest case); each failing case first, with its recipe and the command
that reruns it alone. It exits 0 when it ran the cases (the lines say how
they went), non-zero only when the runner itself failed. Cases run --jobs
at a time, each written just before its commands and removed after."""
import argparse
import concurrent.futures
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time

# ----------------------------------------------------------------- GGUF

# ggml type id -> (name, elements per block, bytes per block)
GGML = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18),
        3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24),
        8: ("q8_0", 32, 34), 10: ("q2_k", 256, 84), 11: ("q3_k", 256, 110),
        12: ("q4_k", 256, 144), 13: ("q5_k", 256, 176),
        14: ("q6_k", 256, 210), 20: ("iq4_nl", 32, 18),
        23: ("iq4_xs", 256, 136), 30: ("bf16", 1, 2)}
# GGUF value type -> struct format of a scalar
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
          7: "<B", 10: "<Q", 11: "<q", 12: "<d"}
T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = \
    4, 5, 6, 7, 8, 9, 10, 11, 12


def enc_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def enc_arr(elem, vals):
    if elem == T_STR:
        body = b"".join(enc_str(v) for v in vals)
    else:
        body = b"".join(struct.pack(SCALAR[elem], v) for v in vals)
    return struct.pack("<IQ", elem, len(vals)) + body


class KV:
    """A key-value: its type and raw value (the bytes after the type field),
    and where its fields sit in the parsed file."""

    def __init__(self, key, typ, raw, at=0, type_at=0, val_at=0, end=0):
        self.key, self.type, self.raw = key, typ, raw
        self.at, self.type_at, self.val_at, self.end = at, type_at, val_at, end


class TI:
    """A tensor info and where its fields sit in the parsed file."""

    def __init__(self, name, dims, typ, offset):
        self.name, self.dims, self.type, self.offset = name, dims, typ, offset
        self.at = self.ndims_at = self.ne_at = self.type_at = self.off_at = 0

    def nbytes(self):
        _, blk, bb = GGML[self.type]
        n = 1
        for d in self.dims:
            n *= d
        return n // blk * bb


class Gguf:
    """A parsed valid GGUF (version 3): enough to cut, flip and rebuild."""

    def __init__(self, b):
        self.b = bytes(b)
        self.version, = struct.unpack_from("<I", b, 4)
        nt, nk = struct.unpack_from("<QQ", b, 8)
        o = 24
        self.kvs = []
        for _ in range(nk):
            at = o
            n, = struct.unpack_from("<Q", b, o)
            key = b[o + 8:o + 8 + n].decode()
            o += 8 + n
            typ, = struct.unpack_from("<I", b, o)
            type_at, o = o, o + 4
            val_at = o
            o = self._skip(typ, o)
            self.kvs.append(KV(key, typ, b[val_at:o], at, type_at, val_at, o))
        self.kv_end = o
        self.tis = []
        for _ in range(nt):
            at = o
            n, = struct.unpack_from("<Q", b, o)
            name = b[o + 8:o + 8 + n].decode()
            o += 8 + n
            nd, = struct.unpack_from("<I", b, o)
            ndims_at, o = o, o + 4
            dims = list(struct.unpack_from("<%dQ" % nd, b, o))
            ne_at, o = o, o + 8 * nd
            typ, off = struct.unpack_from("<IQ", b, o)
            t = TI(name, dims, typ, off)
            t.at, t.ndims_at, t.ne_at, t.type_at, t.off_at = \
                at, ndims_at, ne_at, o, o + 4
            o += 12
            self.tis.append(t)
        self.header_end = o
        a = self.kv("general.alignment")
        self.align = struct.unpack("<I", a.raw)[0] if a else 32
        self.data_off = (o + self.align - 1) // self.align * self.align

    def _skip(self, typ, o):
        if typ == T_STR:
            return o + 8 + struct.unpack_from("<Q", self.b, o)[0]
        if typ == T_ARR:
            elem, n = struct.unpack_from("<IQ", self.b, o)
            o += 12
            if elem in SCALAR:
                return o + struct.calcsize(SCALAR[elem]) * n
            for _ in range(n):
                o = self._skip(elem, o)
            return o
        return o + struct.calcsize(SCALAR[typ])

    def kv(self, key):
        return next((k for k in self.kvs if k.key == key), None)

    def ti(self, name):
        return next(t for t in self.tis if t.name == name)

    def data(self, t):
        s = self.data_off + t.offset
        return self.b[s:s + t.nbytes()]

    def rebuild(self, kvs=None, tensors=None, offsets=None):
        """A new file from key-values (KV list) and tensors ((TI, data)
        list; default: this file's), the data laid out contiguously at the
        alignment unless offsets are given."""
        kvs = self.kvs if kvs is None else kvs
        if tensors is None:
            tensors = [(t, self.data(t)) for t in self.tis]
        a = next((k for k in kvs if k.key == "general.alignment"), None)
        align = struct.unpack("<I", a.raw[:4])[0] if a else 32
        if align & (align - 1) or not 0 < align <= 4096:
            align = 32  # a bad alignment key: lay out as the default
        out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors),
                                              len(kvs)))
        for k in kvs:
            out += enc_str(k.key) + struct.pack("<I", k.type) + k.raw
        offs, pos = [], 0
        for t, d in tensors:
            offs.append(pos)
            pos = (pos + len(d) + align - 1) // align * align
        if offsets is not None:
            offs = offsets
        for (t, _), off in zip(tensors, offs):
            out += enc_str(t.name) + struct.pack("<I", len(t.dims))
            out += struct.pack("<%dQ" % len(t.dims), *t.dims)
            out += struct.pack("<IQ", t.type, off)
        data_off = (len(out) + align - 1) // align * align
        out += b"\0" * (data_off - len(out))
        end = max([off + len(d) for (_, d), off in zip(tensors, offs)] + [0])
        body = bytearray(end)
        for (_, d), off in zip(tensors, offs):
            body[off:off + len(d)] = d
        return bytes(out + body)

    def with_kv(self, key, typ, raw):
        """This file with key set to (typ, raw): replaced where it is, or
        added at the end; raw None removes it."""
        kvs, seen = [], False
        for k in self.kvs:
            if k.key == key:
                seen = True
                if raw is not None:
                    kvs.append(KV(key, typ, raw))
            else:
                kvs.append(k)
        if not seen and raw is not None:
            kvs.append(KV(key, typ, raw))
        return self.rebuild(kvs)


def bits(rng, lo, hi, n):
    """n distinct (byte offset, bit) pairs in bytes lo..hi-1."""
    return [divmod(x, 8) for x in rng.sample(range(8 * lo, 8 * hi),
                                             min(n, 8 * (hi - lo)))]


def put(b, off, fmt, v):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, v)
    return bytes(b)


def flip(b, off, bit):
    b = bytearray(b)
    b[off] ^= 1 << bit
    return bytes(b)


# ---------------------------------------------------------------- cases

class Case:
    """name, kind, what it expects, and a function making (model bytes,
    model suffix, tokenizer bytes or None)."""

    def __init__(self, name, kind, expect, make):
        self.name, self.kind, self.expect, self.make = name, kind, expect, make


def gguf_cases(tag, g, rng, n_trunc, n_flip, header_cuts):
    """The GGUF kinds over one base file g (tag names it in the cases);
    header_cuts: cut at the fields of the header too."""
    cs = []
    b = g.b

    def add(name, kind, expect, fn):
        cs.append(Case("%s-%s" % (tag, name), kind, expect,
                       lambda: (fn(), ".gguf", None)))

    # truncations: every field boundary of the header and of the first
    # key-values and tensor infos, the data section's start, random
    # offsets inside the data, the last bytes
    cuts = {g.header_end, g.data_off, g.data_off + 1, len(b) - 1}
    if header_cuts:
        cuts |= {0, 1, 3, 4, 5, 8, 12, 16, 20, 24, 25, 32, len(b) - 4}
        for k in g.kvs[:3] + g.kvs[-2:]:
            cuts |= {k.at + 4, k.at + 8, k.type_at - 1, k.type_at + 2,
                     k.val_at, (k.val_at + k.end) // 2, k.end - 1}
        for t in g.tis[:2] + g.tis[-1:]:
            cuts |= {t.at + 3, t.ndims_at, t.ne_at + 4, t.type_at, t.off_at,
                     t.off_at + 7}
    cuts = sorted(c for c in cuts if 0 <= c < len(b))
    extra = rng.sample(range(g.data_off, len(b)), n_trunc)
    for c in sorted(set(cuts) | set(extra)):
        add("trunc-%d" % c, "truncate", "refuse", lambda c=c: b[:c])

    # bit flips: the fixed header (magic, version, counts), the key-values,
    # the tensor infos, the data
    for off, bit in bits(rng, 0, 24, n_flip["header"]):
        add("flip-header-%d.%d" % (off, bit), "flip-header",
            "refuse" if off < 8 else "any",
            lambda off=off, bit=bit: flip(b, off, bit))
    for off, bit in bits(rng, 24, g.kv_end, n_flip["kv"]):
        add("flip-kv-%d.%d" % (off, bit), "flip-kv", "any",
            lambda off=off, bit=bit: flip(b, off, bit))
    for off, bit in bits(rng, g.kv_end, g.header_end, n_flip["tinfo"]):
        add("flip-tinfo-%d.%d" % (off, bit), "flip-tinfo", "any",
            lambda off=off, bit=bit: flip(b, off, bit))
    for off, bit in bits(rng, g.data_off, len(b), n_flip["data"]):
        add("flip-data-%d.%d" % (off, bit), "flip-data", "any",
            lambda off=off, bit=bit: flip(b, off, bit))
    return cs


def gguf_struct_cases(g, rng):
    """Huge counts, bad types, bad offsets, retyped tensors, degenerate
    metadata and tokenizers: over the F32 GGUF."""
    cs = []
    b = g.b

    def add(name, kind, expect, fn):
        cs.append(Case("f32-" + name, kind, expect,
                       lambda: (fn(), ".gguf", None)))

    # ---- huge counts and lengths
    for v in (2**64 - 1, 2**63, 2**32, 10**6, len(b)):
        add("n_tensors-%d" % v, "huge-count", "refuse",
            lambda v=v: put(b, 8, "<Q", v))
        add("n_kv-%d" % v, "huge-count", "refuse",
            lambda v=v: put(b, 16, "<Q", v))
    toks = g.kv("tokenizer.ggml.tokens")
    for v in (2**64 - 1, 2**40, 513):
        add("tokens-count-%d" % v, "huge-count", "refuse",
            lambda v=v: put(b, toks.val_at + 4, "<Q", v))
    for v in (2**64 - 1, 2**40):
        add("key-len-%d" % v, "huge-count", "refuse",
            lambda v=v: put(b, g.kvs[2].at, "<Q", v))
        add("name-len-%d" % v, "huge-count", "refuse",
            lambda v=v: put(b, g.tis[3].at, "<Q", v))
    arch = g.kv("general.architecture")
    add("str-len-huge", "huge-count", "refuse",
        lambda: put(b, arch.val_at, "<Q", 2**63))
    t = g.ti("blk.0.attn_q.weight")
    for v in (2**62, 2**63 - 1, 2**64 - 1, 0, 2**32):
        add("ne0-%d" % v, "huge-count", "refuse",
            lambda v=v: put(b, t.ne_at, "<Q", v))
    for v in (0, 5, 2**32 - 1):
        add("n_dims-%d" % v, "huge-count", "refuse",
            lambda v=v: put(b, t.ndims_at, "<I", v))
    # nested arrays: a key whose value is an array of arrays 9 deep
    deep = struct.pack("<IQB", 0, 1, 0)
    for _ in range(9):
        deep = struct.pack("<IQ", T_ARR, 1) + deep
    add("nest-10", "huge-count", "refuse",
        lambda: g.with_kv("x.deep", T_ARR, deep))

    # ---- bad types
    kv = g.kv("llama.block_count")
    for v in (13, 255, 2**32 - 1):
        add("kv-type-%d" % v, "bad-type", "refuse",
            lambda v=v: put(b, kv.type_at, "<I", v))
    for v in (13, 2**32 - 1):
        add("arr-elem-type-%d" % v, "bad-type", "refuse",
            lambda v=v: put(b, toks.val_at, "<I", v))
    for v in (4, 5, 9, 15, 16, 39, 40, 1000, 2**32 - 1):
        add("tensor-type-%d" % v, "bad-type", "refuse",
            lambda v=v: put(b, t.type_at, "<I", v))
    add("bool-2", "bad-type", "refuse",
        lambda: put(b, g.kv("tokenizer.ggml.add_bos_token").val_at, "<B", 2))
    add("version-1", "bad-type", "refuse", lambda: put(b, 4, "<I", 1))
    add("version-4", "bad-type", "refuse", lambda: put(b, 4, "<I", 4))
    add("version-bigendian", "bad-type", "refuse",
        lambda: put(b, 4, "<I", 3 << 24))

    # ---- tensor data offsets
    tis = g.tis
    add("offsets-all-zero", "offset", "refuse",
        lambda: g.rebuild(offsets=[0] * len(tis)))
    add("offsets-overlap-next", "offset", "refuse",
        lambda: put(b, tis[5].off_at, "<Q", tis[4].offset))
    add("offsets-overlap-prev", "offset", "refuse",
        lambda: put(b, tis[4].off_at, "<Q", tis[5].offset))
    add("offsets-overlap-inside", "offset", "refuse",
        lambda: put(b, tis[2].off_at, "<Q", tis[1].offset + 64))
    add("offsets-overlap-embd", "offset", "refuse",
        lambda: put(b, tis[-1].off_at, "<Q", 0))
    add("offsets-one-duplicate", "offset", "refuse",
        lambda: put(b, g.ti("blk.1.attn_q.weight").off_at, "<Q",
                    g.ti("blk.0.attn_q.weight").offset))
    for d in (1, 4, 16, 31):
        add("offset-misaligned-%d" % d, "offset", "refuse",
            lambda d=d: put(b, tis[3].off_at, "<Q", tis[3].offset + d))
    for v in (2**40, 2**64 - 32, len(b), len(b) - g.data_off):
        add("offset-out-of-range-%d" % v, "offset", "refuse",
            lambda v=v: put(b, tis[3].off_at, "<Q", v))
    add("offsets-shifted", "offset", "refuse",
        lambda: g.rebuild(offsets=[t.offset + 32 for t in tis]))
    add("offsets-gap", "offset", "refuse",
        lambda: g.rebuild(offsets=[t.offset + (64 if i > 10 else 0)
                                   for i, t in enumerate(tis)]))
    # the same size swapped: still a tiling of the data, a valid file
    qa, qb = g.ti("blk.0.attn_q.weight"), g.ti("blk.1.attn_q.weight")
    add("offsets-swap-same-size", "offset", "any",
        lambda: put(put(b, qa.off_at, "<Q", qb.offset), qb.off_at, "<Q",
                    qa.offset))
    ka = g.ti("blk.0.attn_k.weight")
    add("offsets-swap-other-size", "offset", "refuse",
        lambda: put(put(b, qa.off_at, "<Q", ka.offset), ka.off_at, "<Q",
                    qa.offset))
    for a in (0, 3, 48, 2**31 + 1):
        add("alignment-%d" % a, "offset", "refuse",
            lambda a=a: _realign(g, a))
    # a power of two: the data section may move (refused) or not (valid)
    for a in (1, 8, 64, 4096):
        add("alignment-%d" % a, "offset", "any",
            lambda a=a: _realign(g, a))
    add("alignment-u64", "offset", "refuse",
        lambda: g.with_kv("general.alignment", T_U64, struct.pack("<Q", 32)))

    # ---- tensors retyped (the header's type changed, the data not): the
    # sizes no longer agree with the layout
    for name in ("blk.0.attn_q.weight", "token_embd.weight",
                 "blk.4.ffn_up.weight", "blk.2.ffn_down.weight",
                 "output_norm.weight", "blk.0.attn_norm.weight"):
        ti = g.ti(name)
        for ty in (2, 8, 1, 30, 3, 6, 14):
            add("retype-%s-%s" % (name, GGML[ty][0]), "retype", "refuse",
                lambda ti=ti, ty=ty: put(b, ti.type_at, "<I", ty))
    # the last tensor by offset retyped smaller: its data no longer reaches
    # the end of the file
    last = max(tis, key=lambda t: t.offset)
    add("retype-last-q8_0", "retype", "refuse",
        lambda: put(b, last.type_at, "<I", 8) if last.dims[0] % 32 == 0
        else put(b, last.type_at, "<I", 1))
    # retyped with the layout rebuilt to match: a consistent file whose
    # q4_0 / q8_0 blocks are f32 bytes read as scales and quants
    for name, ty in (("blk.0.attn_q.weight", 2), ("blk.0.ffn_gate.weight", 8),
                     ("token_embd.weight", 2), ("blk.3.attn_output.weight", 2)):
        add("retype-relaid-%s-%s" % (name, GGML[ty][0]), "retype", "any",
            lambda name=name, ty=ty: _relaid(g, name, ty))
    # a shape changed (the same bytes seen as another shape)
    ti = g.ti("blk.0.attn_k.weight")
    add("reshape-transposed", "retype", "refuse",
        lambda: put(put(b, ti.ne_at, "<Q", ti.dims[1]), ti.ne_at + 8, "<Q",
                    ti.dims[0]))
    add("reshape-3d", "retype", "refuse",
        lambda: _reshape(g, "blk.0.attn_k.weight", [64, 16, 2]))

    # ---- metadata: non-finite and degenerate values
    f32 = lambda v: struct.pack("<f", v)
    u32 = lambda v: struct.pack("<I", v & 0xffffffff)
    for key in ("llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon"):
        short = key.split(".")[-1]
        for v in (float("nan"), float("inf"), float("-inf"), 0.0, -0.0,
                  -1.0, 1e30, 3.4e38) + ((1e-45, 1e-30, 0.5) if
                                         short == "freq_base" else (1.0, 2.0)):
            add("%s-%g" % (short, v), "metadata", "refuse",
                lambda key=key, v=v: g.with_kv(key, T_F32, f32(v)))
        for typ, raw in ((T_STR, enc_str("10000")), (T_U64, struct.pack("<Q", 2**64 - 1)),
                         (T_I32, struct.pack("<i", -5)), (T_BOOL, b"\x01"),
                         (T_F64, struct.pack("<d", 1e300))):
            add("%s-type%d" % (short, typ), "metadata", "refuse",
                lambda key=key, typ=typ, raw=raw: g.with_kv(key, typ, raw))
    # valid but unusual values that must run (or be refused cleanly)
    for key, v in (("llama.rope.freq_base", 1.0), ("llama.rope.freq_base", 5e8),
                   ("llama.attention.layer_norm_rms_epsilon", 0.5),
                   ("llama.attention.layer_norm_rms_epsilon", 1e-12),
                   ("llama.attention.layer_norm_rms_epsilon", 1e-30),
                   ("llama.attention.layer_norm_rms_epsilon", 1e-45)):
        add("%s-%g" % (key.split(".")[-1], v), "metadata", "any",
            lambda key=key, v=v: g.with_kv(key, T_F32, f32(v)))
    ints = {"llama.attention.head_count": (0, -1, 3, 7, 16, 65, 2**31),
            "llama.attention.head_count_kv": (0, -1, 3, 5, 16),
            "llama.context_length": (0, -1, 2**31, 2**22 + 1),
            "llama.embedding_length": (0, -1, 32, 65, 128),
            "llama.feed_forward_length": (0, -1, 171, 173, 2**20),
            "llama.block_count": (0, -1, 6, 1025),
            "llama.rope.dimension_count": (0, -1, 7, 16, 2**31),
            "llama.attention.key_length": (0, 7, 16),
            "llama.attention.value_length": (4,)}
    for key, vals in ints.items():
        short = key[len("llama."):]
        for v in vals:
            add("%s-%d" % (short, v), "metadata", "refuse",
                lambda key=key, v=v: g.with_kv(key, T_U32, u32(v)))
        add("%s-string" % short, "metadata", "refuse",
            lambda key=key: g.with_kv(key, T_STR, enc_str("8")))
        add("%s-negative-i64" % short, "metadata", "refuse",
            lambda key=key: g.with_kv(key, T_I64, struct.pack("<q", -8)))
    for key, v in (("llama.context_length", 1), ("llama.context_length", 4),
                   ("llama.block_count", 4), ("llama.block_count", 1),
                   ("llama.rope.dimension_count", 2)):
        add("%s-%d" % (key[len("llama."):], v), "metadata", "any",
            lambda key=key, v=v: g.with_kv(key, T_U32, u32(v)))
    for key, typ, raw in (
            ("llama.context_length", None, None),
            ("llama.embedding_length", None, None),
            ("llama.rope.scaling.factor", T_F32, f32(float("nan"))),
            ("llama.rope.scaling.factor", T_F32, f32(-2.0)),
            ("llama.rope.scaling.attn_factor", T_F32, f32(float("inf"))),
            ("llama.rope.scaling.attn_factor", T_F32, f32(0.0)),
            ("llama.rope.scaling.type", T_STR, enc_str("yarn")),
            ("llama.rope.scaling.type", T_U32, u32(1)),
            ("llama.final_logit_softcapping", T_F32, f32(float("nan"))),
            ("llama.final_logit_softcapping", T_F32, f32(-1.0)),
            ("general.architecture", T_STR, enc_str("gpt-neox")),
            ("general.architecture", T_STR, enc_str("")),
            ("general.architecture", T_U32, u32(0)),
            ("general.architecture", None, None),
            ("general.name", T_STR, enc_str("a\nb\x1b[31m")),
            ("general.name", T_U32, u32(7))):
        expect = "any" if key == "general.name" or (
            key == "llama.context_length" and raw is None) else "refuse"
        what = "missing" if raw is None else "type%d-%s" % (typ, raw.hex()[:12])
        add("%s-%s" % (key, what), "metadata", expect,
            lambda key=key, typ=typ, raw=raw: g.with_kv(key, typ, raw))

    # ---- tokenizer metadata
    n = struct.unpack_from("<Q", toks.raw, 4)[0]
    pieces = _str_array(toks.raw)
    sc = g.kv("tokenizer.ggml.scores")
    tt = g.kv("tokenizer.ggml.token_type")
    for i, v in ((0, float("nan")), (100, float("nan")), (5, float("inf")),
                 (7, float("-inf"))):
        add("score-%d-%g" % (i, v), "tokenizer", "refuse" if v != v else "any",
            lambda i=i, v=v: put(b, sc.val_at + 12 + 4 * i, "<f", v))
    for i, v in ((0, 7), (3, -1), (300, 2**31 - 1)):
        add("token-type-%d-%d" % (i, v), "tokenizer", "refuse",
            lambda i=i, v=v: put(b, tt.val_at + 12 + 4 * i, "<i", v))
    for key, v in (("tokenizer.ggml.bos_token_id", 512),
                   ("tokenizer.ggml.eos_token_id", 2**31),
                   ("tokenizer.ggml.unknown_token_id", 100000)):
        add("%s-%d" % (key.split(".")[-1], v), "tokenizer", "refuse",
            lambda key=key, v=v: g.with_kv(key, T_U32, u32(v)))
    add("eos-none", "tokenizer", "any",
        lambda: g.with_kv("tokenizer.ggml.eos_token_id", T_U32, u32(-1)))
    add("scores-short", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.scores", T_ARR,
                          enc_arr(T_F32, [0.0] * (n - 1))))
    add("token-type-f32", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.token_type", T_ARR,
                          enc_arr(T_F32, [1.0] * n)))
    add("tokens-empty", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.tokens", T_ARR, enc_arr(T_STR, [])))
    add("tokens-u32", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.tokens", T_ARR, enc_arr(T_U32, [1] * n)))
    add("tokens-missing", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.tokens", None, None))
    add("tokens-nul", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.tokens", T_ARR,
                          enc_arr(T_STR, [p if i != 9 else b"a\0b"
                                          for i, p in enumerate(pieces)])))
    add("tokens-more-than-embd", "tokenizer", "refuse",
        lambda: _vocab(g, pieces + [b"extra"], 512))
    add("tokens-huge-piece", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.tokens", T_ARR,
                          enc_arr(T_STR, [p if i != 9 else b"x" * (2**20 + 1)
                                          for i, p in enumerate(pieces)])))
    add("tokens-all-empty", "tokenizer", "any",
        lambda: g.with_kv("tokenizer.ggml.tokens", T_ARR,
                          enc_arr(T_STR, [b""] * n)))
    add("tokens-duplicates", "tokenizer", "any",
        lambda: g.with_kv("tokenizer.ggml.tokens", T_ARR,
                          enc_arr(T_STR, [b"a"] * n)))
    add("tokenizer-model-bert", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.model", T_STR, enc_str("bert")))
    add("tokenizer-model-gpt2-no-merges", "tokenizer", "refuse",
        lambda: g.with_kv("tokenizer.ggml.model", T_STR, enc_str("gpt2")))
    add("tokenizer-pre-unknown", "tokenizer", "any",
        lambda: g.with_kv("tokenizer.ggml.pre", T_STR, enc_str("nonesuch")))
    add("chat-template-bad", "tokenizer", "any",
        lambda: g.with_kv("tokenizer.chat_template", T_STR,
                          enc_str("{% for %}{{ x.y( }}")))
    # the smallest vocabularies: one token, two tokens (embedding rows cut
    # to match); valid files: the sampler must cope
    for k in (1, 2):
        add("vocab-%d" % k, "tokenizer", "any",
            lambda k=k: _vocab(g, pieces[:k], k))
    return cs


def kq_meta_cases(g):
    """RoPE bases below 1 on the 64-wide heads of the kq file: 1 / theta^x
    overflows float there (a NaN rotation at position 0)."""
    cs = []
    for v in (1e-45, 1e-30, 0.5):
        cs.append(Case("kq-freq_base-%g" % v, "metadata", "refuse",
                       lambda v=v: (g.with_kv("llama.rope.freq_base", T_F32,
                                              struct.pack("<f", v)),
                                    ".gguf", None)))
    return cs


def kq_tokenizer_cases(g):
    """The byte-level BPE tokenizer of the kq file (gpt2, 259 tokens, no
    merges): merges of the wrong type, length or form, token arrays that
    disagree with the embedding's rows."""
    cs = []
    toks = g.kv("tokenizer.ggml.tokens")
    pieces = _str_array(toks.raw)
    n = len(pieces)

    def add(name, expect, fn):
        cs.append(Case("kq-" + name, "tokenizer", expect,
                       lambda: (fn(), ".gguf", None)))

    merges = lambda vals, elem=T_STR: g.with_kv(
        "tokenizer.ggml.merges", T_ARR, enc_arr(elem, vals))
    add("merges-u32", "refuse", lambda: merges([1, 2, 3], T_U32))
    add("merges-no-space", "refuse", lambda: merges([b"ab"]))
    add("merges-unknown-piece", "refuse", lambda: merges([b"zz qq"]))
    add("merges-unknown-merged", "refuse",
        lambda: merges([pieces[70] + b" " + pieces[71]]))
    add("merges-count-huge", "refuse", lambda: put(
        g.b, g.kv("tokenizer.ggml.merges").val_at + 4, "<Q", 2**40))
    add("merges-string", "refuse", lambda: g.with_kv(
        "tokenizer.ggml.merges", T_STR, enc_str("a b")))
    types = struct.unpack_from("<%di" % n, g.kv("tokenizer.ggml.token_type").raw, 12)

    def fewer():
        kvs = []
        for k in g.kvs:
            if k.key == "tokenizer.ggml.tokens":
                k = KV(k.key, T_ARR, enc_arr(T_STR, pieces[:-1]))
            elif k.key == "tokenizer.ggml.token_type":
                k = KV(k.key, T_ARR, enc_arr(T_I32, types[:-1]))
            elif k.key == "tokenizer.ggml.eos_token_id":
                k = KV(k.key, T_U32, struct.pack("<I", n - 2))
            kvs.append(k)
        return g.rebuild(kvs)
    # an embedding padded past the vocabulary is legitimate (the decoder
    # bounds every id): a valid file
    add("tokens-fewer-than-embd", "any", fewer)
    add("token-type-short", "refuse", lambda: g.with_kv(
        "tokenizer.ggml.token_type", T_ARR, enc_arr(T_I32, [1] * (n - 1))))
    add("tokens-byte-ff", "any", lambda: g.with_kv(
        "tokenizer.ggml.tokens", T_ARR, enc_arr(T_STR, [
            p if i != 70 else b"\xff\xfe" for i, p in enumerate(pieces)])))
    add("bos-out-of-range", "refuse", lambda: g.with_kv(
        "tokenizer.ggml.bos_token_id", T_U32, struct.pack("<I", n)))
    return cs


def _str_array(raw):
    elem, n = struct.unpack_from("<IQ", raw, 0)
    o, out = 12, []
    for _ in range(n):
        ln, = struct.unpack_from("<Q", raw, o)
        out.append(raw[o + 8:o + 8 + ln])
        o += 8 + ln
    return out


def _realign(g, a):
    """g laid out with general.alignment 32, then the key's value changed
    to a in place: the reader places the data section at the header's end
    aligned to a, where the writer did not."""
    kvs = [k for k in g.kvs if k.key != "general.alignment"]
    kvs.append(KV("general.alignment", T_U32, struct.pack("<I", 32)))
    out = g.rebuild(kvs)
    return put(out, Gguf(out).kv("general.alignment").val_at, "<I", a)


def _relaid(g, name, ty):
    """g with tensor name retyped ty and the layout rebuilt for the new
    size (its first bytes reinterpreted)."""
    tensors = []
    for t in g.tis:
        d = g.data(t)
        if t.name == name:
            t = TI(t.name, t.dims, ty, 0)
            d = d[:t.nbytes()]
        tensors.append((t, d))
    return g.rebuild(tensors=tensors)


def _reshape(g, name, dims):
    tensors = [((TI(t.name, dims, t.type, 0) if t.name == name else t),
                g.data(t)) for t in g.tis]
    return g.rebuild(tensors=tensors)


def _vocab(g, pieces, rows):
    """g with the vocabulary `pieces` (scores 0, their types, no BOS or EOS:
    <unk> stays id 0) and the embedding cut (or padded with zeros) to rows
    rows."""
    n = len(pieces)
    types = list(struct.unpack_from("<%di" % n, g.kv(
        "tokenizer.ggml.token_type").raw, 12)) if n <= 512 else [1] * n
    drop = ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id")
    kvs = []
    for k in g.kvs:
        if k.key in drop:
            continue
        if k.key == "tokenizer.ggml.tokens":
            k = KV(k.key, T_ARR, enc_arr(T_STR, pieces))
        elif k.key == "tokenizer.ggml.scores":
            k = KV(k.key, T_ARR, enc_arr(T_F32, [0.0] * n))
        elif k.key == "tokenizer.ggml.token_type":
            k = KV(k.key, T_ARR, enc_arr(T_I32, types))
        kvs.append(k)
    tensors = []
    for t in g.tis:
        d = g.data(t)
        if t.name == "token_embd.weight":
            row = len(d) // t.dims[1]
            d = (d + b"\0" * row * rows)[:row * rows]
            t = TI(t.name, [t.dims[0], rows], t.type, 0)
        tensors.append((t, d))
    return g.rebuild(kvs, tensors)


# ------------------------------------------------------------ llama2.c

HDR = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads",
       "vocab_size", "seq_len")


def llama2c_cases(bin_b, tok_b, rng, n_trunc, n_flip):
    cs = []

    def add(name, kind, expect, fn, tok=None):
        cs.append(Case("bin-" + name, kind, expect,
                       lambda: (fn(), ".bin", tok() if tok else None)))

    h = struct.unpack_from("<7i", bin_b, 0)
    for i, f in enumerate(HDR):
        vals = {0, -1, -2**31, 2**31 - 1, h[i] + 1, h[i] - 1, h[i] * 2,
                h[i] // 2, 2**16 + 1}
        if f == "vocab_size":
            vals |= {-h[i], -1, 1, 2}
        for v in sorted(vals):
            add("%s-%d" % (f, v), "llama2c-header", "refuse",
                lambda i=i, v=v: put(bin_b, 4 * i, "<i", v))
    # the same bytes under another head split (n_heads 4, n_kv_heads 2:
    # head_dim 16, kv_dim 32 as before): sizes agree, a valid checkpoint
    add("heads-4-2", "llama2c-header", "any",
        lambda: put(put(bin_b, 12, "<i", 4), 16, "<i", 2))
    for c in sorted({0, 4, 27, 28, 29, len(bin_b) - 1} |
                    {rng.randrange(28, len(bin_b)) for _ in range(n_trunc)}):
        add("trunc-%d" % c, "truncate", "refuse", lambda c=c: bin_b[:c])
    add("trailing-4", "truncate", "refuse", lambda: bin_b + b"\0" * 4)
    for off, bit in bits(rng, 0, 28, n_flip):
        add("flip-header-%d.%d" % (off, bit), "flip-header", "refuse",
            lambda off=off, bit=bit: flip(bin_b, off, bit))
    for off, bit in bits(rng, 28, len(bin_b), n_flip):
        add("flip-data-%d.%d" % (off, bit), "flip-data", "any",
            lambda off=off, bit=bit: flip(bin_b, off, bit))
    # every weight NaN in one layer's attention norm (a valid layout whose
    # logits are NaN from the first position)
    d = h[0]
    rms_att = 28 + 4 * h[5] * d
    add("nan-rms-att", "nonfinite", "nonfinite",
        lambda: bin_b[:rms_att] + struct.pack("<f", float("nan")) * d +
        bin_b[rms_att + 4 * d:])

    # the tokenizer: max_token_length, records' scores and lengths
    same = lambda: bin_b
    recs, o = [], 4
    while o < len(tok_b):
        ln, = struct.unpack_from("<i", tok_b, o + 4)
        recs.append(o)
        o += 8 + ln
    for c in sorted({0, 2, 4, 5, 8, 12, len(tok_b) - 1} |
                    {rng.randrange(4, len(tok_b)) for _ in range(n_trunc)}):
        add("tok-trunc-%d" % c, "tokenizer", "refuse", same,
            lambda c=c: tok_b[:c])
    for v in (0, 2**31, 2**32 - 1):
        add("tok-max-len-%d" % v, "tokenizer", "refuse", same,
            lambda v=v: put(tok_b, 0, "<I", v))
    for r in (0, 1, 300):
        ro = recs[r]
        for v in (float("nan"), float("inf"), float("-inf")):
            add("tok-score-%d-%g" % (r, v), "tokenizer",
                "refuse" if v != v else "any", same,
                lambda ro=ro, v=v: put(tok_b, ro, "<f", v))
        for v in (-1, 2**31 - 1, 10**6):
            add("tok-len-%d-%d" % (r, v), "tokenizer", "refuse", same,
                lambda ro=ro, v=v: put(tok_b, ro + 4, "<i", v))
    ro = recs[40]
    add("tok-nul", "tokenizer", "refuse", same,
        lambda: put(tok_b, ro + 8, "<B", 0))
    for off, bit in bits(rng, 0, len(tok_b), n_flip):
        add("tok-flip-%d.%d" % (off, bit), "tokenizer", "any", same,
            lambda off=off, bit=bit: flip(tok_b, off, bit))
    return cs


def nonfinite_cases(g, quant):
    """Valid files whose weights make the logits non-finite: generate must
    end with an error naming the position (info may describe the file).
    g: the F32 base; quant: {tag: Gguf} of the quantized bases, whose
    matrices read quantized activations (a NaN there must stay a NaN)."""
    cs = []
    nan, inf = struct.pack("<f", float("nan")), struct.pack("<f", float("inf"))

    def add(name, fn):
        cs.append(Case(name, "nonfinite", "nonfinite",
                       lambda: (fn(), ".gguf", None)))

    def fill(gg, name, val):
        tensors = []
        for t in gg.tis:
            d = gg.data(t)
            if t.name == name:
                d = val * (len(d) // len(val))
            tensors.append((t, d))
        return gg.rebuild(tensors=tensors)

    def nan_scales(gg, t):
        """t's Q8_0 blocks with f16 scales NaN (0x7e00)."""
        b = bytearray(gg.b)
        s0 = gg.data_off + t.offset
        for k in range(t.nbytes() // 34):
            struct.pack_into("<H", b, s0 + 34 * k, 0x7e00)
        return bytes(b)

    add("f32-nan-token-embd", lambda: fill(g, "token_embd.weight", nan))
    add("f32-inf-output-norm", lambda: fill(g, "output_norm.weight", inf))
    add("f32-nan-ffn-norm-1", lambda: fill(g, "blk.1.ffn_norm.weight", nan))
    for tag, gq in sorted(quant.items()):
        for name in ("blk.0.attn_norm.weight", "output_norm.weight"):
            add("%s-nan-%s" % (tag, name.replace(".weight", "")),
                lambda gq=gq, name=name: fill(gq, name, nan))
        # a Q8_0 matrix whose scales are NaN: its outputs are NaN, and
        # so is every later activation (quantized for the next matrix)
        t = next((t for t in gq.tis if t.type == 8 and
                  t.name.startswith("blk.0.")), None)
        if t is not None:
            add("%s-nan-scales-%s" % (tag, t.name.replace(".weight", "")),
                lambda gq=gq, t=t: nan_scales(gq, t))
    return cs


def make_bases(a, work):
    """The valid files every case starts from, made from models/ with this
    egang (deterministic: the conversion and the synthetic models are
    seeded): {tag: path}, and the recipe of each."""
    bin_p = os.path.join(a.models, "stories260K.bin")
    tok_p = os.path.join(a.models, "tok512.bin")
    recipes = {
        "bin": None,
        "f32": ["convert", bin_p, "-z", tok_p],
        "q8": ["synth", "stories260k", "-q"],
        "q4": ["synth", "stories260k", "--type", "q4_0", "-q"],
        "kq": ["synth", "smollm-135m", "--layers", "1", "--vocab", "259",
               "--type", "q4_k_m", "-q"],
    }
    paths = {"bin": bin_p, "tok": tok_p}
    for tag, args in recipes.items():
        if args is None:
            continue
        out = os.path.join(work, "base-%s.gguf" % tag)
        try:
            p = subprocess.run([a.egang] + args + ["-o", out],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
        except OSError as e:
            raise SystemExit("corrupt_corpus: %s: %s" % (a.egang, e.strerror))
        if p.returncode != 0:
            raise SystemExit("corrupt_corpus: base %s: egang %s failed: %s" % (
                tag, " ".join(args), p.stderr.decode(errors="replace").strip()))
        paths[tag] = out
    return paths, {t: ("egang " + " ".join(r) if r else "models/stories260K.bin + "
                       "models/tok512.bin") for t, r in recipes.items()}


def all_cases(bases, seed):
    """Every case, in a fixed order (the seed picks the offsets and bits)."""
    rng = random.Random(seed)
    cs = llama2c_cases(open(bases["bin"], "rb").read(),
                       open(bases["tok"], "rb").read(), rng, n_trunc=6,
                       n_flip=10)
    g = Gguf(open(bases["f32"], "rb").read())
    cs += gguf_cases("f32", g, rng, 10,
                     {"header": 16, "kv": 30, "tinfo": 30, "data": 24}, True)
    cs += gguf_struct_cases(g, rng)
    quant = {}
    for tag, nt, nf in (("q8", 4, 12), ("q4", 4, 12), ("kq", 3, 8)):
        gq = Gguf(open(bases[tag], "rb").read())
        cs += gguf_cases(tag, gq, rng, nt,
                         {"header": 0, "kv": 4, "tinfo": nf, "data": nf}, False)
        if tag == "kq":
            cs += kq_meta_cases(gq) + kq_tokenizer_cases(gq)
        quant[tag] = gq
    cs += nonfinite_cases(g, quant)
    names = set()
    for c in cs:
        assert c.name not in names, c.name
        names.add(c.name)
    return cs


def select(cs, a):
    """The cases --only names (each must exist), or every n-th case so
    that about --cases remain (the same ones for the same count)."""
    if a.only:
        want = [n for o in a.only for n in o.split(",") if n]
        by = {c.name: c for c in cs}
        missing = [n for n in want if n not in by]
        if missing:
            raise SystemExit("corrupt_corpus: no case named %s (`list -v` "
                             "names them)" % ", ".join(missing))
        return [by[n] for n in want]
    if a.cases and a.cases < len(cs):
        step = len(cs) / a.cases
        return [cs[int(i * step)] for i in range(a.cases)]
    return cs


# ---------------------------------------------------------------- runs

SAN = re.compile(r"(Address|Undefined|Leak|Memory|Thread)Sanitizer|"
                 r"runtime error:")
PROMPT = "Once upon a time"


def commands(egang, model, tok):
    """(what, argv) of the three runs of a case: info, greedy and sampled
    generation of a few tokens with a fixed seed."""
    z = ["-z", tok] if tok else []
    gen = [egang, "generate", "-m", model] + z + ["-n", "4", "-p", PROMPT,
                                                  "-q", "-s", "7"]
    return [("info", [egang, "info"] + z + [model]),
            ("greedy", gen + ["-t", "0"]),
            ("sampled", gen + ["-t", "1", "--top-p", "0.9"])]


def run_one(cmd, timeout):
    """(outcome, rc, stderr) of one command: ok, refused, or a failure:
    timeout, sanitizer, crash, error-lines."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", None, ""
    err = p.stderr.decode("utf-8", "replace")
    if SAN.search(err):
        return "sanitizer", p.returncode, err
    if p.returncode == 0:
        return "ok", 0, err
    if p.returncode not in (1, 2):
        return "crash", p.returncode, err
    lines = err.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != 1 or not lines[0].strip():
        return "error-lines", p.returncode, err
    return "refused", p.returncode, err


def judge(case, res, secs, limit):
    """(True, "") when the case's runs are what it expects, else (False,
    why)."""
    bad = [(w, o, rc, e) for w, (o, rc, e) in res.items()
           if o not in ("ok", "refused")]
    if bad:
        w, o, rc, e = bad[0]
        return False, "%s: %s (exit %s): %s" % (
            w, o, rc, " | ".join(e.strip().splitlines()[:6])[:600])
    if secs > limit:
        return False, "the case took %.1f s, over %g s" % (secs, limit)
    outs = {w: o for w, (o, _, _) in res.items()}
    if case.expect == "refuse" and any(o != "refused" for o in outs.values()):
        ran = [w for w, o in outs.items() if o == "ok"]
        return False, "expected a refusal, but %s ran (exit 0)" % \
            ", ".join(ran)
    if case.expect == "nonfinite":
        for w in ("greedy", "sampled"):
            o, _, e = res[w]
            if o != "refused":
                return False, "%s sampled from non-finite logits (exit 0)" % w
            if outs["info"] == "ok" and "position" not in e:
                return False, "%s refused without naming the position: %s" % (
                    w, e.strip())
    if outs["info"] == "refused" and "ok" in (outs["greedy"], outs["sampled"]):
        return False, "info refused the file (%s) but generate ran" % \
            res["info"][2].strip()
    return True, ""


def write_case(case, work):
    """Writes the case's model (and tokenizer, if it has its own) under
    work: (model path, tokenizer path or None, paths to remove)."""
    data, suffix, tokb = case.make()
    path = os.path.join(work, case.name + suffix)
    with open(path, "wb") as f:
        f.write(data)
    tok, made = None, [path]
    if tokb is not None:
        tok = os.path.join(work, case.name + ".tok.bin")
        with open(tok, "wb") as f:
            f.write(tokb)
        made.append(tok)
    return path, tok, made


def recipe(case, a, recipes):
    """How to make the case's file again and rerun it, for a failure."""
    tag = case.name.split("-")[0]
    me = os.path.relpath(os.path.abspath(__file__))
    return ["  recipe: class %s, base %s (%s), mutation '%s' (seed %d, "
            "%s)" % (case.kind, tag, recipes.get(tag, "?"), case.name, a.seed,
                     me),
            "  rerun:  /usr/bin/python3 %s run --egang %s --seed %d --only %s -v"
            % (me, a.egang, a.seed, case.name),
            "  file:   /usr/bin/python3 %s write DIR --egang %s --seed %d "
            "--only %s" % (me, a.egang, a.seed, case.name)]


def fmt_exits(counter):
    return " ".join("%s:%d" % (k, counter[k]) for k in sorted(counter, key=str)) \
        or "-"


def rm_work(work):
    """Removes the temp dir and what is left in it."""
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    os.rmdir(work)


def cmd_run(a, work):
    bases, recipes = make_bases(a, work)
    cases = select(all_cases(bases, a.seed), a)

    def one(case):
        path, tok, made = write_case(case, work)
        if case.name.startswith("bin-") and tok is None:
            tok = bases["tok"]
        res = {}
        t0 = time.monotonic()
        for what, cmd in commands(a.egang, path, tok):
            res[what] = run_one(cmd, a.timeout)
        secs = time.monotonic() - t0
        for m in made:
            os.unlink(m)
        return case, res, secs

    t0 = time.monotonic()
    results = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for case, res, secs in ex.map(one, cases):
            results.append((case, res, secs, judge(case, res, secs, a.timeout)))
    wall = time.monotonic() - t0

    classes = {}
    for case, res, secs, (good, why) in results:
        k = classes.setdefault(case.kind, {"n": 0, "failed": 0,
                                           "info": {}, "generate": {}})
        k["n"] += 1
        k["failed"] += not good
        for w, (o, rc, _) in res.items():
            d = k["info" if w == "info" else "generate"]
            key = "T" if o == "timeout" else rc
            d[key] = d.get(key, 0) + 1
        if a.verbose or not good:
            print("%-4s %-12s %-48s %s  %.2fs  %s" % (
                "ok" if good else "BAD", case.kind, case.name,
                "/".join(o for o, _, _ in res.values()), secs, why))
            if a.verbose:
                for w, (o, rc, e) in res.items():
                    if e.strip():
                        print("    %s (exit %s): %s" % (w, rc, e.strip()[:400]))
            if not good:
                print("\n".join(recipe(case, a, recipes)))
    for name, k in sorted(classes.items()):
        line = "corpus %s: %d cases, info exits %s, generate exits %s" % (
            name, k["n"], fmt_exits(k["info"]), fmt_exits(k["generate"]))
        if k["failed"]:
            print("FAIL: %s (%d cases failed)" % (line, k["failed"]))
        else:
            print("PASS: " + line)
    slow = max(results, key=lambda r: r[2]) if results else None
    print("corpus: %d cases (%d runs) in %.1f s with %d jobs, %d failed; "
          "slowest case %s %.2f s" % (
              len(results), 3 * len(results), wall, a.jobs,
              sum(k["failed"] for k in classes.values()),
              slow[0].name if slow else "-", slow[2] if slow else 0))
    return 0


def cmd_write(a, work):
    os.makedirs(a.dir, exist_ok=True)
    bases, _ = make_bases(a, work)
    for c in select(all_cases(bases, a.seed), a):
        path, tok, _ = write_case(c, a.dir)
        print(path if tok is None else "%s %s" % (path, tok))
    return 0


def cmd_list(a, work):
    bases, _ = make_bases(a, work)
    kinds = {}
    for c in select(all_cases(bases, a.seed), a):
        if a.verbose:
            print("%-12s %-9s %s" % (c.kind, c.expect, c.name))
        kinds[(c.kind, c.expect)] = kinds.get((c.kind, c.expect), 0) + 1
    for (k, e), n in sorted(kinds.items()):
        print("%-16s %-9s %4d" % (k, e, n))
    print("total", sum(kinds.values()))
    return 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("mode", choices=("run", "write", "list"))
    ap.add_argument("dir", nargs="?", help="write: where the files go")
    ap.add_argument("--egang", required=True, help="the egang binary")
    ap.add_argument("--models", default=os.path.join(here, "..", "models"),
                    help="where stories260K.bin and tok512.bin are")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cases", type=int, default=0,
                    help="run about this many cases, evenly spread (0: all)")
    ap.add_argument("--only", action="append", default=[],
                    help="only the named case(s), comma-separated")
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="seconds a case may take (each command too)")
    ap.add_argument("--work", default=None, help="temp dir's parent")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if a.jobs < 1 or a.cases < 0:
        ap.error("--jobs must be >= 1 and --cases >= 0")
    if a.mode == "write" and not a.dir:
        ap.error("write needs DIR")
    work = tempfile.mkdtemp(prefix="egang-corpus-", dir=a.work)
    try:
        return {"run": cmd_run, "write": cmd_write, "list": cmd_list}[a.mode](
            a, work)
    finally:
        rm_work(work)


if __name__ == "__main__":
    sys.exit(main())
