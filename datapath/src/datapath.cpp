#include "datapath/datapath.h"

#include "vdev_xdp_shared.h"

#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace vdev::datapath {

namespace {

constexpr uint64_t kHousekeepingNs = 100ull * 1000 * 1000;  // dead-device checks, lazy reaping
// A link that comes back within moments of going down finds its queues still
// held by the sockets vdevd closed: the kernel releases a socket's buffer
// pool from a work item after close() (it needs the RTNL), and until then a
// new bind to the queue fails with EBUSY -- on 13 of 20 quick flaps here,
// for up to two 100 ms housekeeping rounds. vdevd retries every
// kRelinkRetryNs instead, silently for kRelinkQuietNs; an EBUSY that lasts
// longer is a real conflict (another AF_XDP socket) and is reported.
constexpr uint64_t kRelinkRetryNs = 2ull * 1000 * 1000;
constexpr uint64_t kRelinkQuietNs = 1000ull * 1000 * 1000;
constexpr uint64_t kMtuRefreshNs = 1000ull * 1000 * 1000;
constexpr uint32_t kEthHlen = 14;
constexpr uint32_t kVlanHlen = 4;

// Doorbell notifier of every delivery ring: wakes the owner thread's poll().
void notifyDatapath(void* ctx) {
  uint64_t one = 1;
  ssize_t rc = ::write(*static_cast<int*>(ctx), &one, sizeof one);
  (void)rc;  // EAGAIN: the counter is saturated, and the fd is readable anyway
}

uint32_t readSysfsU32(const std::string& path, uint32_t dflt) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (in >> v) return uint32_t(v);
  return dflt;
}

// Longest frame a port may transmit: its MTU plus the Ethernet header, plus
// a VLAN tag when the frame carries one.
inline uint32_t maxFrameLen(const Port& p, const uint8_t* data) {
  uint16_t type = uint16_t(data[12] << 8 | data[13]);
  return p.mtu() + kEthHlen + ((type == 0x8100 || type == 0x88a8) ? kVlanHlen : 0);
}

}  // namespace

