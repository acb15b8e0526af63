// FillBudget: the fill rings' share of a datapath's frame pool, and each
// receiving queue's fill target within it.
//
// Every receiving queue keeps at least its floor (kFloor frames, or its
// whole fill ring if smaller); the floors of all of them take at most half
// the pool, which is what port add checks (checkRoom: a port whose floor
// does not fit is refused). Above its floor a queue holds what its traffic
// needs: it starts with half of what is left of a shared extra (a quarter
// of the pool), doubles while the kernel empties its ring faster than vdevd
// refills it or while it receives a quarter of its target within a
// millisecond (receivesFast: the target covers 4 ms of its traffic), and
// halves after a second without that -- frames a quiet queue holds come
// back as it receives them. The last quarter of the pool is for frames in
// flight (RX bursts, delivery rings, TX rings).
//
// Invariants: floors() <= floorBudget() (half the pool): checkRoom refuses
// the port that would pass it. No target is raised past what keeps extra_
// within extraBudget() (a quarter); extra_ stands above it only while a
// queue still holds frames given under a higher target, which come back as
// it receives them. extra_ is the sum of every queue's
// Port::Queue::fill_extra, or, after sockets were closed (noteClosed), at
// least that sum until the next recount.
//
// The per-queue state (fill_target, fill_extra, the busy and rate windows)
// lives in Port::Queue; this object holds what the queues share. want() is
// on the hot path (once per queue per loop round): inline, no allocation,
// no exception. Datapath thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "datapath/port.h"
#include "datapath/port_table.h"

namespace vdev::datapath {

class FillBudget {
 public:
  static constexpr uint32_t kFloor = 64;
  static constexpr uint64_t kCalmNs = 1000ull * 1000 * 1000;
  static constexpr uint64_t kRateNs = 1000ull * 1000;  // receivesFast()'s window

  // The receiving queues are those of ports and punt (the punt device's
  // port, null until the skb path is set up): both outlive this object.
  FillBudget(uint32_t pool_frames, const PortTable& ports, const std::unique_ptr<Port>& punt)
      : pool_frames_(pool_frames), ports_(ports), punt_(punt) {}
  FillBudget(const FillBudget&) = delete;
  FillBudget& operator=(const FillBudget&) = delete;

  static uint32_t floor(uint32_t fill_size) noexcept { return std::min(kFloor, fill_size); }
  uint64_t floorBudget() const noexcept { return pool_frames_ / 2; }
  uint64_t extraBudget() const noexcept { return pool_frames_ / 4; }
  // The floors of every receiving queue of the ports and the punt device.
  uint64_t floors() const;
  // ENOSPC, naming the limit, if a port with pc's queues (0: every RX
  // queue of the device), receiving at the XDP hook, would not get its floor.
  Status checkRoom(const std::string& ifname, const PortConfig& pc) const;
  // How many more one-queue ports of fill_size get their floor.
  uint32_t room(uint32_t fill_size) const;

  // The loop's clock, for the targets' adaptation (read once per round).
  void setNow(uint64_t now_ns) noexcept { now_ns_ = now_ns; }
  // Sockets were closed: their queues' frames are back, and extra_ is
  // summed again before it next refuses a queue more.
  void noteClosed() noexcept { recount_ = true; }

