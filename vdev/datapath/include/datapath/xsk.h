// XskSocket: one AF_XDP socket bound to (device, queue), with its own RX, TX,
// fill and completion rings, sharing the datapath thread's UMEM.
//
// vdev sets sockets up with the raw AF_XDP socket API instead of libxdp's
// xsk_socket__create_shared(): libxdp anchors a shared UMEM to the fd of the
// first socket ever created, and when that socket's device disappears every
// later bind with XDP_SHARED_UMEM fails (the kernel requires the socket named
// in sxdp_shared_umem_fd to be bound). vdev picks any live socket as the
// anchor instead, and registers the UMEM afresh when none is left. The ring
// accessors are libxdp's inline helpers from <xdp/xsk.h>.
//
// Zero-copy is a property of a UMEM registration: every socket that shares
// one (XDP_SHARED_UMEM) takes the mode of its first socket (a kernel rule:
// a copy-only device cannot join a zero-copy registration, and a zero-copy
// NIC joins a copy one in copy mode). So a datapath keeps up to two kinds of
// registration of its one area, at the same address and with the same chunk
// size: a copy-mode one that veths, taps and the punt device share, and a
// zero-copy one for the devices that offer it (UmemAnchors). A frame's
// address names the same chunk in both, so unicast still moves a frame by
// address from a zero-copy NIC's RX ring to a veth's TX ring, no copy. The
// first socket of a new registration tries XDP_ZEROCOPY when asked
// (XskConfig::zerocopy) and falls back to copy mode on it.
//
// Owner tag: a socket takes a tag from its pool (FramePool::tags()) when it
// is created; the frames its rings hold carry it (Frame::owner). close()
// (or the destructor) closes the socket -- after which the kernel no longer
// touches its rings -- returns every frame still carrying the tag to the
// pool, and only then gives the tag back, so a tag is never reused while a
// frame still carries it.
//
// Thread safety: the rings belong to the datapath thread that owns the
// socket; stats() may be called from any thread.
#pragma once

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/fd.h"
#include "base/mmap.h"
#include "base/result.h"
#include "datapath/frame_pool.h"

namespace vdev::datapath {

// An RX or TX descriptor whose frame goes on in the next one (XDP_PKT_CONTD:
// AF_XDP multi-buffer; newer than Debian 12's headers).
inline constexpr uint32_t kXdpPktContd = 1u << 0;

struct XskConfig {
  // 0: a socket that only transmits (no RX ring; its fill ring is never
  // filled): a port whose frames reach vdevd another way (the skb path's
  // punt device) sends through it. Copy mode binds without an XDP program.
  // The RX ring holds what arrives while the datapath thread is off its CPU:
  // 4096 entries are 4 ms at 1 Mpps, where 1024 overflowed whenever another
  // task had the CPU for a scheduler slice (docs/architecture.md, "RX ring").
  // Its fill ring's frames follow the traffic (Datapath::refill), so an idle
  // port holds no more of the pool for it; the cost is the kernel's ring
  // memory, 96 KiB more per socket (RX and fill ring).
  uint32_t rx_size = 4096;
  uint32_t tx_size = 1024;
  uint32_t fill_size = 8192;  // twice the RX ring: the kernel never waits for a refill
  uint32_t comp_size = 1024;
  uint32_t tx_budget = 0;     // copy-mode frames per sendto (XDP_MAX_TX_SKB_BUDGET); 0 = kernel default
  bool zerocopy = true;       // try zero-copy first (only a registration's first socket decides)
  // AF_XDP multi-buffer (XDP_USE_SG): frames longer than a chunk come and
  // go as chains of chunks (Frame::next). A registration's first socket
  // asks for it in copy mode (a kernel before 6.6 refuses the flag: the
  // socket binds without it); every socket that shares the registration
  // has what the first got, which the caller passes here (UmemAnchors).
  // Zero-copy registrations go without: a driver's zero-copy
  // multi-buffer is not assumed.
  bool multi_buffer = true;
  // Preferred busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL, _BUDGET):
  // microseconds per busy poll, 0 = off; the budget is the batch size.
  uint32_t busy_poll_us = 0;
  uint32_t busy_poll_budget = 64;
};

// The registrations of a datapath's UMEM area a new socket may share: a
// bound copy-mode socket and a bound zero-copy one, -1 where there is none
// (then the socket registers the area anew).
struct UmemAnchors {
  int copy = -1;
  int zerocopy = -1;
  bool copy_multi_buffer = false;  // the copy registration's sockets are bound with XDP_USE_SG
};

class XskSocket {
 public:
  // share_fd < 0: register pool's area as a new UMEM on this socket.
  // share_fd >= 0: share the UMEM of that (bound) socket.
  // The socket's owner tag comes from pool.tags(); ENOSPC when every tag
  // is taken (kMaxSocketTags sockets open).
  static Result<std::unique_ptr<XskSocket>> create(FramePool& pool, int ifindex,
                                                   const std::string& ifname, uint32_t queue,
                                                   int share_fd, const XskConfig& cfg);
  // close() if not closed yet.
  ~XskSocket();
  XskSocket(const XskSocket&) = delete;
  XskSocket& operator=(const XskSocket&) = delete;

