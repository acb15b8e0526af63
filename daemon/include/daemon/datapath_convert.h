// Conversions between vdev's datapath types and the control protocol's
// messages, for vdevd's ControlHandler. Header-only: includes datapath/datapath.h,
// so only code that links vdev_datapath (the daemon, its tests) includes it.
#pragma once

#include <cstring>
#include <initializer_list>
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
  if (!r.managed || (r.type != "tap" && r.type != "veth" && r.type != "netkit")) return std::nullopt;
  datapath::DeviceIdentity id;
  id.alias = rtnl::managedAlias(r.id);
  id.tap = r.type == "tap";
  id.netkit = r.type == "netkit";
  id.tun_owner = r.tun_owner;
  id.check_owner = !r.id.empty();
  return id;
}

// The value among `all` that `name` (the value's one name function) calls
// `v`: names read back (options, state-file records) are the names vdev
// prints, never a second spelling. `all` lists the values the reader takes.
template <class E>
std::optional<E> byName(std::string_view v, std::initializer_list<E> all, const char* (*name)(E)) {
  for (E e : all)
    if (v == name(e)) return e;
  return std::nullopt;
}
inline std::optional<datapath::XdpMode> xdpModeByName(std::string_view v) {
  return byName(v, {datapath::XdpMode::kNative, datapath::XdpMode::kGeneric, datapath::XdpMode::kAuto},
                datapath::xdpModeName);
}
inline std::optional<datapath::PortHook> portHookByName(std::string_view v) {
  return byName(v, {datapath::PortHook::kXdp, datapath::PortHook::kTc, datapath::PortHook::kAuto},
                datapath::portHookName);
}

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
// No HOOK attribute: the port takes vdevd's --default-hook.
inline std::optional<datapath::PortHook> toVdevHook(std::optional<proto::PortHook> h) {
  if (!h) return std::nullopt;
  return *h == proto::PortHook::kTc ? datapath::PortHook::kTc : datapath::PortHook::kXdp;
}

inline datapath::XdpMode toVdevXdpMode(proto::XdpMode m) {
  switch (m) {
    case proto::XdpMode::kNative: return datapath::XdpMode::kNative;
    case proto::XdpMode::kGeneric: return datapath::XdpMode::kGeneric;
    default: return datapath::XdpMode::kAuto;
  }
}

// PORT_ADD's STORM_* and POLICE_* (and a state-file record's, which keeps
// them as given): the port's own values, each absent one left to
// DatapathConfig::limits.
inline datapath::PortLimitOptions toVdevLimits(const proto::LimitOptions& l) {
  datapath::PortLimitOptions o;
  o.bcast_pps = l.storm_bcast;
  o.mcast_pps = l.storm_mcast;
  o.unknown_pps = l.storm_unknown;
  o.police_pps = l.police_pps;
  o.police_bps = l.police_bps;
  o.police_burst_ms = l.police_burst_ms;
  if (l.allowed_mac) o.src_mac = datapath::macKey(l.allowed_mac->data());  // all zeros: 0, any
  o.allowed_ips = l.allowed_ips;  // empty: any
  o.ra_guard = l.ra_guard;
  o.dhcp_guard = l.dhcp_guard;
  o.vlan = l.vlan;
  return o;
}

// A port's effective limits for its replies, the burst's default filled in
// (the datapath reads 0 as kDefaultPoliceBurstMs; a client shows what holds).
inline proto::Limits toLimits(const datapath::PortLimits& l) {
  proto::Limits o;
  o.storm_bcast = l.bcast_pps;
  o.storm_mcast = l.mcast_pps;
  o.storm_unknown = l.unknown_pps;
  o.police_pps = l.police_pps;
  o.police_bps = l.police_bps;
  o.police_burst_ms = l.police_burst_ms ? l.police_burst_ms : datapath::PortLimits::kDefaultPoliceBurstMs;
  if (l.src_mac) {
    Mac m{};
    std::memcpy(m.data(), &l.src_mac, 6);  // inverse of datapath::macKey()
    o.allowed_mac = m;
  }
  o.allowed_ips = l.allowed_ips;
  o.ra_guard = l.ra_guard;
  o.dhcp_guard = l.dhcp_guard;
  o.vlan = l.vlan;
  return o;
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
  p.hook = std::string_view(s.hook) == "tc" ? proto::PortHook::kTc : proto::PortHook::kXdp;
  if (std::string_view(s.tc_attach) == "tcx") p.tc_attach = proto::TcAttach::kTcx;
  if (std::string_view(s.tc_attach) == "clsact") p.tc_attach = proto::TcAttach::kClsact;
  p.hook_note = s.hook_note;
  p.link_note = s.link_note;
  p.uplink = s.uplink;
  p.isolated = s.isolated;
  // The punt device carries frames of other ports, limited where they came
  // in: limits of its own would mean nothing.
  if (s.punt)
    p.type = proto::PortType::kPunt;
  else
    p.limits = toLimits(s.limits);
  return p;
}

// How vdevd attaches skb programs on this kernel (decided at start).
// The switch mode's name is the protocol's (proto::switchModeName).
inline proto::SwitchMode toSwitchMode(datapath::SwitchMode m) {
  return m == datapath::SwitchMode::kXconnect ? proto::SwitchMode::kXconnect : proto::SwitchMode::kSwitch;
}

inline proto::TcAttach toTcAttach(datapath::TcAttach a) {
  return a == datapath::TcAttach::kTcx ? proto::TcAttach::kTcx : proto::TcAttach::kClsact;
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
