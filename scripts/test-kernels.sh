#!/bin/sh
# Fetches the Debian 12 kernels that the e2e_kernel_* tests boot under QEMU
# (scripts/kernel-guest.sh), without installing them: the packages are
# downloaded with `apt-get download` and unpacked with `dpkg-deb -x` into a
# cache outside the source tree; nothing goes into the host's /boot or
# /lib/modules, and dpkg does not know of them.
#
#   scripts/test-kernels.sh [CACHE]      (default /var/cache/vdev-test-kernels)
#
# The kernels, resolved from the machine's apt lists each time, so that the
# tests follow Debian's updates:
#   6.1   what the metapackage linux-image-amd64 depends on now
#         (linux-image-6.1.0-NN-amd64): Debian 12's own kernel
#   6.12  the newest linux-image-6.12.NN+deb12-amd64-unsigned (bookworm's
#         optional newer kernel; the unsigned one: the same image, without
#         the signed-kernel shim dependencies)
#
# CACHE holds, per kernel, a folder named by its release (`uname -r` in the
# guest) with the package's tree (boot/vmlinuz-REL, lib/modules/REL) and a
# file .package naming the package and version it came from, and a link per
# series: CACHE/6.1 -> 6.1.0-57-amd64, CACHE/6.12 -> 6.12.118+deb12-amd64.
# Idempotent: a kernel already unpacked is not fetched again; one that a
# series no longer resolves to is removed when its successor is in place.
#
# Exit status: 0 every kernel present; 1 a kernel could not be fetched (the
# message says which and why; the others are still fetched); 2 bad usage;
# 3 not root and something is missing.
set -eu

cache=${1:-/var/cache/vdev-test-kernels}
[ $# -le 1 ] || { echo "usage: $0 [CACHE]" >&2; exit 2; }

say() { echo "test-kernels: $*"; }
warn() { echo "test-kernels: $*" >&2; }

# The packages and their candidate versions, from apt's lists (no network;
# three apt-cache calls, the whole cost of a run that finds both kernels).
resolve() {
    # apt-cache depends: the candidate version's dependencies.
    pkg_6_1=$(apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -n 1)
    pkg_6_12=$(apt-cache pkgnames linux-image-6.12. 2>/dev/null |
        grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' | sort -V | tail -n 1)
    # Unquoted: a package not found is an empty word, and no argument.
    # shellcheck disable=SC2086
    versions=$(apt-cache policy $pkg_6_1 $pkg_6_12 2>/dev/null |
        awk '/^[^ ].*:$/ { p = substr($1, 1, length($1) - 1) } /^ *Candidate:/ { print p, $2 }')
}
package_for() {  # $1: series
    case $1 in
        6.1) echo "$pkg_6_1" ;;
        6.12) echo "$pkg_6_12" ;;
    esac
}
version_of() {  # $1: package
    echo "$versions" | awk -v p="$1" '$1 == p { print $2 }'
}

# The kernel release a package installs: its /lib/modules folder, which is
# also its name without "linux-image-" and "-unsigned".
release_of() {  # $1: package
    r=${1#linux-image-}
    echo "${r%-unsigned}"
}

fetch() {  # $1: series
    series=$1
    pkg=$(package_for "$series")
    if [ -z "$pkg" ]; then
        warn "$series: no package found in apt's lists (apt-get update?)"
        return 1
    fi
    version=$(version_of "$pkg")
    if [ -z "$version" ] || [ "$version" = "(none)" ]; then
        warn "$series: $pkg has no candidate version in apt's lists"
        return 1
    fi
    rel=$(release_of "$pkg")
    dir=$cache/$rel
    if [ -f "$dir/.package" ] && [ "$(cat "$dir/.package")" = "$pkg $version" ] &&
       [ -f "$dir/boot/vmlinuz-$rel" ] && [ -d "$dir/lib/modules/$rel" ]; then
        link "$series" "$rel"
        say "$series: $rel present ($pkg $version)"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        warn "$series: $pkg $version missing in $cache; run as root (or: sudo $0) to fetch it"
        return 3
    fi
    say "$series: fetching $pkg $version"
    mkdir -p "$cache"
    stage=$(mktemp -d "$cache/.stage.XXXXXX")
    # apt-get download runs its fetcher as _apt: the folder must be its to write.
    chmod 755 "$stage"
    if id _apt >/dev/null 2>&1; then chown _apt "$stage"; fi
    if ! (cd "$stage" && apt-get download -q "$pkg=$version" >/dev/null); then
        rm -rf "$stage"
        warn "$series: apt-get download $pkg=$version failed"
        return 1
    fi
    # (Inside `fetch ... ||`, set -e does not apply: every step checks.)
    mkdir "$stage/tree" && dpkg-deb -x "$stage"/*.deb "$stage/tree" || {
        rm -rf "$stage"
        warn "$series: dpkg-deb -x of $pkg failed"
        return 1
    }
    [ -f "$stage/tree/boot/vmlinuz-$rel" ] && [ -d "$stage/tree/lib/modules/$rel" ] || {
        rm -rf "$stage"
        warn "$series: $pkg has no boot/vmlinuz-$rel or lib/modules/$rel"
        return 1
    }
    # The package ships no modules.dep (depmod runs at installation): make it
    # here, inside the tree, so that the guest's modprobe finds the modules.
    depmod -b "$stage/tree" "$rel" || { rm -rf "$stage"; warn "$series: depmod failed"; return 1; }
    printf '%s %s\n' "$pkg" "$version" > "$stage/tree/.package"
    rm -rf "$dir"
    mv "$stage/tree" "$dir"
    rm -rf "$stage"
    link "$series" "$rel"
    say "$series: $rel unpacked in $dir"
}

# Points CACHE/SERIES at REL and removes the release it pointed at before.
link() {  # $1: series, $2: release
    old=$(readlink "$cache/$1" 2>/dev/null || true)
    [ "$old" = "$2" ] && return 0
    [ "$(id -u)" -eq 0 ] || return 0
    ln -sfn "$2" "$cache/$1"
    if [ -n "$old" ] && [ "$old" != "$2" ] && [ -d "$cache/$old" ]; then
        rm -rf "${cache:?}/$old"
        say "$1: removed $old"
    fi
}

# A failed download is most often apt's lists being older than the archive
# (a kernel update removed the package they name): update them once, as
# root, and try again.
resolve
rc=0 updated=
for s in 6.1 6.12; do
    r=0
    fetch "$s" || r=$?
    if [ $r -eq 1 ] && [ -z "$updated" ] && [ "$(id -u)" -eq 0 ]; then
        say "updating apt's lists and trying again"
        apt-get update -q >/dev/null 2>&1 || warn "apt-get update failed"
        updated=1
        resolve
        r=0
        fetch "$s" || r=$?
    fi
    [ $rc -ne 0 ] || rc=$r
done
exit $rc
