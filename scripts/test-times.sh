#!/bin/sh
# The timing table of tests/e2e/README.md, made from the files the last
# `make check` wrote -- never copied by hand:
#
#   scripts/test-times.sh [--update] [BUILD]
#
# Reads BUILD/check-times.tsv (scripts/timed.sh: each step's seconds) and
# BUILD/test-times.tsv, BUILD-asan/test-times.tsv, BUILD-tsan/test-times.tsv
# (scripts/run-tests.sh: each entry's seconds), BUILD defaulting to build,
# and prints a Markdown table of every step and entry beside its budget
# (tests/time-budget.tsv). --update writes it into tests/e2e/README.md
# between the lines "<!-- test-times:begin -->" and "<!-- test-times:end -->".
set -eu
update=0
if [ "${1:-}" = --update ]; then update=1; shift; fi
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
for f in "$build/check-times.tsv" "$build/test-times.tsv" "$build-asan/test-times.tsv"; do
    [ -s "$f" ] || { echo "test-times: no $f (run make check first)" >&2; exit 1; }
done
tsan=$build-tsan/test-times.tsv
[ -s "$tsan" ] || tsan=/dev/null

table() {
    echo "| step | seconds |"
    echo "|---|---:|"
    awk -F'\t' '$1 != "wall" { printf "| %s | %d |\n", $1, $2 }
                 $1 == "wall" { printf "| **make check, wall** (steps overlap) | **%d** (%d min %02d s) |\n", $2, $2 / 60, $2 % 60 }' \
        "$build/check-times.tsv"
    echo
    echo "| ctest entry | normal build | budget | ASan+UBSan build | budget | TSan build |"
    echo "|---|---:|---:|---:|---:|---:|"
    # One row per entry: its seconds in each build ("-" where it did not
    # run there), the budgets beside them, the longest first.
    awk -F'\t' '
        FILENAME == ARGV[1] { if ($0 !~ /^#/ && NF >= 3) { bn[$1] = $2; ba[$1] = $3 }; next }
        FILENAME == ARGV[2] { n[$1] = $3; seen[$1] = 1; next }
        FILENAME == ARGV[3] { a[$1] = $3; seen[$1] = 1; next }
        { t[$1] = $3; seen[$1] = 1 }
        END {
          for (e in seen) {
            # "in" before any n[e]: awk creates an element it reads.
            sn = (e in n ? sprintf("%.0f", n[e]) : "-")
            sa = (e in a ? sprintf("%.0f", a[e]) : "-")
            st = (e in t ? sprintf("%.0f", t[e]) : "-")
            m = (e in n ? n[e] : 0) + (e in a ? a[e] : 0) + (e in t ? t[e] : 0)
            printf "%012.1f\t| `%s` | %s | %s | %s | %s | %s |\n", m, e,
                   sn, (e in bn ? bn[e] : ""), sa, (e in ba ? ba[e] : ""), st
          }
        }' "$src/tests/time-budget.tsv" "$build/test-times.tsv" "$build-asan/test-times.tsv" "$tsan" |
        sort -r | cut -f2-
}

if [ "$update" = 0 ]; then
    table
    exit 0
fi
readme=$src/tests/e2e/README.md
grep -q '^<!-- test-times:begin -->$' "$readme" && grep -q '^<!-- test-times:end -->$' "$readme" ||
    { echo "test-times: $readme has no test-times markers" >&2; exit 1; }
tmp=$(mktemp)
table >"$tmp.table"
awk -v table="$tmp.table" '
    /^<!-- test-times:begin -->$/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
    /^<!-- test-times:end -->$/ { skip = 0 }
    !skip { print }' "$readme" >"$tmp"
mv "$tmp" "$readme"
rm -f "$tmp.table"
echo "test-times: $readme updated from $build"
