#!/bin/sh
# Runs the PtrRing benchmark (tests/bench/ring_bench.cpp) and prints a
# markdown table of Mpointers/s per variant x producers x batch size.
#
#   scripts/bench-ring.sh BUILD_DIR [extra ring_bench / Google Benchmark flags]
#
# The raw results go to BUILD_DIR/ring_bench.json (Google Benchmark JSON),
# the console output to BUILD_DIR/ring_bench.log.
# By default each benchmark is repeated REPS times (env, default 3) and the
# table shows the median (repetitions interleaved at random); pass e.g.
# --ring_items=200000 for a quick run.
# Results on a small or busy machine are noisy: run it on an idle host.
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [ring_bench flags...]" >&2
    exit 2
fi
build=$1
shift
bin="$build/tests/bench/ring_bench"
json="$build/ring_bench.json"
reps=${REPS:-3}

if [ ! -x "$bin" ]; then
    echo "bench-ring: $bin not found (build with VDEV_BUILD_BENCH=ON)" >&2
    exit 1
fi

log="$build/ring_bench.log"
# Console output and the context banner (stderr) go to a log, shown on failure.
# Random interleaving runs the repetitions of all variants in random order,
# so a burst of outside load spreads over variants instead of sinking one.
if ! "$bin" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_enable_random_interleaving=true \
    --benchmark_out="$json" --benchmark_out_format=json "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "bench-ring: $bin failed" >&2
    exit 1
fi

python3 - "$json" "$reps" <<'PY'
import json, re, sys

with open(sys.argv[1]) as f:
    doc = json.load(f)

# name: "<variant>/batch:<b>/producers:<p>/real_time"; keep the median when
# repetitions were run, the single run otherwise.
rows, batches, order = {}, set(), []
have_median = any(b.get("aggregate_name") == "median" for b in doc["benchmarks"])
for b in doc["benchmarks"]:
    if b.get("error_occurred"):
        print(f"bench-ring: {b['name']}: {b.get('error_message')}", file=sys.stderr)
        continue
    if have_median and b.get("aggregate_name") != "median":
        continue
    m = re.match(r"([^/]+)/batch:(\d+)/producers:(\d+)", b["run_name"])
    if not m:
        continue
    variant, batch, prod = m.group(1), int(m.group(2)), int(m.group(3))
    key = (variant, prod)
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key][batch] = b["items_per_second"] / 1e6
    batches.add(batch)

batches = sorted(batches)
ctx = doc.get("context", {})
how = f"median of {sys.argv[2]} runs" if have_median else "single run"
print(f"Mpointers/s, {how}; {ctx.get('num_cpus')} CPUs, ring capacity {ctx.get('ring_capacity')}, "
      f"{ctx.get('ring_items')} pointers per iteration, pinning: {ctx.get('ring_pin')}\n")
print("| variant | producers | " + " | ".join(f"batch {b}" for b in batches) + " |")
print("|---|---:|" + "---:|" * len(batches))
# Fixed row order (interleaved runs report in random order): ours first, then
# the alternatives; unknown variants last.
known = ["ptr_ring", "ptr_ring_flush", "boost_spsc", "boost_queue", "mutex_frame", "mutex_batch"]
rank = lambda v: known.index(v) if v in known else len(known)
for key in sorted(order, key=lambda k: (k[1], rank(k[0]), k[0])):
    variant, prod = key
    cells = [f"{rows[key][b]:.1f}" if b in rows[key] else "-" for b in batches]
    print(f"| {variant} | {prod} | " + " | ".join(cells) + " |")
PY
echo
echo "JSON: $json (log: $log)"
