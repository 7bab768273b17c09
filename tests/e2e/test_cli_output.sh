#!/bin/sh
# test_cli_output.sh GSM MODEL -- what a user sees of the command line's
# semantics (issue 12): output that cannot be written is an error and stops
# the work (a full disk, a reader that left with SIGPIPE ignored); a run that
# fills the context says so; a raw prompt's control-token text is parsed
# unless --no-parse-special; conflicting or malformed options exit 2;
# calibrate works on a tiny text; --check-tensors finds a NaN weight; a model
# whose chat template is not recognised still runs raw completion; a chat
# whose context fills up keeps answering, forgetting the oldest exchanges.
set -u
gsm=$1 model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passes=0
check() {
  label=$1; shift
  if "$@"; then echo "ok   $label"; passes=$((passes + 1)); else echo "FAIL $label"; failures=$((failures + 1)); fi
}

# ---- write errors
"$gsm" run -m "$model" -p "Once upon a time" -n 32 --temp 0 > /dev/full 2> "$tmp/e"; rc=$?
check "run > /dev/full exits 1 and says why" sh -c "[ $rc -eq 1 ] && grep -q 'cannot write the output' '$tmp/e'"
"$gsm" devices > /dev/full 2> "$tmp/e"; rc=$?
check "devices > /dev/full exits 1" sh -c "[ $rc -eq 1 ] && grep -q 'cannot write' '$tmp/e'"
head -c 1500 "$(dirname "$0")/../data/golden/heldout.txt" > "$tmp/text"
"$gsm" perplexity -m "$model" -f "$tmp/text" -c 64 > /dev/full 2> "$tmp/e"; rc=$?
check "perplexity > /dev/full exits 1" sh -c "[ $rc -eq 1 ] && grep -q 'cannot write' '$tmp/e'"
"$gsm" bench -m "$model" --ctx 256 --gen 8 --batch 2 -b 32 --gsm keep --repeat 1 > /dev/full 2> "$tmp/e"; rc=$?
check "bench > /dev/full stops at the table's header and exits 1" \
  sh -c "[ $rc -eq 1 ] && grep -q 'cannot write' '$tmp/e' && ! grep -q 'prefill' '$tmp/e'"
# The reader leaves after 1 byte; with SIGPIPE ignored the run must stop at the
# next write (100,000 tokens would take many minutes).
start=$(date +%s)
( trap '' PIPE; timeout 120 "$gsm" run -m "$model" -p "Once upon a time" -n 100000 --ignore-eos 2> "$tmp/e";
  echo $? > "$tmp/rc" ) | head -c 1 > /dev/null
elapsed=$(( $(date +%s) - start ))
rc=$(cat "$tmp/rc")
check "a closed pipe (SIGPIPE ignored) stops the run with exit 1 ($elapsed s)" \
  sh -c "[ $rc -eq 1 ] && [ $elapsed -lt 60 ] && grep -q 'Broken pipe' '$tmp/e'"

# ---- why a run stopped
"$gsm" run -m "$model" -p "Once upon a time" -n 1000 -c 16 --ignore-eos --temp 0 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "run -n 1000 -c 16 exits 0 and says the context is full" \
  sh -c "[ $rc -eq 0 ] && grep -q 'the context of 16 positions is full' '$tmp/e'"

# ---- control-token text in a raw prompt: parsed by default, text with --no-parse-special
prompt_tokens() { sed -n 's/.*prompt: \([0-9]*\) tokens.*/\1/p' "$1"; }
"$gsm" run -m "$model" -p "<|user|>" -n 1 --temp 0 -v > /dev/null 2> "$tmp/e1"
"$gsm" run -m "$model" -p "<|user|>" -n 1 --temp 0 -v --no-parse-special > /dev/null 2> "$tmp/e2"
# BOS + <|user|> = 2; as text "<|user|>" is 6 tokens after BOS (tools/bpe.py, parse_special=False)
check "run parses <|user|> as one control token" [ "$(prompt_tokens "$tmp/e1")" = 2 ]
check "run --no-parse-special keeps it text" [ "$(prompt_tokens "$tmp/e2")" = 7 ]

