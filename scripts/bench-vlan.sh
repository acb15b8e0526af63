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

. "$(dirname "$0")/bench-lib.sh" "$@"
t=bv$(printf '%04x' $(($$ % 65536)))
ctrs=("$t-a" "$t-b") subnet=198.18.97
port_opts=()
bench_init

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
report_medians $duts
