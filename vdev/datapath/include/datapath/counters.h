// Per-port counters: one block per datapath thread, summed when read.
//
// Each block is written by exactly one thread, so an increment is a relaxed
// load and store (no locked instruction); readers on other threads see each
// counter as a whole 64-bit value (relaxed atomic loads), and sums taken
// while traffic flows are a consistent lower bound of what happened.
//
// What the counters are (their ids, names, the drop reasons): the table in
// stats/counters.h. A block has a Counter for every port counter id; the
// ones read when the statistics are taken (Origin::kRead: TX outstanding,
// socket, program and device statistics) stay 0 here and are filled in by
// Datapath::stats() (vdev/datapath/src/stats.cpp).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "stats/counters.h"

namespace vdev::datapath {

inline constexpr uint32_t kMaxThreads = 16;

// The drop reasons (kDropRunt, ...; kNumDropReasons) and the other port
// counters' ids (kRxPackets, ...), as the table generates them.
using stats::DropReason;
using enum stats::DropReason;
using stats::PortCounter;
using enum stats::PortCounter;

class Counter {
 public:
  // Single writer: not an atomic RMW on purpose (see file comment).
  void add(uint64_t n) noexcept { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// A summed, plain copy: every counter by id.
using PortCounterSnapshot = stats::PortValues;

struct alignas(64) PortCounters {
  // A drop reason is its own id: drops[kDropRunt]. The other ids follow.
  std::array<Counter, kNumDropReasons> drops;
  std::array<Counter, kNumPortCounters - uint32_t{kNumDropReasons}> others;

  Counter& operator[](DropReason r) noexcept { return drops[r]; }
  Counter& operator[](PortCounter id) noexcept { return others[id - uint32_t{kNumDropReasons}]; }
  // This block's counters.
  PortCounterSnapshot snapshot() const noexcept;
};

// The calling thread's index (0 for the main/control thread and the first
// datapath thread). Datapath thread i sets it to i when it starts.
uint32_t threadIndex() noexcept;
void setThreadIndex(uint32_t i) noexcept;

}  // namespace vdev::datapath
