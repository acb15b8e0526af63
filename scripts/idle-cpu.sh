#!/bin/sh
# The CPU vdevd uses while idle: three ports attached (veth pairs vdevd
# creates, their peers in namespaces of their own with IPv6 off, so nothing
# is sent), no traffic. Prints the share of one core vdevd's process used
# (user + system time from /proc/PID/stat) over SECONDS (default 30; the
# kernel counts in 10 ms ticks) after a 2 s settle:
#
#   scripts/idle-cpu.sh BUILD_DIR [SECONDS]
#
# The "idle, three ports" figure (README Performance; docs/performance.md,
# "Scale: 250 ports"); scripts/scale-ports.sh
# measures it (and more) for any number of ports. Needs root; hold the shared
# lock on a shared machine (flock /tmp/vdev-e2e.lock ...).
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [SECONDS]" >&2
    exit 2
fi
exec "$(dirname "$0")/scale-ports.sh" "$1" 3 auto "${2:-30}"
