#!/bin/sh
# make_quant_models.sh -- the bundled model quantised by llama.cpp, with llama.cpp's reference.
#
#   LLAMA_BIN=/work/peer/llama-build/bin NODE_LLAMA_DIR=/tmp/llama-noamx sh tools/make_quant_models.sh
#
# Writes tests/data/quant/ (read by tests/gpu/test_quant_models.c):
#   gsm-tiny.<TYPE>.gguf     models/gsm-tiny.gguf through `llama-quantize --allow-requantize`
#                            (the source is F16), for Q4_0 Q4_K_M Q5_K_M Q6_K Q3_K_M Q2_K IQ4_XS
#                            IQ2_XXS; IQ2_XXS with an importance matrix (llama.cpp refuses it
#                            without one) from `llama-imatrix` over models/calib-dialogues.txt.
#   <TYPE>.torch.f32         the same rows from tools/quant_torch_ref.py (fp32 PyTorch on gguf-py dequantised weights)
#   <TYPE>.logits.f16        llama.cpp CPU backend logits at the golden positions of the cases
#                            in CASES (tests/data/golden/manifest.json), IEEE half, row after row
#   ppl.txt                  the first 2746 bytes of tests/data/golden/heldout.txt: 2 windows of
#                            512 tokens (llama-perplexity needs 2 * n_ctx tokens at least)
#   manifest.json            per type: file, sha256, llama-perplexity on ppl.txt at n_ctx 512,
#                            greedy tokens (64, not stopping at end-of-generation) per case
#
# llama.cpp: LLAMA_BIN holds llama-quantize / llama-imatrix / llama-perplexity built from the
# source bundle node-llama-cpp 3.22.1 ships (../shared/docs/llama-cpp-peer.md); NODE_LLAMA_DIR
# is a node-llama-cpp 3.22.1 install without libggml-cpu-sapphirerapids.so (the AMX CPU library
# aborts on deepseek2 here), used by tools/llama_quant_ref.mjs for logits and greedy tokens.
# Both run 1 thread and `-nr` (no repacking: the AMX repack paths misbehave on this CPU).
# Quantisation is deterministic (a rerun reproduces the files byte for byte) except IQ2_XXS,
# whose importance matrix varies in its last bits from run to run (the manifest keeps sha256s).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLAMA_BIN=${LLAMA_BIN:-/work/peer/llama-build/bin}
export NODE_LLAMA_DIR=${NODE_LLAMA_DIR:-/tmp/llama-noamx}
SRC=$ROOT/models/gsm-tiny.gguf
OUT=$ROOT/tests/data/quant
TYPES="Q4_0 Q4_K_M Q5_K_M Q6_K Q3_K_M Q2_K IQ4_XS IQ2_XXS"
IMATRIX_TYPES="IQ2_XXS"
# Short golden prompts (the 562-token retrieval case would make the GPU test minutes long).
CASES="hello plain_fortune unicode chat_single chat_multiturn"
N_CTX=512

for tool in llama-quantize llama-imatrix llama-perplexity; do
    [ -x "$LLAMA_BIN/$tool" ] || { echo "make_quant_models.sh: $LLAMA_BIN/$tool not found (set LLAMA_BIN)" >&2; exit 1; }
done
[ -f "$NODE_LLAMA_DIR/node_modules/node-llama-cpp/dist/index.js" ] ||
    { echo "make_quant_models.sh: no node-llama-cpp in $NODE_LLAMA_DIR (set NODE_LLAMA_DIR)" >&2; exit 1; }

mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

head -c 2746 "$ROOT/tests/data/golden/heldout.txt" > "$OUT/ppl.txt"

echo "llama-imatrix on models/calib-dialogues.txt ..."
"$LLAMA_BIN/llama-imatrix" -m "$SRC" -f "$ROOT/models/calib-dialogues.txt" -o "$WORK/imatrix.gguf" \
    -c 512 -t 1 -nr --no-ppl > "$WORK/imatrix.log" 2>&1 || { cat "$WORK/imatrix.log" >&2; exit 1; }

