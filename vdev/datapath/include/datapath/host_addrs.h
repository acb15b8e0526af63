// HostAddrs: the host's own addresses on the ports, as the switch and the
// ports' XDP programs need them.
//
//  - MACs: every port's device MAC and the configured host MACs
//    (DatapathConfig::host_macs). The switch never learns one of them from a
//    guest (a guest posing as the host would otherwise draw the host's
//    frames); isHostMac() is asked on the hot path.
//  - IPv4 and IPv6 addresses the host has on each port's device, pushed into
//    that port's XDP program (XdpProgram::setHostIpv4/6), or for a port at
//    tc into the skb path's maps (TcPath): ARP requests and Neighbour
//    Solicitations for them go to the host's stack. The skb path also gets
//    the host MACs (frames to them go to the host's stack).
//
//  - Whether the host is a station behind each port (Port::carriesHost():
//    an uplink), from its driver and the addresses: which multicast and
//    broadcast frames reach the host's stack there (Datapath::syncHostPorts
//    puts it into the programs).
//
// All are refreshed when a port is added and once a second (a port added,
// removed or re-created brings its MAC with it; addresses come and go) --
// the addresses only on rtnetlink address events where vdevd has them.
//
// Thread safety: owned by the datapath thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "datapath/port.h"
#include "datapath/tc_path.h"

namespace vdev::datapath {

class HostAddrs {
 public:
  // Both of the below (port added; housekeeping, once a second).
  // tc: the skb path, or null.
  // ips false: the MACs alone (the addresses are pushed on address events
  // instead, Datapath::setAddrEvents).
  void refresh(const std::vector<std::array<uint8_t, 6>>& configured, const std::vector<Port*>& ports,
               TcPath* tc = nullptr, bool ips = true) {
    refreshMacs(configured, ports);
    if (tc) (void)tc->setHostMacs(mac_keys_);  // an error: counted and logged there, retried in a second
    if (ips) pushIps(ports, tc);
  }
  // Rebuilds the host MACs from the configured ones and the ports' devices.
  // Keeps the vector's capacity: no allocation once the ports are there.
  void refreshMacs(const std::vector<std::array<uint8_t, 6>>& configured, const std::vector<Port*>& ports);
  // Reads the host's addresses (getifaddrs) and gives each port's program
  // those on its device. Kept as they were if they cannot be read (tried
  // again in a second).
  void pushIps(const std::vector<Port*>& ports, TcPath* tc = nullptr);
  // Hot path: whether key (macKey()) is one of the host's MACs.
  bool isHostMac(uint64_t key) const noexcept {
    return !mac_keys_.empty() && std::binary_search(mac_keys_.begin(), mac_keys_.end(), key);
  }

 private:
  std::vector<uint64_t> mac_keys_;  // sorted, unique macKey()s
};

}  // namespace vdev::datapath
