#include "testkit/wait.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace vdev::testkit {

double deadlineScale() {
  static const double scale = [] {
    const char* env = std::getenv("VDEV_E2E_TIME_SCALE");
    if (!env || !*env) return 1.0;
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    return (*end == '\0' && v >= 1.0 && v <= 1000.0) ? v : 1.0;
  }();
  return scale;
}

bool waitUntil(const std::function<bool()>& pred, std::chrono::nanoseconds timeout,
               std::chrono::nanoseconds step) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + scaled(timeout);
  for (;;) {
    if (pred()) return true;
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(step, left));
  }
}

}  // namespace vdev::testkit
