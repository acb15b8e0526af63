#!/bin/bash
# multihost_test.sh BUILD: two hosts, one vdevd each, joined by an uplink.
#
# Each "host" is a network namespace with its own vdevd (its own control
# socket and state file) and containers attached through vdev-cni (ADD as a
# runtime calls it, host-local IPAM, default offloads). The hosts' switches
# are joined by an uplink, once each way:
#   vxlan  a VXLAN device on each host over an underlay veth between them,
#          as flannel's VXLAN backend joins bridges; the containers take its
#          MTU from vdev-cni's "uplink";
#   veth   a plain veth between the hosts, standing in for a NIC.
# For each: the ports take the hooks vdevd picks by default; ping (ARP)
# and IPv6 neighbour discovery across; kernel TCP with a checked payload
# both ways across, and between two containers of one host; a broadcast
# reaches every other container once, the other host's too, and no frame of
# the underlay enters a switch; a container deleted on one host and added
# with the same MAC on the other is reached there; one host's vdevd is
# restarted (SIGTERM, then again with its state file) while the other
# host's containers keep talking, and afterwards traffic crosses again;
# every vdevd's frame pool adds up and it stops cleanly (exit 0).
#
# Skipped (77) when not root, or without python3, the vxlan module or
# host-local. Everything it made is removed on exit, pass or fail.
set -u

build=${1:?usage: multihost_test.sh BUILD}
vdevd=$build/daemon/vdevd
vdevctl=$build/tools/vdevctl/vdevctl
cni=$build/tools/vdev-cni/vdev-cni
here=$(cd "$(dirname "$0")" && pwd)
hostlocal_dir=/usr/lib/cni

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, tc programs, AF_XDP)"
for t in ip python3 ethtool ss; do
  command -v $t >/dev/null 2>&1 || skip "$t is not installed (scripts/install-deps.sh installs it)"
