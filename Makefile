# vdev — the two commands a user needs (as root on Debian 12):
#   make demo    run the main job end to end
#   make check   install what is missing, build, run every test
# Other targets: build, test, tsan, asan, release (each: -build, -test),
# bench, install, deb, clean.

BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

PREFIX     ?= /usr/local
# Where `make deb` builds: a copy of the tree, its build directory (kept, so
# the next `make deb` rebuilds only what changed) and the .deb files.
DEB_DIR    ?= $(BUILD)/deb

.PHONY: all deps build test check tsan tsan-build tsan-test asan asan-build asan-test release release-build release-test bench demo install deb deb-only deb-from-build clean

all: build

deps:
	./scripts/install-deps.sh

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test in the normal build: unit, e2e (root + namespaces), fuzz
# (bounded time) and bench smoke runs. scripts/run-tests.sh ends with every
# skipped test and its reason; with VDEV_FAIL_ON_SKIP=1 (CI) a skip fails.
test: build
	./scripts/run-tests.sh $(BUILD) --output-on-failure -j 1

# ThreadSanitizer build of the concurrency tests (ctest label tsan); only
# their targets are built. Any report fails the run (halt_on_error).
TSAN_TARGETS ?= ringbuf_mpsc_test datapath_concurrency_test
tsan: tsan-build tsan-test
tsan-build:
	cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVDEV_SANITIZE=thread -DVDEV_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD)-tsan -j $(JOBS) --target $(TSAN_TARGETS)
tsan-test:
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./scripts/run-tests.sh $(BUILD)-tsan --output-on-failure -L tsan

# AddressSanitizer build (UBSan too, on the product code: CMakeLists.txt) of
# the unit and e2e suites, vdevd itself included: the e2e tests run the
# vdevd of this build, and LeakSanitizer makes a leak at exit a failed stop.
# Any report fails the run (halt_on_error, no recovery). Entries labelled
# release (the package, benchmark smoke runs, the TCG guests, and the scale
# test and fault soak, which measure vdevd's resident memory: their subject
# is the normal build) run in the normal build only.
asan: asan-build asan-test
asan-build:
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVDEV_SANITIZE=address -DVDEV_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
asan-test:
	ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0" \
	  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
	  ./scripts/run-tests.sh $(BUILD)-asan --output-on-failure -j 1 -L 'unit|e2e' -LE release

# The normal build's part of make check: only what the entries labelled
# release or fuzz run (the check-release target), and those entries (-j 2:
# the fuzz targets are independent; release entries run alone).
release: release-build release-test
release-build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS) --target check-release
release-test:
	./scripts/run-tests.sh $(BUILD) --output-on-failure -j 2 -L 'release|fuzz'

# make check: every test once, each step timed (scripts/check.sh): the
# ASan+UBSan tree runs the unit and e2e entries while the normal and TSan
# trees compile behind them at nice 19; then the TSan tests, then the
# normal tree's release and fuzz entries. It ends with every step's seconds
# and the entries over their budget (tests/time-budget.tsv), pass or fail.
check: deps
	./scripts/check.sh $(BUILD) $(JOBS) $(CMAKE_ARGS)

bench: build
	./scripts/bench-ring.sh $(BUILD)

# Builds only what the demo runs (not the tests, fuzz targets or benchmarks).
DEMO_TARGETS = vdevd vdevctl vdev-cni vdev-vm
demo: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)
	./scripts/demo.sh $(BUILD)

# vdevd, vdevctl, vdev-cni, the systemd unit, /etc/default/vdevd, man pages,
# bash completion and docs under PREFIX (DESTDIR=... for a staging root).
# PREFIX=/usr puts them where the Debian package does (/usr/sbin,
# /lib/systemd/system, /etc/default, /usr/lib/cni). See docs/systemd.md.
install:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS) --target vdevd vdevctl vdev-cni
	cmake --install $(BUILD)

# The Debian package (debian/): $(DEB_DIR)/vdev_VERSION_ARCH.deb.
# dpkg-buildpackage writes its results next to the source tree, so it runs
# in a copy under $(DEB_DIR), not here; the copy's build directory
# (obj-*) is kept between runs. deb-only skips installing the
# build-dependencies (tests/e2e/package_test.sh uses it).
deb: deps
	$(MAKE) deb-only

deb-only:
	mkdir -p $(DEB_DIR)
	rm -rf $(DEB_DIR)/keep && mkdir $(DEB_DIR)/keep
	if [ -d $(DEB_DIR)/vdev ]; then \
	  find $(DEB_DIR)/vdev -maxdepth 1 -name 'obj-*' -exec mv {} $(DEB_DIR)/keep/ \; ; \
	  rm -rf $(DEB_DIR)/vdev; \
	fi
	mkdir $(DEB_DIR)/vdev
	tar -cf - --exclude=./.git --exclude='./build*' --exclude='./obj-*' \
	  --exclude=./debian/vdev --exclude=./debian/tmp --exclude=./debian/.debhelper \
	  --exclude='./debian/*.substvars' --exclude='./debian/*debhelper*' --exclude=./debian/files \
	  --exclude='./$(patsubst $(CURDIR)/%,%,$(abspath $(DEB_DIR)))' . | tar -xf - -C $(DEB_DIR)/vdev
	find $(DEB_DIR)/keep -mindepth 1 -maxdepth 1 -exec mv {} $(DEB_DIR)/vdev/ \;
	rmdir $(DEB_DIR)/keep
	rm -f $(DEB_DIR)/*.deb $(DEB_DIR)/*.changes $(DEB_DIR)/*.buildinfo
	cd $(DEB_DIR)/vdev && DEB_BUILD_OPTIONS="parallel=$(JOBS) $(DEB_BUILD_OPTIONS)" \
	  nice dpkg-buildpackage -us -uc -b --no-pre-clean
	@ls $(DEB_DIR)/*.deb

# The package made of the binaries already built in $(BUILD) instead
# (debian/rules, VDEV_PREBUILT): quick, for tests/e2e/package_test.sh; not
# for distribution (no dpkg-buildflags hardening).
deb-from-build:
	rm -rf $(DEB_DIR)/vdev && mkdir -p $(DEB_DIR)/vdev
	cp -a debian $(DEB_DIR)/vdev/
	rm -f $(DEB_DIR)/*.deb $(DEB_DIR)/*.changes $(DEB_DIR)/*.buildinfo
	cd $(DEB_DIR)/vdev && VDEV_PREBUILT=$(abspath $(BUILD)) dpkg-buildpackage -us -uc -b
	@ls $(DEB_DIR)/*.deb

clean:
	rm -rf $(BUILD) $(BUILD)-tsan $(BUILD)-asan
