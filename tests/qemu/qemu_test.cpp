// A real guest on a tap, with QEMU's default tap options, end to end.
//
// QEMU (TCG) boots the guest of scripts/vm-guest-image.sh on a tap it
// creates, as users run VMs: `-netdev tap,ifname=TAP,script=no,downscript=no`
// -- vnet_hdr on (QEMU's default), so the guest's virtio-net has checksum
// and segmentation offloads -- and, in a second suite, with vnet_hdr=off.
// A container (a network namespace with a veth) is switched to the guest by
//   - the Linux bridge (tap and veth enslaved): the reference;
//   - vdevd of this build (`--port TAP --port VETH`, its own control socket
//     and state file in a temp dir) with its defaults -- the skb path for
//     both ports (tcx programs, learned unicast on the kernel's skb
//     redirect) -- and with --no-fast-path (every frame through vdevd's
//     AF_XDP path, via the punt device). The container's veth keeps its
//     default offloads.
// Each checks what a user of the VM would: ping both ways (3 of 3), and a
// TCP connection each way moving 1 MiB whose bytes are compared (busybox nc
// in the guest, a socket of this test in the container). With QEMU's
// defaults the TCP checks run over IPv6 too (the guest's TSO6 segments and
// IPv6 partial checksums), as a guest's stack uses it when it has an
// address.
//
// Suites and names: QemuDefaults.* and VnetHdrOff.*, each with the switches
// Bridge, VdevdFastPath and VdevdNoFastPath as parameters, e.g.
// Switch/QemuDefaults.TcpGuestToContainer/VdevdFastPath. One guest boots per
// suite and serves its tests (a boot under TCG takes 10-30 s here).
//
// TCP with QEMU's defaults is the case that matters: the guest offloads
// TCP checksums (VIRTIO_NET_HDR_F_NEEDS_CSUM) and segmentation (segments
// of up to 64 KB), and the tap makes CHECKSUM_PARTIAL/GSO skbs of them.
// Through vdevd's XDP hook (what every port had before the skb path) no
// TCP connection completed, in either direction: XDP and AF_XDP carry no
// checksum state, so the frames arrived as bytes with unfinished checksums
// and the container's stack dropped them (TcpInCsumErrors), while vdevd
// counted them delivered. The skb path keeps that state on the kernel's
// redirect and hands vdevd frames that the punt device's missing offloads
// made whole (docs/architecture.md, "Two kinds of sources").
//
// VDEV_QEMU_PCAP=DIR: capture each test's traffic with tcpdump on the tap,
// the veth's host end and the container's end into DIR/TEST.{tap,veth,ctr}.pcap.
//
// Addresses 198.18.40.0/24 (QemuDefaults) and 198.18.41.0/24 (VnetHdrOff);
// over IPv6 2001:2:0:40::/64 (the IPv6 benchmarking range, RFC 5180);
// locally administered MACs; names "vt" + pid + role + counter. Everything
// made is removed, pass or fail: the tap goes with QEMU, which dies with
// this process (PR_SET_PDEATHSIG) if it is killed.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <thread>

#include "base/fd.h"
#include "harness.h"
#include "testkit/netns.h"
#include "testkit/qemu_guest.h"

namespace vdev::qemutest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using e2e::CmdResult;
using e2e::HarnessError;
using testkit::GuestImage;
using testkit::GuestOptions;
using testkit::GuestReply;
using testkit::ImageOutcome;
using testkit::QemuGuest;
using testkit::qemuBinary;
using Millis = testkit::Millis;

// The guest image, built (or found up to date) once per process.
const ImageOutcome& guestImage() {
  static const ImageOutcome outcome = testkit::buildGuestImage(VDEV_QEMU_IMAGE_SCRIPT, VDEV_QEMU_IMAGE_DIR);
  return outcome;
}

// The kit's guest returns Results; a console command that fails here fails
// the test, as the harness's own calls do (HarnessError).
template <class T>
T orThrow(Result<T> r) {
  if (!r) throw HarnessError(r.error().message());
  return std::move(r.value());
}
GuestReply guestRun(QemuGuest& g, const std::string& cmd, Millis timeout) { return orThrow(g.run(cmd, timeout)); }
int guestStart(QemuGuest& g, const std::string& cmd) { return orThrow(g.start(cmd)); }
GuestReply guestWait(QemuGuest& g, int id, Millis timeout) { return orThrow(g.wait(id, timeout)); }

