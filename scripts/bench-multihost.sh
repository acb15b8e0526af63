#!/bin/bash
# bench-multihost.sh [--build DIR] [--uplink vxlan|veth|both] [--runs N] [--seconds S] [VDEV-BENCH OPTION...]
#
# Two hosts as network namespaces, one container on each, the hosts'
# switches joined by a VXLAN uplink over an underlay veth or by a plain veth
# standing in for a NIC; the Linux bridge, vdevd and the kernel's skb
# redirect (tc-redirect) on both hosts, real senders: `vdev-bench
# --two-host` (its --help and docs/performance.md, "Two hosts", say what it
# builds and measures), with this script's options mapped onto its own:
#   --build DIR   the build tree (default ./build): DIR/tools/vdev-bench/vdev-bench
#                 with --vdevd DIR/daemon/vdevd --vdevctl DIR/tools/vdevctl/vdevctl
#   --uplink U    --uplink U (default both)
#   --runs N      --runs N (default 3)
#   --seconds S   --duration S (default 5)
# Any other argument goes to vdev-bench as it is (--json, --datapath LIST, ...).
# Needs root and iperf3.
set -u

build=./build uplinks=both runs=3 secs=5
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build|--uplink|--runs|--seconds)
      [ $# -ge 2 ] || { echo "bench-multihost.sh: $1 needs a value (--help)" >&2; exit 2; }
      case $1 in
        --build) build=$2 ;;
        --uplink) uplinks=$2 ;;
        --runs) runs=$2 ;;
        --seconds) secs=$2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) extra+=("$1"); shift ;;
  esac
done
bench=$build/tools/vdev-bench/vdev-bench
[ -x "$bench" ] || { echo "bench-multihost.sh: no vdev-bench in $build (build it: cmake --build $build)" >&2; exit 1; }
exec "$bench" --two-host --uplink "$uplinks" --runs "$runs" --duration "$secs" \
  --vdevd "$build/daemon/vdevd" --vdevctl "$build/tools/vdevctl/vdevctl" ${extra[@]+"${extra[@]}"}
