"""Evaluate a model (GGUF via the fp32 reference, or a training checkpoint):
retrieval accuracy by distance, per-head attention locality, held-out loss,
sample chats.  Full (dense) attention everywhere.

    /usr/bin/python3 tools/eval_model.py --gguf models/gsm-tiny.gguf [--n 40] [--json tools/logs/eval.json]
    /usr/bin/python3 tools/eval_model.py --ckpt /tmp/gsm-train/ckpt-last.pt   (exports to a temp GGUF first)

Retrieval: held-out dialogues (fortunes from the held-out split, fresh random
facts) where one fact is stated in the first user turn and asked for after
~D tokens of fortune chatter.  A probe counts as correct when greedy decoding
reproduces the whole answer sentence ("The secret code is QF-7319."): this is
measured teacher-forced (every answer token is the argmax given the correct
prefix), which is the same as greedy decoding producing it.
Locality: per layer and head, the share of attention mass that queries at
positions >= 256 put on the last 64 tokens (including themselves), averaged
over queries and over held-out calibration-style dialogues of ~1,500 tokens.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch

import corpus
import gguf_io as G
from deepseek2_ref import RefModel
from make_golden import tokenizer_from_gguf

torch.set_num_threads(1)


def retrieval(ref, cp, distances, n, seed=2024):
    res = {}
    end = cp.end
    for d in distances:
        r = random.Random(seed + d)
        ok = 0
        val_ok = 0
        real = []
        by_kind = {}
        for _ in range(n):
            prompt, value, answer, dist = cp.probe_retrieval(r, d)
            real.append(dist)
            ans = cp.enc(answer) + [end]
            full = prompt + ans
            with torch.no_grad():
                lg, _ = ref.forward(full, logits_at=list(range(len(prompt) - 1, len(full) - 1)))
            pred = lg.argmax(-1).tolist()
            good = pred == ans
            ok += good
            # value only: the answer tokens that belong to the value
            vt = cp.enc(" " + value)
            vpos = [i for i in range(len(ans) - len(vt) + 1) if ans[i:i + len(vt)] == vt]
            if vpos:
                i0 = vpos[-1]
                val_ok += pred[i0:i0 + len(vt)] == vt
        res[d] = {"exact": ok / n, "value_exact": val_ok / n, "mean_distance": sum(real) / len(real), "n": n}
        print("retrieval ~%d tokens (mean %.0f): answer exact %.3f, value exact %.3f" %
              (d, sum(real) / len(real), ok / n, val_ok / n), flush=True)
    return res


def locality(ref, cp, n_docs=3, T=1536, seed=77):
    r = random.Random(seed)
    cfg = ref.cfg
    local = torch.zeros(cfg.n_layers, cfg.n_heads)
    far = torch.zeros(cfg.n_layers, cfg.n_heads)
    ent = torch.zeros(cfg.n_layers, cfg.n_heads)
    sink = torch.zeros(cfg.n_layers, cfg.n_heads)
    local_ns = torch.zeros(cfg.n_layers, cfg.n_heads)
    for _ in range(n_docs):
        ids = cp.retrieval_doc(r, T)[:T]
        with torch.no_grad():
            _, probs = ref.forward(ids, want_probs=True, logits_at=[T - 1])
        q = torch.arange(256, T)
        k = torch.arange(T)
        dist = q[:, None] - k[None, :]
        win = ((dist >= 0) & (dist < 64)).float()
        farm = (dist >= 256).float()
        for li, p in enumerate(probs):
            pq = p[:, 256:, :]
            local[li] += (pq * win).sum(-1).mean(-1) / n_docs
            far[li] += (pq * farm).sum(-1).mean(-1) / n_docs
            ent[li] += (-(pq.clamp_min(1e-12).log() * pq).sum(-1)).mean(-1) / n_docs
            s4 = pq[..., :4].sum(-1)                         # mass on the first 4 tokens (BOS sink)
            sink[li] += s4.mean(-1) / n_docs
            local_ns[li] += ((pq * win).sum(-1) / (1 - s4).clamp_min(1e-6)).mean(-1) / n_docs
    return local, far, ent, sink, local_ns


def fact_attention(ref, cp, d=500, n=8, seed=99):
    """Mass that the query predicting the first value token puts on the fact's value tokens."""
    cfg = ref.cfg
    acc = torch.zeros(cfg.n_layers, cfg.n_heads)
    r = random.Random(seed)
    for _ in range(n):
        prompt, value, answer, dist = cp.probe_retrieval(r, d)
        ans = cp.enc(answer)
        vt = cp.enc(" " + value)
        # position of the value in the prompt (first statement) and in the answer
        spos = [i for i in range(len(prompt)) if prompt[i:i + len(vt)] == vt]
        apos = [i for i in range(len(ans)) if ans[i:i + len(vt)] == vt]
        if not spos or not apos:
            continue
        full = prompt + ans
        qpos = len(prompt) + apos[-1] - 1       # predicts the first value token
        with torch.no_grad():
            _, probs = ref.forward(full[:qpos + 1], want_probs=True, logits_at=[qpos])
        s0 = spos[0]
        for li, p in enumerate(probs):
            acc[li] += p[:, qpos, s0:s0 + len(vt) + 1].sum(-1) / n
    return acc


