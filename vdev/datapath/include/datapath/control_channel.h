// ControlChannel: how a closure from the control thread gets run on the
// datapath thread (Datapath::runOnDatapath), one at a time, between two
// bursts, with the caller waiting until it has run.
//
// Control requests (statistics, port add and remove, FDB changes, link
// checks) all go this way, so a Port is only ever created, reattached or
// destroyed by the thread that uses it, with no lock on the hot path: the
// datapath thread checks one atomic flag per loop (pending()).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace vdev::datapath {

class ControlChannel {
 public:
  // Any thread but the datapath thread: runs fn there and returns once it
  // has run. served: whether the datapath thread is running (read under
  // the caller lock); if not, fn runs here, now. wake_fd: the eventfd that
  // wakes the thread from its idle poll().
  void call(const std::function<void()>& fn, const bool& served, int wake_fd);
  // Datapath thread: whether a request waits. R1 pairs with R0 in call().
  bool pending() const noexcept { return req_.load(std::memory_order_acquire); }
  // Datapath thread: runs the waiting request (if any) and releases its caller.
  void serve();

 private:
  std::mutex call_mu_;  // one request at a time
  std::mutex mu_;       // guards fn_ and done_
  std::condition_variable cv_;
  std::atomic<bool> req_{false};
  const std::function<void()>* fn_ = nullptr;
  bool done_ = false;
};

}  // namespace vdev::datapath
