"""Train the byte-level BPE (vocab 1024 incl. 6 specials) on the training split.
Usage: /usr/bin/python3 tools/train_tokenizer.py [out.json]"""
import os, random, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe, corpus

VOCAB = 1024


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "tokenizer.json")
    fs = [t for c, t in corpus.load_fortunes() if corpus.split_of(t) == "train"]
    r = random.Random(1234)
    texts = list(fs)
    for _ in range(4000):  # the synthetic phrasing, so common task words get merges too
        f = corpus.make_fact(r)
        texts.append(" ".join([f[2], f[3], f[4], r.choice(corpus.ACKS), r.choice(corpus.FORTUNE_ASKS).format(cat=r.choice(["computers", "love", "food", "work"])), "Repeat after me:", "Remember:", "What is"]))
    t0 = time.time()
    merges = bpe.train_bpe(texts, VOCAB - 256 - len(bpe.SPECIALS), log=print)
    tok = bpe.Tokenizer.build(merges)
    assert tok.n_vocab == VOCAB, tok.n_vocab
    tok.save(out)
    nb = sum(len(t.encode()) for t in fs[:2000]); nt = sum(len(tok.encode_plain(t)) for t in fs[:2000])
    print("vocab %d, %.2f bytes/token on train sample, %.1fs" % (tok.n_vocab, nb / nt, time.time() - t0))


if __name__ == "__main__":
    main()
