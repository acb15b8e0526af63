#include "datapath/port.h"

#include <dirent.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "base/fd.h"
#include "bpf_limits.h"
#include "datapath/held_frames.h"
#include "datapath/tc_path.h"
#include "rtnl/link.h"
#include "vdev_xdp_shared.h"

namespace vdev::datapath {

namespace {

struct DirCloser {
  void operator()(DIR* d) const noexcept { ::closedir(d); }
};

Status deviceInfo(const std::string& ifname, uint32_t& mtu, uint8_t mac[6]) {
  FileDesc s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return errnoError("socket for device ioctls");
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  if (::ioctl(s.get(), SIOCGIFMTU, &ifr)) return errnoError("read MTU of " + ifname);
  mtu = uint32_t(ifr.ifr_mtu);
  if (::ioctl(s.get(), SIOCGIFHWADDR, &ifr)) return errnoError("read MAC of " + ifname);
  std::memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
  return {};
}

}  // namespace

// Sysfs lists one rx-N directory per queue.
uint32_t deviceQueues(const std::string& ifname) {
  std::string path = "/sys/class/net/" + ifname + "/queues";
  const std::unique_ptr<DIR, DirCloser> d(::opendir(path.c_str()));
  if (!d) return 1;
  uint32_t n = 0;
  while (struct dirent* e = ::readdir(d.get()))
    if (std::strncmp(e->d_name, "rx-", 3) == 0) n++;
  return n ? n : 1;
}

std::string deviceDriver(const std::string& ifname) {
  FileDesc s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return "";
  struct ethtool_drvinfo info = {};
  info.cmd = ETHTOOL_GDRVINFO;
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&info);
  if (::ioctl(s.get(), SIOCETHTOOL, &ifr) < 0) return "";
  return std::string(info.driver, strnlen(info.driver, sizeof info.driver));
}

bool skbSource(const std::string& ifname, const std::string& driver, const XdpFeatures& features) {
  if (driver == "veth" || driver == "tun" || driver == "netkit") return true;
  const int ifindex = int(::if_nametoindex(ifname.c_str()));
  if (!ifindex) return false;
  auto native = features.nativeXdp(ifindex, driver);
  return native && !*native;
}

Port::Port(std::string name, uint16_t index, uint32_t nqueues, const PortConfig& cfg, uint32_t mtu)
    : name_(std::move(name)),
      index_(index),
      mtu_(mtu),
      cfg_(cfg),
      vlan_on_(cfg.limits.vlan.configured()),
      counters_(new PortCounters[kMaxThreads]),
      scratch_(cfg.batch ? cfg.batch : 64) {
  for (uint32_t i = 0; i < nqueues; i++) queues_.push_back(std::make_unique<Queue>(cfg.ring_capacity));
  bound_ = nqueues;  // until sockets are opened: every queue takes frames (ports without a device)
}

Port::~Port() = default;

Result<std::unique_ptr<Port>> Port::open(const std::string& ifname, uint16_t index, FramePool& pool,
                                         const PortConfig& cfg,
                                         const std::vector<std::array<uint8_t, 6>>& host_macs,
                                         const UmemAnchors& anchors) {
  if (ifname.empty() || ifname.size() >= IF_NAMESIZE)
    return Error{EINVAL, "invalid interface name '" + ifname + "'"};
  if (!::if_nametoindex(ifname.c_str())) return errnoError("port " + ifname);
  uint32_t nq = cfg.queues ? cfg.queues : deviceQueues(ifname);
  std::unique_ptr<Port> p(new Port(ifname, index, nq, cfg, 1500));
  p->host_macs_ = host_macs;
  if (auto st = p->attachDevice(pool, anchors); !st) return st.error();
  return p;
}

