#!/usr/bin/env bash
# The GPU check, in two halves, for a GPU machine that has no Bazel and no packages.
#
#   tools/gpu_check.sh bundle     # here: build, and gather what the check runs into gpu_bundle/
#   gpu_bundle/run.sh             # there (repository root): the whole check, in one go
#
# The bundle holds the programs (built with --dynamic_mode=off), the plugins beside them,
# the shared libraries they need that a bare Ubuntu lacks (Abseil, protobuf, gRPC, ...),
# the corpus, and run.sh. run.sh runs each step under a time limit (GPU_CHECK_STEP_S,
# default 240 s), writing its log (gpu_check.log), a summary (summary.txt) and an archive of
# the artifacts below (artifacts.tgz) into $OUT (if set, else /tmp/gpu_check):
#   1. uopc devices, which must list CUDA:0 (else the check stops at once: FAILED);
#   2. the CUDA plugin's tests (conformance on CUDA:0, a tensor program, multi-block and
#      run-time-length kernels, DLPack on CUDA), none of which may skip, and the standalone
#      conformance runner on CUDA:0;
#   3. 20 steps of gpt_train on CPU and on CUDA:0, whose losses must agree within 1e-4, 20
#      in bf16 and in f16 on CUDA:0, and 50 greedy tokens of gpt_generate from the CUDA
#      checkpoint on both, which must agree;
#   4. uopc_device_server serving CUDA:0 to the remote plugin: conformance on REMOTE:0;
#   5. artifacts: nvidia-smi -q, every kernel's CUDA source and the trace of a GPT step on
#      CUDA:0, and compute-sanitizer --tool memcheck of a short run (where the toolkit has it);
#   6. the CUDA benchmarks, and their PyTorch peers (/opt/torch/.venv/bin/python3); the
#      matmuls again in generated code (UOPC_CUDA_KERNELS=0), and the bench GPT's step with
#      each of its steps timed (UOPC_DEBUG=2) into bench_gpt_steps.txt (GPU_CHECK_BENCH=0
#      leaves this step out: the correctness of a change, in half the device time).
# It exits non-zero if any check failed; summary.txt has one line a step and the figures.
# With the device tool:
#   run(command="gpu_bundle/run.sh", carry=["gpu_bundle"], timeout_s=540)
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  local out=gpu_bundle
  local targets=(//tools:uopc //tools:uopc_device_server
                 //tests/backends/conformance:uopc_conformance
                 //examples/gpt:gpt_train //examples/gpt:gpt_generate
                 //tests/backends/cuda:cuda_plugin_test
                 //bench:cuda_bench //backends/c:libuopc_plugin_c.so
                 //backends/cuda:libuopc_plugin_cuda.so //backends/remote:libuopc_plugin_remote.so)
  bazel build --dynamic_mode=off "${targets[@]}" || return 1
  rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
  for f in tools/uopc tools/uopc_device_server tests/backends/conformance/uopc_conformance \
           examples/gpt/gpt_train examples/gpt/gpt_generate \
           tests/backends/cuda/cuda_plugin_test bench/cuda_bench \
           backends/c/libuopc_plugin_c.so backends/cuda/libuopc_plugin_cuda.so \
           backends/remote/libuopc_plugin_remote.so; do
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
  local out="${OUT:-/tmp/gpu_check}" limit="${GPU_CHECK_STEP_S:-240}" failed=0
  mkdir -p "$out"
  local log="$out/gpu_check.log" summary="$out/summary.txt"
  : > "$log"
  : > "$summary"
  say() { echo "== $*" | tee -a "$log"; }
  # step TITLE COMMAND...: runs it under the time limit; its output in the log
  step() {
    local title="$1"; shift
    say "$title"
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@" 2>&1 | tee -a "$log"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ]; then
      echo "PASS  $title ($((SECONDS - t0)) s)" >> "$summary"
    else
      [ "$rc" = 124 ] && echo "TIMED OUT after $limit s" | tee -a "$log"
      echo "FAILED (exit $rc): $*" | tee -a "$log"
      echo "FAIL  $title (exit $rc, $((SECONDS - t0)) s)" >> "$summary"
      failed=1
    fi
    return "$rc"
  }
  fail() { echo "FAILED: $*" | tee -a "$log"; echo "FAIL  $*" >> "$summary"; failed=1; }
  finish() {
    say "gpu check: $([ $failed = 0 ] && echo PASSED || echo FAILED)"
    echo "gpu check: $([ $failed = 0 ] && echo PASSED || echo FAILED)" >> "$summary"
    # the rest in one archive (the device tool brings back 8 files at most)
    local rest
    rest=$(cd "$out" && find . -maxdepth 1 -type f ! -name summary.txt ! -name gpu_check.log \
             ! -name artifacts.tgz -printf '%f\n')
    if [ -n "$rest" ]; then
      (cd "$out" && echo "$rest" | tar czf artifacts.tgz -T - && echo "$rest" | xargs -d '\n' rm -f)
    fi
    cat "$summary"
    return $failed
  }
  command -v nvidia-smi > /dev/null && nvidia-smi -q > "$out/nvidia-smi.txt" 2>&1
  step "devices" "$b/bin/uopc" devices
  if ! grep -q "device CUDA:0 " "$log"; then
    fail "uopc devices lists no CUDA:0: nothing else can be checked"
    finish
    return
  fi
  step "the CUDA plugin's tests" "$b/bin/cuda_plugin_test"
  if awk '/^== the CUDA plugin/ {f = 1; next} /^== / {f = 0} f && /\[  SKIPPED \]/' "$log" | grep -q .; then
    fail "a CUDA plugin test skipped on a machine with CUDA:0"
  fi
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
    fail "the losses of CPU and CUDA:0 differ"
  fi
  # mixed precision on the tensor cores (the supplied bf16 and f16 matmuls)
  for prec in bf16 f16; do
    step "gpt_train --precision $prec on CUDA:0" "$b/bin/gpt_train" "${args[@]}" --precision "$prec" \
      --device CUDA:0 --checkpoint "/tmp/gpu_check_$prec.safetensors"
  done
  # into FILE CMD...: CMD's stdout into FILE (into_all: its stderr too), not the log
  # (commands, not functions: timeout runs them)
  local into=(sh -c 'f=$1; shift; exec "$@" > "$f"' into)
  local into_all=(sh -c 'f=$1; shift; exec "$@" > "$f" 2>&1' into_all)
  local gen=(--checkpoint /tmp/gpu_check_gpu.safetensors --prompt "The " --tokens 50 --temperature 0)
  for dev in CPU CUDA:0; do
    step "gpt_generate on $dev" "${into[@]}" "$out/generate_${dev%%:*}.txt" "$b/bin/gpt_generate" "${gen[@]}" --device "$dev"
  done
  cmp -s "$out/generate_CPU.txt" "$out/generate_CUDA.txt" ||
    fail "gpt_generate's greedy text differs between CPU and CUDA:0 (generate_*.txt)"
  # the device server serving CUDA:0, to the remote plugin
  export UOPC_DEVICE_TOKEN=gpu-check
  timeout -k 5 "$limit" "$b/bin/uopc_device_server" --device CUDA:0 --port 0 > "$out/server.txt" 2>&1 &
  local server=$! address=""
  for _ in $(seq 100); do
    address=$(grep -o '127.0.0.1:[0-9]*' "$out/server.txt" | head -1)
    [ -n "$address" ] && break
    sleep 0.1
  done
  if [ -z "$address" ]; then
    fail "uopc_device_server --device CUDA:0 did not start: $(cat "$out/server.txt")"
  else
    UOPC_REMOTE_DEVICES="$address" step "conformance on REMOTE:0 (a device server serving CUDA:0)" \
      "$b/bin/uopc_conformance" --plugin "$b/bin/libuopc_plugin_remote.so" --device REMOTE:0
  fi
  kill "$server" 2> /dev/null
  # artifacts: every kernel's source and the trace of a GPT step on CUDA:0; memcheck
  UOPC_DEBUG=2 UOPC_TRACE="$out/gpt_step_cuda.trace.json" step "a GPT step on CUDA:0, its kernels and trace" \
    "${into_all[@]}" "$out/kernels_cuda.txt" \
    "$b/bin/gpt_train" "${args[@]}" --steps 2 --device CUDA:0 --checkpoint /tmp/gpu_check_step.safetensors
  local sanitizer=/usr/local/cuda/bin/compute-sanitizer
  if [ -x "$sanitizer" ]; then
    step "compute-sanitizer memcheck of 2 steps on CUDA:0" "${into_all[@]}" "$out/memcheck.txt" \
      "$sanitizer" --tool memcheck --error-exitcode 1 \
      "$b/bin/gpt_train" "${args[@]}" --steps 2 --device CUDA:0 --checkpoint /tmp/gpu_check_san.safetensors
    tail -n 3 "$out/memcheck.txt" | tee -a "$log"
  else
    say "no compute-sanitizer at $sanitizer: memcheck not run"
  fi
  if [ "${GPU_CHECK_BENCH:-1}" = 0 ]; then
    say "GPU_CHECK_BENCH=0: no benchmarks"
    finish
    return
  fi
  step "uopc benchmarks on CUDA:0" "$b/bin/cuda_bench" --benchmark_min_time=1
  if awk '/^== uopc benchmarks/ {f = 1; next} /^== / {f = 0} f && /ERROR OCCURRED/' "$log" | grep -q .; then
    fail "a uopc benchmark could not run (ERROR OCCURRED, in the log)"
  fi
  UOPC_CUDA_KERNELS=0 step "uopc matmuls on CUDA:0 in generated code (no supplied kernels)" \
    "$b/bin/cuda_bench" --benchmark_min_time=0.5 --benchmark_filter=Matmul
  UOPC_DEBUG=2 step "the bench GPT step on CUDA:0, each step timed" "${into_all[@]}" \
    "$out/bench_gpt_steps.txt" "$b/bin/cuda_bench" --benchmark_min_time=0 --benchmark_filter=GptTrainStep
  if [ -x /opt/torch/.venv/bin/python3 ]; then
    step "PyTorch peers" /opt/torch/.venv/bin/python3 "$b/pytorch_cuda_peers.py"
  fi
  { echo; echo "figures (uopc, then the peers):"
    awk '/^== uopc (benchmarks|matmuls)/ {print; f = 1; next} /^== / {f = 0} f && /^BM_|^[A-Z][A-Za-z]*\// ' "$log"
    awk '/^== PyTorch peers/ {f = 1; next} /^== / {f = 0} f' "$log"; } >> "$summary"
  finish
}

case "${1:-}" in
  bundle) bundle ;;
  run) run ;;
  *) sed -n '2,26p' "$0"; exit 2 ;;
esac
