#!/bin/bash
# Container-to-container kernel TCP (iperf3) through vdevd on netkit ports,
# against vdevd on veth ports and the Linux bridge on veths, in one run:
#
#   scripts/bench-netkit.sh [BUILD] [RUNS] [SECONDS]
#
# Netkit needs Linux 6.7+; on this project's machines only the 6.12 guest
# has it:  scripts/kernel-guest.sh -C BUILD 6.12 -- bash scripts/bench-netkit.sh BUILD
# Each run makes each datapath's topology afresh (two namespaces,
# 198.18.30.1 and .2), streams A -> B for SECONDS (default 4) and tears it
# down; RUNS rounds (default 3) alternate the datapaths. Prints one line
# per run and, per datapath, the median, the spread (min..max) and the
# median's ratio to the bridge's. Under TCG only the ratios mean anything.
set -eu
build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
secs=${3:-4}
vdevd=$build/daemon/vdevd
ctl=$build/tools/vdevctl/vdevctl
for b in "$vdevd" "$ctl"; do [ -x "$b" ] || { echo "bench-netkit: $b not built" >&2; exit 1; }; done
command -v iperf3 >/dev/null || { echo "bench-netkit: no iperf3" >&2; exit 77; }
tag=bnk$$
tmp=$(mktemp -d)
nsa=${tag}a nsb=${tag}b
vpid=''

cleanup() {
  [ -n "$vpid" ] && kill "$vpid" 2>/dev/null && wait "$vpid" 2>/dev/null
  vpid=''
  rm -f "$tmp/state"  # each run's vdevd starts without the last one's ports
  ip netns del "$nsa" 2>/dev/null || true
  ip netns del "$nsb" 2>/dev/null || true
  for d in ${tag}pa ${tag}pb ${tag}br; do ip link del "$d" 2>/dev/null || true; done
}
trap 'cleanup; rm -rf "$tmp"' EXIT

# up DATAPATH: the two containers, addressed, connected by DATAPATH.
up() {
  ip netns add "$nsa"
  ip netns add "$nsb"
  case $1 in
    bridge)
      ip link add ${tag}br type bridge
      ip link set ${tag}br up
      for s in a b; do
        ip link add ${tag}p$s type veth peer name eth0 netns ${tag}$s
        ip link set ${tag}p$s master ${tag}br up
        ip -n ${tag}$s link set eth0 up
      done ;;
    veth | netkit)
      "$vdevd" --socket "$tmp/s" --state "$tmp/state" --fast-path >"$tmp/vdevd.log" 2>&1 &
      vpid=$!
      for _ in $(seq 200); do [ -S "$tmp/s" ] && break; sleep 0.05; done
      for s in a b; do
        "$ctl" -S "$tmp/s" port add ${tag}p$s type "$1" hook tc create netns ${tag}$s peer eth0
      done ;;
  esac
  ip -n "$nsa" addr add 198.18.30.1/24 dev eth0
  ip -n "$nsb" addr add 198.18.30.2/24 dev eth0
  ip netns exec "$nsb" iperf3 -s -1 -D -I "$tmp/iperf.pid" >/dev/null
  # The server listens and A reaches B (ARP learned through the datapath).
  for _ in $(seq 100); do
    ip netns exec "$nsa" ping -c 1 -W 1 198.18.30.2 >/dev/null 2>&1 &&
      ip netns exec "$nsb" ss -Hltn 'sport = :5201' | grep -q 5201 && return 0
    sleep 0.1
  done
  echo "bench-netkit: $1: no path from A to B" >&2
  return 1
}

declare -A got
for r in $(seq "$runs"); do
  for dp in bridge veth netkit; do
    up "$dp"
    gbps=$(ip netns exec "$nsa" iperf3 -c 198.18.30.2 -t "$secs" -J |
      jq '.end.sum_received.bits_per_second / 1e9')
    printf 'run %d %-7s %7.3f Gbit/s\n' "$r" "$dp" "$gbps"
    got[$dp]+="$gbps "
    cleanup
  done
done
echo
printf '%-7s %8s %18s %9s\n' datapath median "spread (min..max)" "/bridge"
bridge_med=$(echo "${got[bridge]}" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
for dp in bridge veth netkit; do
  echo "${got[$dp]}" | tr ' ' '\n' | grep . | sort -g |
    awk -v dp="$dp" -v b="$bridge_med" '{a[NR]=$1} END {
      m = a[int((NR+1)/2)]; printf "%-7s %8.3f %8.3f..%-8.3f %9.2f\n", dp, m, a[1], a[NR], m / b }'
done
