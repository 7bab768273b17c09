"""Export the trained model to GGUF (llama.cpp `deepseek2`, MLA layout).

  from a training checkpoint:
    /usr/bin/python3 tools/export_gguf.py --ckpt /tmp/gsm-train/ckpt-final.pt --type f16 --out models/gsm-tiny.gguf
  re-type an existing GGUF (bit-reproducible; how the f32 / q8_0 test variants are made):
    /usr/bin/python3 tools/export_gguf.py --from-gguf models/gsm-tiny.gguf --type q8_0 --out build/gsm-tiny-q8_0.gguf

Types: f16 = matrices F16; f32 = everything F32; q8_0 = matrices Q8_0 (ggml block
layout).  In every variant attn_k_b / attn_v_b and all 1-D tensors stay F32
(llama.cpp's AMX CPU path aborts on F16 k_b/v_b).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np

import bpe
import corpus
import gguf_io as G
from gguf_io import Val

FILE_TYPE = {"f32": 0, "f16": 1, "q8_0": 7}


def tensor_type(name, arr, vtype):
    if arr.ndim == 1 or "attn_k_b" in name or "attn_v_b" in name or vtype == "f32":
        return G.GGML_F32
    if vtype == "f16":
        return G.GGML_F16
    if vtype == "q8_0":
        return G.GGML_Q8_0 if arr.shape[-1] % G.QK8_0 == 0 else G.GGML_F16
    raise ValueError(vtype)


def metadata(cfg, tok, vtype, name="gsm-tiny"):
    kv = [
        ("general.architecture", Val(G.STR, "deepseek2")),
        ("general.name", Val(G.STR, name)),
        ("general.description", Val(G.STR, "Tiny deepseek2 test model trained on Debian fortunes and synthetic "
                                           "retrieval dialogues (gsmrt tools/)")),
        ("general.license", Val(G.STR, "same as the gsmrt project")),
        ("general.alignment", Val(G.U32, 32)),
        ("general.file_type", Val(G.U32, FILE_TYPE[vtype])),
        ("general.quantization_version", Val(G.U32, 2)),
        ("deepseek2.context_length", Val(G.U32, cfg.ctx_len)),
        ("deepseek2.embedding_length", Val(G.U32, cfg.dim)),
        ("deepseek2.block_count", Val(G.U32, cfg.n_layers)),
        ("deepseek2.vocab_size", Val(G.U32, cfg.n_vocab)),
        ("deepseek2.feed_forward_length", Val(G.U32, cfg.ffn_dim)),
        ("deepseek2.leading_dense_block_count", Val(G.U32, cfg.n_dense)),
        ("deepseek2.attention.head_count", Val(G.U32, cfg.n_heads)),
        ("deepseek2.attention.head_count_kv", Val(G.U32, 1)),
        ("deepseek2.attention.key_length", Val(G.U32, cfg.kv_lora_rank + cfg.qk_rope)),
        ("deepseek2.attention.value_length", Val(G.U32, cfg.kv_lora_rank)),
        ("deepseek2.attention.key_length_mla", Val(G.U32, cfg.qk_nope + cfg.qk_rope)),
        ("deepseek2.attention.value_length_mla", Val(G.U32, cfg.v_dim)),
        ("deepseek2.attention.layer_norm_rms_epsilon", Val(G.F32, cfg.eps)),
        ("deepseek2.attention.q_lora_rank", Val(G.U32, cfg.q_lora_rank)),
        ("deepseek2.attention.kv_lora_rank", Val(G.U32, cfg.kv_lora_rank)),
        ("deepseek2.rope.dimension_count", Val(G.U32, cfg.qk_rope)),
        ("deepseek2.rope.freq_base", Val(G.F32, cfg.rope_base)),
        ("deepseek2.rope.scaling.type", Val(G.STR, cfg.rope_scaling)),
        ("deepseek2.rope.scaling.factor", Val(G.F32, cfg.yarn_factor)),
        ("deepseek2.rope.scaling.original_context_length", Val(G.U32, cfg.yarn_orig_ctx)),
        ("deepseek2.rope.scaling.yarn_log_multiplier", Val(G.F32, 0.1 * cfg.mscale_all_dim)),
        ("deepseek2.expert_count", Val(G.U32, cfg.n_experts)),
        ("deepseek2.expert_used_count", Val(G.U32, cfg.n_used)),
        ("deepseek2.expert_shared_count", Val(G.U32, cfg.n_shared)),
        ("deepseek2.expert_feed_forward_length", Val(G.U32, cfg.expert_ffn)),
        ("deepseek2.expert_weights_scale", Val(G.F32, cfg.weights_scale)),
        ("deepseek2.expert_weights_norm", Val(G.BOOL, bool(cfg.weights_norm))),
        ("deepseek2.expert_gating_func", Val(G.U32, cfg.gating)),
        ("tokenizer.ggml.model", Val(G.STR, "gpt2")),
        ("tokenizer.ggml.pre", Val(G.STR, "qwen2")),
        ("tokenizer.ggml.tokens", Val(G.ARR, tok.tokens, G.STR)),
        ("tokenizer.ggml.token_type", Val(G.ARR, tok.token_types, G.I32)),
        ("tokenizer.ggml.merges", Val(G.ARR, [a + " " + b for a, b in tok.merges], G.STR)),
        ("tokenizer.ggml.bos_token_id", Val(G.U32, tok.bos_id)),
        ("tokenizer.ggml.eos_token_id", Val(G.U32, tok.id_of["<|end|>"])),  # the turn end is the EOS
        ("tokenizer.ggml.eot_token_id", Val(G.U32, tok.id_of["<|end|>"])),
        ("tokenizer.ggml.add_bos_token", Val(G.BOOL, True)),
        ("tokenizer.ggml.add_eos_token", Val(G.BOOL, False)),
        ("tokenizer.chat_template", Val(G.STR, corpus.CHAT_TEMPLATE)),
    ]
    return kv


TENSOR_ORDER_GLOBAL = ["token_embd.weight"]


def ordered(tensors, n_layers):
    """Global tensors, then per block in a fixed order, then output tensors."""
    names = ["token_embd.weight"]
    per = ["attn_norm", "attn_q", "attn_q_a", "attn_q_a_norm", "attn_q_b", "attn_kv_a_mqa", "attn_kv_a_norm",
           "attn_k_b", "attn_v_b", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_inp",
           "exp_probs_b", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp",
           "ffn_down_shexp"]
    for i in range(n_layers):
        for p in per:
            for suf in (".weight", ".bias"):
                n = "blk.%d.%s%s" % (i, p, suf)
                if n in tensors:
                    names.append(n)
    names += ["output_norm.weight", "output.weight"]
    assert set(names) == set(tensors), set(tensors) ^ set(names)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt")
    ap.add_argument("--from-gguf")
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.json"))
    ap.add_argument("--type", default="f16", choices=["f16", "f32", "q8_0"])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.from_gguf:
        g = G.GGUFFile(a.from_gguf)
        kv = []
        for k in g.kv:
            t, elem = g.kv_types[k]
            v = g.kv[k]
            if k == "general.file_type":
                v = FILE_TYPE[a.type]
            kv.append((k, Val(t, v, elem)))
        names = g.order
        tensors = {n: g.tensor(n) for n in names}
    else:
        import torch
        from deepseek2_ref import Config, DeepSeek2, to_gguf_tensors
        ck = torch.load(a.ckpt, map_location="cpu")
        cfg = Config(**ck["cfg"])
        model = DeepSeek2(cfg)
        model.load_state_dict(ck["model"])
        tok = bpe.Tokenizer.load(a.tokenizer)
        assert tok.n_vocab == cfg.n_vocab
        kv = metadata(cfg, tok, a.type)
        tensors = to_gguf_tensors(model)
        names = ordered(tensors, cfg.n_layers)
    out = [(n, tensors[n].astype(np.float32), tensor_type(n, tensors[n], a.type)) for n in names]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    G.write_gguf(a.out, kv, out)
    n = sum(t[1].size for t in out)
    print("wrote %s: %d tensors, %d params, %d bytes" % (a.out, len(out), n, os.path.getsize(a.out)))


if __name__ == "__main__":
    main()
