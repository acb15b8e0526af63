// Throughput of ringbuf::PtrRing against named alternatives, in the same run:
// pointers/second from P producer threads to one consumer thread, for batch
// sizes 1, 16, 64 and P = 1, 2.
//
//   ptr_ring        PtrRing: produceBulk / consumeBatch
//   ptr_ring_flush  the same, plus flush() after every batch (the doorbell's
//                   cost when the consumer is awake: one fence + one load)
//   boost_spsc      boost::lockfree::spsc_queue, range push/pop (1 producer)
//   boost_queue     boost::lockfree::queue (MPMC), per-item push/pop
//   mutex_frame     ring guarded by a std::mutex taken per frame
//   mutex_batch     ring guarded by a std::mutex taken once per batch
//
// Every variant: capacity 1024, the same batch size on both sides, the same
// back-off when full/empty (spin with PAUSE, then yield: 2 cores, and with two
// producers 3 threads), and threads started inside each iteration moving a
// fixed number of pointers (--ring_items=N, default 2000000), pinned to CPUs
// unless --ring_pin=0 (see PinToCpu).
// Results: items_per_second (JSON: --benchmark_format=json). See
// scripts/bench-ring.sh for the table.

#include "ringbuf/ptr_ring.h"

#include <benchmark/benchmark.h>

#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/spsc_queue.hpp>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Item;  // never dereferenced: pointer values encode producer + sequence

constexpr uint32_t kCapacity = 1024;
constexpr uint32_t kMaxBatch = 64;
uint64_t g_items = 2000000;
// Runs whose consumer saw another checksum than the producers sent; main()
// fails when any did (a benchmark reports an error only as a skip).
std::atomic<uint64_t> g_mismatches{0};
bool g_pin = true;

// Thread placement, when --ring_pin=1 (default): the consumer on the last CPU,
// producer p on CPU p % ncpu. Without it the scheduler's placement on a
// 2-CPU machine (producer and consumer sometimes sharing a CPU) changes
// batch-1 results by a factor of 5 from run to run.
void PinToCpu(int cpu) {
  if (!g_pin) return;
  const int ncpu = static_cast<int>(std::thread::hardware_concurrency());
  if (ncpu < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % ncpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort
}
int ConsumerCpu() {
  const int ncpu = static_cast<int>(std::thread::hardware_concurrency());
  return ncpu > 0 ? ncpu - 1 : 0;
}

// ---- Adapters: push returns how many of the batch were taken, pop how many
// were dequeued. ---------------------------------------------------------

class PtrRingQ {
 public:
  static constexpr bool kMultiProducer = true;
  explicit PtrRingQ(uint32_t cap) : ring_(cap) {}
  uint32_t push(Item* const* v, uint32_t n) { return ring_.produceBulk({v, n}); }
  uint32_t pop(Item** v, uint32_t n) { return ring_.consumeBatch({v, n}); }

 private:
  ringbuf::PtrRing<Item> ring_;
};

class PtrRingFlushQ {
 public:
  static constexpr bool kMultiProducer = true;
  explicit PtrRingFlushQ(uint32_t cap) : ring_(cap) {}
  uint32_t push(Item* const* v, uint32_t n) {
    const uint32_t took = ring_.produceBulk({v, n});
    ring_.flush();
    return took;
  }
  uint32_t pop(Item** v, uint32_t n) { return ring_.consumeBatch({v, n}); }

 private:
  ringbuf::PtrRing<Item> ring_;
};

class BoostSpscQ {
 public:
  static constexpr bool kMultiProducer = false;
  explicit BoostSpscQ(uint32_t cap) : q_(cap) {}
  uint32_t push(Item* const* v, uint32_t n) { return static_cast<uint32_t>(q_.push(v, n)); }
  uint32_t pop(Item** v, uint32_t n) { return static_cast<uint32_t>(q_.pop(v, n)); }

 private:
  boost::lockfree::spsc_queue<Item*> q_;
};

class BoostQueueQ {
 public:
  static constexpr bool kMultiProducer = true;
  explicit BoostQueueQ(uint32_t cap) : q_(cap) {}
  uint32_t push(Item* const* v, uint32_t n) {
    uint32_t i = 0;
    while (i < n && q_.bounded_push(v[i])) ++i;
    return i;
  }
  uint32_t pop(Item** v, uint32_t n) {
    uint32_t i = 0;
    while (i < n && q_.pop(v[i])) ++i;
    return i;
  }

 private:
  // fixed_sized: a bounded node pool of `cap` nodes, no allocation on push.
  boost::lockfree::queue<Item*, boost::lockfree::fixed_sized<true>> q_;
};

// Baselines: a plain bounded ring (exact capacity, free-running indices)
// guarded by a std::mutex, taken per frame or once per batch.
class MutexRingBase {
 public:
  explicit MutexRingBase(uint32_t cap) : cap_(cap), slots_(cap) {}

 protected:
  bool pushOneLocked(Item* v) {
    if (prod_ - cons_ == cap_) return false;
    slots_[prod_++ % cap_] = v;
    return true;
  }
  bool popOneLocked(Item*& v) {
    if (prod_ == cons_) return false;
    v = slots_[cons_++ % cap_];
    return true;
  }
  std::mutex mu_;

 private:
  const uint64_t cap_;
  uint64_t prod_ = 0, cons_ = 0;
  std::vector<Item*> slots_;
};

class MutexFrameQ : MutexRingBase {
 public:
  static constexpr bool kMultiProducer = true;
  using MutexRingBase::MutexRingBase;
  uint32_t push(Item* const* v, uint32_t n) {
    uint32_t i = 0;
    for (; i < n; ++i) {
      std::lock_guard<std::mutex> g(mu_);
      if (!pushOneLocked(v[i])) break;
    }
    return i;
  }
  uint32_t pop(Item** v, uint32_t n) {
    uint32_t i = 0;
    for (; i < n; ++i) {
      std::lock_guard<std::mutex> g(mu_);
      if (!popOneLocked(v[i])) break;
    }
    return i;
  }
};

class MutexBatchQ : MutexRingBase {
 public:
  static constexpr bool kMultiProducer = true;
  using MutexRingBase::MutexRingBase;
  uint32_t push(Item* const* v, uint32_t n) {
    std::lock_guard<std::mutex> g(mu_);
    uint32_t i = 0;
    while (i < n && pushOneLocked(v[i])) ++i;
    return i;
  }
  uint32_t pop(Item** v, uint32_t n) {
    std::lock_guard<std::mutex> g(mu_);
    uint32_t i = 0;
    while (i < n && popOneLocked(v[i])) ++i;
    return i;
  }
};

// ---- Harness -------------------------------------------------------------

// Same back-off for every variant when the ring is full (producer) or empty
// (consumer): spin briefly, then give the CPU away.
inline void Backoff(uint32_t& spins) {
  if (++spins < 64) {
    ringbuf::detail::cpuRelax();
  } else {
    std::this_thread::yield();
    spins = 0;
  }
}

constexpr int kIdShift = 48;

template <class Q>
void BM_Ring(benchmark::State& state) {
  const auto batch = static_cast<uint32_t>(state.range(0));
  const auto producers = static_cast<int>(state.range(1));
  const uint64_t per_producer = g_items / producers;
  const uint64_t total = per_producer * producers;
  // Expected sum of pointer values: a cheap end-to-end check.
  uint64_t expect_sum = 0;
  for (int p = 0; p < producers; ++p)
    expect_sum += (uint64_t(p) << kIdShift) * per_producer + per_producer * (per_producer - 1) / 2;

  auto q = std::make_unique<Q>(kCapacity);  // empty again after every iteration
  for (auto _ : state) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    uint64_t sum = 0;
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        PinToCpu(p);
        Item* buf[kMaxBatch];
        ready.fetch_add(1, std::memory_order_relaxed);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        const uintptr_t id = uintptr_t(p) << kIdShift;
        uint32_t spins = 0;
        for (uint64_t seq = 0; seq < per_producer;) {
          const auto n = static_cast<uint32_t>(std::min<uint64_t>(batch, per_producer - seq));
          for (uint32_t i = 0; i < n; ++i) buf[i] = reinterpret_cast<Item*>(id | (seq + i));
          for (uint32_t done = 0; done < n;) {
            const uint32_t took = q->push(buf + done, n - done);
            done += took;
            if (took == 0) Backoff(spins);
          }
          seq += n;
        }
      });
    }
    threads.emplace_back([&] {
      PinToCpu(ConsumerCpu());
      Item* buf[kMaxBatch];
      ready.fetch_add(1, std::memory_order_relaxed);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint64_t received = 0, s = 0;
      uint32_t spins = 0;
      while (received < total) {
        const uint32_t n = q->pop(buf, batch);
        if (n == 0) {
          Backoff(spins);
          continue;
        }
        for (uint32_t i = 0; i < n; ++i) s += reinterpret_cast<uintptr_t>(buf[i]);
        received += n;
      }
      sum = s;
    });
    while (ready.load(std::memory_order_relaxed) != producers + 1) std::this_thread::yield();
    go.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
    if (sum != expect_sum) {
      // Counted as well as reported: Google Benchmark treats SkipWithError
      // as a skip, and main() turns any mismatch into a failed exit.
      g_mismatches.fetch_add(1, std::memory_order_relaxed);
      state.SkipWithError("pointer checksum mismatch: lost or duplicated items");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * total));
}

