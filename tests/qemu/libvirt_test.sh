#!/bin/bash
# libvirt_test.sh BUILD: Debian's libvirtd, started by the test, boots the
# test guest (scripts/vm-guest-image.sh, the one e2e_qemu_test boots) from
# the domain XML of docs/vm.md ("Tested with libvirt") with type='qemu'
# (TCG), its virtio NIC on a tap vdevd made (`<interface type='ethernet'>`,
# managed='no', libvirt's default NIC options), next to a container (a veth
# vdevd made into a namespace of the test's):
#   - virsh domiflist names the tap; vdevd's port goes live; the guest has
#     its offloads, and QEMU has vhost=on exactly where /dev/vhost-net exists;
#   - ping both ways, TCP both ways with a checked 1 MiB payload;
#   - virsh domifstat against vdevd's counters for the tap (docs/vm.md);
#   - virsh destroy: the port goes down; virsh start: live again, traffic
#     again.
#
# libvirtd as root is the system instance whatever its --config says: its
# state, cache, log and domain configuration are under fixed paths. So
# libvirtd (and the QEMU it starts) runs in a mount namespace of its own
# with the test's directories over /etc/libvirt, /run/libvirt,
# /var/lib/libvirt, /var/cache/libvirt and /var/log/libvirt, and, where the
# host has no libvirt-qemu user (libvirt-daemon-system makes it; the QEMU
# driver will not start without it, whatever qemu.conf says), over
# /etc/passwd and /etc/group copies that have one. Its sockets are in the
# test's directory under /run; virsh reaches them by
# qemu:///system?socket=... libvirtd, vdevd and QEMU run in a network
# namespace the test makes, so the tap is never in the host's.
#
# Skipped (77) when not root. libvirt, QEMU or the guest's packages missing
# fail the test: scripts/install-deps.sh installs them. Everything it made is
# removed on exit, pass or fail.
set -u
build=$(cd "${1:?usage: libvirt_test.sh BUILD}" && pwd) || exit 1
src=$(cd "$(dirname "$0")/../.." && pwd)
vdevd=$build/daemon/vdevd
vdevctl=$build/tools/vdevctl/vdevctl
guest=$build/tests/qemu/guest

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (libvirtd as the system instance, network namespaces)"
# shellcheck source=../e2e/check_lib.sh
. "$src/tests/e2e/check_lib.sh"
check_t0=$(date +%s)
for t in libvirtd virsh qemu-system-x86_64; do
  command -v $t >/dev/null 2>&1 ||
    die "$t is not installed (scripts/install-deps.sh installs libvirt-daemon, libvirt-clients, qemu-system-x86)"
done
for t in unshare nsenter ip python3 busybox; do
  command -v $t >/dev/null 2>&1 || die "$t is not installed (scripts/install-deps.sh)"
done
for b in "$vdevd" "$vdevctl"; do [ -x "$b" ] || die "$b is not built"; done
out=$(sh "$src/scripts/vm-guest-image.sh" "$guest" 2>&1) || die "the test guest: $out"

tag=$(printf 'lv%04x' $(($$ % 65536)))
nsv=vdev-$tag-v             # vdevd's, libvirtd's and QEMU's network namespace
nsc=vdev-$tag-c             # the container
dom=vdev-$tag               # the domain
tap=${tag}t veth=${tag}v    # vdevd's ports
gaddr=198.18.42.2 caddr=198.18.42.1
gmac=$(printf '02:76:%02x:%02x:00:01' $(($$ >> 8 & 255)) $(($$ & 255)))
tapmac=$(printf '02:76:%02x:%02x:00:02' $(($$ >> 8 & 255)) $(($$ & 255)))
dir=$(mktemp -d /tmp/vdev-libvirt.XXXXXX)
run=$(mktemp -d /run/vdev-libvirt.XXXXXX)
sock=$run/vdevd.sock
console=$run/console.sock
export LIBVIRT_DEFAULT_URI="qemu:///system?socket=$run/libvirt-sock"
vp='' lp='' hp='' lsn=''

