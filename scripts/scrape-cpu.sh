#!/bin/bash
# CPU time one scrape of vdevd's /metrics costs each of its threads
# (docs/performance.md "Scraping /metrics"): an idle vdevd with two veth
# ports (both pairs inside a namespace of this script's), 30 s with nobody
# scraping, then 30 s with a scrape every 100 ms; each thread's run time
# from /proc/PID/task/TID/schedstat. Removes everything at exit.
#
# Usage: sudo flock /tmp/vdev-e2e.lock scripts/scrape-cpu.sh [BUILD_DIR]
set -euo pipefail
vdevd=$(realpath "${1:-build}/daemon/vdevd")
[ -x "$vdevd" ] || { echo "scrape-cpu: no $vdevd" >&2; exit 1; }
python=/usr/bin/python3
[ -x "$python" ] || python=python3
ns=vsc$$
out=$(mktemp)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  ip netns del "$ns" 2>/dev/null || true
  rm -f "$out" "$out.n"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
for i in 1 2; do
  ip -n "$ns" link add vsch$i address 02:76:73:00:00:0$i type veth peer name vscp$i address 02:76:73:00:01:0$i
  ip -n "$ns" link set vsch$i up
  ip -n "$ns" link set vscp$i up
done
ip netns exec "$ns" "$vdevd" --port vsch1 --port vsch2 --no-socket --no-state \
  --metrics-listen 127.0.0.1:9469 >"$out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'vdevd: ready' "$out" && break; sleep 0.1; done
grep -q 'vdevd: ready' "$out" || { cat "$out" >&2; exit 1; }
# `ip netns exec` execs vdevd: the same pid.
threads() { for t in /proc/$pid/task/*; do echo "$(basename "$t") $(cut -d' ' -f1 "$t/schedstat")"; done; }
sleep 1
a=$(threads); sleep 30; b=$(threads)
ip netns exec "$ns" "$python" -c '
import http.client, time
c = http.client.HTTPConnection("127.0.0.1", 9469)
n, t0 = 0, time.monotonic()
nxt = t0
while time.monotonic() - t0 < 30:
    nxt += 0.1
    c.request("GET", "/metrics"); r = c.getresponse(); r.read(); n += 1
    time.sleep(max(0, nxt - time.monotonic()))
print(n)' >"$out.n" &
scraper=$!
c=$(threads); wait $scraper; d=$(threads)
n=$(cat "$out.n")
echo "vdevd $pid, $n scrapes in 30 s"
paste <(echo "$a") <(echo "$b") <(echo "$c") <(echo "$d") | awk -v main="$pid" -v n="$n" '{
  idle = ($4 - $2) / 1e6; scraped = ($8 - $6) / 1e6
  printf "thread %s (%s): %.1f ms idle, %.1f ms scraped: %.3f ms per scrape\n", $1,
         $1 == main ? "control" : "datapath", idle, scraped, (scraped - idle) / n }'
