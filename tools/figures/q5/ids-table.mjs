// tools/figures/q5/ids-table.mjs FILE.jsonl: the table of ids-agree.sh's
// runs (one line per model and prompt) and the counts under it.
//
// Per run: egang's first difference from llama.cpp's best library
// (position with the prompt, generated step, egang's / llama.cpp's pick,
// llama.cpp's margin m between them, d = the largest log-probability
// difference over the vocabulary there), and each other library's first
// difference from the best one. Verdict of a difference: "same split as
// LIB" when that library's tokens equal egang's through it; "near-tie"
// when m is at most the largest t (change of a top-two margin) of
// llama.cpp's own libraries against its best on that prompt; otherwise
// "unexplained".
import { readFileSync } from "node:fs";

const file = process.argv[2];
if (!file) {
	process.stderr.write("usage: ids-table.mjs FILE.jsonl\n");
	process.exit(2);
}
const runs = readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
const f3 = (x) => x.toFixed(3);
let egDiff = 0, unexplained = 0;
const libDiff = {};
const rows = [];
for (const o of runs) {
	const libs = o.builds.map((b) => {
		if (b.first >= 0) libDiff[b.name] = (libDiff[b.name] || 0) + 1;
		else libDiff[b.name] = libDiff[b.name] || 0;
		return `${b.name} ${b.first >= 0 ? b.first + o.n_prompt : "none"} (d ${f3(b.d_max)}, t ${f3(b.t_max)})`;
	});
	let cell = "none", verdict = "";
	if (o.first >= 0) {
		egDiff++;
		cell = `${o.first + o.n_prompt} (step ${o.first}, ${o.eg}/${o.ll}) m ${o.m.toFixed(4)} d ${f3(o.d_first)}`;
		const same = o.builds.filter((b) => b.same_as_egang).map((b) => b.name);
		const tLib = Math.max(0, ...o.builds.map((b) => b.t_max));
		if (same.length) verdict = `same split as llama.cpp ${same.join(", ")}`;
		else if (o.m <= tLib) verdict = `near-tie: m <= ${f3(tLib)} (llama.cpp's own t)`;
		else { verdict = `unexplained (m > ${f3(tLib)})`; unexplained++; }
	}
	rows.push(`| ${o.model} | ${o.prompt} (${o.n_prompt} ids) | ${cell} | ${f3(o.d_max)} | ${libs.join("; ")} | ${verdict} |`);
}
console.log("| model | prompt | egang: first difference (pos, step, egang/llama.cpp), m, d there | egang d max | llama.cpp libraries vs its best: first difference (d max, t max) | verdict |");
console.log("|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
console.log("");
console.log(`egang differs from llama.cpp's best library in ${egDiff} of ${runs.length} runs (${unexplained} unexplained)`);
for (const [k, v] of Object.entries(libDiff)) console.log(`llama.cpp ${k} differs from its best library in ${v} of ${runs.length} runs`);
