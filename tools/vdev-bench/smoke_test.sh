#!/bin/sh
# vdev_bench_smoke: very short vdev-bench invocations that check that every
# mode works, never how fast anything is:
#   1. veth-veth (tc sink), throughput + latency: every datapath measured,
#      sink count <= offered and == the kernel's count (the sink veth's
#      rx_packets), something forwarded (for xdp-redirect: the sink veth took
#      xdp_frames without an XDP program), every probe answered, percentiles
#      ordered;
#   2. switch (2 containers + 1 VM, learning), 512-byte frames: the same, both
#      round trips (container-container, container-vm), nothing flooded to
#      the VM once the switch has learned;
#   3. veth-tap at 1500 bytes and tap-veth at 64 bytes: throughput and the
#      container-VM round trip;
#   4. --rate: the paced generator never offers more than asked;
#   (1-4: runs of 0.5 s; port A receives the generator's frames as XDP frames, by
#   ndo_xdp_xmit, whether from live frames or from the relay where the
#   kernel refuses those;)
#   5. --find-rate: peak, search trials (consistent bisection, counts exact,
#      pacing never above the target), the loss-free rate = the best passing
#      trial (or the peak's offered rate when the peak lost nothing and there
#      was no search), a trial at 90% of vdevd's peak for every datapath;
#   6. --real (MTU 1500, 1 run of 1 s): every datapath (bridge, tc-redirect,
#      vdevd, vdevd-own) moved data in every scenario (TCP both ways between
#      the containers, the UDP flood, TCP both ways between a container and
#      the VM, round trips to B and to the VM: most probes answered, their
#      percentiles in order), no datagram arrived that was not sent, the VM sent GSO
#      frames with partial checksums, and each datapath took the path it
#      names (tc-redirect redirected; vdevd's fast path carried frames,
#      vdevd-own's none);
#   7. --real --idle-ports 6 (1 run of 1 s, idle CPU over 1 s): bridge and
#      vdevd on A's and B's ports and again with 6 idle containers' ports
#      attached (every port attached: vdevd reports 8 ports at the tc hook),
#      TCP and UDP A -> B moved data, both ratios and vdevd's idle CPU are
#      reported;
#   7b. --real --only rtt-a-b (bridge and vdevd, 2 runs, MTU 1500 and 9000):
#      the round trip alone, at MTU 1500 alone (it runs at no other), and
#      its p99 over both runs' probes pooled lies between the two runs' own,
#      and its split-half noise figure is the two runs' p99 ratio;
#      --only with a scenario that does not exist is refused;
#   7c. --real --only tcp-a-b --datapath bridge,bridge-wire,vdevd-own (1
#      run of 1 s): all moved data; the bridges on their two ports (no VM:
#      no tap), the bridge handing B's container whole GSO skbs (B's port
#      sent more bytes per packet than a 1500-byte MTU's frame) and
#      bridge-wire wire frames (at most that); vdevd-own's ratio to
#      bridge-wire is the two runs' quotient;
#   8. --two-host (1 run of 1 s, both uplinks): every datapath (bridge,
#      vdevd, tc-redirect) gave a finite nonzero figure for each measure
#      (TCP both ways, the UDP flood) over the VXLAN and the veth uplink, no
#      datagram arrived that was not sent, tc-redirect redirected on both
#      hosts and nothing failed, each vdevd had its two ports;
# and nothing left behind after any of them. Never a timed assertion: a
# probe has 2 s to come back (--lat-timeout-ms), so a loaded machine delays
# the answers but does not lose them.
# vdevd must be measured in every invocation: a vdevd that cannot be found,
# or any other datapath vdev-bench skipped, fails the test (vdev-bench alone
# would skip it with a note).
# Exit 77 (skipped) when not root.
set -u
BENCH=${1:?usage: smoke_test.sh PATH/TO/vdev-bench [PATH/TO/vdevd|- [PATH/TO/vdev-vm]]}
VDEVD=${2:-}
VDEVVM=${3:-}
[ "$VDEVD" = - ] && VDEVD=""
vdevd_arg=""
if [ -n "$VDEVD" ]; then
    [ -x "$VDEVD" ] || { echo "FAIL: vdevd not built: $VDEVD"; exit 1; }
    vdevd_arg="--vdevd $VDEVD"
