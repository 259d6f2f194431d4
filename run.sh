#!/usr/bin/env bash
# The main job: installs what is missing, builds, trains a small character-level GPT on a
# text file every Debian machine has (a minute or two on 2 cores), and samples from it.
# Extra arguments go to gpt_train (see bazel-bin/examples/gpt/gpt_train --help).
set -euo pipefail
cd "$(dirname "$0")"
third_party/install_deps.sh
bazel build //examples/... //tools:uopc
bazel-bin/tools/uopc devices
echo
echo "== training a character-level GPT (gpt_train)"
bazel-bin/examples/gpt/gpt_train --checkpoint gpt.safetensors "$@"
echo
echo "== sampling from it (gpt_generate)"
bazel-bin/examples/gpt/gpt_generate --checkpoint gpt.safetensors --prompt "The " --tokens 300 --seed 1
