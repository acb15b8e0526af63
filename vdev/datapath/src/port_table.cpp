// The port table (PortTable, port_table.h) and the Datapath's ports going
// in and out of it: adding (a device, or a name waiting for its device),
// adopting (tests), removing.
#include "datapath/port_table.h"

#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "datapath/datapath.h"

namespace vdev::datapath {

namespace {

// The punt device's far end: a port of the datapath's own, outside the
// port table (its index names no port: frames it receives are the ports').
constexpr uint16_t kPuntIndex = 0xfffe;

// An skb source (skbSource) -- or a name without a device yet, most likely
// one (a container's or a VM's port restored at start).
bool wantsSkbPath(const std::string& ifname, const XdpFeatures& features) {
  if (!::if_nametoindex(ifname.c_str())) return true;
  return skbSource(ifname, deviceDriver(ifname), features);
}

// Doorbell notifier of every delivery ring: wakes the owner thread's poll().
void notifyDatapath(void* ctx) {
  uint64_t one = 1;
  ssize_t rc = ::write(*static_cast<int*>(ctx), &one, sizeof one);
  (void)rc;  // EAGAIN: the counter is saturated, and the fd is readable anyway
}

}  // namespace

Port* PortTable::find(const std::string& name) const noexcept {
  for (Port* p : active_)
    if (p->name() == name) return p;
  return nullptr;
}

size_t PortTable::freeIndex() const noexcept {
  size_t i = 0;
  while (i < by_index_.size() && by_index_[i]) i++;
  return i;
}

void PortTable::put(std::unique_ptr<Port> p) {
  const size_t i = p->index();
  if (i >= by_index_.size()) by_index_.resize(i + 1);
  by_index_[i] = std::move(p);
  rebuildActive();
}

void PortTable::remove(size_t index) {
  by_index_[index].reset();
  rebuildActive();
}

void PortTable::rebuildActive() {
  active_.clear();
  for (auto& p : by_index_)
    if (p) active_.push_back(p.get());
}

void Datapath::adoptPort(std::unique_ptr<Port> p) {
  for (auto& q : p->queues()) q->ring.setNotifier(notifyDatapath, &wake_fd_raw_);
  batches_.openPort(p->index());
  ports_.put(std::move(p));
}

Status Datapath::addPortNow(const std::string& ifname, const PortOptions& opts) {
  if (ports_.find(ifname)) return Error{EEXIST, "port " + ifname + " is already attached"};
  if (cfg_.mode == SwitchMode::kXconnect && ports_.size() >= 2)
    return Error{ENOSPC, "xconnect mode takes exactly two ports"};
  const size_t index = opts.index ? *opts.index : ports_.freeIndex();
  if (index >= PortTable::kMaxPorts) return Error{ENOSPC, "too many ports"};
  if (ports_.get(index)) return Error{EEXIST, "port index " + std::to_string(index) + " is taken"};
  // Its fast-path counters start at 0.
  fdb_.setPortGroup(uint16_t(index), opts.fdb_group);  // it holds no entry yet (removal flushed them)
  {
    const VlanConfig vlan = opts.limits.over(cfg_.limits).vlan;
    fast_sync_.resetPort(uint16_t(index), opts.isolated, untaggedVid(vlan),
                         vlan.configured() ? vlan.tagged : VidSet());
  }
  if (tc_) tc_->resetCounters(uint16_t(index));  // and the skb programs' (its program, or its copies)
  PortConfig pc = cfg_.port;
  if (opts.queues) pc.queues = *opts.queues;
  if (opts.xdp_mode) pc.xdp_mode = *opts.xdp_mode;
  if (opts.fast_rx) pc.fast_rx = *opts.fast_rx;
  if (opts.hook) pc.hook = *opts.hook;
  // A netkit takes its skb program only, whatever the default (Port).
  if (deviceDriver(ifname) == "netkit") pc.hook = PortHook::kTc;
  pc.peer_napi = opts.peer_napi;
  pc.identity = opts.identity;
  pc.isolated = opts.isolated;
  pc.limits = opts.limits.over(cfg_.limits);
  // The skb path is set up with the first port that wants it: a veth or a
  // tap (kAuto), or any port asked to use it (kTc). A port that only might
  // (kAuto) attaches at XDP when it cannot be had, with a warning.
  if (pc.hook == PortHook::kTc || (pc.hook == PortHook::kAuto && wantsSkbPath(ifname, features_))) {
    if (Status st = ensureTcPath(); !st) {
      if (pc.hook == PortHook::kTc) return Error{st.error().err, "port " + ifname + ": " + st.error().what};
      if (!std::exchange(tc_warned_, true))
        std::fprintf(stderr, "vdevd: warning: no skb path (%s); veths and taps attach at XDP\n",
                     st.error().message().c_str());
    }
  }
  pc.tc = tc_.get();
  // Whether it will receive on its own sockets (the XDP hook): then it needs
  // its fill-ring floor from the pool, or it would be attached dead.
  // (kAuto beyond the skb path's tables: at XDP, see PortHook.)
  const bool at_tc = tc_ && (pc.hook == PortHook::kTc ||
                             (pc.hook == PortHook::kAuto && index < kFastPathPorts && wantsSkbPath(ifname, features_)));
  if (!at_tc)
    if (Status st = fill_.checkRoom(ifname, pc); !st) return st;
  // A device vdev made for the port: the one of its name must be it.
  int foreign = 0;
  std::string foreign_why;
  if (const int idx = int(::if_nametoindex(ifname.c_str())); idx && pc.identity)
    if (Status own = deviceIsOwn(ifname, idx, *pc.identity); !own) {
      if (!opts.allow_absent)
        return Error{own.error().err, "port " + ifname + ": the device of that name (ifindex " + std::to_string(idx) +
                                          ") is not the one vdev made for it: " + own.error().what};
      foreign = idx;
      foreign_why = own.error().what;
    }
  if (opts.allow_absent && (foreign || !::if_nametoindex(ifname.c_str()))) {
    // Configured, device not there (or not its own): a port that waits for it (checkLink).
    auto shell = Port::absent(ifname, uint16_t(index), pc, cfg_.host_macs);
    if (!shell) return shell.error();
    if (foreign) (*shell)->refuseDevice(foreign, foreign_why);
    adoptPort(std::move(shell.value()));
    if (foreign)
      std::fprintf(stderr, "vdevd: port %s: the device of that name (ifindex %d) is not its own (%s); it waits for its own\n",
                   ifname.c_str(), foreign, foreign_why.c_str());
    else
      std::fprintf(stderr, "vdevd: port %s: no such device yet; attached when it appears\n", ifname.c_str());
    return {};
  }
  auto port = Port::open(ifname, uint16_t(index), *pool_, pc, cfg_.host_macs, anchors());
  if (!port) return port.error();
  if (at_tc && (*port)->hook() == PortHook::kXdp) {
    // `auto` took it to XDP (its tc attach failed): it receives on its own
    // sockets now, and needs the floor it was not asked for above.
    if (Status st = fill_.checkRoom(ifname, pc); !st) {
      (*port)->detachXdp();
      (*port)->shutdown(*pool_);
      return Error{st.error().err, st.error().what + " (" + (*port)->hookNote() + ")"};
    }
  }
  adoptPort(std::move(port.value()));
  Port& np = *ports_[index];
  for (auto& q : np.queues()) refill(*q);
  if (np.unboundQueues())
    std::fprintf(stderr, "vdevd: port %s: the device has %zu of the port's %zu queues; the others are bound as they appear\n",
                 ifname.c_str(), np.queues().size() - np.unboundQueues(), np.queues().size());
  // Link state now, not at the next housekeeping: a tap without a reader
  // (no carrier) is reported down from the first `port show`.
  checkLink(np);
  host_.refresh(cfg_.host_macs, ports_.active(), tc_.get());
  syncHostPorts();
  // An MTU above what vdevd's own path holds is not refused (the fast path
  // carries it, and the MTU may change at any time) but said once here; the
  // frames vdevd cannot hold are counted (oversize, or the kernel's
  // xdp_stats.rx_dropped at the XDP hook). On the skb path the punt device
  // sets the limit, and TCP through it has its MSS lowered to fit. With
  // multi-buffer an XDP port's frames are chains of up to kMaxChain chunks.
  const bool tc = np.hook() == PortHook::kTc && punt_dev_;
  const bool mb = (tc ? *punt_ : np).multiBuffer();
  const uint32_t chunk_room = pool_->frameSize() - kTxHeadroom;
  const uint32_t room = tc ? punt_dev_->mtu() : (mb ? kMaxChain * chunk_room : chunk_room) - 14;
  if (np.mtu() > room)
    std::fprintf(stderr,
                 "vdevd: warning: port %s: MTU %u is above the %u bytes vdevd's own path carries%s: "
                 "%slonger frames cross only on the kernel fast path (learned unicast%s); the others are "
                 "dropped and counted\n",
                 ifname.c_str(), np.mtu(), room,
                 mb ? "" : " without AF_XDP multi-buffer (XDP_USE_SG, Linux 6.6)",
                 tc ? "TCP through it has its MSS lowered to fit; other " : "",
                 tc ? "" : ", XDP ports whose device takes redirected frames");
  return {};
}

Status Datapath::removePortNow(const std::string& ifname) {
  Port* p = ports_.find(ifname);
  if (!p) return Error{ENOENT, "no port " + ifname};
  const uint16_t index = p->index();
  if (Capture* cap = p->capture()) {
    cap->end();  // the reader takes what it holds, and hears the port is gone
    detachCapture(*p, /*removing=*/true);
  }
  // Frames already collected for it this burst are flushed by now (control
  // requests run between bursts); its rings and sockets give everything back.
  p->detachXdp();
  p->shutdown(*pool_);
  fast_sync_.syncPort(*p);
  fdb_.flushPort(index);
  removed_ += portSnapshot(*p);  // its counters stay in the totals
  removed_ports_++;
  ports_.remove(index);
  fill_.noteClosed();  // its fill rings' frames are back
  return {};
}

Status Datapath::ensureTcPath() {
  if (tc_) return {};
  auto tc = TcPath::create(fast_.get(), cfg_.tc_attach, uint32_t(PortTable::kMaxPorts + cfg_.host_macs.size()));
  if (!tc) return tc.error();
  // The pair's MTU: what the punt socket takes. With multi-buffer
  // (XDP_USE_SG, its registration's) a frame is a chain of chunks, and the
  // pair takes jumbo frames (kPuntJumboMtu; the far end's program is
  // frags-aware). Without, a frame must fit one UMEM frame with its tag:
  // the room after the kernel's headroom, less the Ethernet and tag
  // headers, and at most what veth gives a native XDP program without
  // frags, a page less its XDP headroom, the skb_shared_info and the
  // Ethernet header: 4096 - 256 - 320 - 14 = 3506 (veth_xdp_set). The
  // pair is made at the jumbo MTU and lowered once the socket is bound
  // without multi-buffer.
  constexpr uint32_t kVethXdpMaxMtu = 3506;
  const uint32_t single_mtu = std::min(pool_->frameSize() - kTxHeadroom - 14 - 4, kVethXdpMaxMtu);
  auto dev = PuntDevice::create(cfg_.punt_name, cfg_.port.xsk.multi_buffer ? kPuntJumboMtu : single_mtu);
  if (!dev) return dev.error();
  PortConfig pc = cfg_.port;
  pc.punt = true;
  pc.hook = PortHook::kXdp;
  pc.xdp_mode = XdpMode::kNative;
  pc.queues = 1;
  // One socket takes every tc port's punted frames, in bursts of whole GSO
  // skbs segmented at once (a 64 KB TCP skb is 44 frames): a larger RX ring
  // than a port's, so a datapath thread that was not running for a moment
  // finds them queued instead of dropped as rx_ring_full (a TCP stream then
  // retransmits and halves its window). Up to 4x the ports' ring, its fill
  // ring at most a quarter of the pool.
  for (uint32_t rx = pc.xsk.rx_size * 4; rx > pc.xsk.rx_size; rx /= 2)
    if (2 * rx <= cfg_.frames / 4) {
      pc.xsk.rx_size = rx;
      pc.xsk.fill_size = 2 * rx;
      break;
    }
  pc.fast = nullptr;
  pc.fast_rx = false;
  pc.tc = nullptr;
  auto punt = Port::open(dev.value()->farName(), kPuntIndex, *pool_, pc, {}, anchors());
  if (!punt) return Error{punt.error().err, "punt device: " + punt.error().what};
  if (dev.value()->mtu() > single_mtu && !punt.value()->multiBuffer()) {
    if (Status st = dev.value()->setMtu(single_mtu); !st) {
      punt.value()->detachXdp();
      punt.value()->shutdown(*pool_);
      return st.error();
    }
    punt.value()->setMtu(single_mtu);  // what its stats show
  }
  tc_ = std::move(tc.value());
  tc_->setPunt(dev.value()->nearIfindex(), dev.value()->mtu());
  fast_sync_.setTc(tc_.get());
  for (Port* p : ports_.active()) fast_sync_.syncPort(*p);  // ports at XDP become its destinations
  punt_dev_ = std::move(dev.value());
  punt_ = std::move(punt.value());
  for (auto& q : punt_->queues()) refill(*q);
  host_.refresh(cfg_.host_macs, ports_.active(), tc_.get());
  return {};
}

UmemAnchors Datapath::anchors() const {
  UmemAnchors a;
  const auto take = [&](const Port& p) {
    if (!p.live()) return false;
    for (auto& q : p.queues())
      if (q->xsk) {
        (q->xsk->zerocopy() ? a.zerocopy : a.copy) = q->xsk->fd();
        if (!q->xsk->zerocopy()) a.copy_multi_buffer = q->xsk->multiBuffer();
      }
    return a.copy >= 0 && a.zerocopy >= 0;
  };
  if (punt_ && take(*punt_)) return a;
  for (Port* p : ports_.active())
    if (take(*p)) return a;
  return a;
}

}  // namespace vdev::datapath
