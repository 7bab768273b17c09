#!/usr/bin/env python3
"""Broken deepseek4 files for refusal tests, made from the committed tiny file with the project's own
GGUF reader/writer (tools/gguf_io.py), so tests need neither llama.cpp nor its gguf-py.

    python3 tools/make_v4_bad.py tests/data/v4/tiny-v4.gguf OUT_DIR

writes OUT_DIR/bad-ratio-len.gguf (compress_ratios one entry shorter than block_count),
OUT_DIR/bad-no-indexer.gguf (blk.1.indexer.proj.weight left out) and OUT_DIR/bad-topk.gguf (indexer
top_k one more than the ratio-4 rows the file's context can hold: context_length / 4 + 1).  These are
the same three cases tools/make_v4_gguf.py --bad writes through gguf-py; every other key and tensor is
copied unchanged (the tiny file is F32 + I32, so the copy is exact).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io  # noqa: E402

ARCH = "deepseek4"


def copy_with(src, out, change_kv=None, drop_tensor=None):
    g = gguf_io.GGUFFile(src)
    if g.kv.get("general.architecture") != ARCH:
        raise SystemExit(f"make_v4_bad: {src} is not a {ARCH} file")
    kv = []
    for k, v in g.kv.items():
        t, elem = g.kv_types[k]
        if change_kv and k in change_kv:
            v = change_kv[k](v)
        kv.append((k, gguf_io.Val(t, v, elem)))
    tensors = [(n, g.tensor(n), g.tensor_type(n)) for n in g.order if n != drop_tensor]
    if drop_tensor and len(tensors) == len(g.order):
        raise SystemExit(f"make_v4_bad: {src} has no tensor {drop_tensor}")
    # only files this tool names in its own output directory are written; never over something else
    if os.path.lexists(out):
        os.unlink(out)
    gguf_io.write_gguf(out, kv, tensors)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    src, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    g = gguf_io.GGUFFile(src)
    n_ctx = g.kv[f"{ARCH}.context_length"]
    copy_with(src, os.path.join(out_dir, "bad-ratio-len.gguf"),
              change_kv={f"{ARCH}.attention.compress_ratios": lambda v: list(v)[:-1]})
    copy_with(src, os.path.join(out_dir, "bad-no-indexer.gguf"), drop_tensor="blk.1.indexer.proj.weight")
    copy_with(src, os.path.join(out_dir, "bad-topk.gguf"),
              change_kv={f"{ARCH}.attention.indexer.top_k": lambda v: n_ctx // 4 + 1})
    print(f"wrote the bad files in {out_dir}")


if __name__ == "__main__":
    main()
