// tools/llamacpp/run.mjs: one llama.cpp measurement through node-llama-cpp, for
// tools/llamacpp/compare-llamacpp (which runs it, alternating with egang).
//
//   node run.mjs bench MODEL THREADS DECODE_TOKENS PROMPT_TOKENS
//       one JSON line: decode tok/s (DECODE_TOKENS greedy tokens after a
//       1-token prompt, BOS) and prefill tok/s (a PROMPT_TOKENS prompt),
//       and how many threads the process gained while the context existed
//   node run.mjs ids MODEL THREADS N
//       'sequence_ids: BOS t1 .. tN', N greedy tokens after BOS
//   node run.mjs long MODEL THREADS PROMPT_TOKENS DECODE_TOKENS
//       one JSON line: prefill tok/s of a PROMPT_TOKENS prompt (batches of
//       512) and decode tok/s of DECODE_TOKENS greedy tokens right after it
//       (at depth PROMPT_TOKENS), with llama.cpp's defaults for attention:
//       flash attention on, f16 KV cache (EGANG_LLAMA_CTX: the context size)
//   node run.mjs check MODEL THREADS N IDS [IDS ...]
//       per IDS (a prompt: comma-separated token ids, used as given), one
//       line 'sequence_ids: p1 .. pk t1 .. tN', N greedy tokens after it.
//       The context computes attention in f32 as egang does: flash
//       attention off and an F32 KV cache (llama.cpp's default CPU flash
//       attention rounds Q, K and V to f16 whatever the cache type, which
//       alone moves an f32 model's log-probabilities by up to 2e-3 against
//       5e-6 without it; doc/kquant-check). With EGANG_LLAMA_LOGPROBS=PREFIX,
//       prompt i's N steps of log-probabilities (vocab float64 each, from
//       the binding's softmax of llama.cpp's logits) go to PREFIX.i
//   node run.mjs grammar MODEL THREADS N GBNF_FILE IDS
//       as check, for one prompt, with the generation constrained by the
//       GBNF grammar (llama.cpp's grammar sampler through
//       llama.createGrammar): up to N greedy tokens, the end-of-generation
//       token included when the grammar lets the model end ('sequence_ids:
//       p1 .. pk t1 .. tm', then 'text: JSON-STRING' of the generated
//       tokens, then 'eog: IDS', the vocabulary's end-of-generation
//       tokens); tools/llamacpp/grammar-agreement. With
//       EGANG_LLAMA_LOGPROBS=FILE, each step's log-probabilities (vocab
//       float64, -inf where the grammar sampler removed the token) go to
//       FILE
//   node run.mjs pieces MODEL THREADS ID...
//       'tokenizer: MODEL_KIND' (gpt2, llama, ...), then per ID a line 'ID
//       TOKEN_TYPE JSON_TEXT' from the GGUF's vocabulary (the text in the
//       vocabulary's own encoding: byte-level characters or <0xHH>)
//
// EGANG_NLC_DIR is the folder holding node_modules/node-llama-cpp. The
// prebuilt CPU binaries of @node-llama-cpp/linux-x64 are used as they are:
// gpu false, build "never", skipDownload (so nothing is ever built or
// fetched; the script also runs this under a network namespace with no
// network where it can).
//
// Timing: decode is the time from asking for the first token to receiving
// the DECODE_TOKENS-th, i.e. DECODE_TOKENS one-token forward passes (the
// BOS prompt is a one-token pass like the others) with node-llama-cpp's
// greedy sampling between them, as a user of the package gets it. Prefill
// is evaluateWithoutGeneratingNewTokens of PROMPT_TOKENS ids in one batch
// (the context's batch is 512). Each is preceded by an untimed one-token
// warm-up; the KV cache is cleared in between. With the shim's
// EGANG_LLAMA_TIMES, the same phases are also reported as llama.cpp's own
// time: the sum over the phase's llama_decode calls (decode_in_tok_s is
// calls per second of one-token passes, prefill_in_tok_s tokens per second).
import { pathToFileURL } from "node:url";
import { readdirSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import path from "node:path";

function die(msg) {
	process.stderr.write(`llamacpp-run: ${msg}\n`);
	process.exit(2);
}

const [mode, modelPath, threadsArg, a4, a5] = process.argv.slice(2);
if (!["bench", "ids", "check", "grammar", "pieces", "long"].includes(mode) || !modelPath || !threadsArg)
	die("usage: run.mjs bench MODEL THREADS DECODE_TOKENS PROMPT_TOKENS | ids MODEL THREADS N | check MODEL THREADS N IDS... | grammar MODEL THREADS N GBNF_FILE IDS | long MODEL THREADS PROMPT_TOKENS DECODE_TOKENS");
const threads = Number(threadsArg);
if (!Number.isInteger(threads) || threads < 1) die(`bad thread count '${threadsArg}'`);
const nlcDir = process.env.EGANG_NLC_DIR;
if (!nlcDir) die("EGANG_NLC_DIR is not set");

// node's own resident set before llama.cpp loads a model (long mode
// reports its peak RSS less this)
const baseRssKb = Math.round(process.memoryUsage().rss / 1024);
const nlc = await import(pathToFileURL(path.join(nlcDir, "node_modules/node-llama-cpp/dist/index.js")).href);
const llama = await nlc.getLlama({
	gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
	progressLogs: false, maxThreads: 0, logLevel: "error",
});
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const nTasks = () => readdirSync("/proc/self/task").length;
const tasksBefore = nTasks();
const context = await model.createContext({
	contextSize: Number(process.env.EGANG_LLAMA_CTX ?? 512), batchSize: 512, threads,
	...(mode === "check" || mode === "grammar" ? {
		flashAttention: false,
		experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
	} : {}),
	// llama.cpp's own default (llama-cli, llama-bench): flash attention on the CPU
	...(mode === "long" ? { flashAttention: true } : {}),
});
const seq = context.getSequence();
const bos = model.tokens.bos ?? 1;
const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
const now = () => Number(process.hrtime.bigint()) / 1e9;
// the ggml CPU library the backend loader chose ("haswell", "zen4", ..),
// from this process's mappings
const ggmlCpu = () => readFileSync("/proc/self/maps", "utf8")
	.match(/libggml-cpu-([A-Za-z0-9_]+)\.so/)?.[1] ?? "none";

// With the shim's EGANG_LLAMA_TIMES, every llama_decode call appends
// 'N_TOKENS NANOSECONDS'; a phase is the lines added while it ran.
const timesPath = process.env.EGANG_LLAMA_TIMES;
function timesNow() {
	if (!timesPath || !existsSync(timesPath)) return [];
	return readFileSync(timesPath, "utf8").split("\n").filter(Boolean)
		.map((l) => l.split(" ").map(Number));
}
function phase(before) {
	const calls = timesNow().slice(before);
	if (!timesPath || calls.length === 0) return null;
	let tokens = 0, ns = 0;
	for (const [n, t] of calls) { tokens += n; ns += t; }
	return { calls: calls.length, tokens, s: ns / 1e9 };
}

// a decode in progress: on SIGTERM (the script's --timeout) its rate so far
// is reported, marked partial, so a very slow run still gives a figure
let live = null;
async function greedy(n) {
	const out = [];
	for await (const tok of seq.evaluate([bos], { temperature: 0 })) {
		out.push(tok);
		if (live) live.tokens = out.length;
		if (out.length >= n) break;
	}
	return out;
}
process.on("SIGTERM", () => {
	if (live && live.tokens > 0) {
		const s = now() - live.t0;
		process.stdout.write(JSON.stringify({
			engine: "llama.cpp", model: modelPath, threads, partial: true,
			decode_tokens: live.tokens, decode_s: s, decode_tok_s: live.tokens / s,
			decode_epoch: [live.e0, (performance.timeOrigin + performance.now()) / 1000],
		}) + "\n");
	}
	process.exit(124);
});

if (mode === "check") {
	const n = Number(a4);
	if (!Number.isInteger(n) || n < 1) die(`bad token count '${a4}'`);
	const dump = process.env.EGANG_LLAMA_LOGPROBS;
	if (dump && !nVocab) die(`${modelPath}: no tokenizer.ggml.tokens (vocabulary size)`);
	let index = 0;
	for (const list of process.argv.slice(6)) {
		const prompt = list.split(",").map(Number);
		if (prompt.some((t) => !Number.isInteger(t) || t < 0)) die(`bad prompt ids '${list}'`);
		await seq.clearHistory();
		const out = [];
		const lp = dump ? new Float64Array(nVocab * n).fill(-Infinity) : null;
		for await (const r of seq.evaluateWithMetadata(prompt, { probabilities: !!dump }, { temperature: 0 })) {
			if (lp)
				for (const [t, p] of r.probabilities) lp[out.length * nVocab + t] = Math.log(p);
			out.push(r.token);
			if (out.length >= n) break;
		}
		if (lp) writeFileSync(`${dump}.${index}`, Buffer.from(lp.buffer, 0, out.length * nVocab * 8));
		index++;
		process.stdout.write(`sequence_ids: ${[...prompt, ...out].join(" ")}\n`);
	}
} else if (mode === "grammar") {
	const n = Number(a4);
	if (!Number.isInteger(n) || n < 1) die(`bad token count '${a4}'`);
	const list = process.argv[7];
	const prompt = (list ?? "").split(",").map(Number);
	if (!list || prompt.some((t) => !Number.isInteger(t) || t < 0)) die(`bad prompt ids '${list}'`);
	const grammar = await llama.createGrammar({ grammar: readFileSync(a5, "utf8") });
	const state = new nlc.LlamaGrammarEvaluationState({ model, grammar });
	const out = [];
	const dump = process.env.EGANG_LLAMA_LOGPROBS;
	if (dump && !nVocab) die(`${modelPath}: no tokenizer.ggml.tokens (vocabulary size)`);
	const lp = dump ? new Float64Array(nVocab * n).fill(-Infinity) : null;
	for await (const r of seq.evaluateWithMetadata(prompt, { probabilities: !!dump },
		{ temperature: 0, grammarEvaluationState: state, yieldEogToken: true })) {
		if (lp)
			for (const [t, p] of r.probabilities) lp[out.length * nVocab + t] = Math.log(p);
		out.push(r.token);
		if (out.length >= n || model.isEogToken(r.token)) break;
	}
	if (lp) writeFileSync(dump, Buffer.from(lp.buffer, 0, out.length * nVocab * 8));
	process.stdout.write(`sequence_ids: ${[...prompt, ...out].join(" ")}\n`);
	process.stdout.write(`text: ${JSON.stringify(model.detokenize(out.filter((t) => !model.isEogToken(t))))}\n`);
	const eog = [];
	for (let t = 0; t < (nVocab ?? 0); t++) if (model.isEogToken(t)) eog.push(t);
	process.stdout.write(`eog: ${eog.join(" ")}\n`);
} else if (mode === "pieces") {
	const tk = model.fileInfo.metadata?.tokenizer?.ggml ?? {};
	process.stdout.write(`tokenizer: ${tk.model}\n`);
	for (const a of process.argv.slice(5))
		process.stdout.write(`${a} ${tk.token_type?.[Number(a)] ?? 0} ${JSON.stringify(tk.tokens?.[Number(a)] ?? "")}\n`);
} else if (mode === "long") {
	const nPrompt = Number(a4), nDecode = Number(a5);
	if (!Number.isInteger(nPrompt) || nPrompt < 2) die(`bad prompt token count '${a4}'`);
	if (!Number.isInteger(nDecode) || nDecode < 1) die(`bad decode token count '${a5}'`);
	if (!nVocab) die(`${modelPath}: no tokenizer.ggml.tokens to draw prompt ids from`);
	if (nPrompt + nDecode + 1 > context.contextSize)
		die(`prompt and decode (${nPrompt + nDecode + 1}) exceed the context (${context.contextSize})`);
	// the ids of bench mode's prompt, and one more to start the decode
	const prompt = [bos];
	for (let i = 1; i < nPrompt; i++) prompt.push(1 + ((i * 7919) % (nVocab - 1)));
	await seq.evaluateWithoutGeneratingNewTokens([bos]); // warm-up
	await seq.clearHistory();
	let mark = timesNow().length;
	let t0 = now();
	await seq.evaluateWithoutGeneratingNewTokens(prompt);
	const prefillS = now() - t0;
	const prefillIn = phase(mark);
	mark = timesNow().length;
	t0 = now();
	let got = 0;
	for await (const tok of seq.evaluate([1 + ((nPrompt * 7919) % (nVocab - 1))], { temperature: 0 })) {
		void tok;
		if (++got >= nDecode) break;
	}
	const decodeS = now() - t0;
	const decodeIn = phase(mark);
	process.stdout.write(JSON.stringify({
		engine: "llama.cpp", model: modelPath, threads, ggml_cpu: ggmlCpu(),
		flash_attention: true, context_size: context.contextSize,
		prompt_tokens: nPrompt, prefill_s: prefillS, prefill_tok_s: nPrompt / prefillS,
		decode_tokens: got, decode_s: decodeS, decode_tok_s: got / decodeS,
		prefill_calls: prefillIn?.calls, prefill_in_s: prefillIn?.s,
		prefill_in_tok_s: prefillIn ? prefillIn.tokens / prefillIn.s : undefined,
		decode_calls: decodeIn?.calls, decode_in_s: decodeIn?.s,
		decode_in_tok_s: decodeIn ? decodeIn.calls / decodeIn.s : undefined,
		max_rss_kb: process.resourceUsage().maxRSS, base_rss_kb: baseRssKb,
	}) + "\n");
} else if (mode === "ids") {
	const n = Number(a4);
	if (!Number.isInteger(n) || n < 1) die(`bad token count '${a4}'`);
	const ids = await greedy(n);
	process.stdout.write(`sequence_ids: ${[bos, ...ids].join(" ")}\n`);
	process.stdout.write(`ggml_cpu: ${ggmlCpu()}\n`);
} else {
	const nDecode = Number(a4), nPrompt = Number(a5);
	if (!Number.isInteger(nDecode) || nDecode < 1) die(`bad decode token count '${a4}'`);
	if (!Number.isInteger(nPrompt) || nPrompt < 0 || nPrompt > 500) die(`bad prompt token count '${a5}'`);
	if (!nVocab) die(`${modelPath}: no tokenizer.ggml.tokens to draw prompt ids from`);

	await greedy(1); // warm-up
	await seq.clearHistory();
	let mark = timesNow().length;
	const epoch = () => (performance.timeOrigin + performance.now()) / 1000;
	const e0 = epoch();
	let t0 = now();
	live = { t0, e0, tokens: 0 };
	const got = await greedy(nDecode);
	const decodeS = now() - t0;
	const e1 = epoch();
	live = null;
	const decodeIn = phase(mark);
	if (got.length !== nDecode) die(`decode produced ${got.length} tokens, not ${nDecode}`);
	const tasksDuring = nTasks();
	await seq.clearHistory();

	// deterministic prompt ids spread over the vocabulary (BOS first);
	// PROMPT_TOKENS 0 skips prefill
	let prefillS = NaN, prefillIn = null;
	if (nPrompt > 0) {
		const prompt = [bos];
		for (let i = 1; i < nPrompt; i++) prompt.push(1 + ((i * 7919) % (nVocab - 1)));
		await seq.evaluateWithoutGeneratingNewTokens([bos]); // warm-up
		await seq.clearHistory();
		mark = timesNow().length;
		t0 = now();
		await seq.evaluateWithoutGeneratingNewTokens(prompt);
		prefillS = now() - t0;
		prefillIn = phase(mark);
		await seq.clearHistory();
	}

	process.stdout.write(JSON.stringify({
		engine: "llama.cpp", model: modelPath, threads, ggml_cpu: ggmlCpu(),
		context_threads: context.currentThreads,
		decode_tokens: nDecode, decode_s: decodeS, decode_tok_s: nDecode / decodeS,
		decode_epoch: [e0, e1], // wall-clock window of the decode (tenants' rate, --busy)
		prompt_tokens: nPrompt, prefill_s: nPrompt ? prefillS : undefined,
		prefill_tok_s: nPrompt ? nPrompt / prefillS : undefined,
		extra_threads: tasksDuring - tasksBefore,
		// llama.cpp's own time (llama_decode calls only), when the shim times it
		decode_calls: decodeIn?.calls, decode_in_s: decodeIn?.s,
		decode_in_tok_s: decodeIn ? decodeIn.calls / decodeIn.s : undefined,
		prefill_calls: prefillIn?.calls, prefill_in_s: prefillIn?.s,
		prefill_in_tok_s: prefillIn ? prefillIn.tokens / prefillIn.s : undefined,
	}) + "\n");
}
await context.dispose();
await model.dispose();
await llama.dispose();
