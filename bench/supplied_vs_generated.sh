#!/usr/bin/env bash
# The kernels the C plugin supplies (backends/c/matmul_kernels.h) against uopc's generated
# kernels, alternating in one run: f32 matmuls with and without UOPC_C_BLAS=openblas, bf16
# matmuls and the bench GPT's bf16 (autocast) training step with and without the AMX
# kernel (UOPC_C_AMX), at 1 and 2 threads. Nothing else should be running.
#   bench/supplied_vs_generated.sh [ROUNDS]   # default 2
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
bash third_party/install_deps.sh
bazel build -c opt //bench:tensor_bench //bench:gpt_bench >/dev/null 2>&1
units=$(grep -o -w -E 'avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); bf16 units: ${units:-none}"
matmul() { bazel-bin/bench/tensor_bench --benchmark_filter="$1" 2>/dev/null | awk '/^BM_/ {print $1, $NF}'; }
step() { bazel-bin/bench/gpt_bench --benchmark_filter='^BM_GptTrainStepBf16/' 2>/dev/null | awk '/^BM_/ {print $1 ":", $2, "ms"}'; }
for round in $(seq "$rounds"); do
  for t in 1 2; do
    echo "== round $round, $t thread(s)"
    for blas in none openblas; do
      echo "-- f32, UOPC_C_BLAS=$blas"
      UOPC_THREADS=$t OPENBLAS_NUM_THREADS=$t UOPC_C_BLAS=$blas matmul '^BM_TensorMatmul/'
    done
    for amx in 0 1; do
      echo "-- bf16, UOPC_C_AMX=$amx"
      UOPC_THREADS=$t UOPC_C_AMX=$amx matmul '^BM_TensorMatmulBf16/'
      UOPC_THREADS=$t UOPC_C_AMX=$amx step
    done
  done
done
