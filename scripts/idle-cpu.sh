#!/bin/sh
# The CPU vdevd uses while idle: three ports attached (veth pairs whose peers
# sit in namespaces of their own, IPv6 off so nothing is sent), no traffic.
# Prints the share of one core vdevd's process used (user + system time from
# /proc/PID/stat) over SECONDS (default 30; the kernel counts in 10 ms ticks) after a 2 s settle:
#
#   scripts/idle-cpu.sh BUILD_DIR [SECONDS]
#
# The README's "Idle with three ports attached" figure. Needs root; hold the
# shared lock on a shared machine (flock /tmp/vdev-e2e.lock ...). Everything
# it creates (namespaces vtidle<pid>-N, their veths) is removed at exit.
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [SECONDS]" >&2
    exit 2
fi
build=$1
secs=${2:-30}
vdevd="$build/daemon/vdevd"
[ -x "$vdevd" ] || { echo "idle-cpu: $vdevd not found (cmake --build $build --target vdevd)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "idle-cpu: needs root" >&2; exit 1; }

tag="vti$$"
dir=$(mktemp -d /tmp/vdev-idle.XXXXXX)
pid=""
cleanup() {
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    for i in 1 2 3; do
        ip link del "${tag}h$i" 2>/dev/null || true
        ip netns del "${tag}n$i" 2>/dev/null || true
    done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

ports=""
for i in 1 2 3; do
    ns="${tag}n$i"
    ip netns add "$ns"
    ip link add "${tag}h$i" type veth peer name "${tag}p$i"
    ip link set "${tag}p$i" netns "$ns"
    if [ -e /proc/sys/net/ipv6 ]; then
        sysctl -q -w "net.ipv6.conf.${tag}h$i.disable_ipv6=1"
        ip netns exec "$ns" sysctl -q -w "net.ipv6.conf.${tag}p$i.disable_ipv6=1"
    fi
    ip link set "${tag}h$i" up
    ip -n "$ns" link set "${tag}p$i" up
    ports="$ports --port ${tag}h$i"
done

# shellcheck disable=SC2086
"$vdevd" $ports --stats-json "$dir/stats.json" >"$dir/out" 2>"$dir/err" &
pid=$!
i=0
until grep -q '^vdevd: ready' "$dir/out" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
        echo "idle-cpu: vdevd did not start:" >&2
        cat "$dir/out" "$dir/err" >&2
        exit 1
    fi
    sleep 0.05
done
sleep 2

ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
s0=$(date +%s.%N)
sleep "$secs"
t1=$(ticks)
s1=$(date +%s.%N)
awk -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" 'BEGIN {
    cpu = (t1 - t0) / hz; wall = s1 - s0;
    printf "idle-cpu: vdevd with 3 ports, no traffic: %.2f s CPU in %.1f s = %.2f%% of a core\n", cpu, wall, 100 * cpu / wall
}'
