#!/usr/bin/env bash
# uopc's half-precision conversions against independent references: the peer binary writes
# every pattern converted by uopc's kernels, half_conversions_test.py compares them with
# numpy's float16 and ml_dtypes' bfloat16, in the reference Python that
# third_party/install_pyref.sh makes (test.sh passes it as UOPC_PYREF_PYTHON).
set -euo pipefail
dir="$(dirname "$0")"
export UOPC_PLUGIN_DIRS="$PWD/backends/c"
out="${TEST_TMPDIR:-$(mktemp -d)}"
"$dir/half_conversions_peer" "$out"
python="${UOPC_PYREF_PYTHON:-}"
if [ -z "$python" ]; then
  python="$(third_party/install_pyref.sh 2>/dev/null || true)"
fi
if [ -z "$python" ] || [ ! -x "$python" ]; then
  echo "half_conversions_test: no reference Python (run third_party/install_pyref.sh, which" \
       "installs ml_dtypes from PyPI into a venv of its own)" >&2
  exit 1
fi
exec "$python" "$dir/half_conversions_test.py" "$out"
