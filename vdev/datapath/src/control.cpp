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
    // frames. The programs see its new VLANs at once (applyFastVid);
    // forgetting its stations takes them out of the kernel's map too, and
    // they go back there in the VLANs it carries now.
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
  fast_sync_.setVlan(p.index(), p.fastVid(), p.fastTagged());
  if (tc_ && p.hook() == PortHook::kTc) tc_->setVlan(p.index(), p.fastVid(), p.vlanOn());
  if (p.xdp()) (void)p.xdp()->setVlan(p.fastVid(), p.vlanOn());
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