void Register(const char* name, void (*fn)(benchmark::State&), bool multi_producer) {
  auto* b = benchmark::RegisterBenchmark(name, fn);
  b->ArgNames({"batch", "producers"});
  for (int64_t producers : {1, 2}) {
    if (producers > 1 && !multi_producer) continue;
    for (int64_t batch : {1, 16, 64}) b->Args({batch, producers});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  // Our own flag, removed before Google Benchmark parses the rest.
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--ring_items=", 13) == 0) {
      g_items = std::strtoull(argv[i] + 13, nullptr, 10);
      if (g_items < 2) g_items = 2;
    } else if (std::strncmp(argv[i], "--ring_pin=", 11) == 0) {
      g_pin = std::atoi(argv[i] + 11) != 0;
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;

  Register("ptr_ring", BM_Ring<PtrRingQ>, PtrRingQ::kMultiProducer);
  Register("ptr_ring_flush", BM_Ring<PtrRingFlushQ>, PtrRingFlushQ::kMultiProducer);
  Register("boost_spsc", BM_Ring<BoostSpscQ>, BoostSpscQ::kMultiProducer);
  Register("boost_queue", BM_Ring<BoostQueueQ>, BoostQueueQ::kMultiProducer);
  Register("mutex_frame", BM_Ring<MutexFrameQ>, MutexFrameQ::kMultiProducer);
  Register("mutex_batch", BM_Ring<MutexBatchQ>, MutexBatchQ::kMultiProducer);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("ring_items", std::to_string(g_items));
  benchmark::AddCustomContext("ring_capacity", std::to_string(kCapacity));
  benchmark::AddCustomContext("ring_pin", g_pin ? "consumer:last-cpu,producer:p%ncpu" : "none");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (const uint64_t bad = g_mismatches.load(std::memory_order_relaxed); bad != 0) {
    std::fprintf(stderr, "ring_bench: %llu run(s) lost or duplicated items\n",
                 static_cast<unsigned long long>(bad));
    return 1;
  }
  return 0;
}
