#!/bin/bash
# What scraping vdevd's /metrics every 100 ms costs forwarding
# (docs/performance.md "Scraping /metrics"): vdev-bench's default scenario
# (veth -> veth, 64-byte frames, tc sink) with the vdevd datapath (every
# frame through vdevd), vdevd started with --metrics-listen, in rounds of
# two invocations (in turn first and second): one with nobody scraping, one
# with a scraper that GETs /metrics every 100 ms on one kept-alive
# connection, as Prometheus does. Prints each run's forwarded Mpps and the
# ratio of the medians.
#
# Usage: sudo flock /tmp/vdev-e2e.lock scripts/bench-scrape.sh [BUILD_DIR] [ROUNDS] [VDEV-BENCH OPTION ...]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
shift $(($# > 2 ? 2 : $#))
bench=$build/tools/vdev-bench/vdev-bench
[ -x "$bench" ] || { echo "bench-scrape: no $bench (cmake --build $build --target vdev-bench vdevd)" >&2; exit 1; }
python=/usr/bin/python3
[ -x "$python" ] || python=python3
tmp=$(mktemp -d)
scraper=
cleanup() {
  if [ -n "$scraper" ]; then kill "$scraper" 2>/dev/null || true; wait "$scraper" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# The scraper: enters the network namespace vdev-bench runs vdevd in (the
# newest /run/netns/vb*-dut) for its socket, then GETs /metrics every
# 100 ms until SIGTERM or 120 s; prints "scrapes N errors N bytes N".
cat >"$tmp/scrape.py" <<'EOF'
import ctypes, glob, http.client, os, signal, sys, time
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
ok = errors = size = 0
conn = None
deadline = time.monotonic() + 120
next_t = time.monotonic()
while not stop and time.monotonic() < deadline:
    next_t += 0.1
    try:
        if conn is None:
            nss = sorted(glob.glob("/run/netns/vb*-dut"), key=os.path.getmtime)
            if not nss:
                raise OSError("no namespace yet")
            fd = os.open(nss[-1], os.O_RDONLY)
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            os.close(fd)
            conn = http.client.HTTPConnection("127.0.0.1", 9469, timeout=2)
            conn.connect()
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise OSError("status %d" % r.status)
        ok += 1
        size += len(body)
    except (OSError, http.client.HTTPException):
        errors += 1
        if conn is not None:
            conn.close()
        conn = None
    time.sleep(max(0.0, next_t - time.monotonic()))
print("scrapes %d errors %d bytes %d" % (ok, errors, size))
EOF

run() {  # run MODE ROUND [VDEV-BENCH OPTION ...]
  local mode=$1 round=$2
  shift 2
  local out=$tmp/$mode.$round.json
  if [ "$mode" = scraped ]; then
    "$python" "$tmp/scrape.py" >"$tmp/$mode.$round.scrapes" &
    scraper=$!
  fi
  "$bench" --datapath vdevd --runs 1 --latency off --json --vdevd-arg=--metrics-listen=127.0.0.1:9469 "$@" >"$out"
  if [ -n "$scraper" ]; then
    kill "$scraper"
    wait "$scraper" || true
    scraper=
  fi
  "$python" -c 'import json,sys
d=json.load(open(sys.argv[1]))
r=d["results"][0]["runs"][0]
print(r["forwarded_mpps"], "noisy" if r["noisy"] else "")' "$out"
}

declare -a quiet scraped
for r in $(seq "$rounds"); do
  # Odd rounds start quiet, even ones scraped: an order effect cancels out.
  if [ $((r % 2)) = 1 ]; then
    q=$(run quiet "$r" "$@")
    s=$(run scraped "$r" "$@")
  else
    s=$(run scraped "$r" "$@")
    q=$(run quiet "$r" "$@")
  fi
  quiet+=("${q%% *}")
  scraped+=("${s%% *}")
  echo "round $r: quiet ${q} Mpps, scraped ${s} Mpps ($(cat "$tmp/scraped.$r.scrapes"))"
done
"$python" -c 'import statistics,sys
n=len(sys.argv)//2
q=[float(x) for x in sys.argv[1:1+n]]; s=[float(x) for x in sys.argv[1+n:]]
mq, ms = statistics.median(q), statistics.median(s)
print("median quiet %.4f Mpps, scraped %.4f Mpps, ratio scraped/quiet %.3f" % (mq, ms, ms / mq))' "${quiet[@]}" "${scraped[@]}"
