// Per-port counters: one block per datapath thread, summed when read.
//
// Each block is written by exactly one thread, so an increment is a relaxed
// load and store (no locked instruction); readers on other threads see each
// counter as a whole 64-bit value (relaxed atomic loads), and sums taken
// while traffic flows are a consistent lower bound of what happened.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace vdev::datapath {

inline constexpr uint32_t kMaxThreads = 16;

enum DropReason : uint32_t {
  kDropRingFull = 0,   // destination port ring full (xmitBulk)
  kDropTxRingFull,     // destination TX ring full after reclaim + kick + retries
  kDropNoRoute,        // nowhere to send (ingress)
  kDropPortDown,       // destination had no live queue
  kDropOversize,       // longer than the destination MTU or the frame size
  kDropRunt,           // shorter than an Ethernet header (ingress)
  kDropPoolEmpty,      // no frame for a flood copy (destination)
  kDropInvalidSrc,     // multicast, all-zero or (switch mode) a host MAC as source (ingress)
  kDropBadType,        // type/length field neither a length (<= 1500) nor a type (>= 0x0600),
                       // or an 802.3 length longer than the frame (ingress)
  kDropMacLimit,       // new source MAC, but the port holds its limit of learned MACs (ingress)
  kDropMacLocked,      // source MAC static on another port, or held by another (ingress)
  kDropInflight,       // the ingress port's frames in flight reached its bound (ingress)
  kDropFastXmit,       // kernel fast path: the destination device refused the frame (destination)
  kNumDropReasons
};

const char* dropReasonName(uint32_t r);

class Counter {
 public:
  // Single writer: not an atomic RMW on purpose (see file comment).
  void add(uint64_t n) noexcept { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

struct alignas(64) PortCounters {
  Counter rx_packets, rx_bytes, tx_packets, tx_bytes;
  std::array<Counter, kNumDropReasons> drops;
};

// A summed, plain copy.
struct PortCounterSnapshot {
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  std::array<uint64_t, kNumDropReasons> drops{};
  uint64_t totalDrops() const {
    uint64_t s = 0;
    for (auto d : drops) s += d;
    return s;
  }
  PortCounterSnapshot& operator+=(const PortCounterSnapshot& o) {
    rx_packets += o.rx_packets;
    rx_bytes += o.rx_bytes;
    tx_packets += o.tx_packets;
    tx_bytes += o.tx_bytes;
    for (size_t i = 0; i < drops.size(); i++) drops[i] += o.drops[i];
    return *this;
  }
};

// The calling thread's index (0 for the main/control thread and the first
// datapath thread). Datapath thread i sets it to i when it starts.
uint32_t threadIndex() noexcept;
void setThreadIndex(uint32_t i) noexcept;

}  // namespace vdev::datapath
