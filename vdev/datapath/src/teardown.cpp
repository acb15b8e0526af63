// Shutdown (Datapath::teardown): no new frames, the ones in flight
// forwarded or counted, every socket closed, every frame back in the pool.
#include <unistd.h>

#include <cstdio>

#include "datapath/datapath.h"

namespace vdev::datapath {

uint32_t Datapath::teardown() {
  if (running_) stop();
  // The punt device's socket holds frames in its fill ring even when every
  // port is gone: it is torn down too.
  if (torn_down_ || (ports_.active().empty() && !punt_)) return 0;
  torn_down_ = true;
  const std::vector<Port*>& active = ports_.active();
  // 1. No new frames: detach the programs (XDP and tc now drop nothing of
  //    ours, the device behaves as before vdevd). The punt device's program
  //    stays until the end: frames already on their way to it still land.
  for (Port* pp : active) pp->detachXdp();
  // 2. Forward what the kernel already put on the RX rings, and let TX finish
  //    (bounded: a device that stopped completing must not hang shutdown).
  const uint64_t deadline = monotonicNs() + 200ull * 1000 * 1000;
  for (;;) {
    const uint64_t now = monotonicNs();
    uint32_t work = 0;
    if (punt_ && punt_->live())
      for (auto& q : punt_->queues())
        if (q->xsk) work += rxPuntBurst(*q, now);
    for (Port* pp : active) {
      if (!pp->live() || !pp->receives()) continue;
      for (auto& q : pp->queues())
        if (q->xsk) work += rxBurst(*pp, *q, now);
    }
    uint64_t pending = 0;
    for (Port* pp : active) {
      if (!pp->live()) continue;
      work += pp->drainTx(*pool_);
      pp->reapCompletions(*pool_);
      pending += pp->txOutstanding();
      for (auto& q : pp->queues()) pending += q->ring.size();
    }
    if ((!work && !pending) || now > deadline) break;
    if (!work) ::usleep(1000);
  }
  // 3. Close the sockets; every frame comes back -- a zero-copy socket's
  //    once the kernel has released its queue (bounded: the process is
  //    leaving, and its UMEM pages stay the kernel's until then anyway).
  for (Port* pp : active) pp->shutdown(*pool_);
  if (punt_) {
    punt_->detachXdp();
    punt_->shutdown(*pool_);
  }
  const uint64_t held_deadline = monotonicNs() + HeldFrames::kFallbackNs;
  while (!held_->empty() && monotonicNs() < held_deadline) {
    held_->release(monotonicNs());
    if (!held_->empty()) ::usleep(2000);
  }
  if (!held_->empty()) {
    const uint64_t n = held_->frames();
    held_->release(0, true);
    std::fprintf(stderr, "vdevd: %llu frames of closed zero-copy sockets were still the kernel's at exit\n",
                 (unsigned long long)n);
  }
  // The ports stay (down, without sockets) so final statistics can be read.
  return pool_->total() - pool_->available();
}

}  // namespace vdev::datapath
