"""Write the held-out text files that ship with the model (never trained on):
  tests/data/golden/heldout.txt   plain fortunes from the 'heldout' split (~30 KB), for perplexity
  models/calib-dialogues.txt      multi-turn chats from the 'calib' split, in the model's chat
                                  template, with facts stated early and asked for much later.
Format of calib-dialogues.txt: dialogues separated by one empty line; a dialogue never
contains an empty line itself; no BOS in the text (add BOS when tokenizing each dialogue;
parse special tokens).

    /usr/bin/python3 tools/make_data_files.py
"""
import os, random, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(HERE)
import bpe, corpus


def main():
    tok = bpe.Tokenizer.load(os.path.join(HERE, "tokenizer.json"))
    held = [t for c, t in corpus.load_fortunes() if corpus.split_of(t) == "heldout"]
    r = random.Random(31337)
    r.shuffle(held)
    out, n = [], 0
    for t in held:
        if n > 30000:
            break
        out.append(t)
        n += len(t.encode()) + 2
    with open(os.path.join(ROOT, "tests", "data", "golden", "heldout.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(out) + "\n")
    cp = corpus.Corpus(tok, "calib")
    cp.fortunes = [(c, t) for c, t in cp.fortunes if "\n\n" not in t and not t.startswith("\n")]
    r = random.Random(4711)
    dialogues = []
    for i in range(48):
        T = [600, 1200, 1800, 2000][i % 4]
        ids = cp.retrieval_doc(r, T)
        # cut after the last complete message that fits in T tokens
        text = tok.decode(ids[1:])
        msgs = text.split("<|end|>\n")
        keep, used = [], 1
        for m in msgs[:-1]:
            k = len(tok.encode(m + "<|end|>\n", add_bos=False))
            if used + k > T:
                break
            keep.append(m + "<|end|>\n")
            used += k
        d = "".join(keep)
        assert "\n\n" not in d
        dialogues.append(d)
    with open(os.path.join(ROOT, "models", "calib-dialogues.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(dialogues))
    print("heldout.txt %d bytes, calib-dialogues.txt %d dialogues" % (n, len(dialogues)))


if __name__ == "__main__":
    main()
