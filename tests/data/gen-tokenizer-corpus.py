#!/usr/bin/python3
"""Writes tests/data/tokenizer-corpus.txt: the strings on which egang's
tokenizers are checked against llama.cpp (tools/llamacpp/tokenizer-check).
One string per line in C escapes (\\n \\t \\r \\\\ \\xNN), so a line can hold
newlines and invalid UTF-8. Deterministic; the output is committed."""
import random, sys

rng = random.Random(18)
out = []

def add(b):
    out.append(b if isinstance(b, bytes) else b.encode())

words = ("the quick brown fox jumps over lazy dog while seventeen curious "
         "engineers measure latency of threads on cores under pressure and "
         "nobody expects it to work however It's They'll we've I'd don't "
         "WON'T Hello World naïve café résumé coöperate Zürich São Paulo").split()
prose = [
    "Once upon a time, there was a little girl named Lily.",
    "She loved to play outside in the park with her friends.",
    "The elastic gang lends cores to other processes between tokens.",
    "It's a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.",
    "\"Quoted text,\" she said; 'single quotes' too -- and an em—dash…",
    "E-mail me at someone@example.com or visit https://example.org/a?b=c&d=e#frag.",
    "Prices: $19.99, €5, £3.50, ¥1000; 50% off! (Limited time.)",
    "HELLO WORLD. hello world. Hello World.",
    "Mr. O'Neil's dog's bone wasn't theirs; they'd've known.",
    "Dr. Smith arrived at 10:30 a.m. on 2024-03-15.",
]
for p in prose:
    add(p)
for i in range(80):
    n = rng.randint(3, 25)
    s = " ".join(rng.choice(words) for _ in range(n))
    if rng.random() < 0.5:
        s = s[0].upper() + s[1:] + rng.choice([".", "!", "?", ",", ";", ":"])
    add(s)
code = [
    "int main(int argc, char **argv) {", "\treturn 0;", "}",
    "for (size_t i = 0; i < n; i++) sum += a[i] * b[i];",
    "def f(x):\n    return x ** 2 + 1\n",
    "    if not items:\n        raise ValueError(\"empty\")",
    "const add = (a, b) => a + b; // arrow",
    "#include <stdio.h>\n#define MAX(a,b) ((a)>(b)?(a):(b))",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "x = {'key': [1, 2, 3], \"other\": None}",
    "fn main() { println!(\"{}\", 1 + 2); }",
    "    }\n  }\n}\n",
    "if (a != b && c <= d || !e) { x >>= 2; y <<= 3; }",
    "git commit -m 'fix: off-by-one in tokenizer.c'",
    "<html><body><div class=\"x\">text</div></body></html>",
    "$ ls -la /usr/bin | grep -E '^-rwx' | wc -l",
    "a=1;b=2;c=a+b;print(c)",
    "// TODO(someone): remove this hack\n/* block */",
    "while True:\n\tpass\n",
    "std::vector<std::string> v{\"a\", \"b\"};",
]
for c in code:
    add(c)
ops = ["+", "-", "*", "/", "==", "!=", "->", "::", "&&", "||", "+=", "<<", ">>"]
for i in range(40):
    ind = " " * rng.choice([0, 2, 4, 8]) if rng.random() < 0.7 else "\t" * rng.randint(1, 3)
    v = rng.choice(["x", "count", "buf_len", "self.items", "ptr->next", "i"])
    add(f"{ind}{v} {rng.choice(ops)} {rng.randint(0, 9999)};")
cjk = ["你好，世界！", "我爱北京天安门。", "今天天气很好，我们去公园散步吧。", "机器学习是人工智能的一个分支。",
       "日本語のテキストです。", "東京は日本の首都です。", "ひらがなとカタカナ、そして漢字。", "ラーメンを食べたい！",
       "안녕하세요, 세계!", "한국어 문장입니다.", "서울은 대한민국의 수도입니다.", "繁體中文測試：臺灣、香港。",
       "混合English和中文text。", "数字１２３と全角ＡＢＣ", "「引用」『二重』【括弧】"]
for c in cjk:
    add(c)
for i in range(25):
    add("".join(rng.choice(cjk)[:rng.randint(2, 8)] for _ in range(rng.randint(1, 4))))
