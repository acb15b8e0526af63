// The switching logic (Datapath::forward) and the FDB, on ports without
// devices: learning, flooding with copies, unicast, xconnect, and the checks
// that drop frames vdevd must not forward (runt, oversize, bad source).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "datapath/datapath.h"
#include "datapath/fdb.h"
#include "datapath_test_access.h"

namespace vdev::datapath {
namespace {

constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0a};
constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0b};
constexpr uint8_t kMacC[6] = {0x02, 0, 0, 0, 0, 0x0c};
constexpr uint8_t kBcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
// The table key of a MAC in the default VLAN, as the datapath learns it.
uint64_t vlan1(const uint8_t* m) { return fdbKey(macKey(m), kVidDefault); }

struct SwitchTest : ::testing::Test {
  void build(SwitchMode mode, uint32_t nports, uint32_t frames = 1024,
             const std::function<void(DatapathConfig&)>& tweak = {}) {
    DatapathConfig cfg;
    cfg.mode = mode;
    cfg.frames = frames;
    cfg.port.ring_capacity = 64;
    cfg.port.batch = 16;
    if (tweak) tweak(cfg);
    auto d = Datapath::create(cfg);
    ASSERT_TRUE(d.ok()) << d.error().message();
    dp = std::move(d.value());
    for (uint32_t i = 0; i < nports; i++) {
      auto p = std::make_unique<Port>("p" + std::to_string(i), uint16_t(i), 1, cfg.port, 1500);
      p->setLive(true);
      DatapathTestAccess::adoptPort(*dp, std::move(p));
    }
  }
  Frame* frame(const uint8_t* dst, const uint8_t* src, uint32_t len, uint8_t fill = 0x5a) {
    Frame* f = nullptr;
    EXPECT_EQ(dp->pool().allocBulk(std::span<Frame*>(&f, 1)), 1u);
    uint8_t* d = dp->pool().data(f);
    std::memset(d, fill, len);
    if (len >= 6) std::memcpy(d, dst, 6);
    if (len >= 12) std::memcpy(d + 6, src, 6);
    if (len >= 14) d[12] = 0x88, d[13] = 0xb5;
    f->len = len;
    return f;
  }
  // Inside the datapath (datapath_test_access.h).
  Port& port(uint32_t i) { return DatapathTestAccess::port(*dp, i); }
  Fdb& fdb() { return DatapathTestAccess::fdb(*dp); }
  void forward(uint32_t in, Frame** fs, uint32_t n) { DatapathTestAccess::forward(*dp, port(in), fs, n, now); }
  void send(uint32_t in, std::vector<Frame*> fs) { forward(in, fs.data(), uint32_t(fs.size())); }
  // Frames waiting in port i's delivery ring (taken out and freed).
  std::vector<std::vector<uint8_t>> drain(uint32_t i) {
    std::vector<std::vector<uint8_t>> out;
    Frame* fs[64];
    uint32_t n = port(i).queues()[0]->ring.consumeBatch(fs);
    for (uint32_t k = 0; k < n; k++) {
      out.emplace_back();
      for (const Frame* c = fs[k]; c; c = c->next)  // every chunk of a chain
        out.back().insert(out.back().end(), dp->pool().data(c), dp->pool().data(c) + c->len);
      dp->pool().free(fs[k]);
    }
    return out;
  }
  // A frame of len bytes as AF_XDP multi-buffer hands it over: a chain of
  // chunks, each filled after the 256 bytes of headroom. bytes: its bytes.
  Frame* chain(const uint8_t* dst, const uint8_t* src, uint32_t len, std::vector<uint8_t>& bytes) {
    bytes.resize(len);
    for (uint32_t i = 0; i < len; i++) bytes[i] = uint8_t(i * 7 + len);
    std::memcpy(bytes.data(), dst, 6);
    std::memcpy(bytes.data() + 6, src, 6);
    bytes[12] = 0x88, bytes[13] = 0xb5;
    Frame* head = nullptr;
    Frame* tail = nullptr;
    for (uint32_t off = 0; off < len;) {
      Frame* f = nullptr;
      EXPECT_EQ(dp->pool().allocBulk(std::span<Frame*>(&f, 1)), 1u);
      f->len = std::min(len - off, dp->pool().room(f));
      std::memcpy(dp->pool().data(f), bytes.data() + off, f->len);
      off += f->len;
      if (tail) {
        tail->next = f;
        head->more += f->len;
      } else {
        head = f;
      }
      tail = f;
    }
    return head;
  }
  uint64_t drops(uint32_t p, DropReason r) { return port(p).snapshot()[r]; }
  void expectPoolFull() { EXPECT_EQ(dp->pool().available(), dp->pool().total()); }

  std::unique_ptr<Datapath> dp;
  uint64_t now = 1'000'000'000'000ull;
};

TEST_F(SwitchTest, BroadcastFloodsEveryOtherPortOnceWithCopies) {
  build(SwitchMode::kSwitch, 3);
  Frame* f = frame(kBcast, kMacA, 100, 0x11);
  const uint32_t before = dp->pool().available();
  send(0, {f});
  // One extra frame was taken from the pool for the second destination.
  EXPECT_EQ(dp->pool().available(), before - 1);
  auto r0 = drain(0), r1 = drain(1), r2 = drain(2);
  EXPECT_TRUE(r0.empty()) << "never back to the sender";
  ASSERT_EQ(r1.size(), 1u);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r1[0], r2[0]) << "copies are byte for byte";
  EXPECT_EQ(r1[0].size(), 100u);
  EXPECT_EQ(r1[0][50], 0x11);
  expectPoolFull();
}

// switchFrames reuses a burst's last learn and lookup for the frames that
// repeat them; a station that moves within the burst must end that reuse.
TEST_F(SwitchTest, AStationThatMovesInsideABurstIsNotSentToWhereItWas) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) { c.fdb_hold_ns = 0; });
  send(1, {frame(kBcast, kMacB, 64)});  // B learned on port 1
  drain(0), drain(2);
  // One burst from port 0: A to B (port 1), then B itself from port 0 (it
  // moved here), then A to B again: B now lives behind the ingress port.
  send(0, {frame(kMacB, kMacA, 64), frame(kMacB, kMacA, 64), frame(kBcast, kMacB, 64), frame(kMacB, kMacA, 64)});
  EXPECT_EQ(drain(1).size(), 3u) << "two unicast before the move, the broadcast after it";
  EXPECT_EQ(drain(2).size(), 1u) << "the broadcast";
  EXPECT_EQ(drops(0, kDropNoRoute), 1u) << "after the move, B's unicast has nowhere to go (no hairpin)";
  EXPECT_EQ(fdb().lookup(vlan1(kMacB), now), 0);
  EXPECT_EQ(fdb().lookup(vlan1(kMacA), now), 0);
  // And the source side: A sent three times in the burst, learned once, is
  // still A's entry on port 0 after B's learn in between.
  send(2, {frame(kMacA, kMacC, 64)});
  EXPECT_EQ(drain(0).size(), 1u);
  EXPECT_TRUE(drain(1).empty());
  expectPoolFull();
}

TEST_F(SwitchTest, LearnedUnicastStopsFlooding) {
  build(SwitchMode::kSwitch, 3);
  send(0, {frame(kMacB, kMacA, 64)});  // B unknown: flood
  EXPECT_EQ(drain(1).size(), 1u);
  EXPECT_EQ(drain(2).size(), 1u);
  send(1, {frame(kMacA, kMacB, 64)});  // reply: A learned on port 0
  EXPECT_EQ(drain(0).size(), 1u);
  EXPECT_TRUE(drain(2).empty()) << "learned unicast reaches only its port";
  send(0, {frame(kMacB, kMacA, 64)});  // B learned on port 1 now
  EXPECT_EQ(drain(1).size(), 1u);
  EXPECT_TRUE(drain(2).empty());
  EXPECT_EQ(fdb().lookup(vlan1(kMacA), now), 0);
  EXPECT_EQ(fdb().lookup(vlan1(kMacB), now), 1);
  expectPoolFull();
}