uint64_t monotonicNs() noexcept {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

Result<std::unique_ptr<Datapath>> Datapath::create(const DatapathConfig& cfg) {
  if (cfg.port.batch == 0 || cfg.port.batch > 256) return Error{EINVAL, "batch size must be 1..256"};
  auto pool = FramePool::create(cfg.frames, cfg.frame_size);
  if (!pool) return pool.error();
  if (cfg.max_inflight && cfg.max_inflight < cfg.port.batch)
    return Error{EINVAL, "max in-flight frames per port (" + std::to_string(cfg.max_inflight) +
                             ") must be at least the batch size (" + std::to_string(cfg.port.batch) + ")"};
  std::unique_ptr<Datapath> dp(new Datapath(cfg, std::move(pool.value())));
  if (cfg.fast_path && cfg.mode == SwitchMode::kSwitch) {
    auto fp = FastPath::create(dp->fdb_.capacity());
    if (fp) {
      dp->fast_ = std::move(fp.value());
      dp->cfg_.port.fast = dp->fast_.get();
      dp->fdb_.enableJournal(4096);
    } else if (cfg.fast_path_required) {
      return Error{fp.error().err, "kernel fast path: " + fp.error().what};
    } else {
      std::fprintf(stderr, "vdevd: warning: no kernel fast path (%s); every frame goes through vdevd\n",
                   fp.error().message().c_str());
    }
  }
  dp->cfg_.fast_path = dp->fast_ != nullptr;
  dp->wake_fd_ = FileDesc(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!dp->wake_fd_.valid()) return errnoError("eventfd");
  dp->wake_fd_raw_ = dp->wake_fd_.get();
  dp->ctl_sock_ = FileDesc(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!dp->ctl_sock_.valid()) return errnoError("socket for link state");
  return dp;
}

Datapath::Datapath(const DatapathConfig& cfg, std::unique_ptr<FramePool> pool)
    : cfg_(cfg),
      pool_(std::move(pool)),
      fdb_(cfg.fdb_size, cfg.fdb_ageing_ns, cfg.fdb_max_per_port, cfg.fdb_hold_ns),
      burst_(cfg.port.batch) {
  if (cfg_.max_inflight == 0) cfg_.max_inflight = std::max(cfg_.frames / 4, cfg_.port.batch);
  refreshHostMacKeys();
}

Datapath::~Datapath() {
  stop();
  teardown();
}

void Datapath::rebuildActive() {
  active_.clear();
  for (auto& p : ports_)
    if (p) active_.push_back(p.get());
}

void Datapath::adoptPort(std::unique_ptr<Port> p) {
  for (auto& q : p->queues()) q->ring.setNotifier(notifyDatapath, &wake_fd_raw_);
  const size_t slot = p->index();
  if (slot >= ports_.size()) {
    ports_.resize(slot + 1);
    pending_.resize(slot + 1);
    pending_n_.resize(slot + 1, 0);
  }
  pending_[slot].assign(cfg_.port.batch, nullptr);
  pending_n_[slot] = 0;
  ports_[slot] = std::move(p);
  rebuildActive();
}

Port* Datapath::findPort(const std::string& name) const {
  for (Port* p : active_)
    if (p->name() == name) return p;
  return nullptr;
}

Status Datapath::addPortNow(const std::string& ifname, const PortOptions& opts) {
  if (findPort(ifname)) return Error{EEXIST, "port " + ifname + " is already attached"};
  if (cfg_.mode == SwitchMode::kXconnect && active_.size() >= 2)
    return Error{ENOSPC, "xconnect mode takes exactly two ports"};
  // The lowest free slot: port numbers stay small and FDB entries of a
  // removed port were flushed with it.
  size_t slot = 0;
  while (slot < ports_.size() && ports_[slot]) slot++;
  if (slot >= 0xfff0) return Error{ENOSPC, "too many ports"};
  if (fast_) {
    if (slot >= fast_state_.size()) {
      fast_state_.resize(slot + 1, 0);
      fast_refused_.resize(slot + 1, 0);
    }
    fast_state_[slot] = 0;
    fast_refused_[slot] = 0;
    fast_->reset(uint16_t(slot));  // the slot's fast-path counters start at 0 for its new port
    if (slot < fast_dev_base_.size()) fast_dev_base_[slot] = FastDevBase{};
  }
  PortConfig pc = cfg_.port;
  if (opts.queues) pc.queues = *opts.queues;
  if (opts.xdp_mode) pc.xdp_mode = *opts.xdp_mode;
  if (opts.fast_rx) pc.fast_rx = *opts.fast_rx;
  if (opts.allow_absent && !::if_nametoindex(ifname.c_str())) {
    // Configured, device not there: a port that waits for it (checkLink).
    auto shell = Port::absent(ifname, uint16_t(slot), pc, cfg_.host_macs);
    if (!shell) return shell.error();
    adoptPort(std::move(shell.value()));
    std::fprintf(stderr, "vdevd: port %s: no such device yet; attached when it appears\n", ifname.c_str());
    return {};
  }
  auto port = Port::open(ifname, uint16_t(slot), *pool_, pc, cfg_.host_macs, anyLiveSocket(), next_slot_);
  if (!port) return port.error();
  adoptPort(std::move(port.value()));
  Port& np = *ports_[slot];
  for (auto& q : np.queues()) refill(*q);
  if (np.unboundQueues())
    std::fprintf(stderr, "vdevd: port %s: the device has %zu of the port's %zu queues; the others are bound as they appear\n",
                 ifname.c_str(), np.queues().size() - np.unboundQueues(), np.queues().size());
  // Link state now, not at the next housekeeping: a tap without a reader
  // (no carrier) is reported down from the first `port show`.
  checkLink(np);
  refreshHostAddrs();
  return {};
}

Status Datapath::removePortNow(const std::string& ifname) {
  Port* p = findPort(ifname);
  if (!p) return Error{ENOENT, "no port " + ifname};
  const uint16_t slot = p->index();
  // Frames already collected for it this burst are flushed by now (control
  // requests run between bursts); its rings and sockets give everything back.
  p->detachXdp();
  p->shutdown(*pool_);
  syncFastPort(*p);
  fdb_.flushPort(slot);
  removed_ += portSnapshot(*p);  // its counters stay in the totals
  removed_ports_++;
  ports_[slot].reset();
  rebuildActive();
  return {};
}

Status Datapath::addPort(const std::string& ifname) { return addPort(ifname, PortOptions{}); }

Status Datapath::addPort(const std::string& ifname, const PortOptions& opts) {
  Status st;
  runOnDatapath([&] { st = addPortNow(ifname, opts); });
  return st;
}

Status Datapath::removePort(const std::string& ifname) {
  Status st;
  runOnDatapath([&] { st = removePortNow(ifname); });
  return st;
}

// Runs fn on the datapath thread between two bursts (or here, when the thread
// is not running) and returns when it has run. Control path only: fn may
// allocate, log, and make syscalls; traffic waits meanwhile (the rings
// absorb a short pause).
void Datapath::runOnDatapath(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> caller(call_mu_);  // one request at a time
  if (!running_) {
    fn();
    return;
  }
  std::unique_lock<std::mutex> lk(ctl_mu_);
  ctl_fn_ = &fn;
  ctl_done_ = false;
  ctl_req_.store(true, std::memory_order_release);  // R0 pairs with R1 in run()
  uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_.get(), &one, sizeof one);
  (void)rc;
  ctl_cv_.wait(lk, [this] { return ctl_done_; });
}