Result<std::unique_ptr<Port>> Port::absent(const std::string& ifname, uint16_t index,
                                           const PortConfig& cfg,
                                           const std::vector<std::array<uint8_t, 6>>& host_macs) {
  if (ifname.empty() || ifname.size() >= IF_NAMESIZE)
    return Error{EINVAL, "invalid interface name '" + ifname + "'"};
  std::unique_ptr<Port> p(new Port(ifname, index, cfg.queues ? cfg.queues : 1, cfg, 1500));
  p->host_macs_ = host_macs;
  p->link_.gone();
  return p;
}

Status Port::attachDevice(FramePool& pool, const UmemAnchors& anchors) {
  const int ifindex = int(::if_nametoindex(name_.c_str()));
  if (!ifindex) return errnoError("port " + name_);
  uint32_t mtu = 0;
  uint8_t mac[6];
  if (auto st = deviceInfo(name_, mtu, mac); !st) return st;
  ifindex_ = ifindex;
  setMtu(mtu);
  std::memcpy(mac_, mac, 6);
  // A program of a previous device of this name is gone with it; what it
  // dropped for the port's limits stays the port's.
  if (xdp_) addLimitDrops(xdp_->limitDrops());
  xdp_.reset();
  tc_attached_ = false;
  driver_ = deviceDriver(name_);
  redirect_peer_ = false;
  (void)refreshPeerNetns();
  refused_ifindex_ = 0;
  refused_why_.clear();
  // The hook: what the device's senders hand the kernel (PortHook).
  hook_ = cfg_.hook;
  hook_note_.clear();
  const bool chosen = hook_ == PortHook::kAuto;
  if (chosen)
    hook_ = (cfg_.tc && !cfg_.punt && index_ < kFastPathPorts && cfg_.features &&
             skbSource(name_, driver_, *cfg_.features))
                ? PortHook::kTc
                : PortHook::kXdp;
  // A netkit has no XDP of its own, and its peer's default policy drops
  // what the container sends while no program is attached (rtnl
  // createNetkit): its skb program is the only way in, whatever the
  // default hook, never with a fallback (vdevd refuses `hook xdp` for it).
  if (isNetkit()) {
    hook_ = PortHook::kTc;
    if (cfg_.tc && index_ >= kFastPathPorts)
      return Error{ENOSPC, "port " + name_ + ": a netkit is served by vdevd's skb program only, and index " +
                               std::to_string(index_) + " is beyond its table"};
  }
  if (hook_ == PortHook::kTc && !cfg_.tc)
    return Error{EOPNOTSUPP, "port " + name_ + ": the skb path (tc) is not available"};
  if (hook_ == PortHook::kTc) {
    // The program first: its frames go to the punt device, never to the
    // port's sockets, and it is no fast-path destination before it is
    // live. So a program that cannot be attached leaves no socket behind
    // -- one closed now would keep its queue from the XDP hook's socket
    // for a while (the kernel releases it from a work item: EBUSY).
    Status st = cfg_.tc->setLimits(index_, cfg_.limits);  // before the program can see a frame
    if (st) {
      cfg_.tc->setVlan(index_, fastVid(), vlanOn());  // its row's VLAN, before the program sees a frame
      st = cfg_.tc->attach(index_, ifindex, name_, redirectPeer(), fastRxPossible(), mtu, isNetkit());
    }
    if (st) {
      tc_attached_ = true;
      if (auto so = openSockets(pool, anchors); !so) {
        detachXdp();
        shutdown(pool);
        return so;
      }
      link_.attached();
      return {};
    }
    // Chosen by `auto`: the XDP hook serves every device, so a port add
    // never fails for the tc attach alone (a kernel without tcx given
    // --tc-attach tcx, another filter at vdev's priority, ...). Asked for
    // (hook tc): the error is the answer.
    if (!chosen || isNetkit()) return st;
    hook_ = PortHook::kXdp;
    hook_note_ = "at the XDP hook, not tc: " + st.error().message();
    std::fprintf(stderr, "vdevd: port %s: %s\n", name_.c_str(), hook_note_.c_str());
  }
  // Sockets first, then the program, loaded with its maps filled before it
  // is attached: it never drops (no_socket) or misdirects (host MACs) a frame
  // while the port is being set up.
  if (auto st = openSockets(pool, anchors); !st) {
    shutdown(pool);
    return st;
  }
  if (!cfg_.xdp) {
    shutdown(pool);
    return Error{EINVAL, "port " + name_ + ": no XDP program object (PortConfig::xdp)"};
  }
  auto xdp = XdpProgram::attach(*cfg_.xdp, ifindex, name_, cfg_.xdp_mode, cfg_.force, uint32_t(queues_.size()),
                                [&](XdpProgram& x) -> Status {
    for (uint32_t q = 0; q < queues_.size(); q++)
      if (queues_[q]->xsk)
        if (auto st = x.setSocket(q, queues_[q]->xsk->fd()); !st) return st;
    if (cfg_.punt) return {};  // the punt device passes nothing to the host, limits nothing
    if (auto st = x.setLimits(cfg_.limits); !st) return st;
    if (auto st = x.setVlan(fastVid(), vlanOn()); !st) return st;
    if (auto st = x.setOwnMac(mac); !st) return st;
    for (const auto& m : host_macs_)
      if (auto st = x.addHostMac(m.data()); !st) return st;
    return {};
  }, XdpFastConfig{cfg_.punt ? nullptr : cfg_.fast, index_, fastRxPossible()});
  if (!xdp) {
    shutdown(pool);
    return xdp.error();
  }
  xdp_ = std::move(xdp.value());
  link_.attached();
  return {};
}

