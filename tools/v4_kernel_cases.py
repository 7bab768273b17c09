"""Cases for the V4 device kernels computed by the PyTorch reference itself (tools/deepseek4_ref.py's own
HyperConnection, head mixing, Compressor.rows, Indexer.select, MoE's choice and swiglu_clamped), at the tiny
file's widths; the C test
test_kernels_v4_torch runs the kernels on the same inputs.  This pins the layouts (comb [src][dst], the
ratio-4 overlap halves, ape by position) to the reference that agrees with llama.cpp, independently of
tests/ref/ref_v4.c.

usage: python3 tools/v4_kernel_cases.py OUT.bin
OUT.bin: records of (name: 32 bytes NUL-padded, count: uint32 LE, count float32 LE); an existing OUT.bin is
replaced only if this tool wrote it."""
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deepseek4_ref as ref  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: v4_kernel_cases.py OUT.bin")
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(14)
    cfg = ref.Config()
    CSA = ref.CSA_RATIO
    out = {}

    def rnd(*shape, s=1.0):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * s

    with torch.no_grad():
        # hyper-connections of one block: pre, then post around a made-up sub-block output
        T, hc, E = 5, cfg.hc_mult, cfg.n_embd
        hcm = ref.HyperConnection(cfg).double()
        hcm.fn.copy_(rnd((2 + hc) * hc, hc * E, s=1 / (hc * E) ** 0.5))
        hcm.base.copy_(rnd((2 + hc) * hc, s=0.3))
        hcm.base[2 * hc:] += 2.0 * torch.eye(hc, dtype=torch.float64).flatten()
        hcm.scale.copy_(torch.tensor([0.5, 0.7, 0.45], dtype=torch.float64))
        x = rnd(T, hc, E, s=1.5)
        h, post, comb = hcm.pre(x)
        f = rnd(T, E)
        out.update({"hc.x": x, "hc.fn": hcm.fn, "hc.base": hcm.base, "hc.scale": hcm.scale, "hc.h": h,
                    "hc.post": post, "hc.comb": comb, "hc.f": f, "hc.xn": ref.HyperConnection.post(f, x, post, comb)})
        # the head's hyper-connection, as V4Model.forward writes it
        head_fn, head_base, head_scale = rnd(hc, hc * E, s=1 / (hc * E) ** 0.5), rnd(hc, s=0.3), torch.tensor([0.5],
                                                                                                            dtype=torch.float64)
        mixes = ref.rmsnorm(x.flatten(1), None, cfg.rms_eps) @ head_fn.T
        pre = torch.sigmoid(mixes * head_scale + head_base) + cfg.hc_eps
        out.update({"head.fn": head_fn, "head.base": head_base, "head.scale": head_scale,
                    "head.h": (pre[:, :, None] * x).sum(1)})
        # compressors: ratio 4 with its overlap (9 rows + 2 pending positions), ratio 128 (2 rows)
        for ratio, n_pos in ((4, 38), (128, 300)):
            comp = ref.Compressor(cfg, ratio, cfg.head_dim).double()
            width = comp.wkv.shape[0]
            comp.ape.copy_(rnd(ratio, width))
            comp.norm.copy_(1.0 + rnd(cfg.head_dim, s=0.1))
            kv, score = rnd(n_pos, width), rnd(n_pos, width, s=2.0)
            pos = torch.arange(n_pos)
            rows = comp.rows(kv, score + comp.ape[pos % ratio], 0, n_pos // ratio)
            out.update({f"c{ratio}.kv": kv, f"c{ratio}.score": score, f"c{ratio}.ape": comp.ape,
                        f"c{ratio}.norm": comp.norm, f"c{ratio}.rows": rows})
        # the lightning indexer's scores and top-k (Indexer.select) for queries around block boundaries
        idx = ref.Indexer(cfg).double()
        nI, dI = cfg.indexer_n_head, cfg.indexer_head_dim
        idx.wq_b.copy_(rnd(nI * dI, cfg.q_lora_rank, s=1 / cfg.q_lora_rank ** 0.5))
        idx.proj.copy_(rnd(nI, E, s=1 / E ** 0.5))
        qr, hh = rnd(6, cfg.q_lora_rank), rnd(6, E)
        ipos = torch.tensor([3, 17, 40, 41, 99, 150])
        k_rows = rnd(40, dI)
        visible = torch.arange(40)[None, :] < ((ipos + 1) // CSA)[:, None]
        chosen = idx.select(qr, hh, ipos, k_rows, visible)
        out.update({"idx.wq_b": idx.wq_b, "idx.proj": idx.proj, "idx.qr": qr, "idx.h": hh,
                    "idx.pos": ipos.double(), "idx.k": k_rows, "idx.scores": idx.last_scores,
                    "idx.chosen": chosen.double()})
        # MoE routing (MoE.forward's choice; the weights as its next lines compute them) on a scored layer
        # and a hash layer
        tokens = torch.tensor([5, 900, 17, 17, 3, 1023, 64])
        for il in (3, 0):
            moe = ref.MoE(cfg, il).double()
            moe.gate_inp.copy_(rnd(cfg.n_expert, E, s=2 / E ** 0.5))
            if moe.hashed:
                moe.tid2eid.copy_(torch.stack([torch.randperm(cfg.n_expert, generator=g)[:cfg.n_expert_used]
                                               for _ in range(cfg.n_vocab)]))
            else:
                moe.exp_probs_b.copy_(rnd(cfg.n_expert, s=0.3))
            hm = rnd(len(tokens), E)
            moe(hm, tokens)
            probs = torch.sqrt(torch.nn.functional.softplus(hm @ moe.gate_inp.T))
            w = probs.gather(1, moe.last_chosen)
            w = w / w.sum(1, keepdim=True).clamp(min=6.103515625e-5) * cfg.expert_weights_scale
            tag = "hash" if moe.hashed else "moe"
            out.update({f"{tag}.h": hm, f"{tag}.gate_inp": moe.gate_inp, f"{tag}.ids": moe.last_chosen.double(),
                        f"{tag}.w": w})
            if moe.hashed:
                out.update({"hash.tokens": tokens.double(), "hash.tid2eid": moe.tid2eid.double()})
            else:
                out["moe.bias"] = moe.exp_probs_b
        # attention (Attention.forward of a randomly initialised model's layers 0, 1, 2: ratio 0, 4 + indexer,
        # 128): the query after its RoPE and the de-RoPE'd output are read off the reference's own rope()
        # calls; keys, compressed rows and the indexer's choice off its cache and module.  Two chunks: a
        # prompt, then a batch of 5 that continues it.
        model = ref.V4Model(cfg).init_random(seed=14).double()
        real_rope = ref.rope
        calls = []

        def recording_rope(x, pos, n_rot, base, scaling=None, inverse=False):
            y = real_rope(x, pos, n_rot, base, scaling, inverse)
            calls.append((inverse, x.dim(), y))
            return y
        ref.rope = recording_rope
        try:
            for il, n_prompt in ((0, 23), (1, 45), (2, 300)):
                attn, lc = model.blocks[il].attn, ref.LayerCache()
                attn.sinks.copy_(rnd(cfg.n_head, s=1.0))
                for chunk, (p0, n) in enumerate(((0, n_prompt), (n_prompt, 5))):
                    hh = ref.rmsnorm(rnd(n, E), None, cfg.rms_eps)
                    calls.clear()
                    attn(hh, torch.arange(p0, p0 + n), lc)
                    q = calls[0][2]                                  # the first rope() is the query's
                    o = [y for inv, _, y in calls if inv][0]         # the only inverse one is the output's
                    tag = f"a{il}.{chunk}"
                    out.update({f"{tag}.q": q, f"{tag}.o": o, f"{tag}.kv": lc.t["kv"]})
                    if attn.ratio:
                        out[f"{tag}.comp"] = lc.t["comp.rows"]
                    if attn.indexer is not None:
                        out[f"{tag}.sel"] = attn.last_selection.double()
                out[f"a{il}.sinks"] = attn.sinks
        finally:
            ref.rope = real_rope
        # the clamped SwiGLU at the tiny file's limit
        gate, up = rnd(1000, s=3.0), rnd(1000, s=3.0)
        out.update({"swiglu.g": gate, "swiglu.u": up,
                    "swiglu.y": ref.swiglu_clamped(gate, up, cfg.swiglu_clamp_exp[0])})

    path = sys.argv[1]
    if os.path.exists(path):   # only ever replace a file this tool wrote
        with open(path, "rb") as fh:
            if fh.read(32) != b"hc.x".ljust(32, b"\0"):
                sys.exit(f"{path} exists and was not written by v4_kernel_cases.py: not overwriting it")
    with open(path, "wb") as fh:
        for name, t in out.items():
            data = t.detach().to(torch.float32).flatten().numpy().astype("<f4").tobytes()
            fh.write(name.encode().ljust(32, b"\0") + struct.pack("<I", t.numel()) + data)


if __name__ == "__main__":
    main()
