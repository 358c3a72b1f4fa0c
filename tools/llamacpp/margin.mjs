// tools/llamacpp/margin.mjs: at the step where egang's and llama.cpp's greedy
// tokens first differ, how far apart the two engines' numbers are
// (tools/llamacpp/compare-llamacpp --check).
//
//   node margin.mjs EGANG_LOGITS LLAMA_LOGPROBS VOCAB STEP EG_ID LL_ID
//
// EGANG_LOGITS: egang generate --logits-dump (float32, VOCAB per step);
// LLAMA_LOGPROBS: run.mjs check's EGANG_LLAMA_LOGPROBS file
// (float64 log-probabilities, VOCAB per step). STEP counts generated tokens
// from 0. Prints one line 'MARGIN NOISE':
//   MARGIN  llama.cpp's own log-probability of its pick minus that of
//           egang's pick at STEP (how close llama.cpp itself was to a tie)
//   NOISE   max over the vocabulary of |egang's log-softmax - llama.cpp's
//           log-probability| at STEP, after removing their mean difference
//           (the float32 softmax normalisations differ by a constant)
import { readFileSync } from "node:fs";

function die(msg) {
	process.stderr.write(`llamacpp-margin: ${msg}\n`);
	process.exit(2);
}
const [egPath, llPath, vs, ss, es, ls] = process.argv.slice(2);
const nv = Number(vs), step = Number(ss), egId = Number(es), llId = Number(ls);
if (![nv, step, egId, llId].every(Number.isInteger) || nv < 2 || step < 0 ||
    egId < 0 || llId < 0 || egId >= nv || llId >= nv)
	die("usage: margin.mjs EGANG_LOGITS LLAMA_LOGPROBS VOCAB STEP EG_ID LL_ID");
const eb = readFileSync(egPath), lb = readFileSync(llPath);
if (eb.length < (step + 1) * nv * 4 || lb.length < (step + 1) * nv * 8)
	die(`step ${step} is past the end of the logits files`);
const eg = new Float32Array(eb.buffer.slice(eb.byteOffset + step * nv * 4, eb.byteOffset + (step + 1) * nv * 4));
const ll = new Float64Array(lb.buffer.slice(lb.byteOffset + step * nv * 8, lb.byteOffset + (step + 1) * nv * 8));

let mx = -Infinity;
for (const v of eg) mx = Math.max(mx, v);
let z = 0;
for (const v of eg) z += Math.exp(v - mx);
const lz = mx + Math.log(z);
let off = 0, n = 0;
for (let j = 0; j < nv; j++)
	if (Number.isFinite(ll[j])) { off += eg[j] - lz - ll[j]; n++; }
off /= n;
let noise = 0;
for (let j = 0; j < nv; j++)
	if (Number.isFinite(ll[j])) noise = Math.max(noise, Math.abs(eg[j] - lz - ll[j] - off));
process.stdout.write(`${(ll[llId] - ll[egId]).toPrecision(3)} ${noise.toPrecision(3)}\n`);
