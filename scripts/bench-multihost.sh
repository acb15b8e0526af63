#!/bin/bash
# bench-multihost.sh [--build DIR] [--uplink vxlan|veth|both] [--runs N] [--seconds S]
#
# Two hosts as network namespaces, one container on each, the hosts' switches
# joined by an uplink: a VXLAN device on each host over an underlay veth (as
# flannel's VXLAN backend joins bridges), or a plain veth standing in for a
# NIC. The same topology once with the Linux bridge on each host and once
# with vdevd (its defaults: the tc hook on every port, the kernel fast path),
# alternating, N runs each; real senders only:
#   TCP   iperf3, one stream, container A -> B and B -> A (Gbit/s);
#   UDP   iperf3 -u, 64-byte payloads, unlimited rate, A -> B: datagrams
#         received per second (Mpps).
# Prints each run and the medians, and vdev's ratio to the bridge. The
# containers keep their default offloads; at the VXLAN uplink both setups
# give them its MTU (1450).
#
# Needs root, iperf3, and a built vdevd/vdevctl (default: ./build). Uses
# 198.18.97.0/24 and 198.19.97.0/24 in namespaces of its own; removes them
# on exit.
set -u

build=./build uplinks=both runs=3 secs=5
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --uplink) uplinks=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-multihost.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[ "$uplinks" = both ] && uplinks="vxlan veth"
vdevd=$build/daemon/vdevd vdevctl=$build/tools/vdevctl/vdevctl
[ "$(id -u)" -eq 0 ] || { echo "bench-multihost.sh: needs root" >&2; exit 1; }
command -v iperf3 >/dev/null || { echo "bench-multihost.sh: needs iperf3" >&2; exit 1; }
[ -x "$vdevd" ] && [ -x "$vdevctl" ] || { echo "bench-multihost.sh: no vdevd/vdevctl in $build" >&2; exit 1; }

t=bm$(printf '%04x' $(($$ % 65536)))
ha=$t-ha hb=$t-hb ca=$t-ca cb=$t-cb
dir=$(mktemp -d /tmp/vdev-bench-mh.XXXXXX)
pids=()
teardown() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  pids=()
  for n in "$ca" "$cb" "$ha" "$hb"; do ip netns del "$n" 2>/dev/null; done
}
trap 'teardown; rm -rf "$dir"' EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# Hosts, underlay, uplink up0 on each; containers' namespaces.
setup_hosts() {
  local uplink=$1
  for n in "$ha" "$hb" "$ca" "$cb"; do ip netns add "$n"; ip -n "$n" link set lo up; done
  if [ "$uplink" = vxlan ]; then
    ip -n "$ha" link add ul0 type veth peer name ul0 netns "$hb"
    ip -n "$ha" addr add 198.19.97.1/24 dev ul0
    ip -n "$hb" addr add 198.19.97.2/24 dev ul0
    ip -n "$ha" link set ul0 up
    ip -n "$hb" link set ul0 up
    ip -n "$ha" link add up0 type vxlan id 42 local 198.19.97.1 remote 198.19.97.2 dstport 4789 dev ul0
    ip -n "$hb" link add up0 type vxlan id 42 local 198.19.97.2 remote 198.19.97.1 dstport 4789 dev ul0
  else
    ip -n "$ha" link add up0 type veth peer name up0 netns "$hb"
  fi
  for h in "$ha" "$hb"; do ip -n "$h" link set up0 up; done
}

# The containers' addresses and MTU, once their eth0 exists.
setup_ctrs() {
  local mtu=$1 i=1
  for c in "$ca" "$cb"; do
    ip -n "$c" link set eth0 mtu "$mtu" up
    ip -n "$c" addr add 198.18.97.$i/24 dev eth0
    i=$((i + 1))
  done
}

with_bridge() {
  local mtu=$1 h c
  for h in "$ha" "$hb"; do
    ip -n "$h" link add br0 type bridge
    ip -n "$h" link set up0 master br0
    ip -n "$h" link set br0 up
  done
  for pair in "$ha $ca" "$hb $cb"; do
    set -- $pair
    ip -n "$1" link add ctr0 mtu "$mtu" type veth peer name eth0 netns "$2"
    ip -n "$1" link set ctr0 master br0 up
  done
  setup_ctrs "$mtu"
}

