"""PyTorch reference of llama.cpp's `deepseek2` architecture (see
../shared/docs/deepseek2-gguf.md sections 5-7), plus the trainable module.

Two forms of the same function:
  * DeepSeek2 (nn.Module): the training form.  MLA written as ordinary MHA with
    k_h = [W_UK_h c | k_pe], v_h = W_UV_h c (HF layout of kv_b_proj).
  * RefModel: the reference used for goldens.  Loads a GGUF (any of F32/F16/Q8_0,
    dequantised to fp32) and computes exactly what llama.cpp's graph computes:
    absorbed MLA over the latent cache (attn_k_b / attn_v_b), NORM (adjacent
    pair) RoPE with YaRN, kq_scale = mscale^2/sqrt(DK), softmax/sigmoid gating,
    top-k, weight normalisation and scaling, shared experts.
"""
import math
from dataclasses import dataclass, asdict, field

import torch
import torch.nn as nn
import torch.nn.functional as F


SOFTMAX_FP32 = True


@dataclass
class Config:
    n_vocab: int = 1024
    dim: int = 256
    n_layers: int = 4
    n_heads: int = 8
    q_lora_rank: int = 0
    kv_lora_rank: int = 64
    qk_nope: int = 32
    qk_rope: int = 16
    v_dim: int = 32
    ffn_dim: int = 768           # dense FFN width (leading dense blocks)
    n_dense: int = 1             # leading_dense_block_count
    n_experts: int = 8
    n_used: int = 2
    n_shared: int = 1
    expert_ffn: int = 192
    gating: int = 1              # 1 softmax, 2 sigmoid
    weights_norm: bool = True
    weights_scale: float = 1.0
    eps: float = 1e-6
    rope_base: float = 10000.0
    rope_scaling: str = "yarn"   # "yarn" or "none"
    yarn_factor: float = 1.0
    yarn_orig_ctx: int = 2048
    mscale_all_dim: float = 1.0  # stored as yarn_log_multiplier = 0.1 * this
    ctx_len: int = 2048

    @property
    def dk(self):
        return self.qk_nope + self.qk_rope


# --------------------------------------------------------------------------- RoPE / scale

def rope_params(cfg):
    """(theta scale per pair [R/2] as a function of pos, m_rope, kq_scale) per §5/§6."""
    d = cfg.qk_rope
    b = cfg.rope_base
    s = cfg.yarn_factor if cfg.yarn_factor and cfg.yarn_factor > 0 else 1.0
    fs = 1.0 / s
    ext = 1.0 if cfg.rope_scaling == "yarn" else 0.0
    i = torch.arange(d // 2, dtype=torch.float64)
    base_freq = b ** (-2.0 * i / d)
    if ext == 0:
        freq = fs * base_freq
    else:
        n_orig = cfg.yarn_orig_ctx
        low = max(0.0, math.floor(d * math.log(n_orig / (32 * 2 * math.pi)) / (2 * math.log(b))))
        high = min(d - 1.0, math.ceil(d * math.log(n_orig / (1 * 2 * math.pi)) / (2 * math.log(b))))
        ramp = 1 - torch.clamp((i - low) / max(0.001, high - low), 0, 1)
        freq = fs * base_freq * (1 - ramp) + base_freq * ramp
    # attn_factor as llama_context forms it
    msad = cfg.mscale_all_dim

    def get_mscale(sc, m):
        return 1.0 if sc <= 1 else 1 + 0.1 * m * math.log(sc)
    attn_factor = 1.0
    if ext != 0:
        if msad != 0:
            m = msad if msad != 1 else 1.0
            attn_factor = get_mscale(s, m) / get_mscale(s, msad)
        else:
            attn_factor = get_mscale(s, 1)
        attn_factor *= 1 / (1 + 0.1 * math.log(s))
    m_rope = attn_factor * ((1 + 0.1 * math.log(s)) if ext else 1.0)
    attn_factor_org = attn_factor * (1 + 0.1 * math.log(1 / fs))
    mscale = attn_factor_org * (1 + 0.1 * msad * math.log(1 / fs))
    kq_scale = mscale * mscale / math.sqrt(cfg.dk)
    return freq, m_rope, kq_scale


def rope_cos_sin(cfg, positions, dtype=torch.float32):
    freq, m_rope, _ = rope_params(cfg)
    ang = positions.to(torch.float64)[:, None] * freq[None, :]
    return (torch.cos(ang) * m_rope).to(dtype), (torch.sin(ang) * m_rope).to(dtype)


def apply_rope(x, cos, sin):
    """NORM rope: adjacent pairs (x[2i], x[2i+1]).  x [..., T, R]; cos/sin [T, R/2]."""
    x0 = x[..., 0::2]
    x1 = x[..., 1::2]
    y0 = x0 * cos - x1 * sin
    y1 = x0 * sin + x1 * cos
    return torch.stack((y0, y1), dim=-1).flatten(-2)


def rmsnorm(x, w, eps):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.float()).to(x.dtype) if x.dtype != torch.float32 else y * w


