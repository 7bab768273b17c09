#!/bin/sh
# check_layering.sh -- enforces STYLE.md II.3: which module may include what,
# and that no device-level Vulkan function is called outside runtime/vk
# (those go through the per-device table, dev->vk.vkXxx). Prints each
# violation; exits 1 if there is any.
set -u
cd "${1:-$(dirname "$0")/..}" || exit 2

includes() { grep -Hn '#include "' "$@" 2>/dev/null; }
vk_calls='(^|[^.>a-zA-Z_])vk(Create|Destroy|Allocate|Free|Cmd|Queue|Map|Unmap|Bind|Get(Buffer|Device|Query|Pipeline)|Update|Reset|Wait|Begin|End|Device)[A-Za-z]*\('

violations=$(
  includes runtime/base/*.[ch] | grep -vE '"(base/[a-z_]+\.h|gsmrt\.h)"' | sed 's/^/base may include base\/ only: /'
  includes runtime/vk/*.[ch] | grep -vE '"((base|vk)/[a-z_]+\.h|gsmrt\.h)"' | sed 's/^/vk may include base\/ and vk\/ only: /'
  [ -d runtime/gguf ] && grep -Hn '#include' runtime/gguf/*.[ch] | grep -E 'vk/|volk|vulkan|kernels/' | sed 's/^/gguf must stay CPU-only: /'
  includes runtime/text/*.[ch] | grep -vE '"((base|text)/[a-z0-9_]+\.h|gsmrt\.h)"' | sed 's/^/text may include base\/ and text\/ only: /'
  includes runtime/sample/*.[ch] | grep -vE '"((base|sample)/[a-z0-9_]+\.h|gsmrt\.h)"' | sed 's/^/sample may include base\/ and sample\/ only: /'
  [ -d gsm ] && includes gsm/*.[ch] | grep -E '"(model|text|sample)/|api' | sed 's/^/gsm\/ may not include model, text, sample or api: /'
  includes cli/*.[ch] | grep -E '"[a-z_]+/' | sed 's/^/cli may include gsmrt.h and its own headers only: /'
  for f in $(find runtime gsm cli -name '*.c' 2>/dev/null | grep -v '^runtime/vk/'); do
    grep -Hn -E "$vk_calls" "$f" | sed 's/^/direct Vulkan device call outside runtime\/vk: /'
  done
)
if [ -n "$violations" ]; then
  echo "$violations"
  exit 1
fi
echo "layering: ok"
