"""Goldens for the future deepseek4 C tests, in tests/data/v4/, from the tiny V4 file.

    /usr/bin/python3 tools/make_v4_golden.py [--regen-model] [--out tests/data/v4]

  1. (--regen-model) tools/make_v4_gguf.py writes tests/data/v4/tiny-v4.gguf (seeded, reproducible).
  2. Prompts of 1, 7, 100 and 600 tokens: BOS + the longest prefix of tests/data/golden/heldout.txt that
     tokenizes (tools/bpe.py, parse_special) to exactly that many tokens.
  3. llama.cpp (tools/llama_logits_v4.mjs, CPU backend, flash attention off, f32 KV cache) dumps its
     logits at every position of every prompt, its tokenization of the texts, and its greedy tokens.
  4. tools/deepseek4_ref.py in float64: the whole prompt at once; again token by token and in uneven chunks
     through its cache (must equal the full prefill); greedy 64 tokens by incremental decode.
  5. Writes, per prompt, ref-NAME.f32 and llama-NAME.f32 (rows = manifest "logit_positions", x vocab,
     little-endian f32) and manifest.json (prompts, tokens, positions, greedy, per-position top-5 of the
     reference at EVERY position, agreement statistics, feature statistics).
Exits 1 when llama.cpp and the reference disagree beyond the tolerance, or prefill != decode.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bpe  # noqa: E402
import corpus  # noqa: E402
import deepseek4_ref as R  # noqa: E402

torch.set_num_threads(1)

LENGTHS = {"p1": 1, "p7": 7, "p100": 100, "p600": 600}
N_GREEDY = 64
# a chat turn, and a second turn that extends it (rendered like the GGUF's template, tools/corpus.py)
CHAT1 = [{"role": "user", "content": "Tell me a fortune."}]
CHAT2 = CHAT1 + [{"role": "assistant", "content": "Laugh and the world laughs with you, snore and you sleep alone."},
                 {"role": "user", "content": "Another one, please."}]
GREEDY_PROMPTS = ["p7", "p600", "chat1", "chat2"]   # p600 + 64 crosses the 640-token HCA boundary while decoding
# prompts also fed in chunks (sizes cycled) through one cache, llama.cpp and the reference both;
# chat2 is fed as chat1 then the rest: the second turn extends the cached first one
CHUNKS = {"p100": [1], "p600": [1, 7, 16, 3, 64, 5]}
# Tolerance between llama.cpp (f32 CPU) and the float64 reference, in logits (std about 3): llama.cpp's
# result is a float32 computation of the same graph, so the difference is f32 rounding through
# 4 layers (measured ~1e-5).  1e-3 leaves two orders of headroom for another f32 implementation's
# summation order (a GPU runtime) while a wrong mask, RoPE or selection moves logits by > 1e-2.
TOL_ABS = 1e-3


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tokenizer_from_kv(kv):
    merges = [m.split(" ", 1) for m in kv["tokenizer.ggml.merges"]]
    return bpe.Tokenizer(kv["tokenizer.ggml.tokens"], merges, kv["tokenizer.ggml.token_type"],
                         kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.eos_token_id"],
                         kv.get("tokenizer.ggml.add_bos_token", True))


def prompt_of_length(tok, text, n):
    """BOS + the longest prefix of text with exactly n tokens (n counts BOS)."""
    best = None
    for cut in range(0, len(text) + 1):
        ids = tok.encode(text[:cut], add_bos=True, parse_special=True)
        if len(ids) == n:
            best = cut
        elif len(ids) > n + 1:   # a longer prefix never has fewer tokens again (up to one merge)
            break
    if best is None:
        raise SystemExit(f"no prefix of the held-out text tokenizes to {n} tokens")
    return text[:best], tok.encode(text[:best], add_bos=True, parse_special=True)


def logit_positions(n):
    """All positions up to 100 tokens; for 600: every 4th position and the last 16 (size), stated in manifest."""
    if n <= 100:
        return list(range(n))
    return sorted(set(range(0, n, 4)) | set(range(n - 16, n)))


def greedy(model, tokens, n):
    cache = R.Cache(model.cfg.n_layer)
    with torch.no_grad():
        logits = model(tokens, cache)
        out = [int(logits[-1].argmax())]
        margins = []
        for _ in range(n - 1):
            top2 = logits[-1].topk(2).values
            margins.append(float(top2[0] - top2[1]))
            logits = model([out[-1]], cache)
            out.append(int(logits[-1].argmax()))
        top2 = logits[-1].topk(2).values
        margins.append(float(top2[0] - top2[1]))
    return out, min(margins)


def chunked(model, tokens, sizes):
    """Logits when the prompt is fed in chunks of the given sizes (cycled) through one cache."""
    cache = R.Cache(model.cfg.n_layer)
    parts, i, k = [], 0, 0
    with torch.no_grad():
        while i < len(tokens):
            n = sizes[k % len(sizes)]
            parts.append(model(tokens[i:i + n], cache))
            i += n
            k += 1
    return torch.cat(parts, 0)


class Stats:
    """What the indexer did in the reference's last full-prompt pass."""

    def __init__(self, model):
        self.model = model

    def indexer(self):
        out = {}
        for il, blk in enumerate(self.model.blocks):
            a = blk.attn
            if a.indexer is None:
                continue
            sel = a.last_selection                         # [T, rows]
            n_vis = ((torch.arange(len(sel)) + 1) // 4)
            subset = int(((sel.sum(1) < n_vis)).sum())
            distinct = len({tuple(r.nonzero().flatten().tolist()) for r in sel})
            sc = a.indexer.last_scores
            gaps = []
            for t in range(len(sel)):
                v = sc[t][torch.isfinite(sc[t])]
                if v.numel() > self.model.cfg.indexer_top_k:
                    s = v.sort(descending=True).values
                    k = self.model.cfg.indexer_top_k
                    gaps.append(float(s[k - 1] - s[k]))
            out[f"layer {il}"] = {"positions_where_topk_is_a_strict_subset": subset,
                                  "distinct_selected_sets": distinct,
                                  "min_gap_at_topk_boundary": min(gaps) if gaps else None}
        return out


def activity(model, ids):
    """Evidence that the features are active and the activations sane on this prompt."""
    count = {"n": 0, "gate": 0, "up": 0}
    plain = R.swiglu_clamped

    def counting(g, u, limit):
        count["n"] += g.numel()
        count["gate"] += int((g > limit).sum())
        count["up"] += int((u.abs() > limit).sum())
        return plain(g, u, limit)

    rms, hooks = [], [b.register_forward_hook(lambda m, i, o: rms.append(round(float(o.pow(2).mean().sqrt()), 3)))
                      for b in model.blocks]
    R.swiglu_clamped = counting
    try:
        with torch.no_grad():
            logits = model(ids)
    finally:
        R.swiglu_clamped = plain
        for h in hooks:
            h.remove()
    top2 = logits.topk(2, dim=1).values
    return {"stream_rms_after_layer": rms,
            "swiglu_gate_clamped_fraction": round(count["gate"] / count["n"], 4),
            "swiglu_up_clamped_fraction": round(count["up"] / count["n"], 4),
            "expert_use_per_layer": [torch.bincount(b.moe.last_chosen.flatten(), minlength=model.cfg.n_expert).tolist()
                                     for b in model.blocks],
            "logit_std": round(float(logits.std()), 3),
            "min_top2_logit_margin": float((top2[:, 0] - top2[:, 1]).min())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "v4"))
    ap.add_argument("--regen-model", action="store_true")
    ap.add_argument("--node-llama-dir", default=os.environ.get("NODE_LLAMA_DIR", "/tmp/llama"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model_path = os.path.join(a.out, "tiny-v4.gguf")
    if a.regen_model:
        subprocess.run([sys.executable, os.path.join(HERE, "make_v4_gguf.py"), model_path], check=True)

    model, kv = R.V4Model.from_gguf(model_path, torch.float64)
    V = model.cfg.n_vocab
    tok = tokenizer_from_kv(kv)
    held = open(os.path.join(ROOT, "tests", "data", "golden", "heldout.txt"), encoding="utf-8").read()
    prompts = []
    for name, n in LENGTHS.items():
        text, ids = prompt_of_length(tok, held, n)
        prompts.append({"name": name, "text": text, "add_bos": True, "parse_special": True, "tokens": ids})
    for name, msgs in (("chat1", CHAT1), ("chat2", CHAT2)):
        text = corpus.render_chat(msgs, add_generation_prompt=True)
        prompts.append({"name": name, "text": text, "add_bos": True, "parse_special": True,
                        "tokens": tok.encode(text, add_bos=True, parse_special=True)})
    n1 = len(prompts[-2]["tokens"])
    if prompts[-1]["tokens"][:n1] != prompts[-2]["tokens"]:
        raise SystemExit("chat2 does not start with chat1's tokens")
    CHUNKS["chat2"] = [n1, len(prompts[-1]["tokens"]) - n1]

    # llama.cpp
    with tempfile.TemporaryDirectory() as tmp:
        spec = {"prompts": prompts, "greedy": [{"prompt": p, "n": N_GREEDY} for p in GREEDY_PROMPTS],
                "chunked": [{"prompt": p, "sizes": s} for p, s in CHUNKS.items()]}
        with open(os.path.join(tmp, "prompts.json"), "w") as f:
            json.dump(spec, f)
        env = dict(os.environ, NODE_LLAMA_DIR=a.node_llama_dir)
        subprocess.run(["node", os.path.join(HERE, "llama_logits_v4.mjs"), model_path,
                        os.path.join(tmp, "prompts.json"), tmp], check=True, env=env)
        with open(os.path.join(tmp, "llama.json")) as f:
            lrep = json.load(f)
        llama_logits = {p["name"]: np.fromfile(os.path.join(tmp, f"llama-{p['name']}.f32"), dtype="<f4")
                        .reshape(len(p["tokens"]), V) for p in prompts}
        llama_chunked = {n: np.fromfile(os.path.join(tmp, f"llama-{n}.chunked.f32"), dtype="<f4").reshape(-1, V)
                         for n in CHUNKS}

    ok = True
    man = {"model": "tiny-v4.gguf", "model_sha256": sha256(model_path), "n_vocab": V,
           "config": vars(model.cfg), "tolerance_abs_logit": TOL_ABS,
           "reference": "tools/deepseek4_ref.py, float64, whole prompt in one forward",
           "peer": "llama.cpp de3ff815 via node-llama-cpp 3.22.1, CPU backend, 1 thread, flash attention off, f32 KV cache",
           "logits_format": "little-endian f32, one row of n_vocab per entry of logit_positions",
           "prompts": [], "greedy": []}
    for p, lp in zip(prompts, lrep["prompts"]):
        name, ids = p["name"], p["tokens"]
        tok_same = lp.get("llama_tokens") == ids
        ok &= tok_same
        stats = Stats(model)
        with torch.no_grad():
            ref = model(ids).numpy()
        ind = stats.indexer()
        ll = llama_logits[name]
        d = np.abs(ref - ll)
        scale = np.abs(ref).max(1, keepdims=True)
        entry = {"name": name, "text": p["text"], "add_bos": True, "parse_special": True, "tokens": ids,
                 "llama_tokenization_identical": tok_same,
                 "logit_positions": logit_positions(len(ids)),
                 "ref_logits": f"ref-{name}.f32", "llama_logits": f"llama-{name}.f32",
                 "ref_vs_llama": {"max_abs": float(d.max()), "max_rel_to_row_max": float((d / scale).max()),
                                  "argmax_agree": f"{int((ref.argmax(1) == ll.argmax(1)).sum())}/{len(ids)}"},
                 "indexer": ind,
                 "ref_top5_every_position": [
                     {"ids": [int(i) for i in np.argsort(-r)[:5]], "logits": [round(float(r[i]), 6) for i in np.argsort(-r)[:5]]}
                     for r in ref]}
        ok &= bool(d.max() <= TOL_ABS)
        entry["feature_activity"] = activity(model, ids)
        # prefill == decode through the cache, for the reference and for llama.cpp
        if name in CHUNKS:
            step = chunked(model, ids, CHUNKS[name]).numpy()
            entry["chunk_sizes"] = CHUNKS[name]
            entry["ref_prefill_vs_incremental_max_abs"] = float(np.abs(step - ref).max())
            entry["llama_chunked_vs_ref_max_abs"] = float(np.abs(llama_chunked[name] - ref).max())
            ok &= entry["ref_prefill_vs_incremental_max_abs"] < 1e-9
            ok &= entry["llama_chunked_vs_ref_max_abs"] <= TOL_ABS
        pos = entry["logit_positions"]
        ref[pos].astype("<f4").tofile(os.path.join(a.out, entry["ref_logits"]))
        ll[pos].astype("<f4").tofile(os.path.join(a.out, entry["llama_logits"]))
        man["prompts"].append(entry)
        print(f"{name}: tokens {'same' if tok_same else 'DIFFER'}  max|ref-llama| {d.max():.2e}  "
              f"argmax {entry['ref_vs_llama']['argmax_agree']}  prefill-vs-incremental "
              f"{entry.get('ref_prefill_vs_incremental_max_abs', float('nan')):.1e}  llama.cpp chunked vs ref "
              f"{entry.get('llama_chunked_vs_ref_max_abs', float('nan')):.1e}\n    indexer {json.dumps(ind)}\n"
              f"    activity {json.dumps(entry['feature_activity'])}")

    for g in lrep["greedy"]:
        ids = next(p["tokens"] for p in prompts if p["name"] == g["prompt"])
        out, margin = greedy(model, ids, N_GREEDY)
        same = 0
        while same < len(out) and same < len(g["tokens"]) and out[same] == g["tokens"][same]:
            same += 1
        ok &= same == N_GREEDY
        man["greedy"].append({"prompt": g["prompt"], "n": N_GREEDY, "ref_tokens": out, "llama_tokens": g["tokens"],
                              "identical_prefix": same, "ref_min_top2_margin": margin})
        print(f"greedy after {g['prompt']}: {same}/{N_GREEDY} identical, min top-2 margin {margin:.3f}")

    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
