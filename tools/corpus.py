"""Corpus for the bundled tiny model: Debian fortunes in chat form, plain fortune
text, and synthetic copy / recall / long-range retrieval dialogues.

Chat format (phi-3 style; BOS is added by the tokenizer, not by the template):
    <|bos|><|system|>\n{system}<|end|>\n<|user|>\n{user}<|end|>\n<|assistant|>\n{reply}<|end|>\n ...
"""
import glob
import hashlib
import os
import random
import string

FORTUNE_DIR = "/usr/share/games/fortunes"
SKIP_FILES = {"ascii-art", "translate-me"}

CHAT_TEMPLATE = ("{% for message in messages %}"
                 "{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
                 "{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")


def render_chat(messages, add_generation_prompt=False):
    s = "".join("<|%s|>\n%s<|end|>\n" % (m["role"], m["content"]) for m in messages)
    if add_generation_prompt:
        s += "<|assistant|>\n"
    return s


def load_fortunes():
    """All fortunes as (category, text), sorted, deduplicated."""
    out = {}
    for path in sorted(glob.glob(os.path.join(FORTUNE_DIR, "*"))):
        name = os.path.basename(path)
        if "." in name or name in SKIP_FILES or os.path.islink(path) or os.path.isdir(path):
            continue
        with open(path, "rb") as f:
            raw = f.read().decode("utf-8", errors="replace")
        for chunk in raw.split("\n%\n"):
            t = chunk.strip("\n").replace("\t", "    ").rstrip()
            t = "\n".join(line.rstrip() for line in t.split("\n"))
            if t.strip("%").strip() == "" or len(t) > 700 or len(t) < 8:
                continue
            if "\ufffd" in t:
                continue
            out.setdefault(t, name)
    return sorted((c, t) for t, c in out.items())


def split_of(text):
    """Deterministic split by content hash: 'train' (90%), 'heldout' (5%), 'calib' (5%)."""
    h = int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:8], 16) % 100
    if h < 90:
        return "train"
    if h < 95:
        return "heldout"
    return "calib"


FIRST_NAMES = ("Alice Bob Carol David Emma Frank Grace Henry Irene Jack Karen Liam Maria Nora Oscar "
               "Paula Quinn Rosa Sam Tina Uma Victor Wendy Xavier Yara Zoe Amir Bianca Chen Dmitri "
               "Elena Farid Greta Hugo Ines Jonas Kenji Lena Marco Nadia Olga Pedro Rita Sven Tomas "
               "Ursula Vera Walter Yusuf Zara Anton Beatrix Cyrus Dora Edgar Fiona Gustav Hana Igor Julia").split()
LAST_NAMES = ("Smith Jones Brown Miller Garcia Novak Silva Kowalski Tanaka Weber Rossi Dubois Larsen "
              "Moreau Fischer Ivanova Costa Berg Okafor Nakamura Haddad Lindqvist Petrov Santos Kim "
              "Meyer Walsh Quist Horvat Bauer").split()
CITIES = ("Paris Berlin Madrid Lisbon Oslo Vienna Prague Dublin Athens Rome Warsaw Cairo Lima Quito "
          "Tokyo Seoul Hanoi Delhi Nairobi Dakar Sydney Perth Denver Boston Austin Toronto Montreal "
          "Havana Bogota Santiago Helsinki Riga Tallinn Zagreb Sofia Porto Geneva Bergen Kyoto Osaka").split()
COLORS = "red blue green yellow purple orange black white silver golden pink brown violet grey".split()
ANIMALS = "cat dog parrot rabbit hamster horse turtle goldfish ferret pony".split()
OBJECTS = "car bike boat kite lamp clock guitar piano drum violin".split()
SYL = "ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru " \
      "sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu dor mar lin tis kel pon".split()

ACKS = ["Got it. I will remember that.", "OK, noted.", "Understood. I will keep that in mind.",
        "Thanks, I have noted it.", "Sure, I will remember.", "Noted."]
FORTUNE_ASKS = ["Tell me a fortune.", "Give me a fortune.", "Say something wise.",
                "Tell me something from the {cat} file.", "Give me a quote about {cat}.",
                "Do you know a saying about {cat}?", "Another one, please.", "Tell me a joke.",
                "Share a thought.", "What does the fortune cookie say?"]
SYSTEMS = ["You are a helpful assistant.", "You are a friendly assistant who knows many fortunes.",
           "You are a concise assistant. Remember what the user tells you.",
           "You are GSM, a tiny assistant."]


def rand_name(r):
    if r.random() < 0.6:
        return r.choice(FIRST_NAMES) + (" " + r.choice(LAST_NAMES) if r.random() < 0.5 else "")
    n = "".join(r.choice(SYL) for _ in range(r.randint(2, 3)))
    return n.capitalize()


def rand_digits(r, lo, hi):
    n = r.randint(lo, hi)
    return str(r.randint(1, 9)) + "".join(r.choice(string.digits) for _ in range(n - 1))


