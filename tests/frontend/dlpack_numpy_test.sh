#!/usr/bin/env bash
# numpy as the peer of uopc's DLPack: Debian's python3 with its numpy (third_party/
# install_deps.sh installs python3-numpy) runs dlpack_numpy_test.py against the peer library.
set -euo pipefail
dir="$(dirname "$0")"
export UOPC_PLUGIN_DIRS="$PWD/backends/c"
exec /usr/bin/python3 "$dir/dlpack_numpy_test.py" "$PWD/tests/frontend/libdlpack_numpy_peer.so"