cleanup() {
  set +e
  if [ "$failures" -ne 0 ]; then
    echo "--- vdevd log"; cat "$dir/vdevd.log"
    echo "--- libvirtd log"; grep -v -e dnsmasq -e 'ethtool ioctl' "$dir/libvirtd.log" | tail -40
    echo "--- QEMU log"; tail -20 "$dir/log/qemu/$dom.log"
    echo "--- console"; tail -30 "$run/console.log"
  fi
  [ -n "$lsn" ] && kill "$lsn" 2>/dev/null
  if [ -n "$lp" ] && kill -0 "$lp" 2>/dev/null; then
    virsh destroy "$dom" >/dev/null 2>&1
    virsh undefine "$dom" >/dev/null 2>&1
    kill -TERM "$lp"; timeout 10 tail --pid="$lp" -f /dev/null || kill -KILL "$lp"
  fi
  # A QEMU that outlived libvirtd (libvirtd killed under it): by its pid file.
  [ -s "$run/libvirt/qemu/$dom.pid" ] && kill -KILL "$(cat "$run/libvirt/qemu/$dom.pid")" 2>/dev/null
  [ -n "$hp" ] && kill -TERM "$hp" 2>/dev/null && wait "$hp" 2>/dev/null
  [ -n "$vp" ] && kill -TERM "$vp" 2>/dev/null && wait "$vp" 2>/dev/null
  ip netns del "$nsc" 2>/dev/null
  ip netns del "$nsv" 2>/dev/null
  remove_mountpoints
  [ -n "${VDEV_E2E_KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"
  rm -rf "$run"
}
trap cleanup EXIT

ctl() { "$vdevctl" -S "$sock" "$@"; }
# gsh TIMEOUT CMD: CMD in the guest (its console), its output; its status.
gsh() { python3 "$src/tests/qemu/guest_cmd.py" "$console" "$@"; }
live() { [ "$(ctl -j port show | json "[x['live'] for x in d if x['name']=='$1'][0]")" = "$2" ]; }
ready() { grep -a 'vdev-guest: ready' "$run/console.log" 2>/dev/null; }

# --- vdevd and its two ports: the tap libvirt will hand QEMU, the container
ip netns add "$nsv" && ip -n "$nsv" link set lo up && ip netns add "$nsc" || exit 1
ip netns exec "$nsv" "$vdevd" --socket "$sock" --no-state >"$dir/vdevd.log" 2>&1 &
vp=$!
wait_for 20 quiet grep -q "vdevd: ready" "$dir/vdevd.log" ||
  die "vdevd did not start: $(cat "$dir/vdevd.log")"
ctl port add "$tap" type tap create mac "$tapmac" || die "vdevctl port add $tap type tap create"
ctl port add "$veth" type veth create netns "$nsc" peer eth0 || die "vdevctl port add $veth type veth create"
ip -n "$nsc" addr add "$caddr/24" dev eth0 && ip -n "$nsc" link set eth0 up || exit 1
live "$tap" False && ok "tap $tap made by vdevd, down until a VM attaches" || fail "tap $tap is live with no VM"

# --- libvirtd
# /var/cache/libvirt holds what libvirtd learned by probing QEMU (7 s of
# its start here); libvirtd probes again when QEMU or libvirt changed. Kept
# in the build tree, like the guest image, so that only the first run pays.
cache=$build/tests/qemu/libvirt-cache
mkdir -p "$dir/etc" "$dir/lib" "$cache" "$dir/log" "$run/libvirt"
cat >"$dir/etc/libvirtd.conf" <<EOF
unix_sock_dir = "$run"
auth_unix_ro = "none"
auth_unix_rw = "none"
log_outputs = "${VDEV_LIBVIRT_LOG_LEVEL:-3}:file:$dir/libvirtd.log"
EOF
cat >"$dir/etc/qemu.conf" <<EOF
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
namespaces = [ ]
cgroup_controllers = [ ]
stdio_handler = "file"
EOF
binds="$dir/etc:/etc/libvirt $run/libvirt:/run/libvirt $dir/lib:/var/lib/libvirt"
binds="$binds $cache:/var/cache/libvirt $dir/log:/var/log/libvirt"
if ! getent passwd libvirt-qemu >/dev/null; then
  cp /etc/passwd "$dir/passwd" && cp /etc/group "$dir/group" || exit 1
  echo "libvirt-qemu:x:$((60000 + $$ % 5000)):" >>"$dir/group"
  echo "libvirt-qemu:x:$((60000 + $$ % 5000)):$((60000 + $$ % 5000))::/var/lib/libvirt:/usr/sbin/nologin" >>"$dir/passwd"
  binds="$binds $dir/passwd:/etc/passwd $dir/group:/etc/group"
fi
for b in $binds; do make_mountpoint "${b#*:}" || exit 1; done
# libvirtd validates that cache against the host's CPUID as read on the
# CPU it runs on, which differs between CPUs (their APIC IDs): libvirtd is
# pinned to one so that the cache holds. QEMU does not inherit that: with
# no <vcpu cpuset> libvirt gives it every online CPU.
cpu=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status | cut -d, -f1 | cut -d- -f1)
# shellcheck disable=SC2016
nsenter --net="/run/netns/$nsv" taskset -c "$cpu" unshare --mount --propagation private sh -c '
  pid=$1; shift
  for b; do mount --bind "${b%%:*}" "${b#*:}" || exit 1; done
  exec libvirtd --config /etc/libvirt/libvirtd.conf --pid-file "$pid"' \
  sh "$run/libvirtd.pid" $binds >"$dir/libvirtd.out" 2>&1 &