void Datapath::serveControl() {
  std::lock_guard<std::mutex> lk(ctl_mu_);
  if (ctl_fn_) (*ctl_fn_)();
  ctl_fn_ = nullptr;
  ctl_done_ = true;
  ctl_req_.store(false, std::memory_order_relaxed);
  ctl_cv_.notify_all();
}

Result<std::vector<Fdb::Entry>> Datapath::fdbDump() {
  std::vector<Fdb::Entry> out;
  runOnDatapath([&] { out = fdb_.dump(monotonicNs()); });
  return out;
}

Status Datapath::fdbAdd(const uint8_t mac[6], const std::string& port) {
  Status st;
  runOnDatapath([&] {
    Port* p = findPort(port);
    if (!p) st = Error{ENOENT, "no port " + port};
    else if (macIsMulticast(mac) || macIsZero(mac)) st = Error{EINVAL, "not a unicast MAC address"};
    else if (!fdb_.addStatic(macKey(mac), p->index())) st = Error{ENOSPC, "MAC table full"};
  });
  return st;
}

Status Datapath::fdbDel(const uint8_t mac[6]) {
  Status st;
  runOnDatapath([&] {
    if (!fdb_.remove(macKey(mac))) st = Error{ENOENT, "MAC address not in the table"};
  });
  return st;
}

void Datapath::checkLinks() {
  runOnDatapath([&] {
    for (Port* p : active_) checkLink(*p);
  });
}

bool Datapath::hasPort(const std::string& name) {
  bool found = false;
  runOnDatapath([&] { found = findPort(name) != nullptr; });
  return found;
}

std::string Datapath::portName(uint16_t slot) {
  std::string n;
  runOnDatapath([&] {
    if (slot < ports_.size() && ports_[slot]) n = ports_[slot]->name();
  });
  return n;
}

void Datapath::start() {
  if (running_) return;
  stop_.store(false, std::memory_order_relaxed);
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void Datapath::stop() {
  if (!running_) return;
  stop_.store(true, std::memory_order_release);  // S0 pairs with S1 in run()
  uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_.get(), &one, sizeof one);
  (void)rc;
  thread_.join();
  running_ = false;
}

// ---------------------------------------------------------------------------
// The datapath thread.

void Datapath::refill(Port::Queue& q) noexcept {
  if (!q.xsk) return;
  XskSocket& s = *q.xsk;
  // Keep the fill ring (twice the RX ring) full: frames in the fill ring, in
  // the kernel and on the RX ring are all "given".
  const uint64_t given = q.fill_given - q.rx_got;
  const uint32_t target = s.fill.size;
  if (given >= target) return;
  uint32_t want = uint32_t(target - given);
  if (want < cfg_.port.batch && given > 0) return;  // refill in batches
  Frame* frames[256];
  if (want > 256) want = 256;
  want = std::min(want, xsk_prod_nb_free(&s.fill, want));
  uint32_t got = pool_->allocBulk(std::span<Frame*>(frames, want));
  if (!got) return;  // pool empty: the kernel counts rx_fill_ring_empty_descs
  uint32_t idx = 0;
  xsk_ring_prod__reserve(&s.fill, got, &idx);
  for (uint32_t i = 0; i < got; i++) {
    frames[i]->owner = s.slot();
    *xsk_ring_prod__fill_addr(&s.fill, idx + i) = pool_->chunkAddr(frames[i]);
  }
  xsk_ring_prod__submit(&s.fill, got);
  q.fill_given += got;
  if (s.zerocopy() && xsk_ring_prod__needs_wakeup(&s.fill)) {
    // Zero-copy drivers may wait for a wake-up once the fill ring ran dry.
    ssize_t rc = ::recvfrom(s.fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    (void)rc;
  }
  if (got == want && q.fill_given - q.rx_got < target) refill(q);
}

uint32_t Datapath::rxBurst(Port& p, Port::Queue& q, uint64_t now_ns) noexcept {
  XskSocket& s = *q.xsk;
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&s.rx, uint32_t(burst_.size()), &idx);
  if (n == 0) {
    // Busy polling: an empty RX ring asks the kernel to run the queue's NAPI
    // here, now (one syscall per empty poll of the queue, never per frame).
    if (s.busyPoll()) {
      ssize_t rc = ::recvfrom(s.fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
      (void)rc;
    }
    return 0;
  }
  uint64_t bytes = 0;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    const struct xdp_desc* d = xsk_ring_cons__rx_desc(&s.rx, idx + i);
    Frame* f = pool_->frameAt(d->addr);
    if (!f) [[unlikely]]
      continue;  // the kernel validates addresses; cannot happen
    f->addr = d->addr;
    f->len = d->len;
    f->owner = kOwnerApp;
    f->in_port = p.index();
    bytes += d->len;
    burst_[k++] = f;
  }
  xsk_ring_cons__release(&s.rx, n);
  q.rx_got += n;
  PortCounters& c = p.counters();
  c[kRxPackets].add(n);
  c[kRxBytes].add(bytes);
  forward(p, burst_.data(), k, now_ns);
  return n;
}

