#!/usr/bin/env bash
# Runs every test of uopc: installs what is missing, builds, tests. Extra arguments go to
# `bazel test` (e.g. --config=asan). The last line counts GoogleTest cases:
# "N passed, N failed" (skipped cases, if any, are counted on the line before), and the
# integrator workspace (examples/integrator) and the plugin template
# (examples/plugin_template) as one more each.
set -uo pipefail
cd "$(dirname "$0")"
third_party/install_deps.sh || exit 1
# the independent reference some tests check against (ml_dtypes' bfloat16), in a venv of its own
pyref="$(third_party/install_pyref.sh)" || exit 1
bazel test --keep_going --test_env=UOPC_PYREF_PYTHON="$pyref" //... "$@"
status=$?
# uopc as another workspace's @uopc: examples/integrator builds and runs a Tensor program
# (not under a sanitizer config: it checks the build an integrator writes)
integrator_passed=0 integrator_failed=0
if [ $# -eq 0 ]; then
  if examples/integrator/check.sh; then integrator_passed=1; else integrator_failed=1; status=1; fi
  # a plugin built outside uopc (examples/plugin_template) passes the conformance suite
  log=$(mktemp)
  if examples/plugin_template/check.sh >"$log" 2>&1; then
    echo "plugin template: $(tail -1 "$log")"
    integrator_passed=$((integrator_passed + 1))
  else
    cat "$log"
    integrator_failed=$((integrator_failed + 1)); status=1
  fi
  rm -f "$log"
fi
# Sum the cases of every test.xml (a crashed binary's test.xml counts as one failure).
find -L bazel-testlogs/ -name test.xml -print0 2>/dev/null | xargs -0 -r awk \
  -v extra_passed=$integrator_passed -v extra_failed=$integrator_failed '
  /<testsuite / && match($0, / skipped="[0-9]+"/) { skipped += substr($0, RSTART + 10, RLENGTH - 11) }
  /<testsuites / || (/<testsuite / && !seen[FILENAME]) {
    if (/<testsuites /) seen[FILENAME] = 1
    else if (seen[FILENAME]) next
    t = 0; f = 0; e = 0
    if (match($0, / tests="[0-9]+"/)) t = substr($0, RSTART + 8, RLENGTH - 9)
    if (match($0, / failures="[0-9]+"/)) f = substr($0, RSTART + 11, RLENGTH - 12)
    if (match($0, / errors="[0-9]+"/)) e = substr($0, RSTART + 9, RLENGTH - 10)
    if (match($0, / disabled="[0-9]+"/)) t -= substr($0, RSTART + 11, RLENGTH - 12)
    bad = f + e; if (bad > t) bad = t
    tests += t; failed += bad; seen[FILENAME] = 1
  }
  END {
    tests += extra_passed + extra_failed; failed += extra_failed
    if (skipped) printf "%d skipped (each says why: a GPU test on a machine without one)\n", skipped
    printf "%d passed, %d failed\n", tests - failed - skipped, failed
  }' || echo "0 passed, 1 failed"
exit $status
