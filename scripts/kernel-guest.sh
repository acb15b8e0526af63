#!/bin/sh
# Runs one command on another kernel: boots a Debian kernel that
# scripts/test-kernels.sh unpacked under QEMU (TCG) with this host's root
# filesystem as the guest's, read-only, and runs COMMAND in it as root, in
# the current folder (or -C DIR), then powers the guest off.
#
#   scripts/kernel-guest.sh [options] SERIES|RELEASE|DIR -- COMMAND [ARG...]
#
#   SERIES      6.1 or 6.12: the kernel of that series in the cache
#   RELEASE     a folder of the cache by name (6.1.0-57-amd64)
#   DIR         an unpacked kernel package (boot/vmlinuz-*, lib/modules/*)
#   -C DIR      the command's working folder (default: the current one)
#   -e VAR=VAL  set VAR in the command's environment (repeatable); VDEV_*
#               and GTEST_* variables of the caller are passed on as well
#   -m MIB      guest memory (default 3072)     -s CPUS  vCPUs (default 2)
#   -b SECONDS  time for the guest to come up (default 240)
#   -t SECONDS  time for the whole run, boot included (default 1200)
#   -k DIR      keep the run's folder (console log, output) in DIR
#   VDEV_TEST_KERNELS   the cache (default /var/cache/vdev-test-kernels)
#   VDEV_QEMU           qemu-system-x86_64 to use (default: from $PATH)
#   VDEV_SKIP_LOG       the guest's gtest binaries log their skipped tests
#                       in the run's folder; they are appended to this file
#
# The command's output (stdout and stderr) is printed as it runs; the
# exit status is the command's. The guest also prints its `uname -r`.
# 77: skipped -- not root, no QEMU, no such kernel in the cache (the
# message says which and how to get it). 124: the guest did not come up in
# time, or the command did not end in time (QEMU killed, console tail
# printed). 125: the guest failed in its own set-up (console tail printed).
#
# Why a script and not tests/qemu's QemuGuest: that class drives a guest
# with an image of its own over a tap and a console protocol; this one runs
# the host's own binaries -- the build tree, iproute2, the test tools -- on
# another kernel, so the guest needs nothing but the host's filesystem and
# the kernel's modules, and one command's status and output. A script also
# runs by hand for one test, like any test binary.
#
# Inside the guest (the stage-2 script below runs as PID 1):
#   /            the host's /, 9p (virtio), read-only, cache=loose
#   /lib/modules the kernel package's modules (a tmpfs over the host's, with
#                the package's folder bound into it); the kernel's
#                modprobe loads them on demand
#   /tmp /run    tmpfs; /var an overlay (host's /var, changes in tmpfs),
#                /var/lib/vdev empty
#   /dev (devtmpfs, pts, shm), /proc, /sys, /sys/fs/bpf, /sys/fs/cgroup
#   lo up; tun and veth loaded
#   VDEV_E2E_TIME_SCALE=5 unless the caller set it (the e2e harness
#   multiplies its deadlines by it: under TCG everything is slower)
#
# How: a small initramfs (busybox-static) loads the 9p and virtio modules
# from the package (xz-compressed ones decompressed into it: busybox's
# insmod reads plain .ko), mounts the host's / over 9p and switches to it;
# the stage-2 script comes from a second, writable 9p share, the run's
# folder on the host, which also takes the command's output and status.
set -eu

self=$(readlink -f "$0")
cache=${VDEV_TEST_KERNELS:-/var/cache/vdev-test-kernels}
mem=3072 cpus=2 boot_timeout=240 run_timeout=1200 keep='' cwd=$(pwd)
envs=""

usage() {
    sed -n '/^#   scripts/,/^#   VDEV_QEMU/p' "$self" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
skip() { echo "kernel-guest: SKIPPED: $*"; exit 77; }
die() { echo "kernel-guest: $*" >&2; exit 1; }

add_env() {
    case $1 in
        *=*) ;;
        *) die "-e $1: not VAR=VALUE" ;;
    esac
    case ${1%%=*} in
        ''|*[!A-Za-z0-9_]*) die "-e $1: bad variable name" ;;
    esac
    # One line per variable, shell-quoted, for the stage-2 script.
    q=$(printf '%s' "${1#*=}" | sed "s/'/'\\\\''/g")
    envs="$envs
