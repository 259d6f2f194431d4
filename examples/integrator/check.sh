#!/usr/bin/env bash
# Builds and runs this integrator workspace against the uopc checkout two folders up, as a
# user of @uopc would: `bazel build //:hello_uopc`, then the program. Exits 0 when it
# prints its "ok". Run by ../../test.sh; its Bazel server is shut down afterwards.
set -uo pipefail
cd "$(dirname "$0")"
bazel build //:hello_uopc >build.log 2>&1 || { cat build.log; bazel shutdown; exit 1; }
out=$(bazel-bin/hello_uopc 2>&1)
status=$?
echo "$out"
bazel shutdown >/dev/null 2>&1
[ $status -eq 0 ] && [[ "$out" == *": ok" ]]