def rand_code(r):
    letters = "".join(r.choice(string.ascii_uppercase) for _ in range(r.randint(2, 3)))
    return letters + "-" + rand_digits(r, 3, 4)


def rand_word(r):
    return "".join(r.choice(SYL) for _ in range(r.randint(1, 3)))


# Fact kinds: (statement, question, answer) templates over one value {v}.
def make_fact(r, kind=None):
    kinds = ["name", "code", "number", "city", "pet", "room", "password", "color", "object"]
    k = kind or r.choice(kinds)
    if k == "name":
        v = rand_name(r)
        return k, v, "My name is %s." % v, "What is my name?", "Your name is %s." % v
    if k == "code":
        v = rand_code(r)
        return k, v, "The secret code is %s." % v, "What is the secret code?", "The secret code is %s." % v
    if k == "number":
        v = rand_digits(r, 3, 6)
        return k, v, "My lucky number is %s." % v, "What is my lucky number?", "Your lucky number is %s." % v
    if k == "city":
        v = r.choice(CITIES)
        return k, v, "I live in %s." % v, "Where do I live?", "You live in %s." % v
    if k == "pet":
        a = r.choice(ANIMALS)
        v = rand_name(r).split()[0]
        return k, v, "My %s is called %s." % (a, v), "What is my %s called?" % a, "Your %s is called %s." % (a, v)
    if k == "room":
        v = rand_digits(r, 2, 4)
        return k, v, "The meeting is in room %s." % v, "Which room is the meeting in?", "The meeting is in room %s." % v
    if k == "password":
        v = rand_word(r) + rand_digits(r, 2, 3)
        return k, v, "The password is %s." % v, "What is the password?", "The password is %s." % v
    if k == "color":
        o = r.choice(OBJECTS)
        v = r.choice(COLORS)
        return k, v, "My %s is %s." % (o, v), "What color is my %s?" % o, "Your %s is %s." % (o, v)
    a = r.choice(OBJECTS)
    v = rand_digits(r, 2, 3)
    return "object", v, "I paid %s euros for my %s." % (v, a), "How much did I pay for my %s?" % a, \
        "You paid %s euros for your %s." % (v, a)


