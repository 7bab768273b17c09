#!/bin/sh
# test_install.sh BUILD_DIR SOURCE_DIR MODEL -- the library as a consumer
# gets it: `cmake --install` into a temporary prefix, then examples/embed.c
# built against the installed files with pkg-config and with
# find_package(gsmrt), and both programs run on MODEL: one streamed answer,
# a second one cancelled from another thread.
set -u
build=$1 src=$(cd "$2" && pwd) model=$3
tmp=$(mktemp -d)
trap '[ "${KEEP_TMP:-0}" = 1 ] || rm -rf "$tmp"' EXIT
failures=0 passes=0
check() {
  label=$1; shift
  if "$@"; then echo "ok   $label"; passes=$((passes + 1)); else echo "FAIL $label"; failures=$((failures + 1)); fi
}
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1
check "cmake --install succeeds" [ $? -eq 0 ]
libdir=$(dirname "$(find "$prefix" -name libgsmrt.so.0 | head -n 1)")
check "the versioned shared library is installed" [ -e "$libdir/libgsmrt.so.0" ]
check "the static library is installed" [ -e "$libdir/libgsmrt.a" ]
check "only gsmrt.h is installed as a header" [ "$(ls "$prefix/include")" = "gsmrt.h" ]

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror "$src/examples/embed.c" $(pkg-config --cflags --libs gsmrt) -lpthread \
  -Wl,-rpath,"$libdir" -o "$tmp/embed_pc" 2> "$tmp/cc.log"
check "examples/embed.c builds with pkg-config" [ $? -eq 0 ]

cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DEXAMPLE_SOURCE="$src/examples/embed.c" -DCMAKE_BUILD_RPATH="$libdir" > "$tmp/cmake.log" 2>&1 &&
  cmake --build "$tmp/consumer" > "$tmp/build.log" 2>&1
check "examples/embed.c builds with find_package(gsmrt)" [ $? -eq 0 ]

for prog in "$tmp/embed_pc" "$tmp/consumer/embed_cmake"; do
  name=$(basename "$prog")
  "$prog" "$model" > "$tmp/$name.out" 2> "$tmp/$name.err"
  check "$name runs" [ $? -eq 0 ]
  check "$name streams a first answer" grep -q "answer 1: GSMRT_OK, [1-9][0-9]* tokens" "$tmp/$name.out"
  check "$name cancels the second answer and keeps it" grep -q "answer 2: GSMRT_OK, [1-9][0-9]* tokens, stop cancelled" "$tmp/$name.out"
  check "$name prints the GSM figures of a gated answer" grep -q "answer 2: .* GSM: [1-9][0-9]* gated steps, [0-9]* of [1-9][0-9]* cold pages computed" "$tmp/$name.out"
done
echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