constexpr int kToGuestPort = 5001;    // container -> guest
constexpr int kFromGuestPort = 5002;  // guest -> container
// A SYN and its answer take milliseconds even under TCG; the kernel
// retransmits a lost SYN after 1, 3 and 7 s, so 10 s sees four tries.
constexpr Millis kConnectDeadline = 10s;
constexpr Millis kTransferDeadline = 90s;

enum class Switch { kBridge, kVdevdFastPath, kVdevdNoFastPath };

std::string switchName(Switch s) {
  switch (s) {
    case Switch::kBridge: return "Bridge";
    case Switch::kVdevdFastPath: return "VdevdFastPath";
    case Switch::kVdevdNoFastPath: return "VdevdNoFastPath";
  }
  return "?";
}

void PrintTo(Switch s, std::ostream* os) { *os << switchName(s); }

struct Addresses {
  std::string guest, container;
};
Addresses addressesFor(bool vnetHdr) {
  const std::string net = vnetHdr ? "198.18.40." : "198.18.41.";
  return {net + "2", net + "1"};
}
// QemuDefaults over IPv6 (without duplicate address detection: usable at
// once).
const Addresses kAddresses6 = {"2001:2:0:40::2", "2001:2:0:40::1"};

std::vector<uint8_t> readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// One guest per suite, booted by the first test that needs it; a boot that
// failed is not tried again (every later test of the suite fails with why).
struct SuiteGuest {
  std::unique_ptr<QemuGuest> guest;
  std::string error;
  bool tried = false;
};
std::map<bool, SuiteGuest>& suiteGuests() {
  static std::map<bool, SuiteGuest> guests;  // by vnetHdr
  return guests;
}

// Kills every guest before gtest's statics go, pass or fail.
class GuestReaper : public ::testing::Environment {
 public:
  void TearDown() override { suiteGuests().clear(); }
};
const auto* const kReaper = ::testing::AddGlobalTestEnvironment(new GuestReaper);

// A Linux bridge in the root namespace: no STP (ports forward at once), no IPv6.
class Bridge {
 public:
  Bridge() : name_(e2e::uniqueName('b')) {
    e2e::run("ip link add name " + name_ + " type bridge");
    try {
      e2e::disableIpv6(name_, nullptr);
      e2e::run("ip link set dev " + name_ + " address " + e2e::macString(e2e::uniqueMac()) + " up");
    } catch (...) {
      e2e::tryRun("ip link del " + name_);
      throw;
    }
  }
  ~Bridge() {
    const CmdResult r = e2e::tryRun("ip link del " + name_);
    if (!r.ok()) std::cerr << "qemu: warning: ip link del " << name_ << ": " << r.err;
  }
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;
  void enslave(const std::string& ifname) { e2e::run("ip link set dev " + ifname + " master " + name_); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// tcpdump on one interface into a file, stopped (SIGINT: it flushes) at
// destruction.
class Capture {
 public:
  Capture(const std::string& file, const std::string& ifname, const e2e::Netns* ns) {
    const std::string cmd = (ns ? "exec ip netns exec " + ns->name() + " " : std::string("exec ")) +
                            "tcpdump -n -U --immediate-mode -s 256 -i " + ifname + " -w " + e2e::shellQuote(file);
    child_ = std::make_unique<e2e::Child>("tcpdump", std::vector<std::string>{"/bin/sh", "-c", cmd});
    // tcpdump opens its socket in well under a second; frames before that
    // are not captured.
    std::this_thread::sleep_for(500ms);
  }
  ~Capture() {
    child_->signal(SIGINT);
    child_->wait(3s);
  }

 private:
  std::unique_ptr<e2e::Child> child_;
};

// An IPv4 or IPv6 address and port.
struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family() const { return ss.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&ss); }
};

SockAddr inetAddress(const std::string& ip, int port) {
  SockAddr a;
  auto* in = reinterpret_cast<sockaddr_in*>(&a.ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (::inet_pton(AF_INET, ip.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons(uint16_t(port));
    a.len = sizeof *in;
  } else if (::inet_pton(AF_INET6, ip.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(uint16_t(port));
    a.len = sizeof *in6;
  } else {
    throw HarnessError("bad address " + ip);
  }
  return a;
}

// A TCP socket of `family` made inside the container's namespace (it stays
// there).
Result<FileDesc> containerSocket(const e2e::Netns& ns, int family) {
  return testkit::inNetns(&ns.kit(), [&]() -> Result<FileDesc> {
    FileDesc s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) return errnoError("socket");
    return s;
  });
}

int remainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left > 0 ? int(left) : 0;
}

bool pollFor(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, remainingMs(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) throw HarnessError(std::string("poll: ") + std::strerror(errno));
  }
}

