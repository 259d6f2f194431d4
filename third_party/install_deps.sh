#!/usr/bin/env bash
# Installs the Debian packages uopc builds with, if any is missing. Idempotent, and silent
# when everything is already there. Called by the README's two commands.
set -euo pipefail
PACKAGES=(
  bazel-bootstrap bazel-platforms bazel-rules-java
  g++ gcc libabsl-dev libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc libgtest-dev libbenchmark-dev libdlpack-dev
  python3-numpy  # the peer of the DLPack test (numpy.from_dlpack)
  iproute2 nftables  # the multi-node tests' network bed (namespaces, a redirecting router)
  libopenblas0-pthread  # the C plugin's optional sgemm (UOPC_C_BLAS=openblas), and the peers' BLAS
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "uopc: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
