// The datapath library in this process on real devices (root): states that
// vdevd reaches only after a long time or many ports, set up directly --
// a port whose index is beyond the kernel fast path's maps (it would take a
// thousand ports before it).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "datapath/datapath.h"
#include "flows.h"
#include "harness.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

using namespace std::chrono_literals;
namespace dp = vdev::datapath;

// A container whose end takes redirected XDP frames (GRO on: NAPI), so its
// port can be a fast-path destination.
struct Container {
  explicit Container(const std::string& label) : veth(ns), sock(veth.peerName(), &ns) {
    sock.setLabel(label);
    ns.exec("ethtool -K " + veth.peerName() + " gro on");
    waitTxReady(veth.peerName(), &ns);
  }
  const std::string& port() const { return veth.hostName(); }

  Netns ns;
  VethPair veth;
  PacketSocket sock;
};

class DatapathLibTest : public ::testing::Test {
 protected:
  void SetUp() override { requireRoot(); }

  // A datapath with the kernel fast path, running.
  std::unique_ptr<dp::Datapath> start() {
    dp::DatapathConfig cfg;
    auto d = dp::Datapath::create(cfg);
    if (!d) throw HarnessError("datapath: " + d.error().message());
    return std::move(d.value());
  }
  static const dp::PortStats& port(const dp::DatapathStats& s, const std::string& name) {
    for (const auto& p : s.ports)
      if (p.name == name) return p;
    throw HarnessError("no port " + name);
  }
};

// Ports are named by their index in the fast path's maps (the devmap, the
// per-port counters), which have 1024 rows. A port with a higher index
// used to get a program with the fast path on: its learned unicast was
// redirected by the kernel and counted nowhere at the port (its row is
// beyond the counters map), so its rx fell short of what it received.
// Now such a port never takes the fast path, as a source or as a
// destination: vdevd switches its unicast and counts every frame; a veth
// there attaches at XDP (the skb path's tables have the same 1024 rows).
TEST_F(DatapathLibTest, APortBeyondTheFastPathsMapsIsSwitchedByVdevdAndCountedExactly) {
  Container a("A"), b("B"), c("C");
  auto d = start();
  ASSERT_TRUE(d->fastPath()) << "no kernel fast path here: the test would mean nothing";
  const auto xdp = dp::Datapath::PortOptions{.hook = dp::PortHook::kXdp};
  ASSERT_TRUE(d->addPort(a.port(), xdp).ok());                          // index 0
  ASSERT_TRUE(d->addPort(b.port(), xdp).ok());                          // index 1
  auto beyond = dp::Datapath::PortOptions{.hook = dp::PortHook::kXdp, .index = 1500};
  const Status added = d->addPort(c.port(), beyond);
  ASSERT_TRUE(added.ok()) << added.error().message();
  d->start();
  const Endpoints all = {&a.sock, &b.sock, &c.sock};
  learnAll(all, 1);
  // Unicast between every pair, both ways.
  constexpr uint32_t kN = 200;
  sendMixed(b.sock, a.sock.mac(), 10, kN);  // below 1024: the kernel's
  expectFlow(all, 10, {{&a.sock, kN}});
  sendMixed(c.sock, a.sock.mac(), 11, kN);  // from beyond: vdevd's
  expectFlow(all, 11, {{&a.sock, kN}});
  sendMixed(a.sock, c.sock.mac(), 12, kN);  // to beyond: vdevd's
  expectFlow(all, 12, {{&c.sock, kN}});
  const dp::DatapathStats s = d->stats();
  const dp::PortStats& pb = port(s, b.port());
  const dp::PortStats& pc = port(s, c.port());
  EXPECT_EQ(pc.index, 1500u);
  EXPECT_GE(pb.counters[dp::kProgFast], kN) << "B's unicast to A did not take the fast path";
  EXPECT_EQ(pc.counters[dp::kProgFast], 0u) << "a port beyond the maps took the fast path";
  for (const Container* st : {&a, &b, &c}) {
    const dp::PortStats& p = port(s, st->port());
    SCOPED_TRACE(st->sock.label());
    EXPECT_EQ(p.counters[dp::kRxPackets], st->sock.sentFrames());
    EXPECT_EQ(p.counters[dp::kRxBytes], st->sock.sentBytes());
    EXPECT_EQ(p.counters[dp::kTxPackets], st->sock.rx().frames());
    uint64_t drops = 0;
    for (uint32_t r = 0; r < dp::kNumDropReasons; r++) drops += p.counters[dp::DropReason(r)];
    EXPECT_EQ(drops, 0u);
    EXPECT_EQ(p.counters[dp::kXdpRxDropped] + p.counters[dp::kXdpRxRingFull], 0u);
  }
  // A veth beyond the skb path's tables attaches at XDP when its hook is
  // left to vdevd (it used to fail: "beyond the skb path's port table").
  Container e("E");
  const Status auto_added = d->addPort(e.port(), {.index = 1501});
  ASSERT_TRUE(auto_added.ok()) << auto_added.error().message();
  EXPECT_STREQ(port(d->stats(), e.port()).hook, "xdp");
  d->stop();
  EXPECT_EQ(d->teardown(), 0u) << "frames not back in the pool";
}

}  // namespace
}  // namespace vdev::e2e
