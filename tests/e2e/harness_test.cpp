// Self-test of the e2e harness and of vdev-vm, without vdevd: frames, JSON,
// namespaces, veth pairs, packet sockets, taps, the child/vdevd wrapper (on a
// stand-in script), and the kernel behaviour the datapath tests rely on.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "harness.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

namespace tf = testframe;

// ---------------------------------------------------------------------------
// Unprivileged parts

TEST(TestFrame, RoundTripsEverySizeAndKind) {
  const Mac a = {0x02, 0, 0, 0, 0, 1}, b = {0x02, 0, 0, 0, 0, 2};
  for (Kind kind : {Kind::kExperimental, Kind::kIpv4Udp}) {
    for (size_t size = 60; size <= 1514; size += 7) {
      const Spec spec{b, a, kind, 7, uint32_t(size * 3), size};
      const auto f = buildFrame(spec);
      ASSERT_EQ(f.size(), size);
      const tf::Parsed p = tf::parse(f);
      ASSERT_EQ(p.verdict, tf::Verdict::kOk) << "size " << size;
      EXPECT_EQ(p.spec.flow, 7u);
      EXPECT_EQ(p.spec.seq, uint32_t(size * 3));
      EXPECT_EQ(p.spec.dst, b);
      EXPECT_EQ(p.spec.src, a);
      EXPECT_EQ(p.spec.kind, kind);
    }
  }
}

TEST(TestFrame, Ipv4AndUdpChecksumsAreValid) {
  const Spec spec{tf::kBroadcast, {0x02, 1, 2, 3, 4, 5}, Kind::kIpv4Udp, 3, 41, 333};
  const auto f = buildFrame(spec);
  EXPECT_EQ(tf::detail::csumFold(tf::detail::csumAdd(0, f.data() + 14, 20)), 0);
  uint32_t sum = tf::detail::csumAdd(0, f.data() + 14 + 12, 8) + 17 + uint32_t(f.size() - 34);
  EXPECT_EQ(tf::detail::csumFold(tf::detail::csumAdd(sum, f.data() + 34, f.size() - 34)), 0);
  EXPECT_EQ(f[14 + 12], 198);
  EXPECT_EQ(f[14 + 13], 18);
  EXPECT_EQ(f[14 + 16], 198);
  EXPECT_EQ(f[14 + 17], 19);
}

TEST(TestFrame, DetectsCorruptionAndForeignFrames) {
  const Spec spec{{0x02, 0, 0, 0, 0, 9}, {0x02, 0, 0, 0, 0, 8}, Kind::kExperimental, 1, 5, 200};
  auto f = buildFrame(spec);
  for (size_t i : {0ul, 6ul, 40ul, 199ul}) {
    auto g = f;
    g[i] ^= 0x10;
    EXPECT_EQ(tf::parse(g).verdict, tf::Verdict::kCorrupt) << "byte " << i;
  }
  auto shorter = f;
  shorter.pop_back();
  EXPECT_EQ(tf::parse(shorter).verdict, tf::Verdict::kCorrupt);
  auto padded = f;
  padded.push_back(0);
  EXPECT_EQ(tf::parse(padded).verdict, tf::Verdict::kCorrupt);
  EXPECT_EQ(tf::parse(rawFrame(spec.dst, spec.src, 0x88b5, 60)).verdict, tf::Verdict::kForeign);
  EXPECT_EQ(tf::parse(rawFrame(spec.dst, spec.src, 0x0806, 60)).verdict, tf::Verdict::kForeign);
  EXPECT_EQ(tf::parse(rawFrame(spec.dst, spec.src, 0x88b5, 5)).verdict, tf::Verdict::kForeign);
  EXPECT_THROW(buildFrame({spec.dst, spec.src, Kind::kIpv4Udp, 1, 1, 40}), HarnessError);
  EXPECT_EQ(rawFrame(spec.dst, spec.src, 0x88b5, 13).size(), 13u);

  FlowCounter c;
  c.add(f);
  c.add(f);
  c.add(buildFrame({spec.dst, spec.src, Kind::kIpv4Udp, 2, 0, 64}));
  c.add(shorter);
  c.add(rawFrame(spec.dst, spec.src, 0x0806, 60));
  EXPECT_EQ(c.count(1), 1u);
  EXPECT_EQ(c.duplicates(1), 1u);
  EXPECT_EQ(c.count(2), 1u);
  EXPECT_EQ(c.total(), 2u);
  EXPECT_EQ(c.corrupt(), 1u);
  EXPECT_EQ(c.foreign(), 1u);
  EXPECT_EQ(c.frames(), 5u);
}

