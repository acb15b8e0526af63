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

. "$(dirname "$0")/bench-lib.sh" "$@"
t=bs$(printf '%04x' $(($$ % 65536)))
ctrs=("$t-a" "$t-b" "$t-f") subnet=198.18.98
port_opts=()
bench_init
probe=$here/../tests/e2e/l2_probe.py
cf=${ctrs[2]}

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
    ip netns exec "${ctrs[0]}" ping -c 2 -W 2 -i 0.2 198.18.98.2 >/dev/null 2>&1
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
