// SnapshotGate (daemon/snapshot_gate.h): GET /metrics may be scraped by
// anyone in a loop; the statistics behind it are collected at most once per
// period, however many readers, and fresh() readers get a value collected
// after they asked.
#include "daemon/snapshot_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

using vdev::daemon::SnapshotGate;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct FakeClock {
  std::atomic<int64_t> ms{1000};
  Clock::time_point now() const { return Clock::time_point(std::chrono::milliseconds(ms.load())); }
};

TEST(SnapshotGate, RecentCollectsOncePerPeriod) {
  FakeClock clk;
  int n = 0;
  SnapshotGate<int> g(250ms, [&] { return ++n; }, [&] { return clk.now(); });
  EXPECT_EQ(*g.recent(), 1);
  clk.ms += 100;
  EXPECT_EQ(*g.recent(), 1);  // 100 ms old: served as it is
  clk.ms += 149;
  EXPECT_EQ(*g.recent(), 1);
  clk.ms += 1;
  EXPECT_EQ(*g.recent(), 2);  // 250 ms old: collected again
  EXPECT_EQ(g.collections(), 2u);
}

TEST(SnapshotGate, FreshIsCollectedAfterTheCall) {
  FakeClock clk;
  int n = 0;
  SnapshotGate<int> g(250ms, [&] { return ++n; }, [&] { return clk.now(); });
  EXPECT_EQ(*g.recent(), 1);
  clk.ms += 1;
  EXPECT_EQ(*g.fresh(), 2);  // counters after traffic stopped: never an older value
  EXPECT_EQ(*g.recent(), 2);  // and the scrapers get it
  EXPECT_EQ(g.collections(), 2u);
}

// 16 scrapers in a loop for a while, real clock: the collections are
// bounded by the time elapsed over the period, not by the requests.
TEST(SnapshotGate, ConcurrentReadersShareCollections) {
  std::atomic<int> collecting{0}, overlap{0};
  SnapshotGate<int> g(50ms, [&] {
    if (collecting.fetch_add(1) != 0) overlap++;
    std::this_thread::sleep_for(2ms);  // an expensive collection
    collecting.fetch_sub(1);
    return 0;
  });
  std::atomic<uint64_t> requests{0};
  const auto start = Clock::now();
  std::vector<std::thread> t;
  for (int i = 0; i < 16; i++)
    t.emplace_back([&] {
      while (Clock::now() - start < 500ms) {
        (void)g.recent();
        requests++;
      }
    });
  for (auto& th : t) th.join();
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_EQ(overlap.load(), 0);
  EXPECT_GT(requests.load(), 100u);
  EXPECT_LE(g.collections(), uint64_t(elapsed / 50ms) + 1) << requests.load() << " requests";
}

}  // namespace
