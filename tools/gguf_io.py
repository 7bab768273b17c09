"""Minimal GGUF v3 reader/writer (F32, F16, Q8_0 tensors), numpy only.

Writer: keys in insertion order, tensors in insertion order, alignment 32,
sequential offsets (what llama.cpp requires).  Arrays must not be nested.
Shapes are given as numpy shapes (outermost first); the file stores ggml ne[]
(innermost first), i.e. the reversed shape.
"""
import struct
import numpy as np

GGUF_MAGIC = b"GGUF"
ALIGN = 32

# value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}

# ggml types
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
GGML_I32 = 26   # integer tables (deepseek4's ffn_gate_tid2eid)
TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q8_0: "Q8_0", GGML_I32: "I32"}
QK8_0 = 32


class Val:
    """A typed GGUF value: Val(U32, 5), Val(ARR, [..], elem=STR)."""

    def __init__(self, type_, value, elem=None):
        self.type, self.value, self.elem = type_, value, elem


def _w_str(f, s):
    b = s.encode("utf-8")
    f.write(struct.pack("<Q", len(b)))
    f.write(b)


def _w_val(f, t, v, elem=None):
    if t == STR:
        _w_str(f, v)
    elif t == ARR:
        assert elem is not None and elem != ARR, "nested arrays are not allowed"
        f.write(struct.pack("<IQ", elem, len(v)))
        if elem == STR:
            for s in v:
                _w_str(f, s)
        else:
            f.write(np.asarray(v, dtype=np.dtype(_SCALAR[elem])).tobytes())
    else:
        f.write(struct.pack(_SCALAR[t], v))


def quantize_q8_0(x):
    """ggml block_q8_0: per 32 values one f16 d = max|x|/127, then 32 int8 round(x/d)."""
    x = np.asarray(x, dtype=np.float32)
    assert x.shape[-1] % QK8_0 == 0
    b = x.reshape(-1, QK8_0)
    amax = np.abs(b).max(axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, np.float32(1)), np.float32(0)).astype(np.float32)
    v = (b * inv[:, None]).astype(np.float32)
    q = (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.int8)  # roundf: half away from zero
    out = np.empty((b.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def dequantize_q8_0(buf, n):
    a = np.frombuffer(buf, dtype=np.uint8, count=(n // QK8_0) * 34).reshape(-1, 34)
    d = a[:, 0:2].copy().view(np.float16).astype(np.float32)
    q = a[:, 2:].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(-1)


def tensor_nbytes(ggml_type, n):
    if ggml_type in (GGML_F32, GGML_I32):
        return 4 * n
    if ggml_type == GGML_F16:
        return 2 * n
    if ggml_type == GGML_Q8_0:
        return n // QK8_0 * 34
    raise ValueError("unsupported ggml type %d" % ggml_type)


def write_gguf(path, kv, tensors):
    """kv: list of (key, Val).  tensors: list of (name, np.ndarray, ggml_type)."""
    keys = [k for k, _ in kv]
    assert len(set(keys)) == len(keys), "duplicate keys"
    names = [n for n, _, _ in tensors]
    assert len(set(names)) == len(names), "duplicate tensor names"
    blobs = []
    for name, arr, t in tensors:
        arr = np.ascontiguousarray(arr)
        if t == GGML_F32:
            b = arr.astype("<f4").tobytes()
        elif t == GGML_F16:
            b = arr.astype("<f2").tobytes()
        elif t == GGML_Q8_0:
            b = quantize_q8_0(arr)
        else:
            raise ValueError(t)
        assert len(b) == tensor_nbytes(t, arr.size)
        blobs.append(b)
    with open(path, "wb") as f:
        f.write(GGUF_MAGIC)
        f.write(struct.pack("<IQQ", 3, len(tensors), len(kv)))
        for k, v in kv:
            _w_str(f, k)
            f.write(struct.pack("<I", v.type))
            _w_val(f, v.type, v.value, v.elem)
        off = 0
        for (name, arr, t), b in zip(tensors, blobs):
            _w_str(f, name)
            ne = list(reversed(arr.shape))
            f.write(struct.pack("<I", len(ne)))
            for d in ne:
                f.write(struct.pack("<q", d))
            f.write(struct.pack("<IQ", t, off))
            off += (len(b) + ALIGN - 1) // ALIGN * ALIGN
        pos = f.tell()
        f.write(b"\0" * ((pos + ALIGN - 1) // ALIGN * ALIGN - pos))
        for b in blobs:
            f.write(b)
            f.write(b"\0" * ((len(b) + ALIGN - 1) // ALIGN * ALIGN - len(b)))


class GGUFFile:
    """Parsed GGUF: .kv {key: python value}, .kv_types {key: (type, elem)},
    .tensors {name: (ggml_type, shape(numpy order), offset)}; .tensor(name) -> float32 array."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        d = self.data
        self.pos = 0
        if d[:4] != GGUF_MAGIC:
            raise ValueError("%s: not a GGUF file" % path)
        self.pos = 4
        ver, nt, nkv = self._u("<IQQ")
        if ver != 3:
            raise ValueError("GGUF version %d" % ver)
        self.kv, self.kv_types = {}, {}
        for _ in range(nkv):
            k = self._str()
            (t,) = self._u("<I")
            v, elem = self._val(t)
            if k in self.kv:
                raise ValueError("duplicate key " + k)
            self.kv[k] = v
            self.kv_types[k] = (t, elem)
        self.tensors = {}
        self.order = []
        for _ in range(nt):
            name = self._str()
            (nd,) = self._u("<I")
            ne = [self._u("<q")[0] for _ in range(nd)]
            t, off = self._u("<IQ")
            self.tensors[name] = (t, tuple(reversed(ne)), off)
            self.order.append(name)
        align = self.kv.get("general.alignment", ALIGN)
        self.data_start = (self.pos + align - 1) // align * align
        # check sequential offsets like llama.cpp
        expect = 0
        for name in self.order:
            t, shape, off = self.tensors[name]
            if off != expect:
                raise ValueError("tensor %s has offset %d, expected %d" % (name, off, expect))
            n = int(np.prod(shape))
            expect += (tensor_nbytes(t, n) + align - 1) // align * align

    def _u(self, fmt):
        r = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return r

    def _str(self):
        (n,) = self._u("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def _val(self, t):
        if t == STR:
            return self._str(), None
        if t == ARR:
            et, n = self._u("<IQ")
            if et == ARR:
                raise ValueError("nested array")
            if et == STR:
                return [self._str() for _ in range(n)], et
            dt = np.dtype(_SCALAR[et])
            a = np.frombuffer(self.data, dtype=dt, count=n, offset=self.pos)
            self.pos += n * dt.itemsize
            return a.tolist(), et
        (v,) = self._u(_SCALAR[t])
        return v, None

    def tensor_type(self, name):
        return self.tensors[name][0]

    def tensor(self, name):
        t, shape, off = self.tensors[name]
        n = int(np.prod(shape))
        start = self.data_start + off
        if t == GGML_F32:
            a = np.frombuffer(self.data, dtype="<f4", count=n, offset=start).astype(np.float32)
        elif t == GGML_F16:
            a = np.frombuffer(self.data, dtype="<f2", count=n, offset=start).astype(np.float32)
        elif t == GGML_Q8_0:
            a = dequantize_q8_0(self.data[start:start + tensor_nbytes(t, n)], n)
        elif t == GGML_I32:
            a = np.frombuffer(self.data, dtype="<i4", count=n, offset=start).astype(np.int32)
        else:
            raise ValueError("tensor %s: unsupported type %d" % (name, t))
        return a.reshape(shape)
