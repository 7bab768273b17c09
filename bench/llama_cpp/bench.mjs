#!/usr/bin/env node
// Prefill/decode benchmark of llama.cpp's Vulkan backend (through the prebuilt
// binaries of node-llama-cpp 3.22.1) on a GGUF model, for comparison with gsmrt.
// See README.md in this folder for installing the peer and what is measured.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { existsSync } from "node:fs";
import path from "node:path";

const USAGE = `usage: node bench.mjs --model PATH [options]
  --model PATH        GGUF file (required)
  --depths LIST       comma-separated context depths before decoding (default 128,1024,4096)
  --gen N             decode tokens to time per depth (default 32)
  --reps R            decode runs per depth, median reported (default 3)
  --threads N         llama.cpp CPU threads (default 1)
  --batch N           llama.cpp n_batch/n_ubatch for prefill (default 512)
  --flash-attn MODE   auto|on|off (default auto = library default)
  --gpu TYPE          vulkan|cpu (default vulkan; cpu = llama.cpp's native CPU backend)
  --device-match STR  substring the Vulkan device name must contain (default llvmpipe)
  --no-warmup         skip the untimed warm-up pass per depth
  --peer DIR          folder whose node_modules holds node-llama-cpp
                      (default $LLAMA_PEER_DIR or /tmp/llama)
  --json              print JSON results to stdout (table and logs go to stderr)
  --verbose           echo llama.cpp's log to stderr`;

function die(msg) {
    process.stderr.write(`bench.mjs: error: ${msg}\n`);
    process.exit(1);
}

function parseArgs(argv) {
    const o = {
        model: null, depths: [128, 1024, 4096], gen: 32, reps: 3, threads: 1, batch: 512,
        flashAttn: "auto", gpu: "vulkan", deviceMatch: "llvmpipe", warmup: true,
        peer: process.env.LLAMA_PEER_DIR || "/tmp/llama", json: false, verbose: false
    };
    const posInt = (name, v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1) die(`${name} needs a positive integer, got '${v}'`);
        return n;
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const val = () => {
            if (i + 1 >= argv.length) die(`${a} needs a value`);
            return argv[++i];
        };
        switch (a) {
            case "--model": o.model = val(); break;
            case "--depths": o.depths = val().split(",").filter((s) => s !== "").map((s) => posInt("--depths", s)); break;
            case "--gen": o.gen = posInt("--gen", val()); break;
            case "--reps": o.reps = posInt("--reps", val()); break;
            case "--threads": o.threads = posInt("--threads", val()); break;
            case "--batch": o.batch = posInt("--batch", val()); break;
            case "--flash-attn": o.flashAttn = val(); break;
            case "--gpu": o.gpu = val(); break;
            case "--device-match": o.deviceMatch = val(); break;
            case "--no-warmup": o.warmup = false; break;
            case "--peer": o.peer = val(); break;
            case "--json": o.json = true; break;
            case "--verbose": o.verbose = true; break;
            case "-h": case "--help": process.stdout.write(USAGE + "\n"); process.exit(0);
            default: die(`unknown argument '${a}'\n${USAGE}`);
        }
    }
    if (!o.model) die(`--model is required\n${USAGE}`);
    if (!existsSync(o.model)) die(`model not found: ${o.model}`);
    if (o.depths.length === 0) die("--depths is empty");
    if (!["auto", "on", "off"].includes(o.flashAttn)) die("--flash-attn must be auto, on or off");
    if (!["vulkan", "cpu"].includes(o.gpu)) die("--gpu must be vulkan or cpu");
    return o;
}

const opt = parseArgs(process.argv.slice(2));
const log = (s) => process.stderr.write(s + "\n");

// ggml-vulkan skips CPU-type Vulkan devices (lavapipe) unless they are listed
// explicitly, and then silently runs on its CPU backend. Must be set before the
// native addon initialises its backends.
if (opt.gpu === "vulkan") {
    if (process.env.GGML_VK_VISIBLE_DEVICES === undefined) process.env.GGML_VK_VISIBLE_DEVICES = "0";
    else log(`note: using GGML_VK_VISIBLE_DEVICES=${process.env.GGML_VK_VISIBLE_DEVICES} from the environment`);
}

// node-llama-cpp lives in a scratch folder outside the repository.
let nlc;
try {
    const req = createRequire(path.join(path.resolve(opt.peer), "package.json"));
    nlc = await import(pathToFileURL(req.resolve("node-llama-cpp")).href);
} catch (e) {
    die(`cannot load node-llama-cpp from ${opt.peer} (${e.message}); install it as README.md says or pass --peer DIR`);
}
const { getLlama, LlamaLogLevel } = nlc;

