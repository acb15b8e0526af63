// VMs on vdev (docs/vm.md), end to end: vdevctl creates a persistent tap
// owned by an unprivileged user (`port add TAP type tap create owner nobody`),
// and a process standing in for QEMU attaches to it *as that user* -- it
// drops root, then does what QEMU's tap_open() does (TUNSETIFF with IFF_TAP |
// IFF_NO_PI, plus IFF_MULTI_QUEUE for a multi-queue tap) -- and plays the
// guest: it answers ARP and ping for its address. A container attached
// through the CNI plugin (run as a runtime runs it) pings the VM through
// vdev. Everything is removed at the end: the tap through `vdevctl port del`,
// the container through CNI DEL.
//
// /dev/net/tun: QEMU run by hand needs it read-write for its user (Debian's
// udev makes it 0666). Where it is not (0600 in many containers), the
// stand-in opens it before dropping root -- as libvirt does when it hands
// QEMU the fd -- and attaches after: the tap's owner check is at TUNSETIFF,
// which always runs as the unprivileged user.

#include <fcntl.h>
#include <grp.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cni_plugin.h"
#include "harness.h"
#include "wait.h"
#include "proto/client.h"

namespace vdev::e2e {
namespace {

using namespace cni;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

// "vk" + pid (base 36) + a counter: this test's taps.
std::string tapName() {
  static int n = 0;
  std::string pid;
  for (unsigned v = unsigned(::getpid()); v; v /= 36)
    pid.insert(pid.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
  return "vk" + pid + "t" + std::to_string(n++);
}

struct VmCounts {
  uint64_t frames = 0, arpReplies = 0, pingReplies = 0, writeErrors = 0;
};

// A child process standing in for QEMU on the tap `tap`, running as `uid`.
// Construction returns once it has attached every queue (throws with the
// errno if it could not); stop() ends it and returns what it saw.
class QemuStandIn {
 public:
  QemuStandIn(const std::string& tap, int queues, uid_t uid, gid_t gid, const Mac& guestMac,
              const std::string& ip)
      : guestMac_(guestMac) {
    uint8_t addr[4];
    if (std::sscanf(ip.c_str(), "%hhu.%hhu.%hhu.%hhu", &addr[0], &addr[1], &addr[2], &addr[3]) != 4)
      throw HarnessError("bad IPv4 " + ip);
    struct stat st {};
    ::stat("/dev/net/tun", &st);
    openedAsUser_ = (st.st_mode & (S_IROTH | S_IWOTH)) == (S_IROTH | S_IWOTH);
    int ready[2], stop[2], result[2];
    if (::pipe2(ready, O_CLOEXEC) || ::pipe2(stop, O_CLOEXEC) || ::pipe2(result, O_CLOEXEC))
      throw HarnessError("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(stop[1]);
      ::close(result[0]);
      child(tap, queues, uid, gid, addr, ready[1], stop[0], result[1]);  // never returns
    }
    ::close(ready[1]);
    ::close(stop[0]);
    ::close(result[1]);
    stopFd_ = stop[1];
    resultFd_ = result[0];
    int err = EIO;
    const ssize_t n = ::read(ready[0], &err, sizeof err);
    ::close(ready[0]);
    if (n != sizeof err || err != 0) {
      stop_();
      throw HarnessError("QEMU stand-in: attach to tap " + tap + " as uid " + std::to_string(uid) +
                         ": " + std::strerror(n == sizeof err ? err : EIO));
    }
  }
  ~QemuStandIn() { stop_(); }

  pid_t pid() const { return pid_; }
  bool openedAsUser() const { return openedAsUser_; }

  VmCounts stop() {
    VmCounts c;
    if (stopFd_ >= 0) {
      ::close(stopFd_);
      stopFd_ = -1;
      if (::read(resultFd_, &c, sizeof c) != sizeof c) c = {};
    }
    stop_();
    return c;
  }

 private:
  [[noreturn]] void child(const std::string& tap, int queues, uid_t uid, gid_t gid,
                          const uint8_t ip[4], int readyFd, int stopFd, int resultFd) {
    int fds[16];
    int err = 0;
    const auto openTun = [&] {
      for (int q = 0; q < queues && !err; ++q)
        if ((fds[q] = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK)) < 0) err = errno;
    };
    if (!openedAsUser_) openTun();  // libvirt's way: the fd is opened with privileges
    if (!err && (::setgroups(0, nullptr) || ::setgid(gid) || ::setuid(uid))) err = errno;
    if (!err && openedAsUser_) openTun();  // QEMU run by a user
    for (int q = 0; q < queues && !err; ++q) {
      ifreq ifr{};
      ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (queues > 1 ? IFF_MULTI_QUEUE : 0);
      std::strncpy(ifr.ifr_name, tap.c_str(), IFNAMSIZ - 1);
      if (::ioctl(fds[q], TUNSETIFF, &ifr) < 0) err = errno;
    }
    if (::write(readyFd, &err, sizeof err) != sizeof err || err) ::_exit(1);
    VmCounts c;
    pollfd p[17];
    for (int q = 0; q < queues; ++q) p[q] = {fds[q], POLLIN, 0};
    p[queues] = {stopFd, POLLIN, 0};
    uint8_t buf[16384];
    for (;;) {
      if (::poll(p, nfds_t(queues + 1), -1) < 0 && errno != EINTR) break;
      if (p[queues].revents) break;  // the test closed the stop pipe
      for (int q = 0; q < queues; ++q) {
        ssize_t n;
        while ((n = ::read(fds[q], buf, sizeof buf)) > 0) {
          ++c.frames;
          if (!testkit::makeArpOrEchoReply(guestMac_, ip, buf, size_t(n))) continue;
          (buf[12] == 0x08 && buf[13] == 0x06 ? c.arpReplies : c.pingReplies)++;
          if (::write(fds[q], buf, size_t(n)) != n) ++c.writeErrors;  // the queue it came on
        }
      }
    }
    (void)!::write(resultFd, &c, sizeof c);
    ::_exit(0);
  }

  void stop_() {
    if (stopFd_ >= 0) ::close(stopFd_);
    stopFd_ = -1;
    if (pid_ > 0) {
      for (int i = 0; i < 200; ++i) {
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        ::usleep(10000);
      }
      if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
      }
    }
    if (resultFd_ >= 0) ::close(resultFd_);
    resultFd_ = -1;
  }