# --------------------------------------------------------------------------- training module

class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)


class MLA(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        H = cfg.n_heads
        assert cfg.q_lora_rank == 0, "training module uses attn_q (q_lora_rank = 0)"
        self.wq = nn.Linear(cfg.dim, H * cfg.dk, bias=False)
        self.wkv_a = nn.Linear(cfg.dim, cfg.kv_lora_rank + cfg.qk_rope, bias=False)
        self.kv_norm = RMSNorm(cfg.kv_lora_rank, cfg.eps)
        self.wkv_b = nn.Linear(cfg.kv_lora_rank, H * (cfg.qk_nope + cfg.v_dim), bias=False)
        self.wo = nn.Linear(H * cfg.v_dim, cfg.dim, bias=False)

    def forward(self, x, cos, sin, mask, kq_scale, want_probs=False):
        cfg = self.cfg
        B, T, _ = x.shape
        H, NOPE, R, DV, KVL = cfg.n_heads, cfg.qk_nope, cfg.qk_rope, cfg.v_dim, cfg.kv_lora_rank
        q = self.wq(x).view(B, T, H, NOPE + R)
        q_nope, q_pe = q[..., :NOPE], q[..., NOPE:]
        kv = self.wkv_a(x)
        c = self.kv_norm(kv[..., :KVL])
        k_pe = kv[..., KVL:]
        kvb = self.wkv_b(c).view(B, T, H, NOPE + DV)
        k_nope, v = kvb[..., :NOPE], kvb[..., NOPE:]
        q_pe = apply_rope(q_pe.transpose(1, 2), cos, sin)               # B H T R
        k_pe = apply_rope(k_pe.unsqueeze(1), cos, sin)                  # B 1 T R
        qh = torch.cat([q_nope.transpose(1, 2), q_pe.to(q_nope.dtype)], -1)            # B H T DK
        kh = torch.cat([k_nope.transpose(1, 2), k_pe.to(k_nope.dtype).expand(B, H, T, R)], -1)
        vh = v.transpose(1, 2)
        qf = qh.reshape(B * H, T, NOPE + R)
        kf = kh.reshape(B * H, T, NOPE + R)
        sc = torch.baddbmm(mask.expand(B * H, T, T), qf, kf.transpose(1, 2), alpha=kq_scale)
        # softmax (and its backward) in fp32: in bf16 the attention-score gradients
        # drown in rounding noise and induction/copy heads never form (measured)
        p = torch.softmax(sc.float(), dim=-1) if SOFTMAX_FP32 else torch.softmax(sc, dim=-1)
        o = torch.bmm(p.to(vh.dtype), vh.reshape(B * H, T, DV)).view(B, H, T, DV)
        o = o.transpose(1, 2).reshape(B, T, H * DV)
        return self.wo(o), (p.view(B, H, T, T) if want_probs else None)


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)   # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)   # up
        self.w2 = nn.Linear(hidden, dim, bias=False)   # down

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.gate = nn.Linear(cfg.dim, cfg.n_experts, bias=False)
        self.experts = nn.ModuleList([Expert(cfg.dim, cfg.expert_ffn) for _ in range(cfg.n_experts)])
        self.shared = Expert(cfg.dim, cfg.expert_ffn * cfg.n_shared)
        self.aux = None

    def forward(self, x):
        cfg = self.cfg
        shp = x.shape
        xf = x.reshape(-1, shp[-1])
        logits = self.gate(xf).float()
        p = torch.softmax(logits, -1) if cfg.gating == 1 else torch.sigmoid(logits)
        w, idx = torch.topk(p, cfg.n_used, dim=-1)
        if cfg.weights_norm:
            w = w / w.sum(-1, keepdim=True).clamp_min(6.103515625e-5)
        if cfg.weights_scale not in (0.0, 1.0):
            w = w * cfg.weights_scale
        out = self.shared(xf)
        out = out.float() if out.dtype != torch.float32 else out
        for e in range(cfg.n_experts):
            sel = (idx == e)
            rows = sel.any(-1).nonzero().squeeze(-1)
            if rows.numel() == 0:
                continue
            we = (w * sel).sum(-1)[rows]
            y = self.experts[e](xf[rows])
            out = out.index_add(0, rows, y.float() * we[:, None])
        if self.training:
            NE = cfg.n_experts
            frac = F.one_hot(idx, NE).float().sum(1).mean(0) / cfg.n_used
            pm = (p / p.sum(-1, keepdim=True)).mean(0)
            self.aux = NE * (frac * pm).sum()
        return out.to(x.dtype).view(shp)


