// Conversions between vdev's datapath types and the control protocol's
// messages, for vdevd's ControlHandler. Header-only: includes vdev/datapath.h,
// so only code that links vdev_core (the daemon, its tests) includes it.
#pragma once

#include <cstring>
#include <string>
#include <string_view>

#include "vdev/datapath.h"
#include "vdevnl/codec.h"

namespace vdevnl {

// Every drop reason has its own STATS attribute, in vdev::DropReason order.
static_assert(vdev::kNumDropReasons == kNumDropReasons,
              "a new vdev::DropReason needs a kStatsDrop* attribute in protocol.h");
static_assert(vdev::kDropRingFull == 0 && vdev::kDropTxRingFull == 1 && vdev::kDropNoRoute == 2 &&
              vdev::kDropPortDown == 3 && vdev::kDropOversize == 4 && vdev::kDropRunt == 5 &&
              vdev::kDropPoolEmpty == 6 && vdev::kDropInvalidSrc == 7 && vdev::kDropBadType == 8 &&
              vdev::kDropMacLimit == 9 && vdev::kDropMacLocked == 10 && vdev::kDropInflight == 11 &&
              vdev::kDropFastXmit == 12);

// PortStats carries the modes as names.
inline XdpMode xdpModeFromName(std::string_view s) {
  if (s == "native") return XdpMode::kNative;
  if (s == "generic") return XdpMode::kGeneric;
  if (s == "auto") return XdpMode::kAuto;
  return XdpMode::kNone;
}
inline BindMode bindModeFromName(std::string_view s) {
  if (s == "copy") return BindMode::kCopy;
  if (s == "zerocopy") return BindMode::kZerocopy;
  if (s == "closed") return BindMode::kClosed;
  return BindMode::kNone;
}

// PORT_ADD's XDP_MODE for vdev::Datapath::PortOptions (kNone never passes validation).
inline vdev::XdpMode toVdevXdpMode(XdpMode m) {
  switch (m) {
    case XdpMode::kNative: return vdev::XdpMode::kNative;
    case XdpMode::kGeneric: return vdev::XdpMode::kGeneric;
    default: return vdev::XdpMode::kAuto;
  }
}

// The daemon knows how a port was added; PortStats does not.
inline PortInfo toPortInfo(const vdev::PortStats& s, PortType type = PortType::kNetdev) {
  PortInfo p;
  p.name = s.name;
  p.type = type;
  p.ifindex = s.ifindex > 0 ? static_cast<uint32_t>(s.ifindex) : 0;
  p.queues = s.queues;
  p.queues_bound = s.queues_bound;
  p.xdp_mode = xdpModeFromName(s.xdp_mode ? s.xdp_mode : "");
  p.bind_mode = bindModeFromName(s.bind_mode ? s.bind_mode : "");
  p.mtu = s.mtu;
  p.live = s.live;
  p.fast_rx = s.fast_rx;
  return p;
}

inline PortStatsMsg toPortStatsMsg(const vdev::PortStats& s, PortType type = PortType::kNetdev) {
  PortStatsMsg m;
  m.port = toPortInfo(s, type);
  m.rx_packets = s.c.rx_packets;
  m.rx_bytes = s.c.rx_bytes;
  m.tx_packets = s.c.tx_packets;
  m.tx_bytes = s.c.tx_bytes;
  m.tx_outstanding = s.tx_outstanding;
  for (uint32_t i = 0; i < kNumDropReasons; ++i) m.drops[i] = s.c.drops[i];
  m.xdp.rx_dropped = s.xdp.rx_dropped;
  m.xdp.rx_invalid_descs = s.xdp.rx_invalid_descs;
  m.xdp.tx_invalid_descs = s.xdp.tx_invalid_descs;
  m.xdp.rx_ring_full = s.xdp.rx_ring_full;
  m.xdp.rx_fill_ring_empty_descs = s.xdp.rx_fill_ring_empty_descs;
  m.xdp.tx_ring_empty_descs = s.xdp.tx_ring_empty_descs;
  m.prog.pass = s.prog.pass;
  m.prog.redirect = s.prog.redirect;
  m.prog.no_socket = s.prog.no_socket;
  m.prog.fast = s.prog.fast;
  m.dev_tx_dropped = s.dev_tx_dropped;
  return m;
}

inline PoolMsg toPoolMsg(const vdev::PoolStats& p) {
  PoolMsg m;
  m.total = p.total;
  m.free = p.free;
  m.fill_ring = p.fill_ring;
  m.kernel_rx = p.kernel_rx;
  m.rx_ring = p.rx_ring;
  m.rx_burst = p.rx_burst;
  m.port_rings = p.port_rings;
  m.tx_ring = p.tx_ring;
  m.kernel_tx = p.kernel_tx;
  m.comp_ring = p.comp_ring;
  return m;
}

// STATS_GET's reply: every port (only == "") or the one named (none if it
// does not exist: answer ENODEV then), plus the pool and the FDB size.
inline StatsReply toStatsReply(const vdev::DatapathStats& d, std::string_view only = {}) {
  StatsReply r;
  for (const auto& p : d.ports)
    if (only.empty() || p.name == only) r.ports.push_back(toPortStatsMsg(p));
  r.pool = toPoolMsg(d.pool);
  r.fdb_entries = d.fdb_entries;
  return r;
}

inline FdbEntryMsg toFdbEntryMsg(const vdev::Fdb::Entry& e, std::string port, uint64_t now_ns) {
  FdbEntryMsg m;
  std::memcpy(m.mac.data(), &e.mac, 6);  // inverse of vdev::macKey()
  m.port = std::move(port);
  m.is_static = e.is_static;
  m.age_ms = e.is_static || now_ns < e.seen_ns ? 0 : (now_ns - e.seen_ns) / 1000000;
  return m;
}

}  // namespace vdevnl