// A device may have fewer RX queues than the port: a persistent multi-queue
// tap has one until the VM opens the others (AF_XDP can only bind a queue
// that exists). Those that exist are bound now, the rest by bindNewQueues()
// when they appear. Queue 0 always exists.
Status Port::openSockets(FramePool& pool, const UmemAnchors& anchors) {
  const uint32_t have = std::min<uint32_t>(deviceQueues(name_), uint32_t(queues_.size()));
  // Which registration of the UMEM area (XskSocket, "Zero-copy"): a device
  // that offers zero-copy shares the zero-copy one, or makes its own and
  // tries XDP_ZEROCOPY there; every other device shares the copy one. A
  // zero-copy socket on a copy registration would be bound in copy mode,
  // and a copy-only device cannot join a zero-copy one at all: with one
  // registration, a zero-copy NIC added first kept every veth and tap out.
  // Only a port that receives on its sockets: a zero-copy queue takes its
  // RX buffers from the socket's fill ring, which a transmit-only socket
  // never fills.
  bool zc = false;
  if (cfg_.xsk.zerocopy && receives() && !cfg_.punt) {
    if (cfg_.zerocopy_path_always) {
      zc = true;
    } else if (cfg_.features) {
      auto offers = cfg_.features->zerocopy(ifindex_, driver_);
      zc = offers && *offers;
    }
  }
  int share_fd = zc ? anchors.zerocopy : anchors.copy;
  // Multi-buffer is the registration's: asked for by a new one (in copy
  // mode only), as the copy one has it when shared, never on a zero-copy one.
  bool mb = share_fd < 0 ? cfg_.xsk.multi_buffer : !zc && anchors.copy_multi_buffer;
  for (uint32_t q = 0; q < have; q++) {
    Queue& qu = *queues_[q];
    if (qu.xsk) continue;
    XskConfig xc = cfg_.xsk;
    xc.zerocopy = zc;
    xc.multi_buffer = mb;
    if (!receives()) {
      // Transmit only: the frames it receives reach vdevd through the punt
      // device. The kernel still wants a fill ring; it stays empty.
      xc.rx_size = 0;
      xc.fill_size = 64;
    }
    auto xsk = XskSocket::create(pool, ifindex_, name_, q, share_fd, xc);
    if (!xsk) return xsk.error();
    // Bound: the kernel had let go of whatever socket was there before.
    if (cfg_.held) cfg_.held->bound(ifindex_, q);
    qu.xsk = std::move(xsk.value());
    qu.fill_given = qu.rx_got = qu.tx_submitted = qu.tx_completed = 0;
    qu.fill_target = qu.fill_extra = 0;
    // The punt socket takes every skb port's frames in bursts of whole GSO
    // skbs while this thread may be busy elsewhere: its target never falls
    // below its RX ring (see Datapath::refill).
    qu.fill_min = cfg_.punt ? std::min(xc.rx_size, xc.fill_size) : 0;
    if (share_fd < 0) share_fd = qu.xsk->fd();
    mb = qu.xsk->multiBuffer();
    if (zc && !qu.xsk->zerocopy() && !cfg_.zerocopy_path_always && q == 0)
      std::fprintf(stderr, "vdevd: port %s: the device offers zero-copy AF_XDP, but bound in copy mode\n",
                   name_.c_str());
    if (xdp_)
      if (auto st = xdp_->setSocket(q, qu.xsk->fd()); !st) return st.error();
  }
  bound_ = 0;
  while (bound_ < queues_.size() && queues_[bound_]->xsk) bound_++;
  return {};
}

