#!/bin/bash
# host_veth_test.sh BUILD: the skb fast path into a veth whose peer is in
# vdevd's own network namespace (a host-side port: `vdevctl port add h0
# type veth create peer h0p`, with an address on h0p), next to a container
# on a veth whose peer is in a namespace of its own.
#
# The kernel refuses bpf_redirect_peer into a peer in the caller's own
# namespace (skb_do_redirect drops it, after the program counted the frame
# as sent), so the container's learned unicast to the host side used to be
# lost: 0 of 10 pings answered. Now vdevd uses the peer redirect only for a
# veth whose peer is elsewhere (Port::redirectPeer), and bpf_redirect to
# the host-side veth's egress otherwise. Checked: every ping answered both
# ways, and on the fast path (its counters on both ports: not a fallback to
# vdevd's own path), and the frames the fast path counted as sent arrived
# (the peer's rx covers them).
#
# vdevd itself runs in a namespace the test makes, so the "host side" is
# that namespace's, and nothing touches the machine's own. Skipped (77)
# when not root. Everything it made is removed on exit, pass or fail.
set -u
build=${1:?usage: host_veth_test.sh BUILD}
vdevd=$build/daemon/vdevd
vdevctl=$build/tools/vdevctl/vdevctl

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, tc programs, AF_XDP)"
for t in ip python3 ping; do command -v $t >/dev/null 2>&1 || skip "$t is not installed"; done
for b in "$vdevd" "$vdevctl"; do [ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }; done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

tag=$(printf 'hv%04x' $(($$ % 65536)))
nsv=vdev-hv-$tag-v nsc=vdev-hv-$tag-c
h0=${tag}h h0p=${tag}q c0=${tag}c
dir=$(mktemp -d /tmp/vdev-hv.XXXXXX)
sock=$dir/vdevd.sock
vp=

cleanup() {
  [ -n "$vp" ] && kill -TERM "$vp" 2>/dev/null && wait "$vp" 2>/dev/null
  for n in "$nsv" "$nsc"; do ip netns del "$n" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
ctl() { ip netns exec "$nsv" "$vdevctl" -S "$sock" "$@"; }

for n in "$nsv" "$nsc"; do ip netns add "$n" && ip -n "$n" link set lo up || exit 1; done

ip netns exec "$nsv" "$vdevd" --socket "$sock" --no-state >"$dir/vdevd.log" 2>&1 &
vp=$!
for _ in $(seq 200); do grep -q "vdevd: ready" "$dir/vdevd.log" && break; kill -0 $vp 2>/dev/null || break; sleep 0.05; done
grep -q "vdevd: ready" "$dir/vdevd.log" || { echo "FAIL: vdevd did not start: $(cat "$dir/vdevd.log")"; exit 1; }

# The host side: the peer stays in vdevd's namespace.
ctl port add "$h0" type veth create peer "$h0p" peer-mac 02:5c:00:00:00:01 >"$dir/add.out" 2>&1 ||
  { echo "FAIL: port add $h0: $(cat "$dir/add.out")"; exit 1; }
ip -n "$nsv" addr add 198.18.15.1/24 dev "$h0p"
ip -n "$nsv" link set "$h0p" up
# The container.
ctl port add "$c0" type veth create netns "$nsc" peer eth0 peer-mac 02:5c:00:00:00:02 >"$dir/add.out" 2>&1 ||
  { echo "FAIL: port add $c0: $(cat "$dir/add.out")"; exit 1; }
ip -n "$nsc" addr add 198.18.15.2/24 dev eth0
ip -n "$nsc" link set eth0 up

for p in "$h0" "$c0"; do
  hook=$(ctl -j port show | json "[x['hook'] for x in d if x['name']=='$p'][0]")
  [ "$hook" = tc ] && ok "$p at the tc hook" || fail "$p at hook '$hook', not tc"
done
# Both live before the traffic.
for _ in $(seq 100); do
  [ "$(ctl -j port show | json "all(x['live'] for x in d)")" = True ] && break
  sleep 0.05
done

fast() {  # what port $1's program sent on the fast path
  ctl -j stats | json "[x['xdp_prog']['fast'] for x in d['ports'] if x['name']=='$1'][0]"
}
rx_of_peer() { ip -n "$nsv" -j -s link show "$h0p" | json "d[0]['stats64']['rx']['packets']"; }

# pings FROM_NS ADDR SENDER_PORT TO_PORT WHAT: 10 pings all answered, and
# at least 9 of them taken by SENDER_PORT's program on the fast path.
pings() {
  local f0 f1 out
  f0=$(fast "$3")
  if out=$(ip netns exec "$1" ping -c 10 -i 0.1 -W 2 "$2" 2>&1); then
    ok "$5: $(echo "$out" | grep -o '[0-9]* received')"
  else
    fail "$5: $(echo "$out" | grep -E 'received|error' | head -2)"
  fi
  f1=$(fast "$3")
  [ $((f1 - f0)) -ge 9 ] && ok "$((f1 - f0)) frames to $4 on the fast path" ||
    fail "only $((f1 - f0)) frames to $4 on the fast path"
}
pings "$nsc" 198.18.15.1 "$c0" "$h0" "container -> host side"
pings "$nsv" 198.18.15.2 "$h0" "$c0" "host side -> container"

# What vdevd counted as sent to h0 (its own path and the fast path)
# arrived at its peer: no frame counted as sent and lost.
sent=$(ctl -j stats | json "[x['tx_packets'] for x in d['ports'] if x['name']=='$h0'][0]")
got=$(rx_of_peer)
[ "$got" -ge "$sent" ] && ok "$h0p received $got of the $sent sent to $h0" ||
  fail "$h0p received $got, but $sent were counted as sent to $h0"

kill -TERM "$vp" && wait "$vp"
rc=$?
vp=
[ $rc -eq 0 ] && ok "vdevd stopped cleanly" || fail "vdevd exited $rc: $(tail -5 "$dir/vdevd.log")"

if [ $failures -ne 0 ]; then
  echo "--- vdevd log"; cat "$dir/vdevd.log"
  echo "FAILED: $failures"
  exit 1
fi
echo "PASSED"
