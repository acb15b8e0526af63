#!/bin/bash
# probe-xsk-multibuffer.sh [--runs N] [--seconds S]
#
# Can this kernel carry a frame larger than one UMEM frame through a
# copy-mode AF_XDP socket on a veth (AF_XDP multi-buffer, XDP_USE_SG), the
# way vdevd's own path would carry jumbo frames, and what does a frame
# cost by size? Builds scripts/probes/xsk_mb.c and xsk_mb.bpf.c into a
# temporary directory, makes a veth pair in a namespace of its own, and
# runs the probe for each case, alternating, N runs (default 3) of S
# seconds (default 2):
#   1514 bytes in a 2048-byte UMEM frame (MTU 1500, vdevd's default),
#   1788 in 2048 (what the MSS clamp gives TCP at MTU 9000 today),
#   3520 in 4096 (--frame-size 4096, the largest single-buffer frame),
#   9014 in 2048 and in 4096 (MTU 9000, multi-buffer).
# Each line: frames per second received and checked, Gbit/s, buffers per
# frame, CPU µs per frame (the flooding thread's and the receiving
# thread's, softirqs included); then whether one frame of the size went
# back out of the socket in chained TX descriptors intact; then the same
# socket's transmit rate for such frames (copy mode, the other end
# dropping them in XDP), with its CPU µs per frame. Exit status 1 if any
# frame arrived damaged or the kernel refused a case.
#
# Needs root, gcc, clang, libxdp-dev and libbpf-dev (scripts/install-deps.sh).
# No IP traffic: frames of EtherType 0x88b5 between locally administered
# MACs inside the namespace, which is removed on exit.
set -u
runs=3 secs=2
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --seconds) secs=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "probe-xsk-multibuffer.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "probe-xsk-multibuffer.sh: needs root (namespaces, XDP, AF_XDP)" >&2; exit 2; }

src=$(cd "$(dirname "$0")/probes" && pwd)
tmp=$(mktemp -d /tmp/vdev-xsk-mb.XXXXXX)
ns=vdev-xskmb-$$
# shellcheck disable=SC2317  # run by the trap
cleanup() { ip netns del "$ns" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

clang -O2 -g -target bpf -I"/usr/include/$(gcc -print-multiarch)" -c "$src/xsk_mb.bpf.c" -o "$tmp/xsk_mb.bpf.o" || exit 1
gcc -O2 -Wall -o "$tmp/xsk_mb" "$src/xsk_mb.c" -lxdp -lbpf -lpthread || exit 1

ip netns add "$ns" || exit 1
ip -n "$ns" link add s0 type veth peer name s1 || exit 1
ip -n "$ns" link set s0 up
ip -n "$ns" link set s1 up

rc=0
for r in $(seq "$runs"); do
    for c in 1514:2048:1500 1788:2048:9000 3520:4096:9000 9014:2048:9000 9014:4096:9000; do
        IFS=: read -r size frame mtu <<<"$c"
        ip -n "$ns" link set s0 mtu "$mtu" && ip -n "$ns" link set s1 mtu "$mtu" || exit 1
        out=$(ip netns exec "$ns" "$tmp/xsk_mb" s1 s0 "$size" "$frame" "$secs")
        st=$?
        echo "run $r: ${out//$'\n'/ }"
        [ "$st" -eq 0 ] || { echo "run $r: size $size in $frame-byte UMEM frames failed (exit $st)"; rc=1; }
    done
done
exit $rc
