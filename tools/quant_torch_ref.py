"""The fp32 PyTorch reference on a llama.cpp-quantised file (tools/make_quant_models.sh runs it).

    /usr/bin/python3 tools/quant_torch_ref.py MODEL.gguf OUT_PREFIX CASE...

Dequantises every tensor with gguf-py's numpy dequantisers (llama.cpp's own Python package, from
the node-llama-cpp 3.22.1 source bundle: GGUF_PY, default /work/peer/llama.cpp-src/gguf-py), runs
tools/deepseek2_ref.py:RefModel in fp32 and writes OUT_PREFIX.torch.f32 (for each case, its golden
logit_positions rows of n_vocab, little-endian float32) and OUT_PREFIX.torch.json (64 greedy
tokens per case, lowest id on ties).  This is the exact arithmetic of the quantised weights, so the
runtime must match it to summation rounding; llama.cpp's CPU backend differs from it by its Q8
activation quantisation, which bounds how close the runtime can be to llama.cpp.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.environ.get("GGUF_PY", "/work/peer/llama.cpp-src/gguf-py"))

import numpy as np
import torch

import gguf
from gguf import quants
import gguf_io as G
from deepseek2_ref import RefModel

torch.set_num_threads(1)


class Dequantised:
    """What RefModel reads from a GGUFFile (kv, order, tensor()), with gguf-py's dequantisation."""

    def __init__(self, path):
        # the keys through our reader's types (RefModel's config reader expects them); it stops at
        # tensor types it does not know, so the keys come from the source model, which
        # llama-quantize copies unchanged apart from general.file_type
        src = G.GGUFFile(os.path.join(ROOT, "models", "gsm-tiny.gguf"))
        self.kv, self.kv_types = src.kv, src.kv_types
        r = gguf.GGUFReader(path)
        self.w = {t.name: np.ascontiguousarray(quants.dequantize(t.data, t.tensor_type).astype(np.float32))
                  for t in r.tensors}
        self.order = list(self.w)
        for name in src.order:
            if self.w[name].shape != src.tensors[name][1]:
                raise ValueError("%s: %s has shape %s, the source %s" % (path, name, self.w[name].shape,
                                                                      src.tensors[name][1]))

    def tensor(self, name):
        return self.w[name]


def main():
    model_path, out_prefix, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    man = json.load(open(os.path.join(ROOT, "tests", "data", "golden", "manifest.json")))
    ref = RefModel(Dequantised(model_path))
    rows, greedy = [], {}
    for name in names:
        c = next(x for x in man["cases"] if x["name"] == name)
        rows.append(ref.logits(c["tokens"], c["logit_positions"]).numpy())
        greedy[name] = ref.greedy(c["tokens"], len(c["greedy"]))
    np.concatenate(rows).astype("<f4").tofile(out_prefix + ".torch.f32")
    json.dump({"greedy": greedy}, open(out_prefix + ".torch.json", "w"))


if __name__ == "__main__":
    main()