fi
vdevvm_arg=""
if [ -n "$VDEVVM" ]; then
    [ -x "$VDEVVM" ] || { echo "FAIL: vdev-vm not built: $VDEVVM"; exit 1; }
    vdevvm_arg="--vdev-vm $VDEVVM"
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: vdev_bench_smoke needs root (network namespaces, XDP, BPF_PROG_RUN)"
    # scripts/run-tests.sh lists every skip with its reason.
    [ -n "${VDEV_SKIP_LOG:-}" ] && echo "vdev_bench_smoke: needs root" >>"$VDEV_SKIP_LOG"
    exit 77
fi

dir=$(mktemp -d /tmp/vdev-bench-smoke.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM

short="--runs 1 --duration 0.5 --warmup 0.3 --cpu-window 0.5 --lat-samples 50 --lat-pause-samples 2 --lat-pause-ms 50 --lat-timeout-ms 2000 --json $vdevd_arg"
run() {  # name, args...
    name=$1; shift
    echo "== $name: vdev-bench $*"
    t0=$(date +%s.%N)
    "$BENCH" "$@" >"$dir/$name.json"
    echo "$?" >"$dir/$name.rc"
    echo "== $name: $(echo "$(date +%s.%N) - $t0" | bc) s"
}
run vethveth --scenario veth-veth $short
run switch --scenario switch --frame-size 512 $short
# DPDK's and Open vSwitch's datapaths (where installed) in vethveth only:
# the other invocations name vdevd's and the kernel's.
kernel_and_vdevd="--datapath vdevd,vdevd-switch,vdevd-fast,bridge,xdp-redirect"
# shellcheck disable=SC2086
run vethtap --scenario veth-tap --frame-size 1500 $kernel_and_vdevd $short
# shellcheck disable=SC2086
run tapveth --scenario tap-veth --frame-size 64 $kernel_and_vdevd $short
run rate --datapath xdp-redirect,bridge --rate 200k --latency off --runs 1 --duration 1 --warmup 0.3 --cpu-window 0.5 --json
# shellcheck disable=SC2086
run findrate --find-rate $kernel_and_vdevd --runs 1 --trial 0.3 --duration 0.5 --warmup 0.2 --max-trials 5 --json $vdevd_arg
# shellcheck disable=SC2086
run real --real --runs 1 --duration 1 --mtu 1500 --json $vdevd_arg $vdevvm_arg
# shellcheck disable=SC2086
run idle --real --idle-ports 6 --idle-cpu 1 --runs 1 --duration 1 --json $vdevd_arg
# shellcheck disable=SC2086
run only --real --only rtt-a-b --datapath bridge,vdevd --runs 2 --duration 0.5 --mtu 1500,9000 --json $vdevd_arg
# shellcheck disable=SC2086
run wire --real --only tcp-a-b --datapath bridge,bridge-wire,vdevd-own --runs 1 --duration 1 --mtu 1500 --json $vdevd_arg
# shellcheck disable=SC2086
run twohost --two-host --runs 1 --duration 1 --json $vdevd_arg

if "$BENCH" --real --only rtt-a-c >/dev/null 2>"$dir/only-bad.err"; then
    echo "FAIL: --only rtt-a-c was accepted"; only_bad=1
elif ! grep -q "unknown scenario 'rtt-a-c'" "$dir/only-bad.err"; then
    echo "FAIL: --only rtt-a-c: $(cat "$dir/only-bad.err")"; only_bad=1
else
    only_bad=0
fi

python3 - "$dir" <<'PY'
import json, math, os, sys
d = sys.argv[1]
ok = True
def fail(msg):
    global ok
    ok = False
    print("FAIL:", msg)

# The invocations whose default datapath list includes vdevd.
WITH_VDEVD = ("vethveth", "switch", "vethtap", "tapveth", "findrate")

def load(name):
    rc = int(open(os.path.join(d, name + ".rc")).read())
    text = open(os.path.join(d, name + ".json")).read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        fail("%s: output is not JSON: %s" % (name, e))
        print(text)
        return None
    if doc.get("error"):
        fail("%s: error: %s" % (name, doc["error"]))
    # Every invocation here asks only for what this test provides (vdevd,
    # vdev-vm, root): a datapath vdev-bench skipped was not measured, and a
    # skip is a failure of the smoke run, never a note.
    for s in doc.get("skipped", []):
        # The exceptions: DPDK's and Open vSwitch's AF_XDP datapaths,
        # comparisons that make check does not install; measured here
        # wherever they are.
        if s.get("datapath") in ("dpdk-af-xdp", "ovs-af-xdp") and " not found" in s["reason"]:
            continue
        fail("%s: skipped %s: %s" % (name, s.get("datapath", s.get("what")), s["reason"]))
    if name in WITH_VDEVD and not any(r["datapath"].startswith("vdevd") for r in doc.get("results", [])):
        fail("%s: no vdevd datapath measured" % name)
    if not doc.get("results"):
        fail("%s: no datapath measured" % name)
    for res in doc.get("results", []):
        if res["errors"]:
            fail("%s: %s: %s" % (name, res["datapath"], res["errors"]))
    cleanup = doc.get("cleanup", {})
    if not cleanup.get("ok"):
        fail("%s: leftovers: %s" % (name, cleanup.get("leftovers")))
    prefix = doc["config"]["prefix"]
    left = [n for n in os.listdir("/run/netns") if n.startswith(prefix + "-")] if os.path.isdir("/run/netns") else []
    left += [n for n in os.listdir("/sys/class/net") if n.startswith(prefix) and not n[len(prefix):][:1].isdigit()]
    if left:
        fail("%s: leftover devices/namespaces: %s" % (name, left))
    if rc != 0 and ok:
        fail("%s: vdev-bench exited %d" % (name, rc))
    return doc

def check_throughput(name, doc, veth_sink=True, flood_check=False, xdp_frames=True):
    for res in doc["results"]:
        dp = res["datapath"]
        if not res["runs"]:
            fail("%s: %s: no throughput run" % (name, dp))
        for run in res["runs"]:
            t = run["totals"]
            print("%-9s %-13s offered %d forwarded %d (window: %d / %d)" %
                  (name, dp, t["offered"], t["forwarded"], run["offered"], run["forwarded"]))
            if not t["ok"] or t["forwarded"] > t["offered"]:
                fail("%s: %s: sink count %d > offered %d" % (name, dp, t["forwarded"], t["offered"]))
            if t["offered"] == 0:
                fail("%s: %s: generator offered nothing" % (name, dp))
            if t["forwarded"] == 0:
                fail("%s: %s: nothing forwarded" % (name, dp))
            if veth_sink:
                if t.get("sink_kernel_count") is None:
                    fail("%s: %s: no kernel count to check the sink against" % (name, dp))
                elif t["sink_kernel_count"] != t["sink_all_frames"]:
                    fail("%s: %s: sink counted %d frames, kernel (%s) %d" %
                         (name, dp, t["sink_all_frames"], t["sink_kernel_counter"], t["sink_kernel_count"]))
            # The generator stands for a NIC: port A receives XDP frames by
            # ndo_xdp_xmit (the generator veth's tx_queue_0_xdp_xmit), from
            # live frames or, where the kernel refuses them, the relay.
            if xdp_frames:
                acc, full = run.get("ingress_ring_accepted"), run.get("ingress_ring_full") or 0
                if acc is None or acc == 0 or acc + full < run["offered"] // 2:
                    fail("%s: %s: port A took %s XDP frames (+%d ring full) of %d offered: not XDP frames" %
                         (name, dp, acc, full, run["offered"]))
            if flood_check and run.get("flooded_to_vm") != 0:
                fail("%s: %s: %s benchmark frames flooded to the VM (no learning?)" % (name, dp, run.get("flooded_to_vm")))
            if run["stop_problem"]:
                fail("%s: %s: %s" % (name, dp, run["stop_problem"]))

def check_latency(name, doc, pairs):
    for res in doc["results"]:
        dp = res["datapath"]
        if not res["latency_runs"]:
            fail("%s: %s: no latency run" % (name, dp))
        for lr in res["latency_runs"]:
            got = sorted(p["pair"] for p in lr["pairs"])
            if got != sorted(pairs):
                fail("%s: %s: latency pairs %s, expected %s" % (name, dp, got, pairs))
            for p in lr["pairs"]:
                for part in ("light", "after_pause"):
                    s = p[part]
                    print("%-9s %-13s %-19s %-11s %d/%d answered, p50 %s p99 %s max %s us" %
                          (name, dp, p["pair"], part, s["answered"], s["sent"], s["p50_us"], s["p99_us"], s["max_us"]))
                    if s["sent"] == 0 or s["answered"] != s["sent"]:
                        fail("%s: %s: %s %s: %d of %d probes answered" % (name, dp, p["pair"], part, s["answered"], s["sent"]))
                        continue
                    v = [s[k] for k in ("min_us", "p50_us", "p90_us", "p99_us", "max_us")]
                    if any(x is None or not math.isfinite(x) or x <= 0 for x in v) or v != sorted(v):
                        fail("%s: %s: %s %s: percentiles not positive and ordered: %s" % (name, dp, p["pair"], part, v))
                if len(p["after_pause_us"]) != p["after_pause"]["answered"]:
                    fail("%s: %s: pause samples missing" % (name, dp))
            if lr["stop_problem"]:
                fail("%s: %s: %s" % (name, dp, lr["stop_problem"]))
        med = res["median"].get("latency", {})
        for pr in pairs:
            if pr not in med or med[pr]["p50_us"] is None:
                fail("%s: %s: no median latency for %s" % (name, dp, pr))

doc = load("vethveth")
if doc:
    if doc["config"].get("sink") != "tc":
        fail("vethveth: default sink is %r, expected 'tc'" % doc["config"].get("sink"))
    check_throughput("vethveth", doc)
    check_latency("vethveth", doc, ["container-container"])

doc = load("switch")
if doc:
    names = [r["datapath"] for r in doc["results"]]
    if "bridge" not in names or "vdevd-switch" not in names:
        fail("switch: datapaths %s, expected vdevd-switch and bridge" % names)
    if doc["config"]["frame_size"] != 512:
        fail("switch: frame size %s" % doc["config"]["frame_size"])
    check_throughput("switch", doc, flood_check=True)
    check_latency("switch", doc, ["container-container", "container-vm"])

doc = load("vethtap")
if doc:
    check_throughput("vethtap", doc, veth_sink=False)
    check_latency("vethtap", doc, ["container-vm"])

doc = load("tapveth")
if doc:
    check_throughput("tapveth", doc, xdp_frames=False)
    check_latency("tapveth", doc, ["container-vm"])

doc = load("rate")
if doc:
    check_throughput("rate", doc)
    for res in doc["results"]:
        for run in res["runs"]:
            if run["target_pps"] != 200000:
                fail("rate: %s: target %s" % (res["datapath"], run["target_pps"]))
            # Never above the rate asked for (5% for the window's edges).
            if run["offered_mpps"] > 0.21:
                fail("rate: %s: offered %.3f Mpps, asked for 0.2" % (res["datapath"], run["offered_mpps"]))
            if res["runs"] and run["offered_mpps"] <= 0:
                fail("rate: %s: offered nothing" % res["datapath"])

doc = load("findrate")
if doc:
    lossmax = doc["config"]["find_rate"]["loss_max_pct"]
    have_vdevd = any(r["datapath"].startswith("vdevd") for r in doc["results"])
    if not have_vdevd:
        fail("findrate: vdevd was not measured")
    for res in doc["results"]:
        dp = res["datapath"]
        if not res["rate_search_runs"]:
            fail("findrate: %s: no search" % dp)
        for rs in res["rate_search_runs"]:
            peak = rs["peak"]
            print("findrate  %-13s peak %.3f Mpps fwd; trials %s -> loss-free %.3f Mpps; at 90%%: %s" %
                  (dp, peak["forwarded_mpps"],
                   ["%.3f/%.3f%s" % (t["target_pps"] / 1e6, t["offered_mpps"], "+" if t["pass"] else "-") for t in rs["trials"]],
                   rs["loss_free_mpps"], rs["at_90pct_of_vdevd_peak"] and rs["at_90pct_of_vdevd_peak"]["loss_pct"]))
            if peak["target_pps"] != 0 or peak["forwarded"] == 0:
                fail("findrate: %s: bad peak trial %s" % (dp, peak))
            # Either the unpaced peak lost nothing (the datapath throttles the
            # generator: no search, the loss-free rate is the peak's offered
            # rate), or there is a search.
            no_search = peak["pass"]
            if no_search:
                if rs["trials"] or not rs["generator_limited"] or abs(rs["loss_free_mpps"] - peak["offered_mpps"]) > 1e-3:
                    fail("findrate: %s: peak passed, but trials %d, generator_limited %s, loss-free %.4f vs peak %.4f" %
                         (dp, len(rs["trials"]), rs["generator_limited"], rs["loss_free_mpps"], peak["offered_mpps"]))
            elif not rs["trials"]:
                fail("findrate: %s: no search trial" % dp)
            lo, hi = 0.0, float("inf")
            for t in [peak] + rs["trials"] + ([rs["at_90pct_of_vdevd_peak"]] if rs["at_90pct_of_vdevd_peak"] else []):
                if not t["counts_ok"] or t["forwarded"] > t["offered"]:
                    fail("findrate: %s: counts wrong in trial %s" % (dp, t))
                if t["target_pps"] and t["offered_mpps"] > 1.05 * t["target_pps"] / 1e6:
                    fail("findrate: %s: paced at %.3f Mpps but offered %.3f" % (dp, t["target_pps"] / 1e6, t["offered_mpps"]))
                if t["pass"] != (t["counts_ok"] and t["offered"] > 0 and t["loss_pct"] <= lossmax):
                    fail("findrate: %s: pass flag wrong in %s" % (dp, t))
            for t in rs["trials"]:
                r = t["target_pps"]
                if not (lo <= r <= hi):
                    fail("findrate: %s: trial at %d outside the bounds [%s, %s]" % (dp, r, lo, hi))
                if t["pass"]:
                    lo = r
                else:
                    hi = r
            best = max([t["offered_mpps"] for t in rs["trials"] if t["pass"]] or [0])
            if not no_search and abs(best - rs["loss_free_mpps"]) > 1e-3:
                fail("findrate: %s: loss-free %.4f is not the best passing trial %.4f" % (dp, rs["loss_free_mpps"], best))
            if have_vdevd and rs["at_90pct_of_vdevd_peak"] is None:
                fail("findrate: %s: no trial at 90%% of vdevd's peak" % dp)
            if rs["stop_problem"]:
                fail("findrate: %s: %s" % (dp, rs["stop_problem"]))
    if have_vdevd and not doc["results"][0]["datapath"].startswith("vdevd"):
        fail("findrate: vdevd was not measured first")

def check_real_cleanup(doc, mode):
    if doc.get("error"):
        fail("%s: error: %s" % (mode, doc["error"]))
    if not doc["cleanup"]["ok"]:
        fail("%s: leftovers: %s" % (mode, doc["cleanup"]["leftovers"]))
    prefix = doc["config"]["prefix"]
    left = [n for n in os.listdir("/run/netns") if n.startswith(prefix + "-")] if os.path.isdir("/run/netns") else []
    if left:
        fail("%s: leftover namespaces: %s" % (mode, left))

def check_real(doc, rc):
    check_real_cleanup(doc, "real")
    for s in doc["skipped"]:
        fail("real: skipped %s: %s" % (s["what"], s["reason"]))
    want = ["bridge", "tc-redirect", "vdevd", "vdevd-own"]
    if doc["config"]["datapaths"] != want:
        fail("real: datapaths %s, expected %s" % (doc["config"]["datapaths"], want))
    got = sorted(s["scenario"] for s in doc["scenarios"])
    if got != sorted(["tcp-a-b", "tcp-b-a", "udp-a-b", "tcp-vm-a", "tcp-a-vm", "rtt-a-b", "rtt-a-vm"]):
        fail("real: scenarios %s" % got)
    for s in doc["scenarios"]:
        dps = [r["datapath"] for r in s["results"]]
        if dps != want:
            fail("real: %s: datapaths %s" % (s["scenario"], dps))
        for r in s["results"]:
            name = "real: %s %s" % (s["scenario"], r["datapath"])
            if r["errors"]:
                fail("%s: %s" % (name, r["errors"]))
            if len(r["runs"]) != 1:
                fail("%s: %d runs" % (name, len(r["runs"])))
            for m in r["runs"]:
                print("%-8s %-11s %.3f %s" % (s["scenario"], r["datapath"], m["value"], s["unit"]))
                if not m["value"] > 0:
                    fail("%s: moved nothing (%s)" % (name, m["value"]))
                if s["unit"] == "gbit_s" and not m["bytes"] > 0:
                    fail("%s: no bytes received" % name)
                if s["unit"] == "mpps_received" and not 0 < m["received"] <= m["sent"]:
                    fail("%s: received %d of %d datagrams" % (name, m["received"], m["sent"]))
                if s["unit"] == "us_round_trip_p50":
                    if not (m["probes_sent"] >= 100 and m["lost"] < m["probes_sent"]):
                        fail("%s: %d of %d probes lost" % (name, m["lost"], m["probes_sent"]))
                    if not 0 < m["min_us"] <= m["p50_us"] <= m["p99_us"] <= m["max_us"]:
                        fail("%s: round trips out of order: %s" % (name, m))
                    # One run: its probes are the pool, and there is no
                    # second half to set against it.
                    if (r["pooled_p50_us"], r["pooled_p99_us"], r["pooled_max_us"]) != \
                            (m["p50_us"], m["p99_us"], m["max_us"]) or r["split_half_p99_ratio"] is not None:
                        fail("%s: pooled %s, the one run's %s" % (name, r, m))
    for su in doc["setups"]:
        name = "real: %s set-up" % su["datapath"]
        if su["error"] or su["stop_problem"]:
            fail("%s: %s %s" % (name, su["error"], su["stop_problem"]))
        vm = su["vm"] or {}
        fg = vm.get("from_guest", {})
        if not (fg.get("gso", 0) > 0 and fg.get("partial_csum", 0) > 0):
            fail("%s: the VM sent no GSO frame with a partial checksum: %s" % (name, vm))
        st = su["datapath_stats"] or {}
        if su["datapath"] == "tc-redirect":
            if not st.get("redirected_skbs", 0) > 0 or st.get("redirect_failed") != 0:
                fail("%s: tc_fwd counters %s" % (name, st))
        if su["datapath"].startswith("vdevd"):
            ports = st.get("ports", [])
            fast = sum(p["xdp_prog"]["fast"] for p in ports)
            rx = sum(p["rx_packets"] for p in ports)
            if len(ports) != 3 or any(p["hook"] != "tc" for p in ports):
                fail("%s: ports %s" % (name, [(p["name"], p["hook"]) for p in ports]))
            if su["datapath"] == "vdevd" and not fast > 0:
                fail("%s: nothing on the fast path" % name)
            if su["datapath"] == "vdevd-own" and (fast != 0 or not rx > 0):
                fail("%s: fast path carried %d, vdevd received %d" % (name, fast, rx))
    if rc != 0 and ok:
        fail("real: vdev-bench exited %d" % rc)

def check_idle(doc, rc):
    check_real_cleanup(doc, "idle")
    want = ["bridge", "bridge+6", "vdevd", "vdevd+6"]
    if doc["config"]["datapaths"] != want:
        fail("idle: datapaths %s, expected %s" % (doc["config"]["datapaths"], want))
    got = sorted(s["scenario"] for s in doc["scenarios"])
    if got != ["tcp-a-b", "udp-a-b"]:
        fail("idle: scenarios %s" % got)
    for s in doc["scenarios"]:
        for r in s["results"]:
            name = "idle: %s %s" % (s["scenario"], r["datapath"])
            if r["errors"] or len(r["runs"]) != 1 or not r["runs"][0]["value"] > 0:
                fail("%s: runs %s errors %s" % (name, r["runs"], r["errors"]))
                continue
            print("%-8s %-11s %.3f %s" % (s["scenario"], r["datapath"], r["runs"][0]["value"], s["unit"]))
            idle = r["datapath"].endswith("+6")
            if r["idle_ports"] != (6 if idle else 0):
                fail("%s: idle_ports %s" % (name, r["idle_ports"]))
            if not (r["ratio_to_bridge"] or 0) > 0:
                fail("%s: no ratio to the bridge" % name)
            if idle and not (r["ratio_to_2_ports"] or 0) > 0:
                fail("%s: no ratio to 2 ports" % name)
    for su in doc["setups"]:
        name = "idle: %s set-up" % su["datapath"]
        if su["error"] or su["stop_problem"] or su["idle_cpu_error"]:
            fail("%s: %s %s %s" % (name, su["error"], su["stop_problem"], su["idle_cpu_error"]))
        nports = 8 if su["datapath"].endswith("+6") else 2
        if su["ports"] != nports:
            fail("%s: %s ports, expected %d" % (name, su["ports"], nports))
        if su["datapath"].startswith("vdevd"):
            ports = (su["datapath_stats"] or {}).get("ports", [])
            if len(ports) != nports or any(p["hook"] != "tc" for p in ports):
                fail("%s: ports %s" % (name, [(p["name"], p["hook"]) for p in ports]))
            c = su["idle_cpu"]
            if not c or not c["window_s"] >= 1 or c["cpu_s"] < 0 or not c["fds"] > 0:
                fail("%s: idle CPU %s" % (name, c))
            else:
                print("idle     %-11s %.3f%% of a core" % (su["datapath"], c["core_pct"]))
        elif su["idle_cpu"] is not None:
            fail("%s: idle CPU measured without a process" % name)
    if rc != 0 and ok:
        fail("idle: vdev-bench exited %d" % rc)

def check_only(doc, rc):
    check_real_cleanup(doc, "only")
    if [(s["scenario"], s["mtu"]) for s in doc["scenarios"]] != [("rtt-a-b", 1500)]:
        fail("only: scenarios %s" % [(s["scenario"], s["mtu"]) for s in doc["scenarios"]])
    if sorted((su["datapath"], su["mtu"]) for su in doc["setups"]) != \
            sorted((d, 1500) for d in ("bridge", "vdevd") for _ in range(2)):
        fail("only: set-ups %s" % [(su["datapath"], su["mtu"]) for su in doc["setups"]])
    for s in doc["scenarios"]:
        for r in s["results"]:
            name = "only: %s" % r["datapath"]
            p99 = [m["p99_us"] for m in r["runs"]]
            if r["errors"] or len(p99) != 2:
                fail("%s: runs %s errors %s" % (name, p99, r["errors"]))
            elif not min(p99) <= r["pooled_p99_us"] <= max(p99) or not r["pooled_p99_us"] <= r["pooled_max_us"]:
                fail("%s: pooled p99 %s, the runs' %s" % (name, r["pooled_p99_us"], p99))
            elif not (isinstance(r["split_half_p99_ratio"], float) and
                      abs(r["split_half_p99_ratio"] - max(p99) / min(p99)) < 1e-3 * r["split_half_p99_ratio"]):
                # Two runs: the halves are the runs themselves.
                fail("%s: split-half p99 ratio %s, the runs' p99 %s" % (name, r["split_half_p99_ratio"], p99))
            else:
                print("only     %-11s p99 %s pooled %.1f us" % (r["datapath"], p99, r["pooled_p99_us"]))
    if rc != 0 and ok:
        fail("only: vdev-bench exited %d" % rc)

def check_wire(doc, rc):
    check_real_cleanup(doc, "wire")
    for s in doc["scenarios"]:
        for r in s["results"]:
            if r["errors"] or len(r["runs"]) != 1 or not r["runs"][0]["value"] > 0:
                fail("wire: %s: runs %s errors %s" % (r["datapath"], r["runs"], r["errors"]))
        by = {r["datapath"]: r for r in s["results"]}
        if sorted(by) != ["bridge", "bridge-wire", "vdevd-own"]:
            fail("wire: results %s" % sorted(by))
            continue
        want = by["vdevd-own"]["runs"][0]["value"] / by["bridge-wire"]["runs"][0]["value"]
        got = by["vdevd-own"].get("ratio_to_bridge_wire")
        if not (isinstance(got, float) and abs(got - want) <= 1e-3 * want + 1e-4):
            fail("wire: vdevd-own's ratio to bridge-wire %s, its runs give %.4f" % (got, want))
        if "ratio_to_bridge_wire" in by["bridge"]:
            fail("wire: the bridge has a ratio to bridge-wire")
    setups = {su["datapath"]: su for su in doc["setups"]}
    if sorted(setups) != ["bridge", "bridge-wire", "vdevd-own"]:
        fail("wire: set-ups %s" % sorted(setups))
    for dp, su in setups.items():
        if not dp.startswith("bridge"):
            if su["error"] or su["stop_problem"]:
                fail("wire: %s set-up: %s %s" % (dp, su["error"], su["stop_problem"]))
            continue
        st = su["datapath_stats"] or {}
        ports = st.get("ports", [])
        if su["error"] or su["stop_problem"] or len(ports) != 2 or st.get("wire_frames") != (dp == "bridge-wire"):
            fail("wire: %s set-up: %s %s %s" % (dp, su["error"], su["stop_problem"], st))
            continue
        # B's port: the one that sent the stream (the most bytes).
        b = max(ports, key=lambda p: p["tx_bytes"])
        per = b["tx_bytes"] / max(b["tx_packets"], 1)
        print("wire     %-11s %s sent %d packets, %.0f bytes each" % (dp, b["name"], b["tx_packets"], per))
        if dp == "bridge" and not per > 1514:
            fail("wire: the bridge sent B no GSO skb (%.0f bytes per packet)" % per)
        if dp == "bridge-wire" and not 0 < per <= 1514:
            fail("wire: bridge-wire sent B %.0f bytes per packet, not wire frames" % per)
    if rc != 0 and ok:
        fail("wire: vdev-bench exited %d" % rc)

def check_twohost(doc, rc):
    check_real_cleanup(doc, "twohost")
    for s in doc["skipped"]:
        fail("twohost: skipped %s: %s" % (s["what"], s["reason"]))
    want = ["bridge", "vdevd", "tc-redirect"]
    if doc["config"]["datapaths"] != want:
        fail("twohost: datapaths %s, expected %s" % (doc["config"]["datapaths"], want))
    if [u["uplink"] for u in doc["uplinks"]] != ["vxlan", "veth"]:
        fail("twohost: uplinks %s" % [u["uplink"] for u in doc["uplinks"]])
    for u in doc["uplinks"]:
        if [m["measure"] for m in u["measures"]] != ["tcp-a-b", "tcp-b-a", "udp-a-b"]:
            fail("twohost: %s: measures %s" % (u["uplink"], [m["measure"] for m in u["measures"]]))
        for m in u["measures"]:
            if [r["datapath"] for r in m["results"]] != want:
                fail("twohost: %s %s: datapaths %s" % (u["uplink"], m["measure"], [r["datapath"] for r in m["results"]]))
            for r in m["results"]:
                name = "twohost: %s %s %s" % (u["uplink"], m["measure"], r["datapath"])
                figures = [r["median"], r["ratio_to_bridge"]] + [x["value"] for x in r["runs"]]
                if r["errors"] or len(r["runs"]) != 1 or \
                        not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in figures):
                    fail("%s: figures %s errors %s" % (name, figures, r["errors"]))
                    continue
                x = r["runs"][0]
                print("twohost  %-5s %-8s %-11s %.3f %s" % (u["uplink"], m["measure"], r["datapath"], x["value"], m["unit"]))
                if m["unit"] == "gbit_s" and not x["bytes"] > 0:
                    fail("%s: no bytes received" % name)
                if m["unit"] == "mpps_received" and not 0 < x["received"] <= x["sent"]:
                    fail("%s: received %d of %d datagrams" % (name, x["received"], x["sent"]))
    for su in doc["setups"]:
        name = "twohost: %s %s set-up" % (su["uplink"], su["datapath"])
        if su["error"] or su["stop_problem"]:
            fail("%s: %s %s" % (name, su["error"], su["stop_problem"]))
        st = su["datapath_stats"] or {}
        for h in ("ha", "hb"):
            hs = st.get(h) or {}
            if su["datapath"] == "tc-redirect" and (not hs.get("redirected_skbs", 0) > 0 or hs.get("redirect_failed") != 0):
                fail("%s: tc_fwd counters on %s: %s" % (name, h, hs))
            if su["datapath"] == "vdevd" and len(hs.get("ports", [])) != 2:
                fail("%s: vdevd's ports on %s: %s" % (name, h, [p["name"] for p in hs.get("ports", [])]))
    if rc != 0 and ok:
        fail("twohost: vdev-bench exited %d" % rc)

for mode, check in (("real", check_real), ("idle", check_idle), ("only", check_only), ("wire", check_wire),
                    ("twohost", check_twohost)):
    rc = int(open(os.path.join(d, mode + ".rc")).read())
    try:
        doc = json.load(open(os.path.join(d, mode + ".json")))
    except ValueError as e:
        fail("%s: output is not JSON: %s" % (mode, e))
        doc = None
    if doc:
        check(doc, rc)

print("PASS" if ok else "FAILED")
sys.exit(0 if ok else 1)
PY
rc=$?
[ "$only_bad" -eq 0 ] || rc=1
exit $rc
