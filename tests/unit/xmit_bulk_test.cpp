// Conformance of Port::xmitBulk with the bulk-xmit contract (DESIGN.md),
// one test per rule. Ports here have delivery rings but no device.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "datapath/frame_pool.h"
#include "datapath/held_frames.h"
#include "datapath/port.h"

namespace vdev::datapath {
namespace {

struct Fixture : ::testing::Test {
  void SetUp() override {
    auto p = FramePool::create(256, 2048);
    ASSERT_TRUE(p.ok()) << p.error().message();
    pool = std::move(p.value());
    cfg.ring_capacity = 8;
    cfg.batch = 16;
  }
  std::vector<Frame*> take(uint32_t n) {
    std::vector<Frame*> v(n);
    EXPECT_EQ(pool->allocBulk(v), n);
    for (uint32_t i = 0; i < n; i++) v[i]->len = 60 + i;
    return v;
  }
  std::unique_ptr<FramePool> pool;
  PortConfig cfg;
};

int notified = 0;
void countNotify(void*) { notified++; }

// Rule 1: flags other than kXmitFlush -> -EINVAL, nothing taken, no counter change.
TEST_F(Fixture, UnknownFlagsAreInvalid) {
  Port port("p0", 0, 1, cfg);
  port.setLive(true);
  auto frames = take(4);
  const uint32_t avail = pool->available();
  EXPECT_EQ(port.xmitBulk(frames, 1u << 1), -EINVAL);
  EXPECT_EQ(port.xmitBulk(frames, kXmitFlush | 0x80000000u), -EINVAL);
  EXPECT_EQ(port.queues()[0]->ring.size(), 0u);
  EXPECT_EQ(pool->available(), avail);  // the caller still owns them
  EXPECT_EQ(port.snapshot().totalDrops(), 0u);
  for (Frame* f : frames) EXPECT_EQ(f->owner, kOwnerApp);
  pool->freeBulk(frames);
}

// Rule 2: no live queue -> -ENXIO, nothing taken, the caller returns and counts.
TEST_F(Fixture, PortDownIsNxio) {
  Port port("p0", 0, 1, cfg);  // never set live
  auto frames = take(4);
  const uint32_t avail = pool->available();
  EXPECT_EQ(port.xmitBulk(frames, kXmitFlush), -ENXIO);
  EXPECT_EQ(port.queues()[0]->ring.size(), 0u);
  EXPECT_EQ(pool->available(), avail);
  EXPECT_EQ(port.snapshot().totalDrops(), 0u);
  port.setLive(true);
  port.setLive(false);  // taken down again
  EXPECT_EQ(port.xmitBulk(frames, 0), -ENXIO);
  Port noq("p1", 1, 0, cfg);  // no queues at all
  noq.setLive(true);
  EXPECT_EQ(noq.xmitBulk(frames, 0), -ENXIO);
  pool->freeBulk(frames);
}

// Rule 3: a prefix is enqueued in order; the rest is counted one by one as
// ring_full and returned to the pool by xmitBulk.
TEST_F(Fixture, PrefixTakenRestDroppedAndReturned) {
  Port port("p0", 0, 1, cfg);
  port.setLive(true);
  auto frames = take(12);
  const uint32_t avail = pool->available();
  EXPECT_EQ(port.xmitBulk(frames, 0), 8);
  EXPECT_EQ(port.snapshot()[kDropRingFull], 4u);
  EXPECT_EQ(port.snapshot().totalDrops(), 4u);
  EXPECT_EQ(pool->available(), avail + 4);
  for (size_t i = 8; i < 12; i++) EXPECT_EQ(frames[i]->owner, kOwnerPool);
  Frame* out[16];
  ASSERT_EQ(port.queues()[0]->ring.consumeBatch(out), 8u);
  for (size_t i = 0; i < 8; i++) EXPECT_EQ(out[i], frames[i]) << "order kept at " << i;
  // A full ring takes nothing: return 0, every frame dropped and returned.
  auto more = take(8);
  ASSERT_EQ(port.xmitBulk(more, 0), 8);
  auto extra = take(3);
  EXPECT_EQ(port.xmitBulk(extra, 0), 0);
  EXPECT_EQ(port.snapshot()[kDropRingFull], 7u);
  // Empty batch: 0, nothing changes.
  EXPECT_EQ(port.xmitBulk(std::span<Frame* const>(), 0), 0);
  pool->freeBulk(std::span<Frame* const>(out, 8));
  ASSERT_EQ(port.queues()[0]->ring.consumeBatch(out), 8u);
  pool->freeBulk(std::span<Frame* const>(out, 8));
  EXPECT_EQ(pool->available(), pool->total());
}

// Rule 4: kXmitFlush wakes a sleeping consumer after the unlock, even when
// nothing was enqueued; without it no wake-up is issued.
TEST_F(Fixture, FlushWakesConsumerEvenWhenNothingTaken) {
  Port port("p0", 0, 1, cfg);
  port.setLive(true);
  auto& ring = port.queues()[0]->ring;
  ring.setNotifier(countNotify, nullptr);
  notified = 0;
  ASSERT_TRUE(ring.armDoorbell());  // consumer goes to sleep on an empty ring
  auto frames = take(2);
  EXPECT_EQ(port.xmitBulk(frames, 0), 2);
  EXPECT_EQ(notified, 0) << "no flush, no doorbell";
  EXPECT_EQ(port.xmitBulk(std::span<Frame* const>(), kXmitFlush), 0);
  EXPECT_EQ(notified, 1) << "flush with nothing taken still rings";
  ring.disarmDoorbell();
  Frame* out[4];
  ASSERT_EQ(ring.consumeBatch(out), 2u);
  pool->freeBulk(std::span<Frame* const>(out, 2));
  // Full ring, consumer asleep (armed before it filled): flush still wakes.
  ASSERT_TRUE(ring.armDoorbell());
  auto eight = take(8);
  EXPECT_EQ(port.xmitBulk(eight, 0), 8);
  auto one = take(1);
  EXPECT_EQ(port.xmitBulk(one, kXmitFlush), 0);
  EXPECT_EQ(notified, 2);
  ring.disarmDoorbell();
  Frame* all[8];
  ASSERT_EQ(ring.consumeBatch(all), 8u);
  pool->freeBulk(std::span<Frame* const>(all, 8));
  EXPECT_EQ(pool->available(), pool->total());
}

// Queue selection: the calling thread's index modulo the number of queues.
TEST_F(Fixture, QueuePickedByThreadIndex) {
  Port port("p0", 0, 2, cfg);
  port.setLive(true);
  auto frames = take(2);
  setThreadIndex(1);
  EXPECT_EQ(port.xmitBulk(std::span<Frame* const>(&frames[0], 1), 0), 1);
  setThreadIndex(2);
  EXPECT_EQ(port.xmitBulk(std::span<Frame* const>(&frames[1], 1), 0), 1);
  setThreadIndex(0);
  EXPECT_EQ(port.queues()[0]->ring.size(), 1u);
  EXPECT_EQ(port.queues()[1]->ring.size(), 1u);
  Frame* out[1];
  ASSERT_EQ(port.queues()[1]->ring.consumeBatch(out), 1u);
  EXPECT_EQ(out[0], frames[0]);
  pool->free(out[0]);
  ASSERT_EQ(port.queues()[0]->ring.consumeBatch(out), 1u);
  pool->free(out[0]);
}

// Port shutdown returns what is in its rings, counted as port_down.
TEST_F(Fixture, ShutdownReturnsRingFrames) {
  Port port("p0", 0, 1, cfg);
  port.setLive(true);
  auto frames = take(5);
  ASSERT_EQ(port.xmitBulk(frames, kXmitFlush), 5);
  EXPECT_EQ(port.shutdown(*pool), 5u);
  EXPECT_FALSE(port.live());
  EXPECT_EQ(port.snapshot()[kDropPortDown], 5u);
  EXPECT_EQ(pool->available(), pool->total());
  EXPECT_EQ(port.xmitBulk(frames, 0), -ENXIO);
}

// A frame longer than a chunk (AF_XDP multi-buffer) is a chain of chunks,
// handed over, dropped and returned as one frame: every chunk comes back.
Frame* makeChain(FramePool& pool, uint32_t nchunks, uint32_t chunk_len, uint8_t seed) {
  std::vector<Frame*> v(nchunks);
  EXPECT_EQ(pool.allocBulk(v), nchunks);
  for (uint32_t i = 0; i < nchunks; i++) {
    v[i]->len = chunk_len - i;  // chunks of different lengths
    for (uint32_t b = 0; b < v[i]->len; b++) pool.data(v[i])[b] = uint8_t(seed + i * 7 + b);
    if (i) {
      v[i - 1]->next = v[i];
      v[0]->more += v[i]->len;
    }
  }
  return v[0];
}

TEST_F(Fixture, AChainIsOneFrameAndEveryChunkComesBack) {
  cfg.ring_capacity = 2;
  Port port("p0", 0, 1, cfg);
  port.setLive(true);
  Frame* frames[3] = {makeChain(*pool, 5, 1700, 1), makeChain(*pool, 3, 1000, 2), makeChain(*pool, 2, 900, 3)};
  EXPECT_EQ(chunks(frames[0]), 5u);
  EXPECT_EQ(wireLen(frames[0]), 1700u + 1699 + 1698 + 1697 + 1696);
  EXPECT_EQ(pool->available(), pool->total() - 10);
  // Two frames fit the ring; the third chain is one ring_full drop, its
  // two chunks back in the pool at once.
  EXPECT_EQ(port.xmitBulk(std::span<Frame* const>(frames, 3), kXmitFlush), 2);
  EXPECT_EQ(port.snapshot()[kDropRingFull], 1u);
  EXPECT_EQ(pool->available(), pool->total() - 8);
  // The frame accounting sees every chunk on the ring.
  EXPECT_EQ(port.accounting().port_ring, 8u);
  EXPECT_EQ(port.shutdown(*pool), 8u);
  EXPECT_EQ(port.snapshot()[kDropPortDown], 2u);
  EXPECT_EQ(port.accounting().port_ring, 0u);
  EXPECT_EQ(pool->available(), pool->total());
  for (uint32_t i = 0; i < 10; i++) EXPECT_EQ(pool->frameAt(uint64_t(i) * 2048)->next, nullptr);
}

TEST(FramePool, ACopyOfAChainHoldsTheSameBytesOrTakesNothing) {
  auto p = FramePool::create(12, 2048);
  ASSERT_TRUE(p.ok());
  FramePool& pool = *p.value();
  Frame* src = makeChain(pool, 5, 2048 - 256, 9);  // as the kernel hands them: 256 bytes of headroom each
  const uint32_t len = wireLen(src);
  auto bytes = [&](const Frame* f) {
    std::vector<uint8_t> v;
    for (; f; f = f->next) v.insert(v.end(), pool.data(f), pool.data(f) + f->len);
    return v;
  };
  Frame* copy = pool.copyOf(src);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(wireLen(copy), len);
  EXPECT_EQ(bytes(copy), bytes(src));
  EXPECT_EQ(chunks(copy), (len + 2048 - kTxHeadroom - 1) / (2048 - kTxHeadroom));
  EXPECT_EQ(pool.available(), 12u - 5 - chunks(copy));
  // Too few frames left for another copy: none taken.
  const uint32_t before = pool.available();
  ASSERT_LT(before, 5u);
  EXPECT_EQ(pool.copyOf(src), nullptr);
  EXPECT_EQ(pool.available(), before);
  pool.free(copy);
  pool.free(src);
  EXPECT_EQ(pool.available(), 12u);
  // A single chunk's copy is a single chunk.
  Frame* one = makeChain(pool, 1, 60, 4);
  Frame* c1 = pool.copyOf(one);
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(c1->next, nullptr);
  EXPECT_EQ(bytes(c1), bytes(one));
  pool.free(c1);
  pool.free(one);
  EXPECT_EQ(pool.available(), 12u);
}

TEST(FramePool, RejectsBadSizesAndDoubleFreeAborts) {
  EXPECT_FALSE(FramePool::create(16, 1000).ok());
  EXPECT_FALSE(FramePool::create(16, 8192).ok());
  EXPECT_FALSE(FramePool::create(0, 2048).ok());
  auto p = FramePool::create(16, 2048);
  ASSERT_TRUE(p.ok());
  Frame* f;
  ASSERT_EQ(p.value()->allocBulk(std::span<Frame*>(&f, 1)), 1u);
  EXPECT_EQ(p.value()->frameAt(f->addr + 100), f);
  EXPECT_EQ(p.value()->frameAt(uint64_t(16) * 2048), nullptr);
  p.value()->free(f);
  EXPECT_DEATH(p.value()->free(f), "freed twice");
}

// Socket owner tags are handed out by the pool and taken back when a socket
// closes: a vdevd whose ports come and go (container churn, a guest flapping
// its link: every re-attach opens new sockets) never runs out. Before, a
// counter handed out each tag once: after 65,520 socket opens no port could
// be attached again until vdevd restarted.
TEST(SocketTags, AreReusedSoSocketChurnNeverRunsOut) {
  auto p = FramePool::create(64, 2048);
  ASSERT_TRUE(p.ok());
  FramePool& pool = *p.value();
  SocketTags& tags = pool.tags();
  ASSERT_EQ(tags.capacity(), kMaxSocketTags);
  // Open and close sockets far more often than there are tags, each holding
  // frames as a socket's rings do; closing returns them (the sweep
  // XskSocket::close() does) before its tag is given back.
  constexpr uint32_t kOpens = 4 * kMaxSocketTags;
  Frame* held[4];
  for (uint32_t i = 0; i < kOpens; i++) {
    const int a = tags.take(), b = tags.take();  // two sockets open at once
    ASSERT_GE(a, 0) << "open " << i;
    ASSERT_GE(b, 0) << "open " << i;
    ASSERT_NE(a, b);
    ASSERT_EQ(pool.allocBulk(held), 4u);
    for (Frame* f : held) f->owner = uint16_t(i % 2 ? a : b);
    ASSERT_EQ(pool.countOwned(uint16_t(i % 2 ? a : b)), 4u);
    pool.forEachOwned(uint16_t(i % 2 ? a : b), [&](Frame* f) { pool.free(f); });
    tags.give(uint16_t(a));
    tags.give(uint16_t(b));
  }
  EXPECT_EQ(tags.inUse(), 0u);
  EXPECT_EQ(pool.available(), pool.total());
}

TEST(SocketTags, AllDistinctWhileOpenThenRefusedUntilOneCloses) {
  SocketTags tags(1000);
  std::vector<bool> seen(1000, false);
  for (uint32_t i = 0; i < 1000; i++) {
    const int t = tags.take();
    ASSERT_GE(t, 0);
    ASSERT_LT(t, 1000);
    ASSERT_FALSE(seen[size_t(t)]) << "tag " << t << " handed out twice";
    seen[size_t(t)] = true;
  }
  EXPECT_EQ(tags.take(), -1) << "every tag is held by an open socket";
  tags.give(417);
  EXPECT_EQ(tags.take(), 417);
  EXPECT_EQ(tags.take(), -1);
  EXPECT_EQ(tags.inUse(), 1000u);
  EXPECT_DEATH(SocketTags(4).give(2), "not taken");
}

// A zero-copy socket's frames stay out of the pool after it is closed until
// the kernel has released its queue (the NIC may still DMA into them): a
// fake kernel here says when. Before, they were returned at once.
struct FakeKernel {
  std::map<std::pair<int, uint32_t>, bool> busy;  // (ifindex, queue) -> a pool is there
  HeldFrames::Probe probe() {
    return [this](int ifindex, uint32_t queue) -> Result<bool> {
      const auto it = busy.find({ifindex, queue});
      if (it == busy.end()) return makeError(ENOENT, "no such queue");
      return it->second;
    };
  }
};

// n frames owned by a socket tag, as its rings held them when it closed.
uint16_t closedSocket(FramePool& pool, uint32_t n) {
  const int tag = pool.tags().take();
  EXPECT_GE(tag, 0);
  std::vector<Frame*> f(n);
  EXPECT_EQ(pool.allocBulk(f), n);
  for (Frame* x : f) x->owner = uint16_t(tag);
  return uint16_t(tag);
}

TEST(HeldFrames, AClosedSocketsFramesComeBackOnlyOnceTheKernelLetsGo) {
  auto p = FramePool::create(64, 2048);
  ASSERT_TRUE(p.ok());
  FramePool& pool = *p.value();
  FakeKernel k;
  k.busy[{7, 3}] = true;
  HeldFrames held(pool, k.probe());
  const uint64_t t0 = 1'000'000'000;
  held.hold(closedSocket(pool, 10), 7, 3, /*reported=*/true, t0);
  EXPECT_EQ(held.frames(), 10u);
  EXPECT_EQ(held.release(t0 + 100'000'000), 0u) << "the kernel still holds the queue";
  EXPECT_EQ(held.release(t0 + 10 * HeldFrames::kFallbackNs), 0u) << "and says so: no time limit";
  EXPECT_EQ(pool.available(), 54u);
  std::vector<Frame*> rest(64);
  EXPECT_EQ(pool.allocBulk(rest), 54u) << "held frames are never handed out";
  pool.freeBulk(std::span<Frame* const>(rest.data(), 54));
  EXPECT_EQ(pool.tags().inUse(), 1u) << "their tag stays taken: no new socket gets it";
  k.busy[{7, 3}] = false;
  EXPECT_EQ(held.release(t0 + 200'000'000), 10u);
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(pool.available(), 64u);
  EXPECT_EQ(pool.tags().inUse(), 0u);
}

TEST(HeldFrames, WhereTheKernelCannotSayTheyComeBackAfterTheFallbackOrOnARebind) {
  auto p = FramePool::create(64, 2048);
  ASSERT_TRUE(p.ok());
  FramePool& pool = *p.value();
  FakeKernel k;
  k.busy[{7, 0}] = false;  // a kernel that never reports a pool
  HeldFrames held(pool, k.probe());
  const uint64_t t0 = 1'000'000'000;
  held.hold(closedSocket(pool, 4), 7, 0, /*reported=*/false, t0);
  held.hold(closedSocket(pool, 5), 9, 0, /*reported=*/true, t0);  // its device is gone (ENOENT)
  held.hold(closedSocket(pool, 6), 7, 1, /*reported=*/true, t0);
  k.busy[{7, 1}] = true;
  EXPECT_EQ(held.release(t0 + HeldFrames::kFallbackNs - 1), 0u);
  EXPECT_EQ(held.bound(7, 1), 6u) << "a socket bound to that queue: the kernel had let go";
  EXPECT_EQ(held.release(t0 + HeldFrames::kFallbackNs), 9u) << "the other two after the fallback time";
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(pool.available(), 64u);
  held.hold(closedSocket(pool, 3), 7, 1, true, t0);
  EXPECT_EQ(held.release(0, /*force=*/true), 3u);
  EXPECT_EQ(pool.tags().inUse(), 0u);
}

// The datapath loop looks at a port's TX side only while txBusy() (or in
// its scan rounds): a batch handed over makes it busy until drainTx finds
// its rings empty. Its RX side is quiet after Port::kQuietRounds rounds
// without a frame, and busy again at the next one.
TEST_F(Fixture, AHandedBatchKeepsThePortBusyUntilItsRingsAreEmpty) {
  Port port("p0", 0, 1, cfg);
  port.setLive(true);
  EXPECT_FALSE(port.txBusy());
  auto frames = take(4);
  EXPECT_EQ(port.xmitBulk(frames, kXmitFlush), 4);
  EXPECT_TRUE(port.txBusy());
  port.drainTx(*pool);  // no socket: the frames stay on the delivery ring
  EXPECT_TRUE(port.txBusy());
  std::vector<Frame*> out(8);
  EXPECT_EQ(port.queues()[0]->ring.consumeBatch(out), 4u);
  EXPECT_TRUE(port.txBusy());  // until drainTx has looked
  port.drainTx(*pool);
  EXPECT_FALSE(port.txBusy());
  pool->freeBulk(frames);

  for (uint32_t i = 1; i < Port::kQuietRounds; i++) port.noteRx(0);
  EXPECT_FALSE(port.rxQuiet());
  port.noteRx(0);
  EXPECT_TRUE(port.rxQuiet());
  port.noteRx(0);
  EXPECT_TRUE(port.rxQuiet());
  port.noteRx(3);
  EXPECT_FALSE(port.rxQuiet());
}

}  // namespace
}  // namespace vdev::datapath
