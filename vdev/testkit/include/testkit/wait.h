// Waiting for a condition with a deadline, the one polling loop of the test
// kit: tests wait for frames and counters, vdev-bench for links and for its
// stop flag.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace vdev::testkit {

using namespace std::chrono_literals;

// The factor every deadline of the test kit and of the e2e harness is
// multiplied by: $VDEV_E2E_TIME_SCALE (a number from 1 to 1000), 1 when it
// is unset or not such a number. For a slow machine, not for this one:
// scripts/kernel-guest.sh sets 5 in its guests, where QEMU's TCG runs
// every instruction of the kernel and of the tests several times slower.
// Deadlines only -- how long to wait for a state before failing -- never a
// sleep that paces traffic or waits past a hold time, and never a period
// during which nothing may happen (pumpFor). Read once; thread safe.
double deadlineScale();

// d multiplied by deadlineScale().
template <class Rep, class Period>
std::chrono::nanoseconds scaled(std::chrono::duration<Rep, Period> d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d);
  const double scale = deadlineScale();
  return scale == 1.0 ? ns : std::chrono::nanoseconds(int64_t(double(ns.count()) * scale));
}

// Checks pred() until it holds or `timeout` (scaled()) has passed, sleeping
// `step` between checks (never past the deadline, so a wait ends on time).
// Returns pred()'s last value; pred() is checked once more at the deadline.
// A timeout of 0 checks once.
bool waitUntil(const std::function<bool()>& pred, std::chrono::nanoseconds timeout,
               std::chrono::nanoseconds step = 5ms);

}  // namespace vdev::testkit
