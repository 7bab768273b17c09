#!/bin/sh
# gpu-check.sh -- what this runtime does on a machine with a real Vulkan GPU,
# in one run of under 8 minutes: builds (Release, in build-gpu/), runs the GPU
# tests on the first non-CPU device (under the validation layer, as on
# lavapipe), then bench_decode and a short `gsm bench`, and prints what it
# measured. Usage: bench/gpu-check.sh [DEVICE]   (index or name substring,
# as `gsm devices` lists them; default: the runtime's own choice, which
# prefers a discrete GPU). Needs the packages of scripts/install-deps.sh.
set -eu
cd "$(dirname "$0")/.."
dev=${1:-}
[ -n "$dev" ] && export GSMRT_DEVICE="$dev"
t0=$(date +%s)
say() { printf '\n== %s (%ss)\n' "$1" "$(( $(date +%s) - t0 ))"; }

say "devices"
if [ ! -x build-gpu/gsm ]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build-gpu -j "$(nproc)" >/dev/null
build-gpu/gsm devices
case "$(build-gpu/gsm devices --json)" in
  *'"type": "cpu"'*) [ -z "$dev" ] && echo "note: the chosen device may be a CPU (lavapipe); name a GPU with bench/gpu-check.sh NAME" ;;
esac

say "GPU tests (validation layer on; 5 minutes at most)"
timeout 300 ctest --test-dir build-gpu -L gpu -j 2 --output-on-failure -E "test_kernels_big|test_budget_swap" \
  | tail -n 25 || echo "GPU tests: FAILED or timed out (see above)"

say "bench_decode (bundled model, depths 128 / 1024 / 2048)"
timeout 90 build-gpu/bench/bench_decode --depths 128,1024,2048 --gen 32 --reps 2 || echo "bench_decode: failed"

say "gsm bench (dense vs keep vs swap, batch 1 and 8, 2k context)"
for b in 1 8; do
  for m in off keep swap; do
    timeout 60 build-gpu/gsm bench --batch "$b" --ctx 2048 --gen 32 --gsm "$m" --repeat 1 2>/dev/null \
      | grep -E '^\|' | tail -n 1 || echo "gsm bench --batch $b --gsm $m: failed"
  done
done
say "done"
