// Compare our logits at real widths with llama.cpp's (node-llama-cpp 3.22.1 prebuilt, CPU backend
// unless --gpu vulkan) on the same file and tokens: the bench's token sequence
// t_i = (i*7919 + 13) mod n_vocab for i < N, logits after the last one.
//
//   ./build/bench/bench_decode -m M.gguf --batch 16 --logits N ours.bin
//   NODE_LLAMA_DIR=/tmp/llama node tools/wide_check.mjs M.gguf N ours.bin [--gpu vulkan] [--threads 2]
//                  [--greedy "id id ..."]   (bench_decode --greedy G's tokens: llama.cpp continues as far)
//
// On a CPU with AMX the prebuilt's sapphirerapids CPU backend aborts on deepseek2
// (GGML_ASSERT(*cur_backend_id != -1), shared/docs/llama-cpp-peer.md): point NODE_LLAMA_DIR at a copy
// of node_modules without bins/linux-x64/libggml-cpu-sapphirerapids.so (the next best, AVX-512 without AMX).
//
// Prints max |diff|, the largest |logit|, the RMS of the difference relative to the RMS of
// llama.cpp's logits, whether the argmax agrees, and how many of llama.cpp's top 10 are in ours.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const pos = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--")));
if (pos.length < 3) { console.error("usage: wide_check.mjs MODEL N OURS.bin [--gpu vulkan] [--threads T]"); process.exit(2); }
const [modelPath, nArg, oursPath] = pos;
const N = parseInt(nArg, 10);
const nodeDir = process.env.NODE_LLAMA_DIR ?? "/tmp/llama";
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(path.join(nodeDir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);
const gpu = opt("--gpu", "false");
const llama = await getLlama({ gpu: gpu === "false" ? false : gpu, build: "never", logLevel: LlamaLogLevel.warn });
const model = await llama.loadModel({ modelPath: path.resolve(modelPath) });
const V = model.tokens.length ?? model.fileInsights?.tokens ?? 0;
const ours = new Float32Array(fs.readFileSync(oursPath).buffer.slice(0));
const nv = ours.length;
const toks = Array.from({ length: N }, (_, i) => (i * 7919 + 13) % nv);
const context = await model.createContext({ contextSize: Math.max(256, N + 8), batchSize: 512, threads: parseInt(opt("--threads", "2"), 10), sequences: 1 });
const seq = context.getSequence();
const input = toks.map((t, i) => i === N - 1 ? [t, { generateNext: { logits: true } }] : t);
const res = await seq.controlledEvaluate(input);
const m = res[N - 1].next.logits;
let maxd = 0, maxref = 0, sd = 0, sr = 0, a = -1, av = -Infinity, b = -1, bv = -Infinity;
const ref = new Float32Array(nv);
for (let v = 0; v < nv; v++) {
    ref[v] = m.get(v);
    const d = ours[v] - ref[v];
    maxd = Math.max(maxd, Math.abs(d));
    maxref = Math.max(maxref, Math.abs(ref[v]));
    sd += d * d; sr += ref[v] * ref[v];
    if (ours[v] > av) { av = ours[v]; a = v; }
    if (ref[v] > bv) { bv = ref[v]; b = v; }
}
const top = (x) => Array.from(x.keys()).sort((i, j) => x[j] - x[i]).slice(0, 10);
const tr = top(ref), to = new Set(top(ours));
const overlap = tr.filter((i) => to.has(i)).length;
const top1_gap = ref[tr[0]] - ref[tr[1]];   // how close llama.cpp's first two choices are
const out = { model: modelPath, n_tokens: N, n_vocab: nv, backend: gpu, max_abs_diff: maxd, max_abs_logit: maxref,
              rel_rms_diff: Math.sqrt(sd / sr), argmax_ours: a, argmax_llama: b, argmax_equal: a === b, top10_overlap: overlap, top1_gap };
const greedyArg = opt("--greedy", null);
if (greedyArg) {   // greedy continuation from the same prompt, temperature 0, EOG not stopping
    const ourIds = greedyArg.trim().split(/\s+/).map(Number);
    const ctx2 = await model.createContext({ contextSize: Math.max(256, N + ourIds.length + 8), batchSize: 512,
                                             threads: parseInt(opt("--threads", "2"), 10), sequences: 1 });
    const gen = [];
    for await (const t of ctx2.getSequence().evaluate(toks, { temperature: 0, yieldEogToken: true })) {
        gen.push(t);
        if (gen.length >= ourIds.length) break;
    }
    let same = 0;
    while (same < gen.length && gen[same] === ourIds[same]) same++;
    out.greedy_llama = gen;
    out.greedy_ours = ourIds;
    out.greedy_agree_prefix = same;
    await ctx2.dispose();
}
console.log(JSON.stringify(out));
await context.dispose();
await model.dispose();
