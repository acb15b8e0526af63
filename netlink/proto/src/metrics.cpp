#include "proto/metrics.h"

#include <utility>
#include <vector>

#include "stats/format.h"

namespace vdev::proto {

namespace {

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

// The caps per non-root uid and each uid's use of them (vdevctl info's
// "uid" lines): one family per resource, a sample per uid. What a uid may
// still take is the cap less its use; its request rate is rate() of
// vdev_uid_requests_total.
void uidMetrics(stats::PromWriter& w, const InfoMsg& info) {
  const InfoMsg::UidCaps& c = *info.uid_caps;
  w.family("vdev_uid_cap", "gauge",
           "vdevd's caps per non-root uid (--uid-max-ports, --uid-max-fdb, --uid-max-capture, --uid-max-rate, "
           "--uid-rate-burst), by resource; 0: no cap.");
  const std::pair<const char*, uint64_t> caps[] = {{"ports", c.ports},
                                                   {"fdb_entries", c.fdb},
                                                   {"capture_bytes", c.capture_bytes},
                                                   {"requests_per_second", c.rate},
                                                   {"request_burst", c.burst}};
  for (const auto& [resource, v] : caps) w.sample("vdev_uid_cap", {{"resource", resource}}, v);
  struct Use {
    const char* name;
    const char* type;
    const char* help;
    uint64_t (*get)(const InfoMsg::UidUse&);
  };
  static constexpr Use kUse[] = {
      {"vdev_uid_ports", "gauge", "Ports a non-root uid added (against --uid-max-ports).",
       [](const InfoMsg::UidUse& u) { return uint64_t(u.ports); }},
      {"vdev_uid_fdb_entries", "gauge", "MACs learned on a non-root uid's ports together (against --uid-max-fdb).",
       [](const InfoMsg::UidUse& u) { return uint64_t(u.fdb); }},
      {"vdev_uid_capture_bytes", "gauge", "Memory of a non-root uid's running captures (against --uid-max-capture).",
       [](const InfoMsg::UidUse& u) { return u.capture_bytes; }},
      {"vdev_uid_requests_total", "counter",
       "Control requests of a non-root uid answered since vdevd started; their rate is its use of --uid-max-rate.",
       [](const InfoMsg::UidUse& u) { return u.requests; }},
      {"vdev_uid_requests_refused_total", "counter",
       "Control requests of a non-root uid refused by --uid-max-rate (EAGAIN) since vdevd started.",
       [](const InfoMsg::UidUse& u) { return u.requests_refused; }},
  };
  for (const Use& m : kUse) {
    w.family(m.name, m.type, m.help);
    for (const InfoMsg::UidUse& u : info.uid_use) {
      const std::string uid = std::to_string(u.uid);
      w.sample(m.name, {{"uid", uid}}, m.get(u));
    }
  }
}

}  // namespace

std::string prometheusText(const StatsReply& r, const InfoMsg* info) {
  stats::PromWriter w;
  if (info) {
    w.family("vdev_build_info", "gauge", "vdevd's version and switching mode; always 1.");
    w.sample("vdev_build_info", {{"version", info->version}, {"mode", switchModeName(info->mode)}}, 1);
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
    if (info->uid_caps) uidMetrics(w, *info);
  }
  w.family("vdev_port_info", "gauge", "A port's type and modes as labels; always 1 (join on port).");
  for (const auto& s : r.ports)
    w.sample("vdev_port_info",
             {{"port", s.port.name},
              {"type", portTypeName(s.port.type)},
              {"xdp_mode", xdpModeName(s.port.xdp_mode)},
              {"bind_mode", bindModeName(s.port.bind_mode)},
              {"fast_rx", s.port.fast_rx ? "on" : "off"},
              {"hook", s.port.hook ? portHookName(*s.port.hook) : "xdp"}},
             1);
  // Every counter of the table: drop reasons are disjoint (each dropped
  // frame counted once), one family with a reason label, so that sum() by
  // port is meaningful.
  std::vector<stats::NamedPort> ports;
  for (const auto& s : r.ports) ports.push_back({s.port.name, &s.counters});
  stats::putPortMetrics(w, ports);
  for (const PortGauge& g : kPortGauges) {
    w.family(g.name, "gauge", g.help);
    for (const auto& s : r.ports) w.sample(g.name, {{"port", s.port.name}}, g.get(s.port));
  }
  if (r.pool) stats::putPoolMetrics(w, *r.pool);
  if (r.fdb_entries) {
    w.family("vdev_fdb_entries", "gauge", "Entries in the MAC table.");
    w.sample("vdev_fdb_entries", {}, *r.fdb_entries);
  }
  return w.str();
}

}  // namespace vdev::proto
