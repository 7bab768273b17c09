#!/bin/sh
# run.sh GSM_BINARY WORK_DIR -- gsm serve against the official openai npm
# client (test_openai.mjs). Installs the pinned client with `npm ci` into
# WORK_DIR (package.json and package-lock.json from here), starts two
# servers on free ports of 127.0.0.1 (the main one, and a small one with a
# queue of 1 for the 503 case), runs the tests, then stops the servers with
# SIGTERM and checks that they exit cleanly (0: under ASan, no leak).
# Exit 77 (ctest: skipped) only when node or npm is not installed.
set -u
gsm=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "SKIP: node/npm not found; the gsm serve tests need them (scripts/install-deps.sh installs them)"
  exit 77
fi
mkdir -p "$work" || exit 1
cp "$here/package.json" "$here/package-lock.json" "$here/test_openai.mjs" "$work/" || exit 1
cd "$work" || exit 1
if ! timeout 300 npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1; then
  cat npm.log
  echo "FAIL: npm ci could not install the openai client (network?)"
  exit 1
fi

pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT

# start NAME ARGS...: a server on a free port; sets $port
start() {
  name=$1
  shift
  # the launch below is asynchronous: its redirect truncates $name.out only
  # once the child runs, so a file left by an earlier run in this folder
  # could be read first and give that run's (dead) port -- the cause of the
  # 503 case's rare ECONNREFUSED. Remove it so only this server's line is read.
  rm -f "$name.out" "$name.err"
  # GSM_SERVE_LD_PRELOAD: libraries preloaded into the server only (the
  # sanitizer run's ASan runtime and Vulkan drivers; node must not get them)
  env ${GSM_SERVE_LD_PRELOAD:+LD_PRELOAD="$GSM_SERVE_LD_PRELOAD"} "$gsm" serve --host 127.0.0.1 --port 0 "$@" \
    >"$name.out" 2>"$name.err" &
  pid=$!
  pids="$pids $pid"
  port=""
  i=0
  while [ $i -lt 600 ] && [ -z "$port" ]; do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$name.out" 2>/dev/null)
    kill -0 "$pid" 2>/dev/null || break
    [ -z "$port" ] && sleep 0.1
    i=$((i + 1))
  done
  if [ -z "$port" ]; then
    cat "$name.out" "$name.err"
    echo "FAIL: gsm serve ($name) did not start"
    exit 1
  fi
  eval "pid_$name=$pid"
}

key="sk-gsm-test-$$"
start main --parallel 16 --cached 16 --queue 100 --api-key "$key" --timeout 3 --max-body 65536 -c 512 -b 128
port_main=$port
start small --parallel 1 --cached 0 --queue 1 --cors -c 256
port_small=$port

timeout 900 node test_openai.mjs "$port_main" "$port_small" "$key"
rc=$?

# a clean exit on SIGTERM (under ASan/LSan: nothing leaked)
for name in main small; do
  eval "pid=\$pid_$name"
  kill -TERM "$pid"
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: gsm serve ($name) did not stop within 30 s of SIGTERM"
    rc=1
    continue
  fi
  wait "$pid"
  st=$?
  if [ $st -ne 0 ]; then
    cat "$name.err"
    echo "FAIL: gsm serve ($name) exited with $st"
    rc=1
  fi
done
pids=""
exit $rc