uint32_t Port::unboundQueues() const {
  uint32_t n = 0;
  for (auto& q : queues_)
    if (!q->xsk) n++;
  return n;
}

Result<uint32_t> Port::bindNewQueues(FramePool& pool, const UmemAnchors& anchors) {
  const uint32_t before = unboundQueues();
  if (before == 0 || deviceQueues(name_) <= bound_) return 0u;
  if (auto st = openSockets(pool, anchors); !st) return st.error();
  return before - unboundQueues();
}

void addXdpStats(struct xdp_statistics& a, const struct xdp_statistics& x) {
  a.rx_dropped += x.rx_dropped;
  a.rx_invalid_descs += x.rx_invalid_descs;
  a.tx_invalid_descs += x.tx_invalid_descs;
  a.rx_ring_full += x.rx_ring_full;
  a.rx_fill_ring_empty_descs += x.rx_fill_ring_empty_descs;
  a.tx_ring_empty_descs += x.tx_ring_empty_descs;
}

struct xdp_statistics Port::xdpStats() const {
  struct xdp_statistics s = xdp_closed_;
  for (auto& q : queues_)
    if (q->xsk) addXdpStats(s, q->xsk->stats());
  return s;
}

void Port::socketFds(std::vector<int>& out) const {
  for (auto& q : queues_)
    if (q->xsk) out.push_back(q->xsk->fd());
}

bool Port::hasSockets() const {
  for (auto& q : queues_)
    if (q->xsk) return true;
  return false;
}

bool Port::multiBuffer() const {
  for (auto& q : queues_)
    if (q->xsk) return q->xsk->multiBuffer();  // the registration's: every socket alike
  return false;
}

bool Port::zerocopy() const {
  for (auto& q : queues_)
    if (q->xsk && q->xsk->zerocopy()) return true;
  return false;
}

