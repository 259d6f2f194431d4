#!/usr/bin/env bash
# Builds this plugin from its own workspace, as a plugin author would, and runs uopc's
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
bazel build //:libuopc_plugin_filemap.so >build.log 2>&1 || { cat build.log; bazel shutdown; exit 1; }
bazel shutdown >/dev/null 2>&1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
UOPC_FILEMAP_DIR=$dir "$conformance" --plugin "$PWD/bazel-bin/libuopc_plugin_filemap.so"
status=$?
leftover=$(ls -A "$dir")
[ -z "$leftover" ] || { echo "plugin_template: files left in $dir: $leftover" >&2; status=1; }
exit $status