TEST_F(SwitchTest, AgedEntryFloodsAgain) {
  build(SwitchMode::kSwitch, 3);
  send(1, {frame(kMacA, kMacB, 64)});
  drain(0), drain(2);
  now += fdb().ageingNs() + 1;
  send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_EQ(drain(1).size(), 1u);
  EXPECT_EQ(drain(2).size(), 1u) << "aged out: unknown again";
  expectPoolFull();
}

TEST_F(SwitchTest, HairpinIsDroppedAsNoRoute) {
  build(SwitchMode::kSwitch, 2);
  send(0, {frame(kBcast, kMacB, 64)});  // B behind port 0
  drain(1);
  send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_TRUE(drain(0).empty());
  EXPECT_TRUE(drain(1).empty());
  EXPECT_EQ(drops(0, kDropNoRoute), 1u);
  expectPoolFull();
}

// A guest that sends as the host (a configured host MAC) is not learned:
// otherwise frames for the host's MAC would follow it to its port. Its
// frames are dropped as invalid_src, and the MAC stays unknown.
TEST_F(SwitchTest, AHostMacAsSourceIsNotLearned) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) { c.host_macs.push_back({0x02, 0, 0, 0, 0, 0x0c}); });
  send(0, {frame(kBcast, kMacC, 64), frame(kMacB, kMacC, 64)});
  EXPECT_EQ(drops(0, kDropInvalidSrc), 2u);
  EXPECT_TRUE(drain(1).empty());
  EXPECT_TRUE(drain(2).empty());
  EXPECT_LT(fdb().lookup(vlan1(kMacC), now), 0) << "the host's MAC was learned behind a guest";
  // A frame to it from another port is flooded (unknown), not sent to port 0 alone.
  send(1, {frame(kMacC, kMacB, 64)});
  EXPECT_EQ(drain(0).size(), 1u);
  EXPECT_EQ(drain(2).size(), 1u);
  // Guests' own MACs are learned as before.
  send(0, {frame(kBcast, kMacA, 64)});
  EXPECT_GE(fdb().lookup(vlan1(kMacA), now), 0);
  drain(1);
  drain(2);
  expectPoolFull();
}

TEST_F(SwitchTest, RuntOversizeAndBadSourceAreDroppedAndCounted) {
  build(SwitchMode::kSwitch, 2);
  port(1).setMtu(1000);
  send(0, {frame(kMacB, kMacA, 13),                   // runt
           frame(kMacB, kMacA, 0),                    // empty
           frame(kBcast, kMacA, 1000 + 14 + 1),       // over port 1's MTU
           frame(kBcast, kMacA, 1000 + 14),           // exactly the MTU: fine
           frame(kMacB, kBcast, 64),                  // multicast source
           frame(kMacB, (const uint8_t[6]){}, 64)});  // all-zero source
  EXPECT_EQ(drops(0, kDropRunt), 2u);
  EXPECT_EQ(drops(1, kDropOversize), 1u) << "charged to the destination";
  EXPECT_EQ(drops(0, kDropInvalidSrc), 2u);
  auto r1 = drain(1);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1[0].size(), 1014u);
  // A frame longer than its buffer can hold (a corrupt length) never leaves.
  Frame* f = frame(kMacB, kMacA, 64);
  f->len = dp->pool().frameSize();
  send(0, {f});
  EXPECT_EQ(drops(0, kDropOversize), 1u);
  EXPECT_TRUE(drain(1).empty());
  expectPoolFull();
}

TEST_F(SwitchTest, VlanTaggedFrameGetsFourMoreBytes) {
  build(SwitchMode::kSwitch, 2);
  port(1).setMtu(1000);
  Frame* f = frame(kBcast, kMacA, 1000 + 18);
  dp->pool().data(f)[12] = 0x81, dp->pool().data(f)[13] = 0x00;
  send(0, {f});
  EXPECT_EQ(drain(1).size(), 1u);
  expectPoolFull();
}

TEST_F(SwitchTest, NoOtherPortIsNoRoute) {
  build(SwitchMode::kSwitch, 2);
  port(1).setLive(false);
  send(0, {frame(kBcast, kMacA, 64)});
  EXPECT_EQ(drops(0, kDropNoRoute), 1u);
  expectPoolFull();
}

TEST_F(SwitchTest, FloodCopyWithEmptyPoolCountsPoolEmpty) {
  build(SwitchMode::kSwitch, 3, 512);
  Frame* f = frame(kBcast, kMacA, 64);
  std::vector<Frame*> rest(dp->pool().available());
  ASSERT_EQ(dp->pool().allocBulk(rest), rest.size());
  send(0, {f});
  EXPECT_EQ(drain(1).size() + drain(2).size(), 1u);
  EXPECT_EQ(drops(1, kDropPoolEmpty) + drops(2, kDropPoolEmpty), 1u);
  dp->pool().freeBulk(rest);
  expectPoolFull();
}

TEST_F(SwitchTest, DownDestinationCountsPortDown) {
  build(SwitchMode::kSwitch, 3);
  send(1, {frame(kMacA, kMacB, 64)});
  drain(0), drain(2);
  port(1).setLive(false);
  send(0, {frame(kMacB, kMacA, 64), frame(kMacB, kMacA, 64)});
  EXPECT_EQ(drops(1, kDropPortDown), 2u);
  expectPoolFull();
}

TEST_F(SwitchTest, RingFullDropsAreExactUnderABurst) {
  build(SwitchMode::kSwitch, 2);
  send(1, {frame(kBcast, kMacB, 64)});
  drain(0);
  std::vector<Frame*> burst;
  for (int i = 0; i < 100; i++) burst.push_back(frame(kMacB, kMacA, 64));
  // forward() in bursts of at most the batch, as the RX loop does.
  for (size_t i = 0; i < burst.size(); i += 16)
    forward(0, burst.data() + i, uint32_t(std::min<size_t>(16, burst.size() - i)));
  auto got = drain(1);
  EXPECT_EQ(got.size(), 64u);
  EXPECT_EQ(drops(1, kDropRingFull), 36u);
  EXPECT_EQ(got.size() + drops(1, kDropRingFull), 100u);
  expectPoolFull();
}

