// vdev-bench's pacing (tools/vdev-bench/src/pacing.h): writer threads that
// share one slot clock offer the rate asked, never more, and catch up after
// a stall by a bounded burst. Simulated time: each thread claims a slot,
// waits for it, writes, and is ready again a moment later; the clock is
// the simulation's, so nothing here depends on the machine's speed.
#include "pacing.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace vdev::bench {
namespace {

struct Sim {
  uint64_t period;      // ns per write
  uint64_t maxLag;      // ns
  unsigned threads;
  uint64_t cost = 100;  // ns a write takes
  uint64_t next = 0;    // the shared clock's next free slot
  std::vector<uint64_t> ready;  // per thread: when it claims again
  std::vector<uint64_t> writes; // when each write happened

  Sim(uint64_t p, uint64_t lag, unsigned n) : period(p), maxLag(lag), threads(n), ready(n, 0) {}

  // Runs until `until`; a stall of every thread from stallAt for stallNs.
  void run(uint64_t until, uint64_t stallAt = UINT64_MAX, uint64_t stallNs = 0) {
    for (;;) {
      unsigned t = 0;
      for (unsigned i = 1; i < threads; ++i)
        if (ready[i] < ready[t]) t = i;
      uint64_t now = ready[t];
      if (now >= stallAt && stallNs) {
        for (auto& r : ready) r = std::max(r, stallAt + stallNs);
        stallNs = 0;
        continue;
      }
      if (now >= until) return;
      uint64_t mine = claimPaceSlot(next, now, period, maxLag, threads);
      next = mine + period;
      uint64_t at = std::max(now, mine);  // it waits for its slot
      if (at >= until) return;
      writes.push_back(at);
      ready[t] = at + cost;
    }
  }
};

// 100k writes/s for one simulated second: one thread and two threads offer
// the rate, and two threads never more than one thread (before the fix, a
// thread that found the clock more than one period ahead -- the other
// thread's claim while it waited -- wrote at once: three times the rate in
// this simulation, 2-3% over on the machine, where a write takes longer).
TEST(BenchPacing, ThreadsSharingTheClockOfferTheRateAsked) {
  const uint64_t period = 10'000, second = 1'000'000'000;
  for (unsigned threads : {1u, 2u, 4u}) {
    Sim s(period, paceMaxLagNs(period), threads);
    s.run(second);
    EXPECT_GE(s.writes.size(), second / period - 1) << threads << " threads";
    EXPECT_LE(s.writes.size(), second / period + threads) << threads << " threads";
    // No two writes closer than a period (the writes are the slots).
    for (size_t i = 1; i < s.writes.size(); ++i)
      ASSERT_GE(s.writes[i] - s.writes[i - 1], period) << threads << " threads, write " << i;
  }
}

// After a stall, the writes owed are caught up at once only while they are
// at most 256 frames (a veth's ring) behind; a longer stall is skipped, and
// pacing resumes at the rate. With 16 frames per write, 256 frames are 16
// writes: the bound counts frames, not writes (before the fix a 30 ms stall
// was caught up by a burst of ~190 writes, 3000 frames).
TEST(BenchPacing, AStallIsCaughtUpByABoundedBurst) {
  const uint64_t framesPerWrite = 16, periodPerWrite = 160'000;  // 100k frames/s
  const uint64_t maxLag = paceMaxLagForWritesNs(periodPerWrite, framesPerWrite);
  EXPECT_EQ(maxLag, 256 * (periodPerWrite / framesPerWrite));
  const uint64_t stallAt = 200'000'000, end = 500'000'000;
  auto burstAfter = [&](uint64_t stall, size_t* total) {
    Sim s(periodPerWrite, maxLag, 2);
    s.run(end, stallAt, stall);
    size_t burst = 0;
    for (uint64_t w : s.writes)
      if (w >= stallAt + stall && w < stallAt + stall + periodPerWrite) ++burst;
    *total = s.writes.size();
    return burst;
  };
  const uint64_t asked = end / periodPerWrite;
  size_t total = 0;
  // 2 ms behind (200 frames): caught up, nothing skipped.
  size_t burst = burstAfter(2'000'000, &total);
  EXPECT_GE(burst, 2'000'000 / periodPerWrite - 3);
  EXPECT_LE(burst, 256 / framesPerWrite + 1);
  EXPECT_GE(total, asked - 3);
  EXPECT_LE(total, asked + 3);
  // 30 ms behind: skipped, resumed at the rate.
  burst = burstAfter(30'000'000, &total);
  EXPECT_LE(burst, 2u);
  EXPECT_GE(total, asked - 30'000'000 / periodPerWrite - 3);
  EXPECT_LE(total, asked - 30'000'000 / periodPerWrite + 3);
}

// A slot left over from a slower rate (far ahead) is not waited for.
TEST(BenchPacing, ASlotFarAheadStartsOver) {
  EXPECT_EQ(claimPaceSlot(/*next=*/1'000'000, /*now=*/1000, /*period=*/100, /*maxLag=*/25'600, 2), 1000u);
  // Within one period per thread: another thread's claim, kept.
  EXPECT_EQ(claimPaceSlot(1200, 1000, 100, 25'600, 2), 1200u);
  EXPECT_EQ(claimPaceSlot(1201, 1000, 100, 25'600, 2), 1000u);
  // Behind by more than maxLag: skipped; by less: caught up.
  EXPECT_EQ(claimPaceSlot(1000, 1000 + 25'601, 100, 25'600, 2), 1000u + 25'601);
  EXPECT_EQ(claimPaceSlot(1000, 1000 + 25'600, 100, 25'600, 2), 1000u);
}

}  // namespace
}  // namespace vdev::bench