int Port::xmitBulk(std::span<Frame* const> frames, uint32_t flags) noexcept {
  if (flags & ~kXmitFlagsMask) [[unlikely]]
    return -EINVAL;
  if (!live() || queues_.empty()) [[unlikely]]
    return -ENXIO;
  // Queue by calling thread, as tun_xdp_xmit picks tfiles[cpu % numqueues],
  // among the queues bound to a socket (live: at least queue 0).
  Queue& q = *queues_[threadIndex() % (bound_ ? bound_ : 1)];
  // The chains' other chunks are counted before the frames are on the
  // ring (the owner thread takes them off as it drains them), and those
  // of the frames that did not fit are taken back.
  uint64_t chained = 0;
  for (Frame* f : frames)
    if (f->next) [[unlikely]]
      chained += chunks(f) - 1;
  if (chained) [[unlikely]]
    q.chained.fetch_add(chained, std::memory_order_relaxed);
  const uint32_t n = q.ring.produceBulk(frames);  // the one producer lock of the batch
  tx_handed_.store(true, std::memory_order_release);  // drainTx looks at this port's rings
  if (n < frames.size()) [[unlikely]] {
    Counter& drops = counters().drops[kDropRingFull];
    uint64_t back = 0;
    for (size_t i = n; i < frames.size(); i++) {
      drops.add(1);
      if (frames[i]->next) back += chunks(frames[i]) - 1;
      frames[i]->pool->free(frames[i]);
    }
    if (back) q.chained.fetch_sub(back, std::memory_order_relaxed);
  }
  if (flags & kXmitFlush) q.ring.flush();
  return int(n);
}

uint32_t Port::kick(Queue& q) noexcept {
  // Copy mode transmits only from sendto()/poll(), and sends at most the TX
  // budget per call (EAGAIN: more is left); keep kicking while the kernel
  // makes progress, a bounded number of times. EBUSY: the device dropped
  // the frame it was handed (NET_XMIT_DROP: a tap's queue to its reader or
  // a veth peer's backlog is full) and the kernel stopped there; the rest
  // waits on the TX ring for the next kick, as kicking again at once would
  // lose one more frame each time.
  XskSocket& s = *q.xsk;
  uint32_t kicks = 0;
  for (int i = 0; i < 16; i++) {
    uint32_t before = s.txRingCount();
    if (before == 0) break;
    kicks++;
    ssize_t rc = ::sendto(s.fd(), nullptr, 0, MSG_DONTWAIT, nullptr, 0);
    if (rc >= 0) break;
    if (errno != EAGAIN && errno != ENOBUFS) break;  // EBUSY; ENETDOWN, ENXIO: link down / gone
    if (s.txRingCount() >= before) break;  // no progress: the device is backed up
  }
  return kicks;
}

bool Port::txPending() const noexcept {
  for (const auto& q : queues_)
    if (q->xsk && q->xsk->txRingCount()) return true;
  return false;
}

void Port::kickPending() noexcept {
  for (auto& q : queues_)
    if (q->xsk && q->xsk->txRingCount()) (void)kick(*q);
}

uint32_t Port::reap(Queue& q, FramePool& pool) noexcept {
  XskSocket& s = *q.xsk;
  uint32_t total = 0, idx = 0, n;
  Frame* done[64];
  // Drain the completion ring completely, not one batch.
  struct xsk_ring_cons& comp = s.comp();
  while ((n = xsk_ring_cons__peek(&comp, 64, &idx)) > 0) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
      Frame* f = pool.frameAt(*xsk_ring_cons__comp_addr(&comp, idx + i));
      if (f) [[likely]]
        done[k++] = f;
    }
    xsk_ring_cons__release(&comp, n);
    pool.freeBulk(std::span<Frame* const>(done, k));
    total += n;
  }
  q.tx_completed += total;
  return total;
}

uint32_t Port::reapCompletions(FramePool& pool) noexcept {
  uint32_t n = 0;
  for (auto& q : queues_)
    if (q->xsk) n += reap(*q, pool);
  return n;
}