void Datapath::enqueue(Port& dst, Frame* f) noexcept {
  if (f->len > maxFrameLen(dst, pool_->data(f))) [[unlikely]] {
    dst.counters().drops[kDropOversize].add(1);
    pool_->free(f);
    return;
  }
  const uint16_t i = dst.index();
  uint32_t& n = pending_n_[i];
  if (n == 0) pending_ports_.push_back(i);
  pending_[i][n++] = f;
  if (n == pending_[i].size()) {
    // A full batch goes now (no flush: more may follow in this burst).
    int rc = dst.xmitBulk(std::span<Frame* const>(pending_[i].data(), n), 0);
    if (rc < 0) [[unlikely]] {
      dst.counters().drops[kDropPortDown].add(n);
      pool_->freeBulk(std::span<Frame* const>(pending_[i].data(), n));
    }
    n = 0;  // stays in pending_ports_; flushPending rings the doorbell
  }
}

void Datapath::flushPending() noexcept {
  for (uint16_t i : pending_ports_) {
    Port& dst = *ports_[i];
    uint32_t& n = pending_n_[i];
    int rc = dst.xmitBulk(std::span<Frame* const>(pending_[i].data(), n), kXmitFlush);
    if (rc < 0) [[unlikely]] {
      // -ENXIO: the port went down; the frames come back to us.
      dst.counters().drops[kDropPortDown].add(n);
      pool_->freeBulk(std::span<Frame* const>(pending_[i].data(), n));
    }
    n = 0;
  }
  pending_ports_.clear();
}

void Datapath::forward(Port& in, Frame** frames, uint32_t n, uint64_t now_ns) noexcept {
  PortCounters& ic = in.counters();
  const uint16_t in_idx = in.index();
  for (uint32_t i = 0; i < n; i++) {
    Frame* f = frames[i];
    // Fair share: a port whose frames are still in flight up to its bound
    // (a flood towards slow destinations) gets no more of the pool.
    if (pool_->inflight(in_idx) >= cfg_.max_inflight) [[unlikely]] {
      ic.drops[kDropInflight].add(1);
      pool_->free(f);
      continue;
    }
    pool_->charge(f, in_idx);
    const uint8_t* d = pool_->data(f);
    if (f->len < kEthHlen) [[unlikely]] {
      ic.drops[kDropRunt].add(1);
      pool_->free(f);
      continue;
    }
    if (f->len > pool_->room(f)) [[unlikely]] {
      ic.drops[kDropOversize].add(1);
      pool_->free(f);
      continue;
    }
    const uint8_t* src = d + 6;
    if (macIsMulticast(src) || macIsZero(src)) [[unlikely]] {
      ic.drops[kDropInvalidSrc].add(1);
      pool_->free(f);
      continue;
    }
    // Type/length: a length (802.3) no longer than the frame, or a type.
    const uint32_t type = uint32_t(d[12]) << 8 | d[13];
    if (type < 0x0600 && (type > 1500 || type > f->len - kEthHlen)) [[unlikely]] {
      ic.drops[kDropBadType].add(1);
      pool_->free(f);
      continue;
    }
    if (cfg_.mode == SwitchMode::kXconnect) {
      // Two ports: the other one, whatever the MAC.
      Port* out = nullptr;
      if (active_.size() == 2) out = active_[0] == &in ? active_[1] : active_[0];
      if (!out) {
        ic.drops[kDropNoRoute].add(1);
        pool_->free(f);
        continue;
      }
      enqueue(*out, f);
      continue;
    }
    // A guest that sends as the host (a port's own MAC, a --host-mac) is
    // not learned: frames for the host would follow it. Its ARP and NS for
    // the host's addresses still reach the host (XDP passes those first).
    if (isHostMac(macKey(src))) [[unlikely]] {
      ic.drops[kDropInvalidSrc].add(1);
      pool_->free(f);
      continue;
    }
    switch (fdb_.learn(macKey(src), in_idx, now_ns)) {
      case Fdb::Learn::kOk:
      case Fdb::Learn::kTableFull:  // forwarded, not learned: replies are flooded
        break;
      case Fdb::Learn::kPortLimit:
        ic.drops[kDropMacLimit].add(1);
        pool_->free(f);
        continue;
      case Fdb::Learn::kLocked:
        ic.drops[kDropMacLocked].add(1);
        pool_->free(f);
        continue;
    }
    if (!macIsMulticast(d)) {
      int p = fdb_.lookup(macKey(d), now_ns);
      if (p >= 0) {
        if (p == in_idx) {
          // Destination lives behind the ingress port: nothing to do (no hairpin).
          ic.drops[kDropNoRoute].add(1);
          pool_->free(f);
        } else {
          enqueue(*ports_[size_t(p)], f);
        }
        continue;
      }
    }
    // Broadcast, multicast, unknown unicast: every other live port; the
    // original goes to the first, copies to the others.
    bool first = true;
    for (Port* pp : active_) {
      Port& out = *pp;
      if (out.index() == in_idx || !out.live()) continue;
      if (first) {
        first = false;
        continue;  // sent last, after the copies were taken from it
      }
      Frame* copy = nullptr;
      if (pool_->allocBulk(std::span<Frame*>(&copy, 1)) == 0) [[unlikely]] {
        out.counters().drops[kDropPoolEmpty].add(1);
        continue;
      }
      std::memcpy(pool_->data(copy), d, f->len);
      copy->len = f->len;
      pool_->charge(copy, in_idx);
      enqueue(out, copy);
    }
    if (first) {
      ic.drops[kDropNoRoute].add(1);
      pool_->free(f);
      continue;
    }
    for (Port* pp : active_)
      if (pp->index() != in_idx && pp->live()) {
        enqueue(*pp, f);
        break;
      }
  }
  flushPending();
}

