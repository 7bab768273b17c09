#!/bin/sh
# run-sanitizers.sh -- builds gsmrt with AddressSanitizer + UndefinedBehavior-
# Sanitizer and runs the unit and GPU tests under them; any report fails.
# The build folder is $GSMRT_ASAN_BUILD_DIR (default build-asan), so two
# people (or CI jobs) on one checkout can run it side by side.
#
# Leak checking is on for every test. The Vulkan loader unloads the driver
# (Mesa/LLVM and the libraries they pull in) at vkDestroyInstance; the
# driver's process-lifetime blocks, then pointed to by unmapped globals,
# showed up as a 128-byte leak in an "<unknown module>" that no suppression
# can name (lavapipe, Mesa 22.3). So the GPU tests run with the installed
# Vulkan drivers preloaded (after the ASan runtime, which must come first): a
# preloaded library is never unloaded and its blocks stay reachable. The
# validation layer (C++) leaks the same way; preloading it crashes, so
# tests/lsan.supp drops C++ `operator new` blocks, which gsmrt (C) never
# makes. Every other leak LSan reports is ours. The API tests also count the
# host blocks that go through the context's allocator (tests/support/fail_alloc).
# The F32 and Q8_0 golden runs repeat the F16 one on other weights, and the
# llama.cpp-quantised model files repeat one another (Q4_K_M stays, for the
# K-quant paths); they run in the plain build only, to keep the suite short.
set -eu
cd "$(dirname "$0")/.."
build=${GSMRT_ASAN_BUILD_DIR:-build-asan}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGSMRT_SANITIZE=ON -DGSMRT_WERROR=ON > /dev/null
cmake --build "$build" -j "$jobs"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
ctest --test-dir "$build" -L unit --output-on-failure -j "$jobs"

preload=$(ldd "$build/tests/test_device" | awk '/libasan/ {print $3}')
for icd in /usr/share/vulkan/icd.d/*.json; do
  [ -e "$icd" ] || continue
  lib=$(sed -n 's/.*"library_path" *: *"\([^"]*\)".*/\1/p' "$icd")
  case $lib in /*) ;; *) lib=$(ldconfig -p | awk -v n="$lib" '$1 == n {print $NF; exit}') ;; esac
  if [ -n "$lib" ] && [ -e "$lib" ]; then preload="$preload $lib"; fi
done
# Python fixtures (the PyTorch reference's V4 kernel cases) must not run with
# the ASan runtime preloaded into the interpreter: they are made first, and the
# preloaded run does not repeat them (-FS).
ctest --test-dir "$build" -R '^make_v4_kernel_cases$' --output-on-failure
echo "GPU tests with leak checking; preloaded: $preload"
LD_PRELOAD="$preload" LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" ctest --test-dir "$build" -L gpu -LE soak \
  -E 'golden_(f32|q8_0)|test_quant_model_(Q4_0|Q5_K_M|Q6_K|Q3_K_M|Q2_K|IQ4_XS|IQ2_XXS)$|^make_v4_kernel_cases$' -FS '^v4_kernel_cases$' --output-on-failure -j "$jobs"
# gsm serve under the sanitizers: both servers must exit cleanly (no leak) after the openai-client tests
GSM_SERVE_LD_PRELOAD="$preload" LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" ctest --test-dir "$build" -R e2e_serve --output-on-failure
