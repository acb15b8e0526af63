# Shared by the bench-*.sh scripts that compare vdevd with the Linux bridge
# between containers (network namespaces) with real senders. A script
# sources it with its arguments -- the options every one takes, --build DIR
# (the build tree, ./build), --runs N (3), --seconds S (5) and --help (the
# script's leading comment) set build, runs and secs -- then sets t (a
# prefix for names, unique to the run), ctrs (the containers' namespace
# names, in order), subnet (a /24 in 198.18.0.0/15, "198.18.98") and
# port_opts (may be empty), and calls bench_init. Gives: dir, pids, vdevd,
# vdevctl, h (the switch's namespace), here, teardown, json, setup_ns,
# setup_ctrs, with_bridge, with_vdevd, tcp, median, report_medians.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=$(basename "$0")
build=./build runs=3 secs=5
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "$me: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
vdevd=$build/daemon/vdevd vdevctl=$build/tools/vdevctl/vdevctl

bench_init() {
  [ "$(id -u)" -eq 0 ] || { echo "$me: needs root" >&2; exit 1; }
  command -v iperf3 >/dev/null || { echo "$me: needs iperf3" >&2; exit 1; }
  [ -x "$vdevd" ] && [ -x "$vdevctl" ] || { echo "$me: no vdevd/vdevctl in $build" >&2; exit 1; }
  h=$t-h
  dir=$(mktemp -d "/tmp/vdev-${me%.sh}.XXXXXX")
  pids=()
  trap 'teardown; rm -rf "$dir"' EXIT
}

teardown() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  pids=()
  for n in "${ctrs[@]}" "$h"; do ip netns del "$n" 2>/dev/null; done
}

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

setup_ns() {
  for n in "$h" "${ctrs[@]}"; do ip netns add "$n"; ip -n "$n" link set lo up; done
}

# Container i (from 1) gets $subnet.i/24 on eth0.
setup_ctrs() {
  local i=1 c
  for c in "${ctrs[@]}"; do
    ip -n "$c" link set eth0 up
    ip -n "$c" addr add "$subnet.$i/24" dev eth0
    i=$((i + 1))
  done
}

with_bridge() {
  local c i=0
  ip -n "$h" link add br0 type bridge
  ip -n "$h" link set br0 up
  for c in "${ctrs[@]}"; do
    ip -n "$h" link add p$i type veth peer name eth0 netns "$c"
    ip -n "$h" link set p$i master br0 up
    i=$((i + 1))
  done
  setup_ctrs
}

# vdevd with extra flags ($@), its ports created as vdev-cni does, each
# with the `vdevctl port add` options in port_opts[i] (if set).
with_vdevd() {
  local c i=0
  rm -f "$dir/vdevd.log"  # a previous vdevd's "ready" is not this one's
  ip netns exec "$h" "$vdevd" --socket "$dir/s.sock" --no-state "$@" >"$dir/vdevd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do grep -q "vdevd: ready" "$dir/vdevd.log" && break; sleep 0.05; done
  grep -q "vdevd: ready" "$dir/vdevd.log" || { echo "vdevd did not start: $(cat "$dir/vdevd.log")" >&2; exit 1; }
  for c in "${ctrs[@]}"; do
    # shellcheck disable=SC2086 # port_opts[i] is a list of words
    ip netns exec "$h" "$vdevctl" -S "$dir/s.sock" port add p$i type veth ${port_opts[$i]:-} \
      create netns "$c" peer eth0 >/dev/null
    i=$((i + 1))
  done
  setup_ctrs
}

# One TCP stream from container 1 to container 2 for $secs seconds (iperf3;
# its client takes the extra arguments $@: -R for container 2 to 1); prints
# Gbit/s.
tcp() {
  local out
  ip netns exec "${ctrs[1]}" iperf3 -s -1 -D -p 5398 -I "$dir/srv.pid" >/dev/null 2>&1
  for _ in $(seq 100); do ip netns exec "${ctrs[1]}" ss -ltn | grep -q ":5398 " && break; sleep 0.05; done
  out=$(timeout $((secs + 20)) ip netns exec "${ctrs[0]}" iperf3 -c "$subnet.2" -p 5398 -t "$secs" -J "$@" 2>/dev/null)
  echo "$out" | json "round(d['end']['sum_received']['bits_per_second']/1e9, 2)" 2>/dev/null || echo 0
  [ -f "$dir/srv.pid" ] && kill "$(cat "$dir/srv.pid")" 2>/dev/null
  rm -f "$dir/srv.pid"
}

median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

# For each of the datapaths $@: the median of res[DUT] (Gbit/s) and its
# share of res[bridge]'s.
report_medians() {
  local b m dut
  b=$(median ${res[bridge]})
  for dut in "$@"; do
    m=$(median ${res[$dut]})
    echo "$dut: median $m Gbit/s, $(python3 -c "print(round($m/$b, 2) if $b > 0 else 'n/a')") x the bridge"
  done
}
