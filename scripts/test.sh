#!/usr/bin/env bash
# The test command: setup, build, then the whole suite through CTest.
#
#   scripts/test.sh [CTEST ARGUMENTS...]     e.g. scripts/test.sh -R runtime
#
# The suite: kopt-lit (the lit + FileCheck tests of test/, which assemble the PTX
# they produce with ptxas), the GoogleTest unit tests of test/unit (runtime and
# schedules), kopt-run's command-line tests against a fake CUDA driver, and the
# bench tests (suite compile-only mode, sweep runner, a random sample of the
# schedule space through kopt-opt and ptxas, the heuristic against the recorded
# H200 sweeps). Exit code 0
# when every test passed; non-zero when setup, the build or any test failed, or
# when no test ran. Honours the variables of scripts/build.sh (KOPT_BUILD_DIR, ...).
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TAG="test"

case "${1:-}" in -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

t_all=$SECONDS
"$KOPT_ROOT/scripts/build.sh"

build=$(kopt_build_dir)
kopt_log $TAG "ctest --test-dir $build --output-on-failure${*:+ $*}"
t0=$SECONDS
status=0
ctest --test-dir "$build" --output-on-failure --no-tests=error "$@" || status=$?
if [ $status = 0 ]; then
  kopt_log $TAG "all tests passed (tests $(kopt_elapsed $t0), total $(kopt_elapsed $t_all))"
else
  kopt_error $TAG "tests failed (ctest exit code $status; tests $(kopt_elapsed $t0), total $(kopt_elapsed $t_all))"
fi
exit $status
