// Datapath statistics (datapath/stats.h): the frame accounting and vdevd's
// per-port counts, copied by the datapath thread between bursts; the
// kernel's counters (BPF maps, sysfs) read by the calling thread
// (Datapath::stats, docs/architecture.md "Statistics").
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

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
// once. Counted from when the statistics first saw the port's current
// device. Calling thread, under stats_mu_ (fast_dev_base_ is the readers').
uint64_t Datapath::fastDropsCountedByDevice(const PortRows& r) {
  if (!fast_ || !r.ifindex) return 0;
  if (fast_dev_base_.size() <= r.index) fast_dev_base_.resize(size_t(r.index) + 1);
  FastDevBase& b = fast_dev_base_[r.index];
  const uint64_t full = fast_->read(r.index).queue_full;
  if (b.epoch != r.dev.epoch)  // a new device (or a new port at the index)
    b = FastDevBase{r.dev.ifindex, r.dev.counts, r.dev.base ? full : 0, r.dev.epoch};
  return b.counts ? full - std::min(full, b.base) : 0;
}

Datapath::PortRows Datapath::rowsOf(const Port& p) const {
  PortRows r;
  r.index = p.index();
  r.name = p.name();
  r.ifindex = p.ifindex();
  if (p.xdp()) {
    r.xdp_obj = &p.xdp()->object();
    r.xdp_slot = p.xdp()->slot();
  }
  r.tc = tc_.get();
  r.tc_hook = tc_ && !p.xdp() && p.hook() == PortHook::kTc;
  r.copies = tc_ && p.xdp() && p.copiesToVdevd();
  r.xdp_closed = p.xdpStatsClosed();
  p.socketFds(r.xsk_fds);
  return r;
}

