// tools/llamacpp/agree.mjs: one prompt's agreement between egang and
// llama.cpp builds, from their greedy tokens and next-token distributions
// (tools/llamacpp/agreement runs it).
//
//   node agree.mjs VOCAB N_PROMPT EG_IDS EG_LOGITS NAME LL_IDS LL_LOGPROBS [NAME LL_IDS LL_LOGPROBS ...]
//
// EG_IDS, LL_IDS: space-separated sequences (the prompt's N_PROMPT ids,
// then the generated ones); EG_LOGITS: egang generate --logits-dump
// (float32, VOCAB per generated token); LL_LOGPROBS: run.mjs check's
// EGANG_LLAMA_LOGPROBS file (float64 log-probabilities, VOCAB per
// generated token). The first llama.cpp build is the reference; the others
// are its own builds for other ISA levels, the yardstick for what a
// rounding difference does on this model. Prints one JSON object:
//   compared     generated positions compared: the shorter answer's count
//                (egang ends at an end-of-turn token, llama.cpp at an
//                end-of-generation one; each includes that token)
//   first        the first position (from 0, after the prompt) where the
//                greedy tokens differ, -1 when none; eg, ll: the two picks
//   m            the reference's log-probability margin between its pick
//                and egang's at first
//   d            per position up to first (inclusive: the contexts are the
//                same there), max over the vocabulary of |egang's
//                log-softmax - the reference's log-probability|; d_max,
//                d_median over those positions, d_first at first
//   t_max        per position up to first, the reference's margin between
//                its two most likely tokens against the same two tokens'
//                log-probability difference in egang: the largest change
//                (how far egang moves a top-two decision)
//   builds       per other build: its first difference from the
//                reference (-1 none), same_as_egang (its tokens equal
//                egang's through first), d_max and t_max against the
//                reference over their common positions, and spread, how
//                far its margin between the two picks at first is from the
//                reference's (when it shares the reference's tokens
//                before first)
import { readFileSync } from "node:fs";

function die(msg) {
	process.stderr.write(`llamacpp-agree: ${msg}\n`);
	process.exit(2);
}
const args = process.argv.slice(2);
if (args.length < 7 || (args.length - 4) % 3 !== 0)
	die("usage: agree.mjs VOCAB N_PROMPT EG_IDS EG_LOGITS NAME LL_IDS LL_LOGPROBS [...]");
const nv = Number(args[0]), np = Number(args[1]);
if (!Number.isInteger(nv) || nv < 2 || !Number.isInteger(np) || np < 1) die("bad VOCAB or N_PROMPT");
const ids = (s) => s.trim().split(/\s+/).map(Number);
const f32 = (p) => { const b = readFileSync(p); return new Float32Array(b.buffer, b.byteOffset, b.length >> 2); };
const f64 = (p) => { const b = readFileSync(p); return new Float64Array(b.buffer, b.byteOffset, b.length >> 3); };

const egIds = ids(args[2]).slice(np);
const egRaw = f32(args[3]);
const builds = [];
for (let i = 4; i < args.length; i += 3)
	builds.push({ name: args[i], ids: ids(args[i + 1]).slice(np), lp: f64(args[i + 2]) });
// the positions both engines generated: either may have ended its answer
// first (egang at an end-of-turn token, llama.cpp at an end-of-generation
// one), and the first difference is then at the shorter one's end at latest
const ref = builds[0];
const n = Math.min(egIds.length, egRaw.length / nv, ref.ids.length, ref.lp.length / nv);
if (n < 1) die("no generated position to compare");

// egang's log-softmax at step s (float64 from its float32 logits)
function egLogp(s) {
	const e = egRaw.subarray(s * nv, (s + 1) * nv);
	let mx = -Infinity;
	for (const v of e) if (v > mx) mx = v;
	let z = 0;
	for (const v of e) z += Math.exp(v - mx);
	const lz = mx + Math.log(z), out = new Float64Array(nv);
	for (let j = 0; j < nv; j++) out[j] = e[j] - lz;
	return out;
}
// max over the vocabulary of |a - b| (tokens either side gives -inf, a
// probability that underflowed in float32, are left out)
function dist(a, b) {
	let d = 0;
	for (let j = 0; j < nv; j++)
		if (Number.isFinite(a[j]) && Number.isFinite(b[j])) d = Math.max(d, Math.abs(a[j] - b[j]));
	return d;
}
const step = (lp, s) => lp.subarray(s * nv, (s + 1) * nv);
// |(r[t1] - r[t2]) - (x[t1] - x[t2])|, t1 and t2 the reference's two most
// likely tokens
function topShift(x, r) {
	let t1 = 0, t2 = 1;
	if (r[t2] > r[t1]) [t1, t2] = [t2, t1];
	for (let j = 2; j < nv; j++)
		if (r[j] > r[t1]) { t2 = t1; t1 = j; } else if (r[j] > r[t2]) t2 = j;
	return Math.abs((r[t1] - r[t2]) - (x[t1] - x[t2]));
}
const firstDiff = (a, b, k) => { for (let i = 0; i < k; i++) if (a[i] !== b[i]) return i; return -1; };

const first = firstDiff(egIds, ref.ids, n);
const last = first >= 0 ? first : n - 1;
const d = [];
let tMax = 0;
for (let s = 0; s <= last; s++) {
	const e = egLogp(s), r = step(ref.lp, s);
	d.push(dist(e, r));
	tMax = Math.max(tMax, topShift(e, r));
}
const sorted = [...d].sort((x, y) => x - y);
const out = {
	compared: n, first, d_max: Math.max(...d), t_max: tMax, d_median: sorted[Math.floor((sorted.length - 1) / 2)],
	d: d.map((x) => Number(x.toPrecision(3))),
};
let eg = -1, ll = -1;
if (first >= 0) {
	eg = egIds[first];
	ll = ref.ids[first];
	const r = step(ref.lp, first);
	Object.assign(out, { eg, ll, m: r[ll] - r[eg], d_first: d[first] });
}
out.builds = builds.slice(1).map((b) => {
	const k = Math.min(n, b.ids.length, b.lp.length / nv);
	const fb = firstDiff(b.ids, ref.ids, k);
	let dm = 0, tm = 0;
	for (let s = 0; s <= (fb >= 0 ? fb : k - 1); s++) {
		dm = Math.max(dm, dist(step(b.lp, s), step(ref.lp, s)));
		tm = Math.max(tm, topShift(step(b.lp, s), step(ref.lp, s)));
	}
	const o = { name: b.name, first: fb, d_max: dm, t_max: tm };
	if (first >= 0) {
		o.same_as_egang = firstDiff(b.ids, egIds, first + 1) < 0;
		if (fb < 0 || fb >= first) {
			const x = step(b.lp, first);
			o.spread = Math.abs((x[ll] - x[eg]) - out.m);
		}
	}
	return o;
});
process.stdout.write(JSON.stringify(out) + "\n");
