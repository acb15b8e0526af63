#include "datapath/xsk.h"

#include <sys/mman.h>
#include <sys/socket.h>

#include <atomic>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
// Newer than Debian's headers: copy-mode TX frames per sendto (Linux 6.16+).
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif
// AF_XDP multi-buffer (Linux 6.6+; newer than Debian 12's headers).
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
// Preferred busy polling (Linux 5.11+; Debian's headers have them, but not
// every libc's).
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

namespace vdev::datapath {

namespace {

std::atomic<uint64_t> g_generation{0};

template <typename T>
T* at(void* base, uint64_t off) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + off);
}

uint32_t loadAcquire(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

}  // namespace

Result<std::unique_ptr<XskSocket>> XskSocket::create(FramePool& pool, int ifindex,
                                                     const std::string& ifname, uint32_t queue,
                                                     int share_fd, const XskConfig& cfg) {
  const std::string who = ifname + " queue " + std::to_string(queue);
  const int tag = pool.tags().take();
  if (tag < 0)
    return Error{ENOSPC, "AF_XDP socket for " + who + ": " + std::to_string(pool.tags().capacity()) +
                             " sockets are open, the most one frame pool tags"};
  std::unique_ptr<XskSocket> s(new XskSocket());
  s->pool_ = &pool;  // from here on, the tag goes back with the socket
  s->tag_ = uint16_t(tag);
  s->queue_ = queue;
  s->fd_ = FileDesc(::socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (!s->fd_.valid()) return errnoError("AF_XDP socket for " + who);
  int fd = s->fd_.get();

  if (share_fd < 0) {
    struct xdp_umem_reg reg = {};
    reg.addr = reinterpret_cast<uint64_t>(pool.area());
    reg.len = pool.areaSize();
    reg.chunk_size = pool.frameSize();
    reg.headroom = 0;
    if (::setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof reg))
      return errnoError("register UMEM (" + std::to_string(reg.len >> 20) +
                        " MiB; is RLIMIT_MEMLOCK high enough?) for " + who);
    s->registered_ = true;
  }
  // Every socket gets its own fill and completion ring: one per (device, queue).
  if (::setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &cfg.fill_size, sizeof cfg.fill_size) ||
      ::setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &cfg.comp_size, sizeof cfg.comp_size))
    return errnoError("size fill/completion rings for " + who);
  s->receives_ = cfg.rx_size != 0;
  if ((s->receives_ && ::setsockopt(fd, SOL_XDP, XDP_RX_RING, &cfg.rx_size, sizeof cfg.rx_size)) ||
      ::setsockopt(fd, SOL_XDP, XDP_TX_RING, &cfg.tx_size, sizeof cfg.tx_size))
    return errnoError("size RX/TX rings for " + who);

  struct xdp_mmap_offsets off = {};
  socklen_t optlen = sizeof off;
  if (::getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen))
    return errnoError("AF_XDP ring offsets for " + who);

  auto map = [&](MmapRegion& m, uint64_t len, uint64_t pgoff) -> Status {
    m = MmapRegion::map(len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off_t(pgoff));
    if (!m.valid()) return errnoError("map AF_XDP ring for " + who);
    return {};
  };
  if (s->receives_)
    if (auto st = map(s->rx_map_, off.rx.desc + cfg.rx_size * sizeof(struct xdp_desc), XDP_PGOFF_RX_RING); !st)
      return st.error();
  if (auto st = map(s->tx_map_, off.tx.desc + cfg.tx_size * sizeof(struct xdp_desc), XDP_PGOFF_TX_RING); !st)
    return st.error();
  if (auto st = map(s->fill_map_, off.fr.desc + cfg.fill_size * sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING); !st)
    return st.error();
  if (auto st = map(s->comp_map_, off.cr.desc + cfg.comp_size * sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING);
      !st)
    return st.error();

  // The field set-up of libxdp's xsk_create_umem_rings()/xsk_socket__create()
  // (a producer's cached_cons runs `size` ahead so free space is one
  // subtraction), with every cached index set: libxdp leaves a fill ring's
  // cached_prod and a completion ring's indices as the caller's struct had
  // them, which put fill entries where the kernel was not reading in
  // scripts/probes/xsk_mb.c before it zeroed its rings.
  auto setCons = [](struct xsk_ring_cons& r, void* base, const struct xdp_ring_offset& o, uint32_t size) {
    r.mask = size - 1;
    r.size = size;
    r.producer = at<uint32_t>(base, o.producer);
    r.consumer = at<uint32_t>(base, o.consumer);
    r.flags = at<uint32_t>(base, o.flags);
    r.ring = at<void>(base, o.desc);
    r.cached_prod = *r.producer;
    r.cached_cons = *r.consumer;
  };
  auto setProd = [](struct xsk_ring_prod& r, void* base, const struct xdp_ring_offset& o, uint32_t size) {
    r.mask = size - 1;
    r.size = size;
    r.producer = at<uint32_t>(base, o.producer);
    r.consumer = at<uint32_t>(base, o.consumer);
    r.flags = at<uint32_t>(base, o.flags);
    r.ring = at<void>(base, o.desc);
    r.cached_prod = *r.producer;
    r.cached_cons = *r.consumer + size;
  };
  if (s->receives_) setCons(s->rx_, s->rx_map_.get(), off.rx, cfg.rx_size);
  setProd(s->tx_, s->tx_map_.get(), off.tx, cfg.tx_size);
  setProd(s->fill_, s->fill_map_.get(), off.fr, cfg.fill_size);
  setCons(s->comp_, s->comp_map_.get(), off.cr, cfg.comp_size);

  struct sockaddr_xdp sxdp = {};
  sxdp.sxdp_family = AF_XDP;
  sxdp.sxdp_ifindex = uint32_t(ifindex);
  sxdp.sxdp_queue_id = queue;
  int rc;
  if (share_fd >= 0) {
    // Copy/zero-copy and need_wakeup are inherited from the UMEM's owner.
    sxdp.sxdp_flags = XDP_SHARED_UMEM;
    sxdp.sxdp_shared_umem_fd = uint32_t(share_fd);
    rc = ::bind(fd, reinterpret_cast<struct sockaddr*>(&sxdp), sizeof sxdp);
    s->multi_buffer_ = rc == 0 && cfg.multi_buffer;  // the registration's (the kernel takes no flag here)
  } else {
    rc = -1;
    errno = EOPNOTSUPP;
    if (cfg.zerocopy) {
      sxdp.sxdp_flags = XDP_USE_NEED_WAKEUP | XDP_ZEROCOPY;
      rc = ::bind(fd, reinterpret_cast<struct sockaddr*>(&sxdp), sizeof sxdp);
      s->zerocopy_ = rc == 0;
    }
    if (rc && (errno == EOPNOTSUPP || errno == EINVAL || errno == EPROTONOSUPPORT) && cfg.multi_buffer) {
      sxdp.sxdp_flags = XDP_USE_NEED_WAKEUP | XDP_COPY | XDP_USE_SG;
      rc = ::bind(fd, reinterpret_cast<struct sockaddr*>(&sxdp), sizeof sxdp);
      s->multi_buffer_ = rc == 0;
    }
    // A kernel without multi-buffer (before 6.6) refuses the flag: EINVAL.
    if (rc && (errno == EOPNOTSUPP || errno == EINVAL || errno == EPROTONOSUPPORT)) {
      sxdp.sxdp_flags = XDP_USE_NEED_WAKEUP | XDP_COPY;
      rc = ::bind(fd, reinterpret_cast<struct sockaddr*>(&sxdp), sizeof sxdp);
    }
  }
  if (rc) {
    int e = errno;
    std::string hint;
    if (e == EBUSY) hint = " (another AF_XDP socket is bound to this queue)";
    if (e == EOPNOTSUPP && share_fd >= 0)
      hint = " (the shared UMEM is in zero-copy mode and this device cannot do zero-copy)";
    return Error{e, "bind AF_XDP socket to " + who + hint};
  }
  if (share_fd >= 0) {
    struct xdp_options opts = {};
    socklen_t len = sizeof opts;
    if (::getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opts, &len) == 0)
      s->zerocopy_ = opts.flags & XDP_OPTIONS_ZEROCOPY;
  }
  if (cfg.tx_budget) {
    // Probed: older kernels lack the option (ENOPROTOOPT); the default stays.
    s->tx_budget_set_ =
        ::setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &cfg.tx_budget, sizeof cfg.tx_budget) == 0;
  }
  if (cfg.busy_poll_us) {
    int one = 1, us = int(cfg.busy_poll_us), budget = int(cfg.busy_poll_budget);
    if (::setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof one) ||
        ::setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof us) ||
        ::setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof budget))
      return errnoError("busy polling (SO_PREFER_BUSY_POLL) for " + who);
    s->busy_poll_ = true;
  }
  g_generation.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void XskSocket::closeKeepingFrames() noexcept {
  if (!pool_) return;
  // The ring mappings go first, then the socket: from then on the kernel
  // no longer reads or writes any of its rings, and in copy mode none of
  // its frames either (docs/architecture.md, "Frame owner tags").
  rx_map_.reset();
  tx_map_.reset();
  fill_map_.reset();
  comp_map_.reset();
  rx_ = {};
  tx_ = {};
  fill_ = {};
  comp_ = {};
  fd_.reset();
  pool_ = nullptr;
  g_generation.fetch_add(1, std::memory_order_relaxed);
}

uint32_t XskSocket::close() noexcept {
  if (!pool_) return 0;
  FramePool& pool = *pool_;
  closeKeepingFrames();
  return pool.releaseTag(tag_);
}

XskSocket::~XskSocket() { (void)close(); }

uint64_t XskSocket::generation() noexcept { return g_generation.load(std::memory_order_relaxed); }

struct xdp_statistics XskSocket::statsOf(int fd) {
  struct xdp_statistics st = {};
  socklen_t len = sizeof st;
  if (::getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len)) st = {};
  return st;
}

int XskSocket::pendingError() const {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len)) return errno;
  return err;
}

// Producer rings: our producer index minus the kernel's consumer index.
uint32_t XskSocket::fillRingCount() const { return *fill_.producer - loadAcquire(fill_.consumer); }
uint32_t XskSocket::txRingCount() const { return *tx_.producer - loadAcquire(tx_.consumer); }
// Consumer rings: the kernel's producer index minus our consumer index.
uint32_t XskSocket::rxRingCount() const { return receives_ ? loadAcquire(rx_.producer) - *rx_.consumer : 0; }
uint32_t XskSocket::compRingCount() const { return loadAcquire(comp_.producer) - *comp_.consumer; }

}  // namespace vdev::datapath
