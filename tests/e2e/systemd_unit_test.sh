#!/bin/bash
# systemd_unit_test.sh UNIT VDEVD: `systemd-analyze verify` on the vdevd unit
# must print nothing and succeed.
#
# verify checks that ExecStart's binary exists, so it runs on a copy of the
# unit whose ExecStart points at the vdevd just built (same arguments). Also
# prints `systemd-analyze security --offline` for information (not asserted).
# Needs no privileges. Exit 77 (skipped) without systemd-analyze.
set -u

unit=${1:?usage: systemd_unit_test.sh UNIT VDEVD}
vdevd=${2:?usage: systemd_unit_test.sh UNIT VDEVD}

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIPPED: systemd-analyze not installed"
  # scripts/run-tests.sh lists every skip with its reason.
  [ -n "${VDEV_SKIP_LOG:-}" ] && echo "systemd_unit_test: systemd-analyze not installed" >>"$VDEV_SKIP_LOG"
  exit 77
fi
[ -r "$unit" ] || { echo "FAIL: no unit file $unit"; exit 1; }
[ -x "$vdevd" ] || { echo "FAIL: vdevd not built: $vdevd"; exit 1; }
vdevd=$(realpath "$vdevd")  # ExecStart= needs an absolute path

tmp=$(mktemp -d /tmp/vdev-unit-test.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

grep -q '^ExecStart=/usr/sbin/vdevd ' "$unit" || {
  echo "FAIL: $unit: expected 'ExecStart=/usr/sbin/vdevd ...'"
  exit 1
}
# The unit's file name is part of what verify checks: keep it.
sed "s|^ExecStart=/usr/sbin/vdevd |ExecStart=$vdevd |" "$unit" > "$tmp/vdevd.service"

out=$(cd "$tmp" && systemd-analyze verify --man=no ./vdevd.service 2>&1)
rc=$?
echo "systemd-analyze verify: exit $rc"
[ -n "$out" ] && printf '%s\n' "$out"
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  echo "FAIL: systemd-analyze verify reported problems (above)"
  exit 1
fi

# What the hardening amounts to, for the log. --offline exists since v250.
(cd "$tmp" && systemd-analyze security --offline=yes ./vdevd.service 2>/dev/null | tail -1) || true

echo "PASS: $unit verifies cleanly"
