// The kernel fast path kept in step with the datapath (FastSync, fast_sync.h).
#include "datapath/fast_sync.h"

#include <algorithm>
#include <cstdio>


namespace vdev::datapath {

void FastSync::resetPort(uint16_t port_index, bool isolated, uint16_t vid, const VidSet& tagged) {
  if (!fast_) return;
  record(port_index) = PortRecord{};
  record(port_index).isolated = isolated;
  fast_->reset(port_index);
  setVlan(port_index, vid, tagged);
}

void FastSync::setVlan(uint16_t port_index, uint16_t vid, const VidSet& tagged) {
  if (!fast_) return;
  PortRecord& r = record(port_index);
  r.vid = vid;
  r.tagged = tagged;
  // An index beyond the programs' maps never takes the fast path.
  (void)fast_->setVlans(port_index, vid, tagged);
}

void FastSync::syncPort(const Port& p) {
  if (!fast_) return;
  const uint16_t index = p.index();
  if (tc_) {
    // A destination of the skb path while it is live, whatever its device.
    if (p.hook() == PortHook::kTc)
      tc_->setDest(index, p.live());
    else
      tc_->setOtherDest(index, p.ifindex(), p.mtu(), p.redirectPeer(), p.live());
  }
  PortRecord& r = record(index);
  const bool want = p.live() && r.state != FastState::kImpossible;
  if (want && r.state == FastState::kOff) {
    // A device that refused frames before 6.3 stays off (fast_sync.h).
    if (r.refused_ifindex && r.refused_ifindex == p.ifindex()) return;
    // Only a device that takes redirected frames now: a tap, a veth whose
    // container end has NAPI. Checked again every second (GRO may change).
    auto takes = features_ ? features_->takesFrames(p.ifindex(), p.driver(), p.peerNapi())
                           : Result<bool>(Error{EOPNOTSUPP, "no XDP features"});
    if (!takes || !*takes) {
      // A port at tc takes the skb path's frames anyway; only XDP sources
      // (an uplink) then send to it through vdevd: nothing to warn about.
      if (!r.warned && p.hook() != PortHook::kTc)
        std::fprintf(stderr, "vdevd: port %s: not on the kernel fast path: %s\n", p.name().c_str(),
                     takes ? "the device takes no redirected XDP frames (a veth: turn GRO on in the "
                             "container, e.g. 'ethtool -K eth0 gro on')"
                           : takes.error().message().c_str());
      r.warned = true;
      return;
    }
    r.warned = false;
    if (auto st = fast_->enablePort(index, p.ifindex()); st) {
      r.state = FastState::kOn;
    } else {
      std::fprintf(stderr, "vdevd: port %s: not on the kernel fast path: %s\n", p.name().c_str(),
                   st.error().message().c_str());
      r.state = FastState::kImpossible;
    }
  } else if (!want && r.state == FastState::kOn) {
    fast_->disablePort(index, p.ifindex());
    r.state = FastState::kOff;
  }
}

// A station moved, aged out or removed stops being fast-pathed at once.
// The kernel's map has the MAC table's keys (VLAN and MAC) and holds the
// stations of every VLAN the port carries on the fast path: its untagged
// one (Port::fastVid()) and a trunk's tagged ones (Port::fastTagged()). The
// programs check both ends' VLANs themselves (fast_vlans), and push or pop
// the tag between a trunk and a port that has the VLAN untagged.
void FastSync::syncFdb(Fdb& fdb, uint64_t now_ns) {
  auto mirrored = [&](uint64_t key, int port_index) {
    return port_index >= 0 && record(uint16_t(port_index)).carries(fdbKeyVid(key));
  };
  if (fdb.journalOverflowed()) {
    fast_->clear();
    for (const Fdb::Entry& e : fdb.dump(now_ns))
      if (mirrored(e.mac, e.port_index) && !fast_->set(e.mac, e.port_index, now_ns, record(e.port_index).isolated))
        set_errors_++;
  } else {
    // Erases first: the kernel's map has the MAC table's capacity, and a
    // full table's journal can name a new station before the entry it
    // evicted (a station evicted, re-learned in the same burst, evicting
    // another). Set first, the new one would find the map full and stay
    // off the fast path until it moved.
    for (uint64_t key : fdb.journal())
      if (!mirrored(key, fdb.lookup(key, now_ns))) fast_->erase(key);
    for (uint64_t key : fdb.journal()) {
      const int port_index = fdb.lookup(key, now_ns);
      if (mirrored(key, port_index) &&
          !fast_->set(key, uint16_t(port_index), now_ns, record(uint16_t(port_index)).isolated))
        set_errors_++;
    }
  }
  fdb.clearJournal();
}

void FastSync::housekeeping(Fdb& fdb, const std::vector<Port*>& ports, bool check_ports) {
  // Stations that talk only through the kernel are seen there: keep their
  // entries from ageing (and held against moves).
  fast_->forEach([&](uint64_t key, uint16_t port_index, uint64_t seen) { fdb.touch(key, port_index, seen); });
  if (set_errors_ != set_errors_logged_) {
    std::fprintf(stderr, "vdevd: the kernel fast path's MAC map refused %llu entries: vdevd switches those stations\n",
                 static_cast<unsigned long long>(set_errors_ - set_errors_logged_));
    set_errors_logged_ = set_errors_;
  }
  if (check_ports) checkPorts(ports);
}

void FastSync::checkPorts(const std::vector<Port*>& ports, const std::vector<int>& only) {
  if (!fast_) return;
  // A device that stopped taking redirected frames (a container turned GRO
  // off) leaves the fast path; frames it refused meanwhile were counted as
  // fast_xmit drops. One that can take them (GRO turned on) joins. Ports
  // without a record (never added through addPort: tests) are left alone.
  for (Port* pp : ports) {
    const uint16_t index = pp->index();
    if (index >= records_.size() || !pp->live()) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), pp->ifindex()) == only.end()) continue;
    PortRecord& r = records_[index];
    const uint64_t refused = fast_->read(index).refused;
    auto takes = features_ ? features_->takesFrames(pp->ifindex(), pp->driver(), pp->peerNapi())
                           : Result<bool>(Error{EOPNOTSUPP, "no XDP features"});
    const bool was_refused = refused != r.refused_seen;
    const bool ok = takes && *takes && !was_refused;
    r.refused_seen = refused;
    if (r.state == FastState::kOn && !ok) {
      fast_->disablePort(index, pp->ifindex());
      r.state = FastState::kOff;
      const bool by_driver = features_ && features_->source() == XdpFeatures::Source::kDriver;
      if (was_refused && by_driver) r.refused_ifindex = pp->ifindex();
      std::fprintf(stderr, "vdevd: port %s: the device refuses redirected XDP frames now; off the kernel fast path%s\n",
                   pp->name().c_str(),
                   was_refused && by_driver ? " (a kernel before 6.3 cannot say when it takes them again: until the "
                                              "device is made anew)"
                                            : "");
    } else if (r.state == FastState::kOff) {
      syncPort(*pp);
    }
  }
}

}  // namespace vdev::datapath
