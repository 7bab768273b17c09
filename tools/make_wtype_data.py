#!/usr/bin/python3
"""make_wtype_data.py -- the kernel test data for every weight type.

For each type of runtime/gguf/wtype_table.def (but F32, F16 and Q8_0, which
tests/gpu/test_kernels*.c cover), writes tests/data/wtypes/<TYPE>.gguf holding
  w    [39][768] random weights quantised to the type by llama.cpp's own
       quantiser (ggml_quantize_chunk of libggml-base, the code llama-quantize
       runs; an importance matrix is passed for the types that need one);
  ref  [39][768] F32: w dequantised by gguf-py's numpy code (gguf.quants),
       an implementation independent of both ggml's C and ours.
39 rows = 3 x 13 (3 heads or experts of 13 rows, and an odd row count);
768 columns = 3 super-blocks of 256 (24 blocks of 32). The files are
committed: tests/gpu/test_kernels_types.c needs neither llama.cpp nor Python.

  /usr/bin/python3 tools/make_wtype_data.py [--llama-build DIR] [--gguf-py DIR] [TYPE ...]
"""
import argparse
import ctypes
import os
import re
import sys

import numpy as np

ROWS, COLS = 39, 768
HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "..", "runtime", "gguf", "wtype_table.def")
TESTED_ELSEWHERE = {"F32", "F16", "Q8_0"}   # tests/gpu/test_kernels*.c


def table_types():
    """The rows of the weight-type table, as test_kernels_types.c walks them."""
    rows = re.findall(r"^GSMRT_WTYPE_ROW\(([A-Z0-9_]+),", open(TABLE).read(), re.M)
    return [r for r in rows if r not in TESTED_ELSEWHERE]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-build", default="/work/peer/llama-build")
    ap.add_argument("--gguf-py", default="/work/peer/llama.cpp-src/gguf-py")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "wtypes"))
    ap.add_argument("types", nargs="*", help="default: every row of runtime/gguf/wtype_table.def but "
                    "F32, F16, Q8_0")
    a = ap.parse_args()
    a.types = a.types or table_types()
    sys.path.insert(0, a.gguf_py)
    import gguf
    from gguf import quants

    lib = None
    for name in ("libggml-base.so", "bin/libggml-base.so", "ggml/src/libggml-base.so"):
        p = os.path.join(a.llama_build, name)
        if os.path.exists(p):
            lib = ctypes.CDLL(p)
            break
    if lib is None:
        sys.exit(f"make_wtype_data: no libggml-base.so under {a.llama_build}")
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
    lib.ggml_quantize_requires_imatrix.argtypes = [ctypes.c_int]

    os.makedirs(a.out, exist_ok=True)
    for ti, tname in enumerate(a.types):
        qt = gguf.GGMLQuantizationType[tname]
        rng = np.random.default_rng(1000 + int(qt))
        # Rows of different magnitudes and a few outliers, as real weights have.
        src = rng.standard_normal((ROWS, COLS)).astype(np.float32)
        src *= rng.uniform(0.02, 2.0, size=(ROWS, 1)).astype(np.float32)
        src[rng.integers(0, ROWS, 8), rng.integers(0, COLS, 8)] *= 8
        block, type_bytes = gguf.GGML_QUANT_SIZES[qt]
        row_bytes = COLS // block * type_bytes
        dst = np.zeros((ROWS, row_bytes), dtype=np.uint8)
        imatrix = None
        if lib.ggml_quantize_requires_imatrix(int(qt)) or tname.startswith("IQ"):
            imatrix = rng.uniform(0.1, 1.0, size=COLS).astype(np.float32)
        n = lib.ggml_quantize_chunk(int(qt), src.ctypes.data, dst.ctypes.data, 0, ROWS, COLS,
                                    imatrix.ctypes.data if imatrix is not None else None)
        if n != dst.nbytes:
            sys.exit(f"make_wtype_data: {tname}: ggml wrote {n} bytes, expected {dst.nbytes}")
        ref = quants.dequantize(dst, qt).astype(np.float32).reshape(ROWS, COLS)
        nmse = float(np.sum((ref - src) ** 2) / np.sum(src ** 2))
        path = os.path.join(a.out, f"{tname}.gguf")
        w = gguf.GGUFWriter(path, "wtype-test")
        w.add_string("test.wtype", tname)
        w.add_float32("test.quantisation_nmse", nmse)
        w.add_tensor("w", dst, raw_dtype=qt)   # shape from the byte shape
        w.add_tensor("ref", ref)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        print(f"{tname:8s} {os.path.getsize(path):7d} bytes  quantisation NMSE {nmse:.3g}  -> {path}")


if __name__ == "__main__":
    main()