TEST(TestFrame, Macs) {
  Mac m;
  ASSERT_TRUE(tf::parseMac("02:aB:00:ff:10:01", m));
  EXPECT_EQ(tf::formatMac(m), "02:ab:00:ff:10:01");
  EXPECT_FALSE(tf::parseMac("02:ab:00:ff:10", m));
  EXPECT_FALSE(tf::parseMac("02:ab:00:ff:10:0g", m));
  EXPECT_FALSE(tf::parseMac("02-ab-00-ff-10-01", m));
  const Mac u = uniqueMac(), v = uniqueMac();
  EXPECT_NE(u, v);
  EXPECT_EQ(u[0], 0x02);  // locally administered, unicast
}

TEST(Json, ParsesWhatVdevdAndIpWrite) {
  const Json j = Json::parse(R"( {"a": [1, 2, {"b": "x\"y\u00e9"}], "big": 18446744073709551615,
      "neg": -3, "f": 1.5e3, "t": true, "n": null, "e": {}, "ea": []} )");
  EXPECT_EQ(j.at("a").size(), 3u);
  EXPECT_EQ(j.at("a").at(1).get<uint64_t>(), 2u);
  EXPECT_EQ(j.at("a").at(2).at("b").get<std::string>(), "x\"y\xc3\xa9");
  EXPECT_EQ(j.at("big").get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(j.at("neg").get<int64_t>(), -3);
  EXPECT_FALSE(j.at("neg").is_number_unsigned());  // what counter reads check
  EXPECT_DOUBLE_EQ(j.at("f").get<double>(), 1500.0);
  EXPECT_FALSE(j.at("f").is_number_unsigned());
  EXPECT_TRUE(j.at("t").get<bool>());
  EXPECT_TRUE(j.at("n").is_null());
  EXPECT_TRUE(j.contains("e"));
  EXPECT_FALSE(j.contains("zz"));
  EXPECT_THROW(j.at("zz"), Json::out_of_range);
  EXPECT_EQ(Json::parse(j.dump()).dump(), j.dump());
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "01x", "\"abc", "[1] x", "tru"})
    EXPECT_THROW(Json::parse(bad), Json::parse_error) << bad;
}

// PoolStats is stats::PoolValues: every place of the counter table, the
// ones added after it was written too. A frame is at rest in the pool, a fill
// ring or the kernel's RX; in flight at any other place.
TEST(PoolStats, InFlightCountsEveryPlaceButTheResting) {
  const std::set<uint32_t> resting = {stats::kPoolFree, stats::kPoolFillRing, stats::kPoolKernelRx};
  for (const stats::CounterDef& c : stats::kPoolCounters) {
    if (c.id == stats::kPoolTotal) continue;
    PoolStats p;
    p[stats::kPoolTotal] = 7;
    p[c] = 7;
    const bool rest = resting.count(c.id) != 0;
    EXPECT_EQ(p.inFlight(), rest ? 0u : 7u) << c.path;
    EXPECT_EQ(p.atRest(), rest) << c.path;
  }
}

TEST(Names, UniqueAndShortEnoughForInterfaces) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string n = uniqueName('v');
    EXPECT_LE(n.size() + 1, 15u) << n;  // + 1: veth ends add "h" / "p"
    EXPECT_EQ(n.substr(0, 2), "vt");
    EXPECT_TRUE(seen.insert(n).second);
  }
}

// ---------------------------------------------------------------------------
// Namespaces, veth pairs, packet sockets

class HarnessTest : public ::testing::Test {
 protected:
  void SetUp() override { requireRoot(); }
};

