"""PyTorch reference of llama.cpp's `deepseek4` (DeepSeek-V4) forward, written to be read.

What one layer computes (llama.cpp de3ff815, src/models/deepseek4.cpp and llama-kv-cache-dsv4.cpp):

  residual stream   hc_mult (4) copies of the hidden state, x[s] for s < hc ("hyper-connections")
  hc_pre            mixes = fn @ rmsnorm(concat_s x[s]);  pre = sigmoid(mixes[:hc]*scale0 + base) + eps,
                    post = 2*sigmoid(mixes[hc:2hc]*scale1 + base),  comb = Sinkhorn(mixes[2hc:]*scale2 + base)
                    layer input = sum_s pre[s] x[s]
  hc_post           x'[d] = post[d]*f(input) + sum_s comb[s,d] x[s]
  attention         qr = rmsnorm(wq_a h) * q_a_norm;  q = rmsnorm_per_head(wq_b qr), RoPE on the last n_rot dims
                    one shared row kv = rmsnorm(wkv h) * kv_norm, RoPE'd the same way; K = V = kv
                    keys: the raw rows of the last n_swa positions (the window includes the query)
                          + on ratio-4 (CSA) layers the compressed rows the lightning indexer picks (top-k)
                          + on ratio-128 (HCA) layers every compressed row completed so far
                    softmax(q.k / sqrt(D)) with one extra "sink" logit per head (no value),
                    output de-RoPE'd at the query position, then the grouped low-rank projection
                    wo_b(concat_g wo_a[g] @ heads of group g)
  compressor        per position: kv_c = wkv_c h, score = wgate_c h + ape[pos % ratio]; a row per `ratio`
                    positions = sum_t softmax_t(score)[d] * kv_c[t,d] (per feature d), rmsnorm, RoPE at the
                    block's first position with the compressor's own base.  Ratio 4 overlaps: block b mixes
                    the first half-features of block b-1 and the second half-features of block b (2*ratio
                    entries).  A row becomes visible at the position that completes its block.
  indexer           (ratio-4 layers) its own overlapping compressor (head dim dI); q_I = wq_b_I qr (RoPE,
                    compressor base), w = proj_I h / sqrt(dI*nI); score[b] = sum_h relu(q_I[h].k_I[b]) w[h];
                    the top_k visible rows are the compressed rows attention sees
  MoE               p = sqrt(softplus(gate h)); experts = top-k of p + bias, or tid2eid[token] on the first
                    hash_layer_count layers; weights p[e] normalised, * expert_weights_scale;
                    SwiGLU with clamp: silu(min(g, L)) * clamp(u, -L, L); plus a shared expert
  head              hc_head mixes the streams (sigmoid pre only), output_norm, output

RoPE: NORM (adjacent pairs), theta_i = pos * base^(-2i/n_rot); ratio-0 layers use rope.freq_base unscaled,
compressed layers (and their compressed rows and indexer) attention.compress_rope_freq_base with the file's
rope.scaling (YaRN in Flash: interpolated frequencies, no magnitude change).  The Hadamard rotations llama.cpp applies to the indexer cache are orthonormal on q and k
both, so they do not change q.k; they are left out.  MTP layers are not part of the forward.

Two uses:
  * V4Model(cfg) is an nn.Module (parameters named after the GGUF tensors) -- trainable later;
    V4Model.from_gguf(path) loads a file.
  * model.forward(tokens, cache) runs a chunk of tokens after what `cache` holds: the full prompt at once
    (cache=None or empty) or token by token (decode); both give the same logits.

Training (later): V4Model(cfg).init_random(seed), then ordinary backprop through forward(); export with
tools/make_v4_gguf.write(path, make_v4_gguf.config_from_ref(cfg), weights=model.gguf_tensors()).  Cross-
entropy gives no gradient to the indexer (its top-k is a selection; DeepSeek trains it with its own loss)
nor to exp_probs_b (it only biases the choice; DeepSeek adjusts it by expert load), which is as it should be.

CLI:  python3 tools/deepseek4_ref.py MODEL.gguf TOKEN...   prints the argmax after every position.
"""
import math
import os
import sys
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io  # noqa: E402  (the project's reader: F32, F16, Q8_0, I32)

