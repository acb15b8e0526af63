#!/bin/sh
# package_build.sh SRC BUILD DEB_DIR: the Debian package that
# e2e_package_test and e2e_systemd_boot_test install (ctest fixture
# vdev_deb), made once of the build tree's vdevd, vdevctl and vdev-cni
# (`make deb-from-build`, about 40 s: dbgsym and dwz) into DEB_DIR.
#
# Never skipped and never failed for what the tests that use it check
# themselves: with VDEV_DEB set (they install that package), in a sanitizer
# build, or without dpkg-buildpackage it builds nothing, says why and exits
# 0, and each of those tests skips with its own reason. A failed build fails.
set -u
src=${1:?usage: package_build.sh SRC BUILD DEB_DIR}
build=${2:?usage: package_build.sh SRC BUILD DEB_DIR}
deb_dir=${3:?usage: package_build.sh SRC BUILD DEB_DIR}

rm -f "$deb_dir"/*.deb "$deb_dir"/*.changes "$deb_dir"/*.buildinfo
if [ -n "${VDEV_DEB:-}" ]; then
  echo "package_build: VDEV_DEB=$VDEV_DEB: the tests install that one; nothing built"
  exit 0
fi
sanitize=$(sed -n 's/^VDEV_SANITIZE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$sanitize" ]; then
  echo "package_build: a VDEV_SANITIZE=$sanitize build: the package is tested in the normal build; nothing built"
  exit 0
fi
if ! command -v dpkg-buildpackage >/dev/null 2>&1; then
  echo "package_build: dpkg-buildpackage is not installed; nothing built"
  exit 0
fi
start=$(date +%s)
if ! make -C "$src" deb-from-build BUILD="$build" DEB_DIR="$deb_dir" >"$deb_dir.log" 2>&1; then
  tail -40 "$deb_dir.log"
  echo "FAIL: make deb-from-build BUILD=$build DEB_DIR=$deb_dir"
  exit 1
fi
echo "package_build: $(ls "$deb_dir"/*.deb | xargs) in $(($(date +%s) - start)) s"
