#!/bin/sh
# run-sanitizers.sh -- builds gsmrt with AddressSanitizer + UndefinedBehavior-
# Sanitizer (build-asan/) and runs the unit and GPU tests under them; any
# report fails.
#
# Leak checking: on for the unit tests. The GPU tests run with ASan's memory
# errors and UBSan on but leak checking off: the Vulkan loader unloads the
# driver (Mesa/LLVM, which pulls in ICU) at vkDestroyInstance, and a 128-byte
# ICU allocation then shows up as a leak in an "<unknown module>" that no
# suppression can name (seen on lavapipe, Mesa 22.3). Our own device memory
# is checked by the tests themselves (every role's bytes return to zero).
# The F32 and Q8_0 golden runs repeat the F16 one on other weights; they run
# in the plain build only, to keep the suite short.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGSMRT_SANITIZE=ON > /dev/null
cmake --build build-asan -j "$jobs"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" \
  ctest --test-dir build-asan -L unit --output-on-failure -j "$jobs"
ASAN_OPTIONS="detect_leaks=0:halt_on_error=1" \
  ctest --test-dir build-asan -L gpu -E 'golden_(f32|q8_0)' --output-on-failure -j "$jobs"
