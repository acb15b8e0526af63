// Unit tests for ringbuf::PtrRing: ordering, exact capacity, prefix
// semantics, index wrap-around, and the doorbell (consumer sleep) protocol.

#include "ringbuf/ptr_ring.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using ringbuf::PtrRing;
using namespace std::chrono_literals;

// Items are never dereferenced: encode a number in the pointer value.
int* P(uintptr_t v) { return reinterpret_cast<int*>(v); }
uintptr_t V(int* p) { return reinterpret_cast<uintptr_t>(p); }

// Test-only access to the protected constructor that starts the free-running
// indices at an arbitrary value, to exercise uint32 wrap-around.
class OffsetRing : public PtrRing<int> {
 public:
  OffsetRing(uint32_t capacity, uint32_t start_index) : PtrRing<int>(capacity, start_index) {}
};

std::vector<int*> Seq(uintptr_t first, size_t n) {
  std::vector<int*> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = P(first + i);
  return v;
}

TEST(PtrRing, OrderPreserved) {
  PtrRing<int> ring(16);
  auto in = Seq(100, 10);
  EXPECT_EQ(ring.produceBulk(in), 10u);
  EXPECT_EQ(ring.size(), 10u);
  std::vector<int*> out(4);
  EXPECT_EQ(ring.consumeBatch(out), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(V(out[i]), 100u + i);
  out.assign(100, nullptr);
  EXPECT_EQ(ring.consumeBatch(out), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(V(out[i]), 104u + i);
  EXPECT_TRUE(ring.empty());
}

TEST(PtrRing, NullAndArbitraryPointersAreItems) {
  // Unlike the kernel's ptr_ring, NULL is an ordinary value here.
  PtrRing<int> ring(3);
  int* in[] = {nullptr, P(~uintptr_t{0}), nullptr};
  EXPECT_EQ(ring.produceBulk(in), 3u);
  EXPECT_TRUE(ring.full());
  int* out[3] = {P(1), P(1), P(1)};
  EXPECT_EQ(ring.consumeBatch(out), 3u);
  EXPECT_EQ(out[0], nullptr);
  EXPECT_EQ(out[1], P(~uintptr_t{0}));
  EXPECT_EQ(out[2], nullptr);
}

TEST(PtrRing, EmptySpans) {
  PtrRing<int> ring(4);
  EXPECT_EQ(ring.produceBulk({}), 0u);
  EXPECT_EQ(ring.consumeBatch({}), 0u);
  int* one[] = {P(1)};
  EXPECT_EQ(ring.produceBulk(one), 1u);
  EXPECT_EQ(ring.consumeBatch({}), 0u);  // empty out span takes nothing
  EXPECT_EQ(ring.size(), 1u);
}

TEST(PtrRing, ZeroCapacityIsOne) {
  PtrRing<int> ring(0);
  EXPECT_EQ(ring.capacity(), 1u);
  auto in = Seq(1, 2);
  EXPECT_EQ(ring.produceBulk(in), 1u);
  EXPECT_TRUE(ring.full());
}

TEST(PtrRing, PrefixSemanticsWhenFull) {
  PtrRing<int> ring(5);
  EXPECT_EQ(ring.produceBulk(Seq(0, 3)), 3u);
  // Only a 2-item prefix of this batch fits; the rest stays with the caller.
  EXPECT_EQ(ring.produceBulk(Seq(10, 4)), 2u);
  EXPECT_TRUE(ring.full());
  EXPECT_EQ(ring.produceBulk(Seq(20, 1)), 0u);
  std::vector<int*> out(8);
  ASSERT_EQ(ring.consumeBatch(out), 5u);
  const uintptr_t want[] = {0, 1, 2, 10, 11};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(V(out[i]), want[i]);
  EXPECT_TRUE(ring.empty());
}

TEST(PtrRing, EmptyFullTransitions) {
  PtrRing<int> ring(2);
  EXPECT_TRUE(ring.empty());
  EXPECT_FALSE(ring.full());
  EXPECT_EQ(ring.produceBulk(Seq(1, 1)), 1u);
  EXPECT_FALSE(ring.empty());
  EXPECT_FALSE(ring.full());
  EXPECT_EQ(ring.produceBulk(Seq(2, 1)), 1u);
  EXPECT_FALSE(ring.empty());
  EXPECT_TRUE(ring.full());
  int* out[1];
  EXPECT_EQ(ring.consumeBatch(out), 1u);
  EXPECT_FALSE(ring.full());
  EXPECT_FALSE(ring.empty());
  EXPECT_EQ(ring.consumeBatch(out), 1u);
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.consumeBatch(out), 0u);
}

// Exact capacity for every size, including 1 and non-powers of two, and with
// indices starting right below the uint32 wrap point.
class CapacityTest : public ::testing::TestWithParam<std::tuple<uint32_t, uint32_t>> {};

TEST_P(CapacityTest, FullAfterExactlyCapacityItems) {
  const auto [cap, start] = GetParam();
  OffsetRing ring(cap, start);
  EXPECT_EQ(ring.capacity(), cap);
  for (int round = 0; round < 3; ++round) {
    // One at a time: full after exactly `cap` items.
    for (uint32_t i = 0; i < cap; ++i) {
      ASSERT_FALSE(ring.full()) << i;
      int* one[] = {P(i)};
      ASSERT_EQ(ring.produceBulk(one), 1u) << i;
      ASSERT_EQ(ring.size(), i + 1);
    }
    EXPECT_TRUE(ring.full());
    int* extra[] = {P(0)};
    EXPECT_EQ(ring.produceBulk(extra), 0u);
    std::vector<int*> out(cap + 1);
    ASSERT_EQ(ring.consumeBatch(out), cap);
    for (uint32_t i = 0; i < cap; ++i) ASSERT_EQ(V(out[i]), i);
    EXPECT_TRUE(ring.empty());
    // In one batch: a batch larger than the ring takes exactly `cap`.
    auto big = Seq(7, cap + 5);
    ASSERT_EQ(ring.produceBulk(big), cap);
    EXPECT_TRUE(ring.full());
    ASSERT_EQ(ring.consumeBatch(out), cap);
    for (uint32_t i = 0; i < cap; ++i) ASSERT_EQ(V(out[i]), 7 + i);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, CapacityTest,
    ::testing::Combine(::testing::Values(1u, 2u, 3u, 5u, 7u, 8u, 16u, 63u, 64u, 65u, 1000u, 1024u,
                                         (1u << 16) + 1),
                       ::testing::Values(0u, UINT32_MAX - 2, UINT32_MAX - 70000)));

// Random batches against a std::deque model over many cycles, with indices
// that cross UINT32_MAX several times (small capacity, start near the top).
class WrapTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(WrapTest, ModelCheckAcrossIndexWrap) {
  const uint32_t cap = GetParam();
  OffsetRing ring(cap, UINT32_MAX - 3 * cap);
  std::deque<uintptr_t> model;
  std::mt19937 rng(cap);
  uintptr_t next = 1;
  std::vector<int*> buf(2 * cap + 2);
  for (int cycle = 0; cycle < 20000; ++cycle) {
    const uint32_t np = std::uniform_int_distribution<uint32_t>(0, cap + 1)(rng);
    for (uint32_t i = 0; i < np; ++i) buf[i] = P(next + i);
    const uint32_t room = cap - static_cast<uint32_t>(model.size());
    const uint32_t took = ring.produceBulk(std::span<int* const>(buf.data(), np));
    ASSERT_EQ(took, std::min(np, room));
    for (uint32_t i = 0; i < took; ++i) model.push_back(next + i);
    next += took;
    ASSERT_EQ(ring.size(), model.size());
    ASSERT_EQ(ring.full(), model.size() == cap);

    const uint32_t nc = std::uniform_int_distribution<uint32_t>(0, cap + 1)(rng);
    const uint32_t got = ring.consumeBatch(std::span<int*>(buf.data(), nc));
    ASSERT_EQ(got, std::min<size_t>(nc, model.size()));
    for (uint32_t i = 0; i < got; ++i) {
      ASSERT_EQ(V(buf[i]), model.front());
      model.pop_front();
    }
    ASSERT_EQ(ring.empty(), model.empty());
  }
  // Enough traffic to have wrapped the 32-bit indices from the start offset.
  EXPECT_GT(next, 3u * cap);
}

INSTANTIATE_TEST_SUITE_P(Caps, WrapTest, ::testing::Values(1u, 2u, 3u, 5u, 8u, 13u, 64u, 100u));

TEST(PtrRing, BigCapacity) {
  const uint32_t cap = (1u << 20) + 3;
  PtrRing<int> ring(cap);
  auto in = Seq(0, cap + 10);
  EXPECT_EQ(ring.produceBulk(in), cap);
  EXPECT_TRUE(ring.full());
  EXPECT_EQ(ring.size(), cap);
  std::vector<int*> out(cap);
  EXPECT_EQ(ring.consumeBatch(out), cap);
  EXPECT_EQ(V(out[cap - 1]), cap - 1);
}

// --- Doorbell -------------------------------------------------------------

TEST(PtrRingDoorbell, FlushWithoutArmedConsumerDoesNothing) {
  PtrRing<int> ring(4);
  int calls = 0;
  ring.setNotifier([](void* c) { ++*static_cast<int*>(c); }, &calls);
  EXPECT_FALSE(ring.flush());
  EXPECT_EQ(ring.produceBulk(Seq(1, 1)), 1u);
  EXPECT_FALSE(ring.flush());
  EXPECT_EQ(calls, 0);
}

TEST(PtrRingDoorbell, ArmOnNonEmptyRingRefusesAndDisarms) {
  PtrRing<int> ring(4);
  int calls = 0;
  ring.setNotifier([](void* c) { ++*static_cast<int*>(c); }, &calls);
  EXPECT_EQ(ring.produceBulk(Seq(1, 1)), 1u);
  EXPECT_FALSE(ring.armDoorbell());
  EXPECT_FALSE(ring.flush());  // already disarmed
  EXPECT_EQ(calls, 0);
  ring.disarmDoorbell();  // idempotent
}

TEST(PtrRingDoorbell, NotifierCalledOncePerArm) {
  PtrRing<int> ring(4);
  int calls = 0;
  ring.setNotifier([](void* c) { ++*static_cast<int*>(c); }, &calls);
  ASSERT_TRUE(ring.armDoorbell());
  // Flush even when nothing was enqueued still rings (the kXmitFlush contract).
  EXPECT_TRUE(ring.flush());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(ring.flush());  // already rung for this sleep
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(ring.waitDoorbell(0ns));  // rung: returns at once
  ring.disarmDoorbell();
  EXPECT_FALSE(ring.flush());

  ASSERT_TRUE(ring.armDoorbell());
  EXPECT_EQ(ring.produceBulk(Seq(1, 1)), 1u);
  EXPECT_TRUE(ring.flush());
  EXPECT_EQ(calls, 2);
  ring.disarmDoorbell();
}

TEST(PtrRingDoorbell, WaitTimesOutWhenNotRung) {
  PtrRing<int> ring(4);
  ASSERT_TRUE(ring.armDoorbell());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(ring.waitDoorbell(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  ring.disarmDoorbell();
  // Not armed: nothing to wait for.
  EXPECT_TRUE(ring.waitDoorbell(10s));
  EXPECT_TRUE(ring.waitDoorbell(std::chrono::nanoseconds::max()));
  // Negative / zero timeout on an armed doorbell: an immediate check.
  ASSERT_TRUE(ring.armDoorbell());
  EXPECT_FALSE(ring.waitDoorbell(-1s));
  ring.disarmDoorbell();
}

TEST(PtrRingDoorbell, ForeverTimeoutStillWakes) {
  PtrRing<int> ring(4);
  ASSERT_TRUE(ring.armDoorbell());
  std::thread producer([&] {
    std::this_thread::sleep_for(10ms);
    ring.flush();
  });
  EXPECT_TRUE(ring.waitDoorbell(std::chrono::nanoseconds::max()));
  ring.disarmDoorbell();
  producer.join();
}

TEST(PtrRingDoorbell, BuiltinWakeWakesBlockedWaiter) {
  PtrRing<int> ring(4);
  ASSERT_TRUE(ring.armDoorbell());
  std::atomic<bool> woke{false};
  std::thread consumer([&] {
    woke.store(ring.waitDoorbell(30s), std::memory_order_relaxed);
  });
  std::this_thread::sleep_for(20ms);  // let it block in the futex
  int* one[] = {P(5)};
  EXPECT_EQ(ring.produceBulk(one), 1u);
  EXPECT_TRUE(ring.flush());
  consumer.join();
  EXPECT_TRUE(woke.load());
  ring.disarmDoorbell();
  int* out[1];
  EXPECT_EQ(ring.consumeBatch(out), 1u);
}

// Stress for lost wake-ups: the consumer sleeps whenever it finds the ring
// empty, with a long timeout; producers flush after every batch and pause
// now and then so that the consumer really does go to sleep. A lost wake-up
// shows up as a timeout (and a slow test); we count them and require zero.
struct StressResult {
  uint64_t received = 0;
  uint64_t arms = 0;    // armDoorbell() calls
  uint64_t sleeps = 0;  // ... that returned true
  uint64_t timeouts = 0;
  bool order_ok = true;
};

template <typename Sleep>
StressResult RunDoorbellStress(PtrRing<int>& ring, int producers, uint64_t per_producer,
                               Sleep&& sleep) {
  StressResult r;
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&ring, p, per_producer] {
      std::mt19937 rng(p + 1);
      std::vector<int*> batch(32);
      uint64_t seq = 0;
      while (seq < per_producer) {
        const uint64_t n = std::min<uint64_t>(per_producer - seq,
                                              std::uniform_int_distribution<int>(1, 32)(rng));
        for (uint64_t i = 0; i < n; ++i) batch[i] = P((uintptr_t(p) << 48) | (seq + i));
        const uint32_t took = ring.produceBulk(std::span<int* const>(batch.data(), n));
        seq += took;
        ring.flush();  // every batch ends with a flush, even a refused one
        if (took < n) std::this_thread::yield();
        if (std::uniform_int_distribution<int>(0, 63)(rng) == 0)
          std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  std::vector<uint64_t> next(producers, 0);
  std::vector<int*> out(64);
  const uint64_t total = per_producer * producers;
  while (r.received < total) {
    const uint32_t n = ring.consumeBatch(out);
    for (uint32_t i = 0; i < n; ++i) {
      const uintptr_t v = V(out[i]);
      const auto p = static_cast<size_t>(v >> 48);
      if (p >= next.size() || (v & ((uintptr_t(1) << 48) - 1)) != next[p]++) r.order_ok = false;
    }
    r.received += n;
    if (n == 0 && r.received < total) {
      ++r.arms;
      if (ring.armDoorbell()) {
        ++r.sleeps;
        if (!sleep()) ++r.timeouts;
      }
      ring.disarmDoorbell();
    }
  }
  for (auto& t : threads) t.join();
  return r;
}

constexpr auto kGenerousTimeout = 5s;

TEST(PtrRingDoorbell, NoLostWakeupsBuiltinWait) {
  PtrRing<int> ring(64);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunDoorbellStress(ring, 2, 200000, [&] { return ring.waitDoorbell(kGenerousTimeout); });
  EXPECT_EQ(r.received, 400000u);
  EXPECT_TRUE(r.order_ok);
  EXPECT_EQ(r.timeouts, 0u) << "lost wake-up(s)";
  EXPECT_GT(r.sleeps, 0u) << "consumer never slept: the test did not exercise the doorbell";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kGenerousTimeout);
  RecordProperty("sleeps", std::to_string(r.sleeps));
}

// The datapath's way: the notifier writes an eventfd, the consumer poll()s it.
TEST(PtrRingDoorbell, NoLostWakeupsEventfdNotifier) {
  PtrRing<int> ring(16);
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::atomic<uint64_t> notified{0};
  struct Ctx {
    int fd;
    std::atomic<uint64_t>* n;
  } ctx{efd, &notified};
  ring.setNotifier(
      [](void* c) {
        auto* x = static_cast<Ctx*>(c);
        x->n->fetch_add(1, std::memory_order_relaxed);
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t w = ::write(x->fd, &one, sizeof one);
      },
      &ctx);
  auto r = RunDoorbellStress(ring, 2, 200000, [&] {
    pollfd pfd{efd, POLLIN, 0};
    const int rc = ::poll(&pfd, 1,
                          std::chrono::duration_cast<std::chrono::milliseconds>(kGenerousTimeout)
                              .count());
    uint64_t v;
    [[maybe_unused]] ssize_t rd = ::read(efd, &v, sizeof v);  // drain; spurious wakes are fine
    return rc > 0;
  });
  ::close(efd);
  EXPECT_EQ(r.received, 400000u);
  EXPECT_TRUE(r.order_ok);
  EXPECT_EQ(r.timeouts, 0u) << "lost wake-up(s)";
  EXPECT_GT(r.sleeps, 0u);
  EXPECT_GT(notified.load(), 0u) << "notifier never called";
  EXPECT_LE(notified.load(), r.arms) << "more than one wake-up per armDoorbell()";
  RecordProperty("sleeps", std::to_string(r.sleeps));
}

}  // namespace
