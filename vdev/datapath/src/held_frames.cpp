// Frames of closed zero-copy sockets until the kernel lets go (HeldFrames,
// held_frames.h).
#include "datapath/held_frames.h"

#include "datapath/datapath.h"
#include "rtnl/netdev.h"

namespace vdev::datapath {

HeldFrames::HeldFrames(FramePool& pool, Probe probe)
    : pool_(pool), probe_(probe ? std::move(probe) : Probe(rtnl::rxQueueHasXsk)) {}

void HeldFrames::hold(XskSocket& s, int ifindex) {
  auto bound = probe_(ifindex, s.queue());
  s.closeKeepingFrames();
  hold(s.tag(), ifindex, s.queue(), bound && *bound, monotonicNs());
}

void HeldFrames::hold(uint16_t tag, int ifindex, uint32_t queue, bool reported, uint64_t now_ns) {
  held_.push_back({tag, ifindex, queue, now_ns, reported});
}

uint32_t HeldFrames::giveBack(size_t i) {
  const uint32_t n = pool_.releaseTag(held_[i].tag);
  held_[i] = held_.back();
  held_.pop_back();
  return n;
}

uint32_t HeldFrames::release(uint64_t now_ns, bool force) {
  uint32_t n = 0;
  for (size_t i = 0; i < held_.size();) {
    const Held& h = held_[i];
    bool free = force;
    if (!free) {
      auto busy = probe_(h.ifindex, h.queue);
      if (busy && h.reported)
        free = !*busy;  // the kernel says so
      else
        free = now_ns - h.since_ns >= kFallbackNs;  // it cannot say, or the device is gone
    }
    if (free)
      n += giveBack(i);
    else
      i++;
  }
  return n;
}

uint32_t HeldFrames::bound(int ifindex, uint32_t queue) {
  uint32_t n = 0;
  for (size_t i = 0; i < held_.size();) {
    if (held_[i].ifindex == ifindex && held_[i].queue == queue)
      n += giveBack(i);
    else
      i++;
  }
  return n;
}

uint64_t HeldFrames::frames() const {
  uint64_t n = 0;
  for (const Held& h : held_) n += pool_.countOwned(h.tag);
  return n;
}

}  // namespace vdev::datapath
