// vdevctl stats [IFNAME] | stats --prometheus, and the port writers shared
// with `port show`.
#include <vector>

#include "commands.h"
#include "proto/metrics.h"
#include "stats/format.h"

namespace vdev::ctl {

using vdev::proto::PortInfo;
using vdev::proto::PortStatsMsg;
using vdev::proto::StatsReply;

const char* stateName(const PortInfo& p) { return p.live ? "up" : "down"; }

std::string queuesText(const PortInfo& p) {
  // "1/4": a multi-queue tap whose VM has opened one of its four queues.
  if (p.live && p.queues_bound != p.queues)
    return std::to_string(p.queues_bound) + "/" + std::to_string(p.queues);
  return std::to_string(p.queues);
}

namespace {

// A port's policy in effect, one key per row of spec/port_policy.h, by the
// field's type: the numbers and guards always; the allowed MAC and
// addresses only while the port has them (absent: any); the VLANs beside
// "limits", only while the port has VLAN settings (VLAN 1, untagged).
void putPolicy(Json&, Json& l, std::string_view k, uint32_t v) { l[std::string(k)] = v; }
void putPolicy(Json&, Json& l, std::string_view k, uint64_t v) { l[std::string(k)] = v; }
void putPolicy(Json&, Json& l, std::string_view k, bool v) { l[std::string(k)] = v; }
void putPolicy(Json&, Json& l, std::string_view k, const vdev::Mac& v) {
  if (!vdev::macIsZero(v)) l[std::string(k)] = vdev::formatMac(v);
}
void putPolicy(Json&, Json& l, std::string_view k, const std::vector<vdev::IpAddr>& v) {
  if (v.empty()) return;
  Json& ips = l[std::string(k)] = Json::array();
  for (const vdev::IpAddr& ip : v) ips.push_back(vdev::formatIp(ip));
}
void putPolicy(Json& o, Json&, std::string_view k, const vdev::VlanConfig& v) {
  if (!v.configured()) return;
  Json& j = o[std::string(k)] = Json::object();
  j["pvid"] = v.pvid;
  j["tagged"] = vdev::formatVidList(v.tagged);
  j["untagged"] = vdev::formatVidList(v.untagged);
}

}  // namespace

void writePortInfo(Json& o, const PortInfo& p) {
  o["name"] = p.name;
  o["type"] = vdev::proto::portTypeName(p.type);
  o["ifindex"] = p.ifindex;
  o["queues"] = p.queues;
  o["queues_bound"] = p.queues_bound;
  o["xdp_mode"] = vdev::proto::xdpModeName(p.xdp_mode);
  o["bind_mode"] = vdev::proto::bindModeName(p.bind_mode);
  o["mtu"] = p.mtu;
  o["live"] = p.live;
  o["fast_rx"] = p.fast_rx;
  o["hook"] = p.hook ? vdev::proto::portHookName(*p.hook) : "xdp";
  if (p.tc_attach) o["tc_attach"] = vdev::proto::tcAttachName(*p.tc_attach);
  if (!p.hook_note.empty()) o["hook_note"] = p.hook_note;
  if (!p.link_note.empty()) o["link_note"] = p.link_note;
  o["uplink"] = p.uplink;
  o["isolated"] = p.isolated;
  if (p.mac) o["mac"] = vdev::formatMac(*p.mac);
  // What the port has in effect (its own, or vdevd's defaults; 0: no
  // limit). Absent: a vdevd that does not send them.
  if (p.limits) {
    Json& l = o["limits"] = Json::object();
    vdev::spec::forEachPolicyField([&](const auto& r) { putPolicy(o, l, r.json, (*p.limits).*r.value); });
  }
}

void writePortCounters(Json& o, const PortStatsMsg& s) { vdev::stats::putPortCounters(o, s.counters); }

namespace {

std::string u(uint64_t v) { return std::to_string(v); }

std::string statsText(const StatsReply& r) {
  std::string o;
  for (const PortStatsMsg& s : r.ports) {
    const PortInfo& p = s.port;
    o += p.name + ": " + vdev::proto::portTypeName(p.type) + ", ifindex " + u(p.ifindex) + ", " +
         queuesText(p) + (p.queues == 1 ? " queue" : " queues") + ", xdp " +
         vdev::proto::xdpModeName(p.xdp_mode) + ", bind " + vdev::proto::bindModeName(p.bind_mode) +
         ", mtu " + u(p.mtu) + ", " + stateName(p) + (p.fast_rx ? "" : ", fast-rx off") + "\n";
    o += vdev::stats::portText(s.counters);
  }
  if (r.pool) o += "pool: " + vdev::stats::poolText(*r.pool) + "\n";
  if (r.fdb_entries) o += "fdb entries: " + u(*r.fdb_entries) + "\n";
  return o;
}

std::string statsJson(const StatsReply& r, bool pretty) {
  Json o = Json::object();
  Json& ports = o["ports"] = Json::array();
  for (const PortStatsMsg& s : r.ports) {
    Json p = Json::object();
    writePortInfo(p, s.port);
    writePortCounters(p, s);
    // The punt device is no port: its own object, beside "ports".
    if (s.port.type == vdev::proto::PortType::kPunt)
      o["punt"] = std::move(p);
    else
      ports.push_back(std::move(p));
  }
  if (r.pool) o["pool"] = vdev::stats::poolJson(*r.pool);
  if (r.fdb_entries) o["fdb_entries"] = *r.fdb_entries;
  return jsonText(o, pretty);
}

}  // namespace

int cmdStats(Context& ctx, Args& a) {
  bool prometheus = false;
  std::string name;
  while (!a.empty()) {
    const std::string arg = a.next("argument");
    if (arg == "--prometheus") {
      prometheus = true;
    } else if (!arg.empty() && arg[0] == '-') {
      a.unknown(arg);
    } else if (name.empty()) {
      // Re-parse through ifname() for its checks and messages.
      Args one(a.command(), {arg});
      name = one.ifname("IFNAME");
    } else {
      a.unknown(arg);
    }
  }
  if (prometheus && ctx.opt().json) a.usage("--prometheus and -j exclude each other");
  if (prometheus && !name.empty()) a.usage("--prometheus reports every port; no IFNAME");

  auto r = ctx.client().stats(name);
  if (!r) return Context::fail(r.error());
  if (prometheus) {
    auto info = ctx.client().info();
    if (!info) return Context::fail(info.error());
    return Context::print(vdev::proto::prometheusText(*r, &*info));
  }
  if (ctx.opt().json) return Context::print(statsJson(*r, ctx.opt().pretty));
  return Context::print(statsText(*r));
}

}  // namespace vdev::ctl
