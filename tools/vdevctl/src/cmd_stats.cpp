// vdevctl stats [IFNAME] | stats --prometheus, and the port writers shared
// with `port show`.
#include <cinttypes>
#include <cstdio>

#include "commands.h"

namespace vdev::ctl {

using vdev::proto::PoolMsg;
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

uint64_t lostFrames(const PortStatsMsg& s) {
  return s.totalDrops() + s.xdp.rx_dropped + s.xdp.rx_ring_full + s.dev_tx_dropped;
}

void writePortInfo(JsonWriter& w, const PortInfo& p) {
  w.field("name", p.name);
  w.field("type", vdev::proto::portTypeName(p.type));
  w.field("ifindex", p.ifindex);
  w.field("queues", p.queues);
  w.field("queues_bound", p.queues_bound);
  w.field("xdp_mode", vdev::proto::xdpModeName(p.xdp_mode));
  w.field("bind_mode", vdev::proto::bindModeName(p.bind_mode));
  w.field("mtu", p.mtu);
  w.field("live", p.live);
  w.field("fast_rx", p.fast_rx);
  if (p.mac) w.field("mac", vdev::formatMac(*p.mac));
}

// Field names and order: vdevd's --stats-json (daemon/src/stats_format.cpp,
// docs/vdevd.md), so that tools reading one read the other.
void writePortCounters(JsonWriter& w, const PortStatsMsg& s) {
  w.field("rx_packets", s.rx_packets);
  w.field("rx_bytes", s.rx_bytes);
  w.field("tx_packets", s.tx_packets);
  w.field("tx_bytes", s.tx_bytes);
  w.field("tx_outstanding", s.tx_outstanding);
  w.key("drops").beginObject();
  for (uint32_t i = 0; i < vdev::proto::kNumDropReasons; ++i) w.field(vdev::proto::dropName(i), s.drops[i]);
  w.endObject();
  w.key("xdp_stats").beginObject();
  w.field("rx_dropped", s.xdp.rx_dropped);
  w.field("rx_invalid_descs", s.xdp.rx_invalid_descs);
  w.field("tx_invalid_descs", s.xdp.tx_invalid_descs);
  w.field("rx_ring_full", s.xdp.rx_ring_full);
  w.field("rx_fill_ring_empty_descs", s.xdp.rx_fill_ring_empty_descs);
  w.field("tx_ring_empty_descs", s.xdp.tx_ring_empty_descs);
  w.endObject();
  w.key("xdp_prog").beginObject();
  w.field("pass", s.prog.pass);
  w.field("redirect", s.prog.redirect);
  w.field("no_socket", s.prog.no_socket);
  w.field("fast", s.prog.fast);
  w.endObject();
  w.key("dev").beginObject();
  w.field("tx_dropped", s.dev_tx_dropped);
  w.endObject();
}

namespace {

// The pool's places, in vdevd's order. Member pointers keep the text, JSON
// and Prometheus writers in step.
struct PoolPlace {
  const char* name;
  uint64_t PoolMsg::*field;
};
constexpr PoolPlace kPoolPlaces[] = {
    {"free", &PoolMsg::free},           {"fill_ring", &PoolMsg::fill_ring},
    {"kernel_rx", &PoolMsg::kernel_rx}, {"rx_ring", &PoolMsg::rx_ring},
    {"rx_burst", &PoolMsg::rx_burst},   {"port_rings", &PoolMsg::port_rings},
    {"tx_ring", &PoolMsg::tx_ring},     {"kernel_tx", &PoolMsg::kernel_tx},
    {"comp_ring", &PoolMsg::comp_ring},
};

std::string u(uint64_t v) { return std::to_string(v); }

std::string statsText(const StatsReply& r) {
  std::string o;
  for (const PortStatsMsg& s : r.ports) {
    const PortInfo& p = s.port;
    o += p.name + ": " + vdev::proto::portTypeName(p.type) + ", ifindex " + u(p.ifindex) + ", " +
         queuesText(p) + (p.queues == 1 ? " queue" : " queues") + ", xdp " +
         vdev::proto::xdpModeName(p.xdp_mode) + ", bind " + vdev::proto::bindModeName(p.bind_mode) +
         ", mtu " + u(p.mtu) + ", " + stateName(p) + (p.fast_rx ? "" : ", fast-rx off") + "\n";
    o += "    rx        " + u(s.rx_packets) + " packets  " + u(s.rx_bytes) + " bytes\n";
    o += "    tx        " + u(s.tx_packets) + " packets  " + u(s.tx_bytes) +
         " bytes  outstanding " + u(s.tx_outstanding) + "\n";
    o += "    drops    ";
    for (uint32_t i = 0; i < vdev::proto::kNumDropReasons; ++i) {
      if (i == 4) o += "\n             ";  // two lines of four reasons
      o += std::string(" ") + vdev::proto::dropName(i) + " " + u(s.drops[i]);
    }
    o += "  (total " + u(s.totalDrops()) + ")\n";
    o += "    xdp_stats rx_dropped " + u(s.xdp.rx_dropped) + " rx_invalid_descs " +
         u(s.xdp.rx_invalid_descs) + " tx_invalid_descs " + u(s.xdp.tx_invalid_descs) +
         "\n              rx_ring_full " + u(s.xdp.rx_ring_full) + " rx_fill_ring_empty_descs " +
         u(s.xdp.rx_fill_ring_empty_descs) + " tx_ring_empty_descs " +
         u(s.xdp.tx_ring_empty_descs) + "\n";
    o += "    xdp_prog  pass " + u(s.prog.pass) + " redirect " + u(s.prog.redirect) +
         " no_socket " + u(s.prog.no_socket) + " fast " + u(s.prog.fast) + "\n";
    o += "    dev       tx_dropped " + u(s.dev_tx_dropped) + "\n";
  }
  if (r.pool) {
    const PoolMsg& q = *r.pool;
    o += "pool: total " + u(q.total) + " =";
    bool first = true;
    for (const auto& pl : kPoolPlaces) {
      o += std::string(first ? " " : " + ") + pl.name + " " + u(q.*pl.field);
      first = false;
    }
    o += " (sum " + u(q.sum()) + (q.sum() == q.total ? ", adds up)\n" : ", MISMATCH)\n");
  }
  if (r.fdb_entries) o += "fdb entries: " + u(*r.fdb_entries) + "\n";
  return o;
}

std::string statsJson(const StatsReply& r, bool pretty) {
  JsonWriter w(pretty);
  w.beginObject();
  w.key("ports").beginArray();
  for (const PortStatsMsg& s : r.ports) {
    w.beginObject();
    writePortInfo(w, s.port);
    writePortCounters(w, s);
    w.endObject();
  }
  w.endArray();
  if (r.pool) {
    w.key("pool").beginObject();
    w.field("total", r.pool->total);
    for (const auto& pl : kPoolPlaces) w.field(pl.name, (*r.pool).*pl.field);
    w.field("sum", r.pool->sum());
    w.endObject();
  }
  if (r.fdb_entries) w.field("fdb_entries", *r.fdb_entries);
  w.endObject();
  return w.str();
}

// One metric family per counter; every port is a sample of it.
struct PortMetric {
  const char* name;
  const char* type;
  const char* help;
  uint64_t (*get)(const PortStatsMsg&);
};
constexpr PortMetric kPortMetrics[] = {
    {"vdev_port_rx_packets_total", "counter", "Frames received on the port's AF_XDP sockets.",
     [](const PortStatsMsg& s) { return s.rx_packets; }},
    {"vdev_port_rx_bytes_total", "counter", "Bytes received on the port's AF_XDP sockets.",
     [](const PortStatsMsg& s) { return s.rx_bytes; }},
    {"vdev_port_tx_packets_total", "counter", "Frames put on the port's AF_XDP TX rings.",
     [](const PortStatsMsg& s) { return s.tx_packets; }},
    {"vdev_port_tx_bytes_total", "counter", "Bytes put on the port's AF_XDP TX rings.",
     [](const PortStatsMsg& s) { return s.tx_bytes; }},
    {"vdev_port_tx_outstanding", "gauge", "Frames sent on the port and not completed yet.",
     [](const PortStatsMsg& s) { return s.tx_outstanding; }},
    {"vdev_port_xdp_rx_dropped_total", "counter",
     "XDP_STATISTICS rx_dropped of the port's sockets (no fill buffer, frame too long).",
     [](const PortStatsMsg& s) { return s.xdp.rx_dropped; }},
    {"vdev_port_xdp_rx_invalid_descs_total", "counter",
     "XDP_STATISTICS rx_invalid_descs of the port's sockets.",
     [](const PortStatsMsg& s) { return s.xdp.rx_invalid_descs; }},
    {"vdev_port_xdp_tx_invalid_descs_total", "counter",
     "XDP_STATISTICS tx_invalid_descs of the port's sockets.",
     [](const PortStatsMsg& s) { return s.xdp.tx_invalid_descs; }},
    {"vdev_port_xdp_rx_ring_full_total", "counter",
     "XDP_STATISTICS rx_ring_full of the port's sockets.",
     [](const PortStatsMsg& s) { return s.xdp.rx_ring_full; }},
    {"vdev_port_xdp_rx_fill_ring_empty_descs_total", "counter",
     "XDP_STATISTICS rx_fill_ring_empty_descs of the port's sockets (same events as rx_dropped).",
     [](const PortStatsMsg& s) { return s.xdp.rx_fill_ring_empty_descs; }},
    {"vdev_port_xdp_tx_ring_empty_descs_total", "counter",
     "XDP_STATISTICS tx_ring_empty_descs of the port's sockets.",
     [](const PortStatsMsg& s) { return s.xdp.tx_ring_empty_descs; }},
    {"vdev_port_xdp_prog_pass_total", "counter",
     "Frames the port's XDP program passed to the host stack.",
     [](const PortStatsMsg& s) { return s.prog.pass; }},
    {"vdev_port_xdp_prog_redirect_total", "counter",
     "Frames the port's XDP program redirected to vdevd.",
     [](const PortStatsMsg& s) { return s.prog.redirect; }},
    {"vdev_port_xdp_prog_no_socket_total", "counter",
     "Frames the port's XDP program dropped: no socket bound to the queue.",
     [](const PortStatsMsg& s) { return s.prog.no_socket; }},
    {"vdev_port_xdp_prog_fast_total", "counter",
     "Frames the port's XDP program sent on the kernel fast path (--fast-path).",
     [](const PortStatsMsg& s) { return s.prog.fast; }},
    {"vdev_port_dev_tx_dropped_total", "counter", "The port device's own tx_dropped.",
     [](const PortStatsMsg& s) { return s.dev_tx_dropped; }},
    {"vdev_port_up", "gauge", "1 if the port has open sockets and its link is up.",
     [](const PortStatsMsg& s) { return uint64_t(s.port.live); }},
    {"vdev_port_queues", "gauge", "AF_XDP sockets (queues) of the port.",
     [](const PortStatsMsg& s) { return uint64_t(s.port.queues); }},
    {"vdev_port_queues_bound", "gauge", "Queues of the port with an AF_XDP socket now (a VM may not have opened them all).",
     [](const PortStatsMsg& s) { return uint64_t(s.port.queues_bound); }},
    {"vdev_port_mtu_bytes", "gauge", "MTU of the port's device.",
     [](const PortStatsMsg& s) { return uint64_t(s.port.mtu); }},
};

std::string statsPrometheus(const StatsReply& r, const vdev::proto::InfoMsg* info) {
  PromWriter w;
  if (info) {
    w.family("vdev_build_info", "gauge", "vdevd's version and switching mode; always 1.");
    w.sample("vdev_build_info",
             {{"version", info->version}, {"mode", vdev::proto::switchModeName(info->mode)}}, 1);
    w.family("vdev_uptime_seconds", "gauge", "Seconds since vdevd started.");
    w.sample("vdev_uptime_seconds", {}, info->uptime_s);
  }
  w.family("vdev_port_info", "gauge",
           "A port's type and modes as labels; always 1 (join on port).");
  for (const auto& s : r.ports)
    w.sample("vdev_port_info",
             {{"port", s.port.name},
              {"type", vdev::proto::portTypeName(s.port.type)},
              {"xdp_mode", vdev::proto::xdpModeName(s.port.xdp_mode)},
              {"bind_mode", vdev::proto::bindModeName(s.port.bind_mode)},
              {"fast_rx", s.port.fast_rx ? "on" : "off"}},
             1);
  for (const PortMetric& m : kPortMetrics) {
    w.family(m.name, m.type, m.help);
    for (const auto& s : r.ports) w.sample(m.name, {{"port", s.port.name}}, m.get(s));
  }
  // Drop reasons are disjoint (each dropped frame counted once): one family
  // with a reason label, so sum() by port is meaningful.
  w.family("vdev_port_drops_total", "counter",
           "Frames vdevd dropped, by reason, charged to this port (see docs/vdevd.md).");
  for (const auto& s : r.ports)
    for (uint32_t i = 0; i < vdev::proto::kNumDropReasons; ++i)
      w.sample("vdev_port_drops_total", {{"port", s.port.name}, {"reason", vdev::proto::dropName(i)}},
               s.drops[i]);
  if (r.pool) {
    w.family("vdev_pool_frames", "gauge", "UMEM frames by where they are now.");
    for (const auto& pl : kPoolPlaces)
      w.sample("vdev_pool_frames", {{"place", pl.name}}, (*r.pool).*pl.field);
    w.family("vdev_pool_capacity_frames", "gauge", "UMEM frames in total.");
    w.sample("vdev_pool_capacity_frames", {}, r.pool->total);
  }
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
