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
# (a --checkpoint among the arguments, the last one, is where gpt_generate reads from too)
checkpoint=gpt.safetensors
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --checkpoint) checkpoint="${args[i + 1]:-$checkpoint}" ;;
    --checkpoint=*) checkpoint="${args[i]#--checkpoint=}" ;;
  esac
done
echo "== training a character-level GPT (gpt_train)"
bazel-bin/examples/gpt/gpt_train --checkpoint gpt.safetensors "$@"
echo
echo "== sampling from it (gpt_generate)"
bazel-bin/examples/gpt/gpt_generate --checkpoint "$checkpoint" --prompt "The " --tokens 300 --seed 1