const logLines = [];
const llama = await getLlama({
    build: "never",
    gpu: opt.gpu === "vulkan" ? "vulkan" : false,
    maxThreads: opt.threads,
    logLevel: LlamaLogLevel.info,
    logger: (level, message) => {
        logLines.push(message);
        if (opt.verbose) process.stderr.write(`[llama.cpp ${level}] ${message}${message.endsWith("\n") ? "" : "\n"}`);
    },
    progressLogs: false
});
const libVersion = nlc.getModuleVersion ? await nlc.getModuleVersion() : "?";

let deviceNames = [];
if (opt.gpu === "vulkan") {
    if (llama.gpu !== "vulkan") die(`node-llama-cpp did not load the Vulkan backend (gpu=${llama.gpu})`);
    deviceNames = await llama.getGpuDeviceNames();
    if (!deviceNames.some((n) => n.includes(opt.deviceMatch)))
        die(`no Vulkan device matching '${opt.deviceMatch}' (devices: ${JSON.stringify(deviceNames)}); ` +
            `is GGML_VK_VISIBLE_DEVICES right?`);
}

const model = await llama.loadModel({
    modelPath: opt.model,
    gpuLayers: opt.gpu === "vulkan" ? "max" : 0,
    useMmap: true
});

// Verify from llama.cpp's own log that the weights went to the Vulkan device
// ("llama_prepare_model_devices: using device Vulkan0 (llvmpipe ...)") and
// that every layer was offloaded, not only that the backend was loaded.
// llama.cpp's log reaches the JS logger asynchronously, so wait for a line.
const allLog = () => logLines.join("\n");
async function waitForLog(re, from = 0, ms = 10000) {
    const t0 = Date.now();
    for (;;) {
        for (let i = logLines.length - 1; i >= from; i--) if (re.test(logLines[i])) return logLines[i];
        if (Date.now() - t0 > ms) return null;
        await new Promise((r) => setTimeout(r, 20));
    }
}
let deviceLine = null;
if (opt.gpu === "vulkan") {
    await waitForLog(/offloaded \d+\/\d+ layers to GPU/);
    // e.g. "using device Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)) (unknown id) - 2048 MiB free"
    const m = allLog().match(/using device (Vulkan\d+) \((.*?)\)\s*(?:\([^()]*\)\s*)?-\s/);
    if (!m) die("llama.cpp's log has no 'using device VulkanN (...)' line: it did not use a Vulkan device " +
        "(it may have fallen back to the CPU). Run with --verbose to see the log.");
    deviceLine = `${m[1]} (${m[2]})`;
    if (!m[2].includes(opt.deviceMatch)) die(`llama.cpp used ${deviceLine}, not a '${opt.deviceMatch}' device`);
    const off = allLog().match(/offloaded (\d+)\/(\d+) layers to GPU/);
    if (!off) die("llama.cpp's log has no 'offloaded N/M layers to GPU' line");
    if (off[1] !== off[2]) die(`llama.cpp offloaded only ${off[1]}/${off[2]} layers to the GPU`);
}

const trainCtx = model.trainContextSize;
const vocab = model.tokens;

// A fixed text tokenised by the model's own tokenizer, without special tokens
// (no BOS is added; evaluate() on a sequence adds none either), repeated and cut
// to exactly `n` tokens.
const BASE_TEXT =
    "The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with a single step. " +
    "In the beginning the universe was created; this has made a lot of people very angry and been widely " +
    "regarded as a bad move. 0123456789 Once upon a time, there was a small village by the sea, where the " +
    "fishermen told stories about the lighthouse keeper and the storms of the long winter.\n";
let baseTokens = model.tokenize(BASE_TEXT, false).filter((t) => !(vocab.bos != null && t === vocab.bos));
if (baseTokens.length < 8) die(`the model's tokenizer gave only ${baseTokens.length} tokens for the fixed text`);
function promptTokens(n) {
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = baseTokens[i % baseTokens.length];
    return out;
}

const flashAttention = opt.flashAttn === "auto" ? undefined : opt.flashAttn === "on";
const now = () => Number(process.hrtime.bigint()) / 1e9;

// Decode `n` tokens one at a time: the first step evaluates `first`, every next
// step the token greedily sampled from the previous one. End-of-generation tokens
// are yielded and fed back like any other, so exactly `n` single-token
// evaluations run. Returns [tokens got, seconds].
async function decode(seq, first, n) {
    let got = 0;
    const t0 = now();
    const gen = seq.evaluate([first], { temperature: 0, yieldEogToken: true });
    for await (const tok of gen) {
        void tok;
        got++;
        if (got >= n) break;
    }
    return [got, now() - t0];
}

