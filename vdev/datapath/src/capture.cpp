// Capture (capture.h): the slots, made once when a capture starts; and
// Datapath's capture requests, which keep its CaptureRegistry
// (capture_registry.h) and the ports' captures in step. Control path, but
// for detachCapture and fastCaptured (datapath thread).
#include "datapath/capture.h"

#include <algorithm>

#include "datapath/datapath.h"
#include "vdev_xdp_shared.h"

namespace vdev::datapath {

Capture::Capture(uint16_t port_index, uint8_t dirs, uint32_t slots, uint32_t snaplen, const CaptureFilter& filter)
    : port_index_(port_index),
      dirs_(dirs),
      snaplen_(snaplen),
      filter_(filter),
      bytes_(size_t(slots) * snaplen),
      meta_(slots),
      free_(slots),
      full_(slots) {
  for (uint32_t i = 0; i < slots; i++) free_.push(i);
}

Result<uint32_t> Datapath::captureStart(const std::string& ifname, uint8_t dirs, uint32_t snaplen, uint32_t slots,
                                        const CaptureAdmit& admit, const CaptureFilter& filter) {
  auto l = captures_.lock();
  if (captures_.full())
    return Error{ENOSPC, std::to_string(kMaxCaptures) + " captures run already (vdevd's limit)"};
  // Three steps, so that the datapath thread never allocates (nor zeroes)
  // the slots -- 16384 of 64 KiB each are a gigabyte: the port's slot
  // length asked of the datapath thread, the capture made here, then
  // handed over. Only the control thread adds and removes ports and
  // captures, so the port found first is the port handed the capture; its
  // MTU may have changed in between, which only cuts frames (as below).
  Status st;
  uint16_t index = 0;
  uint32_t snap = 0;
  auto find = [&]() -> Port* {
    Port* p = ports_.find(ifname);
    if (!p) st = Error{ENOENT, "no port " + ifname};
    else if (p->capture()) st = Error{EBUSY, "port " + ifname + " has a capture running already (one per port)"};
    return st ? p : nullptr;
  };
  runOnDatapath([&] {
    Port* p = find();
    if (!p) return;
    // No slot longer than the port's frames: one UMEM frame, or its MTU
    // with Ethernet and VLAN headers (jumbo frames are chains of UMEM
    // frames). A frame longer than that (the MTU raised since) is cut,
    // its length kept.
    const uint32_t longest = std::max(pool_->frameSize(), p->mtu() + 18);
    index = p->index();
    snap = std::min(snaplen, longest);
  });
  if (!st) return st.error();
  if (admit)
    if (auto a = admit(Capture::bytesFor(slots, snap)); !a) return a.error();
  auto cap = std::make_unique<Capture>(index, dirs, slots, snap, filter);
  // The fast path's copies: its reader made here, once (its buffers), and
  // the capture's share of the misses counted from now.
  bool on_fast = fast_ && index < kFastPathPorts && fast_->openCaptureReader(&Datapath::fastCaptured, this).ok();
  if (on_fast) cap->setFastMissed(fast_->captureMissedRow(index));
  runOnDatapath([&] {
    Port* p = find();
    if (!p) return;
    if (p->index() != index) {
      st = Error{ENOENT, "port " + ifname + " was replaced while its capture was made"};
      return;
    }
    on_fast = on_fast && fast_->setCapture(index, dirs, cap->snaplen(), &filter).ok();
    p->setCapture(cap.get(), on_fast);
    if (on_fast) {
      captures_.fastStarted();
      return;
    }
    // As for new VLAN settings, but the port's stations stay learned (the
    // journal takes their kernel entries out at the next sync, and puts
    // them back when the capture stops): a capture changes where its
    // frames are switched, not where they go.
    applyFastVid(*p);
    fdb_.notePort(p->index());
  });
  if (!st) return st.error();  // admit's reservation: the caller's to give back
  return captures_.add(std::move(cap));
}

void Datapath::detachCapture(Port& p, bool removing) {
  const bool on_fast = p.captureOnFast();
  p.setCapture(nullptr);
  if (on_fast) {
    (void)fast_->setCapture(p.index(), 0, 0);
    captures_.fastStopped();
    return;
  }
  if (removing) return;
  applyFastVid(p);
  fdb_.notePort(p.index());
}

void Datapath::fastCaptured(void* ctx, uint16_t port_index, uint8_t dir, uint64_t time_ns, uint32_t wire_len,
                            const uint8_t* bytes, uint32_t kept) {
  auto* d = static_cast<Datapath*>(ctx);
  Port* p = d->ports_.get(port_index);
  Capture* cap = p ? p->capture() : nullptr;
  if (!cap) return;  // stopped while its copies were on their way
  cap->copyBytes(dir == VDEV_CAP_TX ? Capture::kTx : Capture::kRx, bytes, kept, wire_len,
                 d->captures_.realtime(time_ns));
}

Capture* Datapath::captureGet(uint32_t id) { return captures_.get(id); }

void Datapath::captureStop(uint32_t id) {
  auto l = captures_.lock();
  Capture* cap = captures_.find(id);
  if (!cap) return;
  runOnDatapath([&] {
    if (cap->ended()) return;  // its port is gone
    Port* p = ports_.get(cap->portIndex());
    if (p && p->capture() == cap) detachCapture(*p);
  });
  captures_.erase(id);  // the datapath thread no longer knows it
}

}  // namespace vdev::datapath
