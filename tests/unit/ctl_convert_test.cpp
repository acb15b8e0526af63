// vdev/daemon/src/replies.h: vdev's statistics into protocol messages, and
// through the wire unchanged.
#include <gtest/gtest.h>

#include <type_traits>

#include "replies.h"

namespace vdev::proto {
using namespace vdev::daemon;  // the converters under test
namespace {

// Every counter of the table a value of its own.
uint64_t counterValue(const vdev::stats::CounterDef& c) { return 1000 + 10 * c.id + c.attr; }

vdev::datapath::PortStats portStats() {
  vdev::datapath::PortStats s;
  s.name = "vd0";
  s.ifindex = 12;
  s.queues = 2;
  s.xdp_mode = XdpMode::kGeneric;
  s.bind_mode = BindMode::kCopy;
  s.mtu = 1500;
  s.live = true;
  for (const vdev::stats::CounterDef& c : vdev::stats::kPortCounters) s.counters[c] = counterValue(c);
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
  for (const vdev::stats::CounterDef& c : vdev::stats::kPortCounters)
    EXPECT_EQ(m.counters[c], counterValue(c)) << c.path;
}

// How a port's skb program is attached, and why it is not where auto put
// it, reach its PortInfo; a port without either has neither.
TEST(CtlConvert, TcAttachAndHookNote) {
  auto s = portStats();
  EXPECT_FALSE(toPortInfo(s).tc_attach);
  EXPECT_TRUE(toPortInfo(s).hook_note.empty());
  s.hook = PortHook::kTc;
  s.tc_attach = TcAttach::kClsact;
  EXPECT_EQ(toPortInfo(s).tc_attach, std::optional<TcAttach>(TcAttach::kClsact));
  EXPECT_EQ(toPortInfo(s).hook, std::optional<PortHook>(PortHook::kTc));
  s.tc_attach = TcAttach::kTcx;
  EXPECT_EQ(toPortInfo(s).tc_attach, std::optional<TcAttach>(TcAttach::kTcx));
  s.hook = PortHook::kXdp;
  s.tc_attach = std::nullopt;
  s.hook_note = "at the XDP hook, not tc: x";
  EXPECT_EQ(toPortInfo(s).hook_note, "at the XDP hook, not tc: x");
  // One enum for both sides (spec/port_spec.h): nothing to convert.
  static_assert(std::is_same_v<vdev::datapath::TcAttach, TcAttach>);
}

// The datapath's kernel use, one KERNEL_FEATURES bit each.
TEST(CtlConvert, KernelFeatureBits) {
  vdev::datapath::Datapath::KernelUse k;
  EXPECT_EQ(kernelFeatureBits(k), 0u);
  k.clsact = true;
  k.xdp_frags = true;
  EXPECT_EQ(kernelFeatureBits(k), (uint64_t(1) << kKfClsact) | (uint64_t(1) << kKfXdpFrags));
  k = {true, false, true, true, false, true, true};
  EXPECT_EQ(kernelFeatureBits(k), (uint64_t(1) << kKfTcx) | (uint64_t(1) << kKfMultiBuffer) |
                                      (uint64_t(1) << kKfXdpFeatures) | (uint64_t(1) << kKfRedirectPeer) |
                                      (uint64_t(1) << kKfBusyPoll));
}

// Before Linux 6.3 (no netdev family) a device's XDP features go by its
// driver: veth and tun are skb sources with native XDP; a veth takes
// redirected frames only when vdevd knows its peer has NAPI, a tun always;
// virtual devices without native XDP go to tc.
TEST(CtlConvert, XdpFeaturesByDriver) {
  using vdev::datapath::XdpFeatures;
  for (const char* d : {"veth", "tun", "i40e", "mlx5_core", "virtio_net", "some_nic"})
    EXPECT_TRUE(XdpFeatures::driverHasNativeXdp(d)) << d;
  for (const char* d : {"", "vxlan", "geneve", "bridge", "bonding", "dummy", "macvlan"})
    EXPECT_FALSE(XdpFeatures::driverHasNativeXdp(d)) << d;
  EXPECT_TRUE(XdpFeatures::driverTakesFrames("tun", false));
  EXPECT_TRUE(XdpFeatures::driverTakesFrames("veth", true));
  EXPECT_FALSE(XdpFeatures::driverTakesFrames("veth", false));
  EXPECT_TRUE(XdpFeatures::driverTakesFrames("i40e", false));
  EXPECT_FALSE(XdpFeatures::driverTakesFrames("vxlan", false));
  EXPECT_FALSE(XdpFeatures::driverTakesFrames("some_nic", false));
  EXPECT_TRUE(XdpFeatures::driverOffersZerocopy("ice"));
  EXPECT_FALSE(XdpFeatures::driverOffersZerocopy("veth"));
  EXPECT_FALSE(XdpFeatures::driverOffersZerocopy("tun"));
  const XdpFeatures byDriver(XdpFeatures::Source::kDriver);
  EXPECT_EQ(byDriver.source(), XdpFeatures::Source::kDriver);
  EXPECT_EQ(byDriver.takesFrames(0, "veth", true).value(), true);
  EXPECT_EQ(byDriver.nativeXdp(0, "vxlan").value(), false);
  EXPECT_STREQ(XdpFeatures::sourceName(XdpFeatures::Source::kDriver), "driver");
  EXPECT_STREQ(XdpFeatures::sourceName(XdpFeatures::Source::kNetdev), "netdev");
}

TEST(CtlConvert, StatsReplyThroughTheWire) {
  vdev::datapath::DatapathStats d;
  d.ports.push_back(portStats());
  auto other = portStats();
  other.name = "vd1";
  other.xdp_mode = XdpMode::kNone;
  other.bind_mode = BindMode::kClosed;
  d.ports.push_back(other);
  d.pool[vdev::stats::kPoolTotal] = 100;
  d.pool[vdev::stats::kPoolFree] = 60;
  d.pool[vdev::stats::kPoolFillRing] = 40;
  d.fdb_entries = 7;
  StatsReply all = toStatsReply(d);
  ASSERT_EQ(all.ports.size(), 2u);
  EXPECT_EQ(all.ports[1].port.bind_mode, BindMode::kClosed);
  EXPECT_EQ(all.pool, d.pool);
  EXPECT_EQ(all.pool->sum(), 100u);
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
  // One enum for both sides, with the wire's numbers and one set of names.
  static_assert(std::is_same_v<vdev::datapath::XdpMode, XdpMode>);
  static_assert(std::is_same_v<vdev::datapath::PortHook, PortHook>);
  static_assert(std::is_same_v<vdev::datapath::SwitchMode, SwitchMode>);
  EXPECT_EQ(static_cast<int>(XdpMode::kNative), 1);
  EXPECT_EQ(static_cast<int>(XdpMode::kGeneric), 2);
  EXPECT_EQ(static_cast<int>(XdpMode::kAuto), 3);
  EXPECT_EQ(parseXdpMode(vdev::datapath::xdpModeName(vdev::datapath::XdpMode::kNative)), XdpMode::kNative);
}

// Port replies carry the limits in effect, the burst's default filled in;
// the punt device, which only carries other ports' frames, none. A request's
// limits reach the datapath as given (one type: spec::PortPolicyOptions),
// each absent one left to its default.
TEST(CtlConvert, Limits) {
  vdev::datapath::PortStats s = portStats();
  s.limits = {.storm_bcast = 10000, .storm_mcast = 0, .storm_unknown = 7, .police_pps = 5, .police_bps = 100000000};
  const PortInfo p = toPortInfo(s);
  ASSERT_TRUE(p.limits);
  EXPECT_EQ(*p.limits, (Limits{10000, 0, 7, 5, 100000000, vdev::datapath::PortLimits::kDefaultPoliceBurstMs}));
  s.limits.police_burst_ms = 3;
  EXPECT_EQ(toPortInfo(s).limits->police_burst_ms, 3u);
  s.punt = true;
  EXPECT_FALSE(toPortInfo(s).limits);

  LimitOptions given;
  given.storm_mcast = 0;
  given.police_bps = 1000;
  given.police_burst_ms = 20;
  static_assert(std::is_same_v<vdev::datapath::PortLimitOptions, LimitOptions>);
  static_assert(std::is_same_v<vdev::datapath::PortLimits, Limits>);
  const vdev::datapath::PortLimitOptions o = given;
  const vdev::datapath::PortLimits base{.storm_bcast = 1, .storm_mcast = 2, .storm_unknown = 3, .police_pps = 4};
  EXPECT_EQ(o.over(base), (vdev::datapath::PortLimits{.storm_bcast = 1, .storm_mcast = 0, .storm_unknown = 3,
                                                      .police_pps = 4, .police_bps = 1000, .police_burst_ms = 20}));
  EXPECT_EQ(LimitOptions{}.over(base), base);
  const vdev::datapath::PortLimitOptions all = LimitOptions{10, 20, 30, 40, 50, 60};
  EXPECT_EQ(all.over(base), (vdev::datapath::PortLimits{10, 20, 30, 40, 50, 60}));

  // The allowed source MAC: the datapath's key of it; all zeros is key 0,
  // any source (and given, so it replaces a port's own).
  LimitOptions mac;
  mac.allowed_mac = Mac{0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  const vdev::datapath::PortLimits locked = mac.over(base);
  EXPECT_EQ(vdev::datapath::macKey(locked.allowed_mac.data()), vdev::datapath::macKey(mac.allowed_mac->data()));
  EXPECT_EQ(locked.allowed_mac, *mac.allowed_mac);
  EXPECT_TRUE(macIsZero(base.allowed_mac));
  mac.allowed_mac = Mac{};
  EXPECT_EQ(vdev::datapath::macKey(mac.over(locked).allowed_mac.data()), 0u);

  // Allowed addresses: as given, and back; given empty, they replace a
  // port's own (any address).
  LimitOptions ips;
  ips.allowed_ips = {*parseIp("198.18.0.2"), *parseIp("2001:db8::2")};
  const vdev::datapath::PortLimits held = ips.over(base);
  EXPECT_EQ(held.allowed_ips, *ips.allowed_ips);
  EXPECT_EQ(held.allowed_ips, *ips.allowed_ips);
  EXPECT_TRUE(base.allowed_ips.empty());
  ips.allowed_ips->clear();
  EXPECT_TRUE(ips.over(held).allowed_ips.empty());
  EXPECT_EQ(LimitOptions{}.over(held).allowed_ips, held.allowed_ips) << "absent: kept";

  // RA and DHCP guard: on, off, and absent (kept).
  LimitOptions guard;
  guard.ra_guard = true;
  guard.dhcp_guard = true;
  const vdev::datapath::PortLimits guarded = guard.over(base);
  EXPECT_TRUE(guarded.ra_guard && guarded.dhcp_guard);
  EXPECT_TRUE(guarded.ra_guard && guarded.dhcp_guard);
  EXPECT_FALSE(base.ra_guard || base.dhcp_guard);
  guard.dhcp_guard = false;
  guard.ra_guard.reset();
  const vdev::datapath::PortLimits half = guard.over(guarded);
  EXPECT_TRUE(half.ra_guard);
  EXPECT_FALSE(half.dhcp_guard);
}

}  // namespace
}  // namespace vdev::proto
