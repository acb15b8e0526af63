// Storm control, the ingress policer, anti-spoofing (the allowed source
// MAC and addresses) and the VLANs of a port (PortConfig::limits).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/ip.h"
#include "base/vlan.h"

namespace vdev::datapath {

// What one port may send into the switch: storm control (broadcast,
// multicast and unknown-unicast frames per second) and an ingress policer
// (every frame, packets/s and bits/s). 0: no limit. Token buckets, each
// holding police_burst_ms (storm: kStormBurstMs) of its rate, at least one
// frame; a frame passes while its bucket is not in debt and then takes its
// cost (so one 64 KB GSO skb passes a small bucket and the debt it leaves
// holds back what follows). Broadcast, multicast and the policer are
// enforced by the port's program (XDP or tc) before anything else: what
// they drop never reaches vdevd or the fast path; unknown unicast by vdevd,
// the only one that knows a destination is unknown.
struct PortLimits {
  static constexpr uint32_t kStormBurstMs = 100;
  // At most this many IPv4 and this many IPv6 addresses in allowed_ips.
  static constexpr size_t kMaxAllowedIps = 4;
  // A TCP stream inside one host retransmits within microseconds, into a
  // bucket still in debt, and then waits for its retransmission timeout
  // (200 ms at least): it gets about burst / 200 ms of the rate. Measured
  // through a 200 Mbit/s policer: 10 ms 12 Mbit/s, 100 ms 98, 250 ms 196
  // (docs/performance.md, "Storm control and policing").
  static constexpr uint32_t kDefaultPoliceBurstMs = 250;
  uint32_t bcast_pps = 0;        // drops.storm_bcast
  uint32_t mcast_pps = 0;        // drops.storm_mcast (not broadcast)
  uint32_t unknown_pps = 0;      // drops.storm_unknown
  uint64_t police_pps = 0;       // drops.police
  uint64_t police_bps = 0;       // bits/s of frames (Ethernet header on)
  uint32_t police_burst_ms = 0;  // 0: kDefaultPoliceBurstMs
  // Anti-spoofing: the one source MAC the port may send (macKey() of it),
  // enforced by its program before anything else but the policer; frames
  // from any other are dropped (drops.spoof_mac). 0: any source.
  uint64_t src_mac = 0;
  // Anti-spoofing by address: what the port may send from (IPv4, ARP,
  // IPv6, Neighbour Advertisements), enforced by its program after the MAC;
  // anything else, another EtherType included, is dropped (drops.spoof_ip).
  // Empty: any (bpf/vdev_limits.h, vdev_ip_allowed()).
  std::vector<IpAddr> allowed_ips;
  // RA and DHCP guard: Router Advertisements (drops.ra_guard) and DHCP or
  // DHCPv6 servers' messages (drops.dhcp_guard) from the port are dropped
  // by its program: a guest is neither the network's router nor its DHCP
  // server (bpf/vdev_limits.h, vdev_guard()).
  bool ra_guard = false;
  bool dhcp_guard = false;
  // 802.1Q membership (base/vlan.h), enforced by vdevd. The kernel fast
  // path carries only frames between two ports of one untagged VLAN
  // (accessVid(): ports without VLAN settings, access ports); a trunk's
  // frames, tagged ones and floods are switched by vdevd.
  VlanConfig vlan;
  bool operator==(const PortLimits&) const = default;
};

// A port's own limits, where given (vdevctl port add ... storm-bcast N):
// each field absent keeps the datapath's default (DatapathConfig).
struct PortLimitOptions {
  std::optional<uint32_t> bcast_pps, mcast_pps, unknown_pps;
  std::optional<uint64_t> police_pps, police_bps;
  std::optional<uint32_t> police_burst_ms;
  std::optional<uint64_t> src_mac;              // 0: any source
  std::optional<std::vector<IpAddr>> allowed_ips;  // empty: any address
  std::optional<bool> ra_guard, dhcp_guard;
  std::optional<VlanConfig> vlan;  // replaces the port's whole; unconfigured: no VLAN settings
  PortLimits over(PortLimits base) const {
    if (bcast_pps) base.bcast_pps = *bcast_pps;
    if (mcast_pps) base.mcast_pps = *mcast_pps;
    if (unknown_pps) base.unknown_pps = *unknown_pps;
    if (police_pps) base.police_pps = *police_pps;
    if (police_bps) base.police_bps = *police_bps;
    if (police_burst_ms) base.police_burst_ms = *police_burst_ms;
    if (src_mac) base.src_mac = *src_mac;
    if (allowed_ips) base.allowed_ips = *allowed_ips;
    if (ra_guard) base.ra_guard = *ra_guard;
    if (dhcp_guard) base.dhcp_guard = *dhcp_guard;
    if (vlan) base.vlan = *vlan;
    return base;
  }
};

}  // namespace vdev::datapath