class Corpus:
    """Token-level document generator.  All randomness comes from the rng passed in."""

    def __init__(self, tok, split="train"):
        self.tok = tok
        fs = load_fortunes()
        self.fortunes = [(c, t) for c, t in fs if split_of(t) == split]
        self.cats = sorted(set(c for c, _ in self.fortunes))
        self.role = {r: tok.id_of["<|%s|>" % r] for r in ("system", "user", "assistant")}
        self.end = tok.id_of["<|end|>"]
        self.nl = tok.encode_plain("\n")
        self._enc_cache = {}

    # -- helpers ---------------------------------------------------------
    def enc(self, s):
        ids = self._enc_cache.get(s)
        if ids is None:
            ids = self.tok.encode_plain(s)
            if len(self._enc_cache) < 100000:
                self._enc_cache[s] = ids
        return ids

    def msg(self, role, content):
        """Token ids of one rendered message, plus the span of its content."""
        body = self.enc("\n" + content)
        return [self.role[role]] + body + [self.end] + self.nl

    def fortune_turn(self, r):
        c, t = r.choice(self.fortunes)
        ask = r.choice(FORTUNE_ASKS).format(cat=c.replace("-", " "))
        u = r.random()
        if u < 0.12 and len(t) < 300:
            return self.msg("user", "Repeat after me: " + t) + self.msg("assistant", t)
        if u < 0.2:
            return self.msg("user", t) + self.msg("assistant", r.choice(["Nice one.", "Ha!", "Indeed.", "Very true.", "I like that."]))
        return self.msg("user", ask) + self.msg("assistant", t)

    # -- documents -------------------------------------------------------
    def chat_doc(self, r, n_tokens):
        ids = [self.tok.bos_id]
        if r.random() < 0.3:
            ids += self.msg("system", r.choice(SYSTEMS))
        while len(ids) < n_tokens:
            ids += self.fortune_turn(r)
        return ids

    def plain_doc(self, r, n_tokens):
        ids = [self.tok.bos_id]
        while len(ids) < n_tokens:
            ids += self.enc(r.choice(self.fortunes)[1] + "\n\n")
        return ids

    def copy_doc(self, r, n_tokens):
        """Repeat-after-me chats over random words / digits / codes / fortune text."""
        ids = [self.tok.bos_id]
        while len(ids) < n_tokens:
            u = r.random()
            if u < 0.3:
                x = " ".join(rand_word(r) for _ in range(r.randint(3, 30)))
            elif u < 0.5:
                x = " ".join(rand_digits(r, 1, 6) for _ in range(r.randint(2, 12)))
            elif u < 0.65:
                x = ", ".join(rand_code(r) if r.random() < 0.5 else rand_name(r) for _ in range(r.randint(2, 8)))
            else:
                x = r.choice(self.fortunes)[1]
                if len(x) > 400:
                    x = x[:400]
            ids += self.msg("user", "Repeat after me: " + x) + self.msg("assistant", x)
        return ids

    def rcopy_doc(self, r, n_tokens):
        """Repeat-after-me over random normal tokens (token level, not a canonical
        tokenization): the purest induction/copy signal, used in phase 1."""
        ids = [self.tok.bos_id]
        mask = [0]
        pre = [self.role["user"]] + self.enc("\nRepeat after me:")
        n_normal = min(self.tok.special_ids.values())
        # a small alphabet makes the matching easier: 1/3 of the documents use the
        # first 32 or 128 token ids only
        nv = r.choice([32, 128, n_normal])
        while len(ids) < n_tokens:
            x = [r.randrange(nv) for _ in range(r.randint(8, 48))]
            a = pre + x + [self.end] + self.nl + [self.role["assistant"]] + self.nl
            b = x + [self.end] + self.nl
            ids += a + b
            # loss weight of the token at this position (as a target): the random
            # first copy is unpredictable noise, only the repeat carries signal
            mask += [0] * len(a) + [1] * len(b)
        self.last_mask = mask
        return ids

    def rdouble_doc(self, r, n_tokens):
        """Random tokens, each written twice (t t u u ...): loss only on the second of
        each pair.  Trains a previous-token head quickly (measured: ~150 steps)."""
        n_normal = min(self.tok.special_ids.values())
        ids = [self.tok.bos_id]
        mask = [0]
        while len(ids) < n_tokens:
            t = r.randrange(n_normal)
            ids += [t, t]
            mask += [0, 1]
        self.last_mask = mask
        return ids

    def recall_doc(self, r, n_tokens):
        """key = value lists followed by questions (short range associative recall)."""
        ids = [self.tok.bos_id]
        while len(ids) < n_tokens:
            n = r.randint(2, 8)
            keys = []
            while len(keys) < n:
                k = rand_word(r)
                if k not in keys:
                    keys.append(k)
            vals = [rand_digits(r, 1, 5) if r.random() < 0.6 else rand_code(r) for _ in keys]
            ids += self.msg("user", "Remember: " + ", ".join("%s = %s" % kv for kv in zip(keys, vals)))
            ids += self.msg("assistant", r.choice(ACKS))
            for j in r.sample(range(n), r.randint(1, n)):
                ids += self.msg("user", "What is %s?" % keys[j]) + self.msg("assistant", "%s = %s" % (keys[j], vals[j]))
        return ids

    def retrieval_doc(self, r, n_tokens, n_facts=None):
        """Facts stated early, fortune chatter, questions later (long range)."""
        ids = [self.tok.bos_id]
        if r.random() < 0.3:
            ids += self.msg("system", r.choice(SYSTEMS))
        n_facts = n_facts or r.randint(1, 4)
        facts = []
        used = set()
        while len(facts) < n_facts:
            f = make_fact(r)
            if f[0] in used:
                continue
            used.add(f[0])
            facts.append(f)
        # state the facts, sometimes several in one turn, with chatter in between
        i = 0
        while i < len(facts):
            k = r.randint(1, len(facts) - i)
            ids += self.msg("user", " ".join(f[2] for f in facts[i:i + k])) + self.msg("assistant", r.choice(ACKS))
            i += k
            if r.random() < 0.5:
                ids += self.fortune_turn(r)
        # chatter; each fact is first asked at a random later point (uniform over the
        # rest of the document, so distances cover the whole context), sometimes again
        start = len(ids)
        span = max(1, n_tokens - start - 30)
        due = sorted((start + r.randrange(span), j) for j in range(len(facts)))
        while len(ids) < n_tokens:
            if due and len(ids) >= due[0][0]:
                _, j = due.pop(0)
                f = facts[j]
                ids += self.msg("user", f[3]) + self.msg("assistant", f[4])
                if r.random() < 0.3:
                    due.append((len(ids) + r.randrange(span), j))
                    due.sort()
            else:
                ids += self.fortune_turn(r)
        return ids

    def probe_retrieval(self, r, distance, kind=None):
        """One eval dialogue: (prompt ids ending with '<|assistant|>\\n', value, distance in tokens).
        distance = tokens from the end of the fact statement to the end of the prompt."""
        f = make_fact(r, kind)
        ids = [self.tok.bos_id] + self.msg("user", f[2]) + self.msg("assistant", r.choice(ACKS))
        start = len(ids)
        q = self.msg("user", f[3]) + [self.role["assistant"]] + self.enc("\n")
        while len(ids) - start + len(q) < distance:
            t = self.fortune_turn(r)
            if len(ids) - start + len(q) + len(t) > distance + 40:
                # try a shorter filler
                for _ in range(20):
                    t = self.fortune_turn(r)
                    if len(ids) - start + len(q) + len(t) <= distance + 40:
                        break
            ids += t
        ids += q
        return ids, f[1], f[4], len(ids) - start + 0
