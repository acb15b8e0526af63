#include "daemon/stats_format.h"

#include <cinttypes>
#include <cstdio>

namespace vdev::daemon {

namespace {

void kv(std::string& o, const char* k, uint64_t v, bool comma = true) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "\"%s\": %" PRIu64 "%s", k, v, comma ? ", " : "");
  o += buf;
}

void ks(std::string& o, const char* k, const std::string& v, bool comma = true) {
  o += "\"";
  o += k;
  o += "\": \"";
  for (char c : v) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  o += comma ? "\", " : "\"";
}

}  // namespace

std::string statsJson(const datapath::DatapathStats& s) {
  std::string o = "{\"ports\": [";
  for (size_t i = 0; i < s.ports.size(); i++) {
    const datapath::PortStats& p = s.ports[i];
    if (i) o += ", ";
    o += "{";
    ks(o, "name", p.name);
    kv(o, "ifindex", uint64_t(p.ifindex));
    kv(o, "queues", p.queues);
    kv(o, "queues_bound", p.queues_bound);
    ks(o, "xdp_mode", p.xdp_mode);
    ks(o, "bind_mode", p.bind_mode);
    kv(o, "mtu", p.mtu);
    o += std::string("\"live\": ") + (p.live ? "true" : "false") + ", ";
    o += std::string("\"fast_rx\": ") + (p.fast_rx ? "true" : "false") + ", ";
    kv(o, "rx_packets", p.c.rx_packets);
    kv(o, "rx_bytes", p.c.rx_bytes);
    kv(o, "tx_packets", p.c.tx_packets);
    kv(o, "tx_bytes", p.c.tx_bytes);
    kv(o, "tx_outstanding", p.tx_outstanding);
    o += "\"drops\": {";
    for (uint32_t r = 0; r < datapath::kNumDropReasons; r++) kv(o, datapath::dropReasonName(r), p.c.drops[r], r + 1 < datapath::kNumDropReasons);
    o += "}, \"xdp_stats\": {";
    kv(o, "rx_dropped", p.xdp.rx_dropped);
    kv(o, "rx_invalid_descs", p.xdp.rx_invalid_descs);
    kv(o, "tx_invalid_descs", p.xdp.tx_invalid_descs);
    kv(o, "rx_ring_full", p.xdp.rx_ring_full);
    kv(o, "rx_fill_ring_empty_descs", p.xdp.rx_fill_ring_empty_descs);
    kv(o, "tx_ring_empty_descs", p.xdp.tx_ring_empty_descs, false);
    o += "}, \"xdp_prog\": {";
    kv(o, "pass", p.prog.pass);
    kv(o, "redirect", p.prog.redirect);
    kv(o, "no_socket", p.prog.no_socket);
    kv(o, "fast", p.prog.fast, false);
    o += "}, \"dev\": {";
    kv(o, "tx_dropped", p.dev_tx_dropped, false);
    o += "}}";
  }
  o += "], \"removed_ports\": {";
  kv(o, "count", s.removed_ports);
  kv(o, "rx_packets", s.removed.rx_packets);
  kv(o, "rx_bytes", s.removed.rx_bytes);
  kv(o, "tx_packets", s.removed.tx_packets);
  kv(o, "tx_bytes", s.removed.tx_bytes);
  o += "\"drops\": {";
  for (uint32_t r = 0; r < datapath::kNumDropReasons; r++) kv(o, datapath::dropReasonName(r), s.removed.drops[r], r + 1 < datapath::kNumDropReasons);
  o += "}}, \"pool\": {";
  const datapath::PoolStats& q = s.pool;
  kv(o, "total", q.total);
  kv(o, "free", q.free);
  kv(o, "fill_ring", q.fill_ring);
  kv(o, "kernel_rx", q.kernel_rx);
  kv(o, "rx_ring", q.rx_ring);
  kv(o, "rx_burst", q.rx_burst);
  kv(o, "port_rings", q.port_rings);
  kv(o, "tx_ring", q.tx_ring);
  kv(o, "kernel_tx", q.kernel_tx);
  kv(o, "comp_ring", q.comp_ring);
  kv(o, "sum", q.sum(), false);
  o += "}, ";
  kv(o, "fdb_entries", s.fdb_entries, false);
  o += "}\n";
  return o;
}

std::string statsTable(const datapath::DatapathStats& s) {
  std::string o;
  char buf[512];
  for (const datapath::PortStats& p : s.ports) {
    std::snprintf(buf, sizeof buf,
                  "%s: ifindex %d, %u/%u queue(s) bound, xdp %s, %s%s, mtu %u%s\n"
                  "    rx %" PRIu64 " packets %" PRIu64 " bytes   tx %" PRIu64 " packets %" PRIu64
                  " bytes   outstanding %" PRIu64 "\n    drops:",
                  p.name.c_str(), p.ifindex, p.queues_bound, p.queues, p.xdp_mode, p.bind_mode, p.live ? "" : " (down)",
                  p.mtu, p.fast_rx ? "" : ", fast-rx off", p.c.rx_packets, p.c.rx_bytes, p.c.tx_packets, p.c.tx_bytes, p.tx_outstanding);
    o += buf;
    for (uint32_t r = 0; r < datapath::kNumDropReasons; r++) {
      std::snprintf(buf, sizeof buf, " %s %" PRIu64, datapath::dropReasonName(r), p.c.drops[r]);
      o += buf;
    }
    std::snprintf(buf, sizeof buf,
                  "\n    kernel: rx_dropped %" PRIu64 " rx_ring_full %" PRIu64 " fill_empty %" PRIu64
                  " tx_invalid %" PRIu64 " dev_tx_dropped %" PRIu64 " xdp_pass %" PRIu64
                  " xdp_no_socket %" PRIu64 " xdp_fast %" PRIu64 "\n",
                  uint64_t(p.xdp.rx_dropped), uint64_t(p.xdp.rx_ring_full),
                  uint64_t(p.xdp.rx_fill_ring_empty_descs), uint64_t(p.xdp.tx_invalid_descs), p.dev_tx_dropped, p.prog.pass, p.prog.no_socket, p.prog.fast);
    o += buf;
  }
  if (s.removed_ports) {
    std::snprintf(buf, sizeof buf,
                  "removed ports (%" PRIu64 "): rx %" PRIu64 " packets %" PRIu64 " bytes   tx %" PRIu64
                  " packets %" PRIu64 " bytes   drops %" PRIu64 "\n",
                  s.removed_ports, s.removed.rx_packets, s.removed.rx_bytes, s.removed.tx_packets,
                  s.removed.tx_bytes, s.removed.totalDrops());
    o += buf;
  }
  const datapath::PoolStats& q = s.pool;
  std::snprintf(buf, sizeof buf,
                "frames: total %" PRIu64 " = free %" PRIu64 " + fill %" PRIu64 " + kernel_rx %" PRIu64
                " + rx_ring %" PRIu64 " + port_rings %" PRIu64 " + tx_ring %" PRIu64 " + kernel_tx %" PRIu64
                " + comp_ring %" PRIu64 " (sum %" PRIu64 "%s)\n",
                q.total, q.free, q.fill_ring, q.kernel_rx, q.rx_ring, q.port_rings, q.tx_ring,
                q.kernel_tx, q.comp_ring, q.sum(), q.sum() == q.total ? ", adds up" : ", MISMATCH");
  o += buf;
  return o;
}

}  // namespace vdev::daemon
