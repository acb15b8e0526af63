// The datapath thread and the threads that talk to it (control requests,
// statistics, MAC table changes) at the same time -- run under
// ThreadSanitizer by `make tsan`. Ports have no device: traffic is injected
// on the datapath thread through runOnDatapath(), which is how every control
// request reaches it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "datapath/datapath.h"
#include "datapath_test_access.h"

namespace vdev::datapath {
namespace {

constexpr uint8_t kBcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr uint8_t kMulticastSrc[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};

// A started datapath with n ports without a device (p0, p1, ...), live.
std::unique_ptr<Datapath> startWithPorts(uint16_t n) {
  DatapathConfig cfg;
  cfg.frames = 2048;
  cfg.port.ring_capacity = 256;
  cfg.port.batch = 16;
  cfg.idle_spin_ns = 0;  // sleep at once: every request goes through the wake-up path
  auto d = Datapath::create(cfg);
  if (!d.ok()) {
    ADD_FAILURE() << d.error().message();
    return nullptr;
  }
  std::unique_ptr<Datapath> dp = std::move(d.value());
  for (uint16_t i = 0; i < n; i++) {
    auto p = std::make_unique<Port>("p" + std::to_string(i), i, 1, cfg.port, 1500);
    p->setLive(true);
    DatapathTestAccess::adoptPort(*dp, std::move(p));
  }
  dp->start();
  return dp;
}

TEST(DatapathConcurrency, ControlStatsAndFdbWhileTheThreadForwards) {
  auto d = startWithPorts(3);
  ASSERT_TRUE(d);
  Datapath& dp = *d;

  constexpr int kRounds = 300, kPerRound = 16;
  // The readers must really run while traffic flows: the traffic goes on
  // past kRounds until each has done kMinReads iterations since it began
  // (a reader the scheduler started late would otherwise test nothing).
  constexpr int kMinReads = 20;
  std::atomic<bool> started{false}, done{false};
  std::atomic<int> statsReads{0}, fdbReads{0};
  int rounds = 0;         // written by the traffic thread, read after join
  uint64_t delivered = 0;  // written on the datapath thread only, read after join

  // Traffic: port 0 floods valid broadcasts (to ports 1 and 2, one copy)
  // and frames with a multicast source (dropped, counted); the frames that
  // reached the rings are taken out and freed in the same request.
  std::thread traffic([&] {
    started = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (int r = 0; r < kRounds || ((statsReads < kMinReads || fdbReads < kMinReads) &&
                                    std::chrono::steady_clock::now() < deadline);
         r++) {
      rounds = r + 1;
      DatapathTestAccess::runOnDatapath(dp, [&] {
        Frame* fs[kPerRound];
        ASSERT_EQ(dp.pool().allocBulk(fs), uint32_t(kPerRound));
        for (int i = 0; i < kPerRound; i++) {
          uint8_t* b = dp.pool().data(fs[i]);
          std::memset(b, 0, 64);
          std::memcpy(b, kBcast, 6);
          const uint8_t src[6] = {0x02, 0, 0, 0, 0, uint8_t(1 + i % 4)};
          std::memcpy(b + 6, i % 2 ? kMulticastSrc : src, 6);
          b[12] = 0x88, b[13] = 0xb5;
          fs[i]->len = 64;
        }
        DatapathTestAccess::forward(dp, DatapathTestAccess::port(dp, 0), fs, kPerRound, 1'000'000'000ull + uint64_t(r));
        for (size_t port : {1, 2}) {
          Frame* out[64];
          uint32_t n;
          while ((n = DatapathTestAccess::port(dp, port).queues()[0]->ring.consumeBatch(out)) > 0) {
            delivered += n;
            dp.pool().freeBulk(std::span<Frame* const>(out, n));
          }
        }
      });
    }
    done = true;
  });

  // Statistics from another thread: counters only grow, the pool adds up.
  std::thread stats([&] {
    uint64_t last = 0;
    while (!started) std::this_thread::yield();
    while (!done) {
      const DatapathStats s = dp.stats();
      ASSERT_EQ(s.ports.size(), 3u);
      const uint64_t invalid = s.ports[0].counters[kDropInvalidSrc];
      EXPECT_GE(invalid, last);
      last = invalid;
      EXPECT_EQ(s.pool.sum(), s.pool[stats::kPoolTotal]);
      statsReads++;
    }
  });

  // MAC table changes from a third.
  std::thread fdb([&] {
    const uint8_t mac[6] = {0x02, 0xfd, 0, 0, 0, 1};
    while (!started) std::this_thread::yield();
    while (!done) {
      EXPECT_TRUE(dp.fdbAdd(mac, "p2").ok());
      auto dump = dp.fdbDump();
      ASSERT_TRUE(dump.ok());
      EXPECT_FALSE(dump->empty());
      EXPECT_TRUE(dp.fdbDel(mac).ok());
      fdbReads++;
    }
  });

  traffic.join();
  stats.join();
  fdb.join();
  const DatapathStats s = dp.stats();
  EXPECT_GE(statsReads.load(), kMinReads) << "the statistics thread hardly ran during the traffic";
  EXPECT_GE(fdbReads.load(), kMinReads) << "the MAC table thread hardly ran during the traffic";
  ASSERT_GE(rounds, kRounds);
  EXPECT_EQ(s.ports[0].counters[kDropInvalidSrc], uint64_t(rounds * kPerRound / 2));
  EXPECT_EQ(delivered, uint64_t(rounds * kPerRound / 2 * 2)) << "each valid broadcast reaches 2 ports";
  EXPECT_EQ(dp.pool().available(), dp.pool().total());
  dp.stop();
}

// Statistics taken in two parts (Datapath::stats): the datapath thread's
// short step, and the BPF map and sysfs reads on the calling thread. With
// no port changing, every snapshot has its reads off the datapath thread;
// with requests arriving all the time (each may change a port's rows), a
// snapshot is taken again or, at worst, all on the datapath thread -- and
// the counters stay exact either way. Fails if the kernel reads move back
// onto the datapath thread.
TEST(DatapathConcurrency, StatsReadTheKernelOffTheDatapathThread) {
  auto d = startWithPorts(2);
  ASSERT_TRUE(d);
  Datapath& dp = *d;

  constexpr int kQuiet = 50;
  for (int i = 0; i < kQuiet; i++) {
    const DatapathStats s = dp.stats();
    ASSERT_EQ(s.ports.size(), 2u);
    EXPECT_EQ(s.pool.sum(), s.pool[stats::kPoolTotal]);
  }
  auto sp = DatapathTestAccess::statsSplit(dp);
  EXPECT_EQ(sp.off_thread, uint64_t(kQuiet)) << "nothing changed: no snapshot should need another try";
  EXPECT_EQ(sp.fallback, 0u);
  EXPECT_EQ(sp.kernel_reads_on_datapath, 0u) << "BPF/sysfs reads ran on the datapath thread";

  // Requests all the time (each brackets rows_seq_), counting drops on port 0.
  std::atomic<bool> done{false};
  std::atomic<uint64_t> counted{0};
  std::thread churn([&] {
    while (!done) {
      DatapathTestAccess::runOnDatapath(
          dp, [&] { DatapathTestAccess::port(dp, 0).counters().drops[kDropInvalidSrc].add(1); });
      counted.fetch_add(1, std::memory_order_relaxed);
    }
  });
  uint64_t last = 0;
  for (int i = 0; i < 200; i++) {
    const DatapathStats s = dp.stats();
    const uint64_t n = s.ports[0].counters[kDropInvalidSrc];
    EXPECT_GE(n, last);
    last = n;
    EXPECT_EQ(s.pool.sum(), s.pool[stats::kPoolTotal]);
  }
  done = true;
  churn.join();
  EXPECT_EQ(dp.stats().ports[0].counters[kDropInvalidSrc], counted.load());
  sp = DatapathTestAccess::statsSplit(dp);
  EXPECT_EQ(sp.off_thread + sp.fallback, uint64_t(kQuiet + 200 + 1));
  EXPECT_EQ(sp.kernel_reads_on_datapath, sp.fallback) << "only the fallback reads on the datapath thread";
  dp.stop();
}

}  // namespace
}  // namespace vdev::datapath