// Reads until EOF; false if the deadline passed first.
bool readToEof(int fd, std::vector<uint8_t>& out, Clock::time_point deadline) {
  uint8_t buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.insert(out.end(), buf, buf + n);
      continue;
    }
    if (n == 0) return true;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) throw HarnessError(std::string("read: ") + std::strerror(errno));
    if (!pollFor(fd, POLLIN, deadline)) return false;
  }
}

bool writeAll(int fd, const std::vector<uint8_t>& data, Clock::time_point deadline) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) throw HarnessError(std::string("send: ") + std::strerror(errno));
    if (!pollFor(fd, POLLOUT, deadline)) return false;
  }
  return true;
}

// Where two byte strings first differ, for a failure message.
std::string firstDifference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  const auto m = std::mismatch(got.begin(), got.end(), want.begin(), want.end());
  return "received " + std::to_string(got.size()) + " of " + std::to_string(want.size()) +
         " bytes, first difference at offset " + std::to_string(m.first - got.begin());
}

// ---------------------------------------------------------------------------

class GuestTest : public ::testing::TestWithParam<Switch> {
 protected:
  explicit GuestTest(bool vnetHdr) : vnetHdr_(vnetHdr), addr_(addressesFor(vnetHdr)) {}

  void SetUp() override {
    e2e::requireRoot();
    if (IsSkipped()) return;
    if (qemuBinary().empty())
      GTEST_SKIP() << "qemu-system-x86_64 not installed (scripts/install-deps.sh installs qemu-system-x86)";
    if (GetParam() != Switch::kBridge && e2e::vdevdBinary().empty())
      GTEST_SKIP() << "vdevd not built (no CMake target 'vdevd') and $VDEVD not set";
    const ImageOutcome& image = guestImage();
    if (image.skip) GTEST_SKIP() << image.problem;
    ASSERT_TRUE(image.image) << image.problem;
    if (blob_.empty()) blob_ = readBytes(image.image->blob());
    ASSERT_EQ(blob_.size(), 1u << 20) << image.image->blob();

    guest_ = bootGuest(*image.image);
    ASSERT_NE(guest_, nullptr) << suiteGuests()[vnetHdr_].error;
    // What the test is about: QEMU's default tap gives the guest checksum
    // and segmentation offload; vnet_hdr=off gives it none.
    EXPECT_EQ(guest_->virtioFeature(0), vnetHdr_) << "VIRTIO_NET_F_CSUM: " << guest_->readyLine();
    EXPECT_EQ(guest_->virtioFeature(11), vnetHdr_) << "VIRTIO_NET_F_HOST_TSO4: " << guest_->readyLine();

    ns_ = std::make_unique<e2e::Netns>();
    veth_ = std::make_unique<e2e::VethPair>(*ns_);
    ns_->ip("addr add " + addr_.container + "/24 dev " + veth_->peerName());

    if (const char* dir = std::getenv("VDEV_QEMU_PCAP"); dir && *dir) {
      std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
      std::replace(test.begin(), test.end(), '/', '-');
      test = std::string(vnetHdr_ ? "QemuDefaults-" : "VnetHdrOff-") + test;
      const std::string base = std::string(dir) + "/" + test;
      captures_.push_back(std::make_unique<Capture>(base + ".tap.pcap", guest_->tap(), nullptr));
      captures_.push_back(std::make_unique<Capture>(base + ".veth.pcap", veth_->hostName(), nullptr));
      captures_.push_back(std::make_unique<Capture>(base + ".ctr.pcap", veth_->peerName(), ns_.get()));
    }

    if (GetParam() == Switch::kBridge) {
      bridge_ = std::make_unique<Bridge>();
      bridge_->enslave(guest_->tap());
      bridge_->enslave(veth_->hostName());
    } else {
      const bool fast = GetParam() == Switch::kVdevdFastPath;
      vdevdDir_ = std::make_unique<e2e::TempDir>();
      std::vector<std::string> args = {"--port", guest_->tap(), "--port", veth_->hostName(),
                                       "--socket", vdevdDir_->file("vdevd.sock"),
                                       "--state", vdevdDir_->file("vdevd.state")};
      // vdevd's own default hook (the e2e harness otherwise asks for XDP).
      args.push_back("--default-hook");
      args.push_back("auto");
      if (!fast) args.push_back("--no-fast-path");
      vdevd_ = std::make_unique<e2e::Vdevd>(args);
    }
    // The container is new (new MAC): forget the last one.
    const GuestReply r = guestRun(*guest_, "ip neigh flush dev eth0", 30s);
    ASSERT_EQ(r.rc, 0) << r.text();
  }

