#include "testkit/wait.h"

#include <algorithm>
#include <thread>

namespace vdev::testkit {

bool waitUntil(const std::function<bool()>& pred, std::chrono::nanoseconds timeout,
               std::chrono::nanoseconds step) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(step, left));
  }
}

}  // namespace vdev::testkit