uint32_t Port::drainTx(FramePool& pool) noexcept {
  // Cleared before the rings are read (a full barrier): a batch handed over
  // after this either is seen below or sets it again.
  tx_handed_.exchange(false, std::memory_order_acq_rel);
  uint32_t sent = 0;
  const uint32_t batch = uint32_t(scratch_.size());
  for (auto& qp : queues_) {
    Queue& q = *qp;
    if (!q.xsk) continue;
    XskSocket& s = *q.xsk;
    struct xsk_ring_prod& tx = s.tx();
    if (cfg_.completion == CompletionMode::kEager ||
        q.tx_submitted - q.tx_completed >= cfg_.lazy_threshold)
      reap(q, pool);
    uint32_t qsent = 0;
    // Bounded: at most one ring's worth per call, so RX is never starved.
    for (uint32_t pass = 0; pass * batch < q.ring.capacity(); pass++) {
      const uint32_t n = q.ring.consumeBatch(std::span<Frame*>(scratch_.data(), batch));
      if (n == 0) break;
      PortCounters& c = counters();
      // One descriptor per chunk. A chain for a socket without
      // multi-buffer cannot go: the destination's oversize drop.
      uint32_t m = 0, need = 0;
      uint64_t chained = 0;
      for (uint32_t i = 0; i < n; i++) {
        Frame* f = scratch_[i];
        uint32_t nc = 1;
        if (f->next) [[unlikely]] {
          nc = chunks(f);
          chained += nc - 1;
          if (!s.multiBuffer()) {
            c.drops[kDropOversize].add(1);
            pool.free(f);
            continue;
          }
        }
        need += nc;
        scratch_[m++] = f;
      }
      if (chained) [[unlikely]]
        q.chained.fetch_sub(chained, std::memory_order_relaxed);
      uint32_t room = xsk_prod_nb_free(&tx, need);
      // TX ring full: reclaim completions, kick, retry; then drop what is left.
      for (uint32_t r = 0; room < need && r < cfg_.tx_retries; r++) {
        reap(q, pool);
        kick(q);
        room = xsk_prod_nb_free(&tx, need);
      }
      // The frames whose chunks all fit, in order.
      uint32_t k = m, descs = need;
      if (room < need) [[unlikely]] {
        for (k = descs = 0; k < m; k++) {
          const uint32_t nc = chunks(scratch_[k]);
          if (descs + nc > room) break;
          descs += nc;
        }
      }
      if (k) {
        uint32_t idx = 0;
        xsk_ring_prod__reserve(&tx, descs, &idx);
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < k; i++) {
          Frame* f = scratch_[i];
          bytes += wireLen(f);
          // A chain is dissolved here: the kernel completes each chunk.
          for (Frame* b = f; b;) {
            Frame* next = b->next;
            struct xdp_desc* d = xsk_ring_prod__tx_desc(&tx, idx++);
            d->addr = b->addr;
            d->len = b->len;
            d->options = next ? kXdpPktContd : 0;
            b->owner = s.tag();
            b->next = nullptr;
            b->more = 0;
            b = next;
          }
        }
        xsk_ring_prod__submit(&tx, descs);
        // Counted when put on the TX ring, not at completion.
        c[kTxPackets].add(k);
        c[kTxBytes].add(bytes);
        q.tx_submitted += descs;
        qsent += k;
      }
      for (uint32_t i = k; i < m; i++) {
        c.drops[kDropTxRingFull].add(1);
        pool.free(scratch_[i]);
      }
      if (n < batch) break;
    }
    if (qsent && (!s.zerocopy() || xsk_ring_prod__needs_wakeup(&tx))) kick(q);
    sent += qsent;
  }
  bool busy = false;
  for (auto& qp : queues_) busy |= qp->tx_submitted != qp->tx_completed || qp->ring.size() != 0;
  tx_busy_ = busy;
  return sent;
}

PortCounterSnapshot Port::snapshot() const {
  PortCounterSnapshot s;
  for (uint32_t t = 0; t < kMaxThreads; t++) s += counters_[t].snapshot();
  return s;
}

uint64_t Port::txOutstanding() const {
  uint64_t n = 0;
  for (auto& q : queues_) n += q->tx_submitted - q->tx_completed;
  return n;
}

