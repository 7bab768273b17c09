#!/bin/sh
# run-fuzz.sh [SECONDS] -- builds the libFuzzer target for the GGUF parser
# (clang, -fsanitize=fuzzer,address,undefined; build-fuzz/) and runs it for a
# bounded time (default 120 s) from the corpus in tests/fuzz/corpus/gguf
# (seeded by tests/fuzz/make_seeds). New inputs go to build-fuzz/new-corpus;
# `MERGE=1` folds the interesting ones back into the committed corpus.
# Any crash, sanitizer report or leak fails the run.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-120}
corpus=tests/fuzz/corpus/gguf
out=build-fuzz
mkdir -p "$out" "$corpus" "$out/new-corpus"
flags="-std=c11 -D_GNU_SOURCE -g -O1 -Iruntime -Iinclude -Itests -fno-omit-frame-pointer"
srcs="runtime/gguf/gguf.c runtime/gguf/gguf_kv.c runtime/gguf/wtype.c runtime/model/hparams.c runtime/model/hparams_keys.c
  runtime/model/arch.c runtime/model/deepseek2_hparams.c runtime/model/deepseek4_hparams.c runtime/base/err.c runtime/base/mem.c"
clang $flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  tests/fuzz/fuzz_gguf.c tests/fuzz/no_forward.c $srcs -lm -o "$out/fuzz_gguf"
if [ -z "$(ls -A "$corpus")" ]; then
  clang $flags tests/fuzz/make_seeds.c tests/data/gguf_writer.c -lm -o "$out/make_seeds"
  "$out/make_seeds" "$corpus"
fi
# -max_len covers the seeds (14 KB); -rss_limit keeps it polite.
"$out/fuzz_gguf" -max_total_time="$seconds" -max_len=32768 -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 "$out/new-corpus" "$corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "^#[0-9]+ +(INITED|DONE)|stat::|ERROR|SUMMARY" || true
if grep -qE "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehavior)|runtime error:|SUMMARY: " "$out/fuzz.log"; then
  echo "fuzz: FAILED (see $out/fuzz.log; the crashing input is crash-* in the current directory)"
  exit 1
fi
if [ "${MERGE:-0}" = 1 ]; then
  "$out/fuzz_gguf" -merge=1 -max_len=32768 "$corpus" "$out/new-corpus" > /dev/null 2>&1
  echo "fuzz: corpus now holds $(ls "$corpus" | wc -l) inputs"
fi
echo "fuzz: 1 passed, 0 failed ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/fuzz.log" | awk '{print $2}') executions)"
