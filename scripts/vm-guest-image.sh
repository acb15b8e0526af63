#!/bin/sh
# Builds the test guest that tests/qemu boots under QEMU: a Debian kernel and
# an initramfs with busybox as init, the virtio-net driver and real TCP tools.
#
#   scripts/vm-guest-image.sh OUTDIR
#
# Writes, in OUTDIR (created; it must not be a tracked folder of the source
# tree -- use the build tree, e.g. build/tests/qemu/guest):
#   vmlinuz      the kernel, copied from /boot
#   initrd.img   the initramfs (gzip'd cpio)
#   blob         1 MiB of random bytes, also at /srv/blob inside the guest:
#                what the tests move over TCP and compare byte for byte
#   inputs.sha256  what the image was built from; the next run rebuilds only
#                when one of those inputs changed (a kernel update, a new
#                busybox, an edit of this script)
#
# Everything comes from Debian packages (scripts/install-deps.sh):
# linux-image-cloud-amd64 (or any Debian kernel with virtio-net, as a module
# or built in; VDEV_GUEST_KERNEL=/boot/vmlinuz-VERSION picks one),
# busybox-static, iperf3 (optional: copied with its shared libraries when
# installed).
#
# The guest (its /init is written below):
#   - loads virtio_pci and virtio_net with their dependencies (insmod),
#   - configures eth0 from the kernel command line:
#       vdev.ip=ADDR/PREFIX   address and prefix length (e.g. 198.18.40.2/24)
#       vdev.mtu=N            MTU (default 1500)
#   - disables IPv6 (the guest sends nothing it was not asked to),
#   - starts busybox httpd on port 80 serving /srv (so /blob) and, when
#     present, `iperf3 -s` on port 5201,
#   - prints on its console (ttyS0)
#       vdev-guest: ready ip=ADDR mtu=N mac=MAC virtio_features=BITS
#     (BITS: the virtio-net feature bits the driver negotiated, bit 0 first:
#     bit 0 is VIRTIO_NET_F_CSUM, 11 HOST_TSO4; all 0 with vnet_hdr=off),
#   - then reads commands from the console, one a line:
#       @ID SHELL COMMAND
#     runs each with sh in the background (stdin /dev/null; several may run
#     at once) and, when it ends, prints each line of its output and its
#     exit status:
#       vdev-guest: out ID LINE
#       vdev-guest: done ID rc=STATUS
#     A line not starting with @ is ignored. The console does not echo.
#
# Exit status: 0 built or up to date; 2 bad usage; 3 a package is missing
# (the message names it); 1 anything else.
set -eu

