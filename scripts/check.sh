#!/bin/sh
# The steps of `make check` (after scripts/install-deps.sh), each timed:
#
#   scripts/check.sh BUILD JOBS [CMAKE_ARGS...]
#
# Every test entry runs once. The Makefile's targets say how each tree is
# built and what it runs; this script orders them:
#   1. build-asan    `make asan-build`: the ASan+UBSan tree, all of it (both
#                    cores);
#   2. test-asan     `make asan-test`: every unit and e2e entry but those
#                    labelled release -- while, at the lowest CPU priority
#                    (nice 19), behind it
#      build-normal  `make release-build` (vdevd, the tools, the fuzz targets,
#                    the guest tests: what step 3 runs) compiles: the e2e
#                    entries mostly wait on namespaces, timers and other
#                    processes, a nice-19 compiler takes only the CPU they
#                    leave, and their deadlines hold on a loaded 2-core
#                    machine;
#   3. test-normal   `make release-test`: the entries labelled release (the
#                    package, the benchmark smoke runs, the TCG guests) and
#                    the fuzz entries, in the normal tree -- while, at nice 10
#                    behind it,
#      build-tsan    `make tsan-build` and
#      test-tsan     `make tsan-test`: the two concurrency tests under TSan
#                    (about 40 s together; before test-normal they were on
#                    the critical path).
# Each step's seconds go to BUILD/check-times.tsv (scripts/timed.sh), with
# the wall time of the whole last (steps 2's and 3's overlap); the end, pass or
# fail, is scripts/check-summary.sh.
# Exit status: 0 when every step passed, else 1.
set -u
[ $# -ge 2 ] || { echo "usage: $0 BUILD JOBS [CMAKE_ARGS...]" >&2; exit 2; }
build=$1
jobs=$2
shift 2
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$build"
times=$build/check-times.tsv
rm -f "$times"
start=$(date +%s)
cmake_args=$*
# step NAME TARGET: `make TARGET` with this run's tree, jobs and CMake
# arguments, timed as NAME; at the CPU priority $nice (inherited by the
# compilers make starts).
nice=0
step() {
    nice -n "$nice" ./scripts/timed.sh "$times" "$1" \
        make --no-print-directory "$2" BUILD="$build" JOBS="$jobs" CMAKE_ARGS="$cmake_args"
}

run_steps() {
    step build-asan asan-build || return 1

    # The two other trees, behind the ASan tests: their output goes to a log
    # that is printed only if they fail.
    bglog=$build/check-background-build.log
    (
        nice=19
        step build-normal release-build
    ) >"$bglog" 2>&1 </dev/null &
    bg=$!
    step test-asan asan-test
    asan_rc=$?
    echo "== waiting for the normal build (log: $bglog)"
    wait "$bg"
    bg_rc=$?
    grep '^== build-' "$bglog"
    if [ "$bg_rc" -ne 0 ]; then
        cat "$bglog"
        return 1
    fi
    [ "$asan_rc" -eq 0 ] || return 1

    # The TSan subset (two entries, ~40 s to build and run) beside the
    # normal tests rather than before them: off the critical path.
    tsanlog=$build/check-tsan.log
    (
        nice=10
        step build-tsan tsan-build && step test-tsan tsan-test
    ) >"$tsanlog" 2>&1 </dev/null &
    tsan=$!
    step test-normal release-test
    normal_rc=$?
    wait "$tsan"
    tsan_rc=$?
    echo "== the TSan build and its tests (log: $tsanlog)"
    grep -E '^== (build|test)-tsan' "$tsanlog"
    [ "$tsan_rc" -eq 0 ] || { cat "$tsanlog"; return 1; }
    return "$normal_rc"
}

run_steps
rc=$?
printf 'wall\t%s\t%s\n' "$(($(date +%s) - start))" "$rc" >>"$times"
./scripts/check-summary.sh "$times" "$build" "$build-asan" "$build-tsan"
[ "$rc" -eq 0 ] || exit 1
exit 0
