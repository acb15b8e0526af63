# check_lib.sh: what the e2e shell tests that count their checks share
# (package_test.sh, systemd_boot_test.sh, containerd_test.sh,
# tests/qemu/libvirt_test.sh). Sourced, not run:
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

# stopped WHAT PID LOG: sends SIGTERM to PID (a child of this shell) and
# waits for it: ok when it exits 0, else a failure with LOG's last lines.
stopped() {
  local rc
  kill -TERM "$2" && wait "$2"
  rc=$?
  [ $rc -eq 0 ] && ok "$1 stopped cleanly" || fail "$1 exited $rc: $(tail -5 "$3")"
}

# vdevd_stopped PID LOG NETNS: vdevd (PID, writing LOG) stopped cleanly,
# and its network namespace holds nothing but lo afterwards: no device of
# the test's and none of vdevd's own (its punt pair) was left behind.
vdevd_stopped() {
  local left
  stopped vdevd "$1" "$2"
  left=$(ip -n "$3" -o link show | grep -v ': lo:')
  [ -z "$left" ] && ok "no device left in vdevd's namespace" || fail "devices left: $left"
}

# json EXPR: EXPR (Python, over the JSON document on stdin as d) printed.
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# A test that runs a daemon in a private mount namespace mounts its own
# directories over the daemon's fixed paths; a path missing on the host must
# exist as a mount point. make_mountpoint PATH makes what is missing of PATH
# and records it; remove_mountpoints (the test's cleanup) removes what was
# made, deepest first, and only while empty.
made_mountpoints=()
make_mountpoint() {
  local p=$1 missing=()
  while [ ! -e "$p" ]; do missing=("$p" "${missing[@]}"); p=$(dirname "$p"); done
  for p in "${missing[@]}"; do mkdir "$p" && made_mountpoints+=("$p") || return 1; done
}
remove_mountpoints() {
  local i
  for ((i = ${#made_mountpoints[@]} - 1; i >= 0; i--)); do rmdir "${made_mountpoints[i]}"; done
  made_mountpoints=()
}
