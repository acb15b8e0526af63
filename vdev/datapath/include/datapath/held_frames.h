// HeldFrames: the frames of closed sockets that the kernel may still use,
// kept out of the pool until it has let go of them.
//
// In copy mode (veth, tap: every socket vdevd has there) the kernel copies
// frames in and out of the UMEM only while the socket is bound, and close()
// unbinds it and waits for the drivers to stop using it (synchronize_net):
// once close() has returned, nothing touches the socket's frames, and
// XskSocket::close() returns them to the pool at once. A zero-copy driver
// instead has handed the NIC the addresses of the frames in its fill ring
// (and on its TX ring) for DMA, and stops only when the kernel releases the
// queue's buffer pool -- from a work item, after close() has returned. A
// frame returned to the pool before then could be given to another socket
// or filled by vdevd while the NIC still writes a received packet into it
// or reads it out onto the wire: silent corruption of someone else's frame.
//
// So a zero-copy socket's frames stay under its tag when it is closed
// (XskSocket::closeKeepingFrames) and are returned, and the tag given back,
// only once the queue is free again: the kernel no longer reports a pool at
// the device's queue (rtnl::rxQueueHasXsk, netdev QUEUE_GET "xsk", Linux
// 6.15+), or a new socket was bound to that queue (the kernel refuses the
// bind while the old pool is there). On a kernel that does not report it, or
// once the device is gone (its queues with it), they are returned after
// kFallbackNs -- the work item runs within milliseconds here, and the relink
// logic treats a queue busy for a second as a real conflict.
//
// Thread safety: owned by the datapath thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/result.h"
#include "datapath/frame_pool.h"
#include "datapath/xsk.h"

namespace vdev::datapath {

class HeldFrames {
 public:
  static constexpr uint64_t kFallbackNs = 1000ull * 1000 * 1000;

  // Whether the kernel still holds a pool at (ifindex, queue); the default
  // asks it (rtnl::rxQueueHasXsk). Tests give their own.
  using Probe = std::function<Result<bool>(int ifindex, uint32_t queue)>;
  explicit HeldFrames(FramePool& pool, Probe probe = {});

  // Closes s keeping its frames (and tag) until the kernel has released its
  // queue on device ifindex. Asks the kernel first whether it reports the
  // pool of a queue that is bound (to tell a release from a kernel that
  // says nothing).
  void hold(XskSocket& s, int ifindex);
  // The same for a socket already closed that way: its tag, device and
  // queue, and whether the kernel reported the pool while it was bound.
  void hold(uint16_t tag, int ifindex, uint32_t queue, bool reported, uint64_t now_ns);
  // Returns what the kernel has let go of since (every hold whose queue is
  // free, or past kFallbackNs where that cannot be known). force: all of
  // them (vdevd exits). Returns the frames returned to the pool. now_ns:
  // monotonicNs().
  uint32_t release(uint64_t now_ns, bool force = false);
  // A socket was bound to (ifindex, queue): the kernel had released the
  // pool of any socket closed there before; its frames come back.
  uint32_t bound(int ifindex, uint32_t queue);

  bool empty() const { return held_.empty(); }
  // Frames held now (the pool place kernel_held). Not a hot-path call.
  uint64_t frames() const;

 private:
  struct Held {
    uint16_t tag;
    int ifindex;
    uint32_t queue;
    uint64_t since_ns;
    bool reported;  // the kernel reported the pool while the socket was bound
  };
  uint32_t giveBack(size_t i);

  FramePool& pool_;
  Probe probe_;
  std::vector<Held> held_;
};

}  // namespace vdev::datapath
