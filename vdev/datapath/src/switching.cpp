// The hot path: an RX burst, the switching of its frames (forward), their
// per-destination batches handed over with one Port::xmitBulk() each, and
// the fill-ring refill. No allocation, exception, log line, lock or syscall
// per frame; every frame ends delivered or counted as exactly one drop.
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "datapath/datapath.h"

namespace vdev::datapath {

namespace {

constexpr uint32_t kEthHlen = 14;
constexpr uint32_t kVlanHlen = 4;

// Longest frame a port may transmit: its MTU plus the Ethernet header, plus
// a VLAN tag when the frame carries one.
inline uint32_t maxFrameLen(const Port& p, const uint8_t* data) {
  uint16_t type = uint16_t(data[12] << 8 | data[13]);
  return p.mtu() + kEthHlen + ((type == 0x8100 || type == 0x88a8) ? kVlanHlen : 0);
}

// The frame an RX descriptor hands over, now the application's.
inline Frame* claimRx(FramePool& pool, const struct xdp_desc* d) noexcept {
  Frame* f = pool.frameAt(d->addr);
  if (!f) [[unlikely]]
    return nullptr;
  f->addr = d->addr;
  f->len = d->len;
  f->owner = kOwnerApp;
  return f;
}

// The tag off: the MAC addresses move up over it.
inline void popTag(Frame* f, uint8_t* data) noexcept {
  std::memmove(data + kVlanHlen, data, 12);
  f->addr += kVlanHlen;
  f->len -= kVlanHlen;
}

// An 802.1Q tag for vid in front of the frame's type, into the headroom
// (received frames have the kernel's, flood copies kTxHeadroom). false:
// no room (never: the headroom is 256 bytes).
inline bool pushTag(FramePool& pool, Frame* f, uint16_t vid) noexcept {
  if ((f->addr & (pool.frameSize() - 1)) < kVlanHlen) [[unlikely]]
    return false;
  f->addr -= kVlanHlen;
  f->len += kVlanHlen;
  uint8_t* d = pool.data(f);
  std::memmove(d, d + kVlanHlen, 12);
  d[12] = 0x81;
  d[13] = 0x00;
  d[14] = uint8_t(vid >> 8);
  d[15] = uint8_t(vid);
  return true;
}

// CLOCK_REALTIME in ns: a capture's timestamps (one read per batch).
inline uint64_t realtimeNs() noexcept {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

void Datapath::captureFrames(const Port& port, Capture& cap, uint8_t dir, std::span<Frame* const> frames) noexcept {
  const uint64_t t = realtimeNs();
  const uint16_t vid = captureUntaggedVid(port.vlanOn(), port.vlan().pvid);
  for (Frame* f : frames) cap.copy(dir, *pool_, f, t, vid);
}

void Datapath::xmitPending(Port& dst, std::span<Frame* const> batch, uint32_t flags) noexcept {
  const int taken = dst.xmitBulk(batch, flags);
  if (taken < 0) [[unlikely]] {
    drop(dst.counters(), kDropPortDown, batch);  // -ENXIO: the port went down; the frames are ours
    return;
  }
  // What the port was handed (a prefix; xmitBulk returned the rest to the
  // pool): on its delivery ring until this thread drains it.
  if (Capture* cap = dst.capture(); cap && cap->tx()) [[unlikely]]
    captureFrames(dst, *cap, Capture::kTx, batch.first(size_t(taken)));
}

void Datapath::refill(Port::Queue& q) noexcept {
  if (!q.xsk || !q.xsk->receives()) return;
  XskSocket& s = *q.xsk;
  struct xsk_ring_prod& fill = s.fill();
  const uint64_t given = q.fill_given - q.rx_got;
  uint32_t want = fill_.want(q, fill.size);
  if (!want) return;
  // Refill in batches (at most half a small ring at a time).
  if (want < std::min(cfg_.port.batch, q.fill_target / 2) && given > 0) return;
  uint32_t submitted = 0;
  while (want) {
    Frame* frames[256];
    const uint32_t n = std::min({want, 256u, xsk_prod_nb_free(&fill, want)});
    const uint32_t got = pool_->allocBulk(std::span<Frame*>(frames, n));
    if (!got) break;  // pool empty: the kernel counts rx_fill_ring_empty_descs
    uint32_t idx = 0;
    xsk_ring_prod__reserve(&fill, got, &idx);
    for (uint32_t i = 0; i < got; i++) {
      frames[i]->owner = s.tag();
      *xsk_ring_prod__fill_addr(&fill, idx + i) = pool_->chunkAddr(frames[i]);
    }
    xsk_ring_prod__submit(&fill, got);
    q.fill_given += got;
    submitted += got;
    want -= got;
    if (got < n) break;
  }
  if (submitted && s.zerocopy() && xsk_ring_prod__needs_wakeup(&fill)) {
    // Zero-copy drivers may wait for a wake-up once the fill ring ran dry.
    ssize_t rc = ::recvfrom(s.fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    (void)rc;
  }
}

uint32_t Datapath::takeRx(XskSocket& s, uint32_t& descs, uint64_t& bytes) noexcept {
  struct xsk_ring_cons& rx = s.rx();
  uint32_t idx = 0;
  std::span<Frame*> burst = batches_.burst();
  uint32_t n = xsk_ring_cons__peek(&rx, uint32_t(burst.size()), &idx);
  descs = 0;
  bytes = 0;
  if (n == 0) {
    // Busy polling: an empty RX ring asks the kernel to run the queue's NAPI
    // here, now (one syscall per empty poll of the queue, never per frame).
    if (s.busyPoll()) {
      ssize_t rc = ::recvfrom(s.fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
      (void)rc;
    }
    return 0;
  }
  // The kernel puts a chain's descriptors on the ring together; only the
  // burst's count cuts one. A cut chain stays for the next burst -- or,
  // if it is the only frame, is taken whole with a longer look.
  uint32_t whole = n;
  while (whole && (xsk_ring_cons__rx_desc(&rx, idx + whole - 1)->options & kXdpPktContd)) whole--;
  if (whole == 0) [[unlikely]] {
    xsk_ring_cons__cancel(&rx, n);
    n = xsk_ring_cons__peek(&rx, rx.size, &idx);
    while (whole < n && (xsk_ring_cons__rx_desc(&rx, idx + whole)->options & kXdpPktContd)) whole++;
    if (whole == n) {  // no end on the ring: never from the kernel; wait
      xsk_ring_cons__cancel(&rx, n);
      return 0;
    }
    whole++;
  }
  if (whole < n) xsk_ring_cons__cancel(&rx, n - whole);
  uint32_t k = 0;
  Frame* head = nullptr;
  Frame* tail = nullptr;
  for (uint32_t i = 0; i < whole; i++) {
    const struct xdp_desc* d = xsk_ring_cons__rx_desc(&rx, idx + i);
    Frame* f = claimRx(*pool_, d);
    bytes += d->len;
    if (!f) [[unlikely]]
      continue;  // the kernel validates addresses; cannot happen
    if (head) {  // a chain's next chunk
      tail->next = f;
      head->more += f->len;
    } else {
      head = f;
      burst[k++] = f;
    }
    tail = f;
    if (!(d->options & kXdpPktContd)) head = nullptr;
  }
  xsk_ring_cons__release(&rx, whole);
  descs = whole;
  return k;
}

uint32_t Datapath::rxBurst(Port& p, Port::Queue& q, uint64_t now_ns) noexcept {
  uint32_t descs;
  uint64_t bytes;
  const uint32_t k = takeRx(*q.xsk, descs, bytes);
  if (descs == 0) return 0;
  Frame** burst = batches_.burst().data();
  for (uint32_t i = 0; i < k; i++) burst[i]->in_port_index = p.index();
  q.rx_got += descs;
  PortCounters& c = p.counters();
  c[kRxPackets].add(k);
  c[kRxBytes].add(bytes);
  forward(p, burst, k, now_ns);
  return k;
}

void Datapath::enqueue(Port& dst, Frame* f) noexcept {
  // Longer than the destination's MTU, or a chain of more chunks than
  // the kernel sends as one frame.
  if (wireLen(f) > maxFrameLen(dst, pool_->data(f)) || (f->next && chunks(f) > kMaxChain)) [[unlikely]] {
    drop(dst.counters(), kDropOversize, f);
    return;
  }
  // A full batch goes now (no flush: more may follow in this burst).
  if (auto full = batches_.add(dst.index(), f); !full.empty()) xmitPending(dst, full, 0);
}

void Datapath::enqueueIn(Port& dst, uint16_t vid, Frame* f) noexcept {
  if (dst.tagsVid(vid) && !pushTag(*pool_, f, vid)) [[unlikely]] {
    drop(dst.counters(), kDropOversize, f);
    return;
  }
  enqueue(dst, f);
}

void Datapath::flushPending() noexcept {
  batches_.flush([&](uint16_t i, std::span<Frame* const> batch) { xmitPending(*ports_[i], batch, kXmitFlush); });
}

uint32_t Datapath::rxPuntBurst(Port::Queue& q, uint64_t now_ns) noexcept {
  uint32_t descs;
  uint64_t bytes;
  const uint32_t n = takeRx(*q.xsk, descs, bytes);
  if (descs == 0) return 0;
  // Runs of frames from one port are switched together; the batches per
  // destination are handed over once, after the whole burst. (A run is
  // gathered at the front of the burst, never ahead of the frame read.)
  Frame** burst = batches_.burst().data();
  Port* run_port = nullptr;
  uint32_t run = 0;
  for (uint32_t i = 0; i < n; i++) {
    Frame* f = burst[i];
    uint8_t* data = pool_->data(f);
    // The tag the port's tc program gave it: 802.1Q, VID = index + 1.
    Port* in = nullptr;
    if (f->len >= kEthHlen + kVlanHlen && data[12] == 0x81 && data[13] == 0x00) [[likely]] {
      const uint32_t vid = (uint32_t(data[14] & 0x0f) << 8) | data[15];
      if (vid >= 1) in = ports_.get(vid - 1);
    }
    if (!in || (in->hook() != PortHook::kTc && !in->copiesToVdevd())) [[unlikely]] {
      // Untagged, or the port is gone (removed while its frame was on the
      // way): nobody's frame to switch.
      drop(punt_->counters(), kDropNoRoute, f);
      continue;
    }
    popTag(f, data);
    f->in_port_index = in->index();
    PortCounters& c = in->counters();
    c[kRxPackets].add(1);
    c[kRxBytes].add(wireLen(f));
    if (in != run_port) {
      if (run) switchFrames(*run_port, burst, run, now_ns);
      run_port = in;
      run = 0;
    }
    burst[run++] = f;
  }
  q.rx_got += descs;
  if (run) switchFrames(*run_port, burst, run, now_ns);
  flushPending();
  return n;
}

void Datapath::forward(Port& in, Frame** frames, uint32_t n, uint64_t now_ns) noexcept {
  switchFrames(in, frames, n, now_ns);
  flushPending();
}

void Datapath::switchFrames(Port& in, Frame** frames, uint32_t n, uint64_t now_ns) noexcept {
  PortCounters& ic = in.counters();
  const uint16_t in_index = in.index();
  const std::vector<Port*>& active = ports_.active();
  // What the port received, as it came in (before any check).
  if (Capture* cap = in.capture(); cap && cap->rx()) [[unlikely]]
    captureFrames(in, *cap, Capture::kRx, std::span<Frame* const>(frames, n));
  // The first touch of a frame's bytes is a cache miss (the kernel wrote
  // them on another CPU): ask for the next frames' headers ahead.
  constexpr uint32_t kAhead = 4;
  for (uint32_t i = 0; i < n && i < kAhead; i++) __builtin_prefetch(pool_->data(frames[i]));
  // The burst's last decisions, reused for the frames that repeat them (a
  // burst from one port is mostly one or a few conversations): the source
  // the table last learned for this port, and the destination it last
  // found. Both hold only while the table is unchanged: nothing but learn()
  // changes it inside a burst, and every learn() that runs forgets the
  // destination. A repeated learn() would only set the entry's time to the
  // same now_ns; a repeated lookup() would find the same entry.
  constexpr uint64_t kNoKey = ~0ull;  // never a table key (the VID is 12 bits)
  uint64_t learned_key = kNoKey;
  uint64_t found_key = kNoKey;
  int found_index = Fdb::kNone;
  for (uint32_t i = 0; i < n; i++) {
    Frame* f = frames[i];
    if (i + kAhead < n) __builtin_prefetch(pool_->data(frames[i + kAhead]));
    // Fair share: a port whose frames are still in flight up to its bound
    // (a flood towards slow destinations) gets no more of the pool.
    if (pool_->inflight(in_index) >= cfg_.max_inflight) [[unlikely]] {
      drop(ic, kDropInflight, f);
      continue;
    }
    pool_->charge(f, in_index);
    const uint8_t* d = pool_->data(f);
    if (f->len < kEthHlen) [[unlikely]] {
      drop(ic, kDropRunt, f);
      continue;
    }
    if (f->len > pool_->room(f)) [[unlikely]] {
      drop(ic, kDropOversize, f);
      continue;
    }
    const uint8_t* src = d + 6;
    if (macIsMulticast(src) || macIsZero(src)) [[unlikely]] {
      drop(ic, kDropInvalidSrc, f);
      continue;
    }
    // Type/length: a length (802.3) no longer than the frame, or a type.
    const uint32_t type = uint32_t(d[12]) << 8 | d[13];
    if (type < 0x0600 && (type > 1500 || type > wireLen(f) - kEthHlen)) [[unlikely]] {
      drop(ic, kDropBadType, f);
      continue;
    }
    if (cfg_.mode == SwitchMode::kXconnect) {
      // Two ports: the other one, whatever the MAC.
      Port* out = nullptr;
      if (active.size() == 2) out = active[0] == &in ? active[1] : active[0];
      if (!out) {
        drop(ic, kDropNoRoute, f);
        continue;
      }
      enqueue(*out, f);
      continue;
    }
    // The frame's VLAN. A port without VLAN settings is in the default
    // VLAN and its frames' tags are payload; one with settings takes
    // untagged (and priority-tagged) frames into its PVID and tagged ones
    // of the VIDs it carries, tag off: inside the switch a frame is
    // untagged and its VLAN is `vid`.
    uint16_t vid = kVidDefault;
    if (in.vlanOn()) [[unlikely]] {
      const VlanConfig& v = in.vlan();
      vid = v.pvid;
      if (type == 0x8100 && f->len >= kEthHlen + kVlanHlen) {
        const uint16_t tagged = uint16_t((d[14] & 0x0f) << 8 | d[15]);
        popTag(f, pool_->data(f));
        d = pool_->data(f);
        src = d + 6;
        if (tagged) vid = v.carries(tagged) ? tagged : 0;
      } else if (type == 0x88a8 || type == 0x8100) {
        vid = 0;  // 802.1ad (QinQ) is not carried
      }
      if (vid == 0) {
        drop(ic, kDropVlanFiltered, f);
        continue;
      }
    }
    // 802.1D link-local group addresses (STP, LACP, 802.1X, LLDP) are never
    // bridged: from an uplink its program gives them to the host; from a
    // guest they go nowhere (a BPDU on the uplink could shut its switch port).
    if (d[0] == 0x01 && d[1] == 0x80 && d[2] == 0xc2 && d[3] == 0 && d[4] == 0 && (d[5] & 0xf0) == 0)
        [[unlikely]] {
      drop(ic, kDropLinkLocal, f);
      continue;
    }
    // A guest that sends as the host (a port's own MAC, a --host-mac) is
    // not learned: frames for the host would follow it. Its ARP and NS for
    // the host's addresses still reach the host (XDP passes those first).
    const uint64_t src_key = fdbKey(macKey(src), vid);
    if (src_key != learned_key) {
      if (host_.isHostMac(macKey(src))) [[unlikely]] {
        drop(ic, kDropInvalidSrc, f);
        continue;
      }
      found_key = kNoKey;
      switch (fdb_.learn(src_key, in_index, now_ns)) {
        case Fdb::Learn::kOk:
          learned_key = src_key;
          break;
        case Fdb::Learn::kTableFull:  // forwarded, not learned: replies are flooded
          learned_key = kNoKey;
          break;
        case Fdb::Learn::kPortLimit:
        case Fdb::Learn::kGroupLimit:  // its uid's ports hold --uid-max-fdb: as for one port's limit
          learned_key = kNoKey;
          drop(ic, kDropMacLimit, f);
          continue;
        case Fdb::Learn::kLocked:
          learned_key = kNoKey;
          drop(ic, kDropMacLocked, f);
          continue;
      }
    }
    if (!macIsMulticast(d)) {
      const uint64_t dst_key = fdbKey(macKey(d), vid);
      if (dst_key != found_key) {
        found_key = dst_key;
        found_index = fdb_.lookup(dst_key, now_ns);
      }
      const int out_index = found_index;
      if (out_index >= 0) {
        Port& out = *ports_[size_t(out_index)];
        if (out_index == in_index || !out.carriesVid(vid))
          drop(ic, kDropNoRoute, f);  // the destination lives behind the ingress port: no hairpin
        else if (in.isolated() && out.isolated()) [[unlikely]]
          drop(ic, kDropIsolated, f);
        else
          enqueueIn(out, vid, f);
        continue;
      }
    }
    // Unknown unicast beyond the port's storm limit (broadcast and
    // multicast were limited by its program already).
    if (!macIsMulticast(d) && !in.unknownFloodOk(now_ns)) [[unlikely]] {
      drop(ic, kDropStormUnknown, f);
      continue;
    }
    // Broadcast, multicast, unknown unicast: every other live port (from an
    // isolated port: every other one that is not isolated) in the frame's
    // VLAN; the original goes to the first, copies to the others.
    const bool iso = in.isolated();
    auto floodsTo = [&](const Port& out) {
      return out.index() != in_index && out.live() && !(iso && out.isolated()) && out.carriesVid(vid);
    };
    bool first = true;
    for (Port* pp : active) {
      Port& out = *pp;
      if (!floodsTo(out)) continue;
      if (first) {
        first = false;
        continue;  // sent last, after the copies were taken from it
      }
      Frame* copy = pool_->copyOf(f);
      if (!copy) [[unlikely]] {
        out.counters().drops[kDropPoolEmpty].add(1);
        continue;
      }
      pool_->charge(copy, in_index);
      enqueueIn(out, vid, copy);
    }
    if (first) {
      drop(ic, kDropNoRoute, f);
      continue;
    }
    for (Port* pp : active)
      if (floodsTo(*pp)) {
        enqueueIn(*pp, vid, f);
        break;
      }
  }
}

}  // namespace vdev::datapath
