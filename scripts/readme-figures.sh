#!/bin/sh
# The commands behind every figure in README.md's "Reliability and security"
# section and "Performance" table, and in docs/performance.md's "Current
# figures", so that the next person can reproduce them:
#
#   scripts/readme-figures.sh BUILD_DIR GROUP...
#   scripts/readme-figures.sh BUILD_DIR list     # what each group measures
#
# Groups (each prints the figures it produces; see `list`). Where the
# figures are: the README's Performance table names the group of each row;
# docs/performance.md, "Current figures", has the sections named here.
#   real         real senders: TCP, socket UDP, the VM stand-in, round trips (vdev-bench --real; "Real senders")
#   qemu         TCP between a real QEMU guest and a container, bridge and vdevd on one boot, three invocations (vdev-bench --real --only tcp-qemu-a,tcp-a-qemu; "Real senders")
#   ring         the bulk pointer ring                  (make bench; docs/ring.md, "Performance")
#   forwarding   XDP frames, scenario by scenario       (vdev-bench; "XDP frames")
#   latency      the round trips and first frame after idle (vdev-bench; "Loss and latency")
#   loss         highest loss-free rate, loss at 90% of the peak (vdev-bench --find-rate; "Loss and latency")
#   busypoll     round trips with --busy-poll 50       (vdev-bench; "Loss and latency")
#   idle         CPU with three ports and no traffic   (scripts/idle-cpu.sh; "Scale: 250 ports")
#   scale        forwarding with 248 idle ports, idle CPU with 250 (vdev-bench --real --idle-ports 248; "Scale: 250 ports")
#   multihost    two hosts over VXLAN and veth uplinks: bridge, vdevd, tc-redirect (vdev-bench --two-host; "Two hosts")
#   soak         the soak figures and link flaps       (e2e_faults_test, e2e_datapath_test; README "Reliability and security")
#   control      64 connections, the parser fuzz run   (ctl_server_test, ctl_decode_fuzz*; README "Reliability and security")
#
# Everything but `ring` and `control` needs root, and everything that
# measures needs a quiet machine: on a shared one, hold the lock
# (flock /tmp/vdev-e2e.lock scripts/readme-figures.sh ...). The vdev-bench
# groups take minutes each (3 runs per datapath, as in the README); RUNS
# (env) changes the number of runs.
set -eu

if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_DIR GROUP... (GROUP: real qemu ring forwarding latency loss busypoll idle scale multihost soak control list)" >&2
    exit 2
fi
build=$1
shift
here=$(dirname "$0")
bench="$build/tools/vdev-bench/vdev-bench"
runs=${RUNS:-3}

need_bench() {
    [ -x "$bench" ] || { echo "readme-figures: $bench not built" >&2; exit 1; }
}
say() { printf '\n== %s\n$ %s\n' "$1" "$2"; }
bench_run() {  # what, vdev-bench args...
    what=$1
    shift
    say "$what" "vdev-bench --runs $runs $*"
    "$bench" --runs "$runs" "$@"
}

