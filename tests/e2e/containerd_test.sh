#!/bin/bash
# containerd_test.sh BUILD: Debian's containerd, started by the test, runs
# two containers with `ctr run --cni` on a vdev-cni network (containerd's
# own CNI library, go-cni/libcni, calls vdev-cni and host-local) against a
# vdevd the test starts; the containers ping each other and move a checked
# TCP payload through vdevd; deleting them (the task killed, `ctr run --rm`
# then runs CNI DEL and deletes the container) leaves no port, no veth and
# no address (docs/containers.md, "Tested with containerd").
#
# Debian 12's ctr (containerd 1.6.20) has no flag for the CNI directories:
# `ctr run --cni` always reads the first conflist in /etc/cni/net.d and
# runs plugins from /opt/cni/bin. So containerd, its shims and every ctr
# run in a mount namespace of their own (unshare; ctr through nsenter) where
# /etc/cni/net.d is the test's config dir, /opt a tmpfs holding cni/bin, and
# /run/containerd (where containerd 1.6 puts shim sockets and runc state
# whatever its --state) a tmpfs: the host's CNI configs (podman's bridge)
# are not seen and nothing of containerd's is left on the host. The image is
# built by the test from Debian's busybox-static (a docker-archive tarball,
# `ctr image import`): no registry is reached.
#
# vdevd, containerd and ctr run in a network namespace the test makes (the
# veths' host ends go there, not into the machine's own); vdevd's and containerd's sockets are under a /run directory of the
# test's. Skipped (77) when not root or without containerd, runc,
# busybox-static or host-local (scripts/install-deps.sh installs them).
# Everything it made is removed on exit, pass or fail.
set -u
build=${1:?usage: containerd_test.sh BUILD}
vdevd=$build/daemon/vdevd
vdevctl=$build/tools/vdevctl/vdevctl
cni=$build/tools/vdev-cni/vdev-cni

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (containerd, network namespaces, AF_XDP)"
for t in containerd ctr runc unshare nsenter ip python3; do
  command -v $t >/dev/null 2>&1 || skip "$t is not installed (scripts/install-deps.sh)"
done
[ -x /bin/busybox ] || skip "no /bin/busybox (busybox-static): no image to run"
[ -x /usr/lib/cni/host-local ] || skip "no /usr/lib/cni/host-local (containernetworking-plugins)"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
check_t0=$(date +%s)
for b in "$vdevd" "$vdevctl" "$cni"; do [ -x "$b" ] || die "$b is not built"; done

tag=$(printf 'cd%04x' $(($$ % 65536)))
nsv=vdev-$tag-v             # vdevd's network namespace
ctrns=vdev-$tag             # containerd namespace (and the containers' cgroup parent)
net=vdev$tag                # the CNI network
ca=${tag}a cb=${tag}b       # container IDs
image=localhost/vdev-busybox:$tag
dir=$(mktemp -d /tmp/vdev-ctrd.XXXXXX)
run=$(mktemp -d /run/vdev-ctrd.XXXXXX)
sock=$run/vdevd.sock
csock=$run/containerd.sock
vp='' cp='' runa='' runb=''

