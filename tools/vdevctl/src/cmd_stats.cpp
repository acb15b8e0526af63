// vdevctl stats [IFNAME] | stats --prometheus, and the port writers shared
// with `port show`.
#include <vector>

#include "commands.h"
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
  if (p.mac) o["mac"] = vdev::formatMac(*p.mac);
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

// A port's state as gauges, one family each; every port is a sample of it.
struct PortGauge {
  const char* name;
  const char* help;
  uint64_t (*get)(const PortInfo&);
};
constexpr PortGauge kPortGauges[] = {
    {"vdev_port_up", "1 if the port has open sockets and its link is up.",
     [](const PortInfo& p) { return uint64_t(p.live); }},
    {"vdev_port_queues", "AF_XDP sockets (queues) of the port.",
     [](const PortInfo& p) { return uint64_t(p.queues); }},
    {"vdev_port_queues_bound", "Queues of the port with an AF_XDP socket now (a VM may not have opened them all).",
     [](const PortInfo& p) { return uint64_t(p.queues_bound); }},
    {"vdev_port_mtu_bytes", "MTU of the port's device.",
     [](const PortInfo& p) { return uint64_t(p.mtu); }},
};

std::string statsPrometheus(const StatsReply& r, const vdev::proto::InfoMsg* info) {
  PromWriter w;
  if (info) {
    w.family("vdev_build_info", "gauge", "vdevd's version and switching mode; always 1.");
    w.sample("vdev_build_info",
             {{"version", info->version}, {"mode", vdev::proto::switchModeName(info->mode)}}, 1);
    w.family("vdev_uptime_seconds", "gauge", "Seconds since vdevd started.");
    w.sample("vdev_uptime_seconds", {}, info->uptime_s);
    // How many more ports fit, by what limits them (vdevctl info).
    const std::pair<const char*, const std::optional<uint32_t>*> room[] = {
        {"fds", &info->ports_fd_left}, {"pool", &info->ports_pool_left}, {"maps", &info->ports_map_left}};
    w.family("vdev_ports_room", "gauge",
             "Further one-queue ports each limit leaves room for: fds (the open-file limit), pool (the frame "
             "pool, ports at the XDP hook), maps (the fast path's per-port maps).");
    for (const auto& [limit, v] : room)
      if (*v) w.sample("vdev_ports_room", {{"limit", limit}}, **v);
  }
  w.family("vdev_port_info", "gauge",
           "A port's type and modes as labels; always 1 (join on port).");
  for (const auto& s : r.ports)
    w.sample("vdev_port_info",
             {{"port", s.port.name},
              {"type", vdev::proto::portTypeName(s.port.type)},
              {"xdp_mode", vdev::proto::xdpModeName(s.port.xdp_mode)},
              {"bind_mode", vdev::proto::bindModeName(s.port.bind_mode)},
              {"fast_rx", s.port.fast_rx ? "on" : "off"},
              {"hook", s.port.hook ? vdev::proto::portHookName(*s.port.hook) : "xdp"}},
             1);
  // Every counter of the table: drop reasons are disjoint (each dropped
  // frame counted once), one family with a reason label, so that sum() by
  // port is meaningful.
  std::vector<vdev::stats::NamedPort> ports;
  for (const auto& s : r.ports) ports.push_back({s.port.name, &s.counters});
  vdev::stats::putPortMetrics(w, ports);
  for (const PortGauge& g : kPortGauges) {
    w.family(g.name, "gauge", g.help);
    for (const auto& s : r.ports) w.sample(g.name, {{"port", s.port.name}}, g.get(s.port));
  }
  if (r.pool) vdev::stats::putPoolMetrics(w, *r.pool);
  if (r.fdb_entries) {
    w.family("vdev_fdb_entries", "gauge", "Entries in the MAC table.");
    w.sample("vdev_fdb_entries", {}, *r.fdb_entries);
  }
  return w.str();
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
    return Context::print(statsPrometheus(*r, &*info));
  }
  if (ctx.opt().json) return Context::print(statsJson(*r, ctx.opt().pretty));
  return Context::print(statsText(*r));
}

}  // namespace vdev::ctl
