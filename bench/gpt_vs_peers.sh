#!/usr/bin/env bash
# The bench GPT's training step (4 layers, dim 128, batch 16 x 64, f32, AdamW) in uopc and in
# each framework a user would pick instead, alternating in one run (issue 30's figures), at 1
# and 2 threads: PyTorch from PyPI eager and torch.compile (Inductor), JAX (XLA, the whole
# step jitted) and tinygrad (TinyJit; slow, so once a thread count, and not at all with
# --no-tinygrad). Each peer runs with its threads set to the count, as its users set them.
#   bench/gpt_vs_peers.sh [ROUNDS] [--no-tinygrad]   # default 2 rounds; nothing else running
# The peers live in the benchmarks' own venv (bench/install_peers.sh installs PyTorch, JAX
# and tinygrad from PyPI), never uopc's or its tests'. The CPU (lscpu) is printed first.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=2 tinygrad=1
for a in "$@"; do
  case "$a" in
    --no-tinygrad) tinygrad=0 ;;
    *) rounds="$a" ;;
  esac
done
bash third_party/install_deps.sh
python="$(bench/install_peers.sh)"
bazel build -c opt //bench:gpt_bench >/dev/null 2>&1
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
# (PIN, if set, runs the peer under it: taskset for a peer that one-thread flags do not hold)
peer() { OMP_NUM_THREADS=$1 MKL_NUM_THREADS=$1 NUM_CPU_THREADS=$1 ${PIN:-} "$python" "${@:2}" \
         2>/dev/null | grep -v '^BLAS'; }
# (uopc's step building its graph, and run from its captured plan, as gpt_train runs it)
uopc() { UOPC_THREADS=$1 bazel-bin/bench/gpt_bench --benchmark_filter='^BM_GptTrainStep(Captured)?/' 2>/dev/null |
         awk '/^BM_/ {print ($1 ~ /Captured/ ? "uopc, captured:" : "uopc:"), $2, "ms/step"}'; }
for round in $(seq "$rounds"); do
  for t in 1 2; do
    echo "== round $round, $t thread(s)"
    uopc "$t"
    peer "$t" bench/pytorch_gpt_step.py
    uopc "$t"
    peer "$t" bench/pytorch_gpt_step.py --compile
    uopc "$t"
    if [ "$t" = 1 ]; then
      # XLA's one-thread switches leave it running on about 1.5 cores (user time 24.9 s in
      # 17.0 s of wall on a 2-core AMD EPYC): one core is one core only when pinned
      PIN="taskset -c 0" peer 1 bench/jax_gpt_step.py --threads 1 | sed 's/1 thread:/1 thread, pinned to one core:/'
    else
      peer "$t" bench/jax_gpt_step.py --threads 0
    fi
    if [ "$tinygrad" = 1 ] && [ "$round" = 1 ]; then
      uopc "$t"
      peer "$t" bench/tinygrad_gpt_step.py
    fi
  done
done
