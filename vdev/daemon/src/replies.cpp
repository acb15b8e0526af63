#include "replies.h"

#include <cstring>
#include <iterator>
#include <utility>

namespace vdev::daemon {

proto::PortInfo toPortInfo(const datapath::PortStats& s, proto::PortType type) {
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

uint64_t kernelFeatureBits(const datapath::Datapath::KernelUse& k) {
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

proto::PortStatsMsg toPortStatsMsg(const datapath::PortStats& s, proto::PortType type) {
  return proto::PortStatsMsg{toPortInfo(s, type), s.counters};
}

proto::StatsReply toStatsReply(const datapath::DatapathStats& d, std::string_view only) {
  proto::StatsReply r;
  for (const auto& p : d.ports)
    if (only.empty() || p.name == only) r.ports.push_back(toPortStatsMsg(p));
  r.pool = d.pool;
  r.fdb_entries = d.fdb_entries;
  return r;
}

proto::FdbEntryMsg toFdbEntryMsg(const datapath::Fdb::Entry& e, std::string port, uint64_t now_ns) {
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
