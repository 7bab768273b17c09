#!/bin/sh
# compare_llama_cpp.sh [MODEL] [DEPTHS] [GEN] -- gsmrt and llama.cpp's Vulkan
# backend on the same GGUF, the same device (lavapipe here) and the same
# depths, back to back in one run, then the decode and prefill ratios.
# Needs the peer installed as bench/llama_cpp/README.md says.
set -eu
cd "$(dirname "$0")/.."
model=${1:-models/gsm-tiny.gguf}
depths=${2:-128,1024,4096}
gen=${3:-32}
out=${OUT:-build/compare}
mkdir -p "$out"
echo "== gsmrt (build/bench/bench_decode) =="
build/bench/bench_decode -m "$model" --depths "$depths" --gen "$gen" --reps 3 --json > "$out/gsmrt.json"
build/bench/bench_decode -m "$model" --depths "$depths" --gen "$gen" --reps 1
echo "== llama.cpp Vulkan (bench/llama_cpp/bench.mjs, 1 thread) =="
node bench/llama_cpp/bench.mjs --model "$model" --depths "$depths" --gen "$gen" --threads 1 --json > "$out/llama.json"
python3 - "$out/gsmrt.json" "$out/llama.json" <<'PY'
import json, sys
g = {r["depth"]: r for r in json.load(open(sys.argv[1]))["rows"]}
l = json.load(open(sys.argv[2]))
rows = l.get("rows", l.get("results", l)) if isinstance(l, dict) else l
print("%-7s %14s %14s %8s %14s %14s %8s" % ("depth", "gsmrt pp t/s", "llama pp t/s", "ratio",
                                             "gsmrt tg t/s", "llama tg t/s", "ratio"))
for r in rows:
    d = r["depth"]
    if d not in g:
        continue
    gp, gt = g[d]["prefill_tok_s"], g[d]["decode_tok_s"]
    lp, lt = r["prefill_tok_s"], r["decode_tok_s"]
    print("%-7d %14.1f %14.1f %7.1fx %14.1f %14.1f %7.1fx" % (d, gp, lp, gp / lp, gt, lt, gt / lt))
PY
