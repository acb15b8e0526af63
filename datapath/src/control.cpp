// Control requests: what the control thread may ask of a Datapath, each run
// on the datapath thread between two bursts (ControlChannel,
// control_channel.h). Control path only: a request may allocate, log and
// make syscalls; traffic waits meanwhile (the rings absorb a short pause).
#include "datapath/control_channel.h"

#include <unistd.h>

#include <algorithm>

#include "datapath/datapath.h"
#include "vdev_xdp_shared.h"

namespace vdev::datapath {

void ControlChannel::call(const std::function<void()>& fn, const bool& served, int wake_fd) {
  std::lock_guard<std::mutex> caller(call_mu_);  // one request at a time
  if (!served) {
    fn();
    return;
  }
  std::unique_lock<std::mutex> lk(mu_);
  fn_ = &fn;
  done_ = false;
  req_.store(true, std::memory_order_release);  // R0 pairs with R1 in pending()
  uint64_t one = 1;
  ssize_t rc = ::write(wake_fd, &one, sizeof one);
  (void)rc;
  cv_.wait(lk, [this] { return done_; });
}

void ControlChannel::serve() {
  std::lock_guard<std::mutex> lk(mu_);
  if (fn_) (*fn_)();
  fn_ = nullptr;
  done_ = true;
  req_.store(false, std::memory_order_relaxed);
  cv_.notify_all();
}

// Every request may add, remove or re-attach a port: rows_seq_ brackets it,
// so that a statistics reader on another thread knows (Datapath::stats).
void Datapath::runOnDatapath(const std::function<void()>& fn) {
  control_.call([&] {
    rowsChangeBegin();
    fn();
    rowsChangeEnd();
  }, running_, wake_fd_.get());
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

Status Datapath::setPort(const std::string& ifname, const PortChange& change) {
  Status st;
  runOnDatapath([&] { st = setPortNow(ifname, change); });
  return st;
}

Status Datapath::setPortNow(const std::string& ifname, const PortChange& change) {
  Port* p = ports_.find(ifname);
  if (!p) return Error{ENOENT, "no port " + ifname};
  const PortLimits l = change.limits.over(p->limits());
  const bool vlan_changed = !(l.vlan == p->limits().vlan);
  if (!(l == p->limits()))
    if (auto st = p->setLimits(l); !st) return st;
  if (vlan_changed) {
    // Its stations are in other VLANs now: learned again from its next
    // frames. Forgetting them takes them out of the kernel's map too, and
    // a port with VLAN settings has none put back there.
    applyFastVid(*p);
    fdb_.flushPort(p->index());
  }
  if (change.isolated && *change.isolated != p->isolated()) {
    // The rule is checked per frame against the port's flag (vdevd) and
    // against the marks of its MACs' fast-path entries (the programs): the
    // journal has those rewritten with the new mark at the next sync, after
    // this request and before the next burst.
    p->setIsolated(*change.isolated);
    fast_sync_.setIsolated(p->index(), *change.isolated);
    fdb_.notePort(p->index());
  }
  return {};
}

void Datapath::applyFastVid(Port& p) {
  fast_sync_.setVlan(p.index(), p.fastVid());
  if (tc_ && p.hook() == PortHook::kTc) tc_->setVlan(p.index(), p.fastVid(), p.vlanOn());
  if (p.xdp()) (void)p.xdp()->setVlan(p.fastVid(), p.vlanOn());
}

Result<uint32_t> Datapath::captureStart(const std::string& ifname, uint8_t dirs, uint32_t snaplen, uint32_t slots,
                                        const CaptureAdmit& admit) {
  auto l = captures_.lock();
  if (captures_.full())
    return Error{ENOSPC, std::to_string(kMaxCaptures) + " captures run already (vdevd's limit)"};
  // Three steps, so that the datapath thread never allocates (nor zeroes)
  // the slots -- 16384 of 64 KiB each are a gigabyte: the port's slot
  // length asked of the datapath thread, the capture made here, then
  // handed over. Only the control thread adds and removes ports and
  // captures, so the port found first is the port handed the capture; its
  // MTU may have changed in between, which only cuts frames (as below).
  Status st;
  uint16_t index = 0;
  uint32_t snap = 0;
  auto find = [&]() -> Port* {
    Port* p = ports_.find(ifname);
    if (!p) st = Error{ENOENT, "no port " + ifname};
    else if (p->capture()) st = Error{EBUSY, "port " + ifname + " has a capture running already (one per port)"};
    return st ? p : nullptr;
  };
  runOnDatapath([&] {
    Port* p = find();
    if (!p) return;
    // No slot longer than the port's frames: one UMEM frame, or its MTU
    // with Ethernet and VLAN headers (jumbo frames are chains of UMEM
    // frames). A frame longer than that (the MTU raised since) is cut,
    // its length kept.
    const uint32_t longest = std::max(pool_->frameSize(), p->mtu() + 18);
    index = p->index();
    snap = std::min(snaplen, longest);
  });
  if (!st) return st.error();
  if (admit)
    if (auto a = admit(Capture::bytesFor(slots, snap)); !a) return a.error();
  auto cap = std::make_unique<Capture>(index, dirs, slots, snap);
  // The fast path's copies: its reader made here, once (its buffers), and
  // the capture's share of the misses counted from now.
  bool on_fast = fast_ && index < kFastPathPorts && fast_->openCaptureReader(&Datapath::fastCaptured, this).ok();
  if (on_fast) cap->setFastMissed(fast_->captureMissedRow(index));
  runOnDatapath([&] {
    Port* p = find();
    if (!p) return;
    if (p->index() != index) {
      st = Error{ENOENT, "port " + ifname + " was replaced while its capture was made"};
      return;
    }
    on_fast = on_fast && fast_->setCapture(index, dirs, cap->snaplen()).ok();
    p->setCapture(cap.get(), on_fast);
    if (on_fast) {
      captures_.fastStarted();
      return;
    }
    // As for new VLAN settings, but the port's stations stay learned (the
    // journal takes their kernel entries out at the next sync, and puts
    // them back when the capture stops): a capture changes where its
    // frames are switched, not where they go.
    applyFastVid(*p);
    fdb_.notePort(p->index());
  });
  if (!st) return st.error();  // admit's reservation: the caller's to give back
  return captures_.add(std::move(cap));
}

void Datapath::detachCapture(Port& p, bool removing) {
  const bool on_fast = p.captureOnFast();
  p.setCapture(nullptr);
  if (on_fast) {
    (void)fast_->setCapture(p.index(), 0, 0);
    captures_.fastStopped();
    return;
  }
  if (removing) return;
  applyFastVid(p);
  fdb_.notePort(p.index());
}

void Datapath::fastCaptured(void* ctx, uint16_t port_index, uint8_t dir, uint64_t time_ns, uint32_t wire_len,
                            const uint8_t* bytes, uint32_t kept) {
  auto* d = static_cast<Datapath*>(ctx);
  Port* p = d->ports_.get(port_index);
  Capture* cap = p ? p->capture() : nullptr;
  if (!cap) return;  // stopped while its copies were on their way
  cap->copyBytes(dir == VDEV_CAP_TX ? Capture::kTx : Capture::kRx, bytes, kept, wire_len,
                 d->captures_.realtime(time_ns));
}

Capture* Datapath::captureGet(uint32_t id) { return captures_.get(id); }

void Datapath::captureStop(uint32_t id) {
  auto l = captures_.lock();
  Capture* cap = captures_.find(id);
  if (!cap) return;
  runOnDatapath([&] {
    if (cap->ended()) return;  // its port is gone
    Port* p = ports_.get(cap->portIndex());
    if (p && p->capture() == cap) detachCapture(*p);
  });
  captures_.erase(id);  // the datapath thread no longer knows it
}

std::vector<uint32_t> Datapath::fdbGroupUse(std::span<const uint16_t> groups) {
  std::vector<uint32_t> out(groups.size());
  runOnDatapath([&] {
    for (size_t i = 0; i < groups.size(); i++) out[i] = groups[i] < Fdb::kMaxGroups ? fdb_.learnedInGroup(groups[i]) : 0;
  });
  return out;
}

Result<std::vector<Fdb::Entry>> Datapath::fdbDump() {
  std::vector<Fdb::Entry> out;
  runOnDatapath([&] { out = fdb_.dump(monotonicNs()); });
  return out;
}

Status Datapath::fdbAdd(const uint8_t mac[6], const std::string& port, uint16_t vid) {
  Status st;
  runOnDatapath([&] {
    Port* p = ports_.find(port);
    if (!p) st = Error{ENOENT, "no port " + port};
    else if (macIsMulticast(mac) || macIsZero(mac)) st = Error{EINVAL, "not a unicast MAC address"};
    else if (vid < 1 || vid > kVidMax) st = Error{EINVAL, "VLAN " + std::to_string(vid) + " out of range (1 to 4094)"};
    else if (!p->carriesVid(vid))
      st = Error{EINVAL, "port " + port + " does not carry VLAN " + std::to_string(vid)};
    else if (!fdb_.addStatic(fdbKey(macKey(mac), vid), p->index())) st = Error{ENOSPC, "MAC table full"};
  });
  return st;
}

Status Datapath::fdbDel(const uint8_t mac[6], uint16_t vid) {
  Status st;
  runOnDatapath([&] {
    if (!fdb_.remove(fdbKey(macKey(mac), vid))) st = Error{ENOENT, "MAC address not in the table"};
  });
  return st;
}

void Datapath::checkLinkEvent(Port& p) {
  // A device refused as not the port's own is looked at again on a link
  // event (its alias may just have been set), else once.
  if (p.refusedIfindex()) p.refuseDevice(0, {});
  checkLink(p);
  if (p.live()) refreshMtu(p);  // an MTU change is a link event too
}

void Datapath::checkLinks() {
  runOnDatapath([&] {
    for (Port* p : ports_.active()) checkLinkEvent(*p);
  });
}

void Datapath::checkLinks(const std::vector<LinkRef>& named) {
  if (named.empty()) return;
  runOnDatapath([&] {
    // Comparing numbers and names is all an event costs the ports it does
    // not name; checkLink's ioctls and sysfs reads are for the named ones.
    for (Port* p : ports_.active()) {
      const bool hit = std::any_of(named.begin(), named.end(), [p](const LinkRef& r) {
        return (r.ifindex && (r.ifindex == p->ifindex() || r.ifindex == p->refusedIfindex())) ||
               (!r.name.empty() && r.name == p->name());
      });
      if (hit) checkLinkEvent(*p);
    }
  });
}

void Datapath::setLinkEvents(bool on) {
  runOnDatapath([&] { link_events_ = on; });
}

void Datapath::setXdpFeatureEvents(bool on) {
  runOnDatapath([&] { xdp_feature_events_ = on; });
}

void Datapath::setAddrEvents(bool on) {
  runOnDatapath([&] { addr_events_ = on; });
}

void Datapath::refreshHostAddrs() {
  runOnDatapath([&] {
    host_.refresh(cfg_.host_macs, ports_.active(), tc_.get());
    syncHostPorts();  // an address can make a port the host's (Port::carriesHost)
  });
}

void Datapath::checkFastPorts(const std::vector<int>& ifindexes) {
  runOnDatapath([&] {
    if (fast_) fast_sync_.checkPorts(ports_.active(), ifindexes);
  });
}

bool Datapath::hasPort(const std::string& name) {
  bool found = false;
  runOnDatapath([&] { found = ports_.find(name) != nullptr; });
  return found;
}

Datapath::PortRoom Datapath::portRoom() {
  PortRoom r;
  runOnDatapath([&] {
    r.pool = fill_.room(cfg_.port.xsk.fill_size);
    // Indexes are reused lowest first, so the ports inside the maps are the
    // ones with an index below their size.
    uint32_t inside = 0;
    for (const Port* p : ports_.active()) inside += p->index() < VDEV_FAST_MAX_PORTS;
    r.maps = VDEV_FAST_MAX_PORTS - inside;
  });
  return r;
}

Datapath::KernelUse Datapath::kernelUse() {
  KernelUse k;
  runOnDatapath([&] {
    if (tc_) {
      k.tcx = tc_->attachMode() == TcAttach::kTcx;
      k.clsact = tc_->attachMode() == TcAttach::kClsact;
      // Its fast path redirects into a veth destination's peer.
      k.redirect_peer = fast_ != nullptr;
    }
    k.multi_buffer = anchors().copy_multi_buffer;
    k.xdp_features = features_.source() == XdpFeatures::Source::kNetdev;
    k.xdp_frags = xdp_ && xdp_->loaded() && xdp_->frags();
    k.busy_poll = cfg_.port.xsk.busy_poll_us > 0;
  });
  return k;
}

std::optional<PortHook> Datapath::portHook(const std::string& ifname) {
  std::optional<PortHook> h;
  runOnDatapath([&] {
    if (const Port* p = ports_.find(ifname)) h = p->hook();
  });
  return h;
}

}  // namespace vdev::datapath
