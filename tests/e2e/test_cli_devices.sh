#!/bin/sh
# test_cli_devices.sh GSM -- `gsm devices` and the CLI's usage errors, as a
# user meets them: the table, valid JSON with the capability record, exit
# codes 0/1/2, and clear errors with no Vulkan loader or no driver.
set -u
gsm=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {   # check NAME CONDITION...
  name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

"$gsm" devices > "$tmp/out" 2> "$tmp/err"; rc=$?
check "devices exits 0" [ $rc -eq 0 ]
check "devices lists device 0" grep -q '^device 0: ' "$tmp/out"
check "devices shows the binding range" grep -q 'max binding range' "$tmp/out"
check "devices shows subgroup facts" grep -q 'subgroup  *size' "$tmp/out"

"$gsm" devices --json > "$tmp/json"; rc=$?
check "devices --json exits 0" [ $rc -eq 0 ]
check "devices --json is valid JSON with the capability record" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, list) and d, "no devices"
keys = {"name", "type", "usable", "fp16_arithmetic", "storage_8bit", "storage_16bit", "subgroup_size",
        "subgroup_arithmetic", "max_storage_buffer_range", "max_push_constants_size", "unified_memory",
        "transfer_queue", "timestamps", "heaps", "memory_types", "quirks"}
missing = keys - set(d[0])
assert not missing, missing
assert d[0]["max_storage_buffer_range"] > 0 and d[0]["heaps"]
' "$tmp/json"

"$gsm" devices --frobnicate > /dev/null 2> "$tmp/err"; rc=$?
check "unknown option exits 2" [ $rc -eq 2 ]
check "unknown option is named" grep -q "frobnicate" "$tmp/err"
"$gsm" > /dev/null 2>&1; rc=$?
check "no command exits 2" [ $rc -eq 2 ]
"$gsm" no-such-command > /dev/null 2> "$tmp/err"; rc=$?
check "unknown command exits 2" [ $rc -eq 2 ]
"$gsm" --help > "$tmp/out"; rc=$?
check "--help exits 0 and lists devices" sh -c "[ $rc -eq 0 ] && grep -q devices '$tmp/out'"
"$gsm" devices --help > "$tmp/out"; rc=$?
check "devices --help exits 0" sh -c "[ $rc -eq 0 ] && grep -q -- --json '$tmp/out'"

# No Vulkan loader at all: a broken libvulkan first on the library path.
mkdir "$tmp/novk"
echo "not a library" > "$tmp/novk/libvulkan.so.1"
cp "$tmp/novk/libvulkan.so.1" "$tmp/novk/libvulkan.so"
LD_LIBRARY_PATH="$tmp/novk" "$gsm" devices > /dev/null 2> "$tmp/err"; rc=$?
check "no loader exits 1, no crash" [ $rc -eq 1 ]
check "no loader says so" grep -q "no Vulkan loader" "$tmp/err"

# A loader but no driver.
VK_ICD_FILENAMES="$tmp/none.json" VK_DRIVER_FILES="$tmp/none.json" "$gsm" devices > /dev/null 2> "$tmp/err"; rc=$?
check "no driver exits 1, no crash" [ $rc -eq 1 ]
check "no driver says what to install" grep -q "mesa-vulkan-drivers" "$tmp/err"

echo "$(( 14 - failures )) passed, $failures failed"
[ $failures -eq 0 ]
