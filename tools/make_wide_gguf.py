#!/usr/bin/python3
"""Random-weight deepseek2 GGUFs at real model widths, written as a stream
(at most one tensor chunk in memory), for load, memory and speed checks at
sizes the bundled toy does not reach.

    /usr/bin/python3 tools/make_wide_gguf.py OUT.gguf [--type f16|q8_0] [--shape v2-lite]
                                            [--layers N] [--seed S]

v2-lite: DeepSeek-V2-Lite's widths (n_embd 2048, 16 heads, kv_lora 512, rope
64, nope 128, v 128, 64 routed experts of 1408 with top-6 and 2 shared,
softmax gating, dense FFN 10944, vocab 102400, no q LoRA); by default 2
blocks: 1 dense + 1 MoE. The tokenizer is the bundled model's, padded with
unreachable tokens to the real vocabulary size. Weights are uniform in
+-sqrt(3/fan_in) (unit variance of each output for unit inputs), norms 1.
The file is GBs: made at test or bench time, never committed.
"""
import argparse
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io as G  # noqa: E402

SHAPES = {
    "v2-lite": dict(n_embd=2048, n_head=16, kv_lora=512, rope=64, nope=128, v=128, n_expert=64, n_ff_exp=1408,
                    n_used=6, n_shared=2, gating=1, n_ff=10944, vocab=102400, q_lora=0, ctx=4096, layers=2, dense=1),
}

ROWS_PER_CHUNK = 2048   # rows of a matrix made and encoded at once


def kv_list(s, name, tok, ftype, n_layer):
    A = "deepseek2."
    kv = [
        ("general.architecture", G.Val(G.STR, "deepseek2")),
        ("general.name", G.Val(G.STR, name)),
        ("general.alignment", G.Val(G.U32, 32)),
        ("general.file_type", G.Val(G.U32, ftype)),
        ("general.quantization_version", G.Val(G.U32, 2)),
        (A + "context_length", G.Val(G.U32, s["ctx"])),
        (A + "embedding_length", G.Val(G.U32, s["n_embd"])),
        (A + "block_count", G.Val(G.U32, n_layer)),
        (A + "vocab_size", G.Val(G.U32, s["vocab"])),
        (A + "feed_forward_length", G.Val(G.U32, s["n_ff"])),
        (A + "leading_dense_block_count", G.Val(G.U32, s["dense"])),
        (A + "attention.head_count", G.Val(G.U32, s["n_head"])),
        (A + "attention.head_count_kv", G.Val(G.U32, 1)),
        (A + "attention.key_length", G.Val(G.U32, s["kv_lora"] + s["rope"])),
        (A + "attention.value_length", G.Val(G.U32, s["kv_lora"])),
        (A + "attention.key_length_mla", G.Val(G.U32, s["nope"] + s["rope"])),
        (A + "attention.value_length_mla", G.Val(G.U32, s["v"])),
        (A + "attention.layer_norm_rms_epsilon", G.Val(G.F32, 1e-6)),
        (A + "attention.q_lora_rank", G.Val(G.U32, s["q_lora"])),
        (A + "attention.kv_lora_rank", G.Val(G.U32, s["kv_lora"])),
        (A + "rope.dimension_count", G.Val(G.U32, s["rope"])),
        (A + "rope.freq_base", G.Val(G.F32, 10000.0)),
        (A + "expert_count", G.Val(G.U32, s["n_expert"])),
        (A + "expert_used_count", G.Val(G.U32, s["n_used"])),
        (A + "expert_shared_count", G.Val(G.U32, s["n_shared"])),
        (A + "expert_feed_forward_length", G.Val(G.U32, s["n_ff_exp"])),
        (A + "expert_weights_scale", G.Val(G.F32, 1.0)),
        (A + "expert_weights_norm", G.Val(G.BOOL, False)),
        (A + "expert_gating_func", G.Val(G.U32, s["gating"])),
    ]
    padded = ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges")
    for k in tok.kv:   # the bundled model's tokenizer keys (special ids, chat template), as they are
        if k.startswith("tokenizer.") and k not in padded:
            t, elem = tok.kv_types[k]
            kv.append((k, G.Val(t, tok.kv[k], elem)))
    tokens = list(tok.kv["tokenizer.ggml.tokens"])
    types = list(tok.kv["tokenizer.ggml.token_type"])
    if len(tokens) > s["vocab"]:
        raise SystemExit("the bundled tokenizer has more tokens than the vocabulary")
    for i in range(len(tokens), s["vocab"]):   # never produced by the merges: unreachable
        tokens.append("<|unused_%d|>" % i)
        types.append(5)   # UNUSED
    kv += [
        ("tokenizer.ggml.tokens", G.Val(G.ARR, tokens, G.STR)),
        ("tokenizer.ggml.token_type", G.Val(G.ARR, types, G.I32)),
        ("tokenizer.ggml.merges", G.Val(G.ARR, list(tok.kv["tokenizer.ggml.merges"]), G.STR)),
    ]
    return kv