arabic = ["مرحبا بالعالم", "اللغة العربية جميلة", "كيف حالك اليوم؟", "هذا نص تجريبي للترميز.",
          "السلام عليكم ورحمة الله", "٠١٢٣٤٥٦٧٨٩ أرقام عربية", "القاهرة، مصر"]
dev = ["नमस्ते दुनिया", "हिंदी एक सुंदर भाषा है।", "आप कैसे हैं?", "यह एक परीक्षण वाक्य है।",
       "भारत की राजधानी नई दिल्ली है।", "०१२३४५६७८९ अंक", "क्षत्रिय ज्ञान श्री"]
for a in arabic + dev:
    add(a)
for i in range(18):
    add(rng.choice(arabic) + " " + rng.choice(arabic))
    add(rng.choice(dev) + " " + rng.choice(dev))
emoji = ["👍", "😀😃😄", "👨‍👩‍👧‍👦", "👩‍💻", "🏳️‍🌈", "❤️", "👍🏽", "🧑🏿‍🚀", "🇩🇪🇯🇵", "1️⃣",
         "🤷‍♀️", "👁️‍🗨️", "🐕‍🦺", "🫶🏻", "😵‍💫"]
for e in emoji:
    add(e)
    add(f"I {e} this")
for i in range(10):
    add(" ".join(rng.choice(emoji) for _ in range(rng.randint(2, 6))))
for n in range(1, 17):
    add(" " * n)
    add("a" + " " * n + "b")
for n in range(1, 9):
    add("\t" * n)
    add("\n" * n)
    add("x" + "\n" * n + "y")
    add(" \t" * n + "z")
for s in ["\r\n", "a\r\nb", " \n ", "\n\n\n  \n", "end   ", "   start", "\t\tindent\n\t\tindent",
          "a \n b", "  \t \n\n\t", "word\n\n\nword", "\u00a0nbsp\u00a0", "\u3000ideographic space"]:
    add(s)
for n in range(1, 13):
    for k in range(4):
        d = "".join(str(rng.randint(0, 9)) for _ in range(n))
        add([d, " " + d, "x" + d + "y", d + "." + d[:2]][k])
specials = ["<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>",
            "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<start_of_turn>", "<end_of_turn>",
            "<bos>", "<eos>", "<think>", "</think>", "<pad>", "<tool_call>", "[INST]", "<<SYS>>"]
for s in specials:
    add(s)
    add(f"text {s} more")
for i in range(20):
    a, b = rng.choice(specials), rng.choice(specials)
    add(f"{a}user\n{rng.choice(prose)}{b}")
for s in ["<|im_start", "im_end|>", "<|<|im_start|>|>", "<s><s></s>", "< s >", "<|im_start|><|im_start|>",
          "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"]:
    add(s)
invalid = [b"\xff", b"\xfe\xff", b"abc\x80def", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(", b"\xf0\x9f\x98",
           b"\xf0\x9f\x98 x", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf8\x88\x80\x80\x80",
           b"\x80\x81\x82", b"ok \xbf ok", b"\xe4\xbd\xa0\xe5", b"caf\xe9", b"\xc3\xa9\xc3", b"a\xffb\xfec",
           b"\xf4\x90\x80\x80"]
for b in invalid:
    add(b)
    add(b"Hello " + b + b" world")
control = [b"\x00", b"a\x00b", b"\x01\x02\x03", b"\x1b[31mred\x1b[0m", b"\x7f", b"bell\x07"]
for b in control:
    add(b)
while len(out) < 520:
    add(" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))))

with open(sys.argv[1] if len(sys.argv) > 1 else "tokenizer-corpus.txt", "wb") as f:
    for b in out:
        o = bytearray()
        for c in b:
            if c == 0x5c: o += b"\\\\"
            elif c == 0x0a: o += b"\\n"
            elif c == 0x09: o += b"\\t"
            elif c == 0x0d: o += b"\\r"
            elif c < 0x20 or c == 0x7f: o += b"\\x%02x" % c
            else: o.append(c)
        # invalid UTF-8 bytes as \xNN so the file itself is UTF-8
        try:
            bytes(o).decode()
            f.write(bytes(o) + b"\n")
        except UnicodeDecodeError:
            f.write("".join(("\\x%02x" % c) if c >= 0x80 else chr(c) for c in o).encode() + b"\n")
print(len(out), file=sys.stderr)