for group in "$@"; do
    case $group in
    list)
        sed -n '/^# Groups/,/^#$/p' "$0" | sed 's/^# \{0,1\}//'
        ;;
    real)
        need_bench
        bench_run "real senders: containers' and the VM stand-in's kernels, MTU 1500 and 9000, round trips" --real --duration 4
        ;;
    qemu)
        # One boot per invocation: three invocations of one run each.
        need_bench
        for i in 1 2 3; do
            say "real QEMU guest (TCG unless KVM works: --qemu-accel kvm), invocation $i" \
                "vdev-bench --real --only tcp-qemu-a,tcp-a-qemu --datapath bridge,vdevd --runs 1 --duration 3"
            "$bench" --real --only tcp-qemu-a,tcp-a-qemu --datapath bridge,vdevd --runs 1 --duration 3
        done
        ;;
    ring)
        say "ring table (median of REPS runs)" "REPS=5 scripts/bench-ring.sh $build"
        REPS=${REPS:-5} "$here/bench-ring.sh" "$build"
        ;;
    forwarding)
        need_bench
        bench_run "veth -> veth" --latency off
        bench_run "veth -> tap" --scenario veth-tap --latency off
        bench_run "switch" --scenario switch --latency off
        bench_run "veth -> veth, 512 bytes" --frame-size 512 --latency off --datapath vdevd,vdevd-switch,vdevd-fast,bridge
        bench_run "veth -> veth, 1500 bytes" --frame-size 1500 --latency off --datapath vdevd,vdevd-switch,vdevd-fast,bridge
        bench_run "bridge without br_netfilter" --bridge-nf-call off --latency off --datapath vdevd,vdevd-switch,vdevd-fast,bridge
        bench_run "tap -> veth" --scenario tap-veth --latency off
        bench_run "tap -> veth, fast-rx off" --scenario tap-veth --latency off --datapath vdevd-fast,vdevd-rx-off,bridge
        ;;
    latency)
        need_bench
        bench_run "round trips, container <-> container; first frame after 200 ms idle" --latency only
        bench_run "round trips, container <-> VM" --scenario veth-tap --latency only
        bench_run "round trips, switch" --scenario switch --latency only
        ;;
    loss)
        need_bench
        bench_run "highest rate with <= 0.01% loss; loss at 90% of vdevd's peak" --find-rate
        bench_run "the same with threaded NAPI" --find-rate --napi threaded --datapath vdevd-fast,bridge
        ;;
    busypoll)
        need_bench
        for sc in veth-veth veth-tap; do
            bench_run "round trips without busy polling ($sc)" --scenario "$sc" --latency only --datapath vdevd-fast,bridge
            bench_run "round trips with --busy-poll 50 ($sc)" --scenario "$sc" --latency only --datapath vdevd-fast,bridge \
                --vdevd-arg=--busy-poll=50
        done
        ;;
    idle)
        say "idle CPU, three ports" "scripts/idle-cpu.sh $build"
        "$here/idle-cpu.sh" "$build"
        ;;
    scale)
        need_bench
        # The README's tc-hook figures are of 5 runs: RUNS=5.
        bench_run "2 containers with 248 idle ports, tc hook" --real --idle-ports 248
        bench_run "2 containers with 248 idle ports, XDP hook" --real --idle-ports 248 --vdevd-arg=--default-hook=xdp
        ;;
    multihost)
        need_bench
        bench_run "two hosts, VXLAN and veth uplinks: iperf3 TCP both ways and socket UDP; bridge, vdevd, tc-redirect" \
            --two-host --duration 5
        ;;
    soak)
        say "soak: rounds, faults, frames sent/delivered/counted, fds, mappings, RSS" \
            "$build/tests/e2e/e2e_faults_test --gtest_filter='*Soak*'"
        "$build/tests/e2e/e2e_faults_test" --gtest_filter='*Soak*' | grep -E '^  |OK|FAILED'
        say "link flaps: time to be bound again" \
            "$build/tests/e2e/e2e_datapath_test --gtest_filter='*QuickLinkFlaps*'"
        "$build/tests/e2e/e2e_datapath_test" --gtest_filter='*QuickLinkFlaps*' | grep -E '^  |OK|FAILED'
        ;;
    control)
        say "64 connections held, the 65th refused" \
            "$build/tests/unit/ctl_server_test --gtest_filter='*64Clients*'"
        "$build/tests/unit/ctl_server_test" --gtest_filter='*64Clients*' | tail -3
        say "parser: deterministic replay of mutations; libFuzzer run (fuzz label)" "cd $build && ctest -L fuzz -V"
        (cd "$build" && ctest -L fuzz --output-on-failure)
        ;;
    *)
        echo "readme-figures: unknown group '$group' (try: list)" >&2
        exit 2
        ;;
    esac
done