def tensor_list(s, n_layer, wtype):
    """(name, numpy shape outermost first, ggml type, fan_in or None for a norm)."""
    E, H, KVL, R, NOPE, DV = s["n_embd"], s["n_head"], s["kv_lora"], s["rope"], s["nope"], s["v"]
    NE, FE, NS, F, V = s["n_expert"], s["n_ff_exp"], s["n_shared"], s["n_ff"], s["vocab"]
    t = [("token_embd.weight", (V, E), wtype, 1)]
    for il in range(n_layer):
        b = "blk.%d." % il
        t += [
            (b + "attn_norm.weight", (E,), G.GGML_F32, None),
            (b + "attn_q.weight", (H * (NOPE + R), E), wtype, E),
            (b + "attn_kv_a_mqa.weight", (KVL + R, E), wtype, E),
            (b + "attn_kv_a_norm.weight", (KVL,), G.GGML_F32, None),
            (b + "attn_k_b.weight", (H, KVL, NOPE), wtype, NOPE),
            (b + "attn_v_b.weight", (H, DV, KVL), wtype, KVL),
            (b + "attn_output.weight", (E, H * DV), wtype, H * DV),
            (b + "ffn_norm.weight", (E,), G.GGML_F32, None),
        ]
        if il < s["dense"]:
            t += [(b + "ffn_gate.weight", (F, E), wtype, E), (b + "ffn_up.weight", (F, E), wtype, E),
                  (b + "ffn_down.weight", (E, F), wtype, F)]
        else:
            t += [
                (b + "ffn_gate_inp.weight", (NE, E), G.GGML_F32, E),
                (b + "ffn_gate_exps.weight", (NE, FE, E), wtype, E),
                (b + "ffn_up_exps.weight", (NE, FE, E), wtype, E),
                (b + "ffn_down_exps.weight", (NE, E, FE), wtype, FE),
                (b + "ffn_gate_shexp.weight", (FE * NS, E), wtype, E),
                (b + "ffn_up_shexp.weight", (FE * NS, E), wtype, E),
                (b + "ffn_down_shexp.weight", (E, FE * NS), wtype, FE * NS),
            ]
    t += [("output_norm.weight", (E,), G.GGML_F32, None), ("output.weight", (V, E), wtype, E)]
    return t


def encode(rows, t):
    if t == G.GGML_F32:
        return rows.astype("<f4").tobytes()
    if t == G.GGML_F16:
        return rows.astype("<f2").tobytes()
    return G.quantize_q8_0(rows)


def write_tensor(f, rng, shape, t, fan_in):
    cols = shape[-1]
    n_rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    written = 0
    if fan_in is None:   # RMSNorm weights
        b = encode(np.ones((1, cols), dtype=np.float32), t)
        f.write(b)
        return len(b)
    lim = np.float32(np.sqrt(3.0 / fan_in))
    for r0 in range(0, n_rows, ROWS_PER_CHUNK):
        n = min(ROWS_PER_CHUNK, n_rows - r0)
        rows = (rng.random((n, cols), dtype=np.float32) * 2 - 1) * lim
        b = encode(rows, t)
        f.write(b)
        written += len(b)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--type", choices=["f16", "q8_0"], default="q8_0")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="v2-lite")
    ap.add_argument("--layers", type=int, default=None, help="blocks (default: 1 dense + 1 MoE)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "models", "gsm-tiny.gguf"))
    a = ap.parse_args()
    s = SHAPES[a.shape]
    n_layer = a.layers or s["layers"]
    if n_layer <= s["dense"]:
        raise SystemExit("--layers must exceed the %d dense blocks" % s["dense"])
    if os.path.exists(a.out):
        raise SystemExit("%s exists; not overwriting it" % a.out)
    wtype = {"f16": G.GGML_F16, "q8_0": G.GGML_Q8_0}[a.type]
    tok = G.GGUFFile(a.tokenizer)
    kv = kv_list(s, "random %s %d blocks %s" % (a.shape, n_layer, a.type), tok, {"f16": 1, "q8_0": 7}[a.type],
                 n_layer)
    tensors = tensor_list(s, n_layer, wtype)
    rng = np.random.default_rng(a.seed)
    tmp = a.out + ".part"
    with open(tmp, "xb") as f:
        f.write(G.GGUF_MAGIC)
        f.write(struct.pack("<IQQ", 3, len(tensors), len(kv)))
        for k, v in kv:
            G._w_str(f, k)
            f.write(struct.pack("<I", v.type))
            G._w_val(f, v.type, v.value, v.elem)
        off = 0
        for name, shape, t, _ in tensors:
            G._w_str(f, name)
            ne = list(reversed(shape))
            f.write(struct.pack("<I", len(ne)))
            for d in ne:
                f.write(struct.pack("<q", d))
            f.write(struct.pack("<IQ", t, off))
            off += (G.tensor_nbytes(t, int(np.prod(shape))) + G.ALIGN - 1) // G.ALIGN * G.ALIGN
        pos = f.tell()
        f.write(b"\0" * ((pos + G.ALIGN - 1) // G.ALIGN * G.ALIGN - pos))
        for name, shape, t, fan_in in tensors:
            n = write_tensor(f, rng, shape, t, fan_in)
            assert n == G.tensor_nbytes(t, int(np.prod(shape))), name
            f.write(b"\0" * ((n + G.ALIGN - 1) // G.ALIGN * G.ALIGN - n))
            print("  %-28s %-5s %s" % (name, G.TYPE_NAMES[t], "x".join(map(str, shape))), file=sys.stderr)
    os.rename(tmp, a.out)
    print("%s: %d blocks, %.2f GB" % (a.out, n_layer, os.path.getsize(a.out) / 1e9))


if __name__ == "__main__":
    main()