export ${1%%=*}='$q'"
}

# The caller's VDEV_* and GTEST_* variables, then -e's (later ones win).
# VDEV_SKIP_LOG names a file the guest cannot write (its / is read-only):
# the guest writes the run's own, appended to the caller's at the end.
for v in $(env | sed -n 's/^\(\(VDEV\|GTEST\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
    [ "$v" = VDEV_SKIP_LOG ] && continue
    eval "add_env \"$v=\${$v}\""
done
[ -z "${VDEV_SKIP_LOG:-}" ] || add_env VDEV_SKIP_LOG=/run/vdev-guest/skipped
while getopts "C:e:m:s:b:t:k:h" opt; do
    case $opt in
        C) cwd=$(readlink -f "$OPTARG") ;;
        e) add_env "$OPTARG" ;;
        m) mem=$OPTARG ;;
        s) cpus=$OPTARG ;;
        b) boot_timeout=$OPTARG ;;
        t) run_timeout=$OPTARG ;;
        k) keep=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] && [ "$2" = "--" ] || usage
which=$1
shift 2

[ "$(id -u)" -eq 0 ] || skip "needs root (QEMU reads the whole root filesystem; the guest's tests need root)"
qemu=${VDEV_QEMU:-$(command -v qemu-system-x86_64 || true)}
[ -n "$qemu" ] && [ -x "$qemu" ] || skip "no qemu-system-x86_64 (scripts/install-deps.sh installs qemu-system-x86)"
for t in busybox cpio xz setpriv; do
    command -v $t >/dev/null 2>&1 || skip "no $t (scripts/install-deps.sh installs it)"
done
if file -L "$(command -v busybox)" 2>/dev/null | grep -q 'dynamically linked'; then
    skip "busybox is dynamically linked (apt-get install busybox-static)"
fi

# --- the kernel ----------------------------------------------------------------

case $which in
    /*|./*|../*) kdir=$which ;;
    *) kdir=$cache/$which ;;
esac
[ -d "$kdir" ] || skip "no kernel $which in $cache (scripts/test-kernels.sh fetches 6.1 and 6.12; make deps runs it)"
kdir=$(readlink -f "$kdir")
kernel=$(ls "$kdir"/boot/vmlinuz-* 2>/dev/null | head -n 1)
[ -n "$kernel" ] || skip "$kdir has no boot/vmlinuz-* (scripts/test-kernels.sh unpacks a kernel package there)"
rel=${kernel##*/vmlinuz-}
moddir=$kdir/lib/modules/$rel
[ -f "$moddir/modules.dep" ] || skip "$moddir/modules.dep missing (scripts/test-kernels.sh runs depmod)"
case "$kdir$cwd" in
    *[[:space:]]*) die "paths with spaces are not supported: $kdir, $cwd" ;;
esac

# The modules the initramfs loads, dependencies first (from modules.dep; a
# driver built into the kernel has no line and needs nothing).
modules=""
add_module() {  # $1: path relative to $moddir
    case " $modules " in *" $1 "*) return 0 ;; esac
    for d in $(sed -n "s|^$1: *||p" "$moddir/modules.dep"); do add_module "$d"; done
    modules="$modules $1"
}
for m in virtio_pci 9pnet_virtio 9p overlay; do
    line=$(grep -E "/$m\.ko(\.xz|\.zst)?:" "$moddir/modules.dep" || true)
    if [ -n "$line" ]; then
        add_module "${line%%:*}"
    elif ! grep -Eq "/$m\.ko(\.xz|\.zst)?\$" "$moddir/modules.builtin" 2>/dev/null; then
        skip "kernel $rel has no $m module and does not build it in"
    fi
done

# --- the run's folder ----------------------------------------------------------

