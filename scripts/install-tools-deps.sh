#!/bin/sh
# Debian packages needed by tools/ (training, export, goldens of the bundled model).
# Idempotent. Run as root or with sudo available.
set -eu
PKGS="python3 python3-torch python3-numpy python3-regex libopenblas0-openmp fortunes fortunes-min"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    $SUDO apt-get update
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
fi
# Optional, only for tools/llama_check.mjs (the llama.cpp comparison): nodejs + npm, and
# node-llama-cpp@3.22.1 installed with npm into a scratch folder (see tools/README.md).
echo "tools dependencies installed"
