"""Train the bundled tiny deepseek2 model (CPU, bf16 autocast, 1 thread).

Schedule (all by step counts; see tools/README.md):
  stage 0:         a 2-layer attention-only model (same embedding/MLA/output modules)
                   trained on repeated random tokens until its copy accuracy > 0.9;
                   its attention layers are transplanted into layers 0-1;
  phase 1 "copy":  ctx 256 x batch 16, copy / key-value recall / short retrieval
                   dialogues, until the copy probe exceeds --copy-target
                   (checked every 50 steps; capped by --p1-max) -- or exactly
                   --p1-steps steps if given (to reproduce a run);
  phase 2 "mix":   fortunes chats + plain text + long retrieval dialogues +
                   some copy/recall, contexts 512 -> 1024 -> 2048 by step counts.

Usage:
  OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/train.py --out /tmp/gsm-train
"""
import argparse
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch
import torch.nn.functional as F

import bpe
import corpus
from deepseek2_ref import Config, DeepSeek2

torch.set_num_threads(1)

MIX_P1 = [("rdouble", 0.15), ("rcopy", 0.5), ("copy", 0.15), ("recall", 0.1), ("retrieval", 0.10)]
MIX_P2 = [("chat", 0.25), ("plain", 0.10), ("retrieval", 0.40), ("copy", 0.10), ("recall", 0.10), ("rcopy", 0.05)]


def pick(r, mix):
    u = r.random()
    acc = 0.0
    for name, w in mix:
        acc += w
        if u < acc:
            return name
    return mix[-1][0]


def make_seq(cp, r, kind, n):
    if kind == "rcopy":
        ids = cp.rcopy_doc(r, n)
    elif kind == "rdouble":
        ids = cp.rdouble_doc(r, n)
    elif kind == "copy":
        ids = cp.copy_doc(r, n)
    elif kind == "recall":
        ids = cp.recall_doc(r, n)
    elif kind == "retrieval":
        ids = cp.retrieval_doc(r, n)
    elif kind == "plain":
        ids = cp.plain_doc(r, n)
    else:
        ids = cp.chat_doc(r, n)
    return ids[:n]


def make_batch(cp, seed, step, B, T, mix):
    """(ids [B, T+1], loss weights [B, T] for the targets ids[:, 1:])."""
    r = random.Random(seed * 1000003 + step)
    rows, ws = [], []
    for _ in range(B):
        kind = pick(r, mix)
        rows.append(make_seq(cp, r, kind, T + 1))
        ws.append(cp.last_mask[1:T + 1] if kind in ("rcopy", "rdouble") else [1] * T)
    return torch.tensor(rows, dtype=torch.long), torch.tensor(ws, dtype=torch.float32)


def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    if step < a.p1_end:
        return a.lr
    t = (step - a.p1_end) / max(1, a.total - a.p1_end)
    return a.lr_min + 0.5 * (a.lr - a.lr_min) * (1 + math.cos(math.pi * min(1.0, t)))


# ------------------------------------------------------------------ stage 0

class AttnOnly(torch.nn.Module):
    """Attention-only L-layer model with the same embedding / MLA / output modules
    as DeepSeek2: trained on repeated random tokens it forms induction (copy) heads
    after ~900 steps (a sharp phase change); the full model did not in 1,200+ steps."""

    def __init__(self, cfg, n_layers):
        super().__init__()
        from deepseek2_ref import MLA, RMSNorm
        self.cfg = cfg
        self.embed = torch.nn.Embedding(cfg.n_vocab, cfg.dim)
        self.norms = torch.nn.ModuleList([RMSNorm(cfg.dim, cfg.eps) for _ in range(n_layers)])
        self.attns = torch.nn.ModuleList([MLA(cfg) for _ in range(n_layers)])
        self.norm = RMSNorm(cfg.dim, cfg.eps)
        self.output = torch.nn.Linear(cfg.dim, cfg.n_vocab, bias=False)

    def forward(self, ids):
        from deepseek2_ref import rope_cos_sin, rope_params
        T = ids.shape[1]
        cos, sin = rope_cos_sin(self.cfg, torch.arange(T))
        mask = torch.full((T, T), float("-inf")).triu(1).to(torch.bfloat16)
        kq = rope_params(self.cfg)[2]
        x = self.embed(ids)
        for n, a in zip(self.norms, self.attns):
            x = x + a(n(x), cos, sin, mask, kq)[0]
        return self.output(self.norm(x))


