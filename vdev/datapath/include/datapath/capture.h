// Capture: a copy of the frames one port receives and sends, for one
// reader (vdevctl capture, through the control protocol's CAPTURE_*).
//
// The datapath thread copies each frame as it passes (Datapath::
// switchFrames for what the port receives, after Port::xmitBulk for what
// it is handed to send) into one of a fixed number of slots, made when the
// capture starts: no allocation, lock or syscall per frame. The reader
// takes them in order and gives each slot back. Between the two, two
// single-producer single-consumer queues of slot numbers (the filled ones
// one way, the free ones back): a frame that finds no free slot -- the
// reader is behind -- is counted in drops() and not copied; the port's
// traffic is never held up by its capture.
//
// With the kernel fast path, a captured port keeps it: the ports' programs
// copy the frames they carry from and to it into per-CPU perf buffers
// (FastPath::setCapture), which the datapath thread empties into the same
// slots (copyBytes), and vdevd copies the frames it switches itself. Each
// frame is copied once, by whoever forwards it; a copy the perf buffers had
// no room for is counted with the capture's drops (the port's row of
// fast_capture_missed since the capture began). A port without a capture
// pays one pointer test per burst and per destination batch, and its
// programs one array lookup per fast-path frame.
//
// A capture's filter (capture_filter.h) is applied by whoever copies: the
// programs before their copy, copy() and copyBytes() here. A frame it
// refuses is not copied and counted nowhere: taken() and drops() count the
// frames it matched.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "datapath/capture_filter.h"
#include "datapath/frame_pool.h"

namespace vdev::datapath {

class Capture {
 public:
  static constexpr uint8_t kRx = 1, kTx = 2;

  // dirs: kRx, kTx or both; slots frames of at most snaplen bytes each
  // (longer ones are cut, their length on the wire kept); only the frames
  // `filter` matches (no fields: all).
  Capture(uint16_t port_index, uint8_t dirs, uint32_t slots, uint32_t snaplen, const CaptureFilter& filter = {});
  // The memory a capture of slots frames of snaplen bytes holds: its
  // slots, their records and the two queues of slot numbers. What the
  // caps per uid count (--uid-max-capture).
  static uint64_t bytesFor(uint32_t slots, uint32_t snaplen) noexcept {
    return uint64_t(slots) * (uint64_t(snaplen) + sizeof(Meta) + 2 * sizeof(uint32_t));
  }
  uint64_t bytes() const noexcept { return bytesFor(uint32_t(meta_.size()), snaplen_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  uint16_t portIndex() const noexcept { return port_index_; }
  uint32_t snaplen() const noexcept { return snaplen_; }
  bool rx() const noexcept { return dirs_ & kRx; }
  bool tx() const noexcept { return dirs_ & kTx; }
  const CaptureFilter& filter() const noexcept { return filter_; }

  // Datapath thread. One frame of direction dir (kRx or kTx), held in
  // pool's chunks (a chain: its chunks one after the other), seen at
  // time_ns (CLOCK_REALTIME); untagged_vid: the port's untagged VLAN
  // (captureUntaggedVid). The filter reads the first chunk (a UMEM frame:
  // every header it reads is there).
  void copy(uint8_t dir, const FramePool& pool, const Frame* f, uint64_t time_ns, uint16_t untagged_vid) noexcept {
    if (filter_.fields) [[unlikely]] {
      const uint8_t* d = pool.data(f);
      if (!vdev_capture_match(&filter_, d, d + f->len, untagged_vid)) return;
    }
    uint32_t slot;
    if (!free_.pop(slot)) [[unlikely]] {
      bump(drops_);
      return;
    }
    uint8_t* out = bytes_.data() + size_t(slot) * snaplen_;
    const uint32_t wire = wireLen(f);
    uint32_t kept = 0;
    for (; f && kept < snaplen_; f = f->next) {
      const uint32_t k = f->len < snaplen_ - kept ? f->len : snaplen_ - kept;
      std::memcpy(out + kept, pool.data(f), k);
      kept += k;
    }
    meta_[slot] = Meta{time_ns, wire, kept, dir};
    full_.push(slot);  // never full: there are only as many slots as it holds
    bump(taken_);
  }
  // Datapath thread. A copy the fast path's programs made: the frame's
  // first `len` bytes of `wire` (cut to the slots' length). The programs
  // applied the filter already.
  void copyBytes(uint8_t dir, const uint8_t* bytes, uint32_t len, uint32_t wire, uint64_t time_ns) noexcept {
    uint32_t slot;
    if (!free_.pop(slot)) [[unlikely]] {
      bump(drops_);
      return;
    }
    const uint32_t kept = len < snaplen_ ? len : snaplen_;
    std::memcpy(bytes_.data() + size_t(slot) * snaplen_, bytes, kept);
    meta_[slot] = Meta{time_ns, wire, kept, dir};
    full_.push(slot);
    bump(taken_);
  }
  // Before the capture is handed to the datapath thread: where the fast
  // path counts the copies it could not take for the port (a mmapped
  // counter), and its value now.
  void setFastMissed(const volatile uint64_t* counter) noexcept {
    fast_missed_ = counter;
    fast_missed_base_ = counter ? *counter : 0;
  }
  // Datapath thread: the port is gone; no more frames come.
  void end() noexcept { ended_.store(true, std::memory_order_release); }

  // The reader (one thread). Hands the frames copied since, oldest first,
  // to fn(time_ns, wire_len, dir, bytes), until fn returns false (the frame
  // stays for the next read) or none is left. Returns how many it took.
  template <typename Fn>
  size_t read(Fn&& fn) {
    size_t n = 0;
    while (full_.read_available()) {
      const uint32_t slot = full_.front();
      const Meta& m = meta_[slot];
      if (!fn(m.time_ns, m.wire_len, m.dir,
              std::span<const uint8_t>(bytes_.data() + size_t(slot) * snaplen_, m.kept)))
        break;
      full_.pop();
      free_.push(slot);
      n++;
    }
    return n;
  }
  uint64_t taken() const noexcept { return taken_.load(std::memory_order_relaxed); }
  // The copies missed: the reader was behind (no free slot), or the fast
  // path's buffers were full.
  uint64_t drops() const noexcept {
    return drops_.load(std::memory_order_relaxed) + (fast_missed_ ? *fast_missed_ - fast_missed_base_ : 0);
  }
  bool ended() const noexcept { return ended_.load(std::memory_order_acquire); }

 private:
  // The datapath thread is the one writer: a load and a store, no locked
  // read-modify-write per frame; readers see a recent value.
  static void bump(std::atomic<uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  struct Meta {
    uint64_t time_ns = 0;
    uint32_t wire_len = 0;
    uint32_t kept = 0;
    uint8_t dir = 0;
  };
  const uint16_t port_index_;
  const uint8_t dirs_;
  const uint32_t snaplen_;
  const CaptureFilter filter_;
  std::vector<uint8_t> bytes_;  // slots * snaplen
  std::vector<Meta> meta_;      // by slot
  boost::lockfree::spsc_queue<uint32_t> free_, full_;  // slot numbers
  std::atomic<uint64_t> taken_{0}, drops_{0};
  std::atomic<bool> ended_{false};
  const volatile uint64_t* fast_missed_ = nullptr;
  uint64_t fast_missed_base_ = 0;
};

}  // namespace vdev::datapath
