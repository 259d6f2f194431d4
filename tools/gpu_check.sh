#!/usr/bin/env bash
# The GPU check, in two halves, for a GPU machine that has no Bazel and no packages.
#
#   tools/gpu_check.sh bundle     # here: build, and gather what the check runs into gpu_bundle/
#   gpu_bundle/run.sh             # there (repository root): the whole check, in one go
#
# The bundle holds the programs (built with --dynamic_mode=off), both plugins beside them,
# the shared libraries they need that a bare Ubuntu lacks (Abseil, protobuf, gRPC, ...),
# the corpus, and run.sh. run.sh runs, writing everything also to $OUT (if set):
#   1. uopc devices;
#   2. the CUDA plugin's tests (the conformance suite on CUDA:0, a tensor program against the
#      CPU) and the standalone conformance runner on CUDA:0;
#   3. 20 steps of gpt_train on CPU and on CUDA:0, whose losses must agree within 1e-4;
#   4. the CUDA benchmarks, and their PyTorch peers (/opt/torch/.venv/bin/python3).
# It exits non-zero if any check failed. With the device tool:
#   run(command="gpu_bundle/run.sh", carry=["gpu_bundle"], timeout_s=540)
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  local out=gpu_bundle
  local targets=(//tools:uopc //tests/backends/conformance:uopc_conformance
                 //examples/gpt:gpt_train //tests/backends/cuda:cuda_plugin_test
                 //bench:cuda_bench //backends/c:libuopc_plugin_c.so
                 //backends/cuda:libuopc_plugin_cuda.so)
  bazel build --dynamic_mode=off "${targets[@]}" || return 1
  rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
  for f in tools/uopc tests/backends/conformance/uopc_conformance examples/gpt/gpt_train \
           tests/backends/cuda/cuda_plugin_test bench/cuda_bench \
           backends/c/libuopc_plugin_c.so backends/cuda/libuopc_plugin_cuda.so; do
    cp "bazel-bin/$f" "$out/bin/" || return 1
  done
  chmod u+w "$out"/bin/*
  strip --strip-debug "$out"/bin/*  # the bundle travels: 64 MiB at most
  # the libraries a bare machine lacks: all but the C and C++ runtimes
  ldd "$out"/bin/* 2>/dev/null | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
  cp /usr/share/common-licenses/GPL-3 "$out/corpus.txt"
  cp bench/pytorch_cuda_peers.py bench/peer_gpt.py "$out/"
  cp tools/gpu_check.sh "$out/gpu_check.sh"
  printf '#!/usr/bin/env bash\nexec "$(dirname "$0")/gpu_check.sh" run "$@"\n' > "$out/run.sh"
  chmod +x "$out/run.sh"
  du -sh "$out"
}

run() {
  local b
  b="$(cd "$(dirname "$0")" && pwd)"
  export LD_LIBRARY_PATH="$b/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
  export UOPC_CACHE_DIR="${UOPC_CACHE_DIR:-/tmp/uopc-gpu-check-cache}"
  export TEST_SRCDIR="$b/runfiles"  # the plugin test finds the plugins there
  mkdir -p "$b/runfiles/uopc/backends/c" "$b/runfiles/uopc/backends/cuda"
  ln -sf "$b/bin/libuopc_plugin_c.so" "$b/runfiles/uopc/backends/c/"  # links: loaded once
  ln -sf "$b/bin/libuopc_plugin_cuda.so" "$b/runfiles/uopc/backends/cuda/"
  local log="${OUT:-/tmp}/gpu_check.log" failed=0
  say() { echo "== $*" | tee -a "$log"; }
  step() { say "$1"; shift; "$@" 2>&1 | tee -a "$log"; local rc=${PIPESTATUS[0]};
           [ "$rc" = 0 ] || { echo "FAILED (exit $rc): $*" | tee -a "$log"; failed=1; }; }
  : > "$log"
  step "devices" "$b/bin/uopc" devices
  step "the CUDA plugin's tests" "$b/bin/cuda_plugin_test"
  step "conformance on CUDA:0" "$b/bin/uopc_conformance" --plugin "$b/bin/libuopc_plugin_cuda.so" --device CUDA:0
  local args=(--data "$b/corpus.txt" --steps 20 --log-every 1 --layers 2 --dim 64 --seed 1)
  step "gpt_train on CPU" "$b/bin/gpt_train" "${args[@]}" --checkpoint /tmp/gpu_check_cpu.safetensors
  step "gpt_train on CUDA:0" "$b/bin/gpt_train" "${args[@]}" --device CUDA:0 --checkpoint /tmp/gpu_check_gpu.safetensors
  say "losses, CPU against CUDA:0 (within 1e-4, printed to 4 decimals)"
  losses() { awk -v s="== gpt_train on $1" '$0 == s {f = 1; next} /^== / {f = 0} f' "$log" |
             grep -o 'loss [0-9.]*' | awk '{print $2}'; }
  if ! paste <(losses CPU) <(losses CUDA:0) |
       awk '{d = $1 - $2; if (d < 0) d = -d; print; if (NF < 2 || d > 1.5e-4) bad = 1; n++}
            END {exit (bad || n != 20)}' | tee -a "$log"; then
    echo "FAILED: the losses differ" | tee -a "$log"
    failed=1
  fi
  step "uopc benchmarks on CUDA:0" "$b/bin/cuda_bench" --benchmark_min_time=1
  if [ -x /opt/torch/.venv/bin/python3 ]; then
    step "PyTorch peers" /opt/torch/.venv/bin/python3 "$b/pytorch_cuda_peers.py"
  fi
  say "gpu check: $([ $failed = 0 ] && echo PASSED || echo FAILED)"
  return $failed
}

case "${1:-}" in
  bundle) bundle ;;
  run) run ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
esac
