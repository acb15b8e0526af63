#!/bin/sh
# vdev_bench_guest: vdev-bench --real's QEMU guest scenarios (tcp-qemu-a,
# tcp-a-qemu) through the Linux bridge and vdevd, one boot, 1-second iperf3
# runs. Checks that things work, never how fast:
#   - the guest booted (its ready line) with QEMU's default tap: its
#     virtio-net negotiated checksum and TSO offload (virtio bits 0 and 11);
#     the report names the accelerator, and vhost as the host has it;
#   - TCP moved bytes both ways (guest -> container A, A -> guest) through
#     each datapath, one set-up each on the one shared boot;
#   - the guest's tap moved frames both ways in each set-up (its own
#     counters), and vdevd's counters for it add up: the skbs the tap took
#     from the guest = its program's verdicts (pass + redirect + no_socket +
#     fast) + the drops vdevd counted there; vdevd received and sent frames
#     on it, and without a drop its byte counts both ways are the tap's;
#   - the bridge's port for the tap sent frames toward the guest;
#   - nothing failed, nothing was left behind.
# Exit 77 (skipped) when not root, or when vdev-bench skipped the guest for
# want of QEMU or of the image's packages (the reason is printed); any other
# skip is a failure.
set -u
BENCH=${1:?usage: guest_test.sh PATH/TO/vdev-bench PATH/TO/vdevd}
VDEVD=${2:?usage: guest_test.sh PATH/TO/vdev-bench PATH/TO/vdevd}
[ -x "$VDEVD" ] || { echo "FAIL: vdevd not built: $VDEVD"; exit 1; }

skip() {
    echo "SKIP: vdev_bench_guest: $1"
    # scripts/run-tests.sh lists every skip with its reason.
    [ -n "${VDEV_SKIP_LOG:-}" ] && echo "vdev_bench_guest: $1" >>"$VDEV_SKIP_LOG"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, taps, vdevd)"

