// tools/llamacpp/tokenize.mjs: llama.cpp's tokenization (node-llama-cpp, the
// vocabulary only) of each line of a corpus, for tokenizer-check.
//
//   node tokenize.mjs MODEL CORPUS
//       per corpus line (C escapes: \n \t \r \\ \xNN), one output line
//       'VALID<TAB>ids<TAB>ids' with VALID 1 when the line's bytes are
//       valid UTF-8, 0 when not, 2 when no JavaScript string can stand for
//       them, and the space-separated results of llama_tokenize(text,
//       add_special = false, parse_special = true, then false).
//
// JavaScript strings cannot carry invalid UTF-8, so a line that is not
// valid UTF-8 is given to llama.cpp as the string its own decoder
// (unicode_cpts_from_utf8) makes of those bytes: each byte that does not
// start a complete sequence becomes U+FFFD. That is exactly what llama.cpp's
// byte-level BPE sees; its SentencePiece path works on raw bytes instead,
// so tokenizer-check leaves those lines out for llama vocabularies.
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";
import path from "node:path";

const [modelPath, corpus] = process.argv.slice(2);
const nlcDir = process.env.EGANG_NLC_DIR;
if (!modelPath || !corpus || !nlcDir) {
	process.stderr.write("usage: EGANG_NLC_DIR=DIR tokenize.mjs MODEL CORPUS\n");
	process.exit(2);
}

function unescape(s) {
	const b = [];
	const raw = Buffer.from(s, "utf8");
	for (let i = 0; i < raw.length; i++) {
		const c = raw[i];
		if (c !== 0x5c || i + 1 >= raw.length) { b.push(c); continue; }
		const e = String.fromCharCode(raw[++i]);
		if (e === "n") b.push(10);
		else if (e === "t") b.push(9);
		else if (e === "r") b.push(13);
		else if (e === "x" && i + 2 < raw.length) {
			b.push(parseInt(String.fromCharCode(raw[i + 1], raw[i + 2]), 16));
			i += 2;
		} else b.push(raw[i]);
	}
	return Buffer.from(b);
}

// llama.cpp's unicode_cpt_from_utf8 over the bytes, U+FFFD for each byte
// where it throws (it checks lead and continuation bits only).
function llamaDecode(u) {
	let s = "";
	representable = true;
	for (let i = 0; i < u.length;) {
		const c = u[i];
		const need = !(c & 0x80) ? 1 : !(c & 0x40) ? 0 : !(c & 0x20) ? 2
			: !(c & 0x10) ? 3 : !(c & 0x08) ? 4 : 0;
		let ok = need > 0 && i + need <= u.length;
		for (let j = 1; ok && j < need; j++) ok = (u[i + j] & 0xc0) === 0x80;
		let cp = 0xfffd;
		if (ok) {
			cp = need === 1 ? c : c & (0x7f >> need);
			for (let j = 1; j < need; j++) cp = (cp << 6) | (u[i + j] & 0x3f);
			if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
				// llama.cpp keeps a surrogate (re-encoded as its 3
				// bytes) and throws above U+10FFFF: no JS string
				// carries either
				cp = 0xfffd;
				representable = false;
			}
			i += need;
		} else i++;
		s += String.fromCodePoint(cp);
	}
	return s;
}

let representable = true;
const nlc = await import(pathToFileURL(path.join(nlcDir, "node_modules/node-llama-cpp/dist/index.js")).href);
const llama = await nlc.getLlama({
	gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
	progressLogs: false, logLevel: "error",
});
const model = await llama.loadModel({ modelPath, gpuLayers: 0, vocabOnly: true });
const lines = readFileSync(corpus, "utf8").split("\n");
if (lines.at(-1) === "") lines.pop();
const dec = new TextDecoder("utf-8", { fatal: true });
const out = [];
for (const line of lines) {
	const bytes = unescape(line);
	let text, valid = 1;
	try { text = dec.decode(bytes); } catch {
		text = llamaDecode(bytes);
		valid = representable ? 0 : 2;
	}
	out.push(`${valid}\t${Array.from(model.tokenize(text, true)).join(" ")}` +
		`\t${Array.from(model.tokenize(text, false)).join(" ")}`);
}
process.stdout.write(out.join("\n") + "\n");
await model.dispose();
await llama.dispose();
