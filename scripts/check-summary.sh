#!/bin/sh
# The end of `make check`: how long each step took and how long each build's
# test entries took, with those over their budget named.
#
#   scripts/check-summary.sh CHECK_TIMES BUILD_DIR...
#
# CHECK_TIMES is what scripts/timed.sh wrote (step, seconds, exit status)
# and, last, scripts/check.sh's row "wall": some steps overlap, so the time
# of the whole is measured apart;
# each BUILD_DIR's test-times.tsv is what scripts/run-tests.sh wrote. The
# budget of the whole is VDEV_CHECK_BUDGET_S (default 1200 s: 20 minutes on
# a 2-core machine); like the entries' budgets it is reported, not enforced:
# the machine's load sets the time, not the code.
set -u
[ $# -ge 1 ] || { echo "usage: $0 CHECK_TIMES BUILD_DIR..." >&2; exit 2; }
times=$1
shift
budget=${VDEV_CHECK_BUDGET_S:-1200}

echo
echo "== make check: steps"
if [ -s "$times" ]; then
    awk -F'\t' '$1 != "wall" { printf "  %-14s %6d s%s\n", $1, $2, ($3 == 0 ? "" : "  (exit " $3 ")") }' "$times"
else
    echo "  (no step finished)"
fi
wall=$(awk -F'\t' '$1 == "wall" { print $2 }' "$times" 2>/dev/null)
if [ -n "$wall" ]; then
    printf '  %-14s %6d s (%d min %02d s, wall; some steps overlap); budget %d s%s\n' "make check" \
        "$wall" $((wall / 60)) $((wall % 60)) "$budget" "$([ "$wall" -gt "$budget" ] && echo ": OVER")"
fi
for b in "$@"; do
    t=$b/test-times.tsv
    [ -s "$t" ] || continue
    [ -s "$b/test-times.summary" ] && cat "$b/test-times.summary"
    echo "== $b: the 5 longest test entries"
    sort -t"$(printf '\t')" -k3,3 -g -r "$t" | head -5 |
        awk -F'\t' '{ printf "  %-36s %7.1f s  %s\n", $1, $3, $2 }'
done
exit 0