# ---- options
printf 'x' > "$tmp/p"
"$gsm" run -m "$model" -p x -f "$tmp/p" > /dev/null 2> "$tmp/e"; rc=$?
check "-p with -f exits 2" sh -c "[ $rc -eq 2 ] && grep -q -- '-p and -f' '$tmp/e'"
"$gsm" run -m "$model" -p x --device -1 > /dev/null 2> "$tmp/e"; rc=$?
check "--device -1 exits 2 and names the option" sh -c "[ $rc -eq 2 ] && grep -q -- '--device' '$tmp/e'"
"$gsm" run -m "$model" -p x --gate-threshold 1.5 > /dev/null 2> "$tmp/e"; rc=$?
check "--gate-threshold 1.5 exits 2" sh -c "[ $rc -eq 2 ] && grep -q -- '--gate-threshold' '$tmp/e'"
"$gsm" run -m "$model" -p x --gsm-set nosuchkey=1 > /dev/null 2> "$tmp/e"; rc=$?
check "--gsm-set with an unknown key exits 2 and names it" sh -c "[ $rc -eq 2 ] && grep -q nosuchkey '$tmp/e'"
"$gsm" run -m "$model" -p x --gsm-set window > /dev/null 2> "$tmp/e"; rc=$?
check "--gsm-set without =VALUE exits 2" [ $rc -eq 2 ]

# ---- calibrate on a tiny text (its statistics rounded a hair over 1 and were rejected)
printf 'Hello there. How are you?\n' > "$tmp/tiny.txt"
"$gsm" calibrate -m "$model" --data "$tmp/tiny.txt" -o "$tmp/tiny.calib.json" > /dev/null 2> "$tmp/e"; rc=$?
check "calibrate on a 7-token text exits 0" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/tiny.calib.json' ]"

# ---- --check-tensors: a NaN in a norm weight is found and named (the model loads without it)
/usr/bin/python3 - "$model" "$tmp/nan.gguf" "$(dirname "$0")/../../tools" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[3])
import gguf_io
g = gguf_io.GGUFFile(sys.argv[1])
t, shape, off = g.tensors["blk.0.attn_norm.weight"]
data = bytearray(g.data)
pos = g.data_start + off + 3 * (4 if t == gguf_io.GGML_F32 else 2)   # element 3
data[pos:pos + (4 if t == gguf_io.GGML_F32 else 2)] = struct.pack("<f", float("nan")) if t == gguf_io.GGML_F32 else b"\x00\x7e"
open(sys.argv[2], "wb").write(data)
PY
"$gsm" run -m "$tmp/nan.gguf" -p "Hi" -n 2 --check-tensors > /dev/null 2> "$tmp/e"; rc=$?
check "--check-tensors refuses a NaN weight, naming the tensor" \
  sh -c "[ $rc -eq 1 ] && grep -q \"tensor 'blk.0.attn_norm.weight': element 3 is not finite\" '$tmp/e'"
"$gsm" run -m "$tmp/nan.gguf" -p "Hi" -n 2 > /dev/null 2> "$tmp/e"; rc=$?
check "without --check-tensors the same file loads (what the README states)" [ $rc -eq 0 ]

# ---- a chat template we do not recognise: raw completion runs, the chat asks for --chat-format
/usr/bin/python3 - "$model" "$tmp/notmpl.gguf" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
key = b"tokenizer.chat_template"
at = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
assert struct.unpack_from("<I", data, at)[0] == 8          # a string
n = struct.unpack_from("<Q", data, at + 4)[0]
data[at + 12:at + 12 + n] = b"x" * n                       # same length, no known marker
open(sys.argv[2], "wb").write(data)
PY
"$gsm" run -m "$tmp/notmpl.gguf" -p "Once upon" -n 4 > /dev/null 2> "$tmp/e"; rc=$?
check "run works with an unrecognised chat template" [ $rc -eq 0 ]
"$gsm" chat -m "$tmp/notmpl.gguf" < /dev/null > /dev/null 2> "$tmp/e"; rc=$?
check "chat with an unrecognised template exits 1 and asks for --chat-format" \
  sh -c "[ $rc -eq 1 ] && grep -q -- '--chat-format' '$tmp/e'"
echo "Hi" | "$gsm" chat -m "$tmp/notmpl.gguf" --chat-format gsm-tiny -n 4 > /dev/null 2> "$tmp/e"; rc=$?
check "chat with an unrecognised template and --chat-format runs" [ $rc -eq 0 ]

# ---- a chat whose context fills up keeps answering
i=0; : > "$tmp/turns"
while [ $i -lt 8 ]; do echo "Tell me about the sea and the ships, turn $i." >> "$tmp/turns"; i=$((i + 1)); done
"$gsm" chat -m "$model" -c 96 -n 16 --temp 0 --system "You are terse." < "$tmp/turns" > "$tmp/chat" 2> "$tmp/e"; rc=$?
check "chat with a full context exits 0" [ $rc -eq 0 ]
check "no turn fails" sh -c "! grep -q '(error' '$tmp/chat'"
check "it says once that the oldest exchanges are forgotten" \
  [ "$(grep -c 'oldest exchanges are forgotten' "$tmp/chat")" -eq 1 ]

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
