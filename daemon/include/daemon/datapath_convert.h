// Conversions between vdev's datapath types and the control protocol's
// messages, for vdevd's ControlHandler. Header-only: includes datapath/datapath.h,
// so only code that links vdev_datapath (the daemon, its tests) includes it.
#pragma once

#include <cstring>
#include <iterator>
#include <utility>
#include <optional>
#include <string>
#include <string_view>

#include "datapath/datapath.h"
#include "daemon/state_file.h"
#include "proto/codec.h"
#include "rtnl/link.h"

namespace vdev::daemon {

// What the device vdev made for a saved port carries (DeviceIdentity):
// nullopt for a device vdev did not make (root's existing device: attached
// by name, as before). A record saved before ids has the bare mark and no
// tun owner: its device is known by the mark and kind alone.
inline std::optional<datapath::DeviceIdentity> identityOf(const PortRecord& r) {
  if (!r.managed || (r.type != "tap" && r.type != "veth")) return std::nullopt;
  datapath::DeviceIdentity id;
  id.alias = rtnl::managedAlias(r.id);
  id.tap = r.type == "tap";
  id.tun_owner = r.tun_owner;
  id.check_owner = !r.id.empty();
  return id;
}

// The modes a state-file record or an option names, read back by the
// names vdev prints (spec/port_spec.h), never a second spelling.
inline std::optional<datapath::XdpMode> xdpModeByName(std::string_view v) {
  return spec::byName(v, {datapath::XdpMode::kNative, datapath::XdpMode::kGeneric, datapath::XdpMode::kAuto});
}
inline std::optional<datapath::PortHook> portHookByName(std::string_view v) {
  return spec::byName(v, {datapath::PortHook::kXdp, datapath::PortHook::kTc, datapath::PortHook::kAuto});
}

// The daemon knows how a port was added; PortStats does not.
inline proto::PortInfo toPortInfo(const datapath::PortStats& s, proto::PortType type = proto::PortType::kNetdev) {
  proto::PortInfo p;
  p.name = s.name;
  p.type = type;
  p.ifindex = s.ifindex > 0 ? static_cast<uint32_t>(s.ifindex) : 0;
  p.queues = s.queues;
  p.queues_bound = s.queues_bound;
  p.xdp_mode = s.xdp_mode;
  p.bind_mode = s.bind_mode;
  p.mtu = s.mtu;
  p.live = s.live;
  p.fast_rx = s.fast_rx;
  p.hook = s.hook;
  p.tc_attach = s.tc_attach;
  p.hook_note = s.hook_note;
  p.link_note = s.link_note;
  p.uplink = s.uplink;
  p.isolated = s.isolated;
  // The punt device carries frames of other ports, limited where they came
  // in: limits of its own would mean nothing.
  if (s.punt)
    p.type = proto::PortType::kPunt;
  else
    p.limits = s.limits;  // one type: the policy in effect
  return p;
}

// The kernel features the datapath uses now, as KERNEL_FEATURES bits.
inline uint64_t kernelFeatureBits(const datapath::Datapath::KernelUse& k) {
  const std::pair<bool, proto::KernelFeature> bits[] = {
      {k.tcx, proto::kKfTcx},           {k.clsact, proto::kKfClsact},
      {k.multi_buffer, proto::kKfMultiBuffer}, {k.xdp_features, proto::kKfXdpFeatures},
      {k.xdp_frags, proto::kKfXdpFrags}, {k.redirect_peer, proto::kKfRedirectPeer},
      {k.busy_poll, proto::kKfBusyPoll}};
  static_assert(std::size(bits) == proto::kKfCount, "every KernelFeature, once");
  uint64_t m = 0;
  for (const auto& [on, bit] : bits)
    if (on) m |= uint64_t(1) << bit;
  return m;
}

// The counters travel as they are: both sides index them by the table's ids.
inline proto::PortStatsMsg toPortStatsMsg(const datapath::PortStats& s, proto::PortType type = proto::PortType::kNetdev) {
  return proto::PortStatsMsg{toPortInfo(s, type), s.counters};
}

// STATS_GET's reply: every port (only == "") or the one named (none if it
// does not exist: answer ENODEV then), plus the pool and the FDB size.
inline proto::StatsReply toStatsReply(const datapath::DatapathStats& d, std::string_view only = {}) {
  proto::StatsReply r;
  for (const auto& p : d.ports)
    if (only.empty() || p.name == only) r.ports.push_back(toPortStatsMsg(p));
  r.pool = d.pool;
  r.fdb_entries = d.fdb_entries;
  return r;
}

inline proto::FdbEntryMsg toFdbEntryMsg(const datapath::Fdb::Entry& e, std::string port, uint64_t now_ns) {
  proto::FdbEntryMsg m;
  const uint64_t mac = datapath::fdbKeyMac(e.mac);
  std::memcpy(m.mac.data(), &mac, 6);  // inverse of datapath::macKey()
  m.vid = datapath::fdbKeyVid(e.mac);
  m.port = std::move(port);
  m.is_static = e.is_static;
  m.age_ms = e.is_static || now_ns < e.seen_ns ? 0 : (now_ns - e.seen_ns) / 1000000;
  return m;
}

}  // namespace vdev::daemon
