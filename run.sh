#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the most complete demo uopc has.
set -euo pipefail
cd "$(dirname "$0")"
third_party/install_deps.sh
bazel build //examples/... //tools:uopc
bazel-bin/tools/uopc devices
echo
bazel-bin/examples/seed/runtime_trip_count
echo
bazel-bin/examples/seed/symbolic_shapes
echo
echo "== a small MLP forward pass, with its fused kernels (UOPC_DEBUG=2)"
UOPC_DEBUG=2 bazel-bin/examples/mlp/mlp_forward
echo
echo "== uopc simplify examples/seed/index.uir"
bazel-bin/tools/uopc simplify examples/seed/index.uir
