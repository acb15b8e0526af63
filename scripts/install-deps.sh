#!/bin/sh
# Installs the Debian 12 packages vdev needs to build, test and run.
# Idempotent: only packages that are missing are installed, so `make check`
# can call it every time at no cost on a machine that already has them.
# Needs root when something is missing; nothing is fetched from anywhere
# but the machine's configured Debian archive.
set -eu

# ccache: the three trees make check compiles from scratch in a fresh clone
# come from its cache the next time (CMakeLists.txt, VDEV_CCACHE).
# qemu-system-x86, linux-image-cloud-amd64, busybox-static, cpio, iperf3:
# the test guest that tests/qemu boots (scripts/vm-guest-image.sh builds it
# from them; the kernel package is only read, the host does not boot it).
# tcpdump: e2e_vdevctl_test reads what `vdevctl capture` writes with it
# (and the QEMU test's optional captures, VDEV_QEMU_PCAP).
# debhelper, dpkg-dev: `make deb` (debian/control's Build-Depends are the
# build packages above); adduser: the package's postinst; bash-completion,
# man-db: tests/e2e/package_test.sh checks the completion and man pages;
# lintian: that test checks the package it builds (no lintian error);
# libcap2-bin: its capsh decodes vdevd's capability bounding set.
# systemd-container: e2e_systemd_boot_test boots this host's Debian with
# systemd-nspawn, systemd as its PID 1, and runs the package's vdevd.service;
# procps: its pgrep and ps.
# podman, runc: e2e_podman_test, a real runtime (libcni) loading a vdev-cni
# network and running containers on it (runc: crun refuses hybrid cgroups).
# containerd: e2e_containerd_test starts its own containerd and runs
# containers with `ctr run --cni` on a vdev-cni network (containerd's libcni).
# libvirt-daemon (libvirtd and its QEMU driver), libvirt-clients (virsh):
# e2e_libvirt_test starts its own libvirtd and boots the test guest on a tap
# of vdevd's. Not libvirt-daemon-system: on a host with systemd it would
# start the host's libvirtd and its NAT network (virbr0, firewall rules).
# libmicrohttpd-dev: vdevd's scrape endpoint (--metrics-listen);
# python3-prometheus-client: e2e_metrics_test parses the scrape with
# Prometheus' own text parser.

PACKAGES="
build-essential cmake pkg-config make ccache
clang llvm lld libclang-rt-14-dev
libbpf-dev libxdp-dev xdp-tools bpftool
libnl-3-dev libnl-route-3-dev libnl-genl-3-dev
libboost-dev
nlohmann-json3-dev
containernetworking-plugins
libgtest-dev libgmock-dev libbenchmark-dev
libsystemd-dev systemd
libmicrohttpd-dev
iproute2 ethtool iputils-ping
python3 python3-prometheus-client
qemu-system-x86 linux-image-cloud-amd64 busybox-static cpio iperf3 tcpdump
debhelper dpkg-dev adduser bash-completion man-db lintian libcap2-bin
podman runc containerd
libvirt-daemon libvirt-clients
systemd-container procps
"

# The Debian kernels that e2e_kernel_6_1 and e2e_kernel_6_12 boot under QEMU
# (scripts/kernel-guest.sh): linux-image-6.1.0-NN-amd64, the one the
# metapackage linux-image-amd64 names, and the newest
# linux-image-6.12.NN+deb12-amd64-unsigned. Downloaded and unpacked into
# /var/cache/vdev-test-kernels by scripts/test-kernels.sh, never installed
# (nothing in /boot, nothing dpkg knows); no work when they are there. A
# kernel it cannot fetch makes those tests skip; this script goes on.
"$(dirname "$0")/test-kernels.sh" ||
    echo "install-deps: test kernels incomplete (scripts/test-kernels.sh); e2e_kernel_* will skip" >&2

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages:$missing" >&2
    echo "install-deps: run as root (or: sudo $0) to install them" >&2
    exit 1
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
