// tools/llamacpp/summary.mjs OUT BUSY NCPU: the tables of compare-llamacpp
// from OUT/raw.jsonl; writes OUT/summary.csv (min/median/max of every
// engine, metric, model and thread count), OUT/ratios.csv and, when gnuplot
// is there, OUT/ratios.png.
//
// llama.cpp's figures are its own time (the llama_decode calls, timed by
// the shim: decode_in_tok_s, prefill_in_tok_s); the wall time through
// node-llama-cpp's per-token JavaScript loop is the *_wall metric. egang's
// are its `bench decode|prefill --json` median of one rep (or, with --busy,
// `egang generate`'s decode tok/s). Tenants (--busy): the sum over cores of
// the mean units/s each burner reported (every 100 ms) while the engine
// decoded, and that as a fraction of the tenants' rate with nothing else
// running; a window shorter than a report period has no rate ('-').
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";

const [out, busyArg, ncpuArg] = process.argv.slice(2);
const busy = busyArg === "1";
const ncpu = Number(ncpuArg);
const raw = readFileSync(path.join(out, "raw.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

// ---- tenants' rate in a time window -----------------------------------------
const burns = [];
if (busy) {
	const t0 = Number(readFileSync(path.join(out, "burn_t0"), "utf8"));
	for (let c = 0; c < ncpu; c++) {
		const f = path.join(out, `burn.${c}.txt`);
		const pts = existsSync(f) ? readFileSync(f, "utf8").split("\n")
			.map((l) => l.match(/^burn t=([0-9.]+) units\/s=([0-9.]+)/)).filter(Boolean)
			.map((m) => [t0 + Number(m[1]), Number(m[2])]) : [];
		burns.push(pts);
	}
}
// reports whose period (100 ms) lies inside [a, b]
function tenantRate(a, b) {
	let sum = 0, ok = false;
	for (const pts of burns) {
		const inw = pts.filter(([t]) => t >= a + 0.1 && t <= b);
		if (inw.length === 0) continue;
		ok = true;
		sum += inw.reduce((s, [, r]) => s + r, 0) / inw.length;
	}
	return ok ? sum : undefined;
}

// ---- values per (model, threads, series) ------------------------------------
const groups = new Map(); // key name|threads -> {name, threads, series: Map(metric -> [values])}
const order = [];
function put(name, threads, metric, v) {
	if (v === undefined || v === null || !Number.isFinite(v)) return;
	const key = `${name}|${threads}`;
	if (!groups.has(key)) { groups.set(key, { name, threads, s: new Map() }); order.push(key); }
	const g = groups.get(key);
	if (!g.s.has(metric)) g.s.set(metric, []);
	g.s.get(metric).push(v);
}
let alone;
for (const { tag, result: r } of raw) {
	if (tag.engine === "tenants-alone") { alone = tenantRate(tag.t0, tag.t1); continue; }
	const { name, threads } = tag;
	// the tenants' rate while the engine decoded: llama.cpp reports its
	// decode's wall-clock window; egang's is the end of its run minus the
	// decode time (the process exits right after); else the whole run
	if (busy) {
		let [a, b] = [tag.t0, tag.t1];
		if (r?.decode_epoch) [a, b] = r.decode_epoch;
		else if (r?.decode_tok_s > 0) a = tag.t1 - r.decode_tokens / r.decode_tok_s;
		put(name, threads, `${tag.engine}/tenants`, tenantRate(a, b));
	}
	if (r === null || r.timeout) {
		put(name, threads, `${tag.engine}/failed`, r?.timeout ? 1 : 0);
		if (!r?.partial) continue;
		// a decode stopped by --timeout: its rate until then (node's view)
		put(name, threads, `${tag.engine.slice(6)}/decode_partial`, r.decode_tok_s);
		continue;
	}
	if (tag.engine.startsWith("llama-")) {
		const cfg = tag.engine.slice(6);
		put(name, threads, `${cfg}/decode`, r.decode_in_tok_s);
		put(name, threads, `${cfg}/prefill`, r.prefill_in_tok_s);
		put(name, threads, `${cfg}/decode_wall`, r.decode_tok_s);
		put(name, threads, `${cfg}/prefill_wall`, r.prefill_tok_s);
		put(name, threads, `${cfg}/extra_threads`, r.extra_threads);
	} else if (tag.engine === "egang") { // --busy: egang generate
		put(name, threads, "egang/decode", r.decode_tok_s);
	} else {
		const what = tag.engine.slice(6); // egang-decode, egang-prefill
		put(name, threads, `egang/${what}`, r.tok_s?.median);
		put(name, threads, `egang/${what}_gb_s`, r.gb_s);
	}
}

const sorted = (a) => [...a].sort((x, y) => x - y);
const median = (a) => { const s = sorted(a), n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const stat = (g, m) => { const v = g.s.get(m); return v && v.length ? { n: v.length, min: Math.min(...v), med: median(v), max: Math.max(...v) } : null; };

// ---- summary.csv ---------------------------------------------------------------
const csv = ["model,threads,busy,series,metric,n,min,median,max"];
for (const key of order) {
	const g = groups.get(key);
	for (const [m, v] of g.s) {
		const [series, metric] = m.split("/");
		const st = stat(g, m);
		csv.push([g.name, g.threads, busy ? 1 : 0, series, metric, st.n, st.min, st.med, st.max].join(","));
	}
}
if (busy && alone !== undefined) csv.push(["-", 0, 1, "tenants-alone", "tenants", 1, alone, alone, alone].join(","));
writeFileSync(path.join(out, "summary.csv"), csv.join("\n") + "\n");

// ---- tables ------------------------------------------------------------------------
const f1 = (x) => x === undefined ? "-" : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
const mmm = (st) => st ? `${f1(st.min)}/${f1(st.med)}/${f1(st.max)}` : "-";
const med = (st) => st ? f1(st.med) : "-";
const ratio = (a, b) => a && b ? a.med / b.med : undefined;
const fr = (x) => x === undefined ? "-" : x.toFixed(2) + "x";
function table(title, head, rows) {
	const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
	const line = (r) => r.map((c, i) => (i < 2 ? String(c).padEnd(w[i]) : String(c).padStart(w[i]))).join("  ");
	console.log(`\n${title}`);
	console.log(line(head));
	console.log(w.map((n) => "-".repeat(n)).join("  "));
	for (const r of rows) console.log(line(r));
}

const ratios = ["model,threads,busy,decode_ratio,prefill_ratio"];
if (!busy) {
	for (const what of ["decode", "prefill"]) {
		const rows = order.map((k) => {
			const g = groups.get(k);
			// a column whose runs all timed out shows the best rate reached before
			const col = (cfg) => {
				const st = stat(g, `${cfg}/${what}`), p = stat(g, `${cfg}/${what}_partial`);
				return !st && p ? `<=${f1(p.max)} (timed out)` : mmm(st);
			};
			return [g.name, g.threads, col("shipped"), col("pool"),
				med(stat(g, `pool/${what}_wall`)), mmm(stat(g, `egang/${what}`)),
				["llama-shipped", "llama-pool", `egang-${what}`].filter((e) => g.s.has(`${e}/failed`))
					.map((e) => { const v = g.s.get(`${e}/failed`), to = v.filter((x) => x === 1).length;
						return `${e}:${v.length}${to ? ` (${to} timed out)` : ""}`; }).join(" ") || "-"];
		});
		table(`${what} tok/s, min/median/max (llama.cpp: its own llama_decode time; pool via node: the median seen through node-llama-cpp)`,
			["model", "threads", "llama.cpp shipped", "llama.cpp pool", "pool via node", "egang", "failed runs"], rows);
	}
	const rows = order.map((k) => {
		const g = groups.get(k);
		const d = ratio(stat(g, "egang/decode"), stat(g, "pool/decode"));
		const p = ratio(stat(g, "egang/prefill"), stat(g, "pool/prefill"));
		const ds = ratio(stat(g, "egang/decode"), stat(g, "shipped/decode"));
		const ps = ratio(stat(g, "egang/prefill"), stat(g, "shipped/prefill"));
		const th = stat(g, "pool/extra_threads");
		ratios.push([g.name, g.threads, 0, d ?? "", p ?? ""].join(","));
		return [g.name, g.threads, fr(d), fr(p), fr(ds), fr(ps), th ? th.max : "-"];
	});
	table("egang / llama.cpp, ratio of medians (judged against pool: decode >= 1.00x, prefill >= 0.80x)",
		["model", "threads", "decode/pool", "prefill/pool", "decode/shipped", "prefill/shipped", "pool threads"], rows);
	console.log("pool threads: threads the llama.cpp process had beyond node's own while decoding with the pool (threads - 1 when the pool is attached; 0 as shipped)");
} else {
	const rows = order.map((k) => {
		const g = groups.get(k);
		const full = stat(g, "pool/decode"), part = stat(g, "pool/decode_partial");
		let d = ratio(stat(g, "egang/decode"), full);
		let lcol = mmm(full), dcol = fr(d);
		if (!full && part) { // every llama.cpp run timed out: its rate until then bounds it
			d = ratio(stat(g, "egang/decode"), part);
			lcol = `<=${f1(part.max)} (timed out)`;
			dcol = d === undefined ? "-" : `>=${fr(stat(g, "egang/decode").med / part.max)}`;
		}
		const tl = stat(g, "llama-pool/tenants"), te = stat(g, "egang/tenants");
		const pct = (st) => st && alone ? `${(100 * st.med / alone).toFixed(1)}%` : "-";
		ratios.push([g.name, g.threads, 1, d ?? "", ""].join(","));
		return [g.name, g.threads, lcol, mmm(stat(g, "egang/decode")), dcol,
			tl ? `${f1(tl.med)} (${pct(tl)})` : "-", te ? `${f1(te.med)} (${pct(te)})` : "-"];
	});
	table(`busy: one burn tenant per core; decode tok/s min/median/max, tenants' units/s (of alone: ${alone ? f1(alone) : "-"})`,
		["model", "threads", "llama.cpp pool", "egang elastic-preempt", "egang/pool", "tenants w/ llama.cpp", "tenants w/ egang"], rows);
}
writeFileSync(path.join(out, "ratios.csv"), ratios.join("\n") + "\n");

// ---- ratios.png -----------------------------------------------------------------------
if (spawnSync("gnuplot", ["--version"]).status === 0) {
	const dat = ratios.slice(1).map((l) => { const c = l.split(","); return `"${c[0]} t${c[1]}" ${c[3] || "NaN"} ${c[4] || "NaN"}`; });
	writeFileSync(path.join(out, "ratios.dat"), dat.join("\n") + "\n");
	const gp = `set terminal pngcairo size 1000,500 noenhanced
set output '${path.join(out, "ratios.png")}'
set title 'egang / llama.cpp (pool), medians${busy ? ", one tenant per core" : ""}'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8
set logscale y
set ylabel 'egang / llama.cpp (log scale; 1 = equal)'
set xtics rotate by -30
set grid ytics
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
plot '${path.join(out, "ratios.dat")}' using 2:xtic(1) title 'decode'${busy ? "" : ", '' using 3 title 'prefill'"}
`;
	const r = spawnSync("gnuplot", [], { input: gp });
	if (r.status !== 0) process.stderr.write(`compare-llamacpp: gnuplot failed: ${String(r.stderr).split("\n")[0]}\n`);
}
