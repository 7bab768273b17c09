"""gate_bounds.py -- how much attention mass lies outside GSM's pinned pages
on the bundled model, and how tight the gate's page bounds are.

For the last 8 queries of N tokens of the calibration dialogues (default
1800), per layer and head, with the sink page and the last 4 pages pinned:
the true share of softmax mass on the other ("gated") positions, and the
bound the gate would compute from block summaries -- per channel min/max
(gate_bound.comp) and the smaller of that and a centre+radius bound --
for blocks of 32 (the page size), 8 and 4 keys.

    /usr/bin/python3 tools/gate_bounds.py [N]

Measured on models/gsm-tiny.gguf (N = 1800): the gated positions hold a
median 4.7 % (mean 12.6 %) of the mass, and the bounds are ~1.0 at every
block size, so at thresholds <= 0.3 the gate must read every gated page.
See the GSM section of the README."""
import math, os, sys
import torch
import torch.nn.functional as F
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_io as G
import make_golden as mg
import deepseek2_ref as D
torch.set_num_threads(2)
g = G.GGUFFile(os.path.join(HERE, "..", "models", "gsm-tiny.gguf"))
tok = mg.tokenizer_from_gguf(g)
text = open(os.path.join(HERE, "..", "models", "calib-dialogues.txt")).read()[20000:34000]
ids = tok.encode(text, True, True)[:int(sys.argv[1]) if len(sys.argv) > 1 else 1800]
m = D.RefModel(g)
cfg, w = m.cfg, m.w
T = len(ids); H, NOPE, R, KVL = cfg.n_heads, cfg.qk_nope, cfg.qk_rope, cfg.kv_lora_rank
pos = torch.arange(T, dtype=torch.float64)
ang = pos[:, None] * m.freq[None, :]
cos = (torch.cos(ang) * m.m_rope).float(); sin = (torch.sin(ang) * m.m_rope).float()
mask = torch.full((T, T), float("-inf")).triu(1)
x = w["token_embd.weight"][torch.tensor(ids)]
Qs, Ks = [], []
for i in range(cfg.n_layers):
    b = "blk.%d." % i
    h = D.rmsnorm(x, w[b + "attn_norm.weight"], cfg.eps)
    q = (h @ w[b + "attn_q.weight"].T).view(T, H, NOPE + R)
    q_nope, q_pe = q[..., :NOPE], q[..., NOPE:]
    kv = h @ w[b + "attn_kv_a_mqa.weight"].T
    c = D.rmsnorm(kv[:, :KVL], w[b + "attn_kv_a_norm.weight"], cfg.eps)
    k_pe = D.apply_rope(kv[:, KVL:], cos, sin)
    krow = torch.cat([c, k_pe], -1)
    q_abs = torch.einsum("hkn,thn->htk", w[b + "attn_k_b.weight"], q_nope)
    q_pe_r = D.apply_rope(q_pe.transpose(0, 1), cos, sin)
    Q = torch.cat([q_abs, q_pe_r], -1) * m.kq_scale
    s = torch.matmul(Q, krow.T) + mask
    p = torch.softmax(s, -1)
    o_lat = torch.matmul(p, krow[:, :KVL])
    o = torch.einsum("hdk,htk->thd", w[b + "attn_v_b.weight"], o_lat).reshape(T, -1)
    x = x + o @ w[b + "attn_output.weight"].T
    hh = D.rmsnorm(x, w[b + "ffn_norm.weight"], cfg.eps)
    if i < cfg.n_dense:
        y = (F.silu(hh @ w[b + "ffn_gate.weight"].T) * (hh @ w[b + "ffn_up.weight"].T)) @ w[b + "ffn_down.weight"].T
    else:
        y = m._moe(b, hh)
    x = x + y
    Qs.append(Q.double()); Ks.append(krow.double())
# true cold share vs the bound on it, per head (mean over queries), and with sub-page blocks
import statistics
for B in (32, 8, 4):
    true_s, box_s, sph_s = [], [], []
    for l in range(cfg.n_layers):
        K = Ks[l]; n_blk = T // B
        kb = K[:n_blk * B].view(n_blk, B, -1)
        kmin, kmax = kb.min(1).values, kb.max(1).values
        mu = kb.mean(1); rad = (kb - mu[:, None]).norm(dim=2).max(1).values
        for t in range(T - 8, T):
            n = t + 1; n_full_pages = n // 32; n_pages = (n + 31) // 32
            lo, hi = 32, (n_pages - 4) * 32          # gated positions [lo, hi)
            hi = min(hi, n_full_pages * 32)
            if hi <= lo: continue
            blocks = torch.arange(lo // B, hi // B)
            ex = torch.ones(n, dtype=torch.bool); ex[lo:hi] = False
            for hd in range(H):
                q = Qs[l][hd, t]; s = K[:n] @ q
                M = s[ex].max(); L = float(torch.exp(s[ex] - M).sum())
                C = float(torch.exp(s[lo:hi] - M).sum())
                true_s.append(C / (L + C))
                box = torch.maximum(q * kmin[blocks], q * kmax[blocks]).sum(1)
                sph = mu[blocks] @ q + q.norm() * rad[blocks]
                for ub, acc in ((box, box_s), (torch.minimum(box, sph), sph_s)):
                    U = float((B * torch.exp(ub - M)).sum()); acc.append(U / (L + U))
    print("blocks of %2d: true cold share median %.4f mean %.4f | bound box median %.3f | min(box,sphere) median %.3f  (share of head-queries with bound < 0.05: box %.2f, min %.2f)" % (
        B, statistics.median(true_s), statistics.mean(true_s), statistics.median(box_s), statistics.median(sph_s),
        sum(x < 0.05 for x in box_s) / len(box_s), sum(x < 0.05 for x in sph_s) / len(sph_s)), flush=True)