// Unknown-unicast storm control is vdevd's (only its MAC table knows a
// destination is unknown): a bucket of 100 ms at the port's rate, full at
// the start, that a frame may take into debt by one frame's cost. What is
// over it is dropped and counted at the ingress; broadcast (its program's
// to limit) and learned unicast are not.
TEST_F(SwitchTest, UnknownUnicastBeyondThePortsStormLimitIsDroppedAndCounted) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) { c.port.limits.storm_unknown = 100; });
  const auto burst = [&](const uint8_t* dst, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) send(0, {frame(dst, kMacA, 64)});
  };
  // 100/s: 10 ms a frame, 100 ms in the bucket: 11 pass at once.
  burst(kMacB, 30);
  EXPECT_EQ(drain(1).size(), 11u);
  EXPECT_EQ(drain(2).size(), 11u);
  EXPECT_EQ(drops(0, kDropStormUnknown), 19u);
  // 50 ms later, 5 more (the 11th frame left 10 ms of debt).
  now += 50'000'000;
  burst(kMacB, 10);
  EXPECT_EQ(drain(1).size(), 5u);
  EXPECT_EQ(drain(2).size(), 5u);
  EXPECT_EQ(drops(0, kDropStormUnknown), 24u);
  // Idle for longer than the burst: a full bucket, no more.
  now += 10'000'000'000ull;
  burst(kMacC, 20);
  EXPECT_EQ(drain(1).size(), 11u);
  EXPECT_EQ(drain(2).size(), 11u);
  EXPECT_EQ(drops(0, kDropStormUnknown), 33u);
  // Broadcast and learned unicast pass, however many.
  burst(kBcast, 30);
  EXPECT_EQ(drain(1).size(), 30u);
  EXPECT_EQ(drain(2).size(), 30u);
  send(1, {frame(kBcast, kMacB, 64)});  // B learned on port 1
  drain(0), drain(2);
  burst(kMacB, 30);
  EXPECT_EQ(drain(1).size(), 30u);
  EXPECT_TRUE(drain(2).empty());
  EXPECT_EQ(drops(0, kDropStormUnknown), 33u);
  // Each port has a bucket of its own: port 0's debt is not port 1's.
  for (uint32_t i = 0; i < 30; i++) send(1, {frame(kMacC, kMacB, 64)});
  EXPECT_EQ(drain(0).size(), 11u);
  EXPECT_EQ(drain(2).size(), 11u);
  EXPECT_EQ(drops(1, kDropStormUnknown), 19u);
  EXPECT_EQ(drops(0, kDropStormUnknown), 33u);
  expectPoolFull();
}

// Datapath::setPort (vdevctl port set) changes a running port: its
// unknown-unicast limit at once, with a full bucket, and its isolation,
// each field given alone leaving the others as they were.
TEST_F(SwitchTest, SetPortChangesLimitsAndIsolationAtOnce) {
  build(SwitchMode::kSwitch, 3);
  Datapath::PortChange c;
  c.limits.storm_unknown = 100;
  ASSERT_TRUE(dp->setPort("p0", c).ok());
  EXPECT_EQ(port(0).limits().storm_unknown, 100u);
  EXPECT_EQ(port(0).limits().storm_bcast, 0u) << "not given: kept";
  for (int i = 0; i < 30; i++) send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_EQ(drain(1).size(), 11u);
  drain(2);
  EXPECT_EQ(drops(0, kDropStormUnknown), 19u);
  // Off again: nothing held back.
  c.limits.storm_unknown = 0;
  ASSERT_TRUE(dp->setPort("p0", c).ok());
  for (int i = 0; i < 30; i++) send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_EQ(drain(1).size(), 30u);
  drain(2);
  // Isolation: p0 and p1 isolated reach only p2; p1 opened again reaches p0.
  send(1, {frame(kBcast, kMacB, 64)});  // B learned on p1
  drain(0), drain(2);
  Datapath::PortChange iso;
  iso.isolated = true;
  ASSERT_TRUE(dp->setPort("p0", iso).ok());
  ASSERT_TRUE(dp->setPort("p1", iso).ok());
  EXPECT_TRUE(port(0).isolated());
  EXPECT_EQ(port(0).limits().storm_unknown, 0u) << "limits not given: kept";
  send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_TRUE(drain(1).empty());
  EXPECT_EQ(drops(0, kDropIsolated), 1u);
  iso.isolated = false;
  ASSERT_TRUE(dp->setPort("p1", iso).ok());
  send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_EQ(drain(1).size(), 1u);
  EXPECT_EQ(fdb().lookup(vlan1(kMacB), now), 1) << "nothing forgotten";
  EXPECT_EQ(dp->setPort("nope", iso).error().err, ENOENT);
  expectPoolFull();
}

// VLANs (base/vlan.h): p0, p1 and p2 get the given settings through
// setPort, as `vdevctl port set` gives them.
struct VlanSwitchTest : SwitchTest {
  void setVlan(uint32_t port, const char* text) {
    Datapath::PortChange c;
    VlanConfig v;
    // "a10": access VLAN 10; "t10,20": trunk 10,20; "t10,20/5": native 5; "": none.
    const std::string t = text;
    if (!t.empty() && t[0] == 'a') {
      v.pvid = uint16_t(std::stoi(t.substr(1)));
      v.untagged.set(v.pvid);
    } else if (!t.empty()) {
      const size_t slash = t.find('/');
      v.tagged = *parseVidList(t.substr(1, slash == std::string::npos ? std::string::npos : slash - 1));
      if (slash != std::string::npos) {
        v.pvid = uint16_t(std::stoi(t.substr(slash + 1)));
        v.untagged.set(v.pvid);
      }
    }
    c.limits.vlan = v;
    ASSERT_TRUE(dp->setPort("p" + std::to_string(port), c).ok());
  }
  Frame* tagged(const uint8_t* dst, const uint8_t* src, uint16_t vid, uint32_t len, uint16_t tpid = 0x8100) {
    Frame* f = frame(dst, src, len, 0x33);
    uint8_t* d = dp->pool().data(f);
    d[12] = uint8_t(tpid >> 8), d[13] = uint8_t(tpid);
    d[14] = uint8_t(vid >> 8), d[15] = uint8_t(vid);
    d[16] = 0x88, d[17] = 0xb5;
    return f;
  }
  static uint16_t tagOf(const std::vector<uint8_t>& f) {
    if (f.size() < 16 || f[12] != 0x81 || f[13] != 0x00) return 0;
    return uint16_t((f[14] & 0x0f) << 8 | f[15]);
  }
};

TEST_F(VlanSwitchTest, AccessPortsReachOnlyTheirOwnVlan) {
  build(SwitchMode::kSwitch, 4);
  setVlan(0, "a10");
  setVlan(1, "a10");
  setVlan(2, "a20");  // p3: no VLAN settings, the default VLAN 1
  send(0, {frame(kBcast, kMacA, 64)});
  auto r1 = drain(1);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(tagOf(r1[0]), 0) << "an access port sends untagged";
  EXPECT_EQ(r1[0].size(), 64u);
  EXPECT_TRUE(drain(2).empty()) << "VLAN 10's broadcast reached VLAN 20";
  EXPECT_TRUE(drain(3).empty()) << "VLAN 10's broadcast reached the default VLAN";
  send(3, {frame(kBcast, kMacC, 64), frame(kMacA, kMacC, 64)});
  EXPECT_TRUE(drain(0).empty() && drain(1).empty() && drain(2).empty());
  EXPECT_EQ(drops(3, kDropNoRoute), 2u) << "nobody else in VLAN 1";
  // A tagged frame on an access port: its own VLAN passes, tag off; any other is filtered.
  send(1, {tagged(kMacA, kMacB, 10, 80), tagged(kMacA, kMacB, 20, 80), tagged(kBcast, kMacB, 10, 80, 0x88a8)});
  auto r0 = drain(0);
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(r0[0].size(), 76u);
  EXPECT_EQ(tagOf(r0[0]), 0);
  EXPECT_EQ(drops(1, kDropVlanFiltered), 2u);
  expectPoolFull();
}

