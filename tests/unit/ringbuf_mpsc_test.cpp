// Concurrency test for ringbuf::PtrRing: several producers and one consumer
// move millions of distinct pointers; every pointer must arrive exactly once
// and each producer's order must be preserved. Also run under ThreadSanitizer
// (`make tsan`, label tsan), where the counts are scaled down.

#include "ringbuf/ptr_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define VDEV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VDEV_TSAN 1
#endif
#endif

namespace {

using ringbuf::PtrRing;
using namespace std::chrono_literals;

#ifdef VDEV_TSAN
constexpr uint64_t kItemsPerCase = 600000;  // TSan: much slower; keep the run < 10 s
#else
constexpr uint64_t kItemsPerCase = 3000000;
#endif

// Pointer value = producer id in the top 16 bits, sequence number below.
constexpr int kIdShift = 48;
constexpr uintptr_t kSeqMask = (uintptr_t{1} << kIdShift) - 1;
int* Encode(uintptr_t producer, uint64_t seq) {
  return reinterpret_cast<int*>((producer << kIdShift) | seq);
}

// Waiting policy for a side that found the ring full / empty: spin a little,
// then yield (2 cores, 3 threads: the other side may not be running).
void Backoff(uint32_t& spins) {
  if (++spins < 64) {
    ringbuf::detail::cpuRelax();
  } else {
    std::this_thread::yield();
    spins = 0;
  }
}

// batch == 0 means random sizes in [1, 100] (producers) / [1, 128] (consumer).
struct Case {
  int producers;
  uint32_t batch;
  uint32_t capacity;
  bool doorbell;  // consumer sleeps via armDoorbell/waitDoorbell when empty
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::to_string(c.producers) + "p_batch" +
         (c.batch ? std::to_string(c.batch) : std::string("Random")) + "_cap" +
         std::to_string(c.capacity) + (c.doorbell ? "_doorbell" : "");
}

class MpscTest : public ::testing::TestWithParam<Case> {};

TEST_P(MpscTest, EveryPointerOnceInProducerOrder) {
  const Case c = GetParam();
  PtrRing<int> ring(c.capacity);
  const uint64_t per_producer = kItemsPerCase / c.producers;
  std::atomic<bool> go{false};
  // Doorbell cases: halfway, every producer waits until the consumer has
  // armed the doorbell (found the ring empty and gone to sleep) at least
  // once, so the sleep-and-wake path is always exercised, not left to the
  // scheduler.
  std::atomic<uint64_t> armed{0};

  std::vector<std::thread> producers;
  for (int p = 0; p < c.producers; ++p) {
    producers.emplace_back([&, p] {
      std::mt19937 rng(1234 + p);
      std::uniform_int_distribution<uint32_t> pick(1, 100);
      std::vector<int*> batch(128);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint64_t seq = 0;
      uint32_t spins = 0;
      bool waited = !c.doorbell;
      while (seq < per_producer) {
        if (!waited && seq >= per_producer / 2) {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
          while (armed.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
          waited = true;
        }
        const uint32_t want = c.batch ? c.batch : pick(rng);
        const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(want, per_producer - seq));
        for (uint32_t i = 0; i < n; ++i) batch[i] = Encode(p, seq + i);
        // Retry the rest of a partially accepted batch until all is in.
        uint32_t done = 0;
        while (done < n) {
          const uint32_t took =
              ring.produceBulk(std::span<int* const>(batch.data() + done, n - done));
          done += took;
          if (c.doorbell) ring.flush();
          if (took == 0) Backoff(spins);
        }
        seq += n;
      }
    });
  }

  std::vector<uint64_t> next(c.producers, 0);
  uint64_t bad_id = 0, out_of_order = 0, sleeps = 0, timeouts = 0;
  const uint64_t total = per_producer * c.producers;
  uint64_t received = 0;
  std::vector<int*> out(128);
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> pick(1, 128);
  uint32_t spins = 0;
  go.store(true, std::memory_order_release);
  while (received < total) {
    const uint32_t want = c.batch ? c.batch : pick(rng);
    const uint32_t n = ring.consumeBatch(std::span<int*>(out.data(), want));
    for (uint32_t i = 0; i < n; ++i) {
      const auto v = reinterpret_cast<uintptr_t>(out[i]);
      const auto p = static_cast<size_t>(v >> kIdShift);
      if (p >= next.size()) {
        ++bad_id;
        continue;
      }
      // Exactly once + per-producer order: each producer's sequence numbers
      // must arrive as 0, 1, 2, ... with no gap, repeat or reordering.
      if ((v & kSeqMask) != next[p]) ++out_of_order;
      next[p] = (v & kSeqMask) + 1;
    }
    received += n;
    if (n == 0) {
      if (c.doorbell) {
        if (ring.armDoorbell()) {
          ++sleeps;
          armed.fetch_add(1);
          if (!ring.waitDoorbell(5s)) ++timeouts;
        }
        ring.disarmDoorbell();
      } else {
        Backoff(spins);
      }
    }
  }
  for (auto& t : producers) t.join();

  EXPECT_EQ(received, total);
  EXPECT_EQ(bad_id, 0u);
  EXPECT_EQ(out_of_order, 0u);
  for (int p = 0; p < c.producers; ++p) EXPECT_EQ(next[p], per_producer) << "producer " << p;
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(timeouts, 0u) << "lost wake-up(s)";
  if (c.doorbell) {
    EXPECT_GT(sleeps, 0u) << "the consumer never slept: the doorbell was not exercised";
  }
  RecordProperty("sleeps", std::to_string(sleeps));
}

INSTANTIATE_TEST_SUITE_P(Mpsc, MpscTest,
                         ::testing::Values(Case{2, 1, 64, false}, Case{2, 16, 64, false},
                                           Case{2, 64, 256, false}, Case{2, 0, 100, false},
                                           Case{3, 1, 7, false}, Case{3, 16, 1000, false},
                                           Case{3, 64, 256, false}, Case{3, 0, 61, false},
                                           Case{2, 0, 64, true}, Case{3, 0, 33, true}),
                         Name);

}  // namespace
