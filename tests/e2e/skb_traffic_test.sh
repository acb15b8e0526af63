#!/bin/bash
# skb_traffic_test.sh BUILD: real traffic through vdevd with its defaults.
#
# Two containers and a VM with the offloads they have by default, on one
# vdevd with no hook options (veths and taps take the skb path):
#   A  a network namespace on a veth the test makes itself (its default
#      offloads: TSO, checksum offload), vdevd given it with --port;
#   B  a namespace on a veth vdevd creates (`vdevctl port add ... create`,
#      as vdev-cni does);
#   G  a VM: vdev-vm's guest mode opens the tap as QEMU does by default
#      (IFF_VNET_HDR, TUNSETOFFLOAD) and relays a namespace's own stack
#      through it, so the "guest" sends TCP with partial checksums and GSO
#      frames up to 64 KB, and receives the same.
# Then, once with the kernel fast path (vdevd's default) and once without
# (--no-fast-path: every frame through vdevd's AF_XDP path): the containers'
# offloads stay on; ping; kernel TCP (32 MiB, checked) between every
# kind of pair in both directions completes with every byte, over IPv4 and
# (container to container and to the guest) IPv6; UDP from a socket
# arrives over both, and so does UDP with segmentation offload
# (UDP_SEGMENT), every datagram; at MTU 9000 TCP crosses between the
# containers and both ways with the guest, and an 8 KB frame too (on
# vdevd's own path as chains of UMEM chunks, TCP in frames longer than a
# chunk; a frame over that path's 9216 is the sender's oversize); a container behind
# an ingress policer sends TCP at the policer's rate; without multi-buffer
# (--no-multi-buffer, as on a kernel before 6.6: a third, shorter run, the
# jumbo frames only) TCP at MTU 9000 still crosses vdevd's own path, in
# frames of one chunk, and 8 KB frames are the sender's oversize; the guest really sent
# and received offloaded frames; the frames took the path the mode says
# (fast-path counters); vdevd stops cleanly and leaves no punt device
# behind.
#
# Skipped (77) when not root or without iperf3/ethtool. Everything it made
# is removed on exit, pass or fail.
#
# VDEV_SKB_QUICK=1: the fast-path run alone, IPv4 only, 1 MiB TCP streams
# (container to container and container to guest, both ways), no UDP and no
# policer -- for a machine too slow to keep a UDP receiver or a 200 Mbit/s
# policer busy: the kernel guests under QEMU's TCG (tests/qemu/kernel_core.sh).
# Offloads, TCP, jumbo frames, the hooks and the fast path's counters are
# still checked.
set -u
quick=${VDEV_SKB_QUICK:-0}
# The pairs a quick run leaves out: IPv6, and the guest with the second
# container (the first stands for both containers there).
quick_skips() {
  [ "$quick" = 1 ] || return 1
  case "$*" in *:*|"$nsg $nsb "*|"$nsb $nsg "*) return 0 ;; esac
  return 1
}

build=${1:?usage: skb_traffic_test.sh BUILD}
vdevd=$build/daemon/vdevd
vdevctl=$build/tools/vdevctl/vdevctl
vdevvm=$build/tools/vdev-vm/vdev-vm
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, tc programs, AF_XDP)"
for t in iperf3 ethtool ip python3; do
  command -v $t >/dev/null 2>&1 || skip "$t is not installed (scripts/install-deps.sh installs it)"
