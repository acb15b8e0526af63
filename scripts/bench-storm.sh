#!/bin/bash
# bench-storm.sh [--build DIR] [--runs N] [--seconds S]
#
# What one guest's broadcast storm costs the others. Three containers on one
# switch: A sends one TCP stream to B (iperf3) while F floods broadcast
# frames as fast as one thread of its can (tests/e2e/l2_probe.py flood, a
# packet socket). The same topology with the Linux bridge, with vdevd at its
# defaults (storm control: 10000 broadcast frames/s a port) and with vdevd
# without storm control (--storm-bcast 0), alternating, N runs each; each
# run measures the stream without the flood and then with it. Prints each
# run, the medians, and for each switch the stream's rate under the flood as
# a share of its rate without.
#
# Needs root, iperf3, python3 and a built vdevd/vdevctl (default: ./build).
# Uses 198.18.98.0/24 in namespaces of its own; removes them on exit.
set -u

build=./build runs=3 secs=5
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-storm.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
probe=$here/../tests/e2e/l2_probe.py
vdevd=$build/daemon/vdevd vdevctl=$build/tools/vdevctl/vdevctl
[ "$(id -u)" -eq 0 ] || { echo "bench-storm.sh: needs root" >&2; exit 1; }
command -v iperf3 >/dev/null || { echo "bench-storm.sh: needs iperf3" >&2; exit 1; }
[ -x "$vdevd" ] && [ -x "$vdevctl" ] || { echo "bench-storm.sh: no vdevd/vdevctl in $build" >&2; exit 1; }

t=bs$(printf '%04x' $(($$ % 65536)))
h=$t-h ca=$t-a cb=$t-b cf=$t-f
dir=$(mktemp -d /tmp/vdev-bench-storm.XXXXXX)
pids=()
teardown() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  pids=()
  for n in "$ca" "$cb" "$cf" "$h"; do ip netns del "$n" 2>/dev/null; done
}
trap 'teardown; rm -rf "$dir"' EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

setup_ns() {
  for n in "$h" "$ca" "$cb" "$cf"; do ip netns add "$n"; ip -n "$n" link set lo up; done
}

setup_ctrs() {
  local i=1 c
  for c in "$ca" "$cb" "$cf"; do
    ip -n "$c" link set eth0 up
    ip -n "$c" addr add 198.18.98.$i/24 dev eth0
    i=$((i + 1))
  done
}

with_bridge() {
  local c i=0
  ip -n "$h" link add br0 type bridge
  ip -n "$h" link set br0 up
  for c in "$ca" "$cb" "$cf"; do
    ip -n "$h" link add p$i type veth peer name eth0 netns "$c"
    ip -n "$h" link set p$i master br0 up
    i=$((i + 1))
  done
  setup_ctrs
}

# vdevd with extra flags ($@), its ports created as vdev-cni does.
with_vdevd() {
  local c i=0
  ip netns exec "$h" "$vdevd" --socket "$dir/s.sock" --no-state "$@" >"$dir/vdevd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do grep -q "vdevd: ready" "$dir/vdevd.log" && break; sleep 0.05; done
  grep -q "vdevd: ready" "$dir/vdevd.log" || { echo "vdevd did not start: $(cat "$dir/vdevd.log")" >&2; exit 1; }
  for c in "$ca" "$cb" "$cf"; do
    ip netns exec "$h" "$vdevctl" -S "$dir/s.sock" port add p$i type veth create netns "$c" peer eth0 >/dev/null
    i=$((i + 1))
  done
  setup_ctrs
}

# One TCP stream A -> B for $secs seconds; prints Gbit/s.
tcp() {
  local out
  ip netns exec "$cb" iperf3 -s -1 -D -p 5398 -I "$dir/srv.pid" >/dev/null 2>&1
  for _ in $(seq 100); do ip netns exec "$cb" ss -ltn | grep -q ":5398 " && break; sleep 0.05; done
  out=$(timeout $((secs + 20)) ip netns exec "$ca" iperf3 -c 198.18.98.2 -p 5398 -t "$secs" -J 2>/dev/null)
  echo "$out" | json "round(d['end']['sum_received']['bits_per_second']/1e9, 2)" 2>/dev/null || echo 0
  [ -f "$dir/srv.pid" ] && kill "$(cat "$dir/srv.pid")" 2>/dev/null
  rm -f "$dir/srv.pid"
}

# The same with F flooding from a second before until after; prints
# "Gbit/s frames-flooded".
tcp_under_flood() {
  local g n
  ip netns exec "$cf" python3 "$probe" flood eth0 storm $((secs + 3)) >"$dir/flood.out" &
  local fp=$!
  sleep 1
  g=$(tcp)
  wait "$fp"
  n=$(cat "$dir/flood.out" 2>/dev/null)
  echo "$g ${n:-0}"
}

median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

declare -A res=()
duts="bridge vdevd vdevd-nostorm"
echo "== one TCP stream A -> B, alone and while F floods broadcast; $runs runs of $secs s"
for r in $(seq "$runs"); do
  for dut in $duts; do
    setup_ns
    case $dut in
      bridge) with_bridge ;;
      vdevd) with_vdevd ;;
      vdevd-nostorm) with_vdevd --storm-bcast 0 ;;
    esac
    ip netns exec "$ca" ping -c 2 -W 2 -i 0.2 198.18.98.2 >/dev/null 2>&1
    alone=$(tcp)
    set -- $(tcp_under_flood)
    flood=$1 sent=$2
    extra=""
    if [ "$dut" != bridge ]; then
      drops=$(ip netns exec "$h" "$vdevctl" -S "$dir/s.sock" -j stats 2>/dev/null |
              json "sum(p['drops'].get('storm_bcast', 0) for p in d['ports'])" 2>/dev/null)
      extra=", storm_bcast drops ${drops:-?}"
    fi
    echo "run $r $dut: alone $alone Gbit/s, under the flood $flood Gbit/s ($sent frames flooded$extra)"
    res[$dut-alone]="${res[$dut-alone]:-} $alone"
    res[$dut-flood]="${res[$dut-flood]:-} $flood"
    teardown
  done
done
for dut in $duts; do
  a=$(median ${res[$dut-alone]}) f=$(median ${res[$dut-flood]})
  share=$(python3 -c "print(round($f/$a, 2) if $a > 0 else 'n/a')")
  echo "$dut: alone $a Gbit/s, under the flood $f Gbit/s, share kept $share"
done
