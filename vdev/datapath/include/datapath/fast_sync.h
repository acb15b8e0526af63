// FastSync: keeps the kernel fast path (fast_path.h) in step with the
// datapath, on the datapath thread.
//
//  - Each port's devmap entry follows its link and its device: a port is a
//    fast-path destination while it is live and its device takes redirected
//    XDP frames (XdpFeatures::takesFrames), checked again every second; a
//    device that starts refusing them (a container turned GRO off) leaves.
//    Before Linux 6.3 (XdpFeatures::Source::kDriver) the kernel says so
//    only by refusing: such a device stays off until it is made anew (a
//    new ifindex), since nothing would say when it takes frames again.
//  - The kernel's MAC map follows the FDB's journal after every burst that
//    changed it, and the FDB learns the last-seen times of stations that
//    talk only through the kernel.
//  - What the statistics need to merge the kernel's counters into a port's
//    (FastDevBase).
//
// One record per port index, reset when the index gets a new port.
#pragma once

#include <cstdint>
#include <vector>

#include "datapath/fast_path.h"
#include "datapath/fdb.h"
#include "datapath/port.h"
#include "datapath/tc_path.h"
#include "datapath/xdp_features.h"

namespace vdev::datapath {

enum class FastState : uint8_t {
  kOff,        // not a destination now: the port is down, or its device takes no XDP frames
  kOn,         // a destination: in the devmap under its index
  kImpossible, // never, for this port: the devmap refused it (an index beyond the devmap)
};

// The device behind a port, for the device counters vdevd reports: tun and
// veth count fast-path frames their queue refused in their own tx_dropped
// too (see Datapath::fastDropsCountedByDevice).
struct FastDevBase {
  int ifindex = 0;      // the device the figures below belong to
  bool counts = false;  // tun/veth/netkit: its tx_dropped counts fast-path queue-full drops
  // On the datapath thread (the record): 1 if the index had another device
  // before, whose queue-full drops are not this one's. The statistics
  // reader turns that into the count itself (a map read it makes on its
  // own thread) the first time it sees epoch, and keeps it.
  uint64_t base = 0;    // the reader's: queue-full drops before this device appeared
  uint64_t epoch = 0;   // a new value for each new device at the index
};

class FastSync {
 public:
  struct PortRecord {
    FastState state = FastState::kOff;
    bool warned = false;        // "not on the kernel fast path" was logged; quiet until it joins
    bool isolated = false;      // the port's PortConfig::isolated, for its MACs' entries
    uint16_t vid = kVidDefault;  // Port::fastVid(): its untagged VLAN on the fast path (0: none)
    VidSet tagged;               // Port::fastTagged(): its VLANs carried tagged on the fast path
    // Its MACs in VLAN v go into the kernel's map: the port carries v there.
    bool carries(uint16_t v) const { return v && (v == vid || (v <= kVidMax && tagged[v])); }
    uint64_t refused_seen = 0;  // the kernel's refused-frames counter at the last check
    int refused_ifindex = 0;    // kDriver: the device that refused frames, kept off
    FastDevBase dev;
  };

  // fast: the Datapath's fast path, null when off (then every call is a no-op
  // but devBase()).
  explicit FastSync(FastPath* fast = nullptr) : fast_(fast) {}
  // The skb path, once there: ports are its destinations too (for any
  // live port: skbs need no NDO_XMIT).
  void setTc(TcPath* tc) { tc_ = tc; }
  // How a device's XDP features are known (owned by the Datapath; null:
  // none is a destination).
  void setFeatures(const XdpFeatures* f) { features_ = f; }

  // The index got a new port: its record and its kernel counters start at 0;
  // isolated: the port's PortConfig::isolated, marked on its MACs' entries.
  // vid, tagged: Port::fastVid(), Port::fastTagged(), the VLANs of the
  // port's MACs in the kernel's map, which the programs learn too
  // (fast_vlans).
  void resetPort(uint16_t port_index, bool isolated = false, uint16_t vid = kVidDefault,
                 const VidSet& tagged = VidSet());
  // The port became isolated or open (Datapath::setPort): the entries
  // written from now on carry the new mark. Those already in the kernel
  // keep the old one until rewritten: the caller notes the port's MACs in
  // the MAC table's journal (Fdb::notePort).
  void setIsolated(uint16_t port_index, bool isolated) {
    if (fast_) record(port_index).isolated = isolated;
  }
  // The port's VLAN settings changed (Datapath::setPort), or a capture
  // took it off the fast path or gave it back: vid and tagged are its new
  // Port::fastVid() and Port::fastTagged(), for the programs at once (a
  // frame to or from a VLAN the port no longer carries goes to vdevd from
  // now on, whatever the kernel's map still holds). The caller forgets its
  // MACs (Fdb::flushPort) or notes them (Fdb::notePort), which takes them
  // out of the kernel; those learned from now on follow the new VLANs.
  void setVlan(uint16_t port_index, uint16_t vid, const VidSet& tagged = VidSet());
  // The port's devmap entry follows its state now (link change, removal).
  void syncPort(const Port& p);
  // The MAC table's changes since the last sync go to the kernel's copy
  // (fdb's journal: pending after a burst that changed it).
  void syncFdb(Fdb& fdb, uint64_t now_ns);
  // Once a second: last-seen times from the kernel into the FDB; and,
  // unless check_ports is false (the caller calls checkPorts() when a
  // device's XDP features change instead), checkPorts().
  void housekeeping(Fdb& fdb, const std::vector<Port*>& ports, bool check_ports = true);
  // Devices that stopped (or started) taking redirected frames, or whose
  // frames the kernel refused since the last check, leave (or join).
  // only: the ifindexes to look at (empty: every port).
  void checkPorts(const std::vector<Port*>& ports, const std::vector<int>& only = {});
  FastDevBase& devBase(uint16_t port_index) { return record(port_index).dev; }
  // Entries the kernel's map refused (syncFdb): 0 while the map holds the
  // MAC table's capacity and erases go first. A refused station is
  // switched by vdevd, not lost.
  uint64_t setErrors() const { return set_errors_; }

 private:
  PortRecord& record(uint16_t port_index) {
    if (port_index >= records_.size()) records_.resize(size_t(port_index) + 1);
    return records_[port_index];
  }

  FastPath* fast_;
  TcPath* tc_ = nullptr;
  const XdpFeatures* features_ = nullptr;
  std::vector<PortRecord> records_;  // by port index
  uint64_t set_errors_ = 0;
  uint64_t set_errors_logged_ = 0;  // housekeeping logs those since
};

}  // namespace vdev::datapath
