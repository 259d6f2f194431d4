#!/usr/bin/env bash
# The Python that tests use as an independent reference (ml_dtypes' bfloat16, numpy), in a
# virtual environment of its own (never uopc's): made once, from PyPI, and reused. Prints
# its interpreter's path. Idempotent; quiet when it is already there.
#   UOPC_PYREF_VENV=DIR  (default ~/.cache/uopc/pyref)
set -euo pipefail
venv="${UOPC_PYREF_VENV:-${HOME:-/root}/.cache/uopc/pyref}"
python="$venv/bin/python3"
if ! { [ -x "$python" ] && "$python" -c "import ml_dtypes, numpy" 2>/dev/null; }; then
  echo "uopc: making the reference Python in $venv (numpy, ml_dtypes from PyPI)" >&2
  /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "numpy>=1.24" "ml_dtypes>=0.4" >&2
fi
echo "$python"