TEST_F(VlanSwitchTest, TrunkCarriesEachVlanTaggedAndItsNativeUntagged) {
  build(SwitchMode::kSwitch, 4);
  setVlan(0, "t10,20/5");
  setVlan(1, "a10");
  setVlan(2, "a20");
  setVlan(3, "a5");
  // Up the trunk: a VLAN's frames get its tag, the native VLAN's none.
  send(1, {frame(kBcast, kMacB, 64, 0x11)});
  auto r0 = drain(0);
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(tagOf(r0[0]), 10);
  EXPECT_EQ(r0[0].size(), 68u);
  EXPECT_EQ(r0[0][16], 0x88) << "the type follows the tag";
  EXPECT_EQ(r0[0][40], 0x11);
  EXPECT_TRUE(drain(2).empty() && drain(3).empty());
  send(3, {frame(kBcast, kMacC, 64)});
  r0 = drain(0);
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(tagOf(r0[0]), 0) << "the native VLAN goes untagged";
  // Down the trunk: by tag (unicast to the station learned there, in its
  // VLAN), untagged to the native VLAN; a VID it does not carry, filtered.
  send(0, {tagged(kMacB, kMacA, 10, 80), tagged(kBcast, kMacA, 20, 80), frame(kMacC, kMacA, 64),
           tagged(kMacB, kMacA, 30, 80)});
  auto r1 = drain(1), r2 = drain(2), r3 = drain(3);
  ASSERT_EQ(r1.size(), 1u);
  ASSERT_EQ(r2.size(), 1u);
  ASSERT_EQ(r3.size(), 1u);
  EXPECT_EQ(r1[0].size(), 76u);
  EXPECT_EQ(tagOf(r1[0]), 0);
  EXPECT_EQ(r1[0][12], 0x88) << "the tag was taken off";
  EXPECT_EQ(drops(0, kDropVlanFiltered), 1u);
  EXPECT_EQ(fdb().lookup(fdbKey(macKey(kMacA), 10), now), 0);
  EXPECT_EQ(fdb().lookup(fdbKey(macKey(kMacA), 20), now), 0);
  EXPECT_EQ(fdb().lookup(fdbKey(macKey(kMacA), 5), now), 0);
  EXPECT_LT(fdb().lookup(vlan1(kMacA), now), 0);
  // A trunk without a native VLAN takes no untagged frame.
  setVlan(0, "t10,20");
  send(0, {frame(kBcast, kMacA, 64)});
  EXPECT_EQ(drops(0, kDropVlanFiltered), 2u);
  EXPECT_TRUE(drain(1).empty() && drain(2).empty() && drain(3).empty());
  expectPoolFull();
}

TEST_F(VlanSwitchTest, TheSameMacLivesInTwoVlansOnTwoPorts) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) { c.fdb_hold_ns = 1'000'000'000; });
  setVlan(0, "t10,20");
  setVlan(1, "a10");
  setVlan(2, "a20");
  send(1, {frame(kBcast, kMacA, 64)});
  send(2, {frame(kBcast, kMacA, 64)});  // no mac_locked: another VLAN
  drain(0);
  EXPECT_EQ(drops(2, kDropMacLocked), 0u);
  EXPECT_EQ(fdb().lookup(fdbKey(macKey(kMacA), 10), now), 1);
  EXPECT_EQ(fdb().lookup(fdbKey(macKey(kMacA), 20), now), 2);
  send(0, {tagged(kMacA, kMacB, 20, 80), tagged(kMacA, kMacB, 20, 80), tagged(kMacA, kMacB, 10, 80)});
  EXPECT_EQ(drain(2).size(), 2u);
  EXPECT_EQ(drain(1).size(), 1u);
  // New VLAN settings: the port's stations are learned again.
  setVlan(1, "a20");
  EXPECT_LT(fdb().lookup(fdbKey(macKey(kMacA), 10), now), 0);
  // And taken away: the default VLAN, tags are payload again.
  setVlan(1, "");
  EXPECT_FALSE(port(1).vlanOn());
  setVlan(0, "");
  send(0, {tagged(kBcast, kMacB, 30, 80)});
  auto r1 = drain(1);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(tagOf(r1[0]), 30) << "a port without VLAN settings does not look at tags";
  EXPECT_TRUE(drain(2).empty());
  expectPoolFull();
}

TEST(Vlan, ListsParseAndFormat) {
  auto s = parseVidList("10,20-22,4094");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count(), 5u);
  EXPECT_EQ(formatVidList(*s), "10,20-22,4094");
  EXPECT_EQ(formatVidList(*parseVidList("5,6")), "5,6");
  for (const char* bad : {"", "0", "4095", "10-5", "a", "10,", ",10", "1-", "-1", "10 20"})
    EXPECT_FALSE(parseVidList(bad)) << bad;
  VlanConfig v;
  v.tagged = *parseVidList("10-11");
  v.pvid = 5;
  v.untagged.set(5);
  EXPECT_EQ(vlanConfigError(v), "");
  EXPECT_EQ(formatVlanConfig(v), "trunk 10,11 native 5");
  v.untagged.set(10);
  EXPECT_NE(vlanConfigError(v), "") << "tagged and untagged at once";
  v.untagged.reset(10);
  v.untagged.reset(5);
  EXPECT_NE(vlanConfigError(v), "") << "a PVID not sent untagged";
}

TEST(Fdb, KeysOfOneMacInTwoVlansAreTwoStations) {
  Fdb fdb(64, 1000);
  EXPECT_EQ(fdb.learn(fdbKey(macKey(kMacA), 10), 1, 5), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.learn(fdbKey(macKey(kMacA), 20), 2, 5), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.lookup(fdbKey(macKey(kMacA), 10), 6), 1);
  EXPECT_EQ(fdb.lookup(fdbKey(macKey(kMacA), 20), 6), 2);
  EXPECT_EQ(fdbKeyMac(fdbKey(macKey(kMacA), 20)), macKey(kMacA));
  EXPECT_EQ(fdbKeyVid(fdbKey(macKey(kMacA), 20)), 20);
  // SipHash-2-4's reference vector for the 8-byte message 00..07.
  const FdbKey ref{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
  EXPECT_EQ((sipHashMac<2, 4, 8>(ref, 0x0706050403020100ull)), 0x93f5f5799a932462ull);
}

TEST_F(SwitchTest, XconnectIgnoresMacs) {
  build(SwitchMode::kXconnect, 2);
  send(0, {frame(kMacC, kMacA, 64), frame(kBcast, kMacA, 64)});
  send(1, {frame(kMacC, kMacB, 64)});
  EXPECT_EQ(drain(1).size(), 2u);
  EXPECT_EQ(drain(0).size(), 1u);
  expectPoolFull();
}

TEST(Fdb, StaticEntriesDoNotMoveOrAge) {
  Fdb fdb(16, 1000);
  ASSERT_TRUE(fdb.addStatic(macKey(kMacA), 3));
  fdb.learn(macKey(kMacA), 1, 10);
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 10), 3);
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 1'000'000), 3);
  EXPECT_TRUE(fdb.remove(macKey(kMacA)));
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 10), Fdb::kNone);
}

TEST(Fdb, AFullWindowTakesTheLearningPortsOwnOldestEntry) {
  Fdb fdb(16, 1000);  // one window: the whole table
  for (uint64_t m = 1; m <= 64; m++)
    EXPECT_EQ(fdb.learn(m << 8 | 0x02, 0, 4 + m), Fdb::Learn::kOk) << "its own oldest gives way";
  EXPECT_EQ(fdb.learnedOn(0), 16u);
  for (uint64_t m = 1; m <= 64; m++)
    EXPECT_EQ(fdb.lookup(m << 8 | 0x02, 70), m > 48 ? 0 : Fdb::kNone) << "the 16 most recent stay, m=" << m;
  // Everything ages out; new addresses take the slots.
  EXPECT_EQ(fdb.learn(uint64_t(999) << 8 | 0x02, 1, 5000), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.lookup(uint64_t(999) << 8 | 0x02, 5000), 1);
  EXPECT_EQ(fdb.dump(5000).size(), 1u);
}