void Datapath::killPort(Port& p, const char* why, bool forget_macs) {
  std::fprintf(stderr, "vdevd: port %s: %s; detached, its frames returned\n", p.name().c_str(), why);
  p.shutdown(*pool_);
  syncFastPort(p);
  // A link that is only down keeps its learned MACs: frames for them are
  // counted as port_down rather than flooded to every other port (another
  // guest's traffic is not theirs to see). A deleted device forgets them.
  if (forget_macs) fdb_.flushPort(p.index());
}

int Datapath::anyLiveSocket() const {
  for (Port* p : active_)
    if (p->live())
      for (auto& q : p->queues())
        if (q->xsk) return q->xsk->fd();
  return -1;
}

// Link state: a port transmits only while its device is up and has carrier
// (IFF_UP and IFF_RUNNING). A port whose link goes down is taken down like a
// deleted one -- frames for it are counted as port_down instead of being
// parked on its TX ring and delivered stale later -- and opened again when
// the link comes back. A deleted device stays down.
void Datapath::checkLink(Port& p) {
  if (p.ifindex() == 0 && !p.gone()) return;  // a port without a device (unit tests)
  checkLinkNow(p);
  syncFastPort(p);
}

void Datapath::checkLinkNow(Port& p) {
  if (p.gone()) {
    // A configured port whose device comes back (same name) is attached again.
    if (!::if_nametoindex(p.name().c_str())) return;
    if (auto st = p.attachDevice(*pool_, anyLiveSocket(), next_slot_); !st) {
      if (!p.reattachWarned()) {
        std::fprintf(stderr, "vdevd: port %s: device is back, but: %s\n", p.name().c_str(),
                     st.error().message().c_str());
        p.setReattachWarned(true);
      }
      return;
    }
    p.setReattachWarned(false);
    for (auto& q : p.queues()) refill(*q);
    std::fprintf(stderr, "vdevd: port %s: device is back (ifindex %d); attached again\n",
                 p.name().c_str(), p.ifindex());
    return;
  }
  const unsigned idx = ::if_nametoindex(p.name().c_str());
  int err = 0;
  if (p.live())
    for (auto& q : p.queues())
      if (q->xsk && !err) err = q->xsk->pendingError();
  if (idx != unsigned(p.ifindex()) || (err && err != ENETDOWN)) {
    p.setGone();
    if (p.xdp()) p.xdp()->forget();
    killPort(p, idx ? "device replaced" : "device gone", true);
    return;
  }
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, p.name().c_str(), IFNAMSIZ - 1);
  bool up = ::ioctl(ctl_sock_.get(), SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) &&
            (ifr.ifr_flags & IFF_RUNNING);
  if (!up) p.setRebindWaitSince(0);  // a new wait starts when the link is next up
  if (p.live() && (!up || err == ENETDOWN)) {
    killPort(p, "link down", false);
  } else if (!p.live() && up) {
    if (auto st = p.openSockets(*pool_, anyLiveSocket(), next_slot_); !st) {
      p.shutdown(*pool_);
      const uint64_t now = monotonicNs();
      if (st.error().err == EBUSY) {
        if (p.rebindWaitSince() == 0) p.setRebindWaitSince(now);
        if (now - p.rebindWaitSince() < kRelinkQuietNs) {
          if (relink_at_ns_ == 0 || relink_at_ns_ > now + kRelinkRetryNs) relink_at_ns_ = now + kRelinkRetryNs;
          return;
        }
      }
      if (!p.reattachWarned())
        std::fprintf(stderr, "vdevd: port %s: link up, but: %s\n", p.name().c_str(), st.error().message().c_str());
      p.setReattachWarned(true);
      return;
    }
    const uint64_t waited = p.rebindWaitSince() ? monotonicNs() - p.rebindWaitSince() : 0;
    p.setRebindWaitSince(0);
    p.setReattachWarned(false);
    for (auto& q : p.queues()) refill(*q);
    p.setLive(true);
    const std::string after =
        waited ? " (after " + std::to_string(waited / 1000000) + " ms for the kernel to release its old sockets)" : "";
    std::fprintf(stderr, "vdevd: port %s: link up; attached again%s\n", p.name().c_str(), after.c_str());
  }
  if (p.live() && p.unboundQueues()) {
    // A multi-queue tap grows queues as the VM opens them.
    auto n = p.bindNewQueues(*pool_, anyLiveSocket(), next_slot_);
    if (!n) {
      if (!p.reattachWarned())
        std::fprintf(stderr, "vdevd: port %s: new queue, but: %s\n", p.name().c_str(),
                     n.error().message().c_str());
      p.setReattachWarned(true);
    } else if (*n) {
      for (auto& q : p.queues()) refill(*q);
      std::fprintf(stderr, "vdevd: port %s: %u more queue(s) bound, %u of %zu still absent\n",
                   p.name().c_str(), *n, p.unboundQueues(), p.queues().size());
    }
  }
}