usage() { echo "usage: $0 OUTDIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
outdir=$1
[ -n "$outdir" ] || usage

missing() { echo "vm-guest-image: $*" >&2; exit 3; }
die() { echo "vm-guest-image: $*" >&2; exit 1; }

self=$(readlink -f "$0")
srcdir=$(dirname "$(dirname "$self")")

# Never write into the source tree: an OUTDIR inside this checkout must be
# one git ignores (build/...).
outdir=$(readlink -m "$outdir")
if command -v git >/dev/null 2>&1 && git -C "$srcdir" rev-parse --show-toplevel >/dev/null 2>&1; then
    top=$(git -C "$srcdir" rev-parse --show-toplevel)
    case "$outdir/" in
        "$top"/*)
            git -C "$top" check-ignore -q "$outdir" ||
                die "$outdir is in the source tree; give a folder of the build tree"
            ;;
    esac
fi

# --- inputs ----------------------------------------------------------------

busybox=/bin/busybox
[ -x "$busybox" ] || missing "no $busybox (apt-get install busybox-static)"
# A dynamically linked busybox (Debian's "busybox" package) would need its
# libraries in the guest: only the static one will do.
if command -v file >/dev/null 2>&1 && file -L "$busybox" | grep -q 'dynamically linked'; then
    missing "$busybox is dynamically linked (apt-get install busybox-static)"
fi

# The kernel: VDEV_GUEST_KERNEL, else the newest cloud kernel, else the
# newest Debian kernel whose modules have virtio_net.
has_virtio_net() {  # $1: kernel version
    [ -f "/lib/modules/$1/kernel/drivers/net/virtio_net.ko" ] ||
        grep -q '^CONFIG_VIRTIO_NET=y' "/boot/config-$1" 2>/dev/null
}
kernel=${VDEV_GUEST_KERNEL:-}
if [ -z "$kernel" ]; then
    for k in $(printf '%s\n' /boot/vmlinuz-*-cloud-amd64 | sort -rV) \
             $(printf '%s\n' /boot/vmlinuz-* | sort -rV); do
        if [ -f "$k" ] && has_virtio_net "${k#/boot/vmlinuz-}"; then kernel=$k; break; fi
    done
fi
[ -n "$kernel" ] || missing "no Debian kernel with virtio-net in /boot (apt-get install linux-image-cloud-amd64)"
[ -r "$kernel" ] || die "cannot read $kernel"
kver=${kernel#/boot/vmlinuz-}
has_virtio_net "$kver" || die "$kernel: no virtio_net module in /lib/modules/$kver and not built in"
moddir=/lib/modules/$kver

# The modules virtio_net and virtio_pci need, dependencies first, from
# modules.dep (a driver that is built in has no line there and needs nothing).
modules=""
add_module() {  # $1: path relative to $moddir
    case " $modules " in *" $1 "*) return 0 ;; esac
    deps=$(sed -n "s|^$1: *||p" "$moddir/modules.dep")
    for d in $deps; do add_module "$d"; done
    modules="$modules $1"
}
for m in virtio_pci virtio_net; do
    line=$(grep -E "/$m\.ko(\.[a-z]+)?:" "$moddir/modules.dep" || true)
    [ -n "$line" ] || continue
    add_module "${line%%:*}"
done
for m in $modules; do
    case $m in *.ko) ;; *) die "$m: compressed modules are not supported" ;; esac
done

iperf3=$(command -v iperf3 || true)
libs=""
if [ -n "$iperf3" ]; then
    libs=$(ldd "$iperf3" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
fi

# --- cache -----------------------------------------------------------------

mkdir -p "$outdir"
exec 9>"$outdir/.lock"
flock 9

inputs() {
    echo "script $(sha256sum < "$self")"
    echo "kernel $kernel $(sha256sum < "$kernel")"
    for m in $modules; do echo "module $m $(sha256sum < "$moddir/$m")"; done
    echo "busybox $(sha256sum < "$busybox")"
    for f in $iperf3 $libs; do echo "file $f $(sha256sum < "$f")"; done
}
want=$(inputs)
if [ -f "$outdir/inputs.sha256" ] && [ -f "$outdir/vmlinuz" ] && [ -f "$outdir/initrd.img" ] &&
   [ -f "$outdir/blob" ] && [ "$(cat "$outdir/inputs.sha256")" = "$want" ]; then
    echo "vm-guest-image: $outdir is up to date (kernel $kver)"
    exit 0
fi

# --- build -----------------------------------------------------------------

stage=$(mktemp -d "$outdir/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root/bin" "$root/sbin" "$root/etc" "$root/proc" "$root/sys" "$root/dev" \
         "$root/tmp" "$root/run" "$root/srv" "$root/lib/modules" "$root/root"

cp "$busybox" "$root/bin/busybox"
for a in $("$busybox" --list); do
    [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
done

for m in $modules; do
    cp "$moddir/$m" "$root/lib/modules/"
    basename "$m" >> "$root/etc/vdev-modules"
done
touch "$root/etc/vdev-modules"

if [ -n "$iperf3" ]; then
    for f in $iperf3 $libs; do
        mkdir -p "$root$(dirname "$f")"
        cp -L "$f" "$root$f"
    done
    # /lib64 and /lib are symlinks into /usr on Debian; the loader's path is
    # what the binary names, so make both spellings resolve.
    for f in $libs; do
        case $f in
            /usr/*) ;;
            *) [ -e "$root/usr$f" ] || { mkdir -p "$root/usr$(dirname "$f")"; ln -s "$f" "$root/usr$f"; } ;;
        esac
    done
fi

head -c 1048576 /dev/urandom > "$stage/blob"
cp "$stage/blob" "$root/srv/blob"

cat > "$root/init" <<'EOF'
#!/bin/sh
# vdev test guest, PID 1 (written by scripts/vm-guest-image.sh).
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1
# Kernel messages would interleave with the replies the test parses.
echo 1 > /proc/sys/kernel/printk

say() { echo "vdev-guest: $*"; }
fail() { say "error: $*"; poweroff -f; }

for m in $(cat /etc/vdev-modules); do
    insmod "/lib/modules/$m" || fail "insmod $m"
done

ip=""; mtu=1500
for arg in $(cat /proc/cmdline); do
    case $arg in
        vdev.ip=*) ip=${arg#vdev.ip=} ;;
        vdev.mtu=*) mtu=${arg#vdev.mtu=} ;;
    esac
done

# No IPv6: no router solicitations or MLD reports on the wire.
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 2>/dev/null

n=0
while [ ! -e /sys/class/net/eth0 ]; do
    n=$((n + 1)); [ $n -le 300 ] || fail "no eth0 after 30 s"
    sleep 0.1
done
echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6 2>/dev/null
ip link set lo up
ip link set eth0 mtu "$mtu" up || fail "eth0 mtu $mtu"
if [ -n "$ip" ]; then ip addr add "$ip" dev eth0 || fail "address $ip"; fi

httpd -p 80 -h /srv || fail "httpd"
if [ -x /usr/bin/iperf3 ]; then iperf3 -s -D >/dev/null 2>&1 || fail "iperf3 -s"; fi

features=$(cat /sys/class/net/eth0/device/features 2>/dev/null)
stty -echo 2>/dev/null
say "ready ip=$ip mtu=$mtu mac=$(cat /sys/class/net/eth0/address) virtio_features=$features"

# One command, in the background: its output is printed when it ends, each
# line tagged with its id, so commands that run at the same time (a server
# and the client that talks to it) do not mix their lines.
run() {  # $1: id, $2: command
    sh -c "$2" </dev/null >"/tmp/.out.$1" 2>&1
    rc=$?
    sed "s/^/vdev-guest: out $1 /" "/tmp/.out.$1"
    rm -f "/tmp/.out.$1"
    say "done $1 rc=$rc"
}
while IFS= read -r line; do
    line=${line%"$(printf '\r')"}
    case $line in
        @*" "*) id=${line%% *}; run "${id#@}" "${line#* }" & ;;
    esac
done
say "console closed"
poweroff -f
EOF
chmod 755 "$root/init"

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -6 > "$stage/initrd.img"
cp "$kernel" "$stage/vmlinuz"
printf '%s\n' "$want" > "$stage/inputs.sha256"

# Replace the outputs together; inputs.sha256 last, so an interrupted run is
# rebuilt next time.
rm -f "$outdir/inputs.sha256"
for f in vmlinuz initrd.img blob; do mv -f "$stage/$f" "$outdir/$f"; done
mv -f "$stage/inputs.sha256" "$outdir/inputs.sha256"
echo "vm-guest-image: built $outdir (kernel $kver, $(du -k "$outdir/initrd.img" | cut -f1) KiB initramfs)"