  Mac guestMac_;
  bool openedAsUser_ = false;
  pid_t pid_ = -1;
  int stopFd_ = -1, resultFd_ = -1;
};

// The uids of a process (/proc/PID/status "Uid:": real, effective, saved, fs).
std::string uidsOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("Uid:", 0) == 0) return line.substr(4);
  return "";
}

// The tap names a process holds, from its fds' fdinfo ("iff:\tNAME").
std::vector<std::string> tapsHeldBy(pid_t pid) {
  std::vector<std::string> taps;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo", ec)) {
    std::ifstream f(e.path());
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("iff:", 0) == 0) {
        std::string n = line.substr(4);
        n.erase(0, n.find_first_not_of(" \t"));
        taps.push_back(n);
      }
  }
  return taps;
}

class VmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vdevctlBinary().empty()) GTEST_SKIP() << "vdevctl not built and $VDEVCTL not set";
    if (pluginBinary().empty()) GTEST_SKIP() << "vdev-cni not built and $VDEV_CNI not set";
    requireRoot();
    if (IsSkipped()) return;
    VDEV_E2E_REQUIRE_VDEVD();
    if (::access("/usr/lib/cni/host-local", X_OK) != 0)
      GTEST_SKIP() << "no /usr/lib/cni/host-local (Debian package containernetworking-plugins)";
    vdevd_ = std::make_unique<Vdevd>(std::vector<std::string>{"--socket", sock_, "--state", state_});
  }
  void TearDown() override {
    // SIGTERM and exit 0 (LeakSanitizer's check included) for a vdevd the
    // test left running, as for every other.
    if (vdevd_ && vdevd_->running()) expectCleanStop(*vdevd_);
    if (!tap_.empty() && linkExists(tap_)) tryRun("ip link del dev " + tap_);
    if (!port_.empty() && linkExists(port_)) tryRun("ip link del dev " + port_);
  }

  std::string ctl(const std::string& args) {
    return run(shellQuote(vdevctlBinary()) + " -S " + shellQuote(sock_) + " " + args);
  }
  vdev::proto::PortInfo port(const std::string& name) {
    auto c = vdev::proto::ControlClient::connect(sock_);
    if (!c) throw HarnessError("connect: " + c.error().message());
    auto p = c->portGet(name);
    if (!p) throw HarnessError("port " + name + ": " + p.error().message());
    return *p;
  }
  vdev::proto::PortStatsMsg stats(const std::string& name) {
    auto c = vdev::proto::ControlClient::connect(sock_);
    if (!c) throw HarnessError("connect: " + c.error().message());
    auto s = c->stats(name);
    if (!s || s->ports.size() != 1) throw HarnessError("stats " + name);
    return s->ports[0];
  }

  // A container on the CNI plugin: its address.
  std::string addContainer(const Netns& ns) {
    conf_ = netConf("1.0.0", "vcvm", sock_, "198.18.210.0/24", dir_.file("ipam"));
    const Outcome o = runPlugin(
        {"ADD", "vm-test-" + ns.name(), "/run/netns/" + ns.name(), "eth0",
         "IgnoreUnknown=1;MAC=" + macString(uniqueMac()), "", {}},
        conf_.dump());
    if (o.status != 0) throw HarnessError("CNI ADD: " + o.describe());
    const OJson r = o.json();
    port_ = r.at("interfaces").at(0).at("name");
    const std::string cidr = r.at("ips").at(0).at("address");
    return cidr.substr(0, cidr.find('/'));
  }
  void delContainer(const Netns& ns) {
    const Outcome o = runPlugin({"DEL", "vm-test-" + ns.name(), "/run/netns/" + ns.name(), "eth0",
                                 "", "", {}},
                                conf_.dump());
    EXPECT_EQ(o.status, 0) << o.describe();
  }

  // The container pings the VM until `count` replies came back (a slow
  // reply on a loaded machine counts; 20 s for all of them); returns ping's
  // output.
  static std::string pingVm(const Netns& ns, const std::string& ip, int count) {
    const PingResult r = pingUntilReplies(ns.name(), ip, count);
    EXPECT_TRUE(r.cmd.ok()) << r.describe();
    EXPECT_EQ(r.received, count) << r.describe();
    return r.cmd.out;
  }

  TempDir dir_;
  const std::string sock_ = dir_.file("vdevd.sock");
  const std::string state_ = dir_.file("vdevd.state");
  std::unique_ptr<Vdevd> vdevd_;
  OJson conf_;
  std::string tap_, port_;
};