  void TearDown() override {
    if (vdevd_) {
      if (vdevd_->running()) {
        EXPECT_EQ(vdevd_->stop(), 0) << "vdevd exit status\n" << vdevd_->logs();
      }
      vdevd_.reset();
    }
    captures_.clear();
    bridge_.reset();
    veth_.reset();
    ns_.reset();
    if (guest_) {
      // The guest outlives the test: leave it with nothing attached and no
      // server of this test still listening.
      e2e::tryRun("ip link set dev " + guest_->tap() + " nomaster");
      e2e::tryRun("ip link set dev " + guest_->tap() + " xdp off");
      if (HasFailure()) {
        try {
          guestRun(*guest_, "killall nc 2>/dev/null; true", 30s);
        } catch (const std::exception& e) {
          ADD_FAILURE() << "cleaning up the guest: " << e.what();
        }
      }
    }
  }

  QemuGuest* bootGuest(const GuestImage& image) {
    SuiteGuest& g = suiteGuests()[vnetHdr_];
    if (!g.tried) {
      g.tried = true;
      GuestOptions o;
      o.tap = e2e::uniqueName('g');
      o.mac = e2e::macString(e2e::uniqueMac());
      o.address = addr_.guest + "/24";
      o.vnetHdr = vnetHdr_;
      const auto t0 = Clock::now();
      auto booted = QemuGuest::boot(image, o, e2e::macString(e2e::uniqueMac()));
      if (booted) {
        g.guest = std::move(*booted);
        std::cerr << "qemu: guest ready in "
                  << std::chrono::duration_cast<Millis>(Clock::now() - t0).count() << " ms: "
                  << g.guest->readyLine() << "\n";
      } else {
        g.error = "the guest did not boot: " + booted.error().message();
      }
    }
    return g.guest.get();
  }

  // What the two stacks and vdevd counted, for a failure message.
  std::string diagnosis() {
    std::string d = "\ncontainer: " +
                    e2e::tryRun("ip netns exec " + ns_->name() +
                                " nstat -asz TcpInSegs TcpOutSegs TcpRetransSegs TcpInCsumErrors 2>&1 | tail -n +2 | tr -s ' ' | tr '\\n' ';'")
                        .out;
    try {
      const GuestReply r = guestRun(*guest_, "grep '^Tcp:' /proc/net/snmp", 30s);
      d += "\nguest /proc/net/snmp:\n" + r.text();
    } catch (const std::exception& e) {
      d += std::string("\nguest: ") + e.what();
    }
    if (vdevd_ && vdevd_->running()) {
      try {
        const e2e::Stats s = vdevd_->stats();
        for (const auto& p : s.ports) {
          d += "\nvdevd port " + p.name + ": rx " + std::to_string(p[stats::kRxPackets]) + " tx " +
               std::to_string(p[stats::kTxPackets]) + " drops " + std::to_string(p.totalDrops());
          for (const stats::CounterDef& c : stats::kPortCounters)
            if (c.group() == "xdp_prog" && p[c]) d += std::string(" ") + c.path + " " + std::to_string(p[c]);
        }
      } catch (const std::exception& e) {
        d += std::string("\nvdevd stats: ") + e.what();
      }
    }
    return d + "\nguest console:\n" + guest_->consoleTail(20);
  }

  void checkPing() {
    const GuestReply g = guestRun(*guest_, "ping -c 3 -w 30 " + addr_.container, 60s);
    EXPECT_EQ(g.rc, 0) << g.text();
    EXPECT_NE(g.text().find(" 3 packets received"), std::string::npos)
        << "guest -> container:\n" << g.text();
    const CmdResult c = e2e::tryRun("ip netns exec " + ns_->name() + " ping -n -c 3 -i 0.2 -w 30 " + addr_.guest);
    EXPECT_TRUE(c.ok()) << c.out << c.err;
    EXPECT_NE(c.out.find(" 3 received"), std::string::npos) << "container -> guest:\n" << c.out << c.err;
  }