const results = [];
for (const depth of opt.depths) {
    const need = depth + opt.gen + 1;
    const ctxSize = Math.ceil((need + 64) / 256) * 256;
    const overTrain = trainCtx && ctxSize > trainCtx;
    if (overTrain) log(`note: depth ${depth}: context ${ctxSize} > model context_length ${trainCtx}; ` +
        "llama.cpp runs it anyway (positions past the trained length, fine for a speed test)");
    const logMark = logLines.length;
    const ctx = await model.createContext({
        contextSize: ctxSize,
        batchSize: Math.min(opt.batch, ctxSize),
        sequences: 1,
        threads: { ideal: opt.threads, min: opt.threads },
        flashAttention,
        ignoreMemorySafetyChecks: true,
        failedCreationRemedy: false
    });
    if (opt.gpu === "vulkan") {
        const kv = await waitForLog(/llama_kv_cache:.*KV buffer size/, logMark);
        if (!kv || !/Vulkan\d+ KV buffer/.test(kv)) die(`depth ${depth}: KV cache is not on the Vulkan device (${kv ?? "no KV buffer line in log"})`);
    }
    const seq = ctx.getSequence();
    const prompt = promptTokens(depth);

    if (opt.warmup) {
        // Untimed pass that touches the same kernels (lavapipe compiles pipelines on first use).
        await seq.evaluateWithoutGeneratingNewTokens(promptTokens(Math.min(depth, opt.batch)));
        await decode(seq, prompt[0], 2);
        await seq.clearHistory();
    }

    const t0 = now();
    await seq.evaluateWithoutGeneratingNewTokens(prompt);
    const prefillS = now() - t0;
    if (seq.nextTokenIndex !== depth) die(`depth ${depth}: sequence holds ${seq.nextTokenIndex} tokens after prefill`);

    // Decode runs: each starts at depth D; the tokens of the previous run are
    // erased from the KV cache first. The median run (by tok/s) is reported.
    const runs = [];
    for (let r = 0; r < opt.reps; r++) {
        if (seq.nextTokenIndex > depth) await seq.eraseContextTokenRanges([{ start: depth, end: seq.nextTokenIndex }]);
        if (seq.nextTokenIndex !== depth) die(`depth ${depth}: sequence holds ${seq.nextTokenIndex} tokens before decode`);
        const [g, sec] = await decode(seq, baseTokens[depth % baseTokens.length], opt.gen);
        if (g !== opt.gen) log(`warning: depth ${depth}: got ${g} of ${opt.gen} decode tokens`);
        runs.push({ got: g, s: sec, tps: g / sec });
    }
    const sorted = [...runs].sort((a, b) => a.tps - b.tps);
    const med = sorted[Math.floor((sorted.length - 1) / 2)];
    const got = med.got, decodeS = med.s;

    const r = {
        depth,
        context_size: ctx.contextSize,
        prefill_tokens: depth,
        prefill_s: +prefillS.toFixed(4),
        prefill_tok_s: +(depth / prefillS).toFixed(2),
        decode_tokens: got,
        decode_s: +decodeS.toFixed(4),
        decode_tok_s: +(got / decodeS).toFixed(2),
        decode_runs_tok_s: runs.map((x) => +x.tps.toFixed(2)),
        over_train_context: !!overTrain
    };
    results.push(r);
    log(`depth ${depth}: prefill ${r.prefill_tok_s} tok/s (${r.prefill_s} s), decode ${r.decode_tok_s} tok/s ` +
        `(median of ${opt.reps}: ${r.decode_runs_tok_s.join(", ")}; ${got} tok in ${r.decode_s} s), ctx ${r.context_size}`);
    await ctx.dispose();
}

const fa = allLog().match(/flash_attn\s*=\s*(\S+)/);
const info = {
    peer: `node-llama-cpp ${libVersion} (prebuilt, llama.cpp ${llama.llamaCppRelease?.release ?? "?"})`,
    backend: opt.gpu,
    device: deviceLine ?? "CPU",
    vulkan_devices: deviceNames,
    model: path.resolve(opt.model),
    architecture: model.fileInfo?.metadata?.general?.architecture ?? "?",
    train_context: trainCtx,
    threads: opt.threads,
    batch: opt.batch,
    flash_attn: fa ? fa[1] : opt.flashAttn,
    gen: opt.gen,
    reps: opt.reps,
    warmup: opt.warmup
};

const table = ["depth  prefill_tok_s  decode_tok_s"]
    .concat(results.map((r) => `${String(r.depth).padStart(5)}  ${r.prefill_tok_s.toFixed(2).padStart(13)}  ${r.decode_tok_s.toFixed(2).padStart(12)}`))
    .join("\n");
const header = `# llama.cpp ${info.backend} on ${info.device}, ${info.architecture}, ${opt.threads} thread(s), ` +
    `batch ${opt.batch}, flash_attn ${info.flash_attn}, gen ${opt.gen}, decode median of ${opt.reps}`;
if (opt.json) {
    log(header + "\n" + table);
    process.stdout.write(JSON.stringify({ info, results }, null, 2) + "\n");
} else {
    process.stdout.write(header + "\n" + table + "\n");
}

await model.dispose();
await llama.dispose();
