#!/bin/sh
# test_cli_bench.sh GSM MODEL -- `gsm bench` as a user runs it: help, usage
# errors (exit 2), and one tiny cell dense and one under swap (context 256,
# 2 sequences, 8 tokens; a 32-token window, 1 hot page and min_context 64 so
# GSM has cold pages to gate and to keep off the device-local pool): the
# table and its header, every JSON field, the prefill shared by the timed
# repeats (each evaluates one prompt token per sequence), the dense row on
# the keep sessions, the swap session's device-local KV
# below dense's by the cold pages, and the KV formula beside the measure, in
# the default F16 cache (2 B a value) and with --cache-type f32 (4 B: the
# dense KV bytes double). Speed is printed, never asserted.
set -u
gsm=$1 model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passes=0
check() {
  label=$1; shift
  if "$@"; then echo "ok   $label"; passes=$((passes + 1)); else echo "FAIL $label"; failures=$((failures + 1)); fi
}
status() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

check "help exits 0 and names the options" sh -c "'$gsm' bench --help | grep -q -- '--gsm MODE'"
check "gsm --help lists bench" sh -c "'$gsm' --help | grep -q bench"
check "bad --gsm is a usage error" [ "$(status "$gsm" bench -m "$model" --gsm maybe)" = 2 ]
check "bad --gsm names the values" grep -q "off, keep or swap" "$tmp/err"
check "bad --batch is a usage error" [ "$(status "$gsm" bench -m "$model" --batch 0)" = 2 ]
check "unknown option is a usage error" [ "$(status "$gsm" bench -m "$model" --temp 0.5)" = 2 ]

set_gsm="--gsm-set window=32 --gsm-set hot_pages=1 --gsm-set min_context=64 --gsm-set warmup_steps=2"
cell() { # MODE JSON [OPTIONS]
  mode=$1 json=$2; shift 2
  status "$gsm" bench -m "$model" --ctx 256 --gen 8 --batch 2 -b 32 --gsm "$mode" --repeat 1 $set_gsm --json "$json" "$@"
}
check "bad --cache-type is a usage error" [ "$(status "$gsm" bench -m "$model" --cache-type q4)" = 2 ]
check "bad --cache-type names the values" grep -q "f16 or f32" "$tmp/err"
check "dense f32 cell exits 0" [ "$(cell off "$tmp/dense32.json" --cache-type f32)" = 0 ]
check "the f32 KV formula is printed" grep -q "KV formula = 4 layers x 80 x ctx x batch x 4 B" "$tmp/out"
check "dense cell exits 0" [ "$(cell off "$tmp/dense.json")" = 0 ]
cp "$tmp/out" "$tmp/dense.out"
check "swap cell exits 0" [ "$(cell swap "$tmp/swap.json")" = 0 ]
cat "$tmp/out"
check "table header" grep -q "^| batch | ctx | mode | prompt | prefill tok/s | decode tok/s |" "$tmp/out"
check "a swap row" grep -q "^| 2 | 256 | swap |" "$tmp/out"
check "the KV formula is printed (f16: 2 B a value)" grep -q "KV formula = 4 layers x 80 x ctx x batch x 2 B" "$tmp/out"
check "memory budget line" grep -q "^memory budget: " "$tmp/out"
check "progress on stderr" grep -q "cell 1/1: batch 2, ctx 256, swap, repeat 1/1" "$tmp/err"
check "progress names the shared prefill" grep -q "prefill 2 x .* tokens (swap sessions)" "$tmp/err"
check "timed repeats reuse the cached prompt (1 token per sequence)" \
  grep -q '"prompt_tokens_evaluated_per_repeat": 2,' "$tmp/swap.json"
check "dense rows run on the keep sessions" grep -q '"from": "the first call on the 2 keep sessions"' "$tmp/dense.json"
for k in prefill_tok_s decode_tok_s median weights_bytes kv_hot_bytes kv_cold_bytes scratch_bytes \
         device_local_bytes host_visible_bytes kv_device_bytes kv_host_bytes kv_formula_bytes \
         kv_read_bytes_per_token top1_agreement mean_kl gated_steps layer_steps_dense_fallback; do
  check "json has $k" grep -q "\"$k\":" "$tmp/swap.json"
done
# one field's value: "key": N
val() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
dense_dev=$(val "$tmp/dense.json" kv_device_bytes)
swap_dev=$(val "$tmp/swap.json" kv_device_bytes)
swap_host=$(val "$tmp/swap.json" kv_host_bytes)
formula=$(val "$tmp/swap.json" kv_formula_bytes)
echo "KV device bytes: dense $dense_dev, swap $swap_dev (+ $swap_host host), formula $formula"
check "swap device-local KV < dense" [ "$swap_dev" -lt "$dense_dev" ]
check "swap keeps the cold pages in the host pool" [ "$swap_host" -gt 0 ]
dense32_dev=$(val "$tmp/dense32.json" kv_device_bytes)
formula32=$(val "$tmp/dense32.json" kv_formula_bytes)
echo "KV device bytes with --cache-type f32: dense $dense32_dev, formula $formula32"
check "dense KV equals the formula (256 is whole pages)" [ "$dense_dev" = "$formula" ]
check "f32 dense KV equals its formula" [ "$dense32_dev" = "$formula32" ]
check "f32 dense KV = 4 layers x 80 x 256 x 2 x 4 B" [ "$dense32_dev" = 655360 ]
check "f16 dense KV is half of f32's" [ $((dense_dev * 2)) = "$dense32_dev" ]
check "json names the cache type" grep -q '"kv_cache_type": "f32"' "$tmp/dense32.json"
check "GSM gated some steps" sh -c "[ \"\$(sed -n 's/.*\"gated_steps\": \([0-9]*\), \"decode_steps.*/\1/p' '$tmp/swap.json')\" -gt 0 ]"
check "dense agrees with itself" grep -q '"top1_agreement": 1.0000, "mean_kl": 0,' "$tmp/dense.json"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