run=$(mktemp -d /tmp/vdev-kernel-guest.XXXXXX)
qpid='' tpid=''
cleanup() {
    if [ -n "$tpid" ]; then kill "$tpid" 2>/dev/null || true; fi
    if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
        kill -KILL "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    if [ -n "$keep" ]; then
        mkdir -p "$keep" && cp -a "$run/." "$keep/" && echo "kernel-guest: run kept in $keep"
    fi
    rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir "$run/share" "$run/initrd"

# The initramfs: busybox, the modules (plain .ko), /init.
ird=$run/initrd
mkdir -p "$ird/bin" "$ird/proc" "$ird/sys" "$ird/dev" "$ird/newroot" "$ird/lib/modules"
cp "$(command -v busybox)" "$ird/bin/busybox"
for a in sh mount umount mkdir insmod switch_root poweroff sleep cat echo; do
    ln -s busybox "$ird/bin/$a"
done
for m in $modules; do
    name=${m##*/}
    case $name in
        *.ko.xz) xz -dc "$moddir/$m" > "$ird/lib/modules/${name%.xz}" ;;
        *.ko.zst) zstd -dcq "$moddir/$m" > "$ird/lib/modules/${name%.zst}" ;;
        *.ko) cp "$moddir/$m" "$ird/lib/modules/$name" ;;
        *) die "$m: unknown module format" ;;
    esac
    echo "${name%.ko*}.ko" >> "$ird/modules"
done
touch "$ird/modules"
cat > "$ird/init" <<'EOF'
#!/bin/sh
# Stage 1 (written by scripts/kernel-guest.sh): the 9p root, then stage 2.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
fail() { echo "vdev-kernel-guest: error: $*"; poweroff -f; sleep 10; }
for m in $(cat /modules); do insmod "/lib/modules/$m" || fail "insmod $m"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /newroot ||
    fail "mount of the host's root (9p) failed"
mount -t tmpfs -o mode=755 tmpfs /newroot/run || fail "tmpfs /run"
mkdir -p /newroot/run/vdev-guest
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none share /newroot/run/vdev-guest ||
    fail "mount of the run's share (9p) failed"
mount --move /dev /newroot/dev
umount /proc /sys
exec switch_root /newroot /bin/sh /run/vdev-guest/stage2
EOF
chmod 755 "$ird/init"
(cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 > "$run/initrd.img"

# Stage 2: the guest's mounts, then the command. Runs as PID 1 (dash): it
# waits for the command, and its wait reaps orphans too.
cat > "$run/share/stage2" <<EOF
#!/bin/sh
# Stage 2 (written by scripts/kernel-guest.sh), PID 1 on the host's root.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
share=/run/vdev-guest
say() { echo "vdev-kernel-guest: \$*"; }
off() { sync; echo o > /proc/sysrq-trigger; sleep 30; }
fail() { say "error: \$*"; echo "\$*" > \$share/setup-error; off; }
mount -t proc proc /proc || fail "proc"
mount -t sysfs sysfs /sys || fail "sysfs"
# Kernel messages would interleave with the output on the console.
echo 1 > /proc/sys/kernel/printk
mount -t tmpfs -o mode=1777 tmpfs /tmp || fail "tmpfs /tmp"
mkdir -p /dev/pts /dev/shm
# What udev would link (bash's process substitution needs /dev/fd).
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts || fail "devpts"
mount -t tmpfs -o mode=1777 tmpfs /dev/shm || fail "tmpfs /dev/shm"
mount -t bpf -o mode=700 bpf /sys/fs/bpf || fail "bpffs"
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "cgroup2"
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
# The kernel's modules: a tmpfs over the host's /lib/modules (other
# releases), the package's folder bound into it.
mount -t tmpfs -o mode=755 tmpfs /lib/modules || fail "tmpfs /lib/modules"
mkdir /lib/modules/$rel
mount --bind $moddir /lib/modules/$rel || fail "modules of $rel"
# /var writable: the host's, changes in a tmpfs (overlay); without overlay,
# an empty tmpfs with /var/run and /var/lock as Debian links them.
mkdir -p /run/vdev-var /run/lock
mount -t tmpfs tmpfs /run/vdev-var && mkdir -p /run/vdev-var/u /run/vdev-var/w &&
    mount -t overlay -o lowerdir=/var,upperdir=/run/vdev-var/u,workdir=/run/vdev-var/w overlay /var ||
    { mount -t tmpfs -o mode=755 tmpfs /var && ln -s /run /var/run && ln -s /run/lock /var/lock &&
      mkdir -p /var/tmp /var/lib /var/cache /var/log && chmod 1777 /var/tmp; } || fail "writable /var"
mkdir -p /var/lib/vdev && mount -t tmpfs -o mode=755 tmpfs /var/lib/vdev || fail "/var/lib/vdev"
ip link set lo up || fail "lo up"
hostname vdev-guest
# Devices the tests open by path: /dev/net/tun exists once tun is loaded
# (no udev here to load it on a static node).
modprobe tun || fail "modprobe tun"
modprobe veth || fail "modprobe veth"
ulimit -n 65536 2>/dev/null || true
say "up \$(uname -r)"
echo up > \$share/up
cd $cwd || fail "cd $cwd"
export VDEV_E2E_TIME_SCALE=5
$envs
echo "kernel-guest: uname -r: \$(uname -r)" >> \$share/output
/bin/sh \$share/cmd < /dev/null >> \$share/output 2>&1
rc=\$?
echo \$rc > \$share/rc
say "done rc=\$rc"
off
EOF

# The command, as a script of its own: its arguments quoted once here.
{
    echo "#!/bin/sh"
    printf 'exec'
    for a in "$@"; do printf " '%s'" "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")"; done
    echo
} > "$run/share/cmd"
: > "$run/share/output"

