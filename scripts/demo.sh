#!/bin/bash
# make demo: vdev as the datapath of two containers and a VM.
#
#   scripts/demo.sh BUILD_DIR
#
# - vdevd runs with its own control socket and state file (in a temp dir: the
#   host's /run/vdev and /var/lib/vdev are not touched).
# - Two containers (network namespaces) are attached through the CNI plugin,
#   run exactly as a container runtime runs it (CNI_* environment, the network
#   configuration on stdin); Debian's host-local plugin gives them addresses.
# - One VM: vdevctl creates a tap owned by "nobody", and vdev-vm -- a process
#   that opens the tap as QEMU does and answers ARP and ping -- attaches to it
#   as nobody (as root where /dev/net/tun is not open to other users).
# - Traffic among the three, live per-port rates (vdevctl monitor), the final
#   counters, then everything is removed (also on failure or ^C).
#
# Traffic stays inside: 198.18.1.0/24, locally administered MACs.
set -euo pipefail

build=${1:-build}
vdevd=$build/daemon/vdevd
vdevctl=$build/tools/vdevctl/vdevctl
cni=$build/tools/vdev-cni/vdev-cni
vm=$build/tools/vdev-vm/vdev-vm
[ "$(id -u)" -eq 0 ] || { echo "demo: needs root (network namespaces, XDP, AF_XDP)" >&2; exit 1; }
for b in "$vdevd" "$vdevctl" "$cni" "$vm"; do
    [ -x "$b" ] || { echo "demo: $b not built (make build)" >&2; exit 1; }
done
[ -x /usr/lib/cni/host-local ] ||
    { echo "demo: /usr/lib/cni/host-local missing (apt-get install containernetworking-plugins)" >&2; exit 1; }

id=$$
c1=vdemo-c1-$id; c2=vdemo-c2-$id    # namespaces, also the containers' IDs
tap=vdm${id}t                       # the VM's tap (<= 15 characters)
vm_ip=198.18.1.100; vm_mac=02:de:00:00:00:64
work=$(mktemp -d /tmp/vdev-demo.XXXXXX)
sock=$work/vdevd.sock
export CNI_PATH=$build/tools/vdev-cni:/usr/lib/cni
vdevd_pid=; vm_pid=; added=

cat >"$work/net.json" <<EOF
{
  "cniVersion": "1.1.0",
  "name": "vdemo",
  "type": "vdev-cni",
  "socket": "$sock",
  "mtu": 1500,
  "ipam": {
    "type": "host-local",
    "dataDir": "$work/ipam",
    "ranges": [[{"subnet": "198.18.1.0/24", "rangeStart": "198.18.1.10", "rangeEnd": "198.18.1.99"}]]
  }
}
EOF

