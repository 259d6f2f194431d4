#!/usr/bin/env bash
# numpy as the peer of uopc's DLPack: Debian's python3 with its numpy (third_party/
# install_deps.sh installs python3-numpy) runs dlpack_numpy_test.py against the peer library.
set -euo pipefail
dir="$(dirname "$0")"
export UOPC_PLUGIN_DIRS="$PWD/backends/c"
peer="$PWD/tests/frontend/libdlpack_numpy_peer.so"
# under --config=asan or tsan the library needs its sanitizer's runtime first in python3
for runtime in asan tsan; do
  if ldd "$peer" | grep -q "lib$runtime.so"; then
    # (and the C++ runtime, whose exceptions it intercepts)
    export LD_PRELOAD="$(gcc -print-file-name=lib$runtime.so) $(gcc -print-file-name=libstdc++.so)"
    export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"  # (python's own allocations)
  fi
done
exec /usr/bin/python3 "$dir/dlpack_numpy_test.py" "$peer"
