#!/bin/sh
# Runs one step of `make check` and records how long it took:
#
#   scripts/timed.sh LOG STEP COMMAND [ARGS...]
#
# Appends "STEP<TAB>SECONDS<TAB>EXIT STATUS" to LOG and prints the same as a
# line "== STEP: N s (exit S)"; exits with COMMAND's status. `make check`
# ends with scripts/check-summary.sh, which prints LOG as a table.
set -u
if [ $# -lt 3 ]; then
    echo "usage: $0 LOG STEP COMMAND [ARGS...]" >&2
    exit 2
fi
log=$1
step=$2
shift 2
start=$(date +%s)
"$@"
rc=$?
secs=$(($(date +%s) - start))
mkdir -p "$(dirname "$log")"
printf '%s\t%s\t%s\n' "$step" "$secs" "$rc" >>"$log"
echo "== $step: $secs s (exit $rc)"
exit "$rc"
