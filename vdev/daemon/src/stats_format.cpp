#include "daemon/stats_format.h"

#include <cstdio>
#include <string_view>

#include "stats/format.h"

namespace vdev::daemon {

using stats::Json;
using spec::bindModeName;
using spec::portHookName;
using spec::tcAttachName;
using spec::xdpModeName;

std::string statsJson(const datapath::DatapathStats& s) {
  Json o = Json::object();
  Json& ports = o["ports"] = Json::array();
  for (const datapath::PortStats& p : s.ports) {
    Json j = Json::object();
    if (p.punt) {
      // The punt device is no port: its own object (docs/vdevd.md, "Statistics JSON").
      j["name"] = p.name;
      j["ifindex"] = p.ifindex;
      j["mtu"] = p.mtu;
      j["live"] = p.live;
      stats::putPortCounters(j, p.counters);
      o["punt"] = std::move(j);
      continue;
    }
    j["name"] = p.name;
    j["ifindex"] = p.ifindex;
    j["queues"] = p.queues;
    j["queues_bound"] = p.queues_bound;
    j["xdp_mode"] = xdpModeName(p.xdp_mode);
    j["hook"] = portHookName(p.hook);
    if (!p.hook_note.empty()) j["hook_note"] = p.hook_note;
    if (!p.link_note.empty()) j["link_note"] = p.link_note;
    if (p.tc_attach) {
      j["tc_attach"] = tcAttachName(*p.tc_attach);
      if (*p.tc_attach == datapath::TcAttach::kClsact) j["clsact_made"] = p.clsact_made;
    }
    j["bind_mode"] = bindModeName(p.bind_mode);
    j["mtu"] = p.mtu;
    j["live"] = p.live;
    j["fast_rx"] = p.fast_rx;
    stats::putPortCounters(j, p.counters);
    ports.push_back(std::move(j));
  }
  Json& removed = o["removed_ports"] = Json::object();
  removed["count"] = s.removed_ports;
  stats::putPortCounters(removed, s.removed, stats::Origin::kCounted);
  o["pool"] = stats::poolJson(s.pool);
  o["fdb_entries"] = s.fdb_entries;
  return stats::jsonText(o);
}

std::string statsTable(const datapath::DatapathStats& s) {
  std::string o;
  char buf[512];
  for (const datapath::PortStats& p : s.ports) {
    if (p.punt)
      std::snprintf(buf, sizeof buf, "punt device %s: ifindex %d, mtu %u%s\n", p.name.c_str(), p.ifindex, p.mtu,
                    p.live ? "" : " (down)");
    else
      std::snprintf(buf, sizeof buf, "%s: ifindex %d, %u/%u queue(s) bound, hook %s, xdp %s, %s%s, mtu %u%s\n",
                    p.name.c_str(), p.ifindex, p.queues_bound, p.queues, portHookName(p.hook),
                    xdpModeName(p.xdp_mode), bindModeName(p.bind_mode),
                    p.live ? "" : " (down)", p.mtu, p.fast_rx ? "" : ", fast-rx off");
    o += buf;
    o += stats::portText(p.counters);
  }
  if (s.removed_ports) {
    o += "removed ports (" + std::to_string(s.removed_ports) + "):\n";
    o += stats::portText(s.removed, stats::Origin::kCounted);
  }
  o += "pool: " + stats::poolText(s.pool) + "\n";
  return o;
}

}  // namespace vdev::daemon