# --- boot ------------------------------------------------------------------------

echo "kernel-guest: booting $rel ($kernel) under QEMU TCG, ${cpus} vCPUs, ${mem} MiB"
start=$(date +%s)
# QEMU dies with this script (PR_SET_PDEATHSIG), however the script ends.
setpriv --pdeathsig KILL "$qemu" \
    -machine q35 -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$mem" \
    -nodefaults -display none -no-reboot -monitor none \
    -serial "file:$run/console.log" \
    -kernel "$kernel" -initrd "$run/initrd.img" \
    -append "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init" \
    -fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
    -fsdev local,id=share,path="$run/share",security_model=none \
    -device virtio-9p-pci,fsdev=share,mount_tag=share \
    > "$run/qemu.log" 2>&1 &
qpid=$!

console_tail() {
    echo "kernel-guest: --- console (last 40 lines) ---"
    tail -n 40 "$run/console.log" 2>/dev/null || true
    echo "kernel-guest: --- qemu ---"
    cat "$run/qemu.log" 2>/dev/null || true
}

while [ ! -f "$run/share/up" ]; do
    if [ -f "$run/share/setup-error" ] || ! kill -0 "$qpid" 2>/dev/null; then
        echo "kernel-guest: FAIL: the guest ($rel) stopped before it came up: $(cat "$run/share/setup-error" 2>/dev/null)"
        console_tail
        exit 125
    fi
    if [ $(($(date +%s) - start)) -ge "$boot_timeout" ]; then
        echo "kernel-guest: FAIL: the guest ($rel) did not come up within $boot_timeout s (QEMU killed)"
        console_tail
        exit 124
    fi
    sleep 0.2
done
up=$(date +%s)
echo "kernel-guest: $rel up after $((up - start)) s; running: $*"

# The output as it comes (the share is the run's folder: QEMU writes it).
# tail ends by itself once QEMU has gone, after the last lines -- also
# when this script is killed and QEMU with it.
tail --pid="$qpid" -s 0.2 -n +1 -f "$run/share/output" &
tpid=$!
while kill -0 "$qpid" 2>/dev/null; do
    if [ $(($(date +%s) - start)) -ge "$run_timeout" ]; then
        sleep 1
        kill "$tpid" 2>/dev/null || true
        tpid=
        echo "kernel-guest: FAIL: the run on $rel did not end within $run_timeout s (QEMU killed)"
        kill -KILL "$qpid" 2>/dev/null || true
        console_tail
        exit 124
    fi
    sleep 0.5
done
wait "$qpid" 2>/dev/null || true
qpid=
wait "$tpid" 2>/dev/null || true
tpid=
end=$(date +%s)
if [ ! -f "$run/share/rc" ]; then
    echo "kernel-guest: FAIL: the guest ($rel) stopped before the command ended"
    console_tail
    exit 125
fi
rc=$(cat "$run/share/rc")
if [ -n "${VDEV_SKIP_LOG:-}" ] && [ -s "$run/share/skipped" ]; then
    sed "s/^/[guest $rel] /" "$run/share/skipped" >> "$VDEV_SKIP_LOG"
fi
echo "kernel-guest: $rel: exit status $rc; boot $((up - start)) s, command $((end - up)) s, total $((end - start)) s"
exit "$rc"