// One VM, one queue: QEMU as "nobody" on a tap vdevctl made for nobody.
TEST_F(VmTest, VmAsTheTapOwnerTalksToAContainerThroughVdev) {
  Netns ctr;
  const std::string ctrIp = addContainer(ctr);
  tap_ = tapName();
  const Mac hostMac = uniqueMac(), guestMac = uniqueMac();
  const std::string vmIp = "198.18.210.200";
  ctl("port add " + tap_ + " type tap create owner nobody mac " + macString(hostMac));
  ASSERT_TRUE(linkExists(tap_));
  EXPECT_EQ(linkInfo(tap_).address, hostMac);
  EXPECT_FALSE(port(tap_).live) << "a tap nobody holds has no carrier";

  // Another unprivileged user may not attach.
  try {
    QemuStandIn intruder(tap_, 1, kNobody - 1, kNogroup, guestMac, vmIp);
    ADD_FAILURE() << "uid " << kNobody - 1 << " attached to a tap owned by nobody";
  } catch (const HarnessError& e) {
    EXPECT_NE(std::string(e.what()).find("Operation not permitted"), std::string::npos) << e.what();
  }

  QemuStandIn vm(tap_, 1, kNobody, kNogroup, guestMac, vmIp);
  RecordProperty("tun_opened_as_user", vm.openedAsUser() ? "yes" : "no (0600 /dev/net/tun)");
  // It is nobody's process, and it holds the tap.
  EXPECT_EQ(uidsOf(vm.pid()), "\t65534\t65534\t65534\t65534");
  EXPECT_EQ(tapsHeldBy(vm.pid()), std::vector<std::string>{tap_});
  ASSERT_TRUE(waitUntil([&] { return port(tap_).live; }, 5s, 20ms)) << ctl("port show");

  pingVm(ctr, vmIp, 20);
  const VmCounts c = vm.stop();
  EXPECT_GE(c.pingReplies, 20u);
  EXPECT_GE(c.arpReplies, 1u);
  EXPECT_EQ(c.writeErrors, 0u);
  // Both directions went through vdevd's tap port.
  const auto s = stats(tap_);
  EXPECT_GE(s.counters[vdev::stats::kRxPackets], c.pingReplies + c.arpReplies);
  EXPECT_GE(s.counters[vdev::stats::kTxPackets], c.pingReplies);
  EXPECT_EQ(s.counters.totalDrops(), 0u);
  (void)ctrIp;

  ctl("port del " + tap_);
  EXPECT_FALSE(linkExists(tap_)) << "vdevctl port del left the tap";
  delContainer(ctr);
  EXPECT_FALSE(linkExists(port_));
  EXPECT_EQ(ctl("-j port show"), "[]\n") << "ports left";
  EXPECT_EQ(vdevd_->stop(), 0) << vdevd_->logs();
}

// A multi-queue tap, as for "-netdev tap,queues=2": vdevd binds the second
// queue once the VM opens it; ping works across it.
TEST_F(VmTest, MultiQueueVmTalksToAContainer) {
  Netns ctr;
  addContainer(ctr);
  tap_ = tapName();
  const std::string vmIp = "198.18.210.201";
  ctl("port add " + tap_ + " type tap queues 2 create owner nobody multi-queue mac " +
      macString(uniqueMac()));
  QemuStandIn vm(tap_, 2, kNobody, kNogroup, uniqueMac(), vmIp);
  EXPECT_EQ(tapsHeldBy(vm.pid()).size(), 2u);
  ASSERT_TRUE(waitUntil([&] { return port(tap_).live && port(tap_).queues_bound == 2; }, 5s, 20ms))
      << ctl("port show");
  pingVm(ctr, vmIp, 20);
  const VmCounts c = vm.stop();
  EXPECT_GE(c.pingReplies, 20u);
  EXPECT_EQ(c.writeErrors, 0u);
  ctl("port del " + tap_);
  EXPECT_FALSE(linkExists(tap_));
  delContainer(ctr);
  EXPECT_EQ(ctl("-j port show"), "[]\n") << "ports left";
  EXPECT_EQ(vdevd_->stop(), 0) << vdevd_->logs();
}

}  // namespace
}  // namespace vdev::e2e
