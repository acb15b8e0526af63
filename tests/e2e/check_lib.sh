# check_lib.sh: what the e2e shell tests that count their checks share
# (package_test.sh, systemd_boot_test.sh, containerd_test.sh). Sourced, not run:
#   . "$(dirname "$0")/check_lib.sh"
# Each check prints "ok: WHAT" or "FAIL: WHAT" (with check_t0=$(date +%s)
# set, "ok [N s]: WHAT", the seconds since then); the script ends with
# `exit 1` when $failures is not 0.

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok${check_t0:+ [$(($(date +%s) - check_t0)) s]}: $*"; }
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
die() { fail "$*"; exit 1; }
quiet() { "$@" >/dev/null 2>&1; }
# wait_for SECONDS COMMAND...: COMMAND again every 0.1 s until it succeeds
# (0) or SECONDS have gone by (1).
wait_for() {
  local n=$(($1 * 10))
  shift
  while ! "$@"; do
    n=$((n - 1))
    [ $n -gt 0 ] || return 1
    sleep 0.1
  done
}
