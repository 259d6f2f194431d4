#!/usr/bin/env bash
# The benchmarks' own Python with a current PyTorch from PyPI (oneDNN and MKL kernels, bf16
# autocast), in a virtual environment that only bench/ uses, never uopc or its tests: made
# once and reused. Prints its interpreter's path. PyPI's Linux wheel brings its CUDA
# libraries (some 4 GiB), which PyTorch loads even on a CPU.
#   UOPC_PEERS_VENV=DIR  (default ~/.cache/uopc/benchpeers)
set -euo pipefail
venv="${UOPC_PEERS_VENV:-${HOME:-/root}/.cache/uopc/benchpeers}"
python="$venv/bin/python3"
if ! { [ -x "$python" ] && "$python" -c "import torch" 2>/dev/null; }; then
  echo "uopc: making the benchmarks' Python in $venv (PyTorch from PyPI)" >&2
  /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check torch numpy >&2
fi
echo "$python"