  // Moves q's target (a fill ring of fill_size) with its traffic and
  // returns how many frames its ring lacks for it (0: none). Always inlined
  // into Datapath::refill, where this arithmetic was before it had an
  // object: GCC otherwise calls it, once per queue per loop round.
  [[gnu::always_inline]] uint32_t want(Port::Queue& q, uint32_t fill_size) noexcept {
    // Frames in the fill ring, in the kernel and on the RX ring are all "given".
    const uint64_t given = q.fill_given - q.rx_got;
    const uint32_t floor = FillBudget::floor(fill_size);
    // The target's lowest: the floor, or the queue's own minimum (the punt
    // socket's RX ring: its target halved between streams, and a stream's
    // first bursts emptied the ring before it had grown back -- 8,500-32,000
    // rx_fill_ring_empty_descs per vdev-bench --real --datapath vdevd-own
    // setup, 0-3,300 with the minimum).
    const uint32_t low = std::max(floor, std::min(q.fill_min, fill_size));
    const uint64_t budget = extraBudget();
    if (q.fill_target == 0) [[unlikely]] {
      // A new socket: its floor, and half of the shared extra that is left.
      if (recount_) recount();
      const uint64_t left = extra_ < budget ? budget - extra_ : 0;
      q.fill_target = uint32_t(std::max<uint64_t>(low, std::min<uint64_t>(fill_size, floor + left / 2)));
      q.fill_busy_ns = q.fill_rate_ns = now_ns_;
      q.fill_busy_rx = q.fill_rate_rx = q.rx_got;
    } else if (given >= q.fill_target) {
      return 0;
    } else if (given < q.fill_target / 2 || receivesFast(q)) {
      // Busy: the kernel took more than half the ring since the last refill,
      // or the queue received a quarter of its target within a millisecond
      // (receivesFast). More frames keep it from running dry.
      q.fill_busy_ns = q.fill_rate_ns = now_ns_;
      q.fill_busy_rx = q.fill_rate_rx = q.rx_got;
      if (q.fill_target < fill_size) {
        uint64_t others = extra_ - q.fill_extra;
        if (recount_ && others + (2 * uint64_t(q.fill_target) - floor) > budget) {
          recount();  // sockets closed since: their frames are back
          others = extra_ - q.fill_extra;
        }
        const uint64_t room = budget > others ? budget - others : 0;
        q.fill_target = uint32_t(
            std::max<uint64_t>(low, std::min<uint64_t>({fill_size, 2 * uint64_t(q.fill_target), floor + room})));
      }
    } else if (q.fill_target > low && now_ns_ - q.fill_busy_ns > kCalmNs) {
      // A second since it was last busy. Calm -- it received less than its
      // target in that second -- : half the target. The frames above it go
      // back to the pool as the queue receives them (they are not replaced).
      // Still receiving its target's worth a second or more, refilled often
      // enough never to fall below half of it: the target stays. Halving
      // it then (as before) took the punt socket's ring down to its floor
      // under a steady TCP stream, and the ring ran dry while this thread
      // was in a long TX kick: 36,000 frames a 4 s stream lost as
      // rx_fill_ring_empty_descs, and as many retransmissions.
      if (q.rx_got - q.fill_busy_rx < q.fill_target) q.fill_target = std::max(low, q.fill_target / 2);
      q.fill_busy_ns = now_ns_;
      q.fill_busy_rx = q.rx_got;
    }
    // What the queue holds above its floor, at most: its target, or more
    // while it still holds frames given under a higher one.
    const uint32_t held = uint32_t(std::max<uint64_t>(q.fill_target, given) - floor);
    extra_ = extra_ - q.fill_extra + held;
    q.fill_extra = held;
    return given >= q.fill_target ? 0 : uint32_t(q.fill_target - given);
  }

 private:
  // Whether q received a quarter of its fill target within kRateNs.
  [[gnu::always_inline]] bool receivesFast(Port::Queue& q) noexcept {
    // "given" alone cannot tell a busy queue: it counts the frames on the RX
    // ring too, and falls below the target by at most one burst plus what a
    // lazy refill left out (64 + 63), so a target above 254 never grew again,
    // under any load: a port kept the target it started with or had halved
    // to under light traffic, and the kernel dropped what found its fill ring
    // empty while its RX ring was not full (vdev-bench --find-rate, xconnect:
    // 1.45% as rx_fill_ring_empty_descs at 0.47 Mpps, loss-free at 0.21 Mpps
    // of a 1.87 Mpps peak, and at the peak 10 million in 4 s with the target
    // stuck near 1,024 and rx_ring_full 0). The rate is what tells it: a queue that receives a
    // quarter of its target within kRateNs gets twice the target, so the
    // target holds at least 4 ms of the queue's frames (up to the ring, and
    // the shared extra) within a few milliseconds of the traffic starting.
    if (now_ns_ - q.fill_rate_ns > kRateNs) {
      q.fill_rate_ns = now_ns_;  // a new window
      q.fill_rate_rx = q.rx_got;
      return false;
    }
    return q.rx_got - q.fill_rate_rx >= q.fill_target / 4;
  }
  // Sums every queue's Port::Queue::fill_extra into extra_ again.
  void recount() noexcept;

  const uint32_t pool_frames_;
  const PortTable& ports_;
  const std::unique_ptr<Port>& punt_;
  uint64_t extra_ = 0;      // frames above their floor that fill rings hold
  bool recount_ = false;    // sockets were closed since extra_ was summed
  uint64_t now_ns_ = 0;     // the loop's clock
};

}  // namespace vdev::datapath