  // Gives the guest and the container IPv6 addresses (kAddresses6): the
  // harness makes its devices with IPv6 off, the guest keeps its address
  // between tests.
  void useIpv6() {
    ns_->ip("link set dev " + veth_->peerName() + " down");
    e2e::run("ip netns exec " + ns_->name() + " sysctl -qw net.ipv6.conf." + veth_->peerName() +
             ".disable_ipv6=0");
    ns_->ip("-6 addr add " + kAddresses6.container + "/64 dev " + veth_->peerName() + " nodad");
    ns_->ip("link set dev " + veth_->peerName() + " up");
    // The guest boots with IPv6 off; busybox ip has no nodad, so the guest
    // skips duplicate address detection instead. The address stays from an
    // earlier test ("add" then fails).
    const GuestReply r = guestRun(*guest_, "echo 0 > /proc/sys/net/ipv6/conf/eth0/accept_dad; "
                                     "echo 0 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6; ip -6 addr add " +
                                         kAddresses6.guest + "/64 dev eth0 2>/dev/null; ip -6 addr show dev eth0 | grep -q " +
                                         kAddresses6.guest + "/64",
                                     30s);
    ASSERT_EQ(r.rc, 0) << "the guest has no IPv6 address: "
                       << guestRun(*guest_, "ip -6 addr add " + kAddresses6.guest + "/64 dev eth0 2>&1", 30s).text();
    addr_ = kAddresses6;
  }

