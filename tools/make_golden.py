"""Write the golden files in tests/data/golden/ from the GGUF (not the checkpoint).

    /usr/bin/python3 tools/make_golden.py [--model models/gsm-tiny.gguf] [--out tests/data/golden]

The reference is tools/deepseek2_ref.py:RefModel in fp32 (weights dequantised
from the file).  Variants: "f16" is the committed file; "f32" and "q8_0" are
re-typed from it with tools/export_gguf.py --from-gguf (bit-reproducible), so
the runtime's tests can rebuild them.  The f32 variant holds exactly the same
values as the f16 file (F16 -> F32 is exact), so its logits are identical.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(HERE)

import numpy as np
import torch

import bpe
import corpus
import gguf_io as G
from deepseek2_ref import RefModel

torch.set_num_threads(1)

N_GREEDY = 64
PPL_CTX = 512


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for blk in iter(lambda: f.read(1 << 20), b""):
            h.update(blk)
    return h.hexdigest()


def tokenizer_from_gguf(g):
    kv = g.kv
    merges = [m.split(" ", 1) for m in kv["tokenizer.ggml.merges"]]
    return bpe.Tokenizer(kv["tokenizer.ggml.tokens"], merges, kv["tokenizer.ggml.token_type"],
                         kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.eos_token_id"],
                         kv.get("tokenizer.ggml.add_bos_token", True))


def golden_cases(tok):
    """(name, text, add_bos) -- text is tokenized with parse_special = True."""
    cp = corpus.Corpus(tok, "calib")
    held = [t for c, t in corpus.load_fortunes() if corpus.split_of(t) == "heldout" and len(t) < 240]
    chat1 = corpus.render_chat([{"role": "user", "content": "Tell me a fortune."}], add_generation_prompt=True)
    chat2 = corpus.render_chat([
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "My name is Irene Walsh."},
        {"role": "assistant", "content": "Got it. I will remember that."},
        {"role": "user", "content": "Give me a quote about computers."},
        {"role": "assistant", "content": held[3]},
        {"role": "user", "content": "What is my name?"}], add_generation_prompt=True)
    # retrieval: fact, ~550 tokens of chatter from held-out fortunes, question
    msgs = [{"role": "user", "content": "The secret code is QF-7319."},
            {"role": "assistant", "content": "OK, noted."}]
    i = 10
    while len(tok.encode(corpus.render_chat(msgs))) < 540:
        msgs.append({"role": "user", "content": corpus.FORTUNE_ASKS[i % 3]})
        msgs.append({"role": "assistant", "content": held[i]})
        i += 1
    msgs.append({"role": "user", "content": "What is the secret code?"})
    chat3 = corpus.render_chat(msgs, add_generation_prompt=True)
    return [
        ("hello", "Hello", True),
        ("plain_fortune", held[0] + "\n\n" + held[1], True),
        ("unicode", "Caf\u00e9 na\u00efve \u2014 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \U0001F600 \u00a9 2024: 3.14159!", True),
        ("chat_single", chat1, True),
        ("chat_multiturn", chat2, True),
        ("retrieval_600", chat3, True),
    ]


def logit_positions(n):
    ps = sorted(set([0, 1, 2, n // 4, n // 2, (3 * n) // 4, n - 2, n - 1]))
    return [p for p in ps if 0 <= p < n]


TOKENIZE_STRINGS = [
    "Hello world", "hello", " Hello", "  two leading spaces", "trailing spaces   ", "tabs\tand\ttabs",
    "line one\nline two\n\nline four", "\n\n\n", "   \n  \n", "CRLF\r\nline", "1234567890", "3.14159 and 2,718",
    "Room 42, code XQ-9913.", "It's, we're, they'll, I'd, you've, I'M",
    "Punctuation!!! ...?? (brackets) [x] {y} <z>", "email@example.com http://www.debian.org/",
    "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e", "na\u00efve r\u00e9sum\u00e9 \u00fcber", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "\u4e2d\u6587\u5b57", "\U0001F600\U0001F680 emoji \U0001F44D\U0001F3FD", "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!", "A computer program does what you tell it to do, not what you want it to do.",
    "    -- Mark Twain", "<|user|>\nHi<|end|>\n<|assistant|>\n", "<|system|>\nYou are a helpful assistant.<|end|>\n",
    "text<|end|>more", "<|bos|>", "<|user", "x" * 40, "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!",
    "snake_case camelCase kebab-case", "$100 & 50% off #1 @home ~tilde `tick`",
]


def perplexity(ref, tok, text, n_ctx=PPL_CTX):
    """llama.cpp llama-perplexity convention: tokens = tokenize(text, add_bos, no special parsing);
    chunks of n_ctx tokens, first token of each chunk replaced by BOS; score the
    second half of each chunk: positions j in [n_ctx/2, n_ctx-2], predicting token j+1."""
    ids = tok.encode(text, add_bos=True, parse_special=False)
    n_chunks = len(ids) // n_ctx
    nll = 0.0
    cnt = 0
    first = n_ctx // 2
    with torch.no_grad():
        for c in range(n_chunks):
            chunk = list(ids[c * n_ctx:(c + 1) * n_ctx])
            chunk[0] = tok.bos_id
            lg, _ = ref.forward(chunk, logits_at=list(range(first, n_ctx - 1)))
            lp = torch.log_softmax(lg.double(), -1)
            tgt = torch.tensor(chunk[first + 1:n_ctx])
            nll -= lp[torch.arange(len(tgt)), tgt].sum().item()
            cnt += len(tgt)
    return float(np.exp(nll / cnt)), n_chunks, cnt, len(ids)


def make_variant(src, vtype, out):
    subprocess.check_call([sys.executable, os.path.join(HERE, "export_gguf.py"), "--from-gguf", src,
                           "--type", vtype, "--out", out], stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "gsm-tiny.gguf"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "golden"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    g = G.GGUFFile(a.model)
    tok = tokenizer_from_gguf(g)
    ref = RefModel(g)
    V = ref.cfg.n_vocab
    tmp = tempfile.mkdtemp()
    variants = {"f16": ref}
    for vt in ("f32", "q8_0"):
        p = os.path.join(tmp, "gsm-tiny-%s.gguf" % vt)
        make_variant(a.model, vt, p)
        variants[vt] = RefModel(G.GGUFFile(p))
    cases = []
    for name, text, add_bos in golden_cases(tok):
        ids = tok.encode(text, add_bos=add_bos, parse_special=True)
        pos = logit_positions(len(ids))
        files = {}
        for vt, m in variants.items():
            lg = m.logits(ids, pos).numpy().astype("<f4")
            fn = "%s.f32" % name if vt == "f16" else "%s.%s.f32" % (name, vt)
            if vt == "f32":
                ref_lg = np.fromfile(os.path.join(a.out, files["f16"]), dtype="<f4").reshape(len(pos), V)
                assert np.array_equal(ref_lg, lg), "f32 variant should equal f16 exactly"
                files[vt] = files["f16"]
                continue
            lg.tofile(os.path.join(a.out, fn))
            files[vt] = fn
        greedy = ref.greedy(ids, N_GREEDY)
        cases.append({"name": name, "text": text, "add_bos": add_bos, "parse_special": True, "tokens": ids,
                      "logit_positions": pos, "logits_file": files["f16"], "logits_files": files,
                      "greedy": greedy, "greedy_text": tok.decode(greedy)})
        print("%-16s %4d tokens  greedy: %r" % (name, len(ids), tok.decode(greedy)[:100]))
    # perplexity on the held-out plain text
    held_path = os.path.join(a.out, "heldout.txt")
    with open(held_path, encoding="utf-8") as f:
        held = f.read()
    ppl, n_chunks, n_scored, n_tok = perplexity(ref, tok, held)
    ppl_q8, _, _, _ = perplexity(variants["q8_0"], tok, held)
    print("perplexity f16 %.4f q8_0 %.4f (%d chunks)" % (ppl, ppl_q8, n_chunks))
    manifest = {
        "model": "models/gsm-tiny.gguf",
        "model_sha256": sha256(a.model),
        "n_vocab": V,
        "reference": "tools/deepseek2_ref.py RefModel, fp32 on CPU (weights dequantised from the GGUF), absorbed MLA",
        "variants": {"f16": "models/gsm-tiny.gguf (committed)",
                     "f32": "tools/export_gguf.py --from-gguf models/gsm-tiny.gguf --type f32 --out <file> "
                            "(same values as f16, identical logits)",
                     "q8_0": "tools/export_gguf.py --from-gguf models/gsm-tiny.gguf --type q8_0 --out <file>"},
        "logits_format": "raw little-endian float32, len(logit_positions) rows of n_vocab; row i = logits "
                         "after consuming tokens[0..logit_positions[i]] (full attention, positions from 0)",
        "greedy_how": "argmax (lowest id on ties) for 64 steps after the full prompt, f16 file, fp32 reference; "
                      "generation does NOT stop at end-of-generation tokens",
        "tolerance_hint": {"fp32_compute_f32_kv_max_abs_logit": 2e-3, "f16_kv_cache_max_abs_logit": 3e-2,
                           "note": "llama.cpp CPU (F16 KV cache) differs from these goldens by up to 2.3e-2 on the 562-token case"},
        "cases": cases,
        "perplexity": {"file": "heldout.txt", "n_ctx": PPL_CTX, "ppl": ppl, "ppl_q8_0": ppl_q8,
                       "n_tokens": n_tok, "n_chunks": n_chunks, "n_scored": n_scored,
                       "how": "tokens = tokenize(whole file, add_bos=true, parse_special=false); "
                              "n_chunks = floor(n_tokens / n_ctx); chunk c = tokens[c*n_ctx:(c+1)*n_ctx] with its "
                              "first token replaced by BOS, evaluated from position 0 with an empty cache; "
                              "score positions j = n_ctx/2 .. n_ctx-2 predicting token j+1 (llama-perplexity "
                              "convention); ppl = exp(mean NLL over all scored tokens)"},
    }
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
    tk = []
    for s in TOKENIZE_STRINGS:
        tk.append({"text": s, "add_bos": False, "parse_special": True, "tokens": tok.encode(s, False, True)})
    for s in TOKENIZE_STRINGS[25:30]:
        tk.append({"text": s, "add_bos": False, "parse_special": False, "tokens": tok.encode(s, False, False)})
    tk.append({"text": "Hello", "add_bos": True, "parse_special": True, "tokens": tok.encode("Hello", True, True)})
    with open(os.path.join(a.out, "tokenize.json"), "w") as f:
        json.dump(tk, f, indent=1, ensure_ascii=False)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
