// pacing.h - the slot rules of vdev-bench's paced traffic sources: vb_gen
// paces itself in BPF (gen.bpf.c) by the same rules; FrameWriter's threads
// share one slot clock in userspace (claimPaceSlot).
#pragma once

#include <algorithm>
#include <cstdint>

namespace vdev::bench {

// How far a paced generator that fell behind catches up at once: 256 frames
// or 20 us worth, whichever is more; slots further back are skipped (the
// rate reported is what was really offered). A stall of the generator's CPU
// is a stall of the wire, and a NIC would hold what arrived meanwhile in its
// RX ring and hand it over in a burst; 256 is the veth's ring. With 32
// frames and a slot per frame (before 2026-12-01), a paced generator asked
// for 2.4 Mpps through the fast path offered a fifth less than it does now
// (docs/performance.md, "Pacing"). periodNs: the time per frame.
inline uint64_t paceMaxLagNs(uint64_t periodNs) {
  return periodNs * 256 > 20'000 ? periodNs * 256 : 20'000;
}

// The same for a writer whose every write() becomes framesPerWrite frames
// (the generator's relay): the bound is in frames, not writes.
inline uint64_t paceMaxLagForWritesNs(uint64_t periodPerWriteNs, uint64_t framesPerWrite) {
  return paceMaxLagNs(periodPerWriteNs / std::max<uint64_t>(1, framesPerWrite));
}

// The slot a writer thread takes at time `now` when the shared clock's next
// free slot is `next` (all in ns); the clock's next free slot becomes the
// result + periodNs, and the thread waits until the result before it
// writes. A slot up to one period per thread ahead is the other threads'
// claims and is kept; one further ahead is left over from a slower rate,
// and one more than maxLagNs behind is a stall to skip: both start over at
// now.
inline uint64_t claimPaceSlot(uint64_t next, uint64_t now, uint64_t periodNs, uint64_t maxLagNs,
                              unsigned threads) {
  const uint64_t ahead = periodNs * std::max(1u, threads);
  if (next > now + ahead || now - std::min(now, next) > maxLagNs) return now;
  return next;
}

}  // namespace vdev::bench