  void checkTcpGuestToContainer() {
    const SockAddr local = inetAddress(addr_.container, kFromGuestPort);
    auto sock = containerSocket(*ns_, local.family());
    ASSERT_TRUE(sock.ok()) << sock.error().message();
    const int one = 1;
    ::setsockopt(sock->get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ASSERT_EQ(::bind(sock->get(), local.get(), local.len), 0) << std::strerror(errno);
    ASSERT_EQ(::listen(sock->get(), 1), 0) << std::strerror(errno);

    const int id = guestStart(*guest_, "timeout 120 nc -w 20 " + addr_.container + " " +
                                 std::to_string(kFromGuestPort) + " < /srv/blob");
    const auto connectBy = Clock::now() + kConnectDeadline;
    FileDesc conn;
    if (pollFor(sock->get(), POLLIN, connectBy))
      conn = FileDesc(::accept4(sock->get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn.valid()) {
      const std::string why = diagnosis();
      guestRun(*guest_, "killall nc 2>/dev/null; true", 30s);
      const GuestReply r = guestWait(*guest_, id, 30s);
      FAIL() << "TCP guest -> container: no connection completed within "
             << kConnectDeadline.count() / 1000 << " s (guest nc rc=" << r.rc << ": " << r.text() << ")"
             << why;
    }
    std::vector<uint8_t> got;
    const bool eof = readToEof(conn.get(), got, Clock::now() + kTransferDeadline);
    conn.reset();  // the guest's nc exits when we close
    const GuestReply r = guestWait(*guest_, id, 60s);
    EXPECT_TRUE(eof) << "no EOF within " << kTransferDeadline.count() / 1000 << " s; "
                     << firstDifference(got, blob_) << diagnosis();
    EXPECT_TRUE(got == blob_) << firstDifference(got, blob_);
    EXPECT_EQ(r.rc, 0) << "guest nc: " << r.text();
  }

  void checkTcpContainerToGuest() {
    const int id = guestStart(*guest_, "rm -f /tmp/rx; timeout 120 nc -l -p " + std::to_string(kToGuestPort) +
                                 " > /tmp/rx; cmp /tmp/rx /srv/blob && echo identical");
    const SockAddr peer = inetAddress(addr_.guest, kToGuestPort);
    const auto connectBy = Clock::now() + kConnectDeadline;
    FileDesc conn;
    std::string lastError = "no attempt";
    // The guest's listener starts a moment after the command is sent: a
    // refused connection is tried again.
    while (!conn.valid() && Clock::now() < connectBy) {
      auto sock = containerSocket(*ns_, peer.family());
      ASSERT_TRUE(sock.ok()) << sock.error().message();
      int err = 0;
      if (::connect(sock->get(), peer.get(), peer.len) < 0) {
        err = errno;
        if (err == EINPROGRESS) {
          err = ETIMEDOUT;
          if (pollFor(sock->get(), POLLOUT, connectBy)) {
            socklen_t len = sizeof err;
            ::getsockopt(sock->get(), SOL_SOCKET, SO_ERROR, &err, &len);
          }
        }
      }
      if (err == 0) {
        conn = std::move(*sock);
        break;
      }
      lastError = std::strerror(err);
      if (err == ECONNREFUSED) std::this_thread::sleep_for(200ms);
    }
    if (!conn.valid()) {
      const std::string why = diagnosis();
      guestRun(*guest_, "killall nc 2>/dev/null; true", 30s);
      const GuestReply r = guestWait(*guest_, id, 30s);
      FAIL() << "TCP container -> guest: no connection completed within "
             << kConnectDeadline.count() / 1000 << " s (last: " << lastError << "; guest rc=" << r.rc
             << ": " << r.text() << ")" << why;
    }
    const auto by = Clock::now() + kTransferDeadline;
    const bool sent = writeAll(conn.get(), blob_, by);
    ::shutdown(conn.get(), SHUT_WR);
    std::vector<uint8_t> back;
    const bool eof = sent && readToEof(conn.get(), back, by);
    conn.reset();
    const GuestReply r = guestWait(*guest_, id, 60s);
    EXPECT_TRUE(sent && eof) << "the transfer did not finish within " << kTransferDeadline.count() / 1000
                             << " s" << diagnosis();
    EXPECT_TRUE(back.empty()) << back.size() << " unexpected bytes from the guest";
    // cmp in the guest: the bytes it received are /srv/blob's, which are blob_.
    EXPECT_EQ(r.rc, 0) << "guest: " << r.text();
    EXPECT_NE(r.text().find("identical"), std::string::npos) << r.text();
  }

  bool vnetHdr_;
  Addresses addr_;
  static inline std::vector<uint8_t> blob_;
  QemuGuest* guest_ = nullptr;
  std::unique_ptr<e2e::Netns> ns_;
  std::unique_ptr<e2e::VethPair> veth_;
  std::vector<std::unique_ptr<Capture>> captures_;
  std::unique_ptr<Bridge> bridge_;
  std::unique_ptr<e2e::TempDir> vdevdDir_;
  std::unique_ptr<e2e::Vdevd> vdevd_;
};

// QEMU's default tap: vnet_hdr on, offloads on.
class QemuDefaults : public GuestTest {
 public:
  QemuDefaults() : GuestTest(true) {}
  static void TearDownTestSuite() { suiteGuests().erase(true); }
};

// -netdev tap,...,vnet_hdr=off: no offloads (docs/vm.md).
class VnetHdrOff : public GuestTest {
 public:
  VnetHdrOff() : GuestTest(false) {}
  static void TearDownTestSuite() { suiteGuests().erase(false); }
};

TEST_P(QemuDefaults, Ping) { checkPing(); }
TEST_P(QemuDefaults, TcpGuestToContainer) { checkTcpGuestToContainer(); }
TEST_P(QemuDefaults, TcpContainerToGuest) { checkTcpContainerToGuest(); }
TEST_P(QemuDefaults, Tcp6GuestToContainer) {
  ASSERT_NO_FATAL_FAILURE(useIpv6());
  checkTcpGuestToContainer();
}
TEST_P(QemuDefaults, Tcp6ContainerToGuest) {
  ASSERT_NO_FATAL_FAILURE(useIpv6());
  checkTcpContainerToGuest();
}
TEST_P(VnetHdrOff, Ping) { checkPing(); }
TEST_P(VnetHdrOff, TcpGuestToContainer) { checkTcpGuestToContainer(); }
TEST_P(VnetHdrOff, TcpContainerToGuest) { checkTcpContainerToGuest(); }

const auto kSwitches = ::testing::Values(Switch::kBridge, Switch::kVdevdFastPath, Switch::kVdevdNoFastPath);
std::string paramName(const ::testing::TestParamInfo<Switch>& info) { return switchName(info.param); }
INSTANTIATE_TEST_SUITE_P(Switch, QemuDefaults, kSwitches, paramName);
INSTANTIATE_TEST_SUITE_P(Switch, VnetHdrOff, kSwitches, paramName);

}  // namespace
}  // namespace vdev::qemutest
