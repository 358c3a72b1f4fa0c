// tools/llamacpp/agree-table.mjs: the table of tools/llamacpp/agreement
// from its agreement.jsonl (one object per model and prompt: agree.mjs's
// fields with model, prompt, kind, n_prompt, egang, llama), one block per
// model, and the verdict per difference: "same"; a split one of
// llama.cpp's other libraries also makes; a near-tie (llama.cpp's margin m
// at most the largest top-two margin change t of its other libraries on
// that prompt); or UNEXPLAINED (exit 1).
//
//   node agree-table.mjs AGREEMENT.jsonl
import fs from "node:fs";
const rows = fs.readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean).map(JSON.parse);
const f = (x, p = 3) => (x === undefined ? "-" : Number(x).toFixed(p));
let bad = 0;
for (const model of [...new Set(rows.map((r) => r.model))]) {
	const rs = rows.filter((r) => r.model === model);
	console.log(`\n${model}: ${rs.length} prompts`);
	console.log("  #  kind          prompt  compared  first difference (egang/llama.cpp)       m   d at it   d max  d median   t max  | other libraries: first difference, d max, t max | verdict");
	let agree = 0, dmax = 0, tmax = 0;
	const meds = [], lib = {};
	for (const r of rs) {
		dmax = Math.max(dmax, r.d_max);
		tmax = Math.max(tmax, r.t_max);
		meds.push(...r.d);
		for (const b of r.builds) {
			lib[b.name] ??= { d: 0, t: 0 };
			lib[b.name].d = Math.max(lib[b.name].d, b.d_max);
			lib[b.name].t = Math.max(lib[b.name].t, b.t_max);
		}
		const others = r.builds.map((b) => `${b.name} ${b.first < 0 ? "none" : b.first} ${f(b.d_max)} ${f(b.t_max)}`).join(", ");
		let verdict = "same";
		if (r.first < 0) agree++;
		else {
			const same = r.builds.filter((b) => b.same_as_egang).map((b) => b.name);
			const shift = Math.max(0, ...r.builds.map((b) => b.t_max));
			if (same.length) verdict = `split also made by llama.cpp ${same.join(", ")}`;
			else if (r.m <= shift) verdict = `near-tie: m <= ${f(shift)}, the most llama.cpp's libraries move a top-two margin here`;
			else { verdict = `UNEXPLAINED: m > ${f(shift)}, the most llama.cpp's libraries move a top-two margin here`; bad++; }
		}
		const fd = r.first < 0 ? "none" : `${r.first} (${r.eg}/${r.ll})`;
		console.log(`  ${String(r.prompt).padStart(2)} ${r.kind.padEnd(13)} ${String(r.n_prompt).padStart(6)}  ${String(r.compared).padStart(8)}  ${fd.padEnd(36)} ${f(r.m).padStart(6)}  ${f(r.d_first).padStart(7)}  ${f(r.d_max).padStart(6)}  ${f(r.d_median).padStart(8)}  ${f(r.t_max).padStart(6)}  | ${others || "-"} | ${verdict}`);
	}
	meds.sort((a, b) => a - b);
	const libs = Object.entries(lib).map(([k, v]) => `${k} d ${f(v.d)}, t ${f(v.t)}`).join("; ");
	console.log(`  ${model}: ${agree} of ${rs.length} prompts agree on every compared token; egang vs llama.cpp over every compared position: d (max |log-probability difference| over the vocabulary) max ${f(dmax)}, median ${f(meds[Math.floor((meds.length - 1) / 2)])}; t (largest change of a top-two margin) max ${f(tmax)}. llama.cpp's other libraries vs its reference, max: ${libs || "-"}`);
}
console.log(`\n${bad} unexplained difference(s)`);
process.exitCode = bad ? 1 : 0;
