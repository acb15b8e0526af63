#!/bin/bash
# bench-trunk.sh [--build DIR] [--runs N] [--seconds S]
#
# What a VLAN trunk costs TCP on vdevd's kernel fast path: one stream
# between a trunk's far end in VLAN 10 (a namespace whose eth0 behaves as
# eth0.10: tests/e2e/vlan_tagger.bpf.c, since the kernel may have no 802.1Q
# devices) on a port `trunk 10` and a container on a port `vlan 10` --
# the tag popped on the way to the container, pushed on the way back --
# against the same stream untagged (both ports `vlan 10`), the same vdevd,
# and untagged with the stand-in's programs attached but tagging nothing
# (VID 0: what the stand-in itself costs), alternating, N runs each, both
# directions (iperf3 -R for access -> trunk). Prints each run and the
# medians, each as a share of the untagged.
#
# Needs root, iperf3, clang (the tagger), tc, python3 and a built
# vdevd/vdevctl (default: ./build). Uses 198.18.97.0/24 in namespaces of its
# own; removes them on exit.
set -u

. "$(dirname "$0")/bench-lib.sh" "$@"
t=bt$(printf '%04x' $(($$ % 65536)))
ctrs=("$t-t" "$t-a") subnet=198.18.97
bench_init
command -v clang >/dev/null || { echo "bench-trunk.sh: needs clang" >&2; exit 1; }
for vid in 10 0; do
  clang -O2 -target bpf -I"/usr/include/$(gcc -print-multiarch)" -DVLAN_TAGGER_VID=$vid \
    -c "$here/../tests/e2e/vlan_tagger.bpf.c" -o "$dir/tagger$vid.o" || exit 1
done

declare -A res=()
duts="untagged untagged-shim trunk"
echo "== one TCP stream, trunk namespace <-> access container; $runs runs of $secs s each way; $(uname -r)"
for r in $(seq "$runs"); do
  for dut in $duts; do
    setup_ns
    case $dut in
      untagged*) port_opts=("vlan 10" "vlan 10") vid=0 ;;
      trunk) port_opts=("trunk 10" "vlan 10") vid=10 ;;
    esac
    with_vdevd
    if [ "$dut" != untagged ]; then
      ip netns exec "${ctrs[0]}" tc qdisc add dev eth0 clsact
      ip netns exec "${ctrs[0]}" tc filter add dev eth0 egress bpf da obj "$dir/tagger$vid.o" sec tc/egress
      ip netns exec "${ctrs[0]}" tc filter add dev eth0 ingress bpf da obj "$dir/tagger$vid.o" sec tc/ingress
    fi
    ip netns exec "${ctrs[0]}" ping -c 2 -W 2 -i 0.2 "$subnet.2" >/dev/null 2>&1
    to=$(tcp) back=$(tcp -R)
    fast=$(ip netns exec "$h" "$vdevctl" -S "$dir/s.sock" -j stats |
      json "sum(p['xdp_prog']['fast'] for p in d['ports'])" 2>/dev/null || echo "?")
    echo "run $r $dut: trunk->access $to Gbit/s, access->trunk $back Gbit/s (fast-path skbs: $fast)"
    res[$dut-to]="${res[$dut-to]:-} $to"
    res[$dut-back]="${res[$dut-back]:-} $back"
    teardown
  done
done
for way in to back; do
  u=$(median ${res[untagged-$way]})
  for dut in $duts; do
    m=$(median ${res[$dut-$way]})
    echo "$([ $way = to ] && echo "trunk->access" || echo "access->trunk") $dut: median $m Gbit/s," \
      "$(python3 -c "print(round($m/$u, 3) if $u > 0 else 'n/a')") x untagged"
  done
done
