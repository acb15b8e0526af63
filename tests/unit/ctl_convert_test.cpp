// daemon/datapath_convert.h: vdev's statistics into protocol messages, and
// through the wire unchanged.
#include <gtest/gtest.h>

#include "daemon/datapath_convert.h"

namespace vdev::proto {
using namespace vdev::daemon;  // the converters under test
namespace {

vdev::datapath::PortStats portStats() {
  vdev::datapath::PortStats s;
  s.name = "vd0";
  s.ifindex = 12;
  s.queues = 2;
  s.xdp_mode = "generic";
  s.bind_mode = "copy";
  s.mtu = 1500;
  s.live = true;
  s.c.rx_packets = 1;
  s.c.rx_bytes = 2;
  s.c.tx_packets = 3;
  s.c.tx_bytes = 4;
  for (uint32_t i = 0; i < vdev::datapath::kNumDropReasons; ++i) s.c.drops[i] = 10 + i;
  s.tx_outstanding = 5;
  s.xdp.rx_dropped = 21;
  s.xdp.rx_invalid_descs = 22;
  s.xdp.tx_invalid_descs = 23;
  s.xdp.rx_ring_full = 24;
  s.xdp.rx_fill_ring_empty_descs = 25;
  s.xdp.tx_ring_empty_descs = 26;
  s.prog.pass = 31;
  s.prog.redirect = 32;
  s.prog.no_socket = 33;
  s.dev_tx_dropped = 41;
  return s;
}

TEST(CtlConvert, PortStatsEveryCounter) {
  PortStatsMsg m = toPortStatsMsg(portStats(), PortType::kVeth);
  EXPECT_EQ(m.port.name, "vd0");
  EXPECT_EQ(m.port.type, PortType::kVeth);
  EXPECT_EQ(m.port.ifindex, 12u);
  EXPECT_EQ(m.port.queues, 2u);
  EXPECT_EQ(m.port.xdp_mode, XdpMode::kGeneric);
  EXPECT_EQ(m.port.bind_mode, BindMode::kCopy);
  EXPECT_TRUE(m.port.live);
  EXPECT_EQ(m.rx_packets, 1u);
  EXPECT_EQ(m.tx_bytes, 4u);
  EXPECT_EQ(m.tx_outstanding, 5u);
  for (uint32_t i = 0; i < kNumDropReasons; ++i) {
    EXPECT_EQ(m.drops[i], 10 + i);
    EXPECT_STREQ(dropName(i), vdev::datapath::dropReasonName(i)) << "STATS attribute order != DropReason";
  }
  EXPECT_EQ(m.xdp.rx_dropped, 21u);
  EXPECT_EQ(m.xdp.tx_ring_empty_descs, 26u);
  EXPECT_EQ(m.prog.no_socket, 33u);
  EXPECT_EQ(m.dev_tx_dropped, 41u);
}

TEST(CtlConvert, StatsReplyThroughTheWire) {
  vdev::datapath::DatapathStats d;
  d.ports.push_back(portStats());
  auto other = portStats();
  other.name = "vd1";
  other.xdp_mode = "none";
  other.bind_mode = "closed";
  d.ports.push_back(other);
  d.pool.total = 100;
  d.pool.free = 60;
  d.pool.fill_ring = 40;
  d.fdb_entries = 7;
  StatsReply all = toStatsReply(d);
  ASSERT_EQ(all.ports.size(), 2u);
  EXPECT_EQ(all.ports[1].port.bind_mode, BindMode::kClosed);
  EXPECT_EQ(all.pool->sum(), d.pool.sum());
  EXPECT_EQ(all.fdb_entries, 7u);
  EXPECT_EQ(toStatsReply(d, "vd1").ports.size(), 1u);
  EXPECT_TRUE(toStatsReply(d, "nope").ports.empty());

  Request req;
  req.hdr.seq = 3;
  req.body = StatsGetRequest{};
  auto dgs = encodeReply(req, all);
  ASSERT_TRUE(dgs.ok());
  ReplyAssembler a(Expect{3, kCmdStatsGet, true});
  for (auto& g : *dgs) ASSERT_TRUE(a.feed(g).ok());
  auto back = a.finish();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::get<StatsReply>(*back), all);
}

TEST(CtlConvert, FdbEntry) {
  const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  vdev::datapath::Fdb::Entry e;
  e.mac = vdev::datapath::macKey(mac);
  e.seen_ns = 1'000'000'000;
  e.live = true;
  FdbEntryMsg m = toFdbEntryMsg(e, "vd0", 3'500'000'000);
  EXPECT_EQ(formatMac(m.mac), "02:11:22:33:44:55");
  EXPECT_EQ(m.age_ms, 2500u);
  EXPECT_FALSE(m.is_static);
  e.is_static = true;
  EXPECT_EQ(toFdbEntryMsg(e, "vd0", 3'500'000'000).age_ms, 0u);
}

TEST(CtlConvert, XdpModes) {
  EXPECT_EQ(toVdevXdpMode(XdpMode::kNative), vdev::datapath::XdpMode::kNative);
  EXPECT_EQ(toVdevXdpMode(XdpMode::kGeneric), vdev::datapath::XdpMode::kGeneric);
  EXPECT_EQ(toVdevXdpMode(XdpMode::kAuto), vdev::datapath::XdpMode::kAuto);
  EXPECT_EQ(xdpModeFromName(vdev::datapath::xdpModeName(vdev::datapath::XdpMode::kNative)), XdpMode::kNative);
}

}  // namespace
}  // namespace vdev::proto