# The plugin as a runtime runs it: cni COMMAND CONTAINER [CNI_ARGS].
cni() {
    CNI_COMMAND=$1 CNI_CONTAINERID=$2 CNI_NETNS=/run/netns/$2 CNI_IFNAME=eth0 CNI_ARGS=${3:-} \
        "$cni" <"$work/net.json"
}
ctl() { "$vdevctl" -S "$sock" "$@"; }
field() { python3 -c 'import json,sys; r=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

cleanup() {
    set +e
    for c in $added; do cni DEL "$c" >/dev/null 2>&1; done
    [ -n "$vdevd_pid" ] && ctl port del "$tap" >/dev/null 2>&1
    [ -n "$vm_pid" ] && kill -TERM "$vm_pid" 2>/dev/null && wait "$vm_pid" 2>/dev/null
    [ -n "$vdevd_pid" ] && kill -TERM "$vdevd_pid" 2>/dev/null && wait "$vdevd_pid" 2>/dev/null
    ip netns del "$c1" 2>/dev/null; ip netns del "$c2" 2>/dev/null
    ip link del "$tap" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }

step "vdevd --socket $sock (its own control socket and state file)"
# Its own session: a ^C at the terminal stops the script, whose cleanup then
# removes the containers through vdevd before stopping it.
setsid "$vdevd" --socket "$sock" --state "$work/vdevd.state" >"$work/vdevd.out" 2>"$work/vdevd.err" &
vdevd_pid=$!
for _ in $(seq 100); do grep -q ready "$work/vdevd.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$work/vdevd.out" || { cat "$work/vdevd.err" >&2; exit 1; }
ctl info

step "two containers through the CNI plugin (CNI_COMMAND=ADD, host-local IPAM)"
for c in "$c1" "$c2"; do ip netns add "$c"; ip -n "$c" link set lo up; done
res1=$(cni ADD "$c1" "IgnoreUnknown=1;MAC=02:de:00:00:00:01"); added="$c1"
res2=$(cni ADD "$c2" "IgnoreUnknown=1;MAC=02:de:00:00:00:02"); added="$c1 $c2"
echo "CNI result for $c1:"
echo "$res1"
ip1=$(field 'r["ips"][0]["address"].split("/")[0]' <<<"$res1")
ip2=$(field 'r["ips"][0]["address"].split("/")[0]' <<<"$res2")
p1=$(field 'r["interfaces"][0]["name"]' <<<"$res1")
p2=$(field 'r["interfaces"][0]["name"]' <<<"$res2")
echo "$c1: eth0 $ip1, vdevd port $p1"
echo "$c2: eth0 $ip2, vdevd port $p2"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["prevResult"]=json.loads(sys.argv[2]); print(json.dumps(c))' \
    "$work/net.json" "$res1" >"$work/check.json"
CNI_COMMAND=CHECK CNI_CONTAINERID=$c1 CNI_NETNS=/run/netns/$c1 CNI_IFNAME=eth0 "$cni" <"$work/check.json" &&
    echo "CNI CHECK $c1 (prevResult = its ADD result): ok"

step "one VM: vdevctl makes tap $tap for user nobody; vdev-vm attaches as QEMU would ($vm_ip)"
ctl port add "$tap" type tap create owner nobody mac 02:de:00:00:00:fe
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
if [ "$(stat -c %a /dev/net/tun)" = 666 ] && "${as_nobody[@]}" "$vm" --help >/dev/null 2>&1; then
    who=nobody
else
    as_nobody=(); who="root (/dev/net/tun is $(stat -c %a /dev/net/tun) here; QEMU's user needs 0666)"
fi
setsid "${as_nobody[@]}" "$vm" --tap "$tap" respond --guest-mac "$vm_mac" --ip "$vm_ip" \
    >"$work/vm.out" 2>"$work/vm.err" &
vm_pid=$!
for _ in $(seq 50); do grep -q ready "$work/vm.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$work/vm.out" || { cat "$work/vm.err" >&2; exit 1; }
echo "vdev-vm (pid $vm_pid) runs as $who and holds $tap"
for _ in $(seq 50); do ctl -j port show | grep -q '"live": false' || break; sleep 0.1; done
ctl port show

step "pings: $c1 -> $c2, $c1 -> VM, $c2 -> VM"
ip netns exec "$c1" ping -n -c 3 -i 0.2 "$ip2" | tail -2
ip netns exec "$c1" ping -n -c 3 -i 0.2 "$vm_ip" | tail -2
ip netns exec "$c2" ping -n -c 3 -i 0.2 "$vm_ip" | tail -2

step "flood pings for 5 s ($c1 -> $c2, 1000 bytes; $c2 -> VM); live rates from vdevctl monitor"
ip netns exec "$c1" ping -n -q -f -s 1000 -w 5 "$ip2" >"$work/flood1.out" 2>&1 &
f1=$!
ip netns exec "$c2" ping -n -q -f -w 5 "$vm_ip" >"$work/flood2.out" 2>&1 &
f2=$!
# In the background and waited for: bash runs the ^C trap at once only
# while in `wait`, not while a foreground command that handles SIGINT runs.
ctl monitor --interval 1 --count 5 &
wait $!
wait "$f1" "$f2" || true
echo "$c1 -> $c2: $(grep -h 'packets transmitted' "$work/flood1.out")"
echo "$c2 -> VM:  $(grep -h 'packets transmitted' "$work/flood2.out")"

step "final counters (vdevctl -s port show; the frame pool)"
ctl -s port show
ctl stats | grep -E '^(pool|fdb)'

step "teardown: the VM stops, vdevctl port del for its tap, CNI DEL for both containers, vdevd stops"
kill -TERM "$vm_pid" 2>/dev/null; wait "$vm_pid" 2>/dev/null || true; vm_pid=
echo "vdev-vm: $(tail -n 1 "$work/vm.out")"
ctl port del "$tap" && echo "vdevctl port del $tap: ok (the tap vdevd made is gone)"
for c in $added; do cni DEL "$c" && echo "CNI DEL $c: ok"; done
cni DEL "$c1" && echo "CNI DEL $c1 again: ok (DEL is idempotent)"
added=
echo "ports left: $(ctl -j port show)"
kill -TERM "$vdevd_pid"
rc=0; wait "$vdevd_pid" || rc=$?
vdevd_pid=
tail -n 1 "$work/vdevd.out"
echo "vdevd exit status: $rc"
ip netns del "$c1"; ip netns del "$c2"
left=$(ip -o link show | grep -cE ": ($tap|$p1|$p2)[:@]" || true)
echo "devices left: $left; host-local addresses held: $(find "$work/ipam" -name '198.*' | wc -l)"
[ "$left" = 0 ] || { echo "demo: devices left behind" >&2; exit 1; }
exit "$rc"