void Datapath::housekeeping(uint64_t now_ns) {
  last_hk_ns_ = now_ns;
  const bool mtu_time = now_ns - last_mtu_ns_ >= kMtuRefreshNs;
  if (mtu_time) {
    last_mtu_ns_ = now_ns;
    refreshHostAddrs();
    if (fast_) fastHousekeeping(now_ns);
    fdb_.expire(now_ns);  // aged-out MACs stop counting against their port's limit
  }
  for (Port* pp : active_) {
    Port& p = *pp;
    checkLink(p);
    if (!p.live()) continue;
    if (cfg_.port.completion == CompletionMode::kLazy) p.reapCompletions(*pool_);
    if (mtu_time) p.setMtu(readSysfsU32("/sys/class/net/" + p.name() + "/mtu", p.mtu()));
  }
}

void Datapath::relink() {
  relink_at_ns_ = 0;  // checkLink sets it again for a port still waiting
  for (Port* p : active_)
    if (p->rebindWaitSince() && !p->live()) checkLink(*p);
}

void Datapath::sleepUntilWork() {
  // Arm every delivery ring's doorbell; if one already holds frames, the
  // sleep is off (no lost wake-up: the ring re-checks after arming).
  std::vector<ringbuf::PtrRing<Frame>*> armed;
  bool work = false;
  for (Port* pp : active_) {
    if (!pp->live()) continue;
    for (auto& q : pp->queues()) {
      if (!q->ring.armDoorbell()) {
        work = true;
        break;
      }
      armed.push_back(&q->ring);
    }
    if (work) break;
  }
  if (!work) {
    struct pollfd fds[1 + 256];
    nfds_t n = 0;
    fds[n++] = {wake_fd_.get(), POLLIN, 0};
    for (Port* pp : active_) {
      if (!pp->live()) continue;
      for (auto& q : pp->queues())
        if (q->xsk && n < 257) fds[n++] = {q->xsk->fd(), POLLIN, 0};
    }
    int timeout_ms = int(kHousekeepingNs / 1000000);
    if (relink_at_ns_) {
      const uint64_t now = monotonicNs();
      timeout_ms = relink_at_ns_ > now ? int((relink_at_ns_ - now + 999999) / 1000000) : 0;
    }
    ::poll(fds, n, timeout_ms);
    uint64_t v;
    ssize_t rc = ::read(wake_fd_.get(), &v, sizeof v);
    (void)rc;
  }
  for (auto* r : armed) r->disarmDoorbell();
}

