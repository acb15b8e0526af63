// Batches: one RX burst's frames, and the frames switched during a burst,
// collected per destination port for one Port::xmitBulk() each.
//
// Invariants: burst() holds the batch size's frame pointers; every port
// index that was ever opened (openPort) has a batch of that many slots, so
// the hot path never allocates for a frame; between two calls a batch holds
// fewer than its size (add hands a full one back at once); a port with
// frames in its batch is listed for flush(), which hands every listed batch
// over and leaves all of them empty. A port listed whose batch went out
// full meanwhile is handed over again by flush, empty, for the doorbell.
//
// Datapath thread only. add() and flush() are on the hot path: inline, no
// exception; add may grow the list of ports with frames only until it has
// held as many as one burst ever needed (std::vector keeps its capacity).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "datapath/frame_pool.h"

namespace vdev::datapath {

class Batches {
 public:
  // batch: the frames of one RX burst, and of one destination's batch.
  explicit Batches(uint32_t batch) : batch_(batch), burst_(batch) {}
  Batches(const Batches&) = delete;
  Batches& operator=(const Batches&) = delete;

  // A port at index is added (control path, between bursts): its batch,
  // empty.
  void openPort(uint16_t index) {
    if (index >= pending_.size()) {
      pending_.resize(index + 1);
      pending_n_.resize(index + 1, 0);
    }
    pending_[index].assign(batch_, nullptr);
    pending_n_[index] = 0;
  }

  // Where an RX burst's frames are taken to (batch size slots).
  std::span<Frame*> burst() noexcept { return burst_; }

  // f for the port at index. Returns its batch if that is now full, to be
  // handed over at once (it is empty again for the next add), else nothing.
  std::span<Frame* const> add(uint16_t index, Frame* f) noexcept {
    uint32_t& n = pending_n_[index];
    if (n == 0) ports_.push_back(index);
    pending_[index][n++] = f;
    if (n < pending_[index].size()) return {};
    const uint32_t full = n;
    n = 0;  // stays listed; flush() rings the doorbell
    return std::span<Frame* const>(pending_[index].data(), full);
  }

  // fn(index, frames) for every listed port, in the order they got their
  // first frame; then every batch is empty and none listed.
  template <typename Fn>
  void flush(Fn&& fn) noexcept {
    for (uint16_t i : ports_) {
      uint32_t& n = pending_n_[i];
      fn(i, std::span<Frame* const>(pending_[i].data(), n));
      n = 0;
    }
    ports_.clear();
  }

 private:
  const uint32_t batch_;
  std::vector<Frame*> burst_;
  std::vector<std::vector<Frame*>> pending_;  // by port index: the frames for it this burst
  std::vector<uint32_t> pending_n_;           // by port index: how many
  std::vector<uint16_t> ports_;               // the ports with frames this burst
};

}  // namespace vdev::datapath
