#!/bin/bash
# bench-vlan.sh [--build DIR] [--runs N] [--seconds S]
#
# What VLANs cost TCP between two containers: one stream A -> B (iperf3)
# through the Linux bridge, vdevd with ports without VLAN settings, vdevd
# with both ports access ports of VLAN 10 (unicast between them on the
# kernel fast path), and the same with --no-fast-path (vdevd's own path,
# the one a trunk's frames take), alternating, N runs each. Prints each run
# and the medians, each as a share of the bridge's.
#
# Needs root, iperf3, python3 and a built vdevd/vdevctl (default: ./build).
# Uses 198.18.97.0/24 in namespaces of its own; removes them on exit.
set -u

build=./build runs=3 secs=5
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-vlan.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
t=bv$(printf '%04x' $(($$ % 65536)))
ctrs=("$t-a" "$t-b") subnet=198.18.97
port_opts=()
. "$(dirname "$0")/bench-lib.sh"

declare -A res=()
duts="bridge vdevd vdevd-vlan vdevd-vlan-own"
echo "== one TCP stream A -> B; $runs runs of $secs s"
for r in $(seq "$runs"); do
  for dut in $duts; do
    setup_ns
    port_opts=()
    case $dut in
      bridge) with_bridge ;;
      vdevd) with_vdevd ;;
      vdevd-vlan) port_opts=("vlan 10" "vlan 10"); with_vdevd ;;
      vdevd-vlan-own) port_opts=("vlan 10" "vlan 10"); with_vdevd --no-fast-path ;;
    esac
    ip netns exec "${ctrs[0]}" ping -c 2 -W 2 -i 0.2 "$subnet.2" >/dev/null 2>&1
    g=$(tcp)
    extra=""
    if [ "$dut" != bridge ]; then
      fast=$(ip netns exec "$h" "$vdevctl" -S "$dir/s.sock" -j stats 2>/dev/null |
             json "sum(p['xdp_prog']['fast'] for p in d['ports'])" 2>/dev/null)
      extra=" (fast-path frames ${fast:-?})"
    fi
    echo "run $r $dut: $g Gbit/s$extra"
    res[$dut]="${res[$dut]:-} $g"
    teardown
  done
done
b=$(median ${res[bridge]})
for dut in $duts; do
  m=$(median ${res[$dut]})
  echo "$dut: median $m Gbit/s, $(python3 -c "print(round($m/$b, 2) if $b > 0 else 'n/a')") x the bridge"
done
