#!/bin/sh
# Runs vdev-bench (tools/vdev-bench) for both scenarios and keeps the results:
#
#   scripts/bench-datapath.sh BUILD_DIR [extra vdev-bench flags]
#
# For each scenario (veth-veth, veth-tap) the table goes to stdout and to
# BUILD_DIR/bench-datapath-SCENARIO.txt, the JSON to
# BUILD_DIR/bench-datapath-SCENARIO.json. Needs root. Results on a small or
# busy machine are noisy: run it on an idle host (vdev-bench warns when other
# tasks took the datapath CPU). SCENARIOS (env) picks the scenarios.
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [vdev-bench flags...]" >&2
    exit 2
fi
build=$1
shift
bin="$build/tools/vdev-bench/vdev-bench"
if [ ! -x "$bin" ]; then
    echo "bench-datapath: $bin not found (cmake --build $build --target vdev-bench)" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "bench-datapath: needs root" >&2
    exit 1
fi

rc=0
for sc in ${SCENARIOS:-veth-veth veth-tap}; do
    json="$build/bench-datapath-$sc.json"
    txt="$build/bench-datapath-$sc.txt"
    echo "== $bin --scenario $sc $*"
    # One measurement, two outputs: JSON from the run, the table rendered from it.
    if ! "$bin" --scenario "$sc" --json "$@" >"$json"; then
        rc=1
    fi
    python3 - "$json" <<'PY' | tee "$txt"
import json, sys
doc = json.load(open(sys.argv[1]))
c = doc["config"]
print("%s, sink %s, %d-byte frames, %d run(s) x %.1f s, generator CPU %d, datapath CPU %d, NAPI %s, "
      "bridge-nf-call-iptables %s, kernel %s"
      % (c["scenario"], c.get("sink", "?"), c["frame_size"], c["runs"], c["duration_s"], c["generator_cpu"],
         c["datapath_cpu"], c["napi"], c.get("bridge_nf_call_iptables", "?"), doc["host"]["kernel"]))
print("| datapath | forwarded Mpps | offered Mpps | loss % | CPU s / M frames |")
print("|---|---:|---:|---:|---:|")
fwd = {}
for r in doc["results"]:
    m = r["median"]
    if m is None:
        print("| %s | failed: %s | | | |" % (r["datapath"], "; ".join(r["errors"])))
        continue
    fwd[r["datapath"]] = m["forwarded_mpps"]
    print("| %s | %.3f | %.3f | %.1f | %.3f |" % (r["datapath"], m["forwarded_mpps"], m["offered_mpps"],
                                                 m["loss_pct"], m["cpu_s_per_mframe"]))
for s in doc["skipped"]:
    print("| %s | skipped: %s | | | |" % (s["datapath"], s["reason"]))
if fwd.get("vdevd") and fwd.get("bridge"):
    print("vdevd / bridge: %.2f" % (fwd["vdevd"] / fwd["bridge"]))
if doc.get("error"):
    print("error:", doc["error"])
PY
done
exit $rc
