// Datapath statistics (datapath/stats.h): the frame accounting and the
// per-port counters, read by the datapath thread between bursts.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "bpf_limits.h"
#include "datapath/datapath.h"

namespace vdev::datapath {

namespace {

uint64_t readSysfsU64(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  in >> v;
  return v;
}

}  // namespace

// Fast-path frames a tun or veth device refused because its queue was full
// are in its own tx_dropped as well as in vdevd's fast_xmit; the device's
// figure vdevd reports leaves them out, so every lost frame is counted
// once. Counted from when the port's current device appeared.
uint64_t Datapath::fastDropsCountedByDevice(const Port& p) {
  if (!fast_ || !p.ifindex()) return 0;
  const uint16_t index = p.index();
  FastDevBase& b = fast_sync_.devBase(index);
  const uint64_t full = fast_->read(index).queue_full;
  if (b.ifindex != p.ifindex()) {  // a new device (or a new port at the index)
    const std::string& drv = p.driver();
    b = FastDevBase{p.ifindex(), drv == "tun" || drv == "veth", b.ifindex ? full : 0};
  }
  return b.counts ? full - std::min(full, b.base) : 0;
}

PortCounterSnapshot Datapath::portSnapshot(const Port& p) const {
  PortCounterSnapshot s = p.snapshot();
  if (p.xdp() || (tc_ && p.hook() == PortHook::kTc)) {
    // What the port's program dropped for it: beyond its limits (its
    // earlier devices' programs' are in the port's own counters), and on
    // the skb path frames too long for vdevd's own path.
    if (!p.xdp()) s[kDropOversize] += tc_->ownOversize(p.index());
    LimitDrops ld = p.xdp() ? p.xdp()->limitDrops() : tc_->limitDrops(p.index());
    if (p.xdp() && p.copiesToVdevd()) {
      // The copy program's storm drops of the guests' copies (its row).
      const LimitDrops c = tc_->limitDrops(p.index());
      ld.bcast += c.bcast;
      ld.mcast += c.mcast;
    }
    for (const LimitDropRow& r : kLimitDropRows) s[r.counter] += ld.*r.count;
  }
  if (!fast_) return s;
  const FastPortStats f = fast_->read(p.index());
  s[kRxPackets] += f.rx_packets;
  s[kRxBytes] += f.rx_bytes;
  // Redirected to the port, less what its device refused: delivered. (The
  // kernel reports only the number of refused frames, so tx_bytes of the
  // fast path includes the bytes of refused ones.)
  s[kTxPackets] += f.tx_packets - std::min(f.drops, f.tx_packets);
  s[kTxBytes] += f.tx_bytes;
  s[kDropFastXmit] += f.drops;
  s[kDropOversize] += f.oversize;
  return s;
}

// ---------------------------------------------------------------------------
// Statistics.

PoolStats Datapath::poolStats() const {
  PoolStats s;
  s[stats::kPoolTotal] = pool_->total();
  s[stats::kPoolFree] = pool_->available();
  std::vector<const Port*> all(ports_.active().begin(), ports_.active().end());
  if (punt_) all.push_back(punt_.get());
  for (const Port* pp : all) {
    QueueAccounting a = pp->accounting();
    s[stats::kPoolFillRing] += a.fill_ring;
    s[stats::kPoolKernelRx] += a.kernel_rx;
    s[stats::kPoolRxRing] += a.rx_ring;
    s[stats::kPoolPortRings] += a.port_ring;
    s[stats::kPoolTxRing] += a.tx_ring;
    s[stats::kPoolKernelTx] += a.kernel_tx;
    s[stats::kPoolCompRing] += a.comp_ring;
  }
  s[stats::kPoolRxBurst] = 0;  // taken between bursts
  s[stats::kPoolKernelHeld] = held_->frames();
  return s;
}

// Owner-thread part of a statistics snapshot: what only the thread that
// owns the sockets may read (ring indices, socket options of sockets it may
// close at any time).
void Datapath::collectOwned(DatapathStats& out) const {
  out.pool = poolStats();
  out.ports.clear();
  auto owned = [this](const Port& p, PortStats& ps) {
    ps.index = p.index();
    ps.name = p.name();
    ps.ifindex = p.ifindex();
    ps.queues = uint32_t(p.queues().size());
    ps.queues_bound = ps.queues - p.unboundQueues();
    ps.live = p.live();
    ps.fast_rx = p.fastRx();
    ps.uplink = p.isUplink();
    ps.isolated = p.isolated();
    ps.limits = p.limits();
    ps.hook = portHookName(p.hook() == PortHook::kTc ? PortHook::kTc : PortHook::kXdp);
    ps.hook_note = p.hookNote();
    ps.link_note = p.linkNote();
    if (tc_ && (p.tcAttached() || p.copiesToVdevd())) {
      ps.tc_attach = tcAttachName(tc_->attachMode());
      ps.clsact_made = tc_->clsactMade(p.index());
    }
    ps.bind_mode = p.live() ? (p.zerocopy() ? "zerocopy" : "copy") : "closed";
    for (const auto& q : p.queues())
      if (q->xsk && q->xsk->registeredUmem()) ps.umem_registrations++;
    stats::PortValues& c = ps.counters;
    c[kTxOutstanding] = p.txOutstanding();
    const struct xdp_statistics x = p.xdpStats();
    c[kXdpRxDropped] = x.rx_dropped;
    c[kXdpRxInvalidDescs] = x.rx_invalid_descs;
    c[kXdpTxInvalidDescs] = x.tx_invalid_descs;
    c[kXdpRxRingFull] = x.rx_ring_full;
    c[kXdpRxFillRingEmptyDescs] = x.rx_fill_ring_empty_descs;
    c[kXdpTxRingEmptyDescs] = x.tx_ring_empty_descs;
  };
  for (Port* pp : ports_.active()) {
    PortStats ps;
    owned(*pp, ps);
    out.ports.push_back(std::move(ps));
  }
  if (punt_) {
    PortStats ps;
    owned(*punt_, ps);
    ps.punt = true;
    out.ports.push_back(std::move(ps));
  }
  out.fdb_entries = fdb_.dump(monotonicNs()).size();
}

DatapathStats Datapath::stats() {
  DatapathStats out;
  runOnDatapath([&] {
    collectOwned(out);
    // Counters, program counters and device counters, read by the thread
    // that may remove the port: the Port cannot go away underneath.
    for (PortStats& ps : out.ports) {
      if (ps.punt) continue;  // below
      Port& p = *ports_[ps.index];
      ps.mtu = p.mtu();
      ps.xdp_mode = p.xdp() ? xdpModeName(p.xdp()->mode()) : "none";
      stats::PortValues& c = ps.counters;
      // vdevd's own counts; their slots of the counters read here are 0.
      c += portSnapshot(p);
      if (p.xdp() || (tc_ && p.hook() == PortHook::kTc)) {
        // The port's program: XDP, or the skb path's counters of the port.
        const XdpProgCounters prog = p.xdp() ? p.xdp()->counters() : tc_->counters(p.index());
        c[kProgPass] = prog.pass;
        c[kProgRedirect] = prog.redirect;
        c[kProgNoSocket] = prog.no_socket;
        c[kProgFast] = prog.fast;
        if (p.xdp() && tc_ && p.copiesToVdevd()) {
          // An uplink at XDP: the copies its tc program handed vdevd (or
          // could not) of frames the XDP program passed to the host.
          const XdpProgCounters copies = tc_->counters(p.index());
          c[kProgRedirect] += copies.redirect;
          c[kProgNoSocket] += copies.no_socket;
        }
      }
      uint64_t dev = readSysfsU64("/sys/class/net/" + p.name() + "/statistics/tx_dropped");
      c[kDevTxDropped] = dev - std::min(dev, fastDropsCountedByDevice(p));
    }
    for (PortStats& ps : out.ports) {
      if (!ps.punt) continue;
      // The punt device: frames vdevd could not give to a port (drops by
      // reason: no_route), what its socket dropped (xdp_stats, above) and
      // what its near end refused (dev.tx_dropped) -- nothing else.
      ps.mtu = punt_->mtu();
      ps.xdp_mode = punt_->xdp() ? xdpModeName(punt_->xdp()->mode()) : "none";
      ps.counters += punt_->snapshot();
      ps.counters[kDevTxDropped] = punt_dev_->dropped();
    }
    out.removed = removed_;
    out.removed_ports = removed_ports_;
  });
  return out;
}

}  // namespace vdev::datapath