void Datapath::run() {
  setThreadIndex(0);
  uint64_t idle_since = 0;
  uint32_t spins = 0;
  uint64_t now = 0;
  while (!stop_.load(std::memory_order_acquire)) {  // S1 pairs with S0 in stop()
    if (ctl_req_.load(std::memory_order_acquire)) serveControl();  // R1 pairs with R0
    // The clock after work and every 16th idle spin: reading it on every
    // empty spin cost 15% of the thread when bursts come close together
    // (perf, vdev-bench); 15 spins late is well inside the idle budget.
    if ((spins & 15) == 0) now = monotonicNs();
    uint32_t work = 0;
    for (Port* pp : active_) {
      Port& p = *pp;
      if (!p.live()) continue;
      for (auto& q : p.queues())
        if (q->xsk) work += rxBurst(p, *q, now);
    }
    for (Port* pp : active_)
      if (pp->live()) work += pp->drainTx(*pool_);
    if (fast_ && fdb_.journalPending()) [[unlikely]]
      syncFastFdb(now);
    for (Port* pp : active_)
      if (pp->live())
        for (auto& q : pp->queues()) refill(*q);
    if (now - last_hk_ns_ >= kHousekeepingNs) housekeeping(now);
    if (relink_at_ns_ && now >= relink_at_ns_) [[unlikely]]
      relink();
    if (work) {
      idle_since = 0;
      spins = 0;
      continue;
    }
    if (idle_since == 0) idle_since = now;
    if (now - idle_since < cfg_.idle_spin_ns) {
      if ((++spins & 63) == 0) std::this_thread::yield();
      continue;
    }
    // Idle: reap what completed so the pool is full while we sleep.
    for (Port* pp : active_)
      if (pp->live()) pp->reapCompletions(*pool_);
    sleepUntilWork();
    idle_since = 0;
    spins = 0;  // the clock is read again first thing
  }
  if (ctl_req_.load(std::memory_order_acquire)) serveControl();
}

void Datapath::refreshHostMacKeys() {
  host_mac_keys_.clear();  // keeps its capacity: no allocation once the ports are there
  for (const auto& m : cfg_.host_macs) host_mac_keys_.push_back(macKey(m.data()));
  for (const Port* p : active_)
    if (!macIsZero(p->mac())) host_mac_keys_.push_back(macKey(p->mac()));
  std::sort(host_mac_keys_.begin(), host_mac_keys_.end());
  host_mac_keys_.erase(std::unique(host_mac_keys_.begin(), host_mac_keys_.end()), host_mac_keys_.end());
}

bool Datapath::isHostMac(uint64_t key) const noexcept {
  return !host_mac_keys_.empty() && std::binary_search(host_mac_keys_.begin(), host_mac_keys_.end(), key);
}

void Datapath::refreshHostAddrs() {
  refreshHostMacKeys();  // a port added, removed or re-created: its MAC with it
  struct ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;  // kept as they were; tried again in a second
  for (Port* pp : active_) {
    if (!pp->xdp()) continue;
    std::vector<uint32_t> addrs;
    std::vector<std::array<uint8_t, 16>> addrs6;
    for (struct ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_addr || !a->ifa_name || pp->name() != a->ifa_name) continue;
      if (a->ifa_addr->sa_family == AF_INET) {
        addrs.push_back(reinterpret_cast<const struct sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        std::array<uint8_t, 16> v6;
        std::memcpy(v6.data(), &reinterpret_cast<const struct sockaddr_in6*>(a->ifa_addr)->sin6_addr, 16);
        addrs6.push_back(v6);
      }
    }
    std::sort(addrs.begin(), addrs.end());
    if (addrs.size() > VDEV_XDP_MAX_HOST_IPS) addrs.resize(VDEV_XDP_MAX_HOST_IPS);
    (void)pp->xdp()->setHostIpv4(addrs);
    std::sort(addrs6.begin(), addrs6.end());
    if (addrs6.size() > VDEV_XDP_MAX_HOST_IPS) addrs6.resize(VDEV_XDP_MAX_HOST_IPS);
    (void)pp->xdp()->setHostIpv6(addrs6);
  }
  ::freeifaddrs(list);
}

// ---------------------------------------------------------------------------
// The kernel fast path (fast_path.h).

