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
#
# It also writes BUILD_DIR/test-times.tsv (entry, result, seconds: every
# entry ctest ran, from ctest's own timing) and ends with one line of the
# time the entries took, naming each entry over its budget in
# tests/time-budget.tsv (a column for the normal build, one for the ASan
# build): a test that grows shows up there, though it is never a failure --
# the machine's load sets how long a test takes, not the test.
# scripts/test-times.sh turns those files into tests/e2e/README.md's table.
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [ctest flags...]" >&2
    exit 2
fi
build=$1
shift
srcdir=$(cd "$(dirname "$0")/.." && pwd)
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

# ctest: "  3/50 Test  #3: name ......   Passed   12.34 sec" (or ***Failed,
# ***Skipped, ***Timeout, with "Exception: ..." before the time on a crash).
times=$(pwd)/test-times.tsv
sed -n 's/^.*Test *#[0-9]*: \([^ ]*\) [ .]*\**\([A-Za-z]*\).* \([0-9][0-9.]*\) sec *$/\1\t\2\t\3/p' \
    "$ctestlog" >"$times"
# The build's kind picks the budget column: the ASan build's, or the normal
# one's (make check's TSan entries run in that time or less).
kind=$(sed -n 's/^VDEV_SANITIZE:STRING=\(address\|thread\)$/\1/p' CMakeCache.txt 2>/dev/null)
case $kind in address) kind=asan ;; thread) kind=tsan ;; *) kind=normal ;; esac
awk -F'\t' -v kind="$kind" -v build="$(pwd)" '
    FNR == NR { if ($0 !~ /^#/ && NF >= 3) budget[$1] = (kind == "asan" ? $3 : $2); next }
    { n++; total += $3
      if (($1 in budget) && budget[$1] != "-" && $3 + 0 > budget[$1] + 0)
          over = over sprintf(" %s (%.0f s > %s s)", $1, $3, budget[$1])
      else if (!($1 in budget)) unbudgeted = unbudgeted " " $1 }
    END {
      printf "== test time (%s, %s build): %d entries, %.0f s; over budget:%s\n",
             build, kind, n, total, over == "" ? " none" : over
      if (unbudgeted != "") printf "== no budget in tests/time-budget.tsv for:%s\n", unbudgeted
    }' "$srcdir/tests/time-budget.tsv" "$times" | tee test-times.summary

if [ "${VDEV_FAIL_ON_SKIP:-}" = 1 ] && { [ -n "$entries" ] || [ -s "$skiplog" ]; }; then
    echo "run-tests: VDEV_FAIL_ON_SKIP=1 and tests were skipped (above): failing" >&2
    [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
