// SnapshotGate: a value that is expensive to collect (vdevd's statistics:
// every port's counters, program maps and sysfs files, read between two
// bursts of the datapath thread), collected at most once per period however
// many readers ask, and handed to every reader of that period.
//
// Why: GET /metrics is open to whoever can connect to its address, with no
// rate limit; without the gate, each scrape made the datapath thread do
// O(ports) reads. With it, scrapes cost the datapath thread at most one
// collection per period (1 / 250 ms by default) whatever the scrapers do.
// Collected on demand, not on a timer: an idle daemon nobody scrapes does
// no work (DESIGN.md: idle datapath threads sleep).
//
// recent(): the latest value if it was collected less than `period` ago,
// else a new one. For readers to whom a value up to `period` old is as good
// as a new one (Prometheus scrapes every few seconds at the most).
// fresh(): a value collected after the call began (exact counters after
// traffic stopped: what `vdevctl stats` shows); it becomes the latest.
// Readers that need exact counters and may be anyone must not use it.
//
// Thread safety: every method from any thread. Collection runs under the
// gate's mutex, so readers arriving while one runs wait for it and share
// it (recent) instead of starting another.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace vdev::daemon {

template <class T>
class SnapshotGate {
 public:
  using Clock = std::chrono::steady_clock;
  using Collect = std::function<T()>;
  using Now = std::function<Clock::time_point()>;

  SnapshotGate(std::chrono::milliseconds period, Collect collect, Now now = &Clock::now)
      : period_(period), collect_(std::move(collect)), now_(std::move(now)) {}

  std::shared_ptr<const T> recent() {
    std::lock_guard<std::mutex> l(mu_);
    if (latest_ && now_() - taken_ < period_) return latest_;
    return collectLocked();
  }

  std::shared_ptr<const T> fresh() {
    const Clock::time_point asked = now_();
    std::lock_guard<std::mutex> l(mu_);
    // One collected while this caller waited for the mutex started after it
    // asked only if it was taken (its start) at or after `asked`.
    if (latest_ && started_ >= asked && started_ != Clock::time_point{}) return latest_;
    return collectLocked();
  }

  // How many times the value was collected (tests, INFO).
  uint64_t collections() const {
    std::lock_guard<std::mutex> l(mu_);
    return collections_;
  }
  std::chrono::milliseconds period() const { return period_; }

 private:
  std::shared_ptr<const T> collectLocked() {
    started_ = now_();
    latest_ = std::make_shared<const T>(collect_());
    taken_ = started_;  // its age counts from when its reads began
    collections_++;
    return latest_;
  }

  const std::chrono::milliseconds period_;
  Collect collect_;
  Now now_;
  mutable std::mutex mu_;
  std::shared_ptr<const T> latest_;
  Clock::time_point started_{}, taken_{};
  uint64_t collections_ = 0;
};

}  // namespace vdev::daemon