ARCH = "deepseek4"
CSA_RATIO, HCA_RATIO = 4, 128     # the ratios llama.cpp accepts besides 0


@dataclass
class Config:
    """Hyper-parameters; the defaults are tests/data/v4/tiny-v4.gguf's (tools/make_v4_gguf.py CONFIG)."""
    n_vocab: int = 1024
    n_embd: int = 64
    n_layer: int = 4
    n_head: int = 4
    head_dim: int = 64
    n_rot: int = 16
    q_lora_rank: int = 32
    o_groups: int = 2
    o_lora_rank: int = 16
    indexer_n_head: int = 16
    indexer_head_dim: int = 64
    indexer_top_k: int = 8
    n_expert: int = 8
    n_expert_used: int = 2
    n_ff_exp: int = 32
    n_expert_shared: int = 1
    hc_mult: int = 4
    hc_sinkhorn_iters: int = 20
    hc_eps: float = 1e-6
    n_swa: int = 16
    compress_ratios: list = field(default_factory=lambda: [0, 4, 128, 4])
    hash_layer_count: int = 2
    rope_freq_base: float = 10000.0
    compress_rope_freq_base: float = 160000.0
    # rope.scaling.*: applied on the compressed layers only (llama.cpp keeps ratio-0 layers unscaled)
    rope_scaling: str = "yarn"        # "none", "linear" or "yarn"
    rope_scaling_factor: float = 4.0
    rope_orig_ctx: int = 256
    yarn_beta_fast: float = 32.0
    yarn_beta_slow: float = 1.0
    rms_eps: float = 1e-6
    swiglu_clamp_exp: list = field(default_factory=lambda: [2.0] * 4)
    swiglu_clamp_shexp: list = field(default_factory=lambda: [2.0] * 4)
    expert_weights_scale: float = 1.5
    expert_weights_norm: bool = True

    @staticmethod
    def from_gguf_kv(kv):
        def k(name, default=None):
            key = f"{ARCH}.{name}"
            if key not in kv:
                if default is None:
                    raise KeyError(f"GGUF key {key} is missing")
                return default
            return kv[key]
        n_layer = k("block_count")
        ratios = list(k("attention.compress_ratios"))
        if len(ratios) < n_layer:
            raise ValueError(f"{ARCH}.attention.compress_ratios has {len(ratios)} entries, block_count is {n_layer}")
        clamp = k("swiglu_clamp_exp")
        clamp = list(clamp) if isinstance(clamp, list) else [clamp] * n_layer
        clamp_sh = k("swiglu_clamp_shexp", clamp)
        clamp_sh = list(clamp_sh) if isinstance(clamp_sh, list) else [clamp_sh] * n_layer
        if k("expert_gating_func") != 4:
            raise ValueError(f"{ARCH}.expert_gating_func must be 4 (sqrt-softplus)")
        return Config(
            n_vocab=len(kv["tokenizer.ggml.tokens"]), n_embd=k("embedding_length"), n_layer=n_layer,
            n_head=k("attention.head_count"), head_dim=k("attention.key_length"), n_rot=k("rope.dimension_count"),
            q_lora_rank=k("attention.q_lora_rank"), o_groups=k("attention.output_group_count"),
            o_lora_rank=k("attention.output_lora_rank"), indexer_n_head=k("attention.indexer.head_count"),
            indexer_head_dim=k("attention.indexer.key_length"), indexer_top_k=k("attention.indexer.top_k"),
            n_expert=k("expert_count"), n_expert_used=k("expert_used_count"),
            n_ff_exp=k("expert_feed_forward_length"), n_expert_shared=k("expert_shared_count"),
            hc_mult=k("hyper_connection.count"), hc_sinkhorn_iters=k("hyper_connection.sinkhorn_iterations"),
            hc_eps=k("hyper_connection.epsilon"), n_swa=k("attention.sliding_window"),
            compress_ratios=ratios[:n_layer], hash_layer_count=k("hash_layer_count"),
            rope_freq_base=k("rope.freq_base"), compress_rope_freq_base=k("attention.compress_rope_freq_base"),
            rope_scaling=k("rope.scaling.type", "none"), rope_scaling_factor=k("rope.scaling.factor", 1.0),
            rope_orig_ctx=k("rope.scaling.original_context_length", k("context_length")),
            yarn_beta_fast=k("rope.scaling.yarn_beta_fast", 32.0), yarn_beta_slow=k("rope.scaling.yarn_beta_slow", 1.0),
            rms_eps=k("attention.layer_norm_rms_epsilon"), swiglu_clamp_exp=clamp[:n_layer],
            swiglu_clamp_shexp=clamp_sh[:n_layer], expert_weights_scale=k("expert_weights_scale"),
            expert_weights_norm=bool(k("expert_weights_norm")))


