#!/bin/sh
# test.sh -- the whole test suite from a fresh checkout: installs the Debian
# packages, builds (build/; Release in build-release/, build only), runs
# every test with ctest, then the unit and
# GPU tests again under ASan + UBSan (build-asan/). GPU tests run on
# lavapipe when there is no GPU, under the Khronos validation layer.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
scripts/install-deps.sh
scripts/install-tools-deps.sh   # Debian's torch: the PyTorch reference checks the golden files
# -Werror is a developer/CI switch (off by default for users and packagers).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGSMRT_WERROR=ON
cmake --build build -j "$jobs"
# Release is what users and packagers build: it must compile warning-free at
# -O3 too (built only; its tests would repeat the RelWithDebInfo run).
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DGSMRT_WERROR=ON > /dev/null
cmake --build build-release -j "$jobs"
# the soak (label soak, ~10 minutes) runs on demand: ctest --test-dir build -L soak
ctest --test-dir build --output-on-failure -j "$jobs" -LE soak
scripts/run-sanitizers.sh
# The GGUF parser under libFuzzer for two minutes, from the committed corpus.
scripts/run-fuzz.sh 120
