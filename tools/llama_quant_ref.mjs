// llama.cpp's reference for one llama.cpp-quantised file (tools/make_quant_models.sh runs it):
// logits at the golden positions and greedy tokens for the golden prompts, from llama.cpp's
// CPU backend (node-llama-cpp 3.22.1 prebuilt = llama.cpp v0.5.0, 1 thread).
//
//   NODE_LLAMA_DIR=/tmp/llama-noamx node tools/llama_quant_ref.mjs MODEL.gguf OUT_PREFIX CASE...
//
// Writes OUT_PREFIX.logits.f16 (for each case in the order given, its logit_positions rows of
// n_vocab, little-endian IEEE half, rounded to nearest even) and OUT_PREFIX.json (the greedy
// tokens per case).  NODE_LLAMA_DIR must be a node-llama-cpp install whose linux-x64 bins lack
// libggml-cpu-sapphirerapids.so: the AMX CPU library aborts on deepseek2 files on this machine.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.dirname(here);
const [modelPath, outPrefix, ...caseNames] = process.argv.slice(2);
if (!modelPath || !outPrefix || caseNames.length === 0) {
    console.error("usage: node tools/llama_quant_ref.mjs MODEL.gguf OUT_PREFIX CASE...");
    process.exit(2);
}
const nodeDir = process.env.NODE_LLAMA_DIR ?? "/tmp/llama-noamx";
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(path.join(nodeDir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);
const man = JSON.parse(fs.readFileSync(path.join(root, "tests", "data", "golden", "manifest.json"), "utf8"));
const V = man.n_vocab;

// float -> IEEE half, round to nearest even (overflow saturates to inf; logits never reach it)
const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
function toHalf(v) {
    f32[0] = v;
    const x = u32[0], sign = (x >>> 16) & 0x8000, e = ((x >>> 23) & 0xff) - 127 + 15;
    let m = x & 0x7fffff;
    if (e >= 31) return sign | 0x7c00;
    if (e <= 0) {
        if (e < -10) return sign;
        m |= 0x800000;
        const shift = 14 - e, rem = m & ((1 << shift) - 1), halfway = 1 << (shift - 1);
        let h = m >>> shift;
        if (rem > halfway || (rem === halfway && (h & 1))) h++;
        return sign | h;
    }
    let h = (e << 10) | (m >>> 13);
    const rem = m & 0x1fff;
    if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
    return sign | h;
}

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.warn });
const model = await llama.loadModel({ modelPath });
const rows = [], greedy = {};
for (const name of caseNames) {
    const c = man.cases.find((x) => x.name === name);
    if (!c) throw new Error(`no golden case ${name}`);
    const ctx = await model.createContext({ contextSize: 2048, batchSize: 1024, threads: 1, sequences: 1 });
    const posSet = new Set(c.logit_positions);
    const input = c.tokens.map((t, i) => posSet.has(i) ? [t, { generateNext: { logits: true } }] : t);
    const res = await ctx.getSequence().controlledEvaluate(input);
    for (const p of c.logit_positions) {
        const row = new Uint16Array(V), m = res[p].next.logits;
        for (let v = 0; v < V; v++) row[v] = toHalf(m.get(v));
        rows.push(row);
    }
    await ctx.dispose();
    const ctx2 = await model.createContext({ contextSize: 2048, batchSize: 1024, threads: 1, sequences: 1 });
    const gen = [];
    for await (const t of ctx2.getSequence().evaluate(c.tokens, { temperature: 0, yieldEogToken: true })) {
        gen.push(t);
        if (gen.length >= c.greedy.length) break;
    }
    await ctx2.dispose();
    greedy[name] = gen;
}
const all = new Uint16Array(rows.length * V);
rows.forEach((r, i) => all.set(r, i * V));
fs.writeFileSync(outPrefix + ".logits.f16", Buffer.from(all.buffer));
fs.writeFileSync(outPrefix + ".json", JSON.stringify({ greedy }) + "\n");
await model.dispose();
process.exit(0);
