#!/usr/bin/env bash
# Process replay: the rendered source of every kernel of the bench GPT's training step
# (bench/gpt_bench.cc, one step after the compiling one), in one file, sorted, so that two
# builds' kernels can be diffed. A change that must not change kernels proves it with two
# identical files (the same sha256, printed last).
#   tools/process_replay.sh OUT.txt [BENCH]   # builds //bench:gpt_bench first
# BENCH picks another step of bench/gpt_bench.cc (default BM_GptTrainStep, the f32 step;
# BM_GptTrainStepBf16 is the autocast step, BM_GptTrainStepGpt2Vocabulary GPT-2's vocabulary).
# UOPC_DEBUG=2 prints each kernel's source once; a fresh cache folder keeps old entries out.
# Kernel names (hashes of the IR) are replaced by "k": the sources are compared.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "$1" = --help ]; then
  echo "usage: tools/process_replay.sh OUT.txt [BENCH]  (the bench GPT step's kernel sources, sorted)" >&2
  exit 2
fi
out=$1
bench=${2:-BM_GptTrainStep}
cd "$(dirname "$0")/.."
bazel build -c opt //bench:gpt_bench >&2
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
UOPC_DEBUG=2 UOPC_CACHE_DIR=$cache bazel-bin/bench/gpt_bench --benchmark_min_time=0 \
  --benchmark_filter="^$bench/" \
  2>"$cache/log" >/dev/null
python3 - "$cache/log" "$out" <<'PY'
import re, sys
text = open(sys.argv[1]).read().split("\n")
kernels, cur = [], None
for line in text:
    if re.fullmatch(r"uopc: kernel \d+:", line):
        if cur: kernels.append("\n".join(cur))
        cur = []  # (its number is a hash of this process's: left out)
    elif line.startswith("uopc: ") or re.match(r"step \d+ \(", line):
        if cur: kernels.append("\n".join(cur))
        cur = None
    elif cur is not None:
        cur.append(line)
if cur: kernels.append("\n".join(cur))
# a kernel's name is a hash of its serialized IR, which passes that leave the source as it
# was may still change (a range's kind): the source is what is compared, named "k"
kernels = [re.sub(r"\bk_[0-9a-f]{16}", "k", k).strip() for k in kernels if k]
kernels = sorted(set(kernels))
open(sys.argv[2], "w").write("\n".join(kernels) + "\n")
print(f"{len(kernels)} kernels", file=sys.stderr)
PY
sha256sum "$out"
