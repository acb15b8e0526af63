// The objects Datapath owns, alone: FillBudget (the fill rings' share of
// the pool) and Batches (the per-destination batches of a burst).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "datapath/batches.h"
#include "datapath/fill_budget.h"

namespace vdev::datapath {
namespace {

constexpr uint32_t kPool = 1024;      // floors <= 512, extra <= 256
constexpr uint32_t kFillSize = 2048;  // larger than any target here

struct FillBudgetTest : ::testing::Test {
  PortTable ports;
  std::unique_ptr<Port> punt;
  FillBudget budget{kPool, ports, punt};
};

TEST_F(FillBudgetTest, FloorsTakeAtMostHalfThePoolExtraAQuarter) {
  EXPECT_EQ(budget.floorBudget(), kPool / 2);
  EXPECT_EQ(budget.extraBudget(), kPool / 4);
  EXPECT_EQ(FillBudget::floor(kFillSize), FillBudget::kFloor);
  EXPECT_EQ(FillBudget::floor(32), 32u) << "a ring smaller than the floor is its own floor";
  EXPECT_EQ(budget.room(kFillSize), kPool / 2 / FillBudget::kFloor);
  PortConfig pc;
  pc.xsk.fill_size = kFillSize;
  pc.queues = kPool / 2 / FillBudget::kFloor;
  EXPECT_TRUE(budget.checkRoom("p", pc).ok());
  pc.queues++;
  const Status refused = budget.checkRoom("p", pc);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().err, ENOSPC);
}

TEST_F(FillBudgetTest, NewQueuesShareTheExtraAndABusyOneGrowsOnlyIntoWhatIsLeft) {
  budget.setNow(1'000'000'000);
  Port::Queue a(64), b(64);
  const uint32_t floor = FillBudget::kFloor, extra = kPool / 4;
  // A new queue: its floor and half of the extra that is left.
  EXPECT_EQ(budget.want(a, kFillSize), floor + extra / 2);
  EXPECT_EQ(a.fill_target, floor + extra / 2);
  EXPECT_EQ(budget.want(b, kFillSize), floor + extra / 4);
  // a refilled, then the kernel took more than half of it: busy, it grows
  // to what keeps every queue's extra within the quarter, not to twice.
  a.fill_given = a.fill_target;
  a.rx_got = a.fill_target - 10;
  const uint32_t wanted = budget.want(a, kFillSize);
  EXPECT_EQ(a.fill_target, floor + extra - b.fill_extra);
  EXPECT_EQ(wanted, a.fill_target - 10);
  EXPECT_EQ(a.fill_extra + b.fill_extra, extra);
  // Full: nothing wanted, the target stays.
  a.fill_given = a.rx_got + a.fill_target;
  EXPECT_EQ(budget.want(a, kFillSize), 0u);
}

TEST(Batches, AFullBatchGoesAtOnceAndFlushHandsOverEveryListedPort) {
  Batches b(4);
  b.openPort(3);
  b.openPort(0);
  EXPECT_EQ(b.burst().size(), 4u);
  std::vector<Frame> frames(6);
  EXPECT_TRUE(b.add(3, &frames[0]).empty());
  EXPECT_TRUE(b.add(0, &frames[1]).empty());
  EXPECT_TRUE(b.add(3, &frames[2]).empty());
  EXPECT_TRUE(b.add(3, &frames[3]).empty());
  const auto full = b.add(3, &frames[4]);
  ASSERT_EQ(full.size(), 4u);
  EXPECT_EQ(full[0], &frames[0]);
  EXPECT_EQ(full[3], &frames[4]);
  std::vector<std::pair<uint16_t, size_t>> flushed;
  b.flush([&](uint16_t i, std::span<Frame* const> fs) { flushed.emplace_back(i, fs.size()); });
  // In the order the ports got their first frame; 3 again, empty, for its doorbell.
  EXPECT_EQ(flushed, (std::vector<std::pair<uint16_t, size_t>>{{3, 0}, {0, 1}}));
  flushed.clear();
  b.flush([&](uint16_t i, std::span<Frame* const> fs) { flushed.emplace_back(i, fs.size()); });
  EXPECT_TRUE(flushed.empty());
}

}  // namespace
}  // namespace vdev::datapath
