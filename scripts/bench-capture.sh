#!/bin/bash
# bench-capture.sh [--build DIR] [--runs N] [--seconds S]
#
# What a capture costs TCP between two containers: one stream A -> B
# (iperf3) through the Linux bridge, the bridge with tcpdump writing A's
# port to a file, vdevd (kernel fast path), vdevd with `vdevctl capture`
# writing A's port to a file (the fast path's programs copy A's frames),
# and vdevd with --no-fast-path (vdevd's own path), alternating, N runs
# each. Prints each run (with the frames the
# capture wrote and missed) and the medians, each as a share of the
# bridge's.
#
# Needs root, iperf3, tcpdump, python3 and a built vdevd/vdevctl (default:
# ./build). Uses 198.18.96.0/24 in namespaces of its own; removes them on exit.
set -u

. "$(dirname "$0")/bench-lib.sh" "$@"
t=bc$(printf '%04x' $(($$ % 65536)))
ctrs=("$t-a" "$t-b") subnet=198.18.96
port_opts=()
bench_init
command -v tcpdump >/dev/null || { echo "bench-capture.sh: needs tcpdump" >&2; exit 1; }

declare -A res=()
duts="bridge bridge-tcpdump vdevd vdevd-capture vdevd-own"
echo "== one TCP stream A -> B; $runs runs of $secs s"
for r in $(seq "$runs"); do
  for dut in $duts; do
    setup_ns
    case $dut in
      bridge*) with_bridge ;;
      vdevd-own) with_vdevd --no-fast-path ;;
      vdevd*) with_vdevd ;;
    esac
    ip netns exec "${ctrs[0]}" ping -c 2 -W 2 -i 0.2 "$subnet.2" >/dev/null 2>&1
    extra=""
    case $dut in
      bridge-tcpdump)
        ip netns exec "$h" tcpdump -i p0 -w "$dir/cap.pcap" -s 65535 >/dev/null 2>"$dir/cap.log" &
        pids+=($!) ;;
      vdevd-capture)
        ip netns exec "$h" "$vdevctl" -S "$dir/s.sock" capture p0 -w "$dir/cap.pcapng" 2>"$dir/cap.log" &
        pids+=($!) ;;
    esac
    [ -n "${dut##*-tcpdump}" ] && [ -n "${dut##*-capture}" ] || sleep 1
    g=$(tcp)
    case $dut in
      bridge-tcpdump|vdevd-capture)
        kill -INT "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null; unset 'pids[-1]'
        extra=" ($(grep -E "packets (captured|dropped by kernel)|frames written" "$dir/cap.log" | tr '\n' ' ' | sed 's/vdevctl: //; s/ *$//'))" ;;
    esac
    echo "run $r $dut: $g Gbit/s$extra"
    res[$dut]="${res[$dut]:-} $g"
    rm -f "$dir"/cap.*
    teardown
  done
done
report_medians $duts