lp=$!
wait_for 30 quiet virsh version ||
  die "libvirtd did not start: $(cat "$dir/libvirtd.out"; tail -20 "$dir/libvirtd.log")"
ok "libvirtd up: $(virsh version | grep -E 'library|hypervisor' | tr -s ' ' | tr '\n' ';')"

# --- the domain: docs/vm.md's XML with this test's names and type='qemu'
xml=$(sed -n '/^<!-- libvirt-test-domain:begin -->$/,/^<!-- libvirt-test-domain:end -->$/p' "$src/docs/vm.md" |
  grep -v -e '^<!--' -e '^```')
subst() {
  [[ $xml == *"$1"* ]] || die "docs/vm.md's domain XML has no \"$1\""
  xml=${xml//"$1"/"$2"}
}
subst "<domain type='kvm'>" "<domain type='qemu'>"
subst "<name>vm1</name>" "<name>$dom</name>"
subst "/var/lib/vdev-guest/" "$guest/"
subst "dev='vm1'" "dev='$tap'"
subst "02:00:00:00:01:01" "$gmac"
subst "/run/vdev-vm1/" "$run/"
subst "vdev.ip=198.18.42.2/24" "vdev.ip=$gaddr/24"
printf '%s\n' "$xml" >"$dir/domain.xml"
echo "--- domain XML"; cat "$dir/domain.xml"
out=$(virsh define "$dir/domain.xml" 2>&1) && ok "virsh define: $out" || die "virsh define: $out"

# boot: virsh start, the guest's ready line, the port live.
boot() {
  local out
  rm -f "$run/console.log"  # the ready line of this boot, not the last
  out=$(virsh start "$dom" 2>&1) || { fail "virsh start: $out"; return 1; }
  if ! wait_for 150 quiet ready; then
    fail "the guest was not ready within 150 s: $(tail -20 "$run/console.log")"
    return 1
  fi
  ok "guest up: $(ready)"
  wait_for 10 live "$tap" True && ok "vdevd's port $tap live" || fail "vdevd's port $tap not live: $(ctl port show)"
}
boot || die "no guest"

echo "--- virsh domiflist"; virsh domiflist "$dom"
virsh domiflist "$dom" | grep -Eq "^ *$tap +ethernet +- +virtio +$gmac *$" &&
  ok "virsh domiflist: $tap, ethernet, virtio, $gmac" || fail "virsh domiflist does not name $tap"
cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$(cat "$run/libvirt/qemu/$dom.pid")/status")
[ "$cpus" != "$cpu" ] || [ "$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)" = "$cpu" ] &&
  ok "QEMU is not pinned with libvirtd: CPUs $cpus" || fail "QEMU runs on CPU $cpus only (libvirtd's pinning)"
features=$(ready | sed -n 's/.*virtio_features=\([01]*\).*/\1/p')
[ "${features:0:1}" = 1 ] && [ "${features:11:1}" = 1 ] &&
  ok "the guest has VIRTIO_NET_F_CSUM and HOST_TSO4 (vnet_hdr, libvirt's default)" ||
  fail "the guest's offloads: virtio_features=$features"
netdev=$(grep -o -- "-netdev '[^']*'" "$dir/log/qemu/$dom.log" | tail -1)
if [ -c /dev/vhost-net ]; then
  [[ $netdev == *'"vhost":true'* ]] && ok "QEMU: $netdev (vhost-net)" || fail "no vhost-net: $netdev"
else
  [[ $netdev == *'"type":"tap"'* && $netdev != *vhost* ]] &&
    ok "QEMU: $netdev (no /dev/vhost-net here: no vhost)" || fail "QEMU's netdev: $netdev"
fi

# --- traffic
blob=$guest/blob
want=$(sha256sum <"$blob" | cut -d' ' -f1)
cp "$blob" "$dir/blob"
ip netns exec "$nsc" busybox httpd -f -p 8080 -h "$dir" &
hp=$!
wait_for 5 quiet sh -c "ip netns exec $nsc ss -Hltn | grep -q ':8080 '" || fail "no httpd in the container"
ping_both() {  # $1: which boot
  local out
  # A first ARP exchange lost costs a second; a datapath that does not
  # forward fails here, and nothing after it can pass.
  out=$(gsh 60 "ping -c 3 -i 0.2 -w 15 $caddr" 2>&1)
  [[ $out == *" 3 packets received"* ]] && ok "$1: guest pings the container" || die "$1: guest ping: $out"
  out=$(ip netns exec "$nsc" ping -n -c 3 -i 0.2 -w 15 "$gaddr" 2>&1)
  [[ $out == *" 3 received"* ]] && ok "$1: the container pings the guest" || die "$1: container ping: $out"
}
tcp_both() {  # $1: which boot
  local out got
  # The guest's nc sends the blob to a listener in the container.
  ip netns exec "$nsc" python3 "$src/tests/e2e/tcp_check.py" server 5002 >"$dir/tcp.out" 2>&1 &
  lsn=$!
  wait_for 10 quiet sh -c "ip netns exec $nsc ss -Hltn | grep -q ':5002 '" || fail "$1: no listener in the container"
  out=$(gsh 60 "nc -w 20 $caddr 5002 </srv/blob" 2>&1) || fail "$1: guest nc: $out"
  timeout 30 tail --pid="$lsn" -f /dev/null
  kill "$lsn" 2>/dev/null
  lsn=
  got=$(cat "$dir/tcp.out")
  [ "$got" = "{\"bytes\": 1048576, \"sha256\": \"$want\"}" ] &&
    ok "$1: TCP guest -> container, 1 MiB intact" || fail "$1: TCP guest -> container: $got (want sha256 $want)"
  # The container fetches the blob from the guest's httpd.
  got=$(ip netns exec "$nsc" timeout 30 busybox wget -q -O - "http://$gaddr/blob" | sha256sum | cut -d' ' -f1)
  [ "$got" = "$want" ] && ok "$1: TCP container -> guest's httpd, 1 MiB intact" ||
    fail "$1: container wget from the guest: sha256 $got"
  # The guest fetches it from the container's.
  out=$(gsh 60 "wget -q -O - http://$caddr:8080/blob | sha256sum" 2>&1)
  [ "${out%% *}" = "$want" ] && ok "$1: TCP guest -> container's httpd, 1 MiB intact" ||
    fail "$1: guest wget from the container: $out"
}

# --- virsh domifstat against vdevd's counters for the tap. libvirt shows a
# type='ethernet' interface as the guest sees it: its rx is the tap's tx.
# vdevd counts bytes as the tap does, and packets as segments: a GSO frame
# is one packet to the tap and gso_segs to vdevd. Nothing sends on the tap
# by itself (no IPv6 on either side), but a guest's ARP may come any time:
# a snapshot is taken when domifstat reads the same before and after
# vdevd's counters.
declare -A vs vd
ifstat() { virsh domifstat "$dom" "$tap" | awk 'NF == 3 { printf "%s=%s ", $2, $3 }'; }
vdevstat() {
  ctl -j stats | json "' '.join('%s=%s' % (k, p[k]) for p in d['ports'] if p['name'] == '$tap'
                              for k in ('rx_bytes', 'rx_packets', 'tx_bytes', 'tx_packets'))"
}
snapshot() {
  local a b c k
  for _ in $(seq 20); do
    a=$(ifstat) b=$(vdevstat) c=$(ifstat)
    [ "$a" = "$c" ] && break
  done
  for k in rx_bytes rx_packets tx_bytes tx_packets; do
    vs[$k]=$(echo "$a" | grep -o "\b$k=[0-9]*" | cut -d= -f2)
    vd[$k]=$(echo "$b" | grep -o "\b$k=[0-9]*" | cut -d= -f2)
  done
  echo "--- $1: domifstat $a; vdevd's port $b"
}
# counters WHEN SIGN: vdevd's rx against domifstat's tx, vdevd's tx against
# domifstat's rx: bytes equal, packets SIGN: "=" before any GSO frame, ">="
# after.
counters() {
  local sign=$2
  # vdevd's packets $1 against domifstat's $2, as SIGN says.
  packets() { if [ "$sign" = "=" ]; then [ "$1" -eq "$2" ]; else [ "$1" -ge "$2" ]; fi; }
  snapshot "$1"
  [ "${vd[rx_bytes]}" = "${vs[tx_bytes]}" ] && packets "${vd[rx_packets]}" "${vs[tx_packets]}" &&
    ok "$1: vdevd's rx for $tap = domifstat's tx: ${vd[rx_bytes]} bytes, ${vd[rx_packets]} $sign ${vs[tx_packets]} packets" ||
    fail "$1: vdevd's rx ${vd[rx_packets]} packets ${vd[rx_bytes]} bytes, domifstat's tx ${vs[tx_packets]} ${vs[tx_bytes]}"
  [ "${vd[tx_bytes]}" = "${vs[rx_bytes]}" ] && packets "${vd[tx_packets]}" "${vs[rx_packets]}" &&
    ok "$1: vdevd's tx for $tap = domifstat's rx: ${vd[tx_bytes]} bytes, ${vd[tx_packets]} $sign ${vs[rx_packets]} packets" ||
    fail "$1: vdevd's tx ${vd[tx_packets]} packets ${vd[tx_bytes]} bytes, domifstat's rx ${vs[rx_packets]} ${vs[rx_bytes]}"
}

