# vdev — the two commands a user needs (as root on Debian 12):
#   make demo    run the main job end to end
#   make check   install what is missing, build, run every test
# Other targets: build, test, tsan, asan, bench, clean.

BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps build test check tsan asan bench demo clean

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
tsan:
	cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVDEV_SANITIZE=thread -DVDEV_BUILD_BENCH=OFF
	cmake --build $(BUILD)-tsan -j $(JOBS) --target $(TSAN_TARGETS)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./scripts/run-tests.sh $(BUILD)-tsan --output-on-failure -L tsan

# AddressSanitizer + UndefinedBehaviorSanitizer build of the unit and e2e
# suites (vdevd itself included: the e2e tests run the vdevd of this build,
# and LeakSanitizer makes a leak at exit a failed stop). Any report fails
# the run (halt_on_error, no recovery).
asan:
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVDEV_SANITIZE=address -DVDEV_BUILD_BENCH=OFF
	cmake --build $(BUILD)-asan -j $(JOBS)
	ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0" \
	  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
	  ./scripts/run-tests.sh $(BUILD)-asan --output-on-failure -j 1 -L 'unit|e2e'

check: deps
	$(MAKE) test
	$(MAKE) tsan
	$(MAKE) asan

bench: build
	./scripts/bench-ring.sh $(BUILD)

demo: deps build
	./scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-tsan $(BUILD)-asan
