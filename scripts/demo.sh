#!/bin/bash
# make demo: two containers and one VM stand-in on vdevd, traffic among them,
# per-port counters, and everything removed at the end (also on failure or ^C).
#
#   scripts/demo.sh BUILD_DIR
#
# Containers are network namespaces joined to vdevd by veth pairs; the VM is
# vdev-vm, a process that holds a tap exactly as QEMU does and answers ARP and
# ping for its address. Traffic stays inside: 198.18.1.0/24, locally
# administered MACs.
set -euo pipefail

build=${1:-build}
vdevd=$build/vdev/vdevd
vm=$build/tools/vdev-vm/vdev-vm
[ "$(id -u)" -eq 0 ] || { echo "demo: needs root (network namespaces, XDP, AF_XDP)" >&2; exit 1; }
for b in "$vdevd" "$vm"; do [ -x "$b" ] || { echo "demo: $b not built" >&2; exit 1; }; done

id=$$
c1=vdemo-c1-$id; c2=vdemo-c2-$id       # namespaces
h1=vdm${id}a; h2=vdm${id}b; tap=vdm${id}t  # host-side devices (<= 15 chars)
work=$(mktemp -d /tmp/vdev-demo.XXXXXX)
vdevd_pid=; vm_pid=

cleanup() {
    set +e
    [ -n "$vdevd_pid" ] && kill -TERM "$vdevd_pid" 2>/dev/null && wait "$vdevd_pid" 2>/dev/null
    [ -n "$vm_pid" ] && kill -TERM "$vm_pid" 2>/dev/null && wait "$vm_pid" 2>/dev/null
    ip netns del "$c1" 2>/dev/null; ip netns del "$c2" 2>/dev/null
    ip link del "$h1" 2>/dev/null; ip link del "$h2" 2>/dev/null; ip link del "$tap" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }

step "two containers: $c1 (198.18.1.1) and $c2 (198.18.1.2)"
n=1
for c in "$c1" "$c2"; do
    h=$([ $n = 1 ] && echo "$h1" || echo "$h2")
    ip netns add "$c"
    ip link add "$h" type veth peer name eth0 netns "$c"
    ip -n "$c" link set eth0 address 02:de:00:00:00:0$n
    ip netns exec "$c" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip -n "$c" addr add 198.18.1.$n/24 dev eth0
    ip -n "$c" link set eth0 up
    ip -n "$c" link set lo up
    sysctl -qw "net.ipv6.conf.$h.disable_ipv6=1"
    ip link set "$h" up
    n=$((n + 1))
done

step "one VM stand-in on tap $tap (198.18.1.100, 02:de:00:00:00:64)"
"$vm" --tap "$tap" --create respond --guest-mac 02:de:00:00:00:64 --ip 198.18.1.100 >"$work/vm.out" 2>"$work/vm.err" &
vm_pid=$!
for _ in $(seq 50); do grep -q ready "$work/vm.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$work/vm.out" || { cat "$work/vm.err" >&2; exit 1; }

step "vdevd --port $h1 --port $h2 --port $tap"
"$vdevd" --no-socket --no-state --port "$h1" --port "$h2" --port "$tap" --stats-json "$work/stats.json" >"$work/vdevd.out" 2>"$work/vdevd.err" &
vdevd_pid=$!
for _ in $(seq 100); do grep -q ready "$work/vdevd.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$work/vdevd.out" || { cat "$work/vdevd.err" >&2; exit 1; }
cat "$work/vdevd.out"

step "container 1 -> container 2: ping"
ip netns exec "$c1" ping -c 5 -i 0.2 198.18.1.2
step "container 2 -> VM: ping"
ip netns exec "$c2" ping -c 5 -i 0.2 198.18.1.100
step "container 1 -> VM: ping, 2000 quick ones"
ip netns exec "$c1" ping -q -c 2000 -i 0.0005 198.18.1.100 | tail -2
step "at the same time: container 2 -> container 1 and container 1 -> VM, 2000 pings each"
ip netns exec "$c2" ping -q -c 2000 -i 0.0005 198.18.1.1 >"$work/ping2.out" &
ping_pid=$!
ip netns exec "$c1" ping -q -c 2000 -i 0.0005 198.18.1.100 | tail -2
wait "$ping_pid" && tail -2 "$work/ping2.out"

step "vdevd per-port counters (SIGUSR1)"
lines=$(wc -l <"$work/vdevd.out")
kill -USR1 "$vdevd_pid"
sleep 0.5
tail -n +"$((lines + 1))" "$work/vdevd.out"

step "stopping vdevd (SIGTERM): XDP programs detached, every frame back in the pool"
kill -TERM "$vdevd_pid"
rc=0; wait "$vdevd_pid" || rc=$?
vdevd_pid=
tail -n 1 "$work/vdevd.out"
echo "vdevd exit status: $rc"
for d in "$h1" "$h2" "$tap"; do
    if ip -d link show "$d" | grep -q "prog/xdp"; then echo "demo: XDP program left on $d" >&2; exit 1; fi
done
echo "no XDP program left on $h1 $h2 $tap"
exit "$rc"