QueueAccounting Port::accounting() const {
  QueueAccounting a;
  for (auto& qp : queues_) {
    const Queue& q = *qp;
    a.port_ring += q.ring.size() + q.chained.load(std::memory_order_relaxed);
    if (!q.xsk) continue;
    const XskSocket& s = *q.xsk;
    // Read downstream rings first: a frame the kernel moves between two reads
    // is then seen in "kernel", never counted twice or missed.
    uint64_t rx = s.rxRingCount();
    uint64_t fill = s.fillRingCount();
    a.rx_ring += rx;
    a.fill_ring += fill;
    a.kernel_rx += (q.fill_given - q.rx_got) - rx - fill;
    uint64_t comp = s.compRingCount();
    uint64_t tx = s.txRingCount();
    a.comp_ring += comp;
    a.tx_ring += tx;
    a.kernel_tx += (q.tx_submitted - q.tx_completed) - comp - tx;
  }
  return a;
}

void Port::addLimitDrops(const LimitDrops& d) {
  PortCounters& c = counters();
  for (const LimitDropRow& r : kLimitDropRows) c[r.counter].add(d.*r.count);
}

void Port::applyHost(TcPath* tc) {
  if (cfg_.punt || !ifindex_) return;
  if (hook_ == PortHook::kTc) {
    if (tc_attached_) cfg_.tc->setHostPort(index_, carries_host_);
    return;
  }
  if (!xdp_) return;
  if (carries_host_ && tc && !copy_tc_) {
    if (Status st = tc->attachCopy(index_, ifindex_, name_, cfg_.limits); st) {
      copy_tc_ = tc;
    } else if (!std::exchange(copy_warned_, true)) {
      std::fprintf(stderr,
                   "vdevd: port %s: the host's frames that the guests need too (gratuitous ARP, Router "
                   "Advertisements, broadcast DHCP replies) are switched, not given to the host: %s\n",
                   name_.c_str(), st.error().message().c_str());
    }
  } else if (!carries_host_ && copy_tc_) {
    addLimitDrops(copy_tc_->detachCopy(index_));
    copy_tc_ = nullptr;
  }
  (void)xdp_->setPortFlags(carries_host_ ? VDEV_PORT_HOST | (copy_tc_ ? VDEV_PORT_COPY : 0u) : 0u);
}

Status Port::setLimits(const PortLimits& l) {
  // The program's limits are one map element, replaced whole or not at
  // all: vdevd's copy changes only once the program has the new ones, so a
  // failure leaves the port as it was, in both.
  Status st;
  if (xdp_ && !cfg_.punt) st = xdp_->setLimits(l);
  else if (tc_attached_) st = cfg_.tc->setLimits(index_, l);
  if (!st) return st;
  // The copy program's row: storm control of the guests' copies. (Its
  // buckets are refilled whole, as the program's are, whatever happens.)
  if (copy_tc_)
    if (Status cs = copy_tc_->setLimits(index_, l); !cs)
      std::fprintf(stderr, "vdevd: port %s: the copies of the host's frames keep their old limits: %s\n",
                   name_.c_str(), cs.error().message().c_str());
  cfg_.limits = l;
  vlan_on_ = l.vlan.configured();
  unknown_credit_ns_ = 0;  // a full bucket at the next flood
  unknown_last_ns_ = 0;
  return {};
}

void Port::detachXdp() {
  if (xdp_) xdp_->detach();
  if (tc_attached_) cfg_.tc->detach(index_);
  tc_attached_ = false;
  if (copy_tc_) addLimitDrops(copy_tc_->detachCopy(index_));
  copy_tc_ = nullptr;
}

bool Port::refreshPeerNetns() {
  bool elsewhere = false;
  if (isVeth() || isNetkit()) {
    // IFLA_LINK_NETNSID: sent only while the peer is in another namespace.
    // A failed query keeps the plain redirect, which works wherever the
    // peer is (through the peer's backlog).
    auto l = rtnl::getLink(name_);
    elsewhere = l.ok() && l->linkElsewhere;
  }
  return std::exchange(redirect_peer_, elsewhere) != elsewhere;
}