// A station that talks only through the kernel fast path is seen there, not
// in the table (whose times are refreshed from the kernel once a second): a
// move is allowed only once the kernel's last-seen time, read at that moment,
// is as old as the hold time too. Before, a spoofer took the MAC whenever the
// table's copy of the time happened to be older than the hold.
TEST(Fdb, AMoveAsksWhenTheStationWasLastSeenOnTheFastPath) {
  struct Kernel {
    uint64_t seen = 0;
    int asked = 0;
  } kernel;
  Fdb fdb(64, 1'000'000, 0, /*hold_ns=*/100);
  fdb.setSeenElsewhere(
      [](void* ctx, uint64_t mac, uint16_t port) noexcept {
        auto& k = *static_cast<Kernel*>(ctx);
        k.asked++;
        return mac == macKey(kMacA) && port == 0 ? k.seen : 0;
      },
      &kernel);
  ASSERT_EQ(fdb.learn(macKey(kMacA), 0, 1000), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1050), Fdb::Learn::kLocked);
  EXPECT_EQ(kernel.asked, 0) << "held by the table's own time: nothing to ask";
  // A talks on the fast path only: the table last saw it at 1000.
  kernel.seen = 1150;
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1200), Fdb::Learn::kLocked) << "seen 50 ns ago in the kernel";
  EXPECT_EQ(kernel.asked, 1);
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1210), Fdb::Learn::kLocked);
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1249), Fdb::Learn::kLocked);
  EXPECT_EQ(kernel.asked, 1) << "the kernel's time is kept: spoofs within it ask nothing";
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 1249), 0);
  kernel.seen = 1240;
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1300), Fdb::Learn::kLocked);
  EXPECT_EQ(kernel.asked, 2);
  // Silent in the kernel too for the hold time: it may move (a VM migrated).
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1340), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 1340), 1);
  EXPECT_EQ(kernel.asked, 3);
}