# ---------------------------------------------------------------- small functions

def rmsnorm(x, weight, eps):
    """RMSNorm over the last dim; weight None = no scale (llama.cpp's bare ggml_rms_norm)."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def rope(x, pos, n_rot, base, scaling=None, inverse=False):
    """NORM RoPE (adjacent pairs) on the last n_rot dims of x[..., D]; pos broadcasts against x[..., 0].
    scaling: the Config for the compressed layers' rope.scaling (linear or YaRN), None = plain."""
    d = x.shape[-1]
    nope = d - n_rot
    i = torch.arange(n_rot // 2, dtype=x.dtype)
    theta = pos.to(x.dtype)[..., None] * base ** (-2.0 * i / n_rot)
    if scaling is not None and scaling.rope_scaling != "none" and scaling.rope_scaling_factor > 0:
        interp = theta / scaling.rope_scaling_factor
        if scaling.rope_scaling == "yarn":
            # ggml's rope_yarn: pairs below corr_dims[0] keep their frequency, above corr_dims[1] are
            # interpolated, a linear ramp between.  No magnitude term: llama.cpp's deepseek4 passes
            # attn_factor = 1/(1 + 0.1 ln(factor)), which cancels the one ggml applies.
            def corr_dim(beta):
                return n_rot * math.log(scaling.rope_orig_ctx / (beta * 2 * math.pi)) / (2 * math.log(base))
            low = max(0.0, math.floor(corr_dim(scaling.yarn_beta_fast)))
            high = min(n_rot - 1.0, math.ceil(corr_dim(scaling.yarn_beta_slow)))
            keep = 1 - torch.clamp((i - low) / max(0.001, high - low), 0, 1)
            theta = interp * (1 - keep) + theta * keep
        else:
            theta = interp
    while theta.dim() < x.dim():
        theta = theta.unsqueeze(-2)
    cos, sin = torch.cos(theta), torch.sin(theta)
    if inverse:
        sin = -sin
    x0, x1 = x[..., nope::2], x[..., nope + 1::2]
    r0, r1 = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    rot = torch.stack((r0, r1), dim=-1).flatten(-2)
    return torch.cat((x[..., :nope], rot), dim=-1)


def sinkhorn(logits, iters, eps):
    """comb[t, src, dst]: softmax over dst, + eps, then column (src) and row (dst) normalisations."""
    c = torch.softmax(logits, dim=-1) + eps
    c = c / (c.sum(dim=-2, keepdim=True) + eps)          # normalise over src for every dst
    for _ in range(iters - 1):
        c = c / (c.sum(dim=-1, keepdim=True) + eps)      # over dst for every src
        c = c / (c.sum(dim=-2, keepdim=True) + eps)
    return c


def swiglu_clamped(gate, up, limit):
    """llama.cpp's swiglu_clamp: silu(min(gate, L)) * clamp(up, -L, L); limit <= 1e-6 means no clamp."""
    if limit > 1e-6:
        gate = torch.clamp(gate, max=limit)
        up = torch.clamp(up, -limit, limit)
    return F.silu(gate) * up


def _p(*shape):
    return nn.Parameter(torch.zeros(*shape))


# ---------------------------------------------------------------- modules

class HyperConnection(nn.Module):
    """Pre/post mixing of the hc residual streams around one sub-block (attention or FFN)."""

    def __init__(self, cfg):
        super().__init__()
        hc = cfg.hc_mult
        self.cfg = cfg
        self.fn = _p((2 + hc) * hc, hc * cfg.n_embd)
        self.base = _p((2 + hc) * hc)
        self.scale = _p(3)

    def pre(self, x):
        """x [T, hc, E] -> (sub-block input [T, E], post [T, hc], comb [T, src, dst])."""
        c, hc = self.cfg, self.cfg.hc_mult
        mixes = rmsnorm(x.flatten(1), None, c.rms_eps) @ self.fn.T
        pre = torch.sigmoid(mixes[:, :hc] * self.scale[0] + self.base[:hc]) + c.hc_eps
        post = 2.0 * torch.sigmoid(mixes[:, hc:2 * hc] * self.scale[1] + self.base[hc:2 * hc])
        comb = (mixes[:, 2 * hc:] * self.scale[2] + self.base[2 * hc:]).view(-1, hc, hc)
        comb = sinkhorn(comb, c.hc_sinkhorn_iters, c.hc_eps)
        return (pre[:, :, None] * x).sum(1), post, comb

    @staticmethod
    def post(y, x, post, comb):
        """x'[d] = post[d] * y + sum_src comb[src, d] * x[src]."""
        return post[:, :, None] * y[:, None, :] + torch.einsum("tsd,tse->tde", comb, x)


class Compressor(nn.Module):
    """Gated pooling of `ratio` positions into one row (with the overlap of ratio 4), norm, RoPE."""

    def __init__(self, cfg, ratio, dim):
        super().__init__()
        self.cfg, self.ratio, self.dim = cfg, ratio, dim
        self.overlap = ratio == CSA_RATIO
        width = (2 if self.overlap else 1) * dim
        self.wkv = _p(width, cfg.n_embd)
        self.wgate = _p(width, cfg.n_embd)
        self.ape = _p(ratio, width)
        self.norm = _p(dim)

    def project(self, h, pos):
        """Per-position values and gate scores: [T, width] each."""
        return h @ self.wkv.T, h @ self.wgate.T + self.ape[pos % self.ratio]

    def rows(self, kv, score, first_block, n_blocks):
        """Compressed rows first_block .. n_blocks-1 from the per-position kv/score of positions 0.. ."""
        r, d = self.ratio, self.dim
        out = []
        for b in range(first_block, n_blocks):
            cur_kv, cur_sc = kv[b * r:(b + 1) * r], score[b * r:(b + 1) * r]
            if self.overlap:
                if b == 0:     # nothing before the first block: zero values, -inf scores
                    prev_kv = torch.zeros(r, d, dtype=kv.dtype)
                    prev_sc = torch.full((r, d), -math.inf, dtype=kv.dtype)
                else:
                    prev_kv, prev_sc = kv[(b - 1) * r:b * r, :d], score[(b - 1) * r:b * r, :d]
                vals = torch.cat((prev_kv, cur_kv[:, d:]), 0)
                scs = torch.cat((prev_sc, cur_sc[:, d:]), 0)
            else:
                vals, scs = cur_kv, cur_sc
            out.append((torch.softmax(scs, dim=0) * vals).sum(0))
        if not out:
            return kv.new_zeros(0, d)
        comp = rmsnorm(torch.stack(out), self.norm, self.cfg.rms_eps)
        start = torch.arange(first_block, n_blocks) * r
        return rope(comp, start, self.cfg.n_rot, self.cfg.compress_rope_freq_base, self.cfg)


class Indexer(nn.Module):
    """Lightning indexer: scores compressed rows per query, attention sees the top_k."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wq_b = _p(cfg.indexer_n_head * cfg.indexer_head_dim, cfg.q_lora_rank)
        self.proj = _p(cfg.indexer_n_head, cfg.n_embd)
        self.compressor = Compressor(cfg, CSA_RATIO, cfg.indexer_head_dim)

    def select(self, qr, h, pos, k_rows, visible):
        """Boolean [T, n_rows]: the rows each query attends to (top_k of the visible ones)."""
        c = self.cfg
        q = (qr @ self.wq_b.T).view(-1, c.indexer_n_head, c.indexer_head_dim)
        q = rope(q, pos, c.n_rot, c.compress_rope_freq_base, c)
        w = (h @ self.proj.T) / math.sqrt(c.indexer_head_dim * c.indexer_n_head)
        score = torch.einsum("thd,bd->thb", q, k_rows).relu()
        score = (score * w[:, :, None]).sum(1)
        score = score.masked_fill(~visible, -math.inf)
        n = min(c.indexer_top_k, score.shape[1])
        chosen = torch.zeros_like(visible)
        if n:
            chosen.scatter_(1, score.topk(n, dim=1).indices, True)
        self.last_scores = score      # kept for inspection (selection statistics)
        return chosen & visible


class Attention(nn.Module):
    def __init__(self, cfg, il):
        super().__init__()
        self.cfg, self.il = cfg, il
        H, D = cfg.n_head, cfg.head_dim
        self.ratio = cfg.compress_ratios[il]
        self.sinks = _p(H)
        self.wq_a = _p(cfg.q_lora_rank, cfg.n_embd)
        self.q_a_norm = _p(cfg.q_lora_rank)
        self.wq_b = _p(H * D, cfg.q_lora_rank)
        self.wkv = _p(D, cfg.n_embd)
        self.kv_norm = _p(D)
        self.wo_a = _p(cfg.o_groups * cfg.o_lora_rank, H * D // cfg.o_groups)
        self.wo_b = _p(cfg.n_embd, cfg.o_groups * cfg.o_lora_rank)
        self.compressor = Compressor(cfg, self.ratio, D) if self.ratio else None
        self.indexer = Indexer(cfg) if self.ratio == CSA_RATIO else None
        self.rope_base = cfg.compress_rope_freq_base if self.ratio else cfg.rope_freq_base
        self.rope_scaling = cfg if self.ratio else None

    def forward(self, h, pos, lc):
        """h [T, E] (normed sub-block input) at positions pos; lc: this layer's cache (updated)."""
        c, H, D = self.cfg, self.cfg.n_head, self.cfg.head_dim
        qr = rmsnorm(h @ self.wq_a.T, self.q_a_norm, c.rms_eps)
        q = rmsnorm((qr @ self.wq_b.T).view(-1, H, D), None, c.rms_eps)
        q = rope(q, pos, c.n_rot, self.rope_base, self.rope_scaling)
        kv = rope(rmsnorm(h @ self.wkv.T, self.kv_norm, c.rms_eps), pos, c.n_rot, self.rope_base, self.rope_scaling)
        lc.append("kv", kv)
        keys = lc.t["kv"]                                      # every raw row so far [P, D]
        kpos = torch.arange(keys.shape[0])
        dist = pos[:, None] - kpos[None, :]
        mask = (dist >= 0) & (dist < c.n_swa)                  # the raw sliding window

        if self.ratio:
            n_total = int(pos[-1]) + 1
            comp = lc.compress("comp", self.compressor, h, pos, n_total)
            n_visible = (pos + 1) // self.ratio                # rows whose block is complete
            visible = torch.arange(comp.shape[0])[None, :] < n_visible[:, None]
            if self.indexer is not None:
                k_idx = lc.compress("idx", self.indexer.compressor, h, pos, n_total)
                visible = self.indexer.select(qr, h, pos, k_idx, visible)
                self.last_selection = visible
            keys = torch.cat((keys, comp), 0)
            mask = torch.cat((mask, visible), 1)

        s = torch.einsum("thd,kd->thk", q, keys) / math.sqrt(D)
        s = s.masked_fill(~mask[:, None, :], -math.inf)
        s = torch.cat((s, self.sinks.view(1, H, 1).expand(s.shape[0], H, 1)), -1)
        p = torch.softmax(s, dim=-1)[..., :-1]                 # the sink takes probability, gives nothing
        o = torch.einsum("thk,kd->thd", p, keys)
        o = rope(o, pos, c.n_rot, self.rope_base, self.rope_scaling, inverse=True)
        # grouped low-rank output: each group of heads has its own wo_a
        G = c.o_groups
        o = o.reshape(-1, G, H // G * D)
        wo_a = self.wo_a.view(G, c.o_lora_rank, -1)
        oa = torch.einsum("tgi,gri->tgr", o, wo_a).flatten(1)
        return oa @ self.wo_b.T


class MoE(nn.Module):
    def __init__(self, cfg, il):
        super().__init__()
        self.cfg, self.il = cfg, il
        E, X, Fd = cfg.n_embd, cfg.n_expert, cfg.n_ff_exp
        self.hashed = il < cfg.hash_layer_count
        self.gate_inp = _p(X, E)
        if self.hashed:
            self.register_buffer("tid2eid", torch.zeros(cfg.n_vocab, cfg.n_expert_used, dtype=torch.long))
        else:
            self.exp_probs_b = _p(X)
        self.gate_exps = _p(X, Fd, E)
        self.up_exps = _p(X, Fd, E)
        self.down_exps = _p(X, E, Fd)
        Fs = Fd * cfg.n_expert_shared
        self.gate_shexp = _p(Fs, E)
        self.up_shexp = _p(Fs, E)
        self.down_shexp = _p(E, Fs)

    def forward(self, h, tokens):
        c = self.cfg
        probs = torch.sqrt(F.softplus(h @ self.gate_inp.T))    # [T, X]
        if self.hashed:
            chosen = self.tid2eid[tokens]
        else:
            chosen = (probs + self.exp_probs_b).topk(c.n_expert_used, dim=1).indices
        w = probs.gather(1, chosen)
        if c.expert_weights_norm:
            w = w / w.sum(1, keepdim=True).clamp(min=6.103515625e-5)
        w = w * c.expert_weights_scale
        lim = c.swiglu_clamp_exp[self.il]
        g = torch.einsum("te,tkfe->tkf", h, self.gate_exps[chosen])
        u = torch.einsum("te,tkfe->tkf", h, self.up_exps[chosen])
        y = torch.einsum("tkf,tkef->tke", swiglu_clamped(g, u, lim), self.down_exps[chosen])
        routed = (w[:, :, None] * y).sum(1)
        sh = swiglu_clamped(h @ self.gate_shexp.T, h @ self.up_shexp.T, c.swiglu_clamp_shexp[self.il])
        self.last_chosen = chosen
        return routed + sh @ self.down_shexp.T


class Block(nn.Module):
    def __init__(self, cfg, il):
        super().__init__()
        self.cfg = cfg
        self.attn_norm = _p(cfg.n_embd)
        self.ffn_norm = _p(cfg.n_embd)
        self.hc_attn = HyperConnection(cfg)
        self.hc_ffn = HyperConnection(cfg)
        self.attn = Attention(cfg, il)
        self.moe = MoE(cfg, il)

    def forward(self, x, tokens, pos, lc):
        eps = self.cfg.rms_eps
        h, post, comb = self.hc_attn.pre(x)
        x = HyperConnection.post(self.attn(rmsnorm(h, self.attn_norm, eps), pos, lc), x, post, comb)
        h, post, comb = self.hc_ffn.pre(x)
        return HyperConnection.post(self.moe(rmsnorm(h, self.ffn_norm, eps), tokens), x, post, comb)


class LayerCache:
    """One layer's state: per-position rows ("kv" raw rows, compressor projections) and compressed rows.
    The reference keeps every raw row and masks to the window; a runtime keeps only the window."""

    def __init__(self):
        self.t = {}

    def append(self, name, rows):
        self.t[name] = rows if name not in self.t else torch.cat((self.t[name], rows), 0)

    def compress(self, name, comp, h, pos, n_total):
        """Append this chunk's projections, compress the blocks completed by n_total positions."""
        kv, sc = comp.project(h, pos)
        self.append(name + ".kv", kv)
        self.append(name + ".score", sc)
        done = self.t.get(name + ".rows")
        n_done = 0 if done is None else done.shape[0]
        new = comp.rows(self.t[name + ".kv"], self.t[name + ".score"], n_done, n_total // comp.ratio)
        self.append(name + ".rows", new)
        return self.t[name + ".rows"]


class Cache:
    def __init__(self, n_layer):
        self.layers = [LayerCache() for _ in range(n_layer)]
        self.n_past = 0


class V4Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = _p(cfg.n_vocab, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg, il) for il in range(cfg.n_layer))
        hc = cfg.hc_mult
        self.hc_head_fn = _p(hc, hc * cfg.n_embd)
        self.hc_head_base = _p(hc)
        self.hc_head_scale = _p(1)
        self.output_norm = _p(cfg.n_embd)
        self.output = _p(cfg.n_vocab, cfg.n_embd)

    def forward(self, tokens, cache=None):
        """Logits [T, vocab] for `tokens` following what `cache` holds (updated in place)."""
        c = self.cfg
        if cache is None:
            cache = Cache(c.n_layer)
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        pos = torch.arange(cache.n_past, cache.n_past + tokens.shape[0])
        x = self.tok_embd[tokens][:, None, :].expand(-1, c.hc_mult, -1)
        for blk, lc in zip(self.blocks, cache.layers):
            x = blk(x, tokens, pos, lc)
        cache.n_past += tokens.shape[0]
        mixes = rmsnorm(x.flatten(1), None, c.rms_eps) @ self.hc_head_fn.T
        pre = torch.sigmoid(mixes * self.hc_head_scale + self.hc_head_base) + c.hc_eps
        h = (pre[:, :, None] * x).sum(1)
        return rmsnorm(h, self.output_norm, c.rms_eps) @ self.output.T

    # ------------------------------------------------------------ GGUF names

    def gguf_names(self):
        """GGUF tensor name -> (parameter/buffer of this module)."""
        m = {"token_embd.weight": self.tok_embd, "output_norm.weight": self.output_norm,
             "output.weight": self.output, "output_hc_fn.weight": self.hc_head_fn,
             "output_hc_base.weight": self.hc_head_base, "output_hc_scale.weight": self.hc_head_scale}
        for il, b in enumerate(self.blocks):
            p, a, moe = f"blk.{il}.", b.attn, b.moe
            m.update({
                p + "attn_norm.weight": b.attn_norm, p + "ffn_norm.weight": b.ffn_norm,
                p + "hc_attn_fn.weight": b.hc_attn.fn, p + "hc_attn_base.weight": b.hc_attn.base,
                p + "hc_attn_scale.weight": b.hc_attn.scale, p + "hc_ffn_fn.weight": b.hc_ffn.fn,
                p + "hc_ffn_base.weight": b.hc_ffn.base, p + "hc_ffn_scale.weight": b.hc_ffn.scale,
                p + "attn_sinks.weight": a.sinks, p + "attn_q_a.weight": a.wq_a,
                p + "attn_q_a_norm.weight": a.q_a_norm, p + "attn_q_b.weight": a.wq_b,
                p + "attn_kv.weight": a.wkv, p + "attn_kv_a_norm.weight": a.kv_norm,
                p + "attn_output_a.weight": a.wo_a, p + "attn_output_b.weight": a.wo_b,
                p + "ffn_gate_inp.weight": moe.gate_inp, p + "ffn_gate_exps.weight": moe.gate_exps,
                p + "ffn_up_exps.weight": moe.up_exps, p + "ffn_down_exps.weight": moe.down_exps,
                p + "ffn_gate_shexp.weight": moe.gate_shexp, p + "ffn_up_shexp.weight": moe.up_shexp,
                p + "ffn_down_shexp.weight": moe.down_shexp,
            })
            if moe.hashed:
                m[p + "ffn_gate_tid2eid.weight"] = moe.tid2eid
            else:
                m[p + "exp_probs_b.bias"] = moe.exp_probs_b
            for cname, comp in (("attn_compressor", a.compressor),
                                ("indexer_compressor", a.indexer.compressor if a.indexer else None)):
                if comp is not None:
                    m.update({p + cname + "_kv.weight": comp.wkv, p + cname + "_gate.weight": comp.wgate,
                              p + cname + "_ape.weight": comp.ape, p + cname + "_norm.weight": comp.norm})
            if a.indexer is not None:
                m[p + "indexer.attn_q_b.weight"] = a.indexer.wq_b
                m[p + "indexer.proj.weight"] = a.indexer.proj
        return m

    def gguf_tensors(self):
        """GGUF tensor name -> numpy array (float32; int32 for tid2eid): to write with make_v4_gguf.write."""
        out = {}
        for name, t in self.gguf_names().items():
            a = t.detach().cpu().numpy()
            out[name] = a.astype(np.int32) if name.endswith("tid2eid.weight") else a.astype(np.float32)
        return out

    def init_random(self, seed=0):
        """Random weights at the scales of tools/make_v4_gguf.py (activations O(1)); a training start."""
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, t in self.gguf_names().items():
                if name.endswith("tid2eid.weight"):
                    perm = torch.stack([torch.randperm(self.cfg.n_expert, generator=g)[:self.cfg.n_expert_used]
                                        for _ in range(self.cfg.n_vocab)])
                    t.copy_(perm)
                elif t.dim() == 1 and "norm" in name:
                    t.fill_(1.0)
                elif t.dim() == 1 or name.endswith("_ape.weight") or name == "token_embd.weight":
                    t.copy_(torch.randn(t.shape, generator=g) * (1.0 if t.dim() > 1 else 0.1))
                else:
                    t.copy_(torch.randn(t.shape, generator=g) / math.sqrt(t.shape[-1]))
            for blk in self.blocks:       # comb starts near the identity: each stream keeps itself
                for hc in (blk.hc_attn, blk.hc_ffn):
                    hc.base[2 * self.cfg.hc_mult:] += 2.0 * torch.eye(self.cfg.hc_mult).flatten()
                    hc.scale.fill_(0.5)
            self.hc_head_scale.fill_(0.5)
        return self

    @staticmethod
    def from_gguf(path, dtype=torch.float32):
        """(model, kv dict) from a GGUF (F32/F16/Q8_0 tensors dequantised; tid2eid I32)."""
        g = gguf_io.GGUFFile(path)
        kv = g.kv
        if kv.get("general.architecture") != ARCH:
            raise ValueError(f"{path}: general.architecture is {kv.get('general.architecture')!r}, not {ARCH!r}")
        model = V4Model(Config.from_gguf_kv(kv))
        names = model.gguf_names()
        missing = [n for n in names if n not in g.tensors]
        if missing:
            raise ValueError(f"{path}: tensor {missing[0]} is missing ({len(missing)} missing)")
        with torch.no_grad():
            for name, dst in names.items():
                arr = g.tensor(name)
                if tuple(arr.shape) != tuple(dst.shape):
                    raise ValueError(f"{path}: tensor {name} has shape {tuple(arr.shape)}, expected {tuple(dst.shape)}")
                dst.copy_(torch.from_numpy(arr.astype(np.int64 if arr.dtype == np.int32 else np.float32)))
        model.to(dtype)
        return model, kv


def main():
    torch.set_num_threads(1)
    if len(sys.argv) < 3:
        sys.exit("usage: deepseek4_ref.py MODEL.gguf TOKEN...")
    model, _ = V4Model.from_gguf(sys.argv[1], torch.float64)
    with torch.no_grad():
        logits = model([int(t) for t in sys.argv[2:]])
    print(" ".join(str(int(i)) for i in logits.argmax(-1)))


if __name__ == "__main__":
    main()