void Datapath::syncFastPort(Port& p) {
  if (!fast_) return;
  const uint16_t slot = p.index();
  if (slot >= fast_state_.size()) {
    fast_state_.resize(slot + 1, 0);
    fast_refused_.resize(slot + 1, 0);
  }
  uint8_t& st = fast_state_[slot];
  bool want = p.live() && st != 2;
  if (want && st == 0) {
    // Only a device that takes redirected frames now: a tap, a veth whose
    // container end has NAPI. Checked again every second (GRO may change).
    auto takes = deviceTakesXdpFrames(p.ifindex());
    if (!takes || !*takes) {
      if (!p.fastWarned())
        std::fprintf(stderr, "vdevd: port %s: not on the kernel fast path: %s\n", p.name().c_str(),
                     takes ? "the device takes no redirected XDP frames (a veth: turn GRO on in the "
                             "container, e.g. 'ethtool -K eth0 gro on')"
                           : takes.error().message().c_str());
      p.setFastWarned(true);
      return;
    }
    p.setFastWarned(false);
    if (auto r = fast_->enablePort(slot, p.ifindex()); r) {
      st = 1;
    } else {
      std::fprintf(stderr, "vdevd: port %s: not on the kernel fast path: %s\n", p.name().c_str(),
                   r.error().message().c_str());
      st = 2;
    }
  } else if (!want && st == 1) {
    fast_->disablePort(slot, p.ifindex());
    st = 0;
  }
}

// MAC table changes since the last sync go to the kernel's copy. A station
// moved, aged out or removed stops being fast-pathed at once.
void Datapath::syncFastFdb(uint64_t now_ns) {
  if (fdb_.journalOverflowed()) {
    fast_->clear();
    for (const Fdb::Entry& e : fdb_.dump(now_ns)) (void)fast_->set(e.mac, e.port, now_ns);
  } else {
    for (uint64_t mac : fdb_.journal()) {
      const int port = fdb_.lookup(mac, now_ns);
      if (port >= 0)
        (void)fast_->set(mac, uint16_t(port), now_ns);
      else
        fast_->erase(mac);
    }
  }
  fdb_.clearJournal();
}

void Datapath::fastHousekeeping(uint64_t now_ns) {
  // Stations that talk only through the kernel are seen there: keep their
  // entries from ageing (and held against moves).
  fast_->forEach([&](uint64_t mac, uint16_t slot, uint64_t seen) { fdb_.touch(mac, slot, seen); });
  (void)now_ns;
  // A device that stopped taking redirected frames (a container turned GRO
  // off) leaves the fast path; frames it refused meanwhile were counted as
  // fast_xmit drops. One that can take them (GRO turned on) joins.
  for (Port* pp : active_) {
    const uint16_t slot = pp->index();
    if (slot >= fast_state_.size() || !pp->live()) continue;
    uint64_t& seen = fast_refused_[slot];
    const uint64_t refused = fast_->read(slot).refused;
    auto takes = deviceTakesXdpFrames(pp->ifindex());
    const bool ok = takes && *takes && refused == seen;
    seen = refused;
    if (fast_state_[slot] == 1 && !ok) {
      fast_->disablePort(slot, pp->ifindex());
      fast_state_[slot] = 0;
      std::fprintf(stderr, "vdevd: port %s: the device refuses redirected XDP frames now; off the kernel fast path\n",
                   pp->name().c_str());
    } else if (fast_state_[slot] == 0) {
      syncFastPort(*pp);
    }
  }
}

// ---------------------------------------------------------------------------
// Shutdown.

uint32_t Datapath::teardown() {
  if (running_) stop();
  if (torn_down_ || active_.empty()) return 0;
  torn_down_ = true;
  // 1. No new frames: detach the programs (XDP now drops nothing of ours,
  //    the device behaves as before vdevd).
  for (Port* pp : active_) pp->detachXdp();
  // 2. Forward what the kernel already put on the RX rings, and let TX finish
  //    (bounded: a device that stopped completing must not hang shutdown).
  const uint64_t deadline = monotonicNs() + 200ull * 1000 * 1000;
  for (;;) {
    const uint64_t now = monotonicNs();
    uint32_t work = 0;
    for (Port* pp : active_) {
      if (!pp->live()) continue;
      for (auto& q : pp->queues())
        if (q->xsk) work += rxBurst(*pp, *q, now);
    }
    uint64_t pending = 0;
    for (Port* pp : active_) {
      if (!pp->live()) continue;
      work += pp->drainTx(*pool_);
      pp->reapCompletions(*pool_);
      pending += pp->txOutstanding();
      for (auto& q : pp->queues()) pending += q->ring.size();
    }
    if ((!work && !pending) || now > deadline) break;
    if (!work) ::usleep(1000);
  }
  // 3. Close the sockets; every frame comes back.
  for (Port* pp : active_) pp->shutdown(*pool_);
  // The ports stay (down, without sockets) so final statistics can be read.
  return pool_->total() - pool_->available();
}

}  // namespace vdev::datapath
