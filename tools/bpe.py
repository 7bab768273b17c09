"""Byte-level BPE tokenizer (GPT-2 style byte alphabet, qwen2 pre-tokenizer).

Written for the bundled tiny model.  It behaves like llama.cpp's "gpt2" vocab
type with tokenizer.ggml.pre = "qwen2":
  * the text is first split at special (control) tokens when parse_special is on;
  * each fragment is split by the qwen2 regex below;
  * each piece is mapped byte -> printable code point (GPT-2 table) and merged
    by merge rank (lowest rank first, leftmost on ties) until no merge applies.
"""
import json
import regex

# llama.cpp's qwen2 pre-tokenizer regex (digits are split one by one).
QWEN2_PAT = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
             r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_pat = regex.compile(QWEN2_PAT)

# Special tokens, in id order after the normal tokens.  All are control tokens
# (GGUF token_type 3).
SPECIALS = ["<|bos|>", "<|eos|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]


def bytes_to_unicode():
    """GPT-2 byte -> code point table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


B2U = bytes_to_unicode()
U2B = {v: k for k, v in B2U.items()}


def pretokenize(text):
    return _pat.findall(text)


def to_symbols(piece):
    return [B2U[b] for b in piece.encode("utf-8")]


def train_bpe(texts, n_merges, log=None):
    """Train merges on an iterable of strings. Deterministic (ties broken by
    the pair's string order)."""
    from collections import Counter, defaultdict
    counts = Counter()
    for t in texts:
        for p in pretokenize(t):
            counts[p] += 1
    words = []
    freqs = []
    for w, c in sorted(counts.items()):
        words.append(to_symbols(w))
        freqs.append(c)
    pair_count = Counter()
    pair_words = defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += freqs[i]
            pair_words[(a, b)].add(i)
    merges = []
    for m in range(n_merges):
        if not pair_count:
            break
        best = max(pair_count.items(), key=lambda kv: (kv[1], [-ord(ch) for ch in kv[0][0] + " " + kv[0][1]]))
        (a, b), c = best
        if c < 2:
            break
        merges.append((a, b))
        ab = a + b
        for i in list(pair_words[(a, b)]):
            w = words[i]
            f = freqs[i]
            for x, y in zip(w, w[1:]):
                pair_count[(x, y)] -= f
                if pair_count[(x, y)] <= 0:
                    del pair_count[(x, y)]
            nw = []
            j = 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    nw.append(ab)
                    j += 2
                else:
                    nw.append(w[j])
                    j += 1
            words[i] = nw
            for x, y in zip(nw, nw[1:]):
                pair_count[(x, y)] += f
                pair_words[(x, y)].add(i)
        if log and m % 100 == 0:
            log("merge %d %r+%r count %d" % (m, a, b, c))
    return merges


class Tokenizer:
    def __init__(self, tokens, merges, token_types, bos_id, eos_id, add_bos=True):
        self.tokens = list(tokens)
        self.merges = [tuple(m) for m in merges]
        self.token_types = list(token_types)
        self.id_of = {t: i for i, t in enumerate(self.tokens)}
        self.rank = {m: i for i, m in enumerate(self.merges)}
        self.bos_id = bos_id
        self.eos_id = eos_id
        self.add_bos = add_bos
        self.special_ids = {t: i for i, t in enumerate(self.tokens) if self.token_types[i] in (3, 4)}
        # longest first, like llama.cpp's partitioning over cache_special_tokens
        self._special_re = regex.compile("|".join(regex.escape(s) for s in sorted(self.special_ids, key=lambda s: -len(s)))) \
            if self.special_ids else None
        self._cache = {}

    @property
    def n_vocab(self):
        return len(self.tokens)

    @staticmethod
    def build(merges):
        tokens = [B2U[b] for b in range(256)]
        for a, b in merges:
            tokens.append(a + b)
        # drop duplicates that can't happen with proper BPE, but be safe
        assert len(set(tokens)) == len(tokens)
        types = [1] * len(tokens)
        for s in SPECIALS:
            tokens.append(s)
            types.append(3)
        bos = tokens.index("<|bos|>")
        eos = tokens.index("<|eos|>")
        return Tokenizer(tokens, merges, types, bos, eos, True)

    def save(self, path):
        with open(path, "w") as f:
            json.dump({"tokens": self.tokens, "merges": [" ".join(m) for m in self.merges],
                       "token_types": self.token_types, "bos_id": self.bos_id,
                       "eos_id": self.eos_id, "add_bos": self.add_bos}, f, ensure_ascii=False)

    @staticmethod
    def load(path):
        with open(path) as f:
            d = json.load(f)
        return Tokenizer(d["tokens"], [m.split(" ", 1) for m in d["merges"]], d["token_types"],
                         d["bos_id"], d["eos_id"], d["add_bos"])

    def _bpe(self, piece):
        r = self._cache.get(piece)
        if r is not None:
            return r
        syms = to_symbols(piece)
        rank = self.rank
        while len(syms) > 1:
            best = None
            bi = -1
            for i in range(len(syms) - 1):
                rk = rank.get((syms[i], syms[i + 1]))
                if rk is not None and (best is None or rk < best):
                    best = rk
                    bi = i
            if best is None:
                break
            syms = syms[:bi] + [syms[bi] + syms[bi + 1]] + syms[bi + 2:]
        ids = [self.id_of[s] for s in syms]
        if len(self._cache) < 200000:
            self._cache[piece] = ids
        return ids

    def encode_plain(self, text):
        out = []
        for p in pretokenize(text):
            out.extend(self._bpe(p))
        return out

    def encode(self, text, add_bos=None, parse_special=True):
        """Like llama_tokenize(text, add_special=add_bos, parse_special)."""
        if add_bos is None:
            add_bos = self.add_bos
        out = [self.bos_id] if add_bos else []
        if parse_special and self._special_re is not None:
            pos = 0
            for m in self._special_re.finditer(text):
                if m.start() > pos:
                    out.extend(self.encode_plain(text[pos:m.start()]))
                out.append(self.special_ids[m.group(0)])
                pos = m.end()
            if pos < len(text):
                out.extend(self.encode_plain(text[pos:]))
        else:
            out.extend(self.encode_plain(text))
        return out

    def decode(self, ids, keep_special=True):
        bs = bytearray()
        for i in ids:
            t = self.tokens[i]
            if self.token_types[i] in (3, 4):
                if keep_special:
                    bs.extend(t.encode("utf-8"))
            else:
                bs.extend(bytes(U2B[ch] for ch in t))
        return bs.decode("utf-8", errors="replace")