ping_both "first boot"
counters "first boot, pings" =
tcp_both "first boot"
counters "first boot, TCP" ">="
[ "${vd[rx_packets]}" -gt "${vs[tx_packets]}" ] && [ "${vd[tx_packets]}" -gt "${vs[rx_packets]}" ] &&
  [ "${vd[rx_bytes]}" -gt $((2 * 1048576)) ] && [ "${vd[tx_bytes]}" -gt 1048576 ] &&
  ok "the transfers crossed $tap both ways as GSO frames" || fail "no GSO frames or too few bytes on $tap"

# --- virsh destroy and start again: the tap stays, the port follows QEMU.
out=$(virsh destroy "$dom" 2>&1) && ok "virsh destroy: $out" || fail "virsh destroy: $out"
wait_for 10 live "$tap" False && ok "vdevd's port $tap down with the VM gone" || fail "port $tap still live"
ip -n "$nsv" link show "$tap" >/dev/null 2>&1 && ok "tap $tap still there" || die "tap $tap gone with the VM"
boot || die "no guest after virsh start"
ping_both "after virsh start"
tcp_both "after virsh start"
counters "after virsh start" ">="

out=$(virsh destroy "$dom" 2>&1 && virsh undefine "$dom" 2>&1) && ok "domain destroyed and undefined" ||
  fail "virsh destroy/undefine: $out"
[ -z "$(virsh list --all --name | grep -Fx "$dom")" ] || fail "domain $dom still listed"
stopped libvirtd "$lp" "$dir/libvirtd.out"
lp=
# The port, then vdevd: nothing of the test's left in its namespace.
ctl port del "$tap" && ctl port del "$veth" || fail "vdevctl port del"
vdevd_stopped "$vp" "$dir/vdevd.log" "$nsv"
vp=

if [ $failures -ne 0 ]; then
  echo "FAILED: $failures"
  exit 1
fi
echo "PASSED"