  // Unmaps the rings and closes the socket; then every frame of the pool
  // still tagged with this socket's tag (fill, RX, TX, completion ring, or
  // the kernel in between: nothing touches them any more) goes back to the
  // pool, and the tag is given back. Returns the frames returned. After
  // it, only tag() and queue() may be called.
  uint32_t close() noexcept;
  // The same, but the frames stay tagged and out of the pool, and the tag
  // taken: a zero-copy driver may still use them until the kernel releases
  // the queue (HeldFrames, held_frames.h, returns them then with
  // FramePool::releaseTag()).
  void closeKeepingFrames() noexcept;

  int fd() const { return fd_.get(); }
  // Changes whenever a socket is created or destroyed (in any thread of
  // the process): a set of watched fds built at one value is still exact
  // while it holds -- no fd number has been closed and reused meanwhile.
  static uint64_t generation() noexcept;
  uint16_t tag() const { return tag_; }  // owner tag of the frames it holds
  bool zerocopy() const { return zerocopy_; }
  // Bound with XDP_USE_SG (its registration's): it receives and transmits
  // frames longer than a chunk as chains.
  bool multiBuffer() const { return multi_buffer_; }
  // It registered the UMEM area itself (XDP_UMEM_REG), as a registration's
  // first socket does, instead of sharing another socket's (UmemAnchors).
  bool registeredUmem() const { return registered_; }
  uint32_t queue() const { return queue_; }
  bool txBudgetSet() const { return tx_budget_set_; }
  bool busyPoll() const { return busy_poll_; }
  // Whether it has an RX ring (XskConfig::rx_size): a TX-only socket is
  // never polled for RX nor given fill frames.
  bool receives() const { return receives_; }
  // XDP_STATISTICS; zeros if the socket is unusable.
  struct xdp_statistics stats() const { return statsOf(fd()); }
  // XDP_STATISTICS of the socket open as fd; zeros where it is not one
  // (closed meanwhile: the statistics reader's retry covers that).
  static struct xdp_statistics statsOf(int fd);
  // Pending socket error (ENETDOWN once the device is gone), 0 if none.
  int pendingError() const;

  // Rings (datapath thread only): libxdp's ring state over the mappings below.
  struct xsk_ring_cons& rx() noexcept { return rx_; }
  struct xsk_ring_prod& tx() noexcept { return tx_; }
  struct xsk_ring_prod& fill() noexcept { return fill_; }
  struct xsk_ring_cons& comp() noexcept { return comp_; }

  // Occupancy read from the shared ring indices (accounting only).
  uint32_t fillRingCount() const;  // frames in the fill ring not yet taken by the kernel
  uint32_t rxRingCount() const;    // frames the kernel put on RX not yet consumed
  uint32_t txRingCount() const;    // frames on TX not yet taken by the kernel
  uint32_t compRingCount() const;  // completions not yet reaped

 private:
  XskSocket() = default;
  // Declared first, so destroyed last: the rings are unmapped, then the
  // socket is closed (the kernel does not require the order; it is tidy).
  FileDesc fd_;
  // The four rings' shared mappings (XDP_PGOFF_RX_RING, ...): the ring
  // structs below point into them.
  MmapRegion rx_map_, tx_map_, fill_map_, comp_map_;
  struct xsk_ring_cons rx_ {};
  struct xsk_ring_prod tx_ {};
  struct xsk_ring_prod fill_ {};
  struct xsk_ring_cons comp_ {};
  FramePool* pool_ = nullptr;  // whose tag it holds (null: none taken, or closed)
  uint16_t tag_ = 0;
  uint32_t queue_ = 0;
  bool zerocopy_ = false;
  bool multi_buffer_ = false;
  bool registered_ = false;  // it registered the UMEM area (no anchor to share)
  bool tx_budget_set_ = false;
  bool busy_poll_ = false;
  bool receives_ = true;
};

// a += x, field by field.
void addXdpStats(struct xdp_statistics& a, const struct xdp_statistics& x);

}  // namespace vdev::datapath