for t in $TYPES; do
    f=$OUT/gsm-tiny.$t.gguf
    im=""
    case " $IMATRIX_TYPES " in *" $t "*) im="--imatrix $WORK/imatrix.gguf" ;; esac
    echo "llama-quantize $t ${im:+(importance matrix)}"
    # shellcheck disable=SC2086 # $im is two words or none
    "$LLAMA_BIN/llama-quantize" --allow-requantize $im "$SRC" "$f" "$t" 1 > "$WORK/q_$t.log" 2>&1 ||
        { cat "$WORK/q_$t.log" >&2; exit 1; }
    # shellcheck disable=SC2086 # CASES is a word list
    node "$ROOT/tools/llama_quant_ref.mjs" "$f" "$WORK/$t" $CASES > "$WORK/ref_$t.log" 2>&1 ||
        { cat "$WORK/ref_$t.log" >&2; exit 1; }
    mv "$WORK/$t.logits.f16" "$OUT/$t.logits.f16"
    # shellcheck disable=SC2086 # CASES is a word list
    /usr/bin/python3 "$ROOT/tools/quant_torch_ref.py" "$f" "$WORK/$t" $CASES
    mv "$WORK/$t.torch.f32" "$OUT/$t.torch.f32"
    # llama.cpp logs from a thread and now and then exits before its last lines are out: retry
    for try in 1 2 3 4 5; do
        "$LLAMA_BIN/llama-perplexity" -m "$f" -f "$OUT/ppl.txt" -c $N_CTX -b $N_CTX -t 1 -nr > "$WORK/ppl_$t.log" 2>&1 ||
            { cat "$WORK/ppl_$t.log" >&2; exit 1; }
        sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$WORK/ppl_$t.log" > "$WORK/$t.ppl"
        [ -s "$WORK/$t.ppl" ] && break
    done
    [ -s "$WORK/$t.ppl" ] || { echo "make_quant_models.sh: llama-perplexity gave no estimate for $t:" >&2; cat "$WORK/ppl_$t.log" >&2; exit 1; }
    echo "  ppl $(cat "$WORK/$t.ppl")"
done

/usr/bin/python3 - "$OUT" "$WORK" "$N_CTX" "$TYPES" "$IMATRIX_TYPES" "$CASES" <<'EOF'
import hashlib, json, sys
out, work, n_ctx, types, im_types, cases = sys.argv[1], sys.argv[2], int(sys.argv[3]), *(a.split() for a in sys.argv[4:])
import numpy as np
V = json.load(open(f"{out}/../golden/manifest.json"))["n_vocab"]
def ref_vs_llama(t):
    """How far the exact arithmetic (fp32 reference) is from llama.cpp: the floor for any fp32 engine."""
    a = np.fromfile(f"{out}/{t}.torch.f32", dtype="<f4").reshape(-1, V).astype(np.float64)
    b = np.fromfile(f"{out}/{t}.logits.f16", dtype="<f2").reshape(-1, V).astype(np.float64)
    nmse = (((a - b) ** 2).sum(1) / (b ** 2).sum(1)).max()
    return {"max_abs": float(np.abs(a - b).max()), "nmse": float(nmse),
            "argmax_mismatches": int((a.argmax(1) != b.argmax(1)).sum())}
def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()
man = {
    "source": "models/gsm-tiny.gguf (F16) through llama-quantize --allow-requantize (llama.cpp de3ff815, the node-llama-cpp 3.22.1 bundle)",
    "reference": "llama.cpp CPU backend (node-llama-cpp 3.22.1 prebuilt, 1 thread, no AMX library): tools/llama_quant_ref.mjs",
    "made_by": "tools/make_quant_models.sh",
    "cases": cases,
    "torch_reference": "tools/quant_torch_ref.py: tools/deepseek2_ref.py RefModel in fp32 on the weights dequantised by gguf-py (exact arithmetic of the quantised file); <TYPE>.torch.f32 float32 rows in the same order, greedy_torch",
    "logits_format": "per type, <TYPE>.logits.f16: for each case in 'cases' order, its golden logit_positions rows (tests/data/golden/manifest.json) of n_vocab IEEE half",
    "perplexity": {"file": "ppl.txt", "n_ctx": n_ctx, "how": "llama-perplexity -c n_ctx -b n_ctx -t 1 -nr: 2 windows, the second half of each scored"},
    "types": [],
}
for t in types:
    ref = json.load(open(f"{work}/{t}.json"))
    man["types"].append({
        "type": t, "file": f"gsm-tiny.{t}.gguf", "sha256": sha(f"{out}/gsm-tiny.{t}.gguf"),
        "imatrix": t in im_types, "logits_file": f"{t}.logits.f16",
        "ppl_llama": float(open(f"{work}/{t}.ppl").read()), "greedy": ref["greedy"],
        "torch_logits_file": f"{t}.torch.f32", "reference_vs_llama": ref_vs_llama(t),
        "greedy_torch": json.load(open(f"{work}/{t}.torch.json"))["greedy"]})
json.dump(man, open(f"{out}/manifest.json", "w"), indent=1)
open(f"{out}/manifest.json", "a").write("\n")
EOF
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
