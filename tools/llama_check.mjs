// Compare llama.cpp (prebuilt, via node-llama-cpp 3.22.1 = llama.cpp v0.5.0) with the
// golden files made by tools/make_golden.py from the PyTorch reference.
//
//   mkdir -p /tmp/llama && cd /tmp/llama && npm init -y && \
//     npm install node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1 @node-llama-cpp/linux-x64-vulkan@3.22.1
//   NODE_LLAMA_DIR=/tmp/llama node tools/llama_check.mjs [model.gguf] [--gpu vulkan] [--json out.json]
//
// For every golden case: tokenization (llama.cpp's tokenizer vs tokens in the manifest),
// raw logits at the golden positions (controlledEvaluate, max |diff| and argmax agreement),
// greedy continuation (64 tokens, temperature 0, not stopping at EOG).  Also tokenize.json.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.dirname(here);
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const positional = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--")));
const modelPath = path.resolve(positional[0] ?? path.join(root, "models", "gsm-tiny.gguf"));
const gpu = opt("--gpu", "false");
const jsonOut = opt("--json", null);
const goldenDir = path.join(root, "tests", "data", "golden");
const nodeDir = process.env.NODE_LLAMA_DIR ?? "/tmp/llama";
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(path.join(nodeDir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);

const man = JSON.parse(fs.readFileSync(path.join(goldenDir, "manifest.json"), "utf8"));
const V = man.n_vocab;
const llama = await getLlama({ gpu: gpu === "false" ? false : gpu, build: "never", logLevel: LlamaLogLevel.warn });
const model = await llama.loadModel({ modelPath });
const report = { model: modelPath, backend: gpu, cases: [], tokenize: null };

// tokenizer
const tk = JSON.parse(fs.readFileSync(path.join(goldenDir, "tokenize.json"), "utf8"));
let tkBad = 0;
for (const e of tk) {
    let got = model.tokenize(e.text, e.parse_special);
    if (e.add_bos) got = [model.tokens.bos, ...got];
    if (JSON.stringify(got) !== JSON.stringify(e.tokens)) {
        tkBad++;
        console.log("tokenize mismatch", JSON.stringify(e.text), "llama.cpp", JSON.stringify(got), "golden", JSON.stringify(e.tokens));
    }
}
report.tokenize = { checked: tk.length, mismatches: tkBad };
console.log(`tokenize: ${tk.length - tkBad}/${tk.length} strings identical`);

for (const c of man.cases) {
    const want = new Float32Array(fs.readFileSync(path.join(goldenDir, c.logits_files?.f16 ?? c.logits_file)).buffer.slice(0));
    let toks = model.tokenize(c.text, c.parse_special);
    if (c.add_bos) toks = [model.tokens.bos, ...toks];
    const tokOk = JSON.stringify(toks) === JSON.stringify(c.tokens);
    const context = await model.createContext({ contextSize: 2048, batchSize: 1024, threads: 1, sequences: 1 });
    const seq = context.getSequence();
    const posSet = new Set(c.logit_positions);
    const input = c.tokens.map((t, i) => posSet.has(i) ? [t, { generateNext: { logits: true } }] : t);
    const res = await seq.controlledEvaluate(input);
    let maxd = 0, argOk = 0;
    c.logit_positions.forEach((p, r) => {
        const m = res[p].next.logits;
        let best = -1, bestv = -Infinity, bestw = -1, bestwv = -Infinity;
        for (let v = 0; v < V; v++) {
            const a = m.get(v), b = want[r * V + v];
            maxd = Math.max(maxd, Math.abs(a - b));
            if (a > bestv) { bestv = a; best = v; }
            if (b > bestwv) { bestwv = b; bestw = v; }
        }
        if (best === bestw) argOk++;
    });
    await context.dispose();
    // greedy
    const ctx2 = await model.createContext({ contextSize: 2048, batchSize: 1024, threads: 1, sequences: 1 });
    const seq2 = ctx2.getSequence();
    const gen = [];
    for await (const t of seq2.evaluate(c.tokens, { temperature: 0, yieldEogToken: true })) {
        gen.push(t);
        if (gen.length >= c.greedy.length) break;
    }
    await ctx2.dispose();
    let same = 0;
    while (same < gen.length && gen[same] === c.greedy[same]) same++;
    const r = { name: c.name, n_tokens: c.tokens.length, tokens_identical: tokOk, max_abs_logit_diff: maxd,
        argmax_agree: `${argOk}/${c.logit_positions.length}`, greedy_prefix_match: `${same}/${c.greedy.length}` };
    report.cases.push(r);
    console.log(`${c.name.padEnd(16)} tokens ${tokOk ? "same" : "DIFFER"}  max|dlogit| ${maxd.toExponential(2)}  argmax ${r.argmax_agree}  greedy ${r.greedy_prefix_match}`);
}
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(report, null, 1));
await model.dispose();
process.exit(0);
