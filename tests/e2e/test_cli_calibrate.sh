#!/bin/sh
# test_cli_calibrate.sh GSM MODEL -- `gsm calibrate` as a user runs it: help,
# usage errors (exit 2) including a model directory without the default
# calibration text, a short calibration whose file loads back as a profile of
# `gsm run`, and profile errors (another model's file, an unknown name: exit 1
# with a message naming the file, the key or the loaded profiles).
set -u
gsm=$1 model=$2
data=$(dirname "$model")/calib-dialogues.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passes=0
check() {
  label=$1; shift
  if "$@"; then echo "ok   $label"; passes=$((passes + 1)); else echo "FAIL $label"; failures=$((failures + 1)); fi
}
status() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

check "help exits 0 and names the options" sh -c "'$gsm' calibrate --help | grep -q -- '--data FILE'"
check "gsm --help lists calibrate" sh -c "'$gsm' --help | grep -q calibrate"
check "no -o is a usage error" [ "$(status "$gsm" calibrate -m "$model")" = 2 ]
check "bad --groups is a usage error" [ "$(status "$gsm" calibrate -m "$model" --groups 0 -o "$tmp/x.json")" = 2 ]
grep -q -- "--groups expects an integer" "$tmp/err" || { echo "FAIL --groups message: $(cat "$tmp/err")"; failures=$((failures + 1)); }

# a model whose directory has no calib-dialogues.txt: say to pass --data
mkdir "$tmp/bare" && ln -s "$(cd "$(dirname "$model")" && pwd)/$(basename "$model")" "$tmp/bare/m.gguf"
check "missing default data exits 2" [ "$(status "$gsm" calibrate -m "$tmp/bare/m.gguf" -o "$tmp/x.json")" = 2 ]
check "missing default data says --data" grep -q "bare/calib-dialogues.txt not found; pass --data" "$tmp/err"
check "nothing written" [ ! -e "$tmp/x.json" ]

# a short calibration: the first ~300 tokens of the bundled dialogues
head -c 1200 "$data" >"$tmp/small.txt"
check "calibrate exits 0" [ "$(status "$gsm" calibrate -m "$model" --data "$tmp/small.txt" --ctx 128 --groups 2 -o "$tmp/c.json")" = 0 ]
check "calibrate reports the file" grep -q "wrote $tmp/c.json: 4 layers x 8 heads" "$tmp/out"
check "progress on stderr" grep -q "calibration: 100%" "$tmp/err"
check "file is a calibration for gsm-tiny" sh -c "grep -q '\"format\":[[:space:]]*\"gsmrt-gsm-calibration\"' '$tmp/c.json' && grep -q '\"name\":[[:space:]]*\"gsm-tiny\"' '$tmp/c.json'"

# profiles in gsm run
check "run with --profile" [ "$(status "$gsm" run -m "$model" --profile tiny="$tmp/c.json" -p "Hello" -n 4 --temp 0)" = 0 ]
check "run with --profile FILE (named by its file)" [ "$(status "$gsm" run -m "$model" --profile "$tmp/c.json" --use-profile c -p "Hello" -n 4 --temp 0)" = 0 ]
check "unknown --use-profile exits 1" [ "$(status "$gsm" run -m "$model" --profile tiny="$tmp/c.json" --use-profile prose -p "Hello" -n 4)" = 1 ]
check "unknown --use-profile lists the loaded ones" grep -q "no such profile (loaded: tiny)" "$tmp/err"
sed 's/"gsm-tiny"/"gsm-huge"/' "$tmp/c.json" >"$tmp/other.json"
check "another model's file exits 1" [ "$(status "$gsm" run -m "$model" --profile o="$tmp/other.json" -p "Hello" -n 4)" = 1 ]
check "another model's file: message names file and key" grep -q "other.json: key \"model\": calibration made for model \"gsm-huge\"" "$tmp/err"
check "as calibration_path too" [ "$(status "$gsm" run -m "$model" --gsm-set calibration_path="$tmp/other.json" -p "Hello" -n 4)" = 1 ]
check "calibration_path message" grep -q "other.json: key \"model\"" "$tmp/err"
check "the right calibration_path is accepted" [ "$(status "$gsm" run -m "$model" --gsm-set calibration_path="$tmp/c.json" -p "Hello" -n 4 --temp 0)" = 0 ]

# the shipped calibration of the bundled model loads for it
shipped=$(dirname "$model")/gsm-tiny.calib.json
check "the shipped calibration loads" [ "$(status "$gsm" run -m "$model" --profile "$shipped" -p "Hello" -n 4 --temp 0)" = 0 ]

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