// SipHash-2-4 of the reference's published vectors (vectors_sip64: key 00
// 01 .. 0f, message 00 01 .. 05), through the code the table's SipHash-1-3
// shares.
TEST(Fdb, HashIsSipHash) {
  const FdbKey ref{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
  EXPECT_EQ((sipHashMac<2, 4>(ref, 0x050403020100ull)), 0xcbc9466e58fee3ceull);
  EXPECT_NE((sipHashMac<1, 3>(ref, 0x050403020100ull)), (sipHashMac<1, 3>(FdbKey{1, 2}, 0x050403020100ull)));
}

// MACs whose home bucket is `home` under fdb's key (an attacker who knew the
// key could choose them offline), locally administered unicast.
// vid: the VLAN the datapath keys them with (0: the table used directly).
std::vector<uint64_t> collidingMacs(const Fdb& fdb, uint32_t home, size_t n, uint16_t vid = 0) {
  std::vector<uint64_t> out;
  for (uint64_t m = 1; out.size() < n; m++) {
    const uint64_t mac = (m << 8) | 0x02;
    if (fdb.home(fdbKey(mac, vid)) == home) out.push_back(mac);
  }
  return out;
}

constexpr FdbKey kKnownKey{0x5eed5eed5eed5eedull, 0x0123456789abcdefull};

// A guest that knows the key sends from hundreds of MACs that share the
// victim's probe window: the victim's entry stays, whichever was first.
// Before, the hash was unkeyed (16 MACs chosen offline filled a window) and
// a full window made learn() refuse the victim, whose unicast was then
// flooded to every port, the attacker's included.
TEST(Fdb, CollidingMacsFromOnePortCannotPushOutOrKeepOutAVictim) {
  constexpr uint16_t kVictim = 0, kAttacker = 1;
  Fdb fdb(4096, 1'000'000'000, 0, 0, kKnownKey);
  const uint64_t victim = macKey(kMacA);
  const std::vector<uint64_t> evil = collidingMacs(fdb, fdb.home(victim), 300);
  // The victim first: 300 colliding MACs later, still there.
  ASSERT_EQ(fdb.learn(victim, kVictim, 10), Fdb::Learn::kOk);
  uint64_t t = 20;
  for (uint64_t m : evil) {
    EXPECT_EQ(fdb.learn(m, kAttacker, t++), Fdb::Learn::kOk) << "the attacker's own oldest gives way";
    ASSERT_EQ(fdb.lookup(victim, t), kVictim) << "pushed out after " << t - 20 << " MACs";
  }
  EXPECT_EQ(fdb.learnedOn(kAttacker), Fdb::kMaxProbe - 1);
  // The attacker first: its MACs fill the window, the victim still gets in
  // (a port holding more than half of the window gives way), and stays.
  Fdb fdb2(4096, 1'000'000'000, 0, 0, kKnownKey);
  t = 10;
  for (size_t i = 0; i < 40; i++) ASSERT_EQ(fdb2.learn(evil[i], kAttacker, t++), Fdb::Learn::kOk);
  EXPECT_EQ(fdb2.learn(victim, kVictim, t++), Fdb::Learn::kOk);
  for (size_t i = 40; i < evil.size(); i++) fdb2.learn(evil[i], kAttacker, t++);
  EXPECT_EQ(fdb2.lookup(victim, t), kVictim);
  // Other ports' entries in the window are not taken by a port that has
  // none of its own there and is not the one holding most of it.
  Fdb fdb3(4096, 1'000'000'000, 0, 0, kKnownKey);
  t = 10;
  for (size_t i = 0; i < Fdb::kMaxProbe; i++) ASSERT_EQ(fdb3.learn(evil[i], uint16_t(10 + i % 4), t++), Fdb::Learn::kOk);
  EXPECT_EQ(fdb3.learn(victim, kVictim, t++), Fdb::Learn::kTableFull) << "no port holds most of the window";
  for (size_t i = 0; i < Fdb::kMaxProbe; i++) EXPECT_EQ(fdb3.lookup(evil[i], t), int(10 + i % 4));
}

// Under another key (each vdevd draws its own), MACs chosen for one key
// scatter over the table like any others.
TEST(Fdb, MacsChosenForOneKeyDoNotCollideUnderAnother) {
  Fdb known(4096, 1000, 0, 0, kKnownKey);
  const std::vector<uint64_t> evil = collidingMacs(known, 77, 200);
  Fdb fdb(4096, 1000);  // a random key
  std::vector<bool> seen(fdb.capacity(), false);
  uint32_t distinct = 0, near = 0;
  for (uint64_t m : evil) {
    const uint32_t h = fdb.home(m);
    distinct += !seen[h];
    seen[h] = true;
    near += (h - fdb.home(evil[0]) + Fdb::kMaxProbe) % fdb.capacity() < 2 * Fdb::kMaxProbe;
  }
  EXPECT_GE(distinct, 180u) << "200 random MACs take about 195 of 4096 buckets";
  EXPECT_LE(near, 12u) << "about 1.6 of them land within a window of the first";
}

TEST(Fdb, FlushPortForgetsItsEntriesOnly) {
  Fdb fdb(64, 1'000'000);
  fdb.learn(macKey(kMacA), 0, 1);
  fdb.learn(macKey(kMacB), 1, 1);
  fdb.flushPort(0);
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 2), Fdb::kNone);
  EXPECT_EQ(fdb.lookup(macKey(kMacB), 2), 1);
}

TEST(Fdb, PerPortLimitRefusesNewMacsUntilOldOnesAge) {
  Fdb fdb(256, 1000, /*max_per_port=*/4, /*hold_ns=*/0);
  for (uint64_t m = 1; m <= 4; m++) EXPECT_EQ(fdb.learn(m << 8 | 0x02, 0, 10), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.learn(uint64_t(5) << 8 | 0x02, 0, 10), Fdb::Learn::kPortLimit);
  EXPECT_EQ(fdb.learn(uint64_t(1) << 8 | 0x02, 0, 10), Fdb::Learn::kOk) << "a known MAC refreshes";
  EXPECT_EQ(fdb.learn(uint64_t(6) << 8 | 0x02, 1, 10), Fdb::Learn::kOk) << "other ports unaffected";
  EXPECT_EQ(fdb.learnedOn(0), 4u);
  EXPECT_EQ(fdb.learnedOn(1), 1u);
  // Static entries do not count against the limit.
  EXPECT_TRUE(fdb.addStatic(uint64_t(7) << 8 | 0x02, 0));
  EXPECT_EQ(fdb.learnedOn(0), 4u);
  // Aged out and expired: the port may learn again.
  fdb.expire(5000);
  EXPECT_EQ(fdb.learnedOn(0), 0u);
  EXPECT_EQ(fdb.learnedOn(1), 0u);
  EXPECT_EQ(fdb.learn(uint64_t(5) << 8 | 0x02, 0, 5000), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.lookup(uint64_t(7) << 8 | 0x02, 5000), 0) << "static entries never expire";
  // Removal and flush give the count back.
  fdb.flushPort(0);
  EXPECT_EQ(fdb.learnedOn(0), 0u);
}

// The ports of one group (vdevd: one uid's, --uid-max-fdb) learn at most
// the group limit together, each within its own limit.
TEST(Fdb, GroupLimitBoundsThePortsOfAGroupTogether) {
  Fdb fdb(256, 1000, /*max_per_port=*/4, /*hold_ns=*/0);
  fdb.setGroupLimit(6);
  fdb.setPortGroup(0, 1);
  fdb.setPortGroup(1, 1);
  auto mac = [](uint64_t m) { return m << 8 | 0x02; };
  for (uint64_t m = 1; m <= 4; m++) EXPECT_EQ(fdb.learn(mac(m), 0, 10), Fdb::Learn::kOk);
  for (uint64_t m = 5; m <= 6; m++) EXPECT_EQ(fdb.learn(mac(m), 1, 10), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.learnedInGroup(1), 6u);
  EXPECT_EQ(fdb.learn(mac(7), 1, 10), Fdb::Learn::kGroupLimit) << "port 1 is within its own limit";
  EXPECT_EQ(fdb.lookup(mac(7), 10), Fdb::kNone);
  EXPECT_EQ(fdb.learn(mac(5), 1, 10), Fdb::Learn::kOk) << "a known MAC refreshes";
  EXPECT_EQ(fdb.learn(mac(1), 1, 10), Fdb::Learn::kOk) << "a move inside the group keeps its count";
  EXPECT_EQ(fdb.learnedInGroup(1), 6u);
  EXPECT_EQ(fdb.learn(mac(8), 2, 10), Fdb::Learn::kOk) << "a port of no group is not counted";
  EXPECT_EQ(fdb.learnedInGroup(0), 1u);
  EXPECT_EQ(fdb.learn(mac(8), 0, 10), Fdb::Learn::kGroupLimit) << "nor may the group take its MAC";
  // Removal and ageing give the group's count back.
  fdb.flushPort(1);
  EXPECT_EQ(fdb.learnedInGroup(1), 3u);
  EXPECT_EQ(fdb.learn(mac(7), 1, 10), Fdb::Learn::kOk);
  fdb.expire(5000);
  EXPECT_EQ(fdb.learnedInGroup(1), 0u);
  // A port put in another group takes its entries along.
  EXPECT_EQ(fdb.learn(mac(9), 0, 5000), Fdb::Learn::kOk);
  fdb.setPortGroup(0, 2);
  EXPECT_EQ(fdb.learnedInGroup(1), 0u);
  EXPECT_EQ(fdb.learnedInGroup(2), 1u);
}

TEST(Fdb, LearnedMacMovesOnlyAfterTheHoldTime) {
  Fdb fdb(64, 1'000'000, 0, /*hold_ns=*/100);
  ASSERT_EQ(fdb.learn(macKey(kMacA), 0, 1000), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1050), Fdb::Learn::kLocked);
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 1050), 0);
  EXPECT_EQ(fdb.learn(macKey(kMacA), 0, 1060), Fdb::Learn::kOk) << "the owner keeps it alive";
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1159), Fdb::Learn::kLocked);
  EXPECT_EQ(fdb.learn(macKey(kMacA), 1, 1160), Fdb::Learn::kOk) << "silent for the hold time";
  EXPECT_EQ(fdb.lookup(macKey(kMacA), 1160), 1);
  EXPECT_EQ(fdb.learnedOn(0), 0u);
  EXPECT_EQ(fdb.learnedOn(1), 1u);
  // A static entry never moves.
  ASSERT_TRUE(fdb.addStatic(macKey(kMacB), 2));
  EXPECT_EQ(fdb.learn(macKey(kMacB), 1, 1'000'000'000), Fdb::Learn::kLocked);
  EXPECT_EQ(fdb.learn(macKey(kMacB), 2, 1'000'000'000), Fdb::Learn::kOk);
  EXPECT_EQ(fdb.lookup(macKey(kMacB), 1'000'000'000), 2);
}

TEST_F(SwitchTest, MacFloodFromOnePortIsCappedAndCounted) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) { c.fdb_max_per_port = 4; });
  std::vector<Frame*> flood;
  uint8_t src[6] = {0x02, 0xf1, 0, 0, 0, 0};
  for (int i = 1; i <= 10; i++) {
    src[5] = uint8_t(i);
    flood.push_back(frame(kBcast, src, 64));
  }
  send(0, flood);
  EXPECT_EQ(drops(0, kDropMacLimit), 6u);
  EXPECT_EQ(drain(1).size(), 4u);
  EXPECT_EQ(drain(2).size(), 4u);
  // The other guests still learn and reach each other without flooding.
  send(1, {frame(kBcast, kMacB, 64)});
  drain(0), drain(2);
  send(2, {frame(kMacB, kMacC, 64)});
  EXPECT_EQ(drain(1).size(), 1u);
  EXPECT_TRUE(drain(0).empty());
  expectPoolFull();
}

// Many ports of one tenant, each within its own limit: together they learn
// at most the group's (vdevd: --uid-max-fdb of the uid), and what is beyond
// is dropped and counted as beyond one port's limit; another port learns.
TEST_F(SwitchTest, MacFloodFromOneGroupsPortsIsCappedAndCounted) {
  build(SwitchMode::kSwitch, 4, 1024, [](DatapathConfig& c) {
    c.fdb_max_per_port = 4;
    c.fdb_max_per_group = 6;
  });
  fdb().setPortGroup(0, 1);
  fdb().setPortGroup(1, 1);
  uint8_t src[6] = {0x02, 0xf1, 0, 0, 0, 0};
  for (uint32_t in = 0; in < 2; in++) {
    std::vector<Frame*> flood;
    for (int i = 1; i <= 4; i++) {
      src[4] = uint8_t(in), src[5] = uint8_t(i);
      flood.push_back(frame(kBcast, src, 64));
    }
    send(in, flood);
  }
  EXPECT_EQ(drops(0, kDropMacLimit), 0u);
  EXPECT_EQ(drops(1, kDropMacLimit), 2u) << "port 1 learned 2 of its 4: the group's 6 were full";
  EXPECT_EQ(fdb().learnedInGroup(1), 6u);
  EXPECT_EQ(drain(2).size(), 6u);
  EXPECT_EQ(drain(3).size(), 6u);
  drain(0), drain(1);
  // The others still learn and reach each other without flooding.
  send(2, {frame(kBcast, kMacB, 64)});
  drain(0), drain(1), drain(3);
  send(3, {frame(kMacB, kMacC, 64)});
  EXPECT_EQ(drain(2).size(), 1u);
  EXPECT_TRUE(drain(0).empty());
  expectPoolFull();
}

// The same attack through the switch: a guest that knew the hash key fills
// the victim's window before the victim speaks; the victim is learned all
// the same and its unicast reaches only it, never the attacker.
TEST_F(SwitchTest, CollidingMacsCannotMakeAVictimsUnicastFlood) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) {
    c.fdb_key = kKnownKey;
    c.fdb_max_per_port = 256;
  });
  std::vector<Frame*> flood;
  uint8_t src[6];
  for (uint64_t m : collidingMacs(fdb(), fdb().home(fdbKey(macKey(kMacA), kVidDefault)), 48, kVidDefault)) {
    std::memcpy(src, &m, 6);
    flood.push_back(frame(kBcast, src, 64));
  }
  send(1, flood);  // the attacker, port 1
  drain(0), drain(2);
  send(0, {frame(kBcast, kMacA, 64)});  // the victim speaks once
  drain(1), drain(2);
  send(2, {frame(kMacA, kMacC, 64), frame(kMacA, kMacC, 64)});
  EXPECT_EQ(drain(0).size(), 2u);
  EXPECT_TRUE(drain(1).empty()) << "the victim's unicast was flooded to the attacker";
  expectPoolFull();
}

