// A node's worth of ports on one vdevd: 250 ports (veths vdevd creates
// into namespaces of their own, as vdev-cni attaches containers, and taps
// held like QEMU holds them) with the default frame pool, on both hooks.
// Every port forwards (a frame from the last port reaches the first and the
// answer comes back, exact counts, no drop anywhere), `vdevctl info` says
// how many more fit, and adding and removing all of them twice leaves
// vdevd's open files exactly and its memory about where they started.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "proto/client.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

constexpr int kVeths = 240;
constexpr int kTaps = 10;
constexpr int kPorts = kVeths + kTaps;
// What the skb path holds once made (its tc programs, its maps -- seven
// of them the fast path's, shared by fd, three of those capture's -- and
// the punt device's socket: measured 42, the same in both cycles), or the
// XDP hook's shared program and its maps while a port uses them.
constexpr size_t kSkbPathFds = 48;

size_t openFds(pid_t pid) {
  const std::filesystem::path dir("/proc/" + std::to_string(pid) + "/fd");
  return size_t(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator{}));
}

// What each descriptor is ("7 -> socket:[1234]"), for a failure message:
// the ones open now and not before are the leak.
std::vector<std::string> fdTargets(pid_t pid) {
  std::vector<std::string> out;
  const std::filesystem::path dir("/proc/" + std::to_string(pid) + "/fd");
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code rec;
    const auto target = std::filesystem::read_symlink(e.path(), rec);
    out.push_back(e.path().filename().string() + " -> " + (rec ? "?" : target.string()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// For "socket:[INODE]": the /proc/PID/net table that lists it (its kind).
std::string socketKind(pid_t pid, const std::string& target) {
  const size_t open = target.find("socket:[");
  if (open == std::string::npos) return {};
  const std::string inode = target.substr(open + 8, target.size() - open - 9);
  for (const char* t : {"netlink", "unix", "packet", "udp", "tcp", "raw", "udp6", "tcp6", "raw6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + t);
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      for (std::string w; f >> w;)
        if (w == inode) return std::string(" (") + t + ": " + line + ")";
    }
  }
  return " (in no /proc/net table: AF_XDP or another family)";
}

std::string fdsNotIn(pid_t pid, const std::vector<std::string>& now, const std::vector<std::string>& before) {
  std::string out;
  for (const std::string& f : now)
    if (std::find(before.begin(), before.end(), f) == before.end()) out += "\n  new: " + f + socketKind(pid, f);
  for (const std::string& f : before)
    if (std::find(now.begin(), now.end(), f) == now.end()) out += "\n  gone: " + f;
  return out;
}

uint64_t rssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

struct Param {
  const char* name;
  const char* hook;  // vdevd --default-hook
};

class ScaleBase : public ::testing::Test {
 protected:
  void SetUp() override {
    requireRoot();
    if (IsSkipped()) return;
    if (vdevdBinary().empty()) GTEST_SKIP() << "vdevd not built";
  }

  vdev::proto::ControlClient client() {
    auto c = vdev::proto::ControlClient::connect(sock_);
    if (!c) throw HarnessError("connect to vdevd: " + c.error().message());
    return std::move(*c);
  }

  // Every port listed, and live (sockets open, link up).
  bool allLive(vdev::proto::ControlClient& c, std::string& why) {
    auto l = c.portList();
    if (!l) {
      why = l.error().message();
      return false;
    }
    size_t live = 0;
    for (const auto& p : *l) live += p.live;
    why = std::to_string(live) + " of " + std::to_string(l->size()) + " ports live";
    return l->size() == size_t(kPorts) && live == size_t(kPorts);
  }

  TempDir dir_;
  std::string sock_ = dir_.file("vdevd.sock");
};

// Both hooks (Param).
class ScaleTest : public ScaleBase, public ::testing::WithParamInterface<Param> {};

// The XDP hook alone: its ports take fill-ring floors from the pool.
using PoolLimitTest = ScaleBase;

TEST_P(ScaleTest, TwoHundredFiftyPortsAllForwardAndGoAwayTwice) {
  std::vector<std::unique_ptr<Netns>> ns;
  std::vector<Mac> peer_mac;
  for (int i = 0; i < kVeths; i++) {
    ns.push_back(std::make_unique<Netns>());
    peer_mac.push_back(uniqueMac());
  }
  std::vector<std::unique_ptr<Tap>> taps;
  for (int i = 0; i < kTaps; i++) taps.push_back(std::make_unique<Tap>());
  Vdevd d({"--socket", sock_, "--no-state", "--default-hook", GetParam().hook}, 30s);
  auto c = client();
  // A request answered first: connect() returns once the connection is
  // queued, and vdevd's end of it (an fd) exists only when vdevd has
  // accepted it -- counted before, it would look like a leak after.
  ASSERT_TRUE(c.portList());
  const size_t fds0 = openFds(d.pid());
  const std::vector<std::string> fd_targets0 = fdTargets(d.pid());
  const uint64_t rss0 = rssKb(d.pid());
  uint64_t rss_after[2] = {0, 0};
  size_t fds_after[2] = {0, 0};
  const bool skb = std::string(GetParam().hook) != "xdp";

  for (int cycle = 0; cycle < 2; cycle++) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    std::vector<std::string> names;
    for (int i = 0; i < kVeths; i++) {
      vdev::proto::PortAddRequest r;
      r.name = uniqueName('s');
      r.type = vdev::proto::PortType::kVeth;
      vdev::proto::CreateOptions co;
      co.peer_netns_name = ns[i]->name();
      co.peer_ifname = "eth0";
      co.peer_mac = peer_mac[i];
      r.create = co;
      const Status st = c.portAdd(r);
      ASSERT_TRUE(st) << "port " << i << ": " << st.error().message();
      names.push_back(r.name);
    }
    for (auto& t : taps) {
      vdev::proto::PortAddRequest r;
      r.name = t->name();
      r.type = vdev::proto::PortType::kNetdev;  // an existing device, as `vdevctl port add IFNAME`
      const Status st = c.portAdd(r);
      ASSERT_TRUE(st) << t->name() << ": " << st.error().message();
      names.push_back(r.name);
    }
    std::string why;
    ASSERT_TRUE(waitUntil([&] { return allLive(c, why); }, 60s, 50ms)) << why << "\n" << d.logs();

    // Descriptors: one a port (its AF_XDP socket; a port at tc has a
    // TX-only one), besides what the ports' shared program object holds
    // once (the XDP program and its maps, or the skb path's; 14 a port
    // when each port at the XDP hook loaded a program of its own).
    {
      const size_t attached = openFds(d.pid());
      EXPECT_LE(attached, fds0 + kPorts + kSkbPathFds)
          << attached << " open files with " << kPorts << " ports, " << fds0 << " before them"
          << fdsNotIn(d.pid(), fdTargets(d.pid()), fd_targets0);
      std::cout << "  cycle " << cycle << ": " << attached - fds0 << " descriptors for " << kPorts << " ports\n";
    }

    // How many more fit, and by what.
    auto info = c.info();
    ASSERT_TRUE(info) << info.error().message();
    ASSERT_TRUE(info->ports_pool_left && info->ports_map_left && info->ports_fd_left);
    EXPECT_EQ(*info->ports_map_left, 1024u - kPorts);
    if (!skb)
      EXPECT_EQ(*info->ports_pool_left, 256u - kPorts) << "32768 frames: half for the floors of 64";
    else
      EXPECT_EQ(*info->ports_pool_left, 255u) << "only the punt device's socket receives";

    // The first port (a container), the last container and the last port
    // (a VM): the first frames from the last are flooded to every port,
    // the answers are unicast to a learned station, and the next frames
    // from the last too (on the kernel fast path, where it takes them).
    PacketSocket first("eth0", ns.front().get(), peer_mac.front());
    PacketSocket last_veth("eth0", ns.back().get(), peer_mac.back());
    Tap& vm = *taps.back();
    vm.rx().clear();  // the taps outlive the rounds; the round counts its own frames
    const Endpoints eps = {&first, &last_veth, &vm};
    const Stats before = d.stats(30s);
    const uint32_t base = 100 * uint32_t(cycle);
    constexpr uint32_t kN = 5;
    vm.sendFlow({first.mac(), vm.mac(), Kind::kExperimental, base + 1, 0, 60}, kN);
    last_veth.sendFlow({first.mac(), last_veth.mac(), Kind::kExperimental, base + 2, 0, 60}, kN);
    ASSERT_TRUE(pumpUntil(eps, [&] { return first.rx().count(base + 1) == kN && first.rx().count(base + 2) == kN; },
                          20s))
        << first.rx().describe() << d.logs();
    first.sendFlow({vm.mac(), first.mac(), Kind::kExperimental, base + 3, 0, 60}, kN);
    first.sendFlow({last_veth.mac(), first.mac(), Kind::kExperimental, base + 4, 0, 60}, kN);
    vm.sendFlow({first.mac(), vm.mac(), Kind::kExperimental, base + 5, 0, 60}, kN);
    ASSERT_TRUE(pumpUntil(eps,
                          [&] {
                            return vm.rx().count(base + 3) == kN && last_veth.rx().count(base + 4) == kN &&
                                   first.rx().count(base + 5) == kN;
                          },
                          20s))
        << vm.rx().describe() << last_veth.rx().describe() << first.rx().describe() << d.logs();
    pumpFor(eps, 200ms);
    for (Endpoint* e : eps) {
      EXPECT_EQ(e->rx().totalDuplicates(), 0u) << e->label();
      EXPECT_EQ(e->rx().corrupt(), 0u) << e->label();
    }
    EXPECT_EQ(first.rx().total(), 3 * kN) << first.rx().describe();
    // Each of the two senders also got the other's flooded frames.
    EXPECT_EQ(vm.rx().total(), 2 * kN) << vm.rx().describe();
    EXPECT_EQ(last_veth.rx().total(), 2 * kN) << last_veth.rx().describe();

    // Counters exact: what the senders' ports received is what the
    // receivers' ports sent, every flooded frame reached every other port,
    // and nothing was dropped anywhere, by vdevd or on the way in.
    const Stats after = d.statsUntil(
        [&](const Stats& s) {
          return s.port(names.front())[stats::kTxPackets] - before.port(names.front())[stats::kTxPackets] >= 3 * kN &&
                 s.pool.inFlight() == 0;
        },
        30s);
    ASSERT_EQ(after.ports.size(), size_t(kPorts)) << after.dump();
    EXPECT_EQ(after.pool.reported_sum, after.pool.total()) << after.dump();
    const auto delta = [&](const std::string& port, stats::PortCounter c) {
      return after.port(port)[c] - before.port(port)[c];
    };
    EXPECT_EQ(delta(vm.name(), stats::kRxPackets), 2 * kN);
    EXPECT_EQ(delta(names[kVeths - 1], stats::kRxPackets), kN);
    EXPECT_EQ(delta(names.front(), stats::kRxPackets), 2 * kN);
    EXPECT_EQ(delta(names.front(), stats::kTxPackets), 3 * kN);
    EXPECT_EQ(delta(vm.name(), stats::kTxPackets), 2 * kN);  // the other's flood, and the answers
    EXPECT_EQ(delta(names[kVeths - 1], stats::kTxPackets), 2 * kN);
    uint64_t drops = 0, rx_drops = 0;
    for (const std::string& n : names) {
      drops += after.port(n).totalDrops() - before.port(n).totalDrops();
      rx_drops += after.port(n).xdpRxDrops() - before.port(n).xdpRxDrops();
      // The first frames of both senders were flooded: every other port got them.
      if (n != names.front() && n != vm.name() && n != names[kVeths - 1]) {
        EXPECT_EQ(delta(n, stats::kTxPackets), 2 * kN) << n;
      }
    }
    EXPECT_EQ(drops, 0u) << after.dump();
    EXPECT_EQ(rx_drops, 0u) << after.dump();

    // Everything goes, and takes its descriptors and memory with it.
    for (const std::string& n : names) {
      const Status st = c.portDel(n);
      ASSERT_TRUE(st) << n << ": " << st.error().message();
    }
    auto l = c.portList();
    ASSERT_TRUE(l);
    EXPECT_TRUE(l->empty());
    // Exactly where they started -- but for the skb path, which is made
    // with the first port that wants it and kept (its program, maps and
    // punt device's socket), so the second round ends where the first did.
    const size_t want = cycle == 0 ? fds0 : fds_after[0];
    size_t fds = 0;
    const bool back = waitUntil(
        [&] {
          fds = openFds(d.pid());
          return skb ? fds == want || (cycle == 0 && fds > want && fds <= want + kSkbPathFds) : fds == want;
        },
        30s, 50ms);
    EXPECT_TRUE(back) << fds << " open files, " << want << " before the ports"
                      << fdsNotIn(d.pid(), fdTargets(d.pid()), fd_targets0);
    fds_after[cycle] = fds;
    // Every frame back in the pool -- but the punt device's fill ring,
    // which the skb path keeps with its socket.
    const auto back_home = [&](const Stats& s) {
      return s.pool.free() + s.pool[stats::kPoolFillRing] == s.pool.total() && (skb || s.pool[stats::kPoolFillRing] == 0);
    };
    const Stats idle = d.statsUntil(back_home, 30s);
    EXPECT_TRUE(back_home(idle)) << idle.dump();
    rss_after[cycle] = rssKb(d.pid());
  }
  // Memory: the second round leaves nothing the first did not (no leak per
  // port). The first leaves about 10 MB of the 14-29 MB that 250 ports hold
  // while attached (measured with scripts/scale-ports.sh; kept by the
  // allocator and libbpf, not yet accounted for), bounded here.
#if defined(VDEV_ASAN_BUILD)  // vdevd is ASan-built (CMakeLists.txt)
  // ASan holds freed memory in its quarantine (up to 256 MB), so vdevd's
  // RSS says nothing of what it keeps; LeakSanitizer checks that at exit.
  (void)rss0;
#else
  EXPECT_LE(rss_after[1], rss_after[0] + 2048) << "kB; before any port: " << rss0;
  EXPECT_LE(rss_after[0], rss0 + 16384) << "kB";
#endif
  expectCleanStop(d);
}

// A port at the XDP hook that the pool cannot give its fill-ring floor is
// refused at add, with an error naming the limit -- never attached with an
// empty fill ring. 1024 frames keep 512 for floors of 64: eight ports. A
// port at the tc hook takes none and is still added.
TEST_F(PoolLimitTest, APortThePoolCannotFeedIsRefusedAtAdd) {
  constexpr int kFit = 8;
  std::vector<std::unique_ptr<Netns>> ns;
  for (int i = 0; i <= kFit + 1; i++) ns.push_back(std::make_unique<Netns>());
  Vdevd d({"--socket", sock_, "--no-state", "--default-hook", "xdp", "--frames", "1024"});
  auto c = client();
  const auto add = [&](int i, std::optional<vdev::proto::PortHook> hook) {
    vdev::proto::PortAddRequest r;
    r.name = uniqueName('s');
    r.type = vdev::proto::PortType::kVeth;
    vdev::proto::CreateOptions co;
    co.peer_netns_name = ns[i]->name();
    r.create = co;
    r.hook = hook;
    return std::make_pair(r.name, c.portAdd(r));
  };
  for (int i = 0; i < kFit; i++) {
    const auto [name, st] = add(i, std::nullopt);
    ASSERT_TRUE(st) << name << ": " << st.error().message();
  }
  auto info = c.info();
  ASSERT_TRUE(info && info->ports_pool_left);
  EXPECT_EQ(*info->ports_pool_left, 0u);
  const auto [name, st] = add(kFit, std::nullopt);
  ASSERT_FALSE(st) << name << " was attached without frames for its fill ring";
  EXPECT_EQ(st.error().err, ENOSPC);
  EXPECT_NE(st.error().what.find("--frames"), std::string::npos) << st.error().what;
  EXPECT_FALSE(linkExists(name)) << "the veth vdevd created for the refused port is left";
  const auto [tc_name, tc_st] = add(kFit + 1, vdev::proto::PortHook::kTc);
  EXPECT_TRUE(tc_st) << tc_name << ": " << tc_st.error().message();
  auto l = c.portList();
  ASSERT_TRUE(l);
  EXPECT_EQ(l->size(), size_t(kFit + 1));
  const Stats s = d.stats();
  EXPECT_EQ(s.pool.reported_sum, s.pool.total()) << s.dump();
  expectCleanStop(d);
}

INSTANTIATE_TEST_SUITE_P(Hooks, ScaleTest,
                         ::testing::Values(Param{"xdp", "xdp"}, Param{"skb_path", "auto"}),
                         [](const ::testing::TestParamInfo<Param>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace vdev::e2e
