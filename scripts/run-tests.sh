#!/bin/sh
# Runs ctest in BUILD_DIR and ends with a summary of every skipped test and
# why, so that a skip is never read as a pass:
#
#   scripts/run-tests.sh BUILD_DIR [ctest flags...]
#
# Each gtest binary (tests/gtest_skip_main.cpp) and each shell test appends
# its skipped tests with their reasons to $VDEV_SKIP_LOG; ctest's own list
# of entries it reported as skipped (exit 77) is printed beside them.
# With VDEV_FAIL_ON_SKIP=1 (CI: .ci/run) the gtest binaries fail on any
# skipped test, and this script fails when ctest reports any entry skipped,
# so a test that could not run here is a failure, not a quiet pass.
# Exit status: ctest's, or 1 for a skip under VDEV_FAIL_ON_SKIP=1.
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [ctest flags...]" >&2
    exit 2
fi
build=$1
shift
cd "$build" || exit 1

skiplog=$(pwd)/skipped-tests.txt
ctestlog=$(pwd)/ctest-output.txt
rm -f "$skiplog"
VDEV_SKIP_LOG=$skiplog
export VDEV_SKIP_LOG

# ctest's status survives the pipe through a file.
{ ctest "$@"; echo "$?" >"$ctestlog.rc"; } 2>&1 | tee "$ctestlog"
rc=$(cat "$ctestlog.rc")
rm -f "$ctestlog.rc"

# ctest: "  12/40 Test #12: name ....***Skipped   0.01 sec"
entries=$(sed -n 's/^.*Test *#[0-9]*: \([^ ]*\) .*\*\*\*Skipped.*$/\1/p' "$ctestlog")

echo
echo "== skipped tests ($(pwd))"
if [ -z "$entries" ] && [ ! -s "$skiplog" ]; then
    echo "none"
else
    for e in $entries; do echo "ctest entry skipped: $e"; done
    [ -s "$skiplog" ] && sed 's/^/  /' "$skiplog"
fi

if [ "${VDEV_FAIL_ON_SKIP:-}" = 1 ] && { [ -n "$entries" ] || [ -s "$skiplog" ]; }; then
    echo "run-tests: VDEV_FAIL_ON_SKIP=1 and tests were skipped (above): failing" >&2
    [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
