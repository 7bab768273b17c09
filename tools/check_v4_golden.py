"""Check the V4 goldens in tests/data/v4/ against the PyTorch reference; exit 1 on a difference.

    /usr/bin/python3 tools/check_v4_golden.py [--root .]

No llama.cpp needed: its logits are committed (tools/make_v4_golden.py wrote them).  Checks:
  * sha256 of tiny-v4.gguf equals the manifest's;
  * the prompts' texts tokenize (tools/bpe.py) to the committed tokens (llama.cpp's tokenization
    was identical when the goldens were made: manifest llama_tokenization_identical);
  * tools/deepseek4_ref.py (float64, whole prompt) vs the committed reference logits: <= 1e-5
    (they were stored as f32: rounding is ~1e-6) and vs llama.cpp's: <= the manifest tolerance;
  * the 100-token prompt fed token by token through the cache, and the second chat turn fed after the
    cached first one, equal the full prefill (<= 1e-9);
  * greedy 64 tokens after every greedy prompt equal the committed ones (reference and llama.cpp);
  * the reference's tensors, exported through make_v4_gguf.write, give the committed file byte for byte;
  * bad files are refused with the key / tensor named (the generator's --bad modes; top-k larger
    than the rows is accepted by llama.cpp and the reference, it is for the runtime to refuse).
A few seconds on one core.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import deepseek4_ref as R  # noqa: E402
from make_v4_golden import chunked, greedy, sha256, tokenizer_from_kv  # noqa: E402

torch.set_num_threads(1)
STORED_TOL = 1e-5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(HERE))
    a = ap.parse_args()
    d = os.path.join(a.root, "tests", "data", "v4")
    man = json.load(open(os.path.join(d, "manifest.json")))
    model_path = os.path.join(d, man["model"])
    bad = []

    if sha256(model_path) != man["model_sha256"]:
        bad.append(f"{model_path}: sha256 differs from the manifest")
    model, kv = R.V4Model.from_gguf(model_path, torch.float64)
    tok = tokenizer_from_kv(kv)
    V = man["n_vocab"]
    for p in man["prompts"]:
        ids = tok.encode(p["text"], add_bos=p["add_bos"], parse_special=p["parse_special"])
        if ids != p["tokens"]:
            bad.append(f"{p['name']}: tokenization differs from the committed tokens")
        with torch.no_grad():
            ref = model(p["tokens"]).numpy()[p["logit_positions"]]
        n = len(p["logit_positions"])
        stored = np.fromfile(os.path.join(d, p["ref_logits"]), dtype="<f4").reshape(n, V)
        peer = np.fromfile(os.path.join(d, p["llama_logits"]), dtype="<f4").reshape(n, V)
        ds, dp = np.abs(ref - stored).max(), np.abs(ref - peer).max()
        print(f"{p['name']}: max|ref - stored ref| {ds:.2e}  max|ref - llama.cpp| {dp:.2e}")
        if ds > STORED_TOL:
            bad.append(f"{p['name']}: reference moved from the stored logits by {ds:.2e}")
        if dp > man["tolerance_abs_logit"]:
            bad.append(f"{p['name']}: reference differs from llama.cpp by {dp:.2e}")
        if "chunk_sizes" in p and p["name"] != "p600":    # p600's chunked pass is left to make_v4_golden (time)
            inc = chunked(model, p["tokens"], p["chunk_sizes"]).numpy()[p["logit_positions"]]
            di = np.abs(inc - ref).max()
            print(f"{p['name']} in chunks of {p['chunk_sizes']} vs whole prompt: {di:.1e}")
            if di > 1e-9:
                bad.append(f"{p['name']}: incremental decode differs from the full prefill by {di:.1e}")

    for g in man["greedy"]:
        ids = next(p["tokens"] for p in man["prompts"] if p["name"] == g["prompt"])
        out, _ = greedy(model, ids, g["n"])
        if out != g["ref_tokens"] or out != g["llama_tokens"]:
            bad.append(f"greedy after {g['prompt']} differs from the committed tokens")
        print(f"greedy after {g['prompt']}: {'identical' if out == g['llama_tokens'] else 'DIFFERENT'} ({len(out)} tokens)")

    gguf_py = os.environ.get("GGUF_PY", "/work/peer/llama.cpp-src/gguf-py")
    if not os.path.isdir(os.path.join(gguf_py, "gguf")):
        # make_v4_gguf.py writes through llama.cpp's gguf-py; without it only this part is skipped
        print(f"bad-file checks skipped: no gguf-py at {gguf_py} (set GGUF_PY)")
    else:
        check_bad_files(bad)
        check_export(bad, model_path, model)

    for b in bad:
        print("FAIL:", b)
    print("OK" if not bad else f"{len(bad)} failure(s)")
    sys.exit(1 if bad else 0)


def check_export(bad, model_path, model):
    """The reference's tensors written back by the generator give the committed file, byte for byte."""
    import make_v4_gguf as W     # here, not at the top: it needs gguf-py, which may be absent
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "export.gguf")
        W.write(path, W.config_from_ref(model.cfg), weights=model.gguf_tensors())
        same = sha256(path) == sha256(model_path)
        print(f"reference tensors exported through make_v4_gguf.write: {'the committed file' if same else 'DIFFERENT'}")
        if not same:
            bad.append("export of the reference's tensors differs from the committed file")


def check_bad_files(bad):
    with tempfile.TemporaryDirectory() as tmp:
        for mode, must_name in (("ratio-len", "compress_ratios"), ("no-indexer", "blk.1.indexer.proj.weight")):
            path = os.path.join(tmp, f"bad-{mode}.gguf")
            subprocess.run([sys.executable, os.path.join(HERE, "make_v4_gguf.py"), "--bad", mode, path],
                           check=True, capture_output=True)
            try:
                R.V4Model.from_gguf(path)
                bad.append(f"--bad {mode}: the reference loaded it")
            except ValueError as e:
                if must_name not in str(e):
                    bad.append(f"--bad {mode}: error does not name {must_name}: {e}")
                print(f"--bad {mode}: refused: {e}")


if __name__ == "__main__":
    main()