dir=$(mktemp -d /tmp/vdev-bench-guest.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM

echo "== vdev-bench --real --only tcp-qemu-a,tcp-a-qemu --datapath bridge,vdevd --runs 1 --duration 1 --mtu 1500"
t0=$(date +%s.%N)
"$BENCH" --real --only tcp-qemu-a,tcp-a-qemu --datapath bridge,vdevd --runs 1 --duration 1 --mtu 1500 \
    --vdevd "$VDEVD" --json >"$dir/guest.json" 2>"$dir/guest.err"
rc=$?
echo "== $(echo "$(date +%s.%N) - $t0" | bc) s, exit $rc"
cat "$dir/guest.err"

python3 - "$dir/guest.json" "$rc" <<'PY'
import json, os, sys
path, rc = sys.argv[1], int(sys.argv[2])
ok = True
def fail(msg):
    global ok
    ok = False
    print("FAIL:", msg)

try:
    doc = json.load(open(path))
except ValueError as e:
    print("FAIL: vdev-bench printed no JSON:", e)
    print(open(path).read())
    sys.exit(1)

skipped = doc.get("skipped", [])
for s in skipped:
    if s["what"] == "the QEMU guest scenarios" and len(skipped) == 1 and rc == 0:
        print("SKIP-REASON:", s["reason"])
        sys.exit(77)
    fail("skipped %s: %s" % (s["what"], s["reason"]))
if rc != 0:
    fail("vdev-bench exited %d" % rc)
if doc.get("error"):
    fail("error: %s" % doc["error"])
if not doc.get("cleanup", {}).get("ok"):
    fail("leftovers: %s" % doc.get("cleanup", {}).get("leftovers"))

q = doc["config"].get("qemu") or {}
ready = q.get("ready") or ""
print("qemu: -accel %s -cpu %s, vhost %s, boot %s s" % (q.get("accel"), q.get("cpu"),
      "on" if q.get("vhost") else "off", q.get("boot_s")))
print("     ", ready)
if q.get("error") or "ready ip=" not in ready:
    fail("the guest did not boot: %s" % q.get("error"))
else:
    bits = ready.split("virtio_features=")[1].split()[0] if "virtio_features=" in ready else ""
    for bit, name in ((0, "VIRTIO_NET_F_CSUM"), (11, "VIRTIO_NET_F_HOST_TSO4")):
        if len(bits) <= bit or bits[bit] != "1":
            fail("the guest's virtio-net lacks %s (QEMU's default vnet_hdr gives it): %s" % (name, ready))
if not q.get("accel"):
    fail("the report does not say the accelerator")
if q.get("vhost") != os.access("/dev/vhost-net", os.R_OK | os.W_OK):
    fail("vhost %s, but /dev/vhost-net is %s" % (q.get("vhost"),
         "there" if os.path.exists("/dev/vhost-net") else "absent"))

# Bytes both ways through each datapath.
seen = set()
for sc in doc.get("scenarios", []):
    for r in sc["results"]:
        key = (sc["scenario"], r["datapath"])
        seen.add(key)
        runs = r.get("runs", [])
        if r.get("errors"):
            fail("%s %s: %s" % (key + (r["errors"],)))
        if len(runs) != 1 or not runs[0].get("bytes", 0) > 0:
            fail("%s %s: no bytes moved: %s" % (key + (runs,)))
        else:
            print("%-10s %-6s %10d bytes in %.2f s" % (sc["scenario"], r["datapath"], runs[0]["bytes"],
                  runs[0]["seconds"]))
for want in [(s, d) for s in ("tcp-qemu-a", "tcp-a-qemu") for d in ("bridge", "vdevd")]:
    if want not in seen:
        fail("%s through %s not measured" % want)

# One boot, a set-up per datapath on it; the tap's and vdevd's counters.
setups = [su for su in doc.get("setups", []) if su.get("qemu_guest")]
if sorted(su["datapath"] for su in setups) != ["bridge", "vdevd"]:
    fail("set-ups on the guest: %s" % [su["datapath"] for su in setups])
tap = doc["config"]["prefix"] + "q"
for su in setups:
    dp = su["datapath"]
    if su.get("error") or su.get("stop_problem"):
        fail("%s: %s %s" % (dp, su.get("error"), su.get("stop_problem")))
    t = su.get("qemu_tap")
    if not t:
        fail("%s: the tap's counters were not read" % dp)
        continue
    print("%-6s tap %s (kernel): from the guest %d skbs, to it %d" % (dp, tap, t["rx_packets"], t["tx_packets"]))
    if not (t["rx_packets"] > 0 and t["tx_packets"] > 0):
        fail("%s: the tap did not move frames both ways: %s" % (dp, t))
    st = su.get("datapath_stats") or {}
    ports = {p["name"]: p for p in st.get("ports", [])}
    p = ports.get(tap)
    if p is None:
        fail("%s: no statistics for the tap %s: %s" % (dp, tap, sorted(ports)))
        continue
    if dp == "bridge":
        if not p["tx_packets"] > 0:
            fail("bridge: its port %s sent nothing toward the guest" % tap)
        continue
    prog = p["xdp_prog"]
    drops = sum(p["drops"].values())
    verdicts = prog["pass"] + prog["redirect"] + prog["no_socket"] + prog["fast"]
    print("vdevd  tap %s: rx %d tx %d frames; from the guest %d skbs = pass %d + redirect %d + no_socket %d"
          " + fast %d + drops %d" % (tap, p["rx_packets"], p["tx_packets"], t["rx_packets"], prog["pass"],
                                     prog["redirect"], prog["no_socket"], prog["fast"], drops))
    if t["rx_packets"] != verdicts + drops:
        fail("vdevd: the tap's skbs from the guest (%d) != its program's verdicts (%d) + drops (%d)"
             % (t["rx_packets"], verdicts, drops))
    if not (p["rx_packets"] > 0 and p["tx_packets"] > 0):
        fail("vdevd: it received %d and sent %d frames on the tap" % (p["rx_packets"], p["tx_packets"]))
    # With no drop anywhere on the tap, the bytes match both ways: what the
    # tap took from the guest vdevd received, what vdevd sent the tap handed
    # to the guest (drops are counted in frames, so only then).
    if drops == 0 and p["dev"]["tx_dropped"] == 0 and t["rx_dropped"] == 0 and t["tx_dropped"] == 0:
        for mine, taps, what in (("rx_bytes", "rx_bytes", "from the guest"), ("tx_bytes", "tx_bytes", "to the guest")):
            if p[mine] != t[taps]:
                fail("vdevd: %s %d bytes by its count, %d by the tap's" % (what, p[mine], t[taps]))

if not ok:
    print(open(path).read())
sys.exit(0 if ok else 1)
PY
res=$?
if [ "$res" = 77 ]; then
    skip "$(grep -o 'skipping the QEMU guest scenarios: .*' "$dir/guest.err" | head -1)"
fi
[ "$res" = 0 ] && echo "PASS: vdev_bench_guest"
exit "$res"
