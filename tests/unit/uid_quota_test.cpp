// The caps per non-root uid (vdev/daemon/src/uid_quota.h): the request bucket,
// the port cap, the capture memory, the FDB groups, and the words of each
// refusal (the cap's option and the use).
#include "uid_quota.h"

#include <gtest/gtest.h>

namespace vdev::daemon {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

TEST(UidQuota, RequestsBeyondTheBurstWaitForTheRate) {
  UidQuota q(UidCaps{.rate = 10, .burst = 3});
  for (int i = 0; i < 3; i++) EXPECT_TRUE(q.takeRequest(65534, kSec)) << i;
  auto st = q.takeRequest(65534, kSec);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().err, EAGAIN);
  EXPECT_NE(st.error().what.find("uid 65534 sent more than 10 requests a second"), std::string::npos) << st.error().what;
  EXPECT_NE(st.error().what.find("--uid-max-rate"), std::string::npos);
  EXPECT_TRUE(q.takeRequest(65533, kSec)) << "another uid has its own bucket";
  EXPECT_TRUE(q.takeRequest(0, kSec)) << "root is not capped";
  EXPECT_FALSE(q.takeRequest(65534, kSec + kSec / 20)) << "half a token back";
  EXPECT_TRUE(q.takeRequest(65534, kSec + kSec / 10)) << "one token back after 100 ms";
  // A long quiet time fills the bucket to the burst, no more.
  for (int i = 0; i < 3; i++) EXPECT_TRUE(q.takeRequest(65534, 100 * kSec)) << i;
  EXPECT_FALSE(q.takeRequest(65534, 100 * kSec));
  // Counted per uid, taken and refused apart (vdevctl info, /metrics); root not.
  ASSERT_EQ(q.requests().size(), 2u);
  EXPECT_EQ(q.requests().at(65534).taken, 7u);
  EXPECT_EQ(q.requests().at(65534).refused, 3u);
  EXPECT_EQ(q.requests().at(65533).taken, 1u);
  EXPECT_EQ(q.requests().at(65533).refused, 0u);
  EXPECT_FALSE(q.requests().count(0));
}

TEST(UidQuota, RateZeroIsNoLimit) {
  UidQuota q(UidCaps{.rate = 0, .burst = 1});
  for (int i = 0; i < 1000; i++) ASSERT_TRUE(q.takeRequest(65534, kSec));
  EXPECT_EQ(q.requests().at(65534).taken, 1000u) << "counted without a cap too";
}

TEST(UidQuota, PortCapNamesTheCapAndTheUse) {
  UidQuota q(UidCaps{.ports = 2});
  EXPECT_TRUE(q.checkPortAdd(65534, 1));
  auto st = q.checkPortAdd(65534, 2);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().err, EDQUOT);
  EXPECT_EQ(st.error().what, "uid 65534 has 2 ports, the most --uid-max-ports allows");
  EXPECT_TRUE(q.checkPortAdd(0, 1000)) << "root is not capped";
}

TEST(UidQuota, CaptureMemoryIsReservedAndGivenBack) {
  UidQuota q(UidCaps{.capture_bytes = 1000});
  EXPECT_TRUE(q.reserveCapture(65534, 600));
  EXPECT_EQ(q.captureBytes(65534), 600u);
  auto st = q.reserveCapture(65534, 500);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().err, ENOBUFS);
  EXPECT_NE(st.error().what.find("uid 65534 has 600 bytes in captures"), std::string::npos) << st.error().what;
  EXPECT_NE(st.error().what.find("--uid-max-capture"), std::string::npos);
  EXPECT_FALSE(q.reserveCapture(65533, 1001)) << "one capture larger than the cap";
  EXPECT_TRUE(q.reserveCapture(0, 1ull << 40)) << "root is not capped";
  EXPECT_EQ(q.captureBytes(0), 0u);
  q.captureDone(65534, 600);
  EXPECT_EQ(q.captureBytes(65534), 0u);
  EXPECT_TRUE(q.captures().empty());
  EXPECT_TRUE(q.reserveCapture(65534, 1000));
}

TEST(UidQuota, FdbGroupsOnePerUidRootNone) {
  UidQuota q(UidCaps{}, /*max_groups=*/3);
  EXPECT_EQ(q.fdbGroup(0), 0);
  EXPECT_EQ(q.fdbGroup(1000), 1);
  EXPECT_EQ(q.fdbGroup(1001), 2);
  EXPECT_EQ(q.fdbGroup(1000), 1);
  EXPECT_EQ(q.fdbGroup(1002), 0) << "groups ran out";
}

}  // namespace
}  // namespace vdev::daemon
