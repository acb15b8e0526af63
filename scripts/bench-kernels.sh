#!/bin/sh
# Container-to-container TCP through vdevd against the Linux bridge, on
# Debian 12's own kernels, each in a QEMU guest (scripts/kernel-guest.sh):
#
#   scripts/bench-kernels.sh [BUILD] [KERNEL...]
#
# BUILD: the build tree (default build; vdevd and vdev-bench built there),
# KERNEL: 6.1, 6.12 or a release test-kernels.sh unpacked (default: 6.1
# 6.12). In each guest it runs
#   vdev-bench --real --only tcp-a-b,tcp-b-a --datapath bridge,vdevd
#              --runs 3 --duration 4 --mtu 1500
# (kernel TCP between two containers with their default offloads, iperf3,
# each datapath on a fresh topology) and prints vdev-bench's tables: the
# medians, their ratio to the bridge's, CPU per Gbit. The guests run under
# TCG on a machine whose KVM cannot boot these kernels: the rates are the
# emulator's, only the ratios inside one guest mean something. Extra
# vdev-bench arguments: VDEV_BENCH_ARGS.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
build=$(cd "$build" && pwd) || exit 1
kernels=${*:-6.1 6.12}
bench=$build/tools/vdev-bench/vdev-bench
[ -x "$bench" ] || { echo "bench-kernels: $bench not built" >&2; exit 1; }
rc=0
for k in $kernels; do
    echo "== $k"
    # shellcheck disable=SC2086
    sh "$src/scripts/kernel-guest.sh" -t 900 -C "$build" "$k" -- \
        "$bench" --real --only tcp-a-b,tcp-b-a --datapath bridge,vdevd --runs 3 --duration 4 \
        --mtu 1500 --vdevd "$build/daemon/vdevd" ${VDEV_BENCH_ARGS:-} || rc=1
done
exit "$rc"
