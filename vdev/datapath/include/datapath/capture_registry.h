// CaptureRegistry: a datapath's running captures (capture.h) by id, and
// what the datapath thread keeps for those whose copies the kernel fast
// path makes.
//
// Invariants: at most kMax captures, each under an id never handed out
// before (ids count up from 1); a port that points at a capture
// (Port::capture) points at one held here, or one being started or stopped
// under lock() -- a capture whose port was removed stays, ended, until it
// is stopped; fast() is the number of ports whose capture the fast path's
// programs copy (Port::captureOnFast).
//
// Thread safety: lock() and what is marked "under lock()": the control
// path, which holds it through a whole start or stop (one at a time);
// get(): any thread. The fast-path count and the clock offset: the
// datapath thread (or the one runOnDatapath runs inline for).
#pragma once

#include <time.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "datapath/capture.h"

namespace vdev::datapath {

class CaptureRegistry {
 public:
  static constexpr size_t kMax = 8;

  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mu_); }
  // Under lock().
  bool full() const noexcept { return by_id_.size() >= kMax; }
  uint32_t add(std::unique_ptr<Capture> cap) {
    const uint32_t id = next_id_++;
    by_id_.emplace(id, std::move(cap));
    return id;
  }
  Capture* find(uint32_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second.get();
  }
  void erase(uint32_t id) { by_id_.erase(id); }
  // Any thread: the capture, or null.
  Capture* get(uint32_t id) {
    std::lock_guard<std::mutex> l(mu_);
    return find(id);
  }

  // Datapath thread. A port's capture went to, or came off, the fast path.
  void fastStarted() noexcept { fast_++; }
  void fastStopped() noexcept { fast_--; }
  // While any runs, the loop empties the perf buffers and its sleep wakes
  // for them.
  uint32_t fast() const noexcept { return fast_; }
  // The fast path stamps its copies with CLOCK_MONOTONIC (bpf_ktime_get_ns),
  // a capture's times are CLOCK_REALTIME: readClocks() takes their offset
  // (before each emptying of the perf buffers), realtime() applies it.
  void readClocks() noexcept {
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_offset_ns_ =
        uint64_t(rt.tv_sec - mono.tv_sec) * 1000000000ull + uint64_t(rt.tv_nsec) - uint64_t(mono.tv_nsec);
  }
  uint64_t realtime(uint64_t monotonic_ns) const noexcept { return monotonic_ns + clock_offset_ns_; }

 private:
  std::mutex mu_;
  std::map<uint32_t, std::unique_ptr<Capture>> by_id_;  // under mu_
  uint32_t next_id_ = 1;                                 // under mu_
  uint32_t fast_ = 0;
  uint64_t clock_offset_ns_ = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC, as last read
};

}  // namespace vdev::datapath