done
for b in "$vdevd" "$vdevctl" "$vdevvm"; do
  [ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# Names no other test uses: a tag from this process's id.
tag=$(printf 'xs%04x' $(($$ % 65536)))
nsa=vdev-skb-$tag-a nsb=vdev-skb-$tag-b nsg=vdev-skb-$tag-g nsp=vdev-skb-$tag-p
pa=${tag}a pb=${tag}b tap=${tag}t pp=${tag}p
dir=$(mktemp -d /tmp/vdev-skb.XXXXXX)
sock=$dir/vdevd.sock
vp= gp=

cleanup() {
  [ -n "$vp" ] && kill -TERM "$vp" 2>/dev/null && wait "$vp" 2>/dev/null
  [ -n "$gp" ] && kill -TERM "$gp" 2>/dev/null && wait "$gp" 2>/dev/null
  for n in "$nsa" "$nsb" "$nsg" "$nsp"; do ip netns del "$n" 2>/dev/null; done
  for l in "$pa" "$pb" "$tap" "$pp"; do ip link del "$l" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# tcp_transfer FROM_NS TO_NS ADDR BYTES: kernel TCP from FROM_NS to
# tcp_check.py's server in TO_NS at ADDR, port 5391. Succeeds when every
# byte arrived unchanged and in order (the two sides' SHA-256 agree). Sets
# tcp_sent and tcp_got (the two sides' lines) and tcp_secs (the client's
# wall time).
tcp_transfer() {
  local port=5391 sp start end
  ip netns exec "$2" python3 "$here/tcp_check.py" server $port >"$dir/srv.out" 2>&1 &
  sp=$!
  for _ in $(seq 100); do ip netns exec "$2" ss -ltn | grep -q ":$port " && break; sleep 0.05; done
  start=$(date +%s.%N)
  tcp_sent=$(timeout 120 ip netns exec "$1" python3 "$here/tcp_check.py" client "$3" $port "$4" 2>&1)
  end=$(date +%s.%N)
  wait $sp
  tcp_got=$(cat "$dir/srv.out")
  tcp_secs=$(python3 -c "print(round($end - $start, 3))")
  [ -n "$tcp_sent" ] && [ "$tcp_sent" = "$tcp_got" ]
}

for n in "$nsa" "$nsb" "$nsg" "$nsp"; do ip netns add "$n" && ip -n "$n" link set lo up || exit 1; done
ip link add "$pa" type veth peer name eth0 netns "$nsa" || exit 1
ip -n "$nsa" link set eth0 address 02:5b:00:00:00:01 up
ip -n "$nsa" addr add 198.18.91.1/24 dev eth0
ip -n "$nsa" addr add 2001:2:0:5b::1/64 dev eth0 nodad
ip link set "$pa" up

# One run: vdevd with MODE_ARGS; PATH_NAME says which path unicast takes.
run() {
  local mode=$1
  shift
  echo "== vdevd $* (unicast on the $mode path)"
  # The VM: vdev-vm creates the host's tap and the guest's inside $nsg.
  # Its "ready" and vdevd's are waited for in files the run before wrote
  # too: removed first, so an old line cannot stand for a new start.
  rm -f "$dir/guest.out" "$dir/vdevd.log"
  "$vdevvm" --tap "$tap" --create --mac 02:5b:00:00:01:03 guest --netns "$nsg" \
    >"$dir/guest.out" 2>"$dir/guest.err" &
  gp=$!
  for _ in $(seq 100); do grep -q "vdev-vm: ready" "$dir/guest.out" && break; sleep 0.05; done
  grep -q "vdev-vm: ready" "$dir/guest.out" || { fail "vdev-vm guest did not start: $(cat "$dir/guest.err")"; return; }
  ip -n "$nsg" link set eth0 address 02:5b:00:00:00:03 up
  ip -n "$nsg" addr add 198.18.91.3/24 dev eth0
  ip -n "$nsg" addr add 2001:2:0:5b::3/64 dev eth0 nodad

  "$vdevd" --port "$pa" --port "$tap" --socket "$sock" --no-state "$@" >"$dir/vdevd.log" 2>&1 &
  vp=$!
  for _ in $(seq 200); do grep -q "vdevd: ready" "$dir/vdevd.log" && break; kill -0 $vp 2>/dev/null || break; sleep 0.05; done
  grep -q "vdevd: ready" "$dir/vdevd.log" || { fail "vdevd did not start: $(cat "$dir/vdevd.log")"; return; }
  if ! "$vdevctl" -S "$sock" port add "$pb" type veth create netns "$nsb" peer eth0 peer-mac 02:5b:00:00:00:02 \
      >"$dir/add.out" 2>&1; then
    fail "vdevctl port add $pb: $(cat "$dir/add.out")"
    return
  fi
  ip -n "$nsb" addr add 198.18.91.2/24 dev eth0
  ip -n "$nsb" addr add 2001:2:0:5b::2/64 dev eth0 nodad
  ip -n "$nsb" link set eth0 up

  # Offloads a container has by default stay on, whoever made its veth.
  for n in "$nsa" "$nsb"; do
    k=$(ip netns exec "$n" ethtool -k eth0)
    if echo "$k" | grep -q "^tcp-segmentation-offload: on" && echo "$k" | grep -q "^tx-checksumming: on"; then
      ok "$n: TSO and TX checksum offload on"
    else
      fail "$n: offloads turned off: $(echo "$k" | grep -E '^(tcp-segmentation-offload|tx-checksumming)')"
    fi
  done

  for pair in "$nsa 198.18.91.2" "$nsa 198.18.91.3" "$nsb 198.18.91.3" "$nsg 198.18.91.1" \
              "$nsa 2001:2:0:5b::2" "$nsa 2001:2:0:5b::3" "$nsb 2001:2:0:5b::3" "$nsg 2001:2:0:5b::1"; do
    [ "$mode" = single ] && break  # the jumbo frames' checks only (below)
    quick_skips $pair && continue
    set -- $pair
    if ip netns exec "$1" ping -c 2 -i 0.2 -W 2 "$2" >/dev/null 2>&1; then ok "ping $1 -> $2"
    else fail "ping $1 -> $2"; fi
  done

  # Kernel TCP, both ways between each kind of pair, over IPv4 and IPv6
  # (TSO6 and IPv6 partial checksums): every byte arrives, unchanged and
  # in order (tcp_check.py compares SHA-256 of the stream).
  local bytes=$(((quick ? 1 : 32) << 20)) port=5391 sent got out
  for pair in "$nsa $nsb 198.18.91.2" "$nsb $nsa 198.18.91.1" "$nsg $nsa 198.18.91.1" \
              "$nsa $nsg 198.18.91.3" "$nsg $nsb 198.18.91.2" "$nsb $nsg 198.18.91.3" \
              "$nsa $nsb 2001:2:0:5b::2" "$nsb $nsa 2001:2:0:5b::1" \
              "$nsg $nsa 2001:2:0:5b::1" "$nsa $nsg 2001:2:0:5b::3"; do
    [ "$mode" = single ] && break
    quick_skips $pair && continue
    set -- $pair
    if tcp_transfer "$1" "$2" "$3" $bytes; then
      ok "tcp $1 -> $2 ($3): $bytes bytes intact ($(python3 -c "print(round($bytes*8/$tcp_secs/1e9,2))") Gbit/s)"
    else
      fail "tcp $1 -> $2 ($3): sent '$tcp_sent', received '$tcp_got'"
    fi
  done

  # Jumbo frames (MTU 9000 on both containers, the guest and their ports):
  # the kernel's redirect carries them, TCP and a single 8 KB frame alike.
  # vdevd's own path carries them as chains of UMEM chunks (AF_XDP
  # multi-buffer): TCP in 9,000-byte frames -- its MSS is not lowered below
  # the MTU -- and the 8 KB frames too. A frame longer than even that path
  # holds (the punt device's MTU, 9216: here from a port at MTU 16000) is
  # the sender's oversize drop -- counted, never silently.
  for n in "$nsa" "$nsb" "$nsg"; do ip -n "$n" link set eth0 mtu 9000; done
  for l in "$pa" "$pb" "$tap"; do ip link set "$l" mtu 9000; done
  local over0 over1 rx0 rx1
  oversize() {
    "$vdevctl" -S "$sock" -j stats |
      json "sum(x['drops']['oversize'] for x in d['ports'] if x['name'] in ('$pa', '$tap'))"
  }
  rxof() {  # packets and bytes port $1 received
    "$vdevctl" -S "$sock" -j stats |
      json "' '.join(str(x[k]) for x in d['ports'] if x['name']=='$1' for k in ('rx_packets', 'rx_bytes'))"
  }
  over0=$(oversize)
  for pair in "$nsa $nsb 198.18.91.2" "$nsa $nsb 2001:2:0:5b::2" "$nsa $nsg 198.18.91.3" "$nsg $nsa 198.18.91.1"; do
    quick_skips $pair && continue
    set -- $pair
    rx0=$(rxof "$pa")
    tcp_transfer "$1" "$2" "$3" $bytes && ok "tcp at MTU 9000 $1 -> $2 ($3): $bytes bytes intact" ||
      fail "tcp at MTU 9000 $1 -> $2 ($3): sent '$tcp_sent', received '$tcp_got'"
    rx1=$(rxof "$pa")
    if [ "$mode" != fast ] && [ "$1" = "$nsa" ]; then
      # Frames longer than one 2048-byte chunk: chains, not an MSS clamp;
      # without multi-buffer, clamped to one chunk.
      set -- $rx0 $rx1
      local avg=$(( ($4 - $2) / ($3 - $1 > 0 ? $3 - $1 : 1) ))
      if [ "$mode" = single ]; then
        [ "$avg" -le 1792 ] && ok "tcp at MTU 9000, no multi-buffer: $pa's frames $avg bytes on average" ||
          fail "tcp at MTU 9000, no multi-buffer: $pa's frames $avg bytes on average (more than a chunk)"
      else
        [ "$avg" -gt 4000 ] && ok "tcp at MTU 9000 through vdevd: $pa's frames $avg bytes on average" ||
          fail "tcp at MTU 9000 through vdevd: $pa's frames $avg bytes on average (no frame longer than a chunk?)"
      fi
    fi
  done
  for dst in 198.18.91.2 198.18.91.3; do
    if [ "$mode" = single ]; then
      ip netns exec "$nsa" ping -c 3 -i 0.2 -W 1 -M do -s 8000 $dst >/dev/null 2>&1 &&
        fail "8 KB frames $nsa -> $dst crossed vdevd's own path without multi-buffer" ||
        ok "8 KB frames $nsa -> $dst: not carried without multi-buffer"
    else
      ip netns exec "$nsa" ping -c 3 -i 0.2 -W 2 -M do -s 8000 $dst >/dev/null 2>&1 &&
        ok "8 KB frames $nsa -> $dst ($mode)" || fail "8 KB frames $nsa -> $dst did not cross ($mode)"
    fi
  done
  if [ "$mode" != fast ]; then
    # Without multi-buffer the six 8 KB frames are $pa's oversize drops.
    local want=0
    [ "$mode" = single ] && want=6
    over1=$(oversize)
    [ $((over1 - over0)) -eq $want ] && ok "jumbo frames: drops.oversize on $pa, $tap +$want" ||
      fail "jumbo frames: drops.oversize on $pa, $tap went $over0 -> $over1 (expected +$want)"
    ip -n "$nsa" link set eth0 mtu 16000
    ip link set "$pa" mtu 16000
    ip netns exec "$nsa" ping -c 3 -i 0.2 -W 1 -M do -s 12000 198.18.91.2 >/dev/null 2>&1 &&
      fail "12 KB frames crossed vdevd's own path"
    over0=$over1
    over1=$(oversize)
    [ $((over1 - over0)) -eq 3 ] && ok "3 frames over what the own path carries: $pa drops.oversize +3" ||
      fail "3 frames over what the own path carries: $pa drops.oversize went $over0 -> $over1"
  fi
  for n in "$nsa" "$nsb" "$nsg"; do ip -n "$n" link set eth0 mtu 1500; done
  for l in "$pa" "$pb" "$tap"; do ip link set "$l" mtu 1500; done

  # Without multi-buffer only the jumbo frames' path differs: the rest is
  # the run before's.
  if [ "$mode" != single ]; then
    # UDP from a socket (checksummed by the sender's offload), over IPv4
    # and IPv6: it arrives.
    for dst in 198.18.91.2 2001:2:0:5b::2; do
      [ "$quick" = 1 ] && break
      ip netns exec "$nsb" iperf3 -s -1 -p $port >/dev/null 2>&1 &
      local sp=$!
      for _ in $(seq 50); do ip netns exec "$nsb" ss -ltn | grep -q ":$port " && break; sleep 0.05; done
      out=$(timeout 30 ip netns exec "$nsa" iperf3 -c $dst -p $port -u -b 100M -l 1200 -t 1 -J 2>&1)
      got=$(echo "$out" | json 'd["end"]["sum"]["packets"] - d["end"]["sum"]["lost_packets"]' 2>/dev/null)
      if [ "${got:-0}" -gt 0 ]; then ok "udp $nsa -> $nsb ($dst): $got datagrams arrived"
      else fail "udp $nsa -> $nsb ($dst): none arrived: $(echo "$out" | grep -m1 error)"; fi
      kill $sp 2>/dev/null
      wait $sp 2>/dev/null
    done

    # UDP segmentation offload (UDP_SEGMENT, as QUIC stacks send): one GSO
    # skb per send() leaves the sender and arrives as 10 datagrams of 1200
    # bytes, intact, container to container (IPv4, IPv6) and both ways
    # between a container and the guest. Every one arrives -- but towards
    # the guest, whose relay (vdev-vm, a process reading the tap) may fall
    # behind on a loaded machine: there each datagram arrives or is one of
    # the frames the tap counted as dropped at its full queue (tx_dropped),
    # as the kernel drops for a VM that does not read. Nothing else may be
    # missing.
    for pair in "$nsa $nsb 198.18.91.2" "$nsa $nsb 2001:2:0:5b::2" "$nsa $nsg 198.18.91.3" "$nsg $nsa 198.18.91.1"; do
      [ "$quick" = 1 ] && break
      set -- $pair
      # The file the server says "listening" in is this server's own: a
      # previous server's line there would let the client send before this
      # one is bound (the shell truncates the file only when the background
      # child runs), the kernel would answer "port unreachable" and the
      # client's next send fail.
      rm -f "$dir/srv.out" "$dir/srv.err"
      ip netns exec "$2" python3 "$here/udp_gso_check.py" server $port 2000 1200 >"$dir/srv.out" 2>"$dir/srv.err" &
      local sp=$!
      # Bound before the client sends: up to 60 s.
      for _ in $(seq 1200); do grep -q listening "$dir/srv.err" && break; sleep 0.05; done
      local tapdrop0 tapdrop
      tapdrop0=$(cat "/sys/class/net/$tap/statistics/tx_dropped")
      sent=$(timeout 60 ip netns exec "$1" python3 "$here/udp_gso_check.py" client "$3" $port 200 1200 2>&1)
      wait $sp
      got=$(cat "$dir/srv.out")
      tapdrop=$(($(cat "/sys/class/net/$tap/statistics/tx_dropped") - tapdrop0))
      [ "$2" = "$nsg" ] || tapdrop=0
      n=$(echo "$got" | json 'd["datagrams"] if d["bad"] == 0 else -1' 2>/dev/null)
      if [ "$sent" = '{"datagrams": 2000}' ] && [ "$got" = '{"datagrams": 2000, "bad": 0}' ]; then
        ok "udp gso $1 -> $2 ($3): 2000 datagrams from 200 GSO sends, all intact"
      elif [ "$sent" = '{"datagrams": 2000}' ] && [ "${n:--1}" -ge 0 ] && [ "$tapdrop" -gt 0 ] &&
           [ $((n + tapdrop)) -ge 2000 ]; then
        ok "udp gso $1 -> $2 ($3): $n of 2000 datagrams intact, the tap counted $tapdrop frame(s) dropped at its full queue"
      else
        fail "udp gso $1 -> $2 ($3): sent '$sent', received '$got' (the tap's tx_dropped +$tapdrop)"
      fi
    done

    # A policed container (police-rate 200M): its TCP stream of 64 KB GSO
    # skbs passes the policer at its rate, not above, every byte intact, and
    # what the policer held back is counted at its port.
    if [ "$quick" = 1 ]; then
      :
    elif "$vdevctl" -S "$sock" port add "$pp" type veth police-rate 200M create netns "$nsp" peer eth0 \
        peer-mac 02:5b:00:00:00:04 >"$dir/add.out" 2>&1; then
      ip -n "$nsp" addr add 198.18.91.4/24 dev eth0
      ip -n "$nsp" link set eth0 up
      local pbytes=$((32 << 20)) secs least police
      if tcp_transfer "$nsp" "$nsa" 198.18.91.1 $pbytes; then
        ok "tcp through a 200 Mbit/s policer: $pbytes bytes intact in $tcp_secs s"
      else
        fail "tcp through a 200 Mbit/s policer: sent '$tcp_sent', received '$tcp_got'"
      fi
      secs=$tcp_secs
      # No faster than the policer: at most its burst (250 ms of the rate:
      # 50 Mbit) at once and the rate after it, so the payload alone takes
      # at least (268 - 50) Mbit / 200 Mbit/s; 10% slack.
      least=$(python3 -c "print(round(0.9 * ($pbytes * 8 - 200e6 * 0.25) / 200e6, 3))")
      python3 -c "import sys; sys.exit(0 if $secs >= $least else 1)" &&
        ok "policed stream took $secs s (>= $least s)" ||
        fail "policed stream took $secs s, less than its 200 Mbit/s policer allows ($least s)"
      police=$("$vdevctl" -S "$sock" -j stats | json "[x['drops']['police'] for x in d['ports'] if x['name']=='$pp'][0]")
      [ "${police:-0}" -gt 0 ] && ok "$pp: drops.police $police" || fail "$pp: drops.police ${police:-?}"
      "$vdevctl" -S "$sock" port del "$pp" >/dev/null 2>&1 || fail "vdevctl port del $pp"
    else
      fail "vdevctl port add $pp police-rate 200M: $(cat "$dir/add.out")"
    fi

    # The path the frames took: the ports' hooks and fast-path counters.
    local stats
    stats=$("$vdevctl" -S "$sock" -j stats)
    for p in "$pa" "$pb" "$tap"; do
      local hook fast rx
      hook=$(echo "$stats" | json "[x['hook'] for x in d['ports'] if x['name']=='$p'][0]")
      fast=$(echo "$stats" | json "[x['xdp_prog']['fast'] for x in d['ports'] if x['name']=='$p'][0]")
      rx=$(echo "$stats" | json "[x['rx_packets'] for x in d['ports'] if x['name']=='$p'][0]")
      [ "$hook" = tc ] && ok "$p: hook tc" || fail "$p: hook '$hook', not tc"
      if [ "$mode" = fast ]; then
        [ "${fast:-0}" -gt $((quick ? 10 : 1000)) ] && ok "$p: $fast skbs on the fast path" || fail "$p: fast path carried ${fast:-?}"
      else
        [ "${fast:-1}" -eq 0 ] && [ "${rx:-0}" -gt 10000 ] && ok "$p: $rx frames through vdevd, none fast" ||
          fail "$p: fast ${fast:-?}, rx ${rx:-?} (expected every frame through vdevd)"
      fi
    done
  fi

  local punt no_route stats
  stats=$("$vdevctl" -S "$sock" -j stats)
  punt=$(echo "$stats" | json "d['punt']['name']")
  no_route=$(echo "$stats" | json "d['punt']['drops']['no_route']")
  [ "$no_route" = 0 ] && ok "punt device $punt: no frame without a port" || fail "punt device: no_route $no_route"
  # Its MTU: jumbo with multi-buffer, one UMEM frame's room (2048 less
  # headroom, Ethernet header and tag) without -- with --no-multi-buffer,
  # and on a kernel before 6.6, which vdevd says in its INFO reply.
  local pmtu want_mtu=9216 mb
  mb=$("$vdevctl" -S "$sock" -j info | json "d['kernel_features']['multi_buffer']")
  [ "$mode" = single ] && [ "$mb" != False ] && fail "vdevd --no-multi-buffer: info says multi_buffer $mb"
  [ "$mb" = False ] && want_mtu=1774
  pmtu=$(echo "$stats" | json "d['punt']['mtu']")
  [ "$pmtu" = "$want_mtu" ] && ok "punt device $punt: MTU $pmtu" || fail "punt device $punt: MTU $pmtu, not $want_mtu"

  "$vdevctl" -S "$sock" port del "$pb" >/dev/null 2>&1 || fail "vdevctl port del $pb"
  kill -TERM $vp
  wait $vp
  local rc=$?
  vp=
  [ $rc -eq 0 ] && ok "vdevd stopped (exit 0)" || fail "vdevd exited $rc: $(tail -5 "$dir/vdevd.log")"
  ip link show "$punt" >/dev/null 2>&1 && fail "punt device $punt left behind" || ok "punt device removed"
  ip link del "$pb" 2>/dev/null

  kill -TERM $gp
  wait $gp
  gp=
  local g
  g=$(cat "$dir/guest.out" | grep '^{')
  local gso_from csum_from gso_to werr
  gso_from=$(echo "$g" | json 'd["from_guest"]["gso"]')
  csum_from=$(echo "$g" | json 'd["from_guest"]["partial_csum"]')
  gso_to=$(echo "$g" | json 'd["to_guest"]["gso"]')
  werr=$(echo "$g" | json 'd["to_guest"]["write_errors"] + d["from_guest"]["write_errors"]')
  [ "${gso_from:-0}" -gt 0 ] && [ "${csum_from:-0}" -gt 0 ] &&
    ok "guest sent $gso_from GSO frames, $csum_from with partial checksums" ||
    fail "guest sent no offloaded frames ($g)"
  # Only the kernel's redirect hands a tap a GSO skb; vdevd's own path
  # delivers wire frames.
  if [ "$mode" = fast ]; then
    [ "${gso_to:-0}" -gt 0 ] && ok "guest received $gso_to GSO frames" || fail "guest received no GSO frame ($g)"
  fi
  [ "${werr:-1}" -eq 0 ] && ok "guest relay: no failed write" || fail "guest relay: $werr failed writes ($g)"
  ip netns del "$nsg"
  ip netns add "$nsg" && ip -n "$nsg" link set lo up
}

run fast
[ "$quick" = 1 ] || run vdevd --no-fast-path
[ "$quick" = 1 ] || run single --no-fast-path --no-multi-buffer

echo "$failures failure(s)"
[ $failures -eq 0 ]
