#!/usr/bin/env bash
# uopc's bf16 against a current PyTorch (PyPI, oneDNN) and against its own f32, alternating
# in one run (issue 29's figures): n x n matmuls (512, 1024, 2048) in f32 and bf16, and the
# bench GPT's training step in f32 and under bf16 autocast, at 1 and 2 threads (uopc's each
# building its graph, and each run from its captured plan, as gpt_train runs its steps).
#   bench/bf16_vs_peers.sh [ROUNDS]          # default 2; nothing else should be running
# The peer is PyTorch from PyPI in the benchmarks' own venv (bench/install_peers.sh), with
# its threads set to the count (torch.set_num_threads via OMP_NUM_THREADS). The CPU (lscpu)
# and its bf16 units (lscpu flags: avx512_bf16, amx_bf16) are printed first.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
bash third_party/install_deps.sh
python="$(bench/install_peers.sh)"
bazel build -c opt //bench:tensor_bench //bench:gpt_bench >/dev/null 2>&1
units=$( (grep -o -w -E 'avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo || true) | sort -u | tr '\n' ' ')  # (none: AVX2 alone)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); bf16 units: ${units:-none}"
peer() { OMP_NUM_THREADS=$1 MKL_NUM_THREADS=$1 "$python" "${@:2}"; }
for round in $(seq "$rounds"); do
  for t in 1 2; do
    echo "== round $round, $t thread(s)"
    peer "$t" bench/pytorch_matmul.py
    UOPC_THREADS=$t bazel-bin/bench/tensor_bench --benchmark_filter='TensorMatmul(Bf16)?/' 2>/dev/null |
      awk '/^BM_/ {print "uopc", $1, $NF}'
    peer "$t" bench/pytorch_gpt_step.py | grep -v BLAS
    peer "$t" bench/pytorch_gpt_step.py --autocast bf16 | grep -v BLAS
    UOPC_THREADS=$t bazel-bin/bench/gpt_bench --benchmark_filter='^BM_GptTrainStep(Bf16)?(Captured)?/' 2>/dev/null |
      awk '/^BM_/ {print "uopc", $1 ":", $2, "ms"}'
  done
done