std::string sysctlIn(const Netns& ns, const std::string& key) {
  std::string v = ns.exec("sysctl -n " + key);
  while (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

TEST_F(HarnessTest, NetnsAndVethAreBuiltAndRemoved) {
  std::string nsName, host, peer;
  {
    Netns ns;
    nsName = ns.name();
    VethPair veth(ns, {.mtu = 1400});
    host = veth.hostName();
    peer = veth.peerName();
    EXPECT_LE(host.size(), 15u);
    EXPECT_TRUE(linkExists(host));
    EXPECT_FALSE(linkExists(peer));
    EXPECT_TRUE(linkExists(peer, &ns));
    const LinkInfo h = veth.hostInfo(), p = veth.peerInfo();
    EXPECT_EQ(h.mtu, 1400);
    EXPECT_EQ(p.mtu, 1400);
    EXPECT_TRUE(h.up);
    EXPECT_TRUE(p.up);
    EXPECT_EQ(h.address, veth.hostMac());
    EXPECT_EQ(p.address, veth.peerMac());
    EXPECT_FALSE(h.has_xdp);
    if (::access("/proc/sys/net/ipv6", F_OK) == 0) {
      EXPECT_EQ(sysctlIn(ns, "net.ipv6.conf." + peer + ".disable_ipv6"), "1");
      EXPECT_EQ(sysctlIn(ns, "net.ipv6.conf.default.disable_ipv6"), "1");
      EXPECT_EQ(readFile("/proc/sys/net/ipv6/conf/" + host + "/disable_ipv6"), "1\n");
      // The root namespace's defaults are left alone.
      EXPECT_EQ(run("ip -j addr show dev " + host).find("inet6"), std::string::npos);
    }
  }
  EXPECT_FALSE(linkExists(host));
  EXPECT_NE(::access(("/run/netns/" + nsName).c_str(), F_OK), 0);
}

TEST_F(HarnessTest, PacketSocketsCountExactlyAcrossAVeth) {
  Netns ns;
  VethPair veth(ns);
  waitTxReady(veth.hostName());
  waitTxReady(veth.peerName(), &ns);
  PacketSocket host(veth.hostName(), nullptr);
  PacketSocket peer(veth.peerName(), &ns);
  EXPECT_EQ(host.mac(), veth.hostMac());
  EXPECT_EQ(peer.mac(), veth.peerMac());
  constexpr uint32_t kN = 300;
  for (uint32_t i = 0; i < kN; ++i) {
    const size_t size = 60 + (i * 97) % (1514 - 60 + 1);
    const Kind kind = i % 2 ? Kind::kIpv4Udp : Kind::kExperimental;
    peer.send({host.mac(), peer.mac(), kind, 1, i, size});
    host.send({tf::kBroadcast, host.mac(), kind, 2, i, size});
  }
  const Endpoints eps = {&host, &peer};
  ASSERT_TRUE(pumpUntil(eps, [&] { return host.rx().count(1) == kN && peer.rx().count(2) == kN; }, 3s))
      << "host: " << host.rx().describe() << "\npeer: " << peer.rx().describe();
  pumpFor(eps, 200ms);
  // Exact: nothing of our own (outgoing) and no kernel chatter (IPv6 off).
  EXPECT_EQ(host.rx().frames(), kN) << host.rx().describe();
  EXPECT_EQ(peer.rx().frames(), kN) << peer.rx().describe();
  EXPECT_EQ(host.rx().sizeOf(1, 5), 60u + (5 * 97) % 1455);
  EXPECT_EQ(host.kernelDrops(), 0u);
  EXPECT_EQ(peer.kernelDrops(), 0u);
}

TEST_F(HarnessTest, TwoNamespacesJoinedByAVeth) {
  Netns a, b;
  VethPair veth(b, {.hostNs = &a});
  EXPECT_FALSE(linkExists(veth.hostName()));
  EXPECT_TRUE(linkExists(veth.hostName(), &a));
  waitTxReady(veth.hostName(), &a);
  waitTxReady(veth.peerName(), &b);
  PacketSocket sa(veth.hostName(), &a), sb(veth.peerName(), &b);
  sa.sendFlow({sb.mac(), sa.mac(), Kind::kIpv4Udp, 1, 0, 100}, 50);
  sb.sendFlow({sa.mac(), sb.mac(), Kind::kExperimental, 2, 0, 1514}, 50);
  ASSERT_TRUE(pumpUntil({&sa, &sb}, [&] { return sb.rx().count(1) == 50 && sa.rx().count(2) == 50; }, 3s))
      << sa.rx().describe() << "\n" << sb.rx().describe();
}

// ---------------------------------------------------------------------------
// Taps

TEST_F(HarnessTest, TapRoundTripWithTheHostSide) {
  std::string name;
  {
    Tap tap;
    name = tap.name();
    const LinkInfo li = tap.info();
    EXPECT_TRUE(li.up);
    EXPECT_EQ(li.address, tap.hostMac());
    EXPECT_NE(tap.mac(), tap.hostMac());
    waitTxReady(tap.name());
    PacketSocket host(tap.name(), nullptr);
    // VM -> host: what the VM writes, the host receives on the tap.
    tap.sendFlow({host.mac(), tap.mac(), Kind::kExperimental, 1, 0, 1514}, 100);
    // host -> VM: what the host transmits on the tap, the VM reads.
    host.sendFlow({tap.mac(), host.mac(), Kind::kIpv4Udp, 2, 0, 60}, 100);
    const Endpoints eps = {&tap, &host};
    ASSERT_TRUE(pumpUntil(eps, [&] { return host.rx().count(1) == 100 && tap.rx().count(2) == 100; }, 3s))
        << host.rx().describe() << "\n" << tap.rx().describe();
    pumpFor(eps, 100ms);
    EXPECT_EQ(host.rx().frames(), 100u);
    EXPECT_EQ(tap.rx().frames(), 100u);
  }
  EXPECT_FALSE(linkExists(name)) << "a closed non-persistent tap must disappear";
}

// The accounting the datapath tests rely on: a tap whose reader stopped drops
// in tun_net_xmit once its queue (txqueuelen) is full and counts every drop in
// the device's tx_dropped.
TEST_F(HarnessTest, PausedTapDropsAreCountedInTxDropped) {
  Tap tap;
  waitTxReady(tap.name());
  PacketSocket host(tap.name(), nullptr);
  const LinkInfo before = tap.info();
  const uint64_t qlen = before.raw.at(0).at("txqlen").get<uint64_t>();
  tap.pause();
  constexpr uint32_t kN = 1500;
  host.sendFlow({tap.mac(), host.mac(), Kind::kExperimental, 1, 0, 100}, kN);
  pumpFor({&tap}, 100ms);
  EXPECT_EQ(tap.rx().frames(), 0u);
  tap.resume();
  // Until every frame is read or counted (the sysfs counter: cheap enough
  // to read at every poll), however long the loaded machine takes.
  const auto txDropped = [&] {
    return std::stoull("0" + readFile("/sys/class/net/" + tap.name() + "/statistics/tx_dropped")) -
           before.tx_dropped;
  };
  ASSERT_TRUE(pumpUntil({&tap}, [&] { return tap.rx().count(1) + txDropped() >= kN; }, 10s))
      << tap.rx().describe() << "; tx_dropped " << txDropped();
  const LinkInfo after = tap.info();
  const uint64_t dropped = after.tx_dropped - before.tx_dropped;
  EXPECT_EQ(tap.rx().count(1) + dropped, kN) << tap.rx().describe();
  EXPECT_LE(tap.rx().count(1), qlen);
  EXPECT_GT(dropped, 0u);
  // After resuming, frames flow again.
  host.sendFlow({tap.mac(), host.mac(), Kind::kExperimental, 2, 0, 100}, 50);
  ASSERT_TRUE(pumpUntil({&tap}, [&] { return tap.rx().count(2) == 50; }, 2s)) << tap.rx().describe();
}

// Frames shorter than an Ethernet header cannot be sent on these devices: a
// tap refuses them (tun_get_user: EINVAL) and so does an AF_PACKET socket on
// an Ethernet device (dev_validate_header: len < min_header_len -> EINVAL;
// the CAP_SYS_RAWIO zero-padding applies only between min_header_len and
// hard_header_len, equal for Ethernet). So vdevd's `runt` counter cannot be
// reached through a veth or a tap; the datapath tests assert on this.
TEST_F(HarnessTest, KernelRefusesRunts) {
  Netns ns;
  VethPair veth(ns);
  Tap tap;
  waitTxReady(veth.hostName());
  waitTxReady(veth.peerName(), &ns);
  waitTxReady(tap.name());
  PacketSocket host(veth.hostName(), nullptr), peer(veth.peerName(), &ns);
  PacketSocket tapHost(tap.name(), nullptr);
  const LinkInfo before = veth.peerInfo();
  for (size_t len : {0, 1, 6, 12, 13}) {
    const auto runt = rawFrame(host.mac(), peer.mac(), 0x88b5, len);
    EXPECT_EQ(tap.sendRaw(runt), -EINVAL) << len;
    EXPECT_EQ(peer.sendRaw(runt), -EINVAL) << len;
  }
  EXPECT_FALSE(tapHost.recvRaw(100ms).has_value());
  EXPECT_FALSE(host.recvRaw(10ms).has_value());
  const LinkInfo after = veth.peerInfo();
  EXPECT_EQ(after.tx_packets, before.tx_packets);
  EXPECT_EQ(after.tx_dropped, before.tx_dropped);

  // 14 bytes, a bare header, is a frame.
  const auto bare = rawFrame(host.mac(), peer.mac(), 0x88b5, 14);
  EXPECT_EQ(tap.sendRaw(bare), 0);
  EXPECT_EQ(peer.sendRaw(bare), 0);
  EXPECT_EQ(tapHost.recvRaw(1s), bare);
  EXPECT_EQ(host.recvRaw(1s), bare);
}

// ---------------------------------------------------------------------------
// vdev-vm

class VdevVmTest : public HarnessTest {
 protected:
  void SetUp() override {
    HarnessTest::SetUp();
    if (IsSkipped()) return;
    bin_ = vdevVmBinary();
    if (bin_.empty()) GTEST_SKIP() << "vdev-vm not built and $VDEV_VM not set";
  }
  std::string bin_;
};

Json lastJsonLine(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  const size_t start = out.rfind('\n', end);
  return Json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

TEST_F(VdevVmTest, HelpAndUsageErrors) {
  const CmdResult help = tryRun(bin_ + " --help");
  EXPECT_EQ(help.status, 0);
  for (const char* word : {"SYNOPSIS", "echo", "sink", "send", "--create", "IFF_TAP", "EXAMPLES"})
    EXPECT_NE(help.out.find(word), std::string::npos) << word;
  for (const char* bad : {"", "--tap x", "--tap x bogus", "--tap x send --count 1",
                          "--tap x send --dst 1 --src 02:00:00:00:00:01 --count 1",
                          "--tap x --size 10 send --dst ff:ff:ff:ff:ff:ff --src 02:00:00:00:00:01 --count 1",
                          "--tap 0123456789abcdef sink", "--tap x --mac 02:00:00:00:00:01 sink"}) {
    const CmdResult r = tryRun(bin_ + " " + bad);
    EXPECT_EQ(r.status, 2) << bad;  // usage errors exit 2, as in every tool
    EXPECT_NE(r.err.find("vdev-vm: "), std::string::npos) << bad;
  }
  const std::string missing = uniqueName('t');
  const CmdResult r = tryRun(bin_ + " --tap " + missing + " sink");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--create"), std::string::npos) << r.err;
  EXPECT_FALSE(linkExists(missing));
}

TEST_F(VdevVmTest, SinkCountsAndEchoReflects) {
  const std::string name = uniqueName('t');
  const Mac hostMac = uniqueMac();
  {
    Child vm("vdev-vm", {bin_, "--tap", name, "--create", "--mac", macString(hostMac), "sink"});
    vm.waitForLine("vdev-vm: ready", 5s);
    const LinkInfo li = linkInfo(name);
    EXPECT_TRUE(li.up);
    EXPECT_EQ(li.address, hostMac);
    if (::access("/proc/sys/net/ipv6", F_OK) == 0) {
      EXPECT_EQ(readFile("/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6"), "1\n");
    }
    PacketSocket host(name, nullptr);
    const Mac vmMac = uniqueMac();
    host.sendFlow({vmMac, hostMac, Kind::kExperimental, 4, 0, 200}, 40);
    host.sendFlow({vmMac, hostMac, Kind::kIpv4Udp, 5, 0, 1514}, 2);
    // SIGUSR1 asks for a counts line; wait for one that says 42, asking again
    // every 200 ms. A line still being written (or the "ready" line) does
    // not parse: that is "not yet", never an error.
    auto asked = std::chrono::steady_clock::time_point{};
    ASSERT_TRUE(waitUntil([&] {
      const std::string out = vm.out();
      if (!out.empty() && out.back() == '\n') {
        try {
          if (lastJsonLine(out).at("test_frames").get<uint64_t>() == 42) return true;
        } catch (const std::exception&) {
        }
      }
      if (std::chrono::steady_clock::now() - asked >= 200ms) {
        vm.signal(SIGUSR1);
        asked = std::chrono::steady_clock::now();
      }
      return false;
    }, 20s, 5ms)) << vm.logs();
    vm.signal(SIGTERM);
    ASSERT_EQ(vm.wait(3s), 0) << vm.logs();
    const Json j = lastJsonLine(vm.out());
    EXPECT_EQ(j.at("frames").get<uint64_t>(), 42u);
    EXPECT_EQ(j.at("bytes").get<uint64_t>(), 40u * 200 + 2 * 1514);
    EXPECT_EQ(j.at("corrupt").get<uint64_t>(), 0u);
    EXPECT_EQ(j.at("flows").at("4").get<uint64_t>(), 40u);
    EXPECT_EQ(j.at("flows").at("5").get<uint64_t>(), 2u);
  }
  EXPECT_FALSE(linkExists(name)) << "--create makes a non-persistent tap";

  // echo, on a persistent tap made beforehand, as a VM manager would.
  run("ip tuntap add mode tap name " + name);
  struct Del {
    std::string n;
    ~Del() { tryRun("ip link del " + n); }
  } del{name};
  disableIpv6(name, nullptr);
  run("ip link set dev " + name + " up");
  Child vm("vdev-vm", {bin_, "--tap", name, "echo"});
  vm.waitForLine("vdev-vm: ready", 5s);
  PacketSocket host(name, nullptr);
  const Mac vmMac = uniqueMac();
  for (uint32_t i = 0; i < 20; ++i) {
    // The echo swaps the MACs: it comes back as a frame from vmMac to host.
    const Spec sent{vmMac, host.mac(), Kind::kExperimental, 1, i, 100 + i};
    ASSERT_EQ(host.sendRaw(buildFrame(sent)), 0);
    const auto back = host.recvRaw(1s);
    ASSERT_TRUE(back.has_value()) << vm.logs();
    auto expect = buildFrame(sent);
    std::swap_ranges(expect.begin(), expect.begin() + 6, expect.begin() + 6);
    EXPECT_EQ(*back, expect);
  }
  vm.signal(SIGTERM);
  ASSERT_EQ(vm.wait(3s), 0) << vm.logs();
  EXPECT_EQ(lastJsonLine(vm.out()).at("frames").get<uint64_t>(), 20u);
  EXPECT_TRUE(linkExists(name)) << "a persistent tap outlives vdev-vm";
}

TEST_F(VdevVmTest, SendWritesTestFramesOnEveryQueue) {
  const std::string name = uniqueName('t');
  run("ip tuntap add mode tap name " + name + " multi_queue");
  struct Del {
    std::string n;
    ~Del() { tryRun("ip link del " + n); }
  } del{name};
  disableIpv6(name, nullptr);
  run("ip link set dev " + name + " up");
  PacketSocket host(name, nullptr);
  const Mac src = uniqueMac();
  const CmdResult r = tryRun(bin_ + " --tap " + name + " --queues 3 send --dst " +
                             macString(host.mac()) + " --src " + macString(src) +
                             " --count 300 --size 1000 --udp --flow 9");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(lastJsonLine(r.out).at("sent").get<uint64_t>(), 300u);
  ASSERT_TRUE(pumpUntil({&host}, [&] { return host.rx().count(9) == 300; }, 3s)) << host.rx().describe();
  pumpFor({&host}, 50ms);
  EXPECT_EQ(host.rx().frames(), 300u) << host.rx().describe();
  EXPECT_EQ(host.rx().sizeOf(9, 299), 1000u);
}

// ---------------------------------------------------------------------------
// Child and Vdevd wrappers, on a stand-in script

// Behaves like vdevd as far as the wrapper can tell: prints "vdevd: ready",
// writes the stats file (via a rename) on SIGUSR1 and at SIGTERM, exits 0.
constexpr const char* kFakeVdevd = R"(#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    --stats-json) STATS="$2"; shift ;;
    --fail) echo "vdevd: bad things" >&2; exit 3 ;;
  esac
  shift
done
n=0
write() {
  n=$((n + 1))
  cat > "$STATS.tmp" <<EOF
{"ports":[{"name":"p0","ifindex":5,"queues":1,"xdp_mode":"native","bind_mode":"copy","mtu":1500,
 "rx_packets":$n,"rx_bytes":60,"tx_packets":0,"tx_bytes":0,"tx_outstanding":0,
 "drops":{"ring_full":1,"tx_ring_full":0,"no_route":0,"port_down":0,"oversize":0,"runt":0,"pool_empty":0,"invalid_src":2},
 "xdp_stats":{"rx_dropped":1,"rx_invalid_descs":0,"tx_invalid_descs":0,"rx_ring_full":2,"rx_fill_ring_empty_descs":1,"tx_ring_empty_descs":0},
 "dev":{"tx_dropped":4}}],
 "pool":{"total":64,"free":60,"fill_ring":4,"kernel_rx":0,"rx_ring":0,"rx_burst":0,"port_rings":0,"tx_ring":0,"kernel_tx":0,"comp_ring":0,"kernel_held":0,"sum":64}}
EOF
  mv "$STATS.tmp" "$STATS"
}
trap 'write' USR1
trap 'write; exit 0' TERM
echo "vdevd: ready"
while :; do sleep 0.01; done
)";

class FakeVdevdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = dir_.file("fake-vdevd");
    std::ofstream(script_) << kFakeVdevd;
    ::chmod(script_.c_str(), 0755);
    const char* old = std::getenv("VDEVD");
    if (old) saved_ = old;
    ::setenv("VDEVD", script_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_) ::setenv("VDEVD", saved_->c_str(), 1);
    else ::unsetenv("VDEVD");
  }
  TempDir dir_;
  std::string script_;
  std::optional<std::string> saved_;
};

