#!/usr/bin/env bash
# Compiles this plugin's C against uopc's three plugin headers alone, builds it from its own
# workspace, as a plugin author would, and runs uopc's
# conformance suite on it: `uopc_conformance --plugin bazel-bin/libuopc_plugin_filemap.so`
# (CONFORMANCE names that program; by default the one ../../test.sh built). Exits 0 when the
# suite passes. Run by ../../test.sh; its Bazel server is shut down afterwards.
set -uo pipefail
cd "$(dirname "$0")"
conformance=${CONFORMANCE:-../../bazel-bin/tests/backends/conformance/uopc_conformance}
if [ ! -x "$conformance" ]; then
  echo "plugin_template: no $conformance (build //tests/backends/conformance:uopc_conformance)" >&2
  exit 1
fi
# it needs no header of uopc but these three: its C compiles against them alone
inc=$(mktemp -d)
trap 'rm -rf "$inc"' EXIT
mkdir -p "$inc/backends"
cp ../../backends/plugin_api.h ../../backends/plugin_sdk.h ../../backends/kernel_form.h "$inc/backends/"
cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$inc" ./*.c || {
  echo "plugin_template: does not compile with plugin_api.h, plugin_sdk.h and kernel_form.h alone" >&2
  exit 1
}
bazel build //:libuopc_plugin_filemap.so >build.log 2>&1 || { cat build.log; bazel shutdown; exit 1; }
bazel shutdown >/dev/null 2>&1
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$inc"' EXIT
# a program runs on it: the README's GPT trains 3 steps on FILEMAP:0 with CPU:0's losses
# (GPT_TRAIN names that program; by default the one ../../test.sh built)
gpt_train=${GPT_TRAIN:-../../bazel-bin/examples/gpt/gpt_train}
if [ -x "$gpt_train" ]; then
  losses() {
    (cd "$dir" && UOPC_FILEMAP_DIR=$dir UOPC_PLUGINS="$OLDPWD/bazel-bin/libuopc_plugin_filemap.so" \
      "$OLDPWD/$gpt_train" --device "$1" --steps 3 --log-every 1 --checkpoint "$dir/gpt-$1.safetensors" 2>&1) |
      sed -n 's/.*loss \([0-9.]*\).*/\1/p' | tr '\n' ' '
  }
  on_filemap=$(losses FILEMAP:0) on_cpu=$(losses CPU:0)
  rm -f "$dir"/gpt-*.safetensors
  if [ -z "$on_cpu" ] || [ "$on_filemap" != "$on_cpu" ]; then
    echo "plugin_template: gpt_train's losses on FILEMAP:0 ($on_filemap) are not CPU:0's ($on_cpu)" >&2
    exit 1
  fi
  echo "gpt_train on FILEMAP:0: losses ${on_filemap% } as on CPU:0"
fi
UOPC_FILEMAP_DIR=$dir "$conformance" --plugin "$PWD/bazel-bin/libuopc_plugin_filemap.so"
status=$?
leftover=$(ls -A "$dir")
[ -z "$leftover" ] || { echo "plugin_template: files left in $dir: $leftover" >&2; status=1; }
exit $status