def stage0(cfg, seed, steps, lr, n_special_first, log, n_layers=2, T=128, B=16, target=0.9, fixed=False):
    """Train the attention-only model on token-level repeated random sequences
    ([BOS] x [END] x [BOS] x ...), loss on the repeats only, until the copy accuracy
    averaged over the last 50 steps exceeds `target` (checked every 50 steps), at
    most `steps` steps; with fixed=True exactly `steps` steps.  Deterministic."""
    m = AttnOnly(cfg, n_layers)
    g = torch.Generator().manual_seed(seed + 17)
    for name, p in m.named_parameters():
        with torch.no_grad():
            if p.dim() == 1:
                p.fill_(1.0)
            elif any(k in name for k in ("wq", "wkv_a", "wkv_b")):
                p.copy_(torch.randn(p.shape, generator=g) * p.shape[1] ** -0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    opt = torch.optim.AdamW(m.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    r = random.Random(seed + 23)
    bos, end = n_special_first, n_special_first + 5
    hist = []
    for step in range(1, steps + 1):
        rows, ws = [], []
        for _ in range(B):
            n = r.randint(8, 40)
            x = [r.randrange(n_special_first) for _ in range(n)]
            seq = ([bos] + x + [end] + x) * 10
            rows.append(seq[:T + 1])
            ws.append([0] * (n + 1) + [1] * (T - n - 1))
        X = torch.tensor(rows)
        W = torch.tensor(ws, dtype=torch.float32)
        for gr in opt.param_groups:
            gr["lr"] = lr * min(1.0, step / 30)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lg = m(X[:, :-1])
            ce = F.cross_entropy(lg.float().reshape(-1, cfg.n_vocab), X[:, 1:].reshape(-1), reduction="none")
            loss = (ce * W.reshape(-1)).sum() / W.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc = float(((lg.argmax(-1) == X[:, 1:]).float() * W).sum() / W.sum())
        hist.append(acc)
        if step % 50 == 0:
            avg = sum(hist[-50:]) / 50
            log("p0 step %d loss %.4f copy_acc %.3f" % (step, loss.item(), avg))
            if not fixed and avg > target:
                break
    log("stage 0 done at step %d (reproduce with --p0-steps %d)" % (step, step))
    return m


def transplant(model, m0, log):
    """Copy embedding, output, final norm and the attention layers of the stage-0
    model into layers 0.. of the full model (FFN/MoE blocks keep their init)."""
    with torch.no_grad():
        model.embed.weight.copy_(m0.embed.weight)
        model.output.weight.copy_(m0.output.weight)
        model.norm.weight.copy_(m0.norm.weight)
        for i, (n, a) in enumerate(zip(m0.norms, m0.attns)):
            model.layers[i].attn_norm.weight.copy_(n.weight)
            model.layers[i].attn.load_state_dict(a.state_dict())
    log("transplanted stage-0 attention into layers 0..%d" % (len(m0.attns) - 1))


# ------------------------------------------------------------------ probes

def copy_probe(model, cp, n=24, seed=777):
    """Argmax accuracy on the copied part of held-out 'Repeat after me' turns (2nd+ token)."""
    r = random.Random(seed)
    model.eval()
    correct = total = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for _ in range(n):
            x = " ".join(corpus.rand_word(r) for _ in range(r.randint(8, 25)))
            pre = [cp.tok.bos_id] + cp.msg("user", "Repeat after me: " + x) + [cp.role["assistant"]]
            ans = cp.enc("\n" + x)
            ids = pre + ans
            lg, _ = model(torch.tensor([ids]))
            pred = lg[0].argmax(-1)
            for j in range(len(pre) + 1, len(ids)):
                total += 1
                correct += int(pred[j - 1] == ids[j])
    model.train()
    return correct / max(1, total)


def retrieval_probe(model, cp, distances, n=12, seed=4242):
    """Teacher-forced exact match of the fact value in the answer, by distance."""
    model.eval()
    res = {}
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for d in distances:
            r = random.Random(seed + d)
            ok = 0
            for _ in range(n):
                prompt, value, answer, dist = cp.probe_retrieval(r, d)
                full = prompt + cp.enc("\n" + answer)[1:] if False else prompt + cp.enc(answer)
                lg, _ = model(torch.tensor([full]))
                pred = lg[0].argmax(-1)
                good = all(int(pred[j - 1]) == full[j] for j in range(len(prompt), len(full)))
                ok += int(good)
            res[d] = ok / n
    model.train()
    return res


def heldout_loss(model, cp_held, seed=99, B=4, T=512):
    r = random.Random(seed)
    model.eval()
    tot = 0.0
    n = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for kind in ("chat", "plain"):
            rows = [make_seq(cp_held, r, kind, T + 1) for _ in range(B)]
            x = torch.tensor(rows)
            lg, _ = model(x[:, :-1])
            tot += F.cross_entropy(lg.float().reshape(-1, lg.shape[-1]), x[:, 1:].reshape(-1)).item()
            n += 1
    model.train()
    return tot / n


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/gsm-train")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--lr-min", type=float, default=2e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--aux", type=float, default=0.01)
    ap.add_argument("--copy-target", type=float, default=0.85)
    ap.add_argument("--p1-max", type=int, default=1000)
    ap.add_argument("--p1-steps", type=int, default=0, help="fixed phase-1 length (reproduce a run)")
    ap.add_argument("--p2", default="512x8:900,1024x4:450,2048x2:350",
                    help="phase-2 stages ctx x batch : steps")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--expert-ffn", type=int, default=192)
    ap.add_argument("--ffn", type=int, default=768)
    ap.add_argument("--no-fanin", action="store_true")
    ap.add_argument("--p0-max", type=int, default=3000, help="attention-only copy pre-stage, max steps (0 = off)")
    ap.add_argument("--p0-steps", type=int, default=0, help="fixed stage-0 length (reproduce a run)")
    ap.add_argument("--p0-layers", type=int, default=2)
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.json"))
    ap.add_argument("--log", default=None)
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    logf = open(a.log or os.path.join(a.out, "train.log"), "a")

    def log(*xs):
        s = " ".join(str(x) for x in xs)
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    tok = bpe.Tokenizer.load(a.tokenizer)
    cp = corpus.Corpus(tok, "train")
    cp_held = corpus.Corpus(tok, "heldout")
    cfg = Config(n_vocab=tok.n_vocab, dim=a.dim, n_layers=a.layers, n_heads=a.heads,
                 expert_ffn=a.expert_ffn, ffn_dim=a.ffn)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    model = DeepSeek2(cfg)
    model.init_weights(a.seed, fan_in_attn=not a.no_fanin)
    if (a.p0_steps or a.p0_max) and not a.bench:
        m0 = stage0(cfg, a.seed, a.p0_steps or a.p0_max, a.lr, tok.bos_id, log, n_layers=a.p0_layers,
                    fixed=bool(a.p0_steps))
        transplant(model, m0, log)
    nparam = sum(p.numel() for p in model.parameters())
    log("cmd", " ".join(sys.argv))
    log("config", json.dumps(cfg.__dict__), "params", nparam)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)

    stages = []
    for s in a.p2.split(","):
        ct, st = s.split(":")
        T, B = ct.split("x")
        stages.append((int(T), int(B), int(st)))

    if a.bench:
        for T, B in [(256, 16), (512, 8), (1024, 4), (2048, 2)]:
            x, _ = make_batch(cp, 0, 0, B, T, MIX_P2)
            for it in range(3):
                t0 = time.time()
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    lg, _ = model(x[:, :-1])
                    loss = F.cross_entropy(lg.float().reshape(-1, cfg.n_vocab), x[:, 1:].reshape(-1)) + a.aux * model.aux_loss()
                loss.backward()
                opt.zero_grad()
                dt = time.time() - t0
            t1 = time.time()
            for _ in range(5):
                make_batch(cp, 0, 1, B, T, MIX_P2)
            log("bench T=%d B=%d: %.3f s/step, %.0f tok/s, batch gen %.3f s" % (T, B, dt, B * T / dt, (time.time() - t1) / 5))
        return

    step = 0
    p1_done = False
    a.p1_end = a.p1_steps if a.p1_steps else 10 ** 9
    a.total = 10 ** 9
    t_start = time.time()
    ntok = 0
    hist = []

    def train_step(B, T, mix):
        nonlocal ntok
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        x, wt = make_batch(cp, a.seed, step, B, T, mix)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lg, _ = model(x[:, :-1])
            ce_all = F.cross_entropy(lg.float().reshape(-1, cfg.n_vocab), x[:, 1:].reshape(-1), reduction="none")
            ce = (ce_all * wt.reshape(-1)).sum() / wt.sum()
            aux = model.aux_loss()
            loss = ce + a.aux * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ntok += B * T
        return ce.item(), float(aux), float(gn)

    def save(tag):
        torch.save({"cfg": cfg.__dict__, "model": model.state_dict(), "step": step, "p1_end": a.p1_end},
                   os.path.join(a.out, "ckpt-%s.pt" % tag))
        torch.save({"cfg": cfg.__dict__, "model": model.state_dict(), "step": step, "p1_end": a.p1_end},
                   os.path.join(a.out, "ckpt-last.pt"))

    # phase 1
    while not p1_done:
        ce, aux, gn = train_step(16, 256, MIX_P1)
        hist.append(ce)
        step += 1
        if step % 10 == 0:
            el = time.time() - t_start
            log("p1 step %d ce %.4f aux %.3f gn %.2f lr %.2e tok %d tok/s %.0f t %.0f" %
                (step, sum(hist[-10:]) / 10, aux, gn, lr_at(step, a), ntok, ntok / el, el))
        if a.p1_steps:
            if step >= a.p1_steps:
                p1_done = True
        elif step % 50 == 0:
            acc = copy_probe(model, cp_held)
            log("p1 probe step %d copy_acc %.3f" % (step, acc))
            if acc > a.copy_target or step >= a.p1_max:
                p1_done = True
    a.p1_end = step
    a.total = step + sum(s[2] for s in stages)
    log("phase1 done at step %d (reproduce with --p1-steps %d); total steps %d" % (step, step, a.total))
    save("p1")

    # phase 2
    for (T, B, n) in stages:
        log("stage ctx %d batch %d steps %d" % (T, B, n))
        for _ in range(n):
            ce, aux, gn = train_step(B, T, MIX_P2)
            hist.append(ce)
            step += 1
            if step % 10 == 0:
                el = time.time() - t_start
                log("p2 step %d ctx %d ce %.4f aux %.3f gn %.2f lr %.2e tok %d tok/s %.0f t %.0f" %
                    (step, T, sum(hist[-10:]) / 10, aux, gn, lr_at(step, a), ntok, ntok / el, el))
            if step % a.eval_every == 0 or step == a.total:
                hl = heldout_loss(model, cp_held)
                ds = [d for d in (100, 500, 1500) if d + 40 < T]
                rp = retrieval_probe(model, cp_held, ds)
                cacc = copy_probe(model, cp_held)
                log("eval step %d heldout_ce %.4f copy_acc %.3f retrieval %s" %
                    (step, hl, cacc, json.dumps(rp)))
                save("s%d" % step)
    log("done step %d tokens %d time %.0f s" % (step, ntok, time.time() - t_start))
    save("final")


if __name__ == "__main__":
    main()
