// Waiting for a condition with a deadline, the one polling loop of the test
// kit: tests wait for frames and counters, vdev-bench for links and for its
// stop flag.
#pragma once

#include <chrono>
#include <functional>

namespace vdev::testkit {

using namespace std::chrono_literals;

// Checks pred() until it holds or `timeout` has passed, sleeping `step`
// between checks (never past the deadline, so a wait ends on time).
// Returns pred()'s last value; pred() is checked once more at the deadline.
// A timeout of 0 checks once.
bool waitUntil(const std::function<bool()>& pred, std::chrono::nanoseconds timeout,
               std::chrono::nanoseconds step = 5ms);

}  // namespace vdev::testkit
