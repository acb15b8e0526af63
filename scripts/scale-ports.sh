#!/bin/sh
# What N ports cost vdevd: containers attached one by one as vdev-cni does
# (`vdevctl port add vsN type veth create netns NS`), then
#  - the time of each add (the first and the last ten are printed),
#  - vdevd's open fds and RSS before and after (per port),
#  - a ping from the last container to the first (every port forwards?),
#  - vdevd's CPU while idle with N ports (user + system ticks of
#    /proc/PID/stat over SECONDS, after a 2 s settle),
#  - the pool's accounting (pool.sum == pool.total) from `vdevctl -j stats`.
# Forwarding between two containers while the others are attached and idle,
# against 2 ports and against the bridge, is vdev-bench's:
# `vdev-bench --real --idle-ports 248` (docs/performance.md).
#
#   scripts/scale-ports.sh BUILD_DIR [N] [HOOK] [SECONDS] [-- VDEVD_ARGS...]
#
# N defaults to 250, HOOK (xdp, tc or auto) to auto, SECONDS to 20. HOOK
# "bridge" attaches the same containers to a Linux bridge instead (no
# vdevd: the add times and the ping, for comparison). Needs
# root; hold the shared lock on a shared machine (flock /tmp/vdev-e2e.lock ...).
# Everything it creates (namespaces vs<pid>nN, the veths vdevd made) goes at exit.
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [N] [HOOK] [SECONDS] [-- VDEVD_ARGS...]" >&2
    exit 2
fi
build=$1
n=${2:-250}
hook=${3:-auto}
secs=${4:-20}
shift $(($# < 4 ? $# : 4))
[ "${1:-}" = "--" ] && shift
vdevd="$build/daemon/vdevd"
vdevctl="$build/tools/vdevctl/vdevctl"
[ "$hook" = bridge ] || { [ -x "$vdevd" ] && [ -x "$vdevctl" ]; } || { echo "scale-ports: build vdevd and vdevctl in $build" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "scale-ports: needs root" >&2; exit 1; }

tag="vs$$"
dir=$(mktemp -d /tmp/vdev-scale.XXXXXX)
sock="$dir/sock"
pid=""
ctl() { "$vdevctl" -S "$sock" "$@"; }
cleanup() {
    if [ -n "$pid" ]; then
        i=1
        while [ $i -le "$n" ]; do ctl port del "${tag}h$i" >/dev/null 2>&1 || true; i=$((i + 1)); done
        kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    fi
    if [ "$hook" = bridge ]; then ip link del "${tag}br" 2>/dev/null || true; fi
    i=1
    while [ $i -le "$n" ]; do
        ip link del "${tag}h$i" 2>/dev/null || true
        ip netns del "${tag}n$i" 2>/dev/null || true
        i=$((i + 1))
    done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

fds() { ls "/proc/$pid/fd" | wc -l; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
now_us() { echo $(($(date +%s%N) / 1000)); }

if [ "$hook" = bridge ]; then
    # IPv6 off on the host's devices too: nothing but the ping on the wire.
    ip link add "${tag}br" type bridge stp_state 0
    sysctl -q -w "net.ipv6.conf.${tag}br.disable_ipv6=1"
    ip link set "${tag}br" up
else
    "$vdevd" --socket "$sock" --no-state --default-hook "$hook" --stats-json "$dir/stats.json" "$@" \
        >"$dir/out" 2>"$dir/err" &
    pid=$!
    i=0
    until grep -q '^vdevd: ready' "$dir/out" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
            echo "scale-ports: vdevd did not start:" >&2
            cat "$dir/out" "$dir/err" >&2
            exit 1
        fi
        sleep 0.05
    done
    fd0=$(fds)
    rss0=$(rss)
fi

# One container: vdevd creates its veth (as vdev-cni does), or the same
# veth is made by hand and enslaved to the bridge.
attach() {
    if [ "$hook" = bridge ]; then
        ip link add "${tag}h$1" type veth peer name eth0 netns "${tag}n$1" &&
            sysctl -q -w "net.ipv6.conf.${tag}h$1.disable_ipv6=1" &&
            ip link set "${tag}h$1" master "${tag}br" up && ip -n "${tag}n$1" link set eth0 up
    else
        ctl port add "${tag}h$1" type veth create netns "${tag}n$1"
    fi
}

added=0
i=1
while [ $i -le "$n" ]; do
    ip netns add "${tag}n$i"
    ip netns exec "${tag}n$i" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    t0=$(now_us)
    if ! msg=$(attach $i 2>&1); then
        echo "scale-ports: port $i: $msg"
        break
    fi
    t1=$(now_us)
    added=$i
    if [ $i -le 1 ] || [ $i -gt $((n - 10)) ]; then
        echo "scale-ports: port $i added in $(((t1 - t0) / 1000)) ms"
    fi
    i=$((i + 1))
done
if [ -n "$pid" ]; then
    fd1=$(fds)
    rss1=$(rss)
    echo "scale-ports: hook $hook, $added ports: fds $fd0 -> $fd1, RSS $rss0 -> $rss1 kB"
    if [ "$added" -gt 0 ]; then
        awk -v a="$added" -v f0="$fd0" -v f1="$fd1" -v r0="$rss0" -v r1="$rss1" 'BEGIN {
            printf "scale-ports: per port: %.1f fds, %.0f kB RSS\n", (f1 - f0) / a, (r1 - r0) / a }'
    fi
fi

if [ "$added" -ge 2 ]; then
    ip -n "${tag}n1" addr add 198.18.7.1/24 dev eth0
    ip -n "${tag}n$added" addr add 198.18.7.2/24 dev eth0
    if ip netns exec "${tag}n$added" ping -q -c 3 -i 0.2 -W 2 198.18.7.1 >/dev/null; then
        echo "scale-ports: ping from port $added to port 1: ok"
    else
        echo "scale-ports: ping from port $added to port 1: FAILED"
    fi
fi

if [ "$hook" = bridge ]; then exit 0; fi

sleep 2
hz=$(getconf CLK_TCK)
t0=$(ticks)
s0=$(date +%s.%N)
sleep "$secs"
t1=$(ticks)
s1=$(date +%s.%N)
awk -v n="$added" -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" 'BEGIN {
    cpu = (t1 - t0) / hz; wall = s1 - s0;
    printf "scale-ports: idle with %d ports: %.2f s CPU in %.1f s = %.2f%% of a core\n", n, cpu, wall, 100 * cpu / wall
}'
ctl -j stats | python3 -c '
import json, sys
p = json.load(sys.stdin)["pool"]
print("scale-ports: pool total %d sum %d free %d fill_ring %d" % (p["total"], p["sum"], p["free"], p["fill_ring"]))'
ctl info | sed 's/^/scale-ports: info: /'

i=1
while [ $i -le "$added" ]; do ctl port del "${tag}h$i" >/dev/null; i=$((i + 1)); done
sleep 1
echo "scale-ports: after removing them: fds $(fds), RSS $(rss) kB"