with_vdevd() {
  local mtu=$1 h s
  for h in "$ha" "$hb"; do
    s=$dir/$h.sock
    ip netns exec "$h" "$vdevd" --port up0 --socket "$s" --no-state >"$dir/$h.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do grep -q "vdevd: ready" "$dir/$h.log" && break; sleep 0.05; done
    grep -q "vdevd: ready" "$dir/$h.log" || { echo "vdevd did not start: $(cat "$dir/$h.log")" >&2; exit 1; }
  done
  ip netns exec "$ha" "$vdevctl" -S "$dir/$ha.sock" port add ctr0 type veth create netns "$ca" peer eth0 mtu "$mtu" >/dev/null
  ip netns exec "$hb" "$vdevctl" -S "$dir/$hb.sock" port add ctr0 type veth create netns "$cb" peer eth0 mtu "$mtu" >/dev/null
  setup_ctrs "$mtu"
}

# iperf3 from container $1 to $2's address; prints the figure.
measure() {
  local from=$1 to_ns=$2 to_ip=$3 what=$4 out
  ip netns exec "$to_ns" iperf3 -s -1 -D -p 5399 -I "$dir/srv.pid" >/dev/null 2>&1
  for _ in $(seq 100); do ip netns exec "$to_ns" ss -ltn | grep -q ":5399 " && break; sleep 0.05; done
  if [ "$what" = tcp ]; then
    out=$(timeout $((secs + 20)) ip netns exec "$from" iperf3 -c "$to_ip" -p 5399 -t "$secs" -J 2>/dev/null)
    echo "$out" | json "round(d['end']['sum_received']['bits_per_second']/1e9, 2)" 2>/dev/null || echo 0
  else
    out=$(timeout $((secs + 20)) ip netns exec "$from" iperf3 -c "$to_ip" -p 5399 -t "$secs" -u -b 0 -l 64 -J 2>/dev/null)
    echo "$out" | json "round((d['end']['sum']['packets']-d['end']['sum']['lost_packets'])/d['end']['sum']['seconds']/1e6, 3)" 2>/dev/null || echo 0
  fi
  [ -f "$dir/srv.pid" ] && kill "$(cat "$dir/srv.pid")" 2>/dev/null
  rm -f "$dir/srv.pid"
}

median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

for uplink in $uplinks; do
  mtu=1500
  [ "$uplink" = vxlan ] && mtu=1450
  declare -A res=()
  echo "== $uplink uplink (containers at MTU $mtu), $runs runs of $secs s"
  for r in $(seq "$runs"); do
    for dut in bridge vdevd; do
      setup_hosts "$uplink"
      "with_$dut" "$mtu"
      ip netns exec "$ca" ping -c 2 -W 2 -i 0.2 198.18.97.2 >/dev/null 2>&1
      ab=$(measure "$ca" "$cb" 198.18.97.2 tcp)
      ba=$(measure "$cb" "$ca" 198.18.97.1 tcp)
      udp=$(measure "$ca" "$cb" 198.18.97.2 udp)
      echo "run $r $dut: tcp A->B $ab Gbit/s, B->A $ba Gbit/s, udp A->B $udp Mpps"
      res[$dut-ab]="${res[$dut-ab]:-} $ab"
      res[$dut-ba]="${res[$dut-ba]:-} $ba"
      res[$dut-udp]="${res[$dut-udp]:-} $udp"
      teardown
    done
  done
  for k in ab ba udp; do
    b=$(median ${res[bridge-$k]}) v=$(median ${res[vdevd-$k]})
    ratio=$(python3 -c "print(round($v/$b, 2) if $b > 0 else 'n/a')")
    case $k in ab) name="tcp A->B (Gbit/s)" ;; ba) name="tcp B->A (Gbit/s)" ;; udp) name="udp A->B (Mpps)" ;; esac
    echo "$uplink $name: bridge $b, vdevd $v, vdevd/bridge $ratio"
  done
  unset res
done