cleanup() {
  set +e
  if [ -n "$cp" ] && kill -0 "$cp" 2>/dev/null; then
    # Tasks first: their shims outlive containerd otherwise.
    for c in "$ca" "$cb"; do ctr_ task kill -s SIGKILL "$c" >/dev/null 2>&1; done
    for p in $runa $runb; do timeout 10 tail --pid="$p" -f /dev/null; done
    for c in "$ca" "$cb"; do
      ctr_ task delete -f "$c" >/dev/null 2>&1
      ctr_ container delete "$c" >/dev/null 2>&1
    done
    kill -TERM "$cp"; timeout 10 tail --pid="$cp" -f /dev/null || kill -KILL "$cp"
  fi
  # A shim of ours still running (containerd killed under it): by its address.
  for p in $(grep -lsF -- "$csock" /proc/[0-9]*/cmdline | cut -d/ -f3); do
    [ "$p" != $$ ] && kill -KILL "$p" 2>/dev/null
  done
  for p in $runa $runb; do kill -KILL "$p" 2>/dev/null; done
  [ -n "$vp" ] && kill -TERM "$vp" 2>/dev/null && wait "$vp" 2>/dev/null
  ip netns del "$nsv" 2>/dev/null
  # The containers' cgroups (/<namespace>/<id> in every hierarchy): a
  # process left in one (its shim killed) goes too.
  for d in /sys/fs/cgroup/*/"$ctrns"/*/; do
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    wait_for 2 quiet rmdir "$d"
  done
  for d in /sys/fs/cgroup/*/"$ctrns"; do [ -d "$d" ] && rmdir "$d"; done
  remove_mountpoints
  rm -rf "$dir" "$run"
}
trap cleanup EXIT

ctl() { "$vdevctl" -S "$sock" "$@"; }
ctr_() { nsenter -t "$cp" -m -n ctr -a "$csock" -n "$ctrns" "$@"; }

# --- vdevd
ip netns add "$nsv" && ip -n "$nsv" link set lo up || exit 1
ip netns exec "$nsv" "$vdevd" --socket "$sock" --no-state >"$dir/vdevd.log" 2>&1 &
vp=$!
wait_for 20 quiet grep -q "vdevd: ready" "$dir/vdevd.log" ||
  die "vdevd did not start: $(cat "$dir/vdevd.log")"

# --- the CNI configuration and plugins as ctr will see them
mkdir -p "$dir/net.d" "$dir/bin" "$dir/ipam" "$dir/root" "$dir/opt" "$run/state"
cat >"$dir/net.d/10-$net.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$net",
  "plugins": [
    {
      "type": "vdev-cni",
      "socket": "$sock",
      "ipam": {
        "type": "host-local",
        "dataDir": "$dir/ipam",
        "ranges": [[{"subnet": "198.18.212.0/24"}]]
      }
    }
  ]
}
EOF
ln -s "$(realpath "$cni")" "$dir/bin/vdev-cni"
ln -s /usr/lib/cni/host-local "$dir/bin/host-local"

cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$run/state"
# ctr needs none of Kubernetes' CRI service.
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$csock"
[ttrpc]
  address = "$csock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
EOF

# --- containerd in its own mount namespace and in vdevd's network
# namespace: vdev-cni, run by ctr, finds the host ends of the veths vdevd
# makes in its own (nsenter, not `ip netns exec`, whose fresh /sys would
# hide the cgroup mounts runc needs).
make_mountpoint /etc/cni/net.d && make_mountpoint /run/containerd && make_mountpoint /opt || exit 1
nsenter --net="/run/netns/$nsv" unshare --mount --propagation private sh -c '
  mount -t tmpfs -o mode=0711 vdev-ctrd /run/containerd &&
  mount --bind "$1/net.d" /etc/cni/net.d &&
  mount -t tmpfs -o mode=0755 vdev-ctrd /opt && mkdir -p /opt/cni &&
  ln -s "$1/bin" /opt/cni/bin &&
  exec containerd --config "$1/config.toml"' sh "$dir" >"$dir/containerd.log" 2>&1 &
cp=$!
wait_for 10 quiet ctr_ version || die "containerd did not start: $(tail -20 "$dir/containerd.log")"
ok "containerd $(ctr_ version | awk '/Server:/ {s=1} s && /Version:/ {print $2; exit}') up"

# --- the image: busybox-static as one layer
rootfs=$dir/rootfs
mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp" "$dir/img"
cp /bin/busybox "$rootfs/bin/busybox"
for t in sh ip ping sleep nc netstat head md5sum wc cat mkfifo; do ln -s busybox "$rootfs/bin/$t"; done
tar -C "$rootfs" -cf "$dir/img/layer.tar" .
diff=$(sha256sum "$dir/img/layer.tar" | cut -d' ' -f1)
cat >"$dir/img/config.json" <<EOF
{"architecture": "$(dpkg --print-architecture)", "os": "linux",
 "config": {"Cmd": ["/bin/sh"]},
 "rootfs": {"type": "layers", "diff_ids": ["sha256:$diff"]}}
EOF
echo "[{\"Config\": \"config.json\", \"RepoTags\": [\"$image\"], \"Layers\": [\"layer.tar\"]}]" >"$dir/img/manifest.json"
tar -C "$dir/img" -cf "$dir/image.tar" manifest.json config.json layer.tar
if out=$(ctr_ image import "$dir/image.tar" 2>&1); then ok "image imported: $out"; else
  die "ctr image import: $out"
fi

# --- two containers on the vdev network. `ctr run` in the foreground (not
# -d): only then does ctr itself run CNI DEL when the task exits (ctr 1.6's
# task and container delete do not), as --rm deletes the container.
# PID 1 ignores SIGTERM: the test ends them with SIGKILL.
ctr_ run --rm --cni "$image" "$ca" /bin/sleep 600 >"$dir/run-a.log" 2>&1 &
runa=$!
ctr_ run --rm --cni "$image" "$cb" /bin/sleep 600 >"$dir/run-b.log" 2>&1 &
runb=$!
running() { ctr_ task ls | grep -Eq "^$1 +[0-9]+ +RUNNING"; }
# Exec IDs unique per container: the shell's pid (a subshell's own) and a count.
nexec=0
exec_() { local c=$1; shift; nexec=$((nexec + 1)); ctr_ task exec --exec-id "x$BASHPID-$nexec" "$c" "$@"; }
# out_ C CMD...: CMD's output in container C. ctr 1.6's `task exec` now and
# then exits 0 with the output of a short process lost (seen under load,
# about 1 run in 5 while the machine compiled): up to 5 tries for output.
out_() {
  local o n
  for n in 1 2 3 4 5; do
    o=$(exec_ "$@") && [ -n "$o" ] && { printf '%s\n' "$o"; return 0; }
    echo "(ctr task exec $*: no output, try $n)" >&2
  done
  return 1
}
has_addr() { exec_ "$1" ip -4 -o addr show eth0 | grep -q 'inet 198\.18\.212\.'; }
for c in "$ca" "$cb"; do
  wait_for 10 quiet running "$c" && wait_for 5 quiet has_addr "$c" ||
    die "container $c did not start with an address: $(cat "$dir/run-${c: -1}.log"; ctr_ task ls
      tail -20 "$dir/containerd.log")"
done
echo "--- ctr task ls"; ctr_ task ls
echo "--- ctr container ls"; ctr_ container ls
addr() { out_ "$1" ip -4 -o addr show eth0 | grep -o 'inet [0-9.]*' | cut -d' ' -f2; }
aa=$(addr "$ca") ab=$(addr "$cb")
echo "--- ctr task exec $ca ip -4 -o addr show eth0"; out_ "$ca" ip -4 -o addr show eth0
echo "--- ctr task exec $cb ip -4 -o addr show eth0"; out_ "$cb" ip -4 -o addr show eth0
[ -n "$aa" ] && [ -n "$ab" ] && [ "$aa" != "$ab" ] && ok "addresses from host-local: $aa, $ab" ||
  { fail "addresses from host-local: '$aa' '$ab'"; exit 1; }

echo "--- vdevctl port show"; ctl port show
ports=$(ctl -j port show | json "' '.join(sorted(x['name'] for x in d))")
nports=$(echo $ports | wc -w)
[ "$nports" -eq 2 ] && ok "vdevd has the two containers' ports: $ports" || fail "vdevd's ports: '$ports'"

# --- traffic. Pings until 3 replies (one request at a time, 2 s each, at
# most 15): a first ARP exchange lost does not fail the test, a datapath
# that never forwards does.
pingloop="n=0; i=0; while [ \$n -lt 3 ] && [ \$i -lt 15 ]; do i=\$((i+1)); \
if ping -c 1 -W 2 \$0 >/dev/null 2>&1; then n=\$((n+1)); fi; done; echo \"\$n replies to \$i requests\""
for pair in "$ca $ab" "$cb $aa"; do
  set -- $pair
  out=$(out_ "$1" sh -c "$pingloop" "$2")
  echo "--- ctr task exec $1 ping $2: $out"
  case $out in "3 replies to "*) ok "$1 pings $2: $out" ;; *) fail "$1 pings $2: $out" ;; esac
done

# TCP: 1 MiB of random bytes from a to b's listener, md5 compared.
exec_ "$ca" sh -c 'head -c 1048576 /dev/urandom >/tmp/payload'
sent=$(out_ "$ca" md5sum /tmp/payload | cut -d' ' -f1)
# The listener's stdin never ends (a FIFO it holds open for writing too):
# at EOF on stdin busybox's nc half-closes the connection, and the sender's
# nc exits, 0, as soon as it reads that FIN -- with most of the payload
# unsent (seen: 46080 bytes of 1 MiB).
exec_ "$cb" sh -c 'mkfifo /tmp/idle && nc -l -p 5201 <>/tmp/idle >/tmp/got' >"$dir/nc-b.log" 2>&1 &
listener=$!
listening() { exec_ "$cb" netstat -ltn | grep -q ':5201 '; }
wait_for 5 quiet listening || fail "no listener on $cb:5201"
if out=$(exec_ "$ca" sh -c "nc -w 5 $ab 5201 </tmp/payload" 2>&1); then ok "sent 1 MiB $ca -> $cb"; else
  fail "nc $ca -> $ab:5201: $out"
fi
timeout 20 tail --pid="$listener" -f /dev/null || fail "the listener in $cb did not see the end of the stream"
got=$(out_ "$cb" sh -c 'wc -c </tmp/got; md5sum /tmp/got' | tr '\n' ' ')
echo "--- received in $cb: $got (sent md5 $sent)"
case $got in "1048576 $sent "*) ok "TCP payload intact: $got" ;; *) fail "TCP payload: got '$got', sent md5 $sent" ;; esac

echo "--- vdevctl stats"; ctl stats
# vdevd's counters for the transfer: the port of a's veth (the host end,
# whose ifindex is a's eth0's iflink; busybox's `ip link` shows it as a
# name when that index is also one of the container's own) received the
# payload from a, b's sent it on to b.
port_of() {
  local i
  i=$(out_ "$1" cat /sys/class/net/eth0/iflink)
  ctl -j port show | json "[x['name'] for x in d if x['ifindex']==${i:-0}][0]"
}
pa=$(port_of "$ca") pb=$(port_of "$cb")
bytes() { ctl -j stats | json "[x['$2'] for x in d['ports'] if x['name']=='$1'][0]"; }
rxa=$(bytes "$pa" rx_bytes) txb=$(bytes "$pb" tx_bytes)
[ "$rxa" -gt 1048576 ] && ok "port $pa ($ca) received $rxa bytes" || fail "port $pa ($ca) received only '$rxa' bytes"
[ "$txb" -gt 1048576 ] && ok "port $pb ($cb) sent $txb bytes" || fail "port $pb ($cb) sent only '$txb' bytes"

# --- deleting the containers: the task killed, `ctr run --rm` runs CNI
# DEL (vdev-cni removes the port, host-local the address) and deletes the
# container.
for c in "$ca" "$cb"; do ctr_ task kill -s SIGKILL "$c" || fail "ctr task kill $c"; done
for p in $runa $runb; do
  timeout 20 tail --pid="$p" -f /dev/null || fail "ctr run (pid $p) did not end after its task was killed"
done
wait $runa; echo "--- ctr run $ca exited $?: $(cat "$dir/run-a.log")"
wait $runb; echo "--- ctr run $cb exited $?: $(cat "$dir/run-b.log")"
runa='' runb=''
left=$(ctr_ container ls -q)
[ -z "$left" ] && ok "no container left in containerd" || fail "containers left: $left"
left=$(ctl -j port show | json "len(d)")
[ "$left" -eq 0 ] && ok "no port left in vdevd" || fail "ports left in vdevd: $(ctl port show)"
# A veth whose peer's namespace the kernel is still tearing down (its
# netns cleanup runs from a workqueue) may outlive the port for a moment.
no_veth() { for p in $ports; do ! ip -n "$nsv" link show "$p" || return 1; done; }
wait_for 5 quiet no_veth && ok "no veth of the containers left" ||
  fail "veths left: $(ip -n "$nsv" -o link show | grep -v ': lo:')"
left=$(find "$dir/ipam" -type f -name '198.*' | wc -l)
[ "$left" -eq 0 ] && ok "host-local released both addresses" || fail "addresses still reserved: $(ls "$dir/ipam"/*)"

vdevd_stopped "$vp" "$dir/vdevd.log" "$nsv"
vp=

if [ $failures -ne 0 ]; then
  echo "--- vdevd log"; cat "$dir/vdevd.log"
  echo "--- containerd log"; tail -40 "$dir/containerd.log"
  echo "FAILED: $failures"
  exit 1
fi
echo "PASSED"
