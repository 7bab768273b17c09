#!/usr/bin/python3
"""Write a tiny random-weight `deepseek4` (DeepSeek-V4) GGUF with llama.cpp's key and tensor names.

    python3 tools/make_v4_gguf.py tests/data/v4/tiny-v4.gguf
    python3 tools/make_v4_gguf.py --bad ratio-len OUT.gguf     # compress_ratios shorter than block_count
    python3 tools/make_v4_gguf.py --bad no-indexer OUT.gguf    # blk.1.indexer.proj.weight left out
    python3 tools/make_v4_gguf.py --bad topk OUT.gguf          # indexer top_k 513 > the 512 ratio-4 rows of n_ctx 2048

Every V4 feature is active at CI size (2.6 MB, all tensors F32 — llama.cpp's CPU backend
misbehaves on some F16 paths on this AMX machine, and F32 keeps the goldens f32-exact):
  layer 0  no compression (raw sliding window only), hash-routed MoE
  layer 1  ratio 4 (CSA) + lightning indexer, hash-routed MoE
  layer 2  ratio 128 (HCA), biased sqrt-softplus routing
  layer 3  ratio 4 (CSA) + indexer, biased routing
  YaRN rope scaling (factor 4, original context 256) on the compressed layers, as Flash has it
The issue suggests ratio 16 for the heavy compressor at this size, but llama.cpp (de3ff815)
refuses any ratio other than 0, 4 and 128 (llama_model_deepseek4::load_arch_tensors) and its graph
hard-codes 128, so the tiny file uses 128: a 600-token prompt crosses 4 HCA boundaries.

Tokenizer: every `tokenizer.*` key of models/gsm-tiny.gguf is copied, so the project's tokenizer
and llama.cpp's read the same vocabulary (1,024 tokens).

Writing goes through llama.cpp's gguf-py (names from gguf.constants), imported from
/work/peer/llama.cpp-src/gguf-py or $GGUF_PY.
"""
import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("GGUF_PY", "/work/peer/llama.cpp-src/gguf-py"))
import gguf  # noqa: E402
from gguf.constants import MODEL_ARCH, MODEL_TENSOR, TENSOR_NAMES  # noqa: E402

# The tiny configuration.  Flash's values in comments.
CONFIG = dict(
    n_vocab=1024,            # 129280
    n_embd=64,               # 4096
    n_layer=4,               # 43 (+1 MTP)
    n_head=4,                # 64
    head_dim=64,             # 512 (key_length = value_length; one shared KV row, K = V)
    n_rot=16,                # 64 (RoPE on the last n_rot dims of each head)
    q_lora_rank=32,          # 1024
    o_groups=2,              # 8
    o_lora_rank=16,          # 1024
    indexer_n_head=16,       # 64 (16: a row whose every head is relu-zero, a possible exact top-k tie, is rare)
    indexer_head_dim=64,     # 128 (llama.cpp rotates indexer rows by a Hadamard of >= 64)
    indexer_top_k=8,         # 512
    n_expert=8,              # 256
    n_expert_used=2,         # 6
    n_ff_exp=32,             # 2048
    n_expert_shared=1,       # 1
    hc_mult=4,               # 4 (llama.cpp asserts 4)
    hc_sinkhorn_iters=20,    # 20
    hc_eps=1e-6,             # 1e-6
    n_swa=16,                # 128
    compress_ratios=[0, 4, 128, 4],
    hash_layer_count=2,      # 3
    context_length=2048,
    rope_freq_base=10000.0,
    compress_rope_freq_base=160000.0,
    rope_scaling="yarn",     # yarn, on the compressed layers only (llama.cpp leaves ratio-0 layers unscaled)
    rope_scaling_factor=4.0,  # 16
    rope_orig_ctx=256,       # 65536; small so that the YaRN ramp falls inside the 8 rotated pairs
    rms_eps=1e-6,
    swiglu_limit=2.0,        # 10.0; smaller here so that the clamp actually bites on random weights
    expert_weights_scale=1.5,
    expert_weights_norm=True,
    seed=1234,
)


MODEL_NAME = "gsm tiny-v4"


def tensor_name(kind, bid=None, suffix="weight"):
    base = TENSOR_NAMES[kind]
    if bid is not None:
        base = base.format(bid=bid)
    return f"{base}.{suffix}"


