#!/bin/sh
# test_cli_files.sh GSM MODEL -- the files a user names (issue 12): prompt,
# perplexity and calibration text files must be regular files (a directory,
# /dev/zero or a FIFO is refused with a message and exit 1, and nothing
# blocks), without NUL bytes, at most 64 MiB; a FIFO as model, config or
# profile does not hang; outputs (--json, calibrate -o) never go through a
# symbolic link or over something that is not a regular file; and the
# pipeline cache pointed at the model leaves the model byte-identical.
set -u
gsm=$1 model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passes=0
check() {
  label=$1; shift
  if "$@"; then echo "ok   $label"; passes=$((passes + 1)); else echo "FAIL $label"; failures=$((failures + 1)); fi
}
# rc of a command under a 20 s guard (124: it hung); output in $tmp/out, $tmp/err
status() { timeout 20 "$@" >"$tmp/out" 2>"$tmp/err" < /dev/null; echo $?; }
refused() {   # refused LABEL WORDS... CMD...: exit 1 and stderr holding WORDS
  label=$1 words=$2; shift 2
  rc=$(status "$@")
  check "$label: exit 1 (got $rc)" [ "$rc" = 1 ]
  check "$label: says '$words'" grep -q -- "$words" "$tmp/err"
}
export GSMRT_PIPELINE_CACHE=off

mkdir "$tmp/dir"
mkfifo "$tmp/fifo"
printf 'Once upon\000 a time' > "$tmp/nul.txt"
# one byte over the 64 MiB limit, as a sparse file (no 64 MiB written)
: > "$tmp/big.txt" && truncate -s $((64 * 1024 * 1024 + 1)) "$tmp/big.txt"
printf 'Once upon a time there was a little robot.\n' > "$tmp/ok.txt"

for c in run perplexity; do
  refused "$c -f directory" "is a directory" "$gsm" $c -m "$model" -f "$tmp/dir"
  refused "$c -f /dev/zero" "is a character device" "$gsm" $c -m "$model" -f /dev/zero
  refused "$c -f FIFO" "is a FIFO" "$gsm" $c -m "$model" -f "$tmp/fifo"
  refused "$c -f NUL byte" "NUL byte at offset 9" "$gsm" $c -m "$model" -f "$tmp/nul.txt"
  refused "$c -f over 64 MiB" "larger than the limit of 67108864 bytes" "$gsm" $c -m "$model" -f "$tmp/big.txt"
done
refused "calibrate --data directory" "is a directory" "$gsm" calibrate -m "$model" --data "$tmp/dir" -o "$tmp/c.json"
refused "calibrate --data FIFO" "is a FIFO" "$gsm" calibrate -m "$model" --data "$tmp/fifo" -o "$tmp/c.json"
refused "calibrate --data NUL byte" "NUL byte" "$gsm" calibrate -m "$model" --data "$tmp/nul.txt" -o "$tmp/c.json"
check "a good prompt file still runs" [ "$(status "$gsm" run -m "$model" -f "$tmp/ok.txt" -n 2 --temp 0)" = 0 ]

# A FIFO where a file is read must not hang open().
refused "model FIFO" "not a regular file" "$gsm" run -m "$tmp/fifo" -p hi -n 1
refused "--gsm-config FIFO" "FIFO" "$gsm" run -m "$model" -p hi -n 1 --gsm-config "$tmp/fifo"
refused "--profile FIFO" "FIFO" "$gsm" run -m "$model" -p hi -n 1 --gsm --profile "p=$tmp/fifo"

# Outputs: a link is neither followed nor replaced; a FIFO or a directory
# stays what it was.
printf 'precious\n' > "$tmp/victim"
ln -s "$tmp/victim" "$tmp/out-link.json"
refused "calibrate -o symbolic link" "symbolic link" "$gsm" calibrate -m "$model" --data "$tmp/ok.txt" --ctx 64 \
  --groups 2 -o "$tmp/out-link.json"
check "the link's target is untouched" sh -c "[ \"\$(cat '$tmp/victim')\" = precious ] && [ -L '$tmp/out-link.json' ]"
refused "calibrate -o FIFO" "is a FIFO" "$gsm" calibrate -m "$model" --data "$tmp/ok.txt" --ctx 64 --groups 2 \
  -o "$tmp/fifo"