class Block(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.attn = MLA(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.ffn = Expert(cfg.dim, cfg.ffn_dim) if i < cfg.n_dense else MoE(cfg)

    def forward(self, x, cos, sin, mask, kq_scale, want_probs=False):
        a, p = self.attn(self.attn_norm(x), cos, sin, mask, kq_scale, want_probs)
        x = x + a
        x = x + self.ffn(self.ffn_norm(x))
        return x, p


class DeepSeek2(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.n_vocab, cfg.dim)
        self.layers = nn.ModuleList([Block(cfg, i) for i in range(cfg.n_layers)])
        self.norm = RMSNorm(cfg.dim, cfg.eps)
        self.output = nn.Linear(cfg.dim, cfg.n_vocab, bias=False)
        _, _, self.kq_scale = rope_params(cfg)
        self._mask_cache = {}

    def init_weights(self, seed, fan_in_attn=True, fan_in_all=False, embed_std=0.02):
        """N(0, 0.02) with residual-output projections scaled by 1/sqrt(2L); with
        fan_in_attn the q / kv_a / kv_b projections use std = fan_in^-0.5; with
        fan_in_all every matrix does (output projections too)."""
        g = torch.Generator().manual_seed(seed)
        L = self.cfg.n_layers
        for name, p in self.named_parameters():
            if p.dim() == 1:
                nn.init.ones_(p)
                continue
            std = 0.02
            if name.startswith("embed"):
                std = embed_std
            elif fan_in_all:
                std = p.shape[-1] ** -0.5
                if name.endswith(("wo.weight", "w2.weight")):
                    std /= math.sqrt(2 * L)
            elif fan_in_attn and any(k in name for k in ("attn.wq", "attn.wkv_a", "attn.wkv_b")):
                std = p.shape[1] ** -0.5
            elif name.endswith(("wo.weight", "w2.weight")):
                std = 0.02 / math.sqrt(2 * L)
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * std)

    def mask(self, T, dtype):
        key = (T, dtype)
        m = self._mask_cache.get(key)
        if m is None:
            m = torch.full((T, T), float("-inf")).triu(1).to(dtype)
            self._mask_cache[key] = m
        return m

    def forward(self, ids, want_probs=False):
        B, T = ids.shape
        pos = torch.arange(T)
        cos, sin = rope_cos_sin(self.cfg, pos)
        dt = torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else torch.float32
        mask = self.mask(T, dt)
        x = self.embed(ids)
        probs = []
        for blk in self.layers:
            x, p = blk(x, cos, sin, mask, self.kq_scale, want_probs)
            probs.append(p)
        x = self.norm(x)
        return self.output(x), probs

    def aux_loss(self):
        a = [blk.ffn.aux for blk in self.layers if isinstance(blk.ffn, MoE) and blk.ffn.aux is not None]
        return sum(a) / len(a) if a else torch.zeros(())


# --------------------------------------------------------------------------- GGUF mapping

def to_gguf_tensors(model):
    """name -> numpy float32 array in numpy order (reverse of ggml ne), per §4."""
    cfg = model.cfg
    H, NOPE, DV, KVL = cfg.n_heads, cfg.qk_nope, cfg.v_dim, cfg.kv_lora_rank
    sd = {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}
    t = {"token_embd.weight": sd["embed.weight"], "output_norm.weight": sd["norm.weight"],
         "output.weight": sd["output.weight"]}
    for i in range(cfg.n_layers):
        p = "layers.%d." % i
        b = "blk.%d." % i
        t[b + "attn_norm.weight"] = sd[p + "attn_norm.weight"]
        t[b + "attn_q.weight"] = sd[p + "attn.wq.weight"]
        t[b + "attn_kv_a_mqa.weight"] = sd[p + "attn.wkv_a.weight"]
        t[b + "attn_kv_a_norm.weight"] = sd[p + "attn.kv_norm.weight"]
        kvb = sd[p + "attn.wkv_b.weight"].reshape(H, NOPE + DV, KVL)
        t[b + "attn_k_b.weight"] = kvb[:, :NOPE, :].transpose(0, 2, 1).copy()   # [H, KVL, NOPE]
        t[b + "attn_v_b.weight"] = kvb[:, NOPE:, :].copy()                     # [H, DV, KVL]
        t[b + "attn_output.weight"] = sd[p + "attn.wo.weight"]
        t[b + "ffn_norm.weight"] = sd[p + "ffn_norm.weight"]
        if i < cfg.n_dense:
            t[b + "ffn_gate.weight"] = sd[p + "ffn.w1.weight"]
            t[b + "ffn_up.weight"] = sd[p + "ffn.w3.weight"]
            t[b + "ffn_down.weight"] = sd[p + "ffn.w2.weight"]
        else:
            t[b + "ffn_gate_inp.weight"] = sd[p + "ffn.gate.weight"]
            for nm, w in (("gate", "w1"), ("up", "w3"), ("down", "w2")):
                import numpy as np
                t[b + "ffn_%s_exps.weight" % nm] = np.stack(
                    [sd[p + "ffn.experts.%d.%s.weight" % (e, w)] for e in range(cfg.n_experts)])
                t[b + "ffn_%s_shexp.weight" % nm] = sd[p + "ffn.shared.%s.weight" % w]
    return t


def config_from_gguf(g):
    a = g.kv["general.architecture"]
    assert a == "deepseek2", a
    k = lambda s, d=None: g.kv.get("deepseek2." + s, d)
    return Config(
        n_vocab=len(g.kv["tokenizer.ggml.tokens"]), dim=k("embedding_length"), n_layers=k("block_count"),
        n_heads=k("attention.head_count"), q_lora_rank=k("attention.q_lora_rank", 0),
        kv_lora_rank=k("attention.kv_lora_rank"), qk_nope=k("attention.key_length_mla") - k("rope.dimension_count"),
        qk_rope=k("rope.dimension_count"), v_dim=k("attention.value_length_mla"),
        ffn_dim=k("feed_forward_length", 0), n_dense=k("leading_dense_block_count", 0),
        n_experts=k("expert_count", 0), n_used=k("expert_used_count", 0), n_shared=k("expert_shared_count", 0),
        expert_ffn=k("expert_feed_forward_length", 0), gating=k("expert_gating_func", 1) or 1,
        weights_norm=bool(k("expert_weights_norm", False)), weights_scale=k("expert_weights_scale", 0.0),
        eps=k("attention.layer_norm_rms_epsilon"), rope_base=k("rope.freq_base", 10000.0),
        rope_scaling=k("rope.scaling.type", "none"), yarn_factor=k("rope.scaling.factor", 1.0) or 1.0,
        yarn_orig_ctx=k("rope.scaling.original_context_length", k("context_length")),
        mscale_all_dim=k("rope.scaling.yarn_log_multiplier", 0.0) / 0.1, ctx_len=k("context_length"))


# --------------------------------------------------------------------------- reference (GGUF, absorbed MLA)

class RefModel:
    """fp32 reference that reads a GGUF file and computes llama.cpp's deepseek2 graph."""

    def __init__(self, g, dtype=torch.float32):
        self.cfg = config_from_gguf(g)
        self.dtype = dtype
        self.w = {n: torch.from_numpy(g.tensor(n)).to(dtype) for n in g.order}
        self.freq, self.m_rope, self.kq_scale = rope_params(self.cfg)

    def forward(self, ids, want_probs=False, logits_at=None, cache=None):
        """ids: token ids of one sequence.  With cache=None they start at position 0;
        with a cache (list per layer of cached K rows [c | k_pe], as llama.cpp's
        K-only MLA cache) they continue it, and the cache is extended in place.
        Returns logits [T, V] (or only the rows in logits_at) and, if asked, per
        layer the attention probabilities [H, T, T_total]."""
        cfg, w, dt = self.cfg, self.w, self.dtype
        T = len(ids)
        P = cache[0].shape[0] if cache is not None and cache[0] is not None else 0
        H, NOPE, R, DV, KVL = cfg.n_heads, cfg.qk_nope, cfg.qk_rope, cfg.v_dim, cfg.kv_lora_rank
        pos = torch.arange(P, P + T, dtype=torch.float64)
        ang = pos[:, None] * self.freq[None, :]
        cos = (torch.cos(ang) * self.m_rope).to(dt)
        sin = (torch.sin(ang) * self.m_rope).to(dt)
        mask = torch.full((T, P + T), float("-inf"), dtype=dt).triu(P + 1)
        x = w["token_embd.weight"][torch.tensor(ids)]
        probs = []
        for i in range(cfg.n_layers):
            b = "blk.%d." % i
            h = rmsnorm(x, w[b + "attn_norm.weight"], cfg.eps)
            if cfg.q_lora_rank > 0:
                qa = rmsnorm(h @ w[b + "attn_q_a.weight"].T, w[b + "attn_q_a_norm.weight"], cfg.eps)
                q = qa @ w[b + "attn_q_b.weight"].T
            else:
                q = h @ w[b + "attn_q.weight"].T
            q = q.view(T, H, NOPE + R)
            q_nope, q_pe = q[..., :NOPE], q[..., NOPE:]
            kv = h @ w[b + "attn_kv_a_mqa.weight"].T
            c = rmsnorm(kv[:, :KVL], w[b + "attn_kv_a_norm.weight"], cfg.eps)
            k_pe = apply_rope(kv[:, KVL:], cos, sin)                    # T R
            krow = torch.cat([c, k_pe], -1)                             # T (KVL+R)
            if cache is not None:
                if cache[i] is not None:
                    krow = torch.cat([cache[i], krow], 0)
                cache[i] = krow
            kb = w[b + "attn_k_b.weight"]                               # H KVL NOPE
            vb = w[b + "attn_v_b.weight"]                               # H DV KVL
            q_abs = torch.einsum("hkn,thn->htk", kb, q_nope)            # H T KVL
            q_pe_r = apply_rope(q_pe.transpose(0, 1), cos, sin)         # H T R
            Q = torch.cat([q_abs, q_pe_r], -1)                          # H T (KVL+R)
            s = torch.matmul(Q, krow.T) * self.kq_scale + mask          # H T P+T
            p = torch.softmax(s, -1)
            if want_probs:
                probs.append(p)
            o_lat = torch.matmul(p, krow[:, :KVL])                      # H T KVL  (V = latent part of the row)
            o = torch.einsum("hdk,htk->thd", vb, o_lat).reshape(T, H * DV)
            x = x + o @ w[b + "attn_output.weight"].T
            h = rmsnorm(x, w[b + "ffn_norm.weight"], cfg.eps)
            if i < cfg.n_dense:
                y = (F.silu(h @ w[b + "ffn_gate.weight"].T) * (h @ w[b + "ffn_up.weight"].T)) @ w[b + "ffn_down.weight"].T
            else:
                y = self._moe(b, h)
            x = x + y
        if logits_at is not None:
            x = x[torch.tensor(logits_at)]
        x = rmsnorm(x, w["output_norm.weight"], cfg.eps)
        out = w["output.weight"] if "output.weight" in w else w["token_embd.weight"]
        return x @ out.T, probs

    def _moe(self, b, h):
        cfg, w = self.cfg, self.w
        r = h @ w[b + "ffn_gate_inp.weight"].T
        p = torch.softmax(r, -1) if cfg.gating == 1 else torch.sigmoid(r)
        sel = p + w[b + "exp_probs_b.bias"] if (b + "exp_probs_b.bias") in w else p
        _, idx = torch.topk(sel, cfg.n_used, dim=-1)
        wts = torch.gather(p, 1, idx)
        if cfg.weights_norm:
            wts = wts / wts.sum(-1, keepdim=True).clamp_min(6.103515625e-5)
        if cfg.weights_scale not in (0.0, 1.0):
            wts = wts * cfg.weights_scale
        g, u, d = w[b + "ffn_gate_exps.weight"], w[b + "ffn_up_exps.weight"], w[b + "ffn_down_exps.weight"]
        y = torch.zeros_like(h)
        for e in range(cfg.n_experts):
            sel_e = (idx == e)
            rows = sel_e.any(-1).nonzero().squeeze(-1)
            if rows.numel() == 0:
                continue
            he = h[rows]
            ye = (F.silu(he @ g[e].T) * (he @ u[e].T)) @ d[e].T
            y[rows] += ye * (wts * sel_e).sum(-1)[rows][:, None]
        sh = (F.silu(h @ w[b + "ffn_gate_shexp.weight"].T) * (h @ w[b + "ffn_up_shexp.weight"].T)) @ w[b + "ffn_down_shexp.weight"].T
        return y + sh

    def logits(self, ids, positions):
        with torch.no_grad():
            lg, _ = self.forward(ids, logits_at=positions)
        return lg

    def greedy(self, ids, n, stop=None):
        """Greedy continuation (argmax, lowest id on exact ties), with the latent cache."""
        out = []
        cache = [None] * self.cfg.n_layers
        with torch.no_grad():
            lg, _ = self.forward(list(ids), logits_at=[len(ids) - 1], cache=cache)
            for _ in range(n):
                t = int(torch.argmax(lg[-1]))
                out.append(t)
                if stop is not None and t in stop:
                    break
                lg, _ = self.forward([t], cache=cache)
        return out
