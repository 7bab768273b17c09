// llama.cpp's (node-llama-cpp 3.22.1, CPU backend, 1 thread) logits at every position of the
// tiny-V4 prompts, and its greedy continuation: the peer side of tests/data/v4/.
//
//   NODE_LLAMA_DIR=/tmp/llama node tools/llama_logits_v4.mjs MODEL.gguf PROMPTS.json OUT_DIR
//   (V4_GPU=vulkan GGML_VK_VISIBLE_DEVICES=0 for its Vulkan backend, V4_FA=1 flash attention, V4_DEBUG=1 logs)
//
// PROMPTS.json: {"prompts": [{"name", "tokens": [...], "text"?, "add_bos"?, "parse_special"?}],
//                "greedy": [{"prompt": NAME, "n": 64}, ...], "chunked": [{"prompt": NAME, "sizes": [1, 7, ...]}]}
// (written by tools/deepseek4_ref.py).  For every prompt: OUT_DIR/llama-NAME.f32 (positions x vocab,
// little-endian f32, the logits after each prompt token, the whole prompt in one evaluation);
// OUT_DIR/llama.json: the greedy tokens (temperature 0, not stopping at EOG) and llama.cpp's
// tokenization of each prompt's text (when the prompt has one), to check our tokenizer against.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modelPath, promptsPath, outDir] = process.argv.slice(2);
if (!modelPath || !promptsPath || !outDir) {
    console.error("usage: node tools/llama_logits_v4.mjs MODEL.gguf PROMPTS.json OUT_DIR");
    process.exit(2);
}
const nodeDir = process.env.NODE_LLAMA_DIR ?? "/tmp/llama";
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(path.join(nodeDir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);

const spec = JSON.parse(fs.readFileSync(promptsPath, "utf8"));
fs.mkdirSync(outDir, { recursive: true });
const llama = await getLlama({ gpu: process.env.V4_GPU ?? false, build: "never", logLevel: process.env.V4_DEBUG ? LlamaLogLevel.debug : LlamaLogLevel.warn });
const model = await llama.loadModel({ modelPath });
const V = model.fileInsights.tokenizer?.vocabSize ?? model.tokens.length ?? 1024;
const report = { model: path.basename(modelPath), n_vocab: V, prompts: [], greedy: [] };

async function newContext() {
    // f32 K cache: the reference keeps f32 rows; llama.cpp's default f16 cache would add rounding
    return await model.createContext({
        contextSize: 2048, batchSize: 1024, threads: 1, sequences: 1, flashAttention: process.env.V4_FA === "1",
        experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
    });
}

for (const p of spec.prompts) {
    const ctx = await newContext();
    const seq = ctx.getSequence();
    const input = p.tokens.map((t) => [t, { generateNext: { logits: true } }]);
    const res = await seq.controlledEvaluate(input);
    const out = new Float32Array(p.tokens.length * V);
    res.forEach((r, i) => {
        const m = r.next.logits;
        for (let v = 0; v < V; v++) out[i * V + v] = m.get(v);
    });
    fs.writeFileSync(path.join(outDir, `llama-${p.name}.f32`), Buffer.from(out.buffer));
    const entry = { name: p.name, n_tokens: p.tokens.length };
    if (p.text !== undefined) {
        let toks = model.tokenize(p.text, p.parse_special ?? false);
        if (p.add_bos) toks = [model.tokens.bos, ...toks];
        entry.llama_tokens = toks;
    }
    report.prompts.push(entry);
    console.log(`${p.name}: ${p.tokens.length} positions`);
    await ctx.dispose();
}

// the same prompt fed in chunks through one sequence (its cache extended chunk by chunk, sizes cycled):
// llama.cpp's decode / cache-extension path, OUT_DIR/llama-NAME.chunked.f32
report.chunked = [];
for (const cs of spec.chunked ?? []) {
    const p = spec.prompts.find((q) => q.name === cs.prompt);
    const ctx = await newContext();
    const seq = ctx.getSequence();
    const out = new Float32Array(p.tokens.length * V);
    let i = 0, k = 0;
    while (i < p.tokens.length) {
        const n = cs.sizes[k++ % cs.sizes.length];
        const part = p.tokens.slice(i, i + n);
        const res = await seq.controlledEvaluate(part.map((t) => [t, { generateNext: { logits: true } }]));
        res.forEach((r, j) => {
            const m = r.next.logits;
            for (let v = 0; v < V; v++) out[(i + j) * V + v] = m.get(v);
        });
        i += part.length;
    }
    fs.writeFileSync(path.join(outDir, `llama-${p.name}.chunked.f32`), Buffer.from(out.buffer));
    report.chunked.push({ prompt: p.name, sizes: cs.sizes });
    console.log(`${p.name} in chunks of ${cs.sizes.join(",")}: ${p.tokens.length} positions`);
    await ctx.dispose();
}

// greedy: one fresh context per entry, the whole prompt then temperature-0 sampling
report.greedy = [];
for (const gs of [spec.greedy ?? []].flat()) {
    const g = spec.prompts.find((p) => p.name === gs.prompt);
    const ctx = await newContext();
    const seq = ctx.getSequence();
    const gen = [];
    for await (const t of seq.evaluate(g.tokens, { temperature: 0, yieldEogToken: true })) {
        gen.push(t);
        if (gen.length >= gs.n) break;
    }
    report.greedy.push({ prompt: g.name, tokens: gen });
    console.log(`greedy after ${g.name}: ${gen.join(" ")}`);
    await ctx.dispose();
}
fs.writeFileSync(path.join(outDir, "llama.json"), JSON.stringify(report, null, 1));
await model.dispose();
process.exit(0);