check "the FIFO is still a FIFO" [ -p "$tmp/fifo" ]
rc=$(status "$gsm" bench -m "$model" --ctx 128 --gen 2 --repeat 1 --json "$tmp/out-link.json")
check "bench --json symbolic link: refused (rc $rc)" sh -c "[ $rc -ne 0 ] && grep -q 'symbolic link' '$tmp/err'"
check "bench --json: the link's target is untouched" sh -c "[ \"\$(cat '$tmp/victim')\" = precious ] && [ -L '$tmp/out-link.json' ]"

# The pipeline cache pointed at the model: the model stays byte-identical,
# the run succeeds with one warning.
cp "$model" "$tmp/model.gguf"
cksum < "$tmp/model.gguf" > "$tmp/sum.before"
rc=$(GSMRT_PIPELINE_CACHE="$tmp/model.gguf" status "$gsm" run -m "$tmp/model.gguf" -p hi -n 2 --temp 0)
check "cache path = the model: the run succeeds (rc $rc)" [ "$rc" = 0 ]
check "cache path = the model: one warning" [ "$(grep -c 'not a gsmrt pipeline cache' "$tmp/err")" = 1 ]
check "cache path = the model: the model is byte-identical" sh -c "cksum < '$tmp/model.gguf' | cmp -s - '$tmp/sum.before'"
# An unwritable cache location (a regular file as its directory) warns once.
rc=$(XDG_CACHE_HOME="$tmp/ok.txt" GSMRT_PIPELINE_CACHE= status env -u GSMRT_PIPELINE_CACHE "$gsm" run -m "$model" -p hi -n 2)
check "unwritable XDG_CACHE_HOME: the run succeeds (rc $rc)" [ "$rc" = 0 ]
check "unwritable XDG_CACHE_HOME: one warning" [ "$(grep -c 'without a persistent pipeline cache' "$tmp/err")" = 1 ]

# As another user (when run as root and setpriv exists): a read-only cache
# directory, and another user's unreadable file as the cache, each warn once.
# The checkout must be reachable by that user (a clone inside a private
# `mktemp -d` directory is not): otherwise these cases are skipped, saying why.
as_nobody="setpriv --reuid=nobody --regid=nogroup --clear-groups"
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null && ! $as_nobody sh -c "test -x '$gsm' && test -r '$model'"; then
  echo "note: user nobody cannot reach $gsm or $model (a private directory above the checkout): the other-user cases are skipped"
elif [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
  shared=$(mktemp -d) && chmod 755 "$shared" && mkdir -m 555 "$shared/ro" && mkdir -m 755 "$shared/own"
  printf 'GSMRTPC\000root-only' > "$shared/own/pipelines.bin" && chmod 600 "$shared/own/pipelines.bin"
  rc=$(status $as_nobody env -u GSMRT_PIPELINE_CACHE XDG_CACHE_HOME="$shared/ro" HOME="$shared/ro" "$gsm" run \
    -m "$model" -p hi -n 2)
  check "read-only XDG_CACHE_HOME (as nobody): the run succeeds (rc $rc)" [ "$rc" = 0 ]
  check "read-only XDG_CACHE_HOME: one warning" [ "$(grep -c 'without a persistent pipeline cache' "$tmp/err")" = 1 ]
  rc=$(GSMRT_PIPELINE_CACHE="$shared/own/pipelines.bin" status $as_nobody "$gsm" run -m "$model" -p hi -n 2)
  check "another user's cache file (as nobody): the run succeeds (rc $rc)" [ "$rc" = 0 ]
  check "another user's cache file: one warning" [ "$(grep -c 'Permission denied; running without' "$tmp/err")" = 1 ]
  check "another user's cache file: unchanged" sh -c "printf 'GSMRTPC\\000root-only' | cmp -s - '$shared/own/pipelines.bin'"
  rm -rf "$shared"
else
  echo "note: not root or no setpriv: the other-user cases are skipped"
fi

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
