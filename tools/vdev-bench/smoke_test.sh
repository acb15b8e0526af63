#!/bin/sh
# vdev_bench_smoke: a very short veth-veth comparison (1 run, 1 s) with the
# default sink (tc ingress) that checks only that vdev-bench works: every
# datapath measured, sink count <= offered and == the kernel's count (the sink
# veth's rx_packets), something forwarded (for xdp-redirect: the sink veth
# took xdp_frames without an XDP program), and nothing left behind. Never a
# timed assertion.
# Exit 77 (skipped) when not root.
set -u
BENCH=${1:?usage: smoke_test.sh PATH/TO/vdev-bench}

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: vdev_bench_smoke needs root (network namespaces, XDP, BPF_PROG_RUN)"
    exit 77
fi

out=$(mktemp /tmp/vdev-bench-smoke.XXXXXX)
trap 'rm -f "$out"' EXIT INT TERM

"$BENCH" --scenario veth-veth --runs 1 --duration 1 --warmup 0.3 --cpu-window 0.5 --json >"$out"
rc=$?
echo "vdev-bench exited $rc"

python3 - "$out" "$rc" <<'PY'
import json, os, sys
path, rc = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    text = f.read()
try:
    doc = json.loads(text)
except ValueError as e:
    print("FAIL: output is not JSON:", e)
    print(text)
    sys.exit(1)
ok = True
def fail(msg):
    global ok
    ok = False
    print("FAIL:", msg)
if doc.get("error"):
    fail("error: %s" % doc["error"])
if doc.get("config", {}).get("sink") != "tc":
    fail("default sink is %r, expected 'tc'" % doc.get("config", {}).get("sink"))
for s in doc.get("skipped", []):
    print("note: skipped %s: %s" % (s["datapath"], s["reason"]))
if not doc.get("results"):
    fail("no datapath measured")
for res in doc.get("results", []):
    name = res["datapath"]
    if res["errors"]:
        fail("%s: %s" % (name, res["errors"]))
    if not res["runs"]:
        fail("%s: no run" % name)
    for run in res["runs"]:
        t = run["totals"]
        print("%-13s offered %d forwarded %d (window: %d / %d)" %
              (name, t["offered"], t["forwarded"], run["offered"], run["forwarded"]))
        if not t["ok"] or t["forwarded"] > t["offered"]:
            fail("%s: sink count %d > offered %d" % (name, t["forwarded"], t["offered"]))
        if t["offered"] == 0:
            fail("%s: generator offered nothing" % name)
        if t["forwarded"] == 0:
            fail("%s: nothing forwarded" % name)
        if t.get("sink_kernel_count") is None:
            fail("%s: no kernel count to check the sink against" % name)
        elif t["sink_kernel_count"] != t["sink_all_frames"]:
            fail("%s: sink counted %d frames, kernel (%s) %d" %
                 (name, t["sink_all_frames"], t["sink_kernel_counter"], t["sink_kernel_count"]))
        if run["stop_problem"]:
            fail("%s: %s" % (name, run["stop_problem"]))
cleanup = doc.get("cleanup", {})
if not cleanup.get("ok"):
    fail("leftovers: %s" % cleanup.get("leftovers"))
prefix = doc["config"]["prefix"]
left = [n for n in os.listdir("/run/netns") if n.startswith(prefix + "-")] if os.path.isdir("/run/netns") else []
left += [n for n in os.listdir("/sys/class/net") if n.startswith(prefix) and not n[len(prefix):][:1].isdigit()]
if left:
    fail("leftover devices/namespaces: %s" % left)
if rc != 0 and ok:
    fail("vdev-bench exited %d" % rc)
print("PASS" if ok else "FAILED")
sys.exit(0 if ok else 1)
PY
