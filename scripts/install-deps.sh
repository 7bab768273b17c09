#!/bin/sh
# Installs the Debian packages gsmrt needs to build, run and test.
# Idempotent; uses sudo when not root. Usage: scripts/install-deps.sh
set -eu

packages="build-essential cmake ninja-build pkg-config
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  libcjson-dev libcmocka-dev libpcre2-dev libmicrohttpd-dev
  mesa-vulkan-drivers vulkan-validationlayers
  clang libclang-rt-14-dev python3 tmux"

# gsm serve's tests run the openai npm client: node and npm, from Debian only
# when missing (Debian's nodejs conflicts with an npm installed another way)
if ! command -v node >/dev/null 2>&1; then packages="$packages nodejs"; fi
if ! command -v npm >/dev/null 2>&1; then packages="$packages npm"; fi

if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
