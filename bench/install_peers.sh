#!/usr/bin/env bash
# The benchmarks' own Python with the peers from PyPI: a current PyTorch (oneDNN and MKL
# kernels, bf16 autocast, torch.compile), JAX (XLA) and tinygrad, in a virtual environment
# that only bench/ uses, never uopc or its tests: made once and reused. Prints its
# interpreter's path. PyPI's Linux wheel of PyTorch brings its CUDA libraries (some 4 GiB),
# which it loads even on a CPU.
#   UOPC_PEERS_VENV=DIR  (default ~/.cache/uopc/benchpeers)
set -euo pipefail
venv="${UOPC_PEERS_VENV:-${HOME:-/root}/.cache/uopc/benchpeers}"
python="$venv/bin/python3"
if ! { [ -x "$python" ] && "$python" -c "import torch, jax, tinygrad" 2>/dev/null; }; then
  echo "uopc: making the benchmarks' Python in $venv (PyTorch, JAX, tinygrad from PyPI)" >&2
  [ -x "$python" ] || /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check torch numpy "jax[cpu]" tinygrad >&2
fi
echo "$python"
