#!/bin/sh
# Installs the Debian packages gsmrt needs to build, run and test.
# Idempotent; uses sudo when not root. Usage: scripts/install-deps.sh
set -eu

packages="build-essential cmake ninja-build pkg-config
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  libcjson-dev libcmocka-dev libpcre2-dev
  mesa-vulkan-drivers vulkan-validationlayers
  clang libclang-rt-14-dev python3 tmux"

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
