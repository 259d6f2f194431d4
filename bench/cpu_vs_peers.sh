#!/usr/bin/env bash
# uopc on the CPU against its peers, alternating in one run (issue 17's figures): f32
# matmul 512/1024/2048 against numpy's OpenBLAS, a 16M-float add against memcpy, and the
# bench GPT's training step against PyTorch's eager step, at 1 and 2 threads.
#   bench/cpu_vs_peers.sh [ROUNDS]          # default 2; nothing else should be running
# The peers get their best setup: OpenBLAS (libopenblas0-pthread, which it installs with
# python3-torch) with the kernel that is fastest on this CPU (../shared/tools/
# peer-openblas-coretype: OpenBLAS 0.3.21 takes a Sapphire Rapids Xeon for a Prescott, 7x
# slower), OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set to the thread count, and
# OPENBLAS_L2_SIZE unset for them. The CPU (lscpu) and the coretype are printed first.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
bash third_party/install_deps.sh
for p in python3-torch libopenblas0-pthread; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done
bazel build -c opt //bench:tensor_bench //bench:gpt_bench >/dev/null 2>&1
coretype=""
if [ -x ../shared/tools/peer-openblas-coretype ]; then
  coretype=$(../shared/tools/peer-openblas-coretype 2>/dev/null || true)
fi
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); peer OPENBLAS_CORETYPE=${coretype:-auto}"
peer() {
  (unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
   [ -n "$coretype" ] && export OPENBLAS_CORETYPE=$coretype
   OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$2" | grep -v BLAS)
}
for round in $(seq "$rounds"); do
  for t in 1 2; do
    echo "== round $round, $t thread(s)"
    peer "$t" bench/numpy_matmul.py
    UOPC_THREADS=$t bazel-bin/bench/tensor_bench --benchmark_filter='Memcpy|TensorAdd|TensorMatmul' 2>/dev/null |
      awk '/^BM_/ {print "uopc", $0}'
    peer "$t" bench/pytorch_gpt_step.py
    UOPC_THREADS=$t bazel-bin/bench/gpt_bench --benchmark_filter='^BM_GptTrainStep(Captured)?/' 2>/dev/null |
      awk '/^BM_/ {print ($1 ~ /Captured/ ? "uopc gpt step, captured:" : "uopc gpt step:"), $2, "ms"}'
  done
done