def sample_chats(ref, tok):
    end = tok.id_of["<|end|>"]
    convs = [
        [{"role": "user", "content": "Tell me a fortune."}],
        [{"role": "user", "content": "Give me a quote about computers."}],
        [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "My name is Nadia and I live in Lisbon."},
         {"role": "assistant", "content": "Got it. I will remember that."},
         {"role": "user", "content": "Say something wise."},
         {"role": "assistant", "content": "He who laughs last thinks slowest."},
         {"role": "user", "content": "Where do I live?"}],
        [{"role": "user", "content": "Repeat after me: the purple kite flies over Oslo at 7 pm."}],
    ]
    out = []
    for c in convs:
        ids = tok.encode(corpus.render_chat(c, add_generation_prompt=True), add_bos=True, parse_special=True)
        gen = ref.greedy(ids, 80, stop={end, tok.eos_id})
        text = tok.decode(gen)
        out.append({"prompt": c[-1]["content"], "reply": text})
        print("USER: %s\nGSM-TINY: %s\n" % (c[-1]["content"], text), flush=True)
    return out


def heldout_ce(ref, tok, cp, seed=99, T=512, n=4):
    r = random.Random(seed)
    tot = 0.0
    cnt = 0
    for kind in ("chat", "plain"):
        for _ in range(n):
            ids = (cp.chat_doc(r, T + 1) if kind == "chat" else cp.plain_doc(r, T + 1))[:T + 1]
            with torch.no_grad():
                lg, _ = ref.forward(ids[:-1])
            tot += torch.nn.functional.cross_entropy(lg, torch.tensor(ids[1:]), reduction="sum").item()
            cnt += T
    return tot / cnt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf")
    ap.add_argument("--ckpt")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--distances", default="100,500,1500")
    ap.add_argument("--json")
    ap.add_argument("--skip-locality", action="store_true")
    a = ap.parse_args()
    path = a.gguf
    if a.ckpt:
        path = os.path.join(tempfile.mkdtemp(), "m.gguf")
        subprocess.check_call([sys.executable, os.path.join(HERE, "export_gguf.py"), "--ckpt", a.ckpt,
                               "--type", "f32", "--out", path], stdout=subprocess.DEVNULL)
    g = G.GGUFFile(path)
    tok = tokenizer_from_gguf(g)
    ref = RefModel(g)
    cp = corpus.Corpus(tok, "heldout")
    res = {"model": path}
    ce = heldout_ce(ref, tok, cp)
    res["heldout_ce_nats_per_token"] = ce
    print("held-out loss %.4f nats/token (ppl %.2f)" % (ce, math.exp(ce)), flush=True)
    res["samples"] = sample_chats(ref, tok)
    res["retrieval"] = retrieval(ref, cp, [int(x) for x in a.distances.split(",")], a.n)
    if not a.skip_locality:
        local, far, ent, sink, local_ns = locality(ref, cp)
        res["sink_mass_first4"] = sink.tolist()
        res["locality_last64_excluding_sink"] = local_ns.tolist()
        fa = fact_attention(ref, cp)
        res["locality_last64"] = local.tolist()
        res["mass_beyond_256"] = far.tolist()
        res["entropy"] = ent.tolist()
        res["fact_attention_d500"] = fa.tolist()
        n_local = int((local >= 0.9).sum())
        n_mid = int(((local >= 0.5) & (local < 0.9)).sum())
        n_far = int((local < 0.5).sum())
        res["head_counts"] = {"local(>=0.9 on last 64)": n_local, "mixed(0.5-0.9)": n_mid, "far(<0.5)": n_far,
                              "retrieval(fact mass >= 0.3 at d~500)": int((fa >= 0.3).sum()),
                              "sink-dominated(>=0.5 on first 4)": int((sink >= 0.5).sum()),
                              "local excluding sink(>=0.9)": int((local_ns >= 0.9).sum()),
                              "far excluding sink(<0.5)": int((local_ns < 0.5).sum())}
        print("share of attention mass on the last 64 tokens (rows = layers, cols = heads):")
        for li in range(local.shape[0]):
            print("  L%d " % li + " ".join("%.2f" % v for v in local[li].tolist()))
        print("mass on the first 4 tokens (attention sink):")
        for li in range(sink.shape[0]):
            print("  L%d " % li + " ".join("%.2f" % v for v in sink[li].tolist()))
        print("share of the non-sink mass on the last 64 tokens:")
        for li in range(local_ns.shape[0]):
            print("  L%d " % li + " ".join("%.2f" % v for v in local_ns[li].tolist()))
        print("mass on tokens >= 256 back:")
        for li in range(far.shape[0]):
            print("  L%d " % li + " ".join("%.2f" % v for v in far[li].tolist()))
        print("mass on the fact's value tokens when answering (d ~ 500):")
        for li in range(fa.shape[0]):
            print("  L%d " % li + " ".join("%.2f" % v for v in fa[li].tolist()))
        print("heads:", res["head_counts"], flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