TEST_F(FakeVdevdTest, StartsReadsStatsAndStops) {
  Vdevd d({"--port", "p0"});
  const Stats s1 = d.stats();
  ASSERT_EQ(s1.ports.size(), 1u);
  const PortStats& p = s1.port("p0");
  EXPECT_EQ(p[stats::kRxPackets], 1u);
  EXPECT_EQ(p[stats::kDropRingFull], 1u);
  EXPECT_EQ(p.totalDrops(), 3u);
  EXPECT_EQ(p.xdpRxDrops(), 3u);
  EXPECT_EQ(p[stats::kDevTxDropped], 4u);
  EXPECT_EQ(p.xdp_mode, "native");
  EXPECT_FALSE(p.drop("nonsense").ok()) << "not a drop reason of the counter table";
  EXPECT_THROW(s1.port("p1"), HarnessError);
  EXPECT_EQ(s1.pool.reported_sum, s1.pool.total());
  EXPECT_EQ(s1.pool.inFlight(), 0u);
  EXPECT_EQ(d.stats().port("p0")[stats::kRxPackets], 2u) << "a fresh file per SIGUSR1";
  const Stats s3 = d.statsUntil([](const Stats& s) { return s.port("p0")[stats::kRxPackets] >= 5; }, 5s);
  EXPECT_GE(s3.port("p0")[stats::kRxPackets], 5u);
  EXPECT_EQ(d.stop(), 0);
  EXPECT_GT(d.finalStats().port("p0")[stats::kRxPackets], s3.port("p0")[stats::kRxPackets]);
  EXPECT_FALSE(d.running());
}

TEST_F(FakeVdevdTest, ReportsAnEarlyExitWithItsStderr) {
  try {
    Vdevd d({"--fail"});
    FAIL() << "expected HarnessError";
  } catch (const HarnessError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("status 3"), std::string::npos) << what;
    EXPECT_NE(what.find("vdevd: bad things"), std::string::npos) << what;
  }
  const CmdResult r = Vdevd::runExpectingExit({"--fail"});
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("bad things"), std::string::npos);
}

}  // namespace
}  // namespace vdev::e2e