TEST_F(SwitchTest, SpoofedSourceOfAnotherPortIsDroppedAsMacLocked) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) { c.fdb_hold_ns = 1'000'000'000; });
  send(1, {frame(kBcast, kMacB, 64)});  // B lives behind port 1
  drain(0), drain(2);
  send(0, {frame(kBcast, kMacB, 64), frame(kMacC, kMacB, 64)});  // port 0 claims B
  EXPECT_EQ(drops(0, kDropMacLocked), 2u);
  EXPECT_TRUE(drain(1).empty() && drain(2).empty()) << "spoofed frames are not forwarded";
  send(2, {frame(kMacB, kMacC, 64)});
  EXPECT_EQ(drain(1).size(), 1u) << "frames for B still reach B";
  EXPECT_TRUE(drain(0).empty());
  // After the hold time of silence, B may move (a VM migrated).
  now += 1'000'000'000;
  send(0, {frame(kBcast, kMacB, 64)});
  drain(1), drain(2);
  send(2, {frame(kMacB, kMacC, 64)});
  EXPECT_EQ(drain(0).size(), 1u);
  expectPoolFull();
}

TEST_F(SwitchTest, FramesWithABadTypeOrLengthFieldAreDropped) {
  build(SwitchMode::kSwitch, 2);
  auto typed = [&](uint16_t type, uint32_t len) {
    Frame* f = frame(kBcast, kMacA, len);
    dp->pool().data(f)[12] = uint8_t(type >> 8);
    dp->pool().data(f)[13] = uint8_t(type);
    return f;
  };
  send(0, {typed(0x05dc + 1, 64),  // neither a length nor a type
           typed(0x05ff, 64),
           typed(100, 64),         // 802.3 length beyond the frame
           typed(46, 60),          // 802.3 length, padded: fine
           typed(1500, 1514),      // the longest 802.3 length: fine
           typed(0x0600, 64)});    // the lowest type: fine
  EXPECT_EQ(drops(0, kDropBadType), 3u);
  EXPECT_EQ(drain(1).size(), 3u);
  expectPoolFull();
}

TEST_F(SwitchTest, OnePortsFramesInFlightAreBounded) {
  build(SwitchMode::kSwitch, 3, 1024, [](DatapathConfig& c) { c.max_inflight = 32; });
  // Port 0 floods while nobody drains: the original and one copy per frame
  // are charged to it, so 16 frames fill its share.
  std::vector<Frame*> flood;
  for (int i = 0; i < 40; i++) flood.push_back(frame(kBcast, kMacA, 64));
  for (size_t i = 0; i < flood.size(); i += 16)
    forward(0, flood.data() + i, uint32_t(std::min<size_t>(16, flood.size() - i)));
  EXPECT_EQ(dp->pool().inflight(0), 32u);
  EXPECT_EQ(drops(0, kDropInflight), 24u);
  // Port 1's frames still go through.
  send(1, {frame(kMacA, kMacB, 64), frame(kMacA, kMacB, 64)});
  EXPECT_EQ(dp->pool().inflight(1), 2u);
  EXPECT_EQ(drain(0).size(), 2u);
  EXPECT_EQ(drain(1).size(), 16u);
  EXPECT_EQ(drain(2).size(), 16u);
  EXPECT_EQ(dp->pool().inflight(0), 0u) << "every frame back in the pool uncharges its port";
  EXPECT_EQ(dp->pool().inflight(1), 0u);
  send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_EQ(drain(1).size(), 1u);
  expectPoolFull();
}

// A frame longer than a chunk (AF_XDP multi-buffer) is a chain: switched
// as one frame, flooded as copies that are chains of their own, captured
// whole, an oversize drop where the destination's MTU is smaller; every
// chunk comes back to the pool.
TEST_F(SwitchTest, AChainIsSwitchedFloodedCapturedAndReturnedWhole) {
  build(SwitchMode::kSwitch, 3);
  for (uint32_t i = 0; i < 3; i++) port(i).setMtu(9000);
  send(1, {frame(kBcast, kMacB, 64)});  // B learned on p1
  drain(0), drain(2);
  auto id = dp->captureStart("p1", Capture::kTx, 9100, 4);
  ASSERT_TRUE(id.ok()) << id.error().message();
  std::vector<uint8_t> bytes;
  Frame* c = chain(kMacB, kMacA, 9014, bytes);
  EXPECT_EQ(chunks(c), 6u);
  send(0, {c});
  EXPECT_EQ(dp->pool().inflight(0), 6u) << "in flight: every chunk counts against the port";
  auto got = drain(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], bytes);
  EXPECT_EQ(port(1).snapshot()[kTxBytes], 0u) << "counted when the port's thread sends it";
  EXPECT_EQ(port(0).snapshot()[kRxBytes], 0u) << "rx is counted where the burst is taken";
  std::vector<uint8_t> seen;
  uint32_t wire = 0;
  dp->captureGet(*id)->read([&](uint64_t, uint32_t len, uint8_t, std::span<const uint8_t> b) {
    wire = len;
    seen.assign(b.begin(), b.end());
    return true;
  });
  EXPECT_EQ(wire, 9014u);
  ASSERT_EQ(seen.size(), bytes.size());
  EXPECT_TRUE(seen == bytes) << "every chunk copied; first difference at "
                             << (std::mismatch(seen.begin(), seen.end(), bytes.begin()).first - seen.begin());
  dp->captureStop(*id);
  // Flooded to p1 and p2: two whole frames, one of them a copy.
  send(0, {chain(kBcast, kMacA, 5000, bytes)});
  got = drain(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], bytes);
  EXPECT_EQ(dp->pool().inflight(0), 3u) << "p2's frame, three chunks, still charged to p0";
  got = drain(2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], bytes);
  EXPECT_EQ(dp->pool().inflight(0), 0u);
  // p2 at MTU 1500: the chain fits p1 only; p2's oversize.
  port(2).setMtu(1500);
  send(0, {chain(kBcast, kMacA, 3000, bytes)});
  EXPECT_EQ(drain(1).size(), 1u);
  EXPECT_EQ(drain(2).size(), 0u);
  EXPECT_EQ(drops(2, kDropOversize), 1u);
  expectPoolFull();
}

