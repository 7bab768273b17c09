#!/bin/sh
# test_cli_model.sh GSM MODEL MANIFEST -- the model commands as a user runs
# them: `gsm run` greedy output equals the PyTorch reference's continuation
# (tests/data/golden), `gsm perplexity` matches the reference, `gsm chat`
# answers on a pipe and handles its commands, and usage errors exit 2.
set -u
gsm=$1 model=$2 manifest=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passes=0
check() {
  label=$1; shift
  if "$@"; then echo "ok   $label"; passes=$((passes + 1)); else echo "FAIL $label"; failures=$((failures + 1)); fi
}

# Greedy continuations: every golden case without control tokens in its prompt.
python3 - "$manifest" "$tmp" <<'PY'
import json, os, re, sys
m = json.load(open(sys.argv[1]))
for c in m["cases"]:
    if "<|" in c["text"] or not c.get("add_bos", True):
        continue
    # generation stops at the end-of-turn token; other control tokens print nothing
    want = c["greedy_text"].split("<|end|>")[0]
    want = re.sub(r"<\|[a-z_]+\|>", "", want)
    with open(os.path.join(sys.argv[2], c["name"] + ".prompt"), "w") as f:
        f.write(c["text"])
    with open(os.path.join(sys.argv[2], c["name"] + ".want"), "w") as f:
        f.write(want)
PY
for p in "$tmp"/*.prompt; do
  case_name=$(basename "$p" .prompt)
  "$gsm" run -m "$model" -f "$p" -n 64 --temp 0 > "$tmp/$case_name.got" 2> "$tmp/$case_name.err"
  rc=$?
  # the CLI ends the output with one newline
  printf '%s' "$(cat "$tmp/$case_name.got")" > "$tmp/$case_name.got1"
  printf '%s' "$(cat "$tmp/$case_name.want")" > "$tmp/$case_name.want1"
  check "run greedy '$case_name' exits 0" [ $rc -eq 0 ]
  check "run greedy '$case_name' equals the reference" cmp -s "$tmp/$case_name.got1" "$tmp/$case_name.want1"
done

# Perplexity of the held-out text, within 0.5 % of the reference.
dir=$(dirname "$manifest")
eval "$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["perplexity"]
print("ppl_file=%s ppl_ctx=%d ppl_want=%s" % (p["file"], p["n_ctx"], p["ppl"]))' "$manifest")"
"$gsm" perplexity -m "$model" -f "$dir/$ppl_file" -c "$ppl_ctx" > "$tmp/ppl" 2> /dev/null
check "perplexity exits 0" [ $? -eq 0 ]
check "perplexity within 0.5% of the reference" python3 -c '
import sys
got = float(open(sys.argv[1]).read().split()[1]); want = float(sys.argv[2])
sys.exit(0 if abs(got - want) / want < 0.005 else 1)' "$tmp/ppl" "$ppl_want"

# Chat on a pipe: two turns, the commands, then end of input.
printf 'Hello!\n/stats\nWhat did I say?\n/reset\n/help\n/nonsense\n' |
  "$gsm" chat -m "$model" --temp 0 -n 24 > "$tmp/chat" 2> "$tmp/chat.err"
check "chat on a pipe exits 0" [ $? -eq 0 ]
check "chat /stats reports the answer" grep -q "last answer:" "$tmp/chat"
check "chat /reset confirms" grep -q "conversation forgotten" "$tmp/chat"
check "chat /help lists commands" grep -q "/reset" "$tmp/chat"
check "chat names an unknown command" grep -q "unknown command /nonsense" "$tmp/chat"

# Usage errors name the option and exit 2; a missing model exits 1.
"$gsm" run -m "$model" > /dev/null 2> "$tmp/e"; check "run without a prompt exits 2" [ $? -eq 2 ]
"$gsm" run -m "$model" -p x --temp -1 > /dev/null 2> "$tmp/e"; rc=$?
check "a negative temperature exits 2 and names it" sh -c "[ $rc -eq 2 ] && grep -q -- --temp '$tmp/e'"
"$gsm" run -m "$model" -p x -c abc > /dev/null 2> "$tmp/e"; check "a bad number exits 2" [ $? -eq 2 ]
"$gsm" run -m "$tmp/missing.gguf" -p x > /dev/null 2> "$tmp/e"; rc=$?
check "a missing model exits 1 and names the file" sh -c "[ $rc -eq 1 ] && grep -q missing.gguf '$tmp/e'"
"$gsm" chat -m "$model" --chat-format nosuch < /dev/null > /dev/null 2> "$tmp/e"; rc=$?
check "an unknown chat format lists the known ones" sh -c "[ $rc -eq 1 ] && grep -q chatml '$tmp/e'"
for c in run chat perplexity; do
  "$gsm" $c --help > "$tmp/h"; check "$c --help" sh -c "[ $? -eq 0 ] && grep -q -- --model '$tmp/h'"
done

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