done
[ -x $hostlocal_dir/host-local ] || skip "no $hostlocal_dir/host-local (containernetworking-plugins)"
for b in "$vdevd" "$vdevctl" "$cni"; do
  [ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

tag=$(printf 'mh%04x' $(($$ % 65536)))
ha=vdev-$tag-ha hb=vdev-$tag-hb
ctrs="a1 a2 a3 b1 b2"
dir=$(mktemp -d /tmp/vdev-mh.XXXXXX)
declare -A vpid=()

ns_of() { echo "vdev-$tag-$1"; }            # a container's namespace
host_of() { [ "${1:0:1}" = a ] && echo "$ha" || echo "$hb"; }
side() { [ "$1" = "$ha" ] && echo A || echo B; }

cleanup() {
  for h in A B; do
    p=${vpid[$h]:-}
    [ -n "$p" ] && kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  for c in $ctrs; do ip netns del "$(ns_of $c)" 2>/dev/null; done
  ip netns del "$ha" 2>/dev/null
  ip netns del "$hb" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
ctl() { local h=$1; shift; ip netns exec "$h" "$vdevctl" -S "$dir/$(side "$h").sock" "$@"; }

# vdevd on host h (ha or hb) with its uplink port; restores its containers'
# ports from the state file when it has one.
start_vdevd() {
  local h=$1 s
  s=$(side "$h")
  ip netns exec "$h" "$vdevd" --port up0 --socket "$dir/$s.sock" --state "$dir/$s.state" \
    >>"$dir/$s.log" 2>&1 &
  vpid[$s]=$!
  for _ in $(seq 200); do
    [ "$(grep -c "vdevd: ready" "$dir/$s.log")" -ge "${2:-1}" ] && return 0
    kill -0 "${vpid[$s]}" 2>/dev/null || break
    sleep 0.05
  done
  fail "vdevd on host $s did not start: $(tail -5 "$dir/$s.log")"
  return 1
}

stop_vdevd() {
  local s
  s=$(side "$1")
  kill -TERM "${vpid[$s]}"
  wait "${vpid[$s]}"
  local rc=$?
  vpid[$s]=
  [ $rc -eq 0 ] && ok "vdevd on host $s stopped (exit 0)" || fail "vdevd on host $s exited $rc: $(tail -5 "$dir/$s.log")"
}

# CNI on container c's host: cni CMD c [CNI_ARGS]; the network configuration
# is $dir/net-$host.json.
cni() {
  local cmd=$1 c=$2 args=${3:-} h
  h=$(host_of "$c")
  ip netns exec "$h" env CNI_COMMAND="$cmd" CNI_CONTAINERID="ctr-$tag-$c" CNI_NETNS="/run/netns/$(ns_of "$c")" \
    CNI_IFNAME=eth0 CNI_PATH="$hostlocal_dir" CNI_ARGS="$args" "$cni" <"$dir/net-$(side "$h").json"
}

addr_of() { ip -n "$(ns_of "$1")" -j addr show dev eth0 | json "[a['local'] for a in d[0]['addr_info'] if a['family']=='inet'][0]"; }
mac_of() { ip -n "$(ns_of "$1")" -j link show dev eth0 | json "d[0]['address']"; }

# Kernel TCP from container $1 to $2, every byte checked.
tcp() {
  local from=$1 to=$2 bytes=$((16 << 20)) port=5393 to_ip sp sent start end
  to_ip=$(addr_of "$to")
  ip netns exec "$(ns_of "$to")" python3 "$here/tcp_check.py" server $port >"$dir/srv.out" 2>&1 &
  sp=$!
  for _ in $(seq 100); do ip netns exec "$(ns_of "$to")" ss -ltn | grep -q ":$port " && break; sleep 0.05; done
  start=$(date +%s.%N)
  sent=$(timeout 120 ip netns exec "$(ns_of "$from")" python3 "$here/tcp_check.py" client "$to_ip" $port $bytes 2>&1)
  end=$(date +%s.%N)
  wait $sp
  if [ -n "$sent" ] && [ "$sent" = "$(cat "$dir/srv.out")" ]; then
    ok "tcp $from -> $to: $bytes bytes intact ($(python3 -c "print(round($bytes*8/($end-$start)/1e9,2))") Gbit/s)"
  else
    fail "tcp $from -> $to: sent '$sent', received '$(cat "$dir/srv.out")'"
  fi
}

# Pings until `n` replies came back (deadline 20 s): ARP across first.
ping_ok() {
  local from=$1 to=$2 n=${3:-3} flags=${4:-}
  local out got
  out=$(ip netns exec "$(ns_of "$from")" ping $flags -c "$n" -i 0.2 -w 20 "$to" 2>&1)
  got=$(echo "$out" | sed -n 's/.* \([0-9][0-9]*\) received.*/\1/p')
  [ "${got:-0}" -ge "$n" ] && ok "ping${flags:+ $flags} $from -> $to" ||
    fail "ping${flags:+ $flags} $from -> $to: $(echo "$out" | tail -2 | head -1)"
}

# Every vdevd's pool adds up and no frame came to the punt device without a port.
check_accounting() {
  local h stats
  for h in "$ha" "$hb"; do
    stats=$(ctl "$h" -j stats)
    [ "$(echo "$stats" | json "d['pool']['sum'] == d['pool']['total']")" = True ] &&
      ok "host $(side "$h"): frame pool adds up" || fail "host $(side "$h"): pool $(echo "$stats" | json "d['pool']")"
    [ "$(echo "$stats" | json "d['punt']['drops']['no_route']")" = 0 ] ||
      fail "host $(side "$h"): punt no_route $(echo "$stats" | json "d['punt']['drops']['no_route']")"
  done
}

run() {
  local mode=$1
  echo "== two hosts joined by a $mode uplink"
  rm -f "$dir"/*.state "$dir"/*.log
  rm -rf "$dir/ipam-A" "$dir/ipam-B"
  ip netns add "$ha" && ip netns add "$hb" || { fail "ip netns add"; return; }
  for h in "$ha" "$hb"; do ip -n "$h" link set lo up; done
  for c in $ctrs; do ip netns add "$(ns_of $c)" && ip -n "$(ns_of $c)" link set lo up; done
  local mtu=1500 uplink_conf=""
  if [ "$mode" = vxlan ]; then
    # The underlay: a veth between the hosts, addresses of their own; the
    # VXLAN device rides on it (its MTU: 1450, the underlay's less 50).
    ip -n "$ha" link add ul0 type veth peer name ul0 netns "$hb"
    ip -n "$ha" addr add 198.19.96.1/24 dev ul0
    ip -n "$hb" addr add 198.19.96.2/24 dev ul0
    ip -n "$ha" link set ul0 up
    ip -n "$hb" link set ul0 up
    ip -n "$ha" link add up0 type vxlan id 42 local 198.19.96.1 remote 198.19.96.2 dstport 4789 dev ul0 ||
      { echo "SKIPPED: no vxlan devices"; exit 77; }
    ip -n "$hb" link add up0 type vxlan id 42 local 198.19.96.2 remote 198.19.96.1 dstport 4789 dev ul0
    mtu=1450
    uplink_conf='"uplink": "up0",'
  else
    ip -n "$ha" link add up0 type veth peer name up0 netns "$hb"
  fi
  for h in "$ha" "$hb"; do
    ip -n "$h" link set up0 up
    ip netns exec "$h" sysctl -qw net.ipv6.conf.up0.disable_ipv6=1
  done
  local s
  for h in "$ha" "$hb"; do
    s=$(side "$h")
    local start=$([ "$s" = A ] && echo 10 || echo 20)
    cat >"$dir/net-$s.json" <<EOF
{"cniVersion": "1.0.0", "name": "mhnet", "type": "vdev-cni", "socket": "$dir/$s.sock", $uplink_conf
 "ipam": {"type": "host-local", "dataDir": "$dir/ipam-$s",
          "ranges": [[{"subnet": "198.18.96.0/24", "rangeStart": "198.18.96.$start", "rangeEnd": "198.18.96.$((start + 9))"}]]}}
EOF
    start_vdevd "$h" || return
  done
  for c in a1 a2 b1; do
    cni ADD $c >"$dir/add-$c.json" 2>&1 || { fail "CNI ADD $c: $(cat "$dir/add-$c.json")"; return; }
  done

  # The hooks vdevd chose, the MTU vdev-cni gave, the offloads kept.
  local p
  p=$(ctl "$ha" -j port show)
  [ "$(echo "$p" | json "[x['hook'] for x in d if x['name']=='up0'][0]")" = tc ] &&
    ok "$mode uplink: hook tc" || fail "$mode uplink: $(echo "$p" | json "[x for x in d if x['name']=='up0']")"
  [ "$(echo "$p" | json "all(x['hook']=='tc' for x in d)")" = True ] || fail "hooks: $p"
  [ "$(echo "$p" | json "any('mtu_over_uplink' in x for x in d)")" = False ] ||
    fail "a port is flagged as larger than the uplink: $p"
  for c in a1 a2 b1; do
    local m k
    m=$(ip -n "$(ns_of $c)" -j link show dev eth0 | json "d[0]['mtu']")
    [ "$m" = "$mtu" ] || fail "$c: MTU $m, expected $mtu"
    k=$(ip netns exec "$(ns_of $c)" ethtool -k eth0)
    echo "$k" | grep -q "^tcp-segmentation-offload: on" && echo "$k" | grep -q "^tx-checksumming: on" ||
      fail "$c: offloads turned off: $(echo "$k" | grep -E '^(tcp-segmentation-offload|tx-checksumming)')"
  done
  ok "containers at MTU $mtu with TSO and TX checksum offload on"

  local a1=$(addr_of a1) a2=$(addr_of a2) b1=$(addr_of b1)
  ping_ok a1 "$b1"
  ping_ok b1 "$a2"
  # IPv6 neighbour discovery across: addresses of the test's own (ULA).
  local v6=fd00:7664:$(printf '%x' $(($$ % 65536)))
  ip -n "$(ns_of a1)" addr add "$v6::a1/64" dev eth0 nodad
  ip -n "$(ns_of b1)" addr add "$v6::b1/64" dev eth0 nodad
  ping_ok a1 "$v6::b1" 3 -6

  tcp a1 b1
  tcp b1 a1
  tcp a1 a2
  # Learned unicast from the uplink took the kernel fast path on each host.
  local f
  for h in "$ha" "$hb"; do
    f=$(ctl "$h" -j stats | json "[x['xdp_prog']['fast'] for x in d['ports'] if x['name']=='up0'][0]")
    [ "${f:-0}" -gt 100 ] && ok "host $(side "$h"): $f frames from the uplink on the fast path" ||
      fail "host $(side "$h"): uplink fast ${f:-?}"
  done

  # A broadcast from a1 reaches a2 and b1 once each (over the uplink, once);
  # the underlay's own frames (VXLAN's UDP) never enter a switch.
  local rx0 rx1
  rx0=$(ctl "$hb" -j stats | json "[x['rx_packets'] for x in d['ports'] if x['name']=='up0'][0]")
  local counters=""
  for c in a2 b1; do
    # A previous mode's counter said "listening" in this file: not this one.
    rm -f "$dir/count-$c"
    ip netns exec "$(ns_of $c)" python3 "$here/l2_probe.py" count eth0 "$tag" 2 >"$dir/count-$c" &
    counters="$counters $!"
  done
  for c in a2 b1; do
    for _ in $(seq 3000); do grep -q listening "$dir/count-$c" && break; sleep 0.02; done
  done
  ip netns exec "$(ns_of a1)" python3 "$here/l2_probe.py" send eth0 "$tag"
  wait $counters
  for c in a2 b1; do
    [ "$(tail -1 "$dir/count-$c")" = 1 ] && ok "broadcast a1 -> $c: once" ||
      fail "broadcast a1 -> $c: $(tail -1 "$dir/count-$c") copies"
  done
  if [ "$mode" = vxlan ]; then
    # Host B's uplink port received the decapsulated broadcast (and what
    # the pings and streams above sent it); its underlay is no port.
    rx1=$(ctl "$hb" -j stats | json "[x['rx_packets'] for x in d['ports'] if x['name']=='up0'][0]")
    [ "$(ctl "$hb" -j port show | json "any(x['name']=='ul0' for x in d)")" = False ] ||
      fail "the underlay is a port"
    [ "$rx1" -gt "$rx0" ] && ok "host B's VXLAN port received the broadcast" ||
      fail "host B's up0 rx_packets $rx0 -> $rx1"
  fi

  # a2 moves to host B: deleted there, added here with its MAC.
  local mac
  mac=$(mac_of a2)
  cni DEL a2 >"$dir/del-a2" 2>&1 || fail "CNI DEL a2: $(cat "$dir/del-a2")"
  cni ADD b2 "IgnoreUnknown=1;MAC=$mac" >"$dir/add-b2.json" 2>&1 || { fail "CNI ADD b2: $(cat "$dir/add-b2.json")"; return; }
  [ "$(mac_of b2)" = "$mac" ] || fail "b2's MAC $(mac_of b2), expected $mac"
  ping_ok a1 "$(addr_of b2)"   # a MAC moved from host A to host B is reached there

  # Host B's vdevd restarts; meanwhile host A's switch keeps working: a new
  # container there is added and talks to a1.
  stop_vdevd "$hb"
  cni ADD a3 >"$dir/add-a3.json" 2>&1 || fail "CNI ADD a3 while host B's vdevd is down: $(cat "$dir/add-a3.json")"
  ping_ok a1 "$(addr_of a3)"
  tcp a3 a1
  start_vdevd "$hb" 2 || return
  local restored
  restored=$(ctl "$hb" -j port show | json "len(d)")
  [ "$restored" = 3 ] && ok "host B's vdevd restored its 3 ports" || fail "host B has $restored ports after restart"
  ping_ok a1 "$b1"
  tcp b1 a3
  check_accounting

  # Both stop cleanly; the containers' veths stay for the next start.
  for c in a1 a3 b1 b2; do cni DEL $c >/dev/null 2>&1 || fail "CNI DEL $c"; done
  stop_vdevd "$ha"
  stop_vdevd "$hb"
  local left
  left=$(ip -n "$ha" -j link show type veth | json "[l['ifname'] for l in d if l['ifname'] not in ('ul0','up0')]")
  [ "$left" = "[]" ] && ok "CNI DEL left no veth on host A" || fail "veths left on host A: $left"
  for c in $ctrs; do ip netns del "$(ns_of $c)"; done
  ip netns del "$ha"
  ip netns del "$hb"
}

run vxlan
run veth

echo "$failures failure(s)"
[ $failures -eq 0 ]