std::string Port::linkNote() const {
  if (link_.state() != LinkState::kAbsent) return {};
  std::string n;
  if (cfg_.identity)
    n = "waits for its own device: " + std::string(cfg_.identity->tap ? "a tap" : cfg_.identity->netkit ? "a netkit" : "a veth") + " named " + name_ +
        " with alias '" + cfg_.identity->alias + "'";
  else
    n = "waits for a device named " + name_;
  if (refused_ifindex_) n += "; not " + name_ + " (ifindex " + std::to_string(refused_ifindex_) + "): " + refused_why_;
  return n;
}

void Port::forgetProgram() {
  if (xdp_) xdp_->forget();
  if (tc_attached_) cfg_.tc->forget(index_);
  tc_attached_ = false;
  if (copy_tc_) addLimitDrops(copy_tc_->forgetCopy(index_));
  copy_tc_ = nullptr;
}

uint32_t Port::shutdown(FramePool& pool) noexcept {
  link_.closed();
  uint32_t returned = 0;
  Counter& down = counters().drops[kDropPortDown];
  for (auto& qp : queues_) {
    Queue& q = *qp;
    uint32_t n;
    while ((n = q.ring.consumeBatch(std::span<Frame*>(scratch_.data(), scratch_.size()))) > 0) {
      down.add(n);
      for (uint32_t i = 0; i < n; i++) returned += chunks(scratch_[i]);
      pool.freeBulk(std::span<Frame* const>(scratch_.data(), n));
    }
    q.chained.store(0, std::memory_order_relaxed);
    if (!q.xsk) continue;
    reap(q, pool);
    // Frames still on the TX ring were never taken by the kernel: lost here,
    // counted. (Nothing kicks this socket any more, so the count is exact.)
    const uint32_t descs = q.xsk->txRingCount();
    uint32_t unsent = 0;
    if (descs) {
      // Counted as transmitted when drainTx put them there: one outcome
      // each. A frame is unsent if its last chunk's descriptor is (one
      // without kXdpPktContd); the kernel drops a chain it did not finish.
      uint64_t bytes = 0;
      struct xsk_ring_prod& tx = q.xsk->tx();
      const uint32_t cons = *tx.consumer;
      for (uint32_t i = 0; i < descs; i++) {
        const struct xdp_desc* d = xsk_ring_prod__tx_desc(&tx, cons + i);
        bytes += d->len;
        unsent += !(d->options & kXdpPktContd);
      }
      counters()[kTxPackets].add(uint64_t(0) - unsent);
      counters()[kTxBytes].add(uint64_t(0) - bytes);
    }
    down.add(unsent);
    addXdpStats(xdp_closed_, q.xsk->stats());  // kept: the socket's counters die with it
    if (xdp_) (void)xdp_->clearSocket(q.xsk->queue());
    // Frames the kernel put on the RX ring that vdevd never took die with
    // the socket: for the port they are frames dropped on the way in, so
    // they join the socket's rx_dropped (never vdevd's rx: vdevd never had
    // them). (The program no longer redirects to this socket; a frame
    // already in flight on another CPU may still land after this read.)
    xdp_closed_.rx_dropped += q.xsk->rxRingCount();
    // Once the socket is closed the kernel no longer touches its rings; every
    // frame still tagged with it (fill ring, RX ring, TX ring, in flight) is
    // ours, and close() returns them before its tag can be taken again.
    if (cfg_.held && (q.xsk->zerocopy() || cfg_.hold_copy_mode))
      cfg_.held->hold(*q.xsk, ifindex_);  // until the kernel releases the queue
    else
      returned += q.xsk->close();
    q.xsk.reset();
    q.fill_given = q.rx_got = 0;
    q.fill_target = q.fill_extra = 0;
    q.tx_submitted = q.tx_completed = 0;
  }
  return returned;
}

}  // namespace vdev::datapath