def make_weights(c, rng):
    """name -> numpy array (numpy shape = reversed ggml ne).  Scales keep activations O(1)."""
    E, H, D, R = c["n_embd"], c["n_head"], c["head_dim"], c["n_rot"]
    hc = c["hc_mult"]
    mix = (2 + hc) * hc
    w = {}

    def lin(n_out, n_in, gain=1.0):
        return (rng.standard_normal((n_out, n_in)) * gain / np.sqrt(n_in)).astype(np.float32)

    def norm_w(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w[tensor_name(MODEL_TENSOR.TOKEN_EMBD)] = rng.standard_normal((c["n_vocab"], E)).astype(np.float32)
    w[tensor_name(MODEL_TENSOR.OUTPUT_NORM)] = norm_w(E)
    w[tensor_name(MODEL_TENSOR.OUTPUT)] = lin(c["n_vocab"], E, gain=3.0)
    w[tensor_name(MODEL_TENSOR.HC_HEAD_FN)] = lin(hc, hc * E)
    w[tensor_name(MODEL_TENSOR.HC_HEAD_BASE)] = (0.5 * rng.standard_normal(hc)).astype(np.float32)
    w[tensor_name(MODEL_TENSOR.HC_HEAD_SCALE)] = np.array([0.5], dtype=np.float32)

    for il in range(c["n_layer"]):
        ratio = c["compress_ratios"][il]

        def put(kind, arr, suffix="weight"):
            w[tensor_name(kind, il, suffix)] = arr

        put(MODEL_TENSOR.ATTN_NORM, norm_w(E))
        put(MODEL_TENSOR.ATTN_SINKS, rng.standard_normal(H).astype(np.float32))
        put(MODEL_TENSOR.ATTN_Q_A, lin(c["q_lora_rank"], E))
        put(MODEL_TENSOR.ATTN_Q_A_NORM, norm_w(c["q_lora_rank"]))
        # gain 2 on q: softmax over the window is not flat (attention picks rows)
        put(MODEL_TENSOR.ATTN_Q_B, lin(H * D, c["q_lora_rank"], gain=2.0))
        put(MODEL_TENSOR.ATTN_KV, lin(D, E))
        put(MODEL_TENSOR.ATTN_KV_NORM, norm_w(D))
        # file shape of wo_a: ggml {n_head*D/o_groups, o_lora*o_groups}
        put(MODEL_TENSOR.ATTN_OUT_A, lin(c["o_lora_rank"] * c["o_groups"], H * D // c["o_groups"]))
        put(MODEL_TENSOR.ATTN_OUT_B, lin(E, c["o_groups"] * c["o_lora_rank"], gain=0.5))
        for fn, base, scale in ((MODEL_TENSOR.HC_ATTN_FN, MODEL_TENSOR.HC_ATTN_BASE, MODEL_TENSOR.HC_ATTN_SCALE),
                                (MODEL_TENSOR.HC_FFN_FN, MODEL_TENSOR.HC_FFN_BASE, MODEL_TENSOR.HC_FFN_SCALE)):
            put(fn, lin(mix, hc * E))
            b = 0.5 * rng.standard_normal(mix)
            b[2 * hc:] += 2.0 * np.eye(hc).reshape(-1)  # comb leans towards identity (each stream keeps itself)
            put(base, b.astype(np.float32))
            put(scale, (0.5 + 0.5 * rng.random(3)).astype(np.float32))

        if ratio:
            coff = 2 if ratio == 4 else 1   # ratio 4 compresses overlapping windows: two halves
            put(MODEL_TENSOR.ATTN_COMPRESSOR_WKV, lin(coff * D, E))
            put(MODEL_TENSOR.ATTN_COMPRESSOR_WGATE, lin(coff * D, E))
            put(MODEL_TENSOR.ATTN_COMPRESSOR_APE, rng.standard_normal((ratio, coff * D)).astype(np.float32))
            put(MODEL_TENSOR.ATTN_COMPRESSOR_NORM, norm_w(D))
            if ratio == 4:
                nI, dI = c["indexer_n_head"], c["indexer_head_dim"]
                put(MODEL_TENSOR.INDEXER_PROJ, lin(nI, E, gain=4.0))
                put(MODEL_TENSOR.INDEXER_ATTN_Q_B, lin(nI * dI, c["q_lora_rank"], gain=2.0))
                put(MODEL_TENSOR.INDEXER_COMPRESSOR_WKV, lin(2 * dI, E))
                put(MODEL_TENSOR.INDEXER_COMPRESSOR_WGATE, lin(2 * dI, E))
                put(MODEL_TENSOR.INDEXER_COMPRESSOR_APE, rng.standard_normal((ratio, 2 * dI)).astype(np.float32))
                put(MODEL_TENSOR.INDEXER_COMPRESSOR_NORM, norm_w(dI))

        put(MODEL_TENSOR.FFN_NORM, norm_w(E))
        put(MODEL_TENSOR.FFN_GATE_INP, lin(c["n_expert"], E, gain=2.0))
        if il < c["hash_layer_count"]:
            # token -> n_expert_used distinct experts
            tid2eid = np.stack([rng.permutation(c["n_expert"])[:c["n_expert_used"]] for _ in range(c["n_vocab"])])
            put(MODEL_TENSOR.FFN_GATE_TID2EID, tid2eid.astype(np.int32))
        else:
            put(MODEL_TENSOR.FFN_EXP_PROBS_B, (0.3 * rng.standard_normal(c["n_expert"])).astype(np.float32), "bias")
        F, X = c["n_ff_exp"], c["n_expert"]
        put(MODEL_TENSOR.FFN_GATE_EXP, (rng.standard_normal((X, F, E)) * 1.5 / np.sqrt(E)).astype(np.float32))
        put(MODEL_TENSOR.FFN_UP_EXP, (rng.standard_normal((X, F, E)) * 1.5 / np.sqrt(E)).astype(np.float32))
        put(MODEL_TENSOR.FFN_DOWN_EXP, (rng.standard_normal((X, E, F)) * 0.5 / np.sqrt(F)).astype(np.float32))
        Fs = F * c["n_expert_shared"]
        put(MODEL_TENSOR.FFN_GATE_SHEXP, lin(Fs, E, gain=1.5))
        put(MODEL_TENSOR.FFN_UP_SHEXP, lin(Fs, E, gain=1.5))
        put(MODEL_TENSOR.FFN_DOWN_SHEXP, lin(E, Fs, gain=0.5))
    return w


def copy_tokenizer(writer, src_path):
    """Copy every tokenizer.* key of the bundled model, with its type."""
    r = gguf.GGUFReader(src_path)
    for name, field in r.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vt = field.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            et = field.types[1]
            if et == gguf.GGUFValueType.STRING:
                vals = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            else:
                vals = [field.parts[i].tolist()[0] for i in field.data]
            writer.add_key_value(name, vals, vt, sub_type=et)
        elif vt == gguf.GGUFValueType.STRING:
            writer.add_key_value(name, bytes(field.parts[field.data[0]]).decode("utf-8"), vt)
        else:
            writer.add_key_value(name, field.parts[field.data[0]].tolist()[0], vt)


def write(path, c, bad=None, tokenizer_src=None, weights=None):
    """Write the file for configuration c (keys of CONFIG).  weights: {tensor name: numpy array} to
    write instead of the random ones (a trained tools/deepseek4_ref.V4Model: model.gguf_tensors());
    they must be exactly the tensors the random file has, with the same shapes."""
    rng = np.random.default_rng(c["seed"])
    expected = make_weights(c, rng)
    if weights is None:
        weights = expected
    else:
        if set(weights) != set(expected):
            odd = sorted(set(weights) ^ set(expected))
            raise ValueError(f"weights do not match the configuration: tensor {odd[0]} ({len(odd)} differ)")
        for name, arr in expected.items():
            if tuple(weights[name].shape) != arr.shape or weights[name].dtype != arr.dtype:
                raise ValueError(f"tensor {name}: {weights[name].dtype} {tuple(weights[name].shape)}, "
                                 f"expected {arr.dtype} {arr.shape}")
        weights = {name: weights[name] for name in expected}     # the generator's tensor order
    if bad == "no-indexer":
        del weights[tensor_name(MODEL_TENSOR.INDEXER_PROJ, 1)]

    arch = gguf.MODEL_ARCH_NAMES[MODEL_ARCH.DEEPSEEK4]
    wr = gguf.GGUFWriter(path, arch)
    wr.add_name(MODEL_NAME + " (random weights)")
    wr.add_context_length(c["context_length"])
    wr.add_embedding_length(c["n_embd"])
    wr.add_embedding_length_out(c["n_embd"] * c["hc_mult"])
    wr.add_block_count(c["n_layer"])
    wr.add_feed_forward_length(c["n_ff_exp"])
    wr.add_head_count(c["n_head"])
    wr.add_head_count_kv(1)
    wr.add_key_length(c["head_dim"])
    wr.add_value_length(c["head_dim"])
    wr.add_rope_dimension_count(c["n_rot"])
    wr.add_rope_freq_base(c["rope_freq_base"])
    if c["rope_scaling"] != "none":
        wr.add_rope_scaling_type(gguf.RopeScalingType(c["rope_scaling"]))
        wr.add_rope_scaling_factor(c["rope_scaling_factor"])
        wr.add_rope_scaling_orig_ctx_len(c["rope_orig_ctx"])
    wr.add_layer_norm_rms_eps(c["rms_eps"])
    wr.add_q_lora_rank(c["q_lora_rank"])
    wr.add_sliding_window(c["n_swa"])
    wr.add_expert_count(c["n_expert"])
    wr.add_expert_used_count(c["n_expert_used"])
    wr.add_expert_feed_forward_length(c["n_ff_exp"])
    wr.add_expert_shared_count(c["n_expert_shared"])
    wr.add_expert_weights_scale(c["expert_weights_scale"])
    wr.add_expert_weights_norm(c["expert_weights_norm"])
    wr.add_expert_gating_func(gguf.ExpertGatingFuncType.SQRTSOFTPLUS)
    wr.add_swiglu_clamp_exp([c["swiglu_limit"]] * c["n_layer"])
    wr.add_swiglu_clamp_shexp([c["swiglu_limit"]] * c["n_layer"])
    wr.add_indexer_head_count(c["indexer_n_head"])
    wr.add_indexer_key_length(c["indexer_head_dim"])
    top_k = c["indexer_top_k"]
    if bad == "topk":
        top_k = c["context_length"] // 4 + 1   # more than the ratio-4 rows any context can hold
    wr.add_indexer_top_k(top_k)
    wr.add_attention_output_group_count(c["o_groups"])
    wr.add_attention_output_lora_rank(c["o_lora_rank"])
    ratios = list(c["compress_ratios"])
    if bad == "ratio-len":
        ratios = ratios[:-1]
    wr.add_attention_compress_ratios(ratios)
    wr.add_attention_compress_rope_freq_base(c["compress_rope_freq_base"])
    wr.add_hyper_connection_count(c["hc_mult"])
    wr.add_hyper_connection_sinkhorn_iterations(c["hc_sinkhorn_iters"])
    wr.add_hyper_connection_epsilon(c["hc_eps"])
    wr.add_hash_layer_count(c["hash_layer_count"])
    wr.add_file_type(gguf.LlamaFileType.ALL_F32)
    copy_tokenizer(wr, tokenizer_src or os.path.join(ROOT, "models", "gsm-tiny.gguf"))

    for name, arr in weights.items():
        wr.add_tensor(name, arr)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return weights


def written_by_us(path):
    """True when path is a GGUF whose general.name is the one this tool writes."""
    try:
        return gguf.GGUFReader(path).get_field("general.name").contents().startswith(MODEL_NAME)
    except Exception:
        return False


def config_from_ref(cfg, context_length=CONFIG["context_length"]):
    """CONFIG-style dict from a tools/deepseek4_ref.Config (to export a trained model)."""
    c = {k: getattr(cfg, k) for k in CONFIG if hasattr(cfg, k)}
    limits = set(cfg.swiglu_clamp_exp) | set(cfg.swiglu_clamp_shexp)
    if len(limits) != 1:
        raise ValueError("the writer supports one SwiGLU clamp for every layer and the shared expert")
    c.update(swiglu_limit=limits.pop(), context_length=context_length, seed=CONFIG["seed"])
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--bad", choices=["ratio-len", "no-indexer", "topk"], default=None,
                    help="write a deliberately broken file for refusal tests")
    ap.add_argument("--seed", type=int, default=CONFIG["seed"])
    a = ap.parse_args()
    if os.path.exists(a.out) and not written_by_us(a.out):
        sys.exit(f"make_v4_gguf: refusing to overwrite {a.out}: it is not a tiny-v4 file this tool wrote")
    c = dict(CONFIG, seed=a.seed)
    w = write(a.out, c, bad=a.bad)
    n = sum(x.size for x in w.values())
    print(f"wrote {a.out}: {len(w)} tensors, {n} values, {os.path.getsize(a.out)} bytes")


if __name__ == "__main__":
    main()
