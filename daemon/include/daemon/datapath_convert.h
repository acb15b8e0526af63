// Conversions between vdev's datapath types and the control protocol's
// messages, for vdevd's ControlHandler. Header-only: includes datapath/datapath.h,
// so only code that links vdev_datapath (the daemon, its tests) includes it.
#pragma once

#include <cstring>
#include <string>
#include <string_view>

#include "datapath/datapath.h"
#include "proto/codec.h"

namespace vdev::daemon {

// Every drop reason has its own STATS attribute, in vdev::DropReason order.
static_assert(datapath::kNumDropReasons == proto::kNumDropReasons,
              "a new vdev::DropReason needs a kStatsDrop* attribute in protocol.h");
static_assert(datapath::kDropRingFull == 0 && datapath::kDropTxRingFull == 1 && datapath::kDropNoRoute == 2 &&
              datapath::kDropPortDown == 3 && datapath::kDropOversize == 4 && datapath::kDropRunt == 5 &&
              datapath::kDropPoolEmpty == 6 && datapath::kDropInvalidSrc == 7 && datapath::kDropBadType == 8 &&
              datapath::kDropMacLimit == 9 && datapath::kDropMacLocked == 10 && datapath::kDropInflight == 11 &&
              datapath::kDropFastXmit == 12);

// PortStats carries the modes as names.
inline proto::XdpMode xdpModeFromName(std::string_view s) {
  if (s == "native") return proto::XdpMode::kNative;
  if (s == "generic") return proto::XdpMode::kGeneric;
  if (s == "auto") return proto::XdpMode::kAuto;
  return proto::XdpMode::kNone;
}
inline proto::BindMode bindModeFromName(std::string_view s) {
  if (s == "copy") return proto::BindMode::kCopy;
  if (s == "zerocopy") return proto::BindMode::kZerocopy;
  if (s == "closed") return proto::BindMode::kClosed;
  return proto::BindMode::kNone;
}

// PORT_ADD's XDP_MODE for datapath::Datapath::PortOptions (kNone never passes validation).
inline datapath::XdpMode toVdevXdpMode(proto::XdpMode m) {
  switch (m) {
    case proto::XdpMode::kNative: return datapath::XdpMode::kNative;
    case proto::XdpMode::kGeneric: return datapath::XdpMode::kGeneric;
    default: return datapath::XdpMode::kAuto;
  }
}

// The daemon knows how a port was added; PortStats does not.
inline proto::PortInfo toPortInfo(const datapath::PortStats& s, proto::PortType type = proto::PortType::kNetdev) {
  proto::PortInfo p;
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

inline proto::PortStatsMsg toPortStatsMsg(const datapath::PortStats& s, proto::PortType type = proto::PortType::kNetdev) {
  proto::PortStatsMsg m;
  m.port = toPortInfo(s, type);
  m.rx_packets = s.c.rx_packets;
  m.rx_bytes = s.c.rx_bytes;
  m.tx_packets = s.c.tx_packets;
  m.tx_bytes = s.c.tx_bytes;
  m.tx_outstanding = s.tx_outstanding;
  for (uint32_t i = 0; i < proto::kNumDropReasons; ++i) m.drops[i] = s.c.drops[i];
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

inline proto::PoolMsg toPoolMsg(const datapath::PoolStats& p) {
  proto::PoolMsg m;
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
inline proto::StatsReply toStatsReply(const datapath::DatapathStats& d, std::string_view only = {}) {
  proto::StatsReply r;
  for (const auto& p : d.ports)
    if (only.empty() || p.name == only) r.ports.push_back(toPortStatsMsg(p));
  r.pool = toPoolMsg(d.pool);
  r.fdb_entries = d.fdb_entries;
  return r;
}

inline proto::FdbEntryMsg toFdbEntryMsg(const datapath::Fdb::Entry& e, std::string port, uint64_t now_ns) {
  proto::FdbEntryMsg m;
  std::memcpy(m.mac.data(), &e.mac, 6);  // inverse of datapath::macKey()
  m.port = std::move(port);
  m.is_static = e.is_static;
  m.age_ms = e.is_static || now_ns < e.seen_ns ? 0 : (now_ns - e.seen_ns) / 1000000;
  return m;
}

}  // namespace vdev::daemon