// A capture's filter on vdevd's own copies: only the frames it matches
// take a slot; the others are counted nowhere -- not taken, and not missed
// even when they come by the hundred while the slots are all full. An
// untagged frame's VLAN is the port's untagged one (1 without settings).
TEST_F(SwitchTest, ACaptureFilterCopiesOnlyWhatItMatchesAndCountsNothingElse) {
  build(SwitchMode::kSwitch, 3);
  send(1, {frame(kBcast, kMacB, 64)});  // B learned on p1
  drain(0), drain(2);
  CaptureFilter f{};
  f.fields = VDEV_CAPF_MAC | VDEV_CAPF_VLAN;
  std::memcpy(f.mac, kMacB, 6);
  f.vid = kVidDefault;
  auto id = dp->captureStart("p0", Capture::kRx | Capture::kTx, 100, 16, {}, f);
  ASSERT_TRUE(id.ok()) << id.error().message();
  Capture* cap = dp->captureGet(*id);
  ASSERT_NE(cap, nullptr);
  // To B (matches, rx), a broadcast from A (not), B to A (matches, tx).
  send(0, {frame(kMacB, kMacA, 64, 0x01), frame(kBcast, kMacA, 64, 0x02)});
  send(1, {frame(kMacA, kMacB, 64, 0x03)});
  std::vector<std::pair<uint8_t, uint8_t>> seen;  // dir, fill
  cap->read([&](uint64_t, uint32_t, uint8_t dir, std::span<const uint8_t> b) {
    seen.push_back({dir, b[20]});
    return true;
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(Capture::kRx, uint8_t(0x01)));
  EXPECT_EQ(seen[1], std::make_pair(Capture::kTx, uint8_t(0x03)));
  EXPECT_EQ(cap->taken(), 2u);
  EXPECT_EQ(cap->drops(), 0u);
  drain(0), drain(1), drain(2);
  // 16 matching frames fill the slots (none read); then 100 broadcasts,
  // which it refuses: nothing missed; one more match: missed.
  std::vector<Frame*> burst;
  for (int i = 0; i < 16; i++) burst.push_back(frame(kMacB, kMacA, 64));
  send(0, burst);
  burst.clear();
  for (int i = 0; i < 100; i++) burst.push_back(frame(kBcast, kMacA, 64));
  send(0, {burst.begin(), burst.begin() + 50});
  send(0, {burst.begin() + 50, burst.end()});
  EXPECT_EQ(cap->drops(), 0u) << "a frame the filter refuses is not missed";
  EXPECT_EQ(cap->taken(), 18u);
  send(0, {frame(kMacB, kMacA, 64)});
  EXPECT_EQ(cap->drops(), 1u);
  drain(0), drain(1), drain(2);
  dp->captureStop(*id);
  // VLAN 2: no untagged frame of a port without VLAN settings is in it.
  f.fields = VDEV_CAPF_VLAN;
  f.vid = 2;
  id = dp->captureStart("p0", Capture::kRx, 100, 16, {}, f);
  ASSERT_TRUE(id.ok());
  send(0, {frame(kMacB, kMacA, 64)});
  drain(1);
  EXPECT_EQ(dp->captureGet(*id)->taken(), 0u);
  dp->captureStop(*id);
  expectPoolFull();
}

// Capture (capture.h): what a port receives, before any check, and what
// it is handed to send (the frames its delivery ring took), copied in
// order with their direction and length, cut at the snaplen; a full
// capture counts what it missed and holds nothing up; with the kernel
// fast path the port keeps it (its programs copy what they carry), without
// it its frames stay off it (fastVid 0) while it runs.
TEST_F(SwitchTest, ACaptureCopiesWhatAPortReceivesAndIsSent) {
  build(SwitchMode::kSwitch, 3);
  send(1, {frame(kBcast, kMacB, 64)});  // B learned on p1
  drain(0), drain(2);
  EXPECT_EQ(port(0).fastVid(), kVidDefault);
  auto id = dp->captureStart("p0", Capture::kRx | Capture::kTx, 100, 16);
  ASSERT_TRUE(id.ok()) << id.error().message();
  Capture* cap = dp->captureGet(*id);
  ASSERT_NE(cap, nullptr);
  EXPECT_EQ(port(0).fastVid(), dp->fastPath() ? kVidDefault : 0)
      << "a captured port keeps the fast path where its programs copy what they carry";
  EXPECT_EQ(port(0).captureOnFast(), dp->fastPath());
  EXPECT_EQ(dp->captureStart("p0", Capture::kRx, 100, 16).error().err, EBUSY);
  EXPECT_EQ(dp->captureStart("nope", Capture::kRx, 100, 16).error().err, ENOENT);
  // p0 sends a unicast to B, a runt (dropped by the switch, still
  // received) and a broadcast; p1 sends p0 a 300-byte frame.
  send(0, {frame(kMacB, kMacA, 64, 0x01), frame(kMacB, kMacA, 10, 0x02), frame(kBcast, kMacA, 200, 0x03)});
  send(1, {frame(kMacA, kMacB, 300, 0x04)});
  struct Seen {
    uint8_t dir;
    uint32_t len;
    std::vector<uint8_t> bytes;
  };
  std::vector<Seen> seen;
  const auto readAll = [&] {
    cap->read([&](uint64_t t, uint32_t len, uint8_t dir, std::span<const uint8_t> b) {
      EXPECT_GT(t, 1'600'000'000'000'000'000ull) << "CLOCK_REALTIME";
      seen.push_back({dir, len, {b.begin(), b.end()}});
      return true;
    });
  };
  readAll();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].dir, Capture::kRx);
  EXPECT_EQ(seen[0].len, 64u);
  EXPECT_EQ(seen[0].bytes.size(), 64u);
  EXPECT_EQ(seen[0].bytes[20], 0x01);
  EXPECT_EQ(seen[1].len, 10u) << "the runt, as received";
  EXPECT_EQ(seen[2].len, 200u);
  EXPECT_EQ(seen[2].bytes.size(), 100u) << "cut at the snaplen";
  EXPECT_EQ(seen[3].dir, Capture::kTx);
  EXPECT_EQ(seen[3].len, 300u);
  EXPECT_EQ(seen[3].bytes[50], 0x04);
  EXPECT_EQ(drops(0, kDropRunt), 1u);
  EXPECT_EQ(drain(0).size(), 1u);
  EXPECT_EQ(drain(1).size(), 2u);
  EXPECT_EQ(drain(2).size(), 1u) << "the broadcast";
  // 20 frames into 16 slots, none read: 4 missed, every frame delivered.
  seen.clear();
  std::vector<Frame*> burst;
  for (int i = 0; i < 20; i++) burst.push_back(frame(kMacB, kMacA, 64));
  send(0, {burst.begin(), burst.begin() + 10});
  send(0, {burst.begin() + 10, burst.end()});
  EXPECT_EQ(drain(1).size(), 20u);
  EXPECT_EQ(cap->drops(), 4u);
  EXPECT_EQ(cap->taken(), 4u + 16u);
  readAll();
  EXPECT_EQ(seen.size(), 16u);
  // A reader that takes one frame at a time keeps the rest for later.
  send(0, {frame(kMacB, kMacA, 64), frame(kMacB, kMacA, 64)});
  drain(1);
  EXPECT_EQ(cap->read([](uint64_t, uint32_t, uint8_t, std::span<const uint8_t>) { return false; }), 0u);
  size_t one = 0;
  EXPECT_EQ(cap->read([&](uint64_t, uint32_t, uint8_t, std::span<const uint8_t>) { return one++ == 0; }), 1u);
  dp->captureStop(*id);
  EXPECT_EQ(dp->captureGet(*id), nullptr);
  EXPECT_EQ(port(0).capture(), nullptr);
  EXPECT_EQ(port(0).fastVid(), kVidDefault) << "back on the fast path";
  // Receive only; its port removed: the capture ends, and stays until stopped.
  id = dp->captureStart("p1", Capture::kRx, 2048, 16);
  ASSERT_TRUE(id.ok());
  cap = dp->captureGet(*id);
  send(0, {frame(kMacB, kMacA, 64)});
  drain(1);
  EXPECT_EQ(cap->taken(), 0u) << "what p1 is sent is not asked for";
  ASSERT_TRUE(dp->removePort("p1").ok());
  EXPECT_TRUE(cap->ended());
  dp->captureStop(*id);
  expectPoolFull();
}

}  // namespace
}  // namespace vdev::datapath