PortCounterSnapshot Datapath::readRows(const PortRows& r) const {
  PortCounterSnapshot s{};
  if (r.xdp_obj || r.tc_hook) {
    // What the port's program dropped for it: beyond its limits (its
    // earlier devices' programs' are in the port's own counters), and on
    // the skb path frames too long for vdevd's own path.
    if (!r.xdp_obj) s[kDropOversize] += r.tc->ownOversize(r.index);
    LimitDrops ld = r.xdp_obj ? r.xdp_obj->limitDrops(r.xdp_slot) : r.tc->limitDrops(r.index);
    if (r.copies) {
      // The copy program's storm drops of the guests' copies (its row).
      const LimitDrops c = r.tc->limitDrops(r.index);
      ld.bcast += c.bcast;
      ld.mcast += c.mcast;
    }
    for (const LimitDropRow& lr : kLimitDropRows) s[lr.counter] += ld.*lr.count;
  }
  if (!fast_) return s;
  const FastPortStats f = fast_->read(r.index);
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

PortCounterSnapshot Datapath::portSnapshot(const Port& p) const {
  PortCounterSnapshot s = p.snapshot();
  s += readRows(rowsOf(p));
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

// The datapath thread's part of a statistics snapshot: what must agree
// with its own state (vdevd's counts, ring indices and the pool, socket
// options of sockets it may close at any time), and each port's PortRows
// for the calling thread's part. Memory reads only.
void Datapath::collectOwned(DatapathStats& out, std::vector<PortRows>& rows) {
  // What the kernel completed goes back to the pool first (no syscall): a
  // completion that came after the thread went to sleep would otherwise
  // show as a frame in flight in a snapshot of an idle datapath.
  for (Port* p : ports_.active())
    if (p->live()) p->reapCompletions(*pool_);
  out.pool = poolStats();
  out.ports.clear();
  rows.clear();
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
    ps.hook = p.hook() == PortHook::kTc ? PortHook::kTc : PortHook::kXdp;
    ps.hook_note = p.hookNote();
    ps.link_note = p.linkNote();
    if (tc_ && (p.tcAttached() || p.copiesToVdevd())) {
      ps.tc_attach = tc_->attachMode();
      ps.clsact_made = tc_->clsactMade(p.index());
    }
    ps.bind_mode = p.live() ? (p.zerocopy() ? BindMode::kZerocopy : BindMode::kCopy) : BindMode::kClosed;
    for (const auto& q : p.queues())
      if (q->xsk && q->xsk->registeredUmem()) ps.umem_registrations++;
    ps.mtu = p.mtu();
    ps.xdp_mode = p.xdp() ? p.xdp()->mode() : XdpMode::kNone;
    stats::PortValues& c = ps.counters;
    c[kTxOutstanding] = p.txOutstanding();
    // vdevd's own counts; the slots readKernel fills are 0 here.
    c += p.snapshot();
  };
  out.ports.reserve(ports_.active().size() + 1);
  rows.reserve(ports_.active().size() + 1);
  for (Port* pp : ports_.active()) {
    PortStats ps;
    owned(*pp, ps);
    out.ports.push_back(std::move(ps));
    PortRows r = rowsOf(*pp);
    if (fast_) {
      // The device the fast path's counters of the index are merged for:
      // a new one gets a new epoch, whose base the reader takes.
      FastDevBase& b = fast_sync_.devBase(pp->index());
      if (pp->ifindex() && b.ifindex != pp->ifindex()) {
        const std::string& drv = pp->driver();
        b = FastDevBase{pp->ifindex(), drv == "tun" || drv == "veth" || drv == "netkit", b.ifindex ? 1u : 0u, ++dev_epoch_};
      }
      r.dev = b;
    }
    rows.push_back(std::move(r));
  }
  if (punt_) {
    PortStats ps;
    owned(*punt_, ps);
    ps.punt = true;
    out.ports.push_back(std::move(ps));
    PortRows r;
    r.punt = true;
    r.punt_dev = punt_dev_.get();
    r.xdp_closed = punt_->xdpStatsClosed();
    punt_->socketFds(r.xsk_fds);
    rows.push_back(std::move(r));
  }
  out.fdb_entries = fdb_.liveEntries(monotonicNs());
  out.removed = removed_;
  out.removed_ports = removed_ports_;
}

void Datapath::readKernel(DatapathStats& out, const std::vector<PortRows>& rows) {
  if (running_ && std::this_thread::get_id() == thread_.get_id())
    split_on_dp_.fetch_add(1, std::memory_order_relaxed);  // statsSplit(): only the fallback
  for (size_t i = 0; i < rows.size(); i++) {
    const PortRows& r = rows[i];
    stats::PortValues& c = out.ports[i].counters;
    struct xdp_statistics x = r.xdp_closed;
    for (int fd : r.xsk_fds) addXdpStats(x, XskSocket::statsOf(fd));
    c[kXdpRxDropped] = x.rx_dropped;
    c[kXdpRxInvalidDescs] = x.rx_invalid_descs;
    c[kXdpTxInvalidDescs] = x.tx_invalid_descs;
    c[kXdpRxRingFull] = x.rx_ring_full;
    c[kXdpRxFillRingEmptyDescs] = x.rx_fill_ring_empty_descs;
    c[kXdpTxRingEmptyDescs] = x.tx_ring_empty_descs;
    if (r.punt) {
      // The punt device: frames vdevd could not give to a port (drops by
      // reason: no_route), what its socket dropped (xdp_stats) and what
      // its near end refused (dev.tx_dropped) -- nothing else. punt_dev_
      // is made with the punt port and lives until teardown.
      c[kDevTxDropped] = r.punt_dev ? r.punt_dev->dropped() : 0;
      continue;
    }
    c += readRows(r);
    if (r.xdp_obj || r.tc_hook) {
      // The port's program: XDP, or the skb path's counters of the port.
      const XdpProgCounters prog = r.xdp_obj ? r.xdp_obj->counters(r.xdp_slot) : r.tc->counters(r.index);
      c[kProgPass] = prog.pass;
      c[kProgRedirect] = prog.redirect;
      c[kProgNoSocket] = prog.no_socket;
      c[kProgFast] = prog.fast;
      if (r.copies) {
        // An uplink at XDP: the copies its tc program handed vdevd (or
        // could not) of frames the XDP program passed to the host.
        const XdpProgCounters copies = r.tc->counters(r.index);
        c[kProgRedirect] += copies.redirect;
        c[kProgNoSocket] += copies.no_socket;
      }
    }
    uint64_t dev = readSysfsU64("/sys/class/net/" + r.name + "/statistics/tx_dropped");
    c[kDevTxDropped] = dev - std::min(dev, fastDropsCountedByDevice(r));
  }
}

DatapathStats Datapath::stats() {
  std::lock_guard<std::mutex> lk(stats_mu_);
  DatapathStats out;
  std::vector<PortRows> rows;
  for (int attempt = 0; attempt < kStatsRetries; attempt++) {
    uint64_t seq = 0;
    // The step: memory reads, no syscall. Not through
    // runOnDatapath, which would count it as a change of the rows.
    control_.call([&] {
      collectOwned(out, rows);
      seq = rows_seq_.load(std::memory_order_relaxed);  // this thread's own writes
    }, running_, wake_fd_.get());
    readKernel(out, rows);
    // A1: pairs with rowsChangeBegin's release fence: if a change began
    // before one of the reads above saw its effect, rows_seq_ moved.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (rows_seq_.load(std::memory_order_relaxed) == seq) {
      split_off_.fetch_add(1, std::memory_order_relaxed);
      return out;
    }
  }
  split_fallback_.fetch_add(1, std::memory_order_relaxed);
  // Ports changing all the time: everything on the datapath thread, where
  // nothing changes underneath.
  control_.call([&] {
    collectOwned(out, rows);
    readKernel(out, rows);
  }, running_, wake_fd_.get());
  return out;
}

}  // namespace vdev::datapath
