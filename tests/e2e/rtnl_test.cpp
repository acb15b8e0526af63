// vdev_rtnl (netlink/rtnl/include/rtnl/link.h, monitor.h) against the real
// kernel: veth pairs into namespaces named three ways, persistent taps that
// an unprivileged process opens like QEMU does, the ownership mark, the link
// monitor, and the error messages.
//
// Every result is checked with tools independent of the code under test
// (`ip -j link`, sysfs, procfs, TUNSETIFF from a child process). Devices are
// named "vr" + pid (base 36) + role + counter and removed in TearDown, pass
// or fail; namespaces are the harness's (removed with everything in them).
// Root only: SKIPPED with the reason otherwise.
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "rtnl/link.h"
#include "rtnl/monitor.h"
#include "rtnl/netdev.h"
#include "testkit/names.h"

namespace {

namespace e2e = vdev::e2e;
namespace rtnl = vdev::rtnl;
using namespace std::chrono_literals;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;
constexpr uid_t kOtherUid = 1;  // "daemon" on Debian; any uid but nobody's
constexpr gid_t kOtherGid = 1;

// "vr" + pid + role + counter (testkit/names.h): at most 2 + 5 + 1 + 2 = 10 bytes.
std::string vrName(char role) { return vdev::testkit::uniqueName("vr", role); }

rtnl::Mac mac(uint8_t last) { return {0x02, 0x72, 0x74, 0x6e, 0x6c, last}; }

std::string readTrimmed(const std::string& path) {
  std::string s = e2e::readFile(path);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool haveIpv6() { return access("/proc/sys/net/ipv6", F_OK) == 0; }

std::string ifalias(const e2e::LinkInfo& li) {
  const nlohmann::json& l = li.raw.at(0);
  return l.contains("ifalias") ? l.at("ifalias").get<std::string>() : "";
}

class RtnlTest : public ::testing::Test {
 protected:
  void SetUp() override { e2e::requireRoot(); }

  void TearDown() override {
    for (const std::string& n : made_)
      if (e2e::linkExists(n)) e2e::tryRun("ip link del dev " + n);
  }

  // A fresh name, deleted at TearDown if it still exists (root namespace).
  std::string newName(char role) {
    std::string n = vrName(role);
    if (e2e::linkExists(n)) e2e::tryRun("ip link del dev " + n);  // stale, same pid
    made_.push_back(n);
    return n;
  }
  void track(const std::string& n) { made_.push_back(n); }

  // Everything createVeth promises, checked from outside.
  void expectVeth(const rtnl::VethInfo& info, const e2e::Netns& ns, const rtnl::Mac& peerMac, int mtu) {
    const e2e::LinkInfo host = e2e::linkInfo(info.name);
    EXPECT_EQ(host.ifindex, info.ifindex);
    EXPECT_EQ(host.mtu, mtu);
    EXPECT_TRUE(host.up);
    EXPECT_EQ(host.address, info.mac);
    EXPECT_EQ(ifalias(host), rtnl::kManagedAlias);
    if (haveIpv6()) {
      EXPECT_EQ(readTrimmed("/proc/sys/net/ipv6/conf/" + info.name + "/disable_ipv6"), "1");
    }

    EXPECT_FALSE(e2e::linkExists(info.peerName)) << "the peer must not be in the root namespace";
    const e2e::LinkInfo peer = e2e::linkInfo(info.peerName, &ns);  // `ip -n NS`
    EXPECT_EQ(peer.ifindex, info.peerIfindex);
    EXPECT_EQ(peer.mtu, mtu);
    EXPECT_TRUE(peer.up);
    EXPECT_EQ(peer.address, peerMac);
    EXPECT_EQ(info.peerMac, peerMac);
    EXPECT_EQ(ifalias(peer), "") << "only the host end is marked";

    // The library's own view from inside the namespace agrees.
    auto st = rtnl::getLink(info.peerName, rtnl::NetnsRef::byName(ns.name()));
    ASSERT_TRUE(st) << st.error().message();
    EXPECT_EQ(st->kind, "veth");
    EXPECT_EQ(st->mtu, mtu);
    EXPECT_EQ(st->mac, peerMac);
    EXPECT_TRUE(st->up);
    EXPECT_FALSE(st->managed);
    EXPECT_EQ(st->linkIfindex, info.ifindex);  // IFLA_LINK: the host end
  }

  std::vector<std::string> made_;
};

// ---------------------------------------------------------------------------
// veth

TEST_F(RtnlTest, VethIntoNetnsByName) {
  e2e::Netns ns;
  const std::string h = newName('h'), p = newName('p');
  auto r = rtnl::createVeth({.name = h,
                             .peerName = p,
                             .peerNetns = rtnl::NetnsRef::byName(ns.name()),
                             .mac = mac(1),
                             .peerMac = mac(2),
                             .mtu = 1400});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->mac, mac(1));
  expectVeth(*r, ns, mac(2), 1400);
  EXPECT_TRUE(rtnl::linkIsManaged(h));

  auto del = rtnl::deleteManagedLink(h);
  ASSERT_TRUE(del) << del.error().message();
  EXPECT_FALSE(e2e::linkExists(h));
  EXPECT_FALSE(e2e::linkExists(p, &ns)) << "deleting the host end deletes the peer";
}

TEST_F(RtnlTest, VethIntoNetnsByPath) {
  e2e::Netns ns;
  const std::string h = newName('h'), p = newName('p');
  auto r = rtnl::createVeth({.name = h,
                             .peerName = p,
                             .peerNetns = rtnl::NetnsRef::byPath("/run/netns/" + ns.name()),
                             .peerMac = mac(3),
                             .mtu = 9000});
  ASSERT_TRUE(r) << r.error().message();
  expectVeth(*r, ns, mac(3), 9000);
}

TEST_F(RtnlTest, VethIntoNetnsByPid) {
  e2e::Netns ns;
  // A process living in ns, as a container's init would.
  int sync[2];
  ASSERT_EQ(pipe2(sync, O_CLOEXEC), 0);
  const std::string nsPath = "/run/netns/" + ns.name();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe calls after fork() in a threaded process.
    int fd = open(nsPath.c_str(), O_RDONLY | O_CLOEXEC);
    char ok = (fd >= 0 && setns(fd, CLONE_NEWNET) == 0) ? 'y' : 'n';
    (void)!write(sync[1], &ok, 1);
    if (ok != 'y') _exit(1);
    pause();
    _exit(0);
  }
  close(sync[1]);
  char ok = 0;
  ASSERT_EQ(read(sync[0], &ok, 1), 1);
  close(sync[0]);
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{child};
  ASSERT_EQ(ok, 'y') << "child could not enter " << nsPath;

  const std::string h = newName('h'), p = newName('p');
  auto r = rtnl::createVeth({.name = h, .peerName = p, .peerNetns = rtnl::NetnsRef::byPid(child),
                             .peerMac = mac(4), .mtu = 1280});
  ASSERT_TRUE(r) << r.error().message();
  expectVeth(*r, ns, mac(4), 1280);
}

TEST_F(RtnlTest, VethWithoutNetnsAndDefaults) {
  const std::string h = newName('h'), p = newName('p');
  auto r = rtnl::createVeth({.name = h, .peerName = p});
  ASSERT_TRUE(r) << r.error().message();
  track(p);
  const e2e::LinkInfo peer = e2e::linkInfo(p);
  EXPECT_EQ(peer.mtu, 1500);
  EXPECT_EQ(r->mtu, 1500);
  EXPECT_EQ(peer.address, r->peerMac);
  EXPECT_EQ(r->peerMac[0] & 0x03, 0x02) << "a random locally administered unicast MAC";
  EXPECT_TRUE(peer.up);
  EXPECT_TRUE(e2e::linkInfo(h).up);
  EXPECT_FALSE(rtnl::linkIsManaged(p));
  EXPECT_TRUE(rtnl::linkIsManaged(h));
}

TEST_F(RtnlTest, VethErrorsAreClearAndLeaveNothing) {
  e2e::Netns ns;
  const std::string h = newName('h'), p = newName('p'), h2 = newName('h'), p2 = newName('p');
  const auto byName = rtnl::NetnsRef::byName(ns.name());
  ASSERT_TRUE(rtnl::createVeth({.name = h, .peerName = p, .peerNetns = byName}));

  // Host name taken.
  auto r = rtnl::createVeth({.name = h, .peerName = p2, .peerNetns = byName});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EEXIST);
  EXPECT_EQ(r.error().message(),
            "create veth " + h + " <-> " + p2 + " in netns " + ns.name() + ": File exists");
  EXPECT_FALSE(e2e::linkExists(p2, &ns));

  // Peer name taken inside the namespace.
  r = rtnl::createVeth({.name = h2, .peerName = p, .peerNetns = byName});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EEXIST) << r.error().message();
  EXPECT_FALSE(e2e::linkExists(h2));

  // No such namespace.
  r = rtnl::createVeth({.name = h2, .peerName = p2, .peerNetns = rtnl::NetnsRef::byName(h2 + "-none")});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, ENOENT);
  EXPECT_EQ(r.error().message(), "create veth " + h2 + " <-> " + p2 + " in netns " + h2 +
                                     "-none: open /run/netns/" + h2 + "-none: No such file or directory");
  // Not a namespace; a namespace of the wrong kind; no such process.
  r = rtnl::createVeth({.name = h2, .peerName = p2, .peerNetns = rtnl::NetnsRef::byPath("/etc/hostname")});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_NE(r.error().message().find("/etc/hostname is not a namespace file"), std::string::npos)
      << r.error().message();
  r = rtnl::createVeth({.name = h2, .peerName = p2, .peerNetns = rtnl::NetnsRef::byPath("/proc/self/ns/uts")});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("is not a network namespace"), std::string::npos) << r.error().message();
  r = rtnl::createVeth({.name = h2, .peerName = p2, .peerNetns = rtnl::NetnsRef::byPid(4194304)});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, ESRCH) << r.error().message();

  // Names: too long (libnl would truncate it silently), or with a slash.
  r = rtnl::createVeth({.name = "vr0123456789abcd", .peerName = p2});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_NE(r.error().message().find("longer than 15 bytes"), std::string::npos) << r.error().message();
  r = rtnl::createVeth({.name = h2, .peerName = "a/b"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EINVAL);

  // MTU beyond the veth maximum: the kernel says why.
  r = rtnl::createVeth({.name = h2, .peerName = p2, .peerNetns = byName, .mtu = 70000});
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().err == EINVAL || r.error().err == ERANGE) << r.error().message();
  std::printf("  MTU 70000 -> %s\n", r.error().message().c_str());

  EXPECT_FALSE(e2e::linkExists(h2));
  EXPECT_FALSE(e2e::linkExists(p2, &ns));
}

// ---------------------------------------------------------------------------
// tap

// A character device node for the tun driver that any user may open. Debian
// makes /dev/net/tun 0666; where it is not (containers often have 0600), a
// node of our own (same major/minor) in a temporary directory stands in, so
// the child still opens it *after* dropping privileges, as QEMU does. If that
// is impossible too (nodev mount, no CAP_MKNOD), the child opens it before
// dropping privileges; TUNSETIFF checks the caller's credentials at the
// ioctl either way, which is what these tests are about.
struct TunNode {
  std::string path = "/dev/net/tun";
  bool openAfterDrop = true;
  std::string note;
  std::unique_ptr<e2e::TempDir> dir;

  TunNode() {
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && (st.st_mode & 0006) == 0006) return;
    dir = std::make_unique<e2e::TempDir>();
    const std::string node = dir->file("tun");
    struct statvfs vfs {};
    if (chmod(dir->path().c_str(), 0755) == 0 && statvfs(dir->path().c_str(), &vfs) == 0 &&
        !(vfs.f_flag & ST_NODEV) && mknod(node.c_str(), S_IFCHR | 0666, makedev(10, 200)) == 0 &&
        chmod(node.c_str(), 0666) == 0) {
      path = node;
      note = "/dev/net/tun is not world read-write here: using a 0666 node at " + node;
      return;
    }
    openAfterDrop = false;
    note = "/dev/net/tun is not world read-write and no node of our own could be made: "
           "the child opens it before dropping privileges";
  }
};

// In a child process that becomes uid/gid (no supplementary groups, no
// capabilities): open the tun device and TUNSETIFF `name` with `flags`,
// `queues` times (each on its own fd). Returns 0 or the errno of the first
// failing step (-1 if the child could not drop privileges or open the node).
int attachAs(const TunNode& tun, const std::string& name, uid_t uid, gid_t gid, short flags, int queues = 1) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int pre = tun.openAfterDrop ? -1 : open(tun.path.c_str(), O_RDWR | O_CLOEXEC);
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(255);
    for (int q = 0; q < queues; q++) {
      int fd = pre >= 0 && q == 0 ? pre : open(tun.path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) _exit(254);
      struct ifreq ifr {};
      std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
      ifr.ifr_flags = flags;
      if (ioctl(fd, TUNSETIFF, &ifr) != 0) _exit(errno & 0xff);
      // Kept open: the next queue attaches next to it.
    }
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  int code = WEXITSTATUS(status);
  return code >= 254 ? -1 : code;
}

TEST_F(RtnlTest, TapOwnedByNobodyOpensLikeQemu) {
  const TunNode tun;
  if (!tun.note.empty()) std::printf("  %s\n", tun.note.c_str());
  const std::string t = newName('t');
  auto r = rtnl::createTap({.name = t, .owner = kNobody, .group = kNogroup, .mac = mac(5), .mtu = 1400});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->name, t);
  EXPECT_EQ(r->mac, mac(5));
  EXPECT_EQ(r->mtu, 1400);

  const e2e::LinkInfo li = e2e::linkInfo(t);
  EXPECT_EQ(li.ifindex, r->ifindex);
  EXPECT_EQ(li.mtu, 1400);
  EXPECT_EQ(li.address, mac(5));
  EXPECT_TRUE(li.up);
  EXPECT_EQ(ifalias(li), rtnl::kManagedAlias);
  EXPECT_EQ(readTrimmed("/sys/class/net/" + t + "/owner"), "65534");
  EXPECT_EQ(readTrimmed("/sys/class/net/" + t + "/group"), "65534");
  if (haveIpv6()) {
    EXPECT_EQ(readTrimmed("/proc/sys/net/ipv6/conf/" + t + "/disable_ipv6"), "1");
  }
  EXPECT_NE(e2e::run("ip -d link show dev " + t).find("persist on"), std::string::npos);

  const short qemuFlags = IFF_TAP | IFF_NO_PI;
  EXPECT_EQ(attachAs(tun, t, kNobody, kNogroup, qemuFlags), 0) << "the owner, in the group, may attach";
  EXPECT_EQ(attachAs(tun, t, kOtherUid, kOtherGid, qemuFlags), EPERM) << "another user may not";
  // With both an owner and a group, the kernel wants both (tun_not_capable).
  EXPECT_EQ(attachAs(tun, t, kNobody, kOtherGid, qemuFlags), EPERM) << "the owner outside the group";
  EXPECT_EQ(attachAs(tun, t, kOtherUid, kNogroup, qemuFlags), EPERM) << "the group without the owner";
  EXPECT_EQ(attachAs(tun, t, kNobody, kNogroup, qemuFlags | IFF_MULTI_QUEUE), EINVAL)
      << "a single-queue tap refuses a multi-queue attach";

  EXPECT_TRUE(e2e::linkExists(t)) << "persistent: survives its users";
  auto del = rtnl::deleteManagedLink(t);
  ASSERT_TRUE(del) << del.error().message();
  EXPECT_FALSE(e2e::linkExists(t));
}

TEST_F(RtnlTest, TapOwnerOnlyMultiQueue) {
  const TunNode tun;
  const std::string t = newName('t');
  auto r = rtnl::createTap({.name = t, .owner = kNobody, .multiQueue = true});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->multiQueue);
  EXPECT_EQ(r->mtu, 1500);
  // No group: the owner attaches whatever its groups.
  EXPECT_EQ(attachAs(tun, t, kNobody, kOtherGid, IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE, 2), 0);
  EXPECT_EQ(attachAs(tun, t, kNobody, kOtherGid, IFF_TAP | IFF_NO_PI), EINVAL)
      << "a multi-queue tap refuses a single-queue attach";
  EXPECT_EQ(attachAs(tun, t, kOtherUid, kNogroup, IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE), EPERM);
}

TEST_F(RtnlTest, TapKernelChosenName) {
  auto r = rtnl::createTap({});
  ASSERT_TRUE(r) << r.error().message();
  track(r->name);
  EXPECT_EQ(r->name.rfind("tap", 0), 0u) << r->name;
  EXPECT_TRUE(rtnl::linkIsManaged(r->name));
  EXPECT_TRUE(rtnl::deleteManagedLink(r->name));
  EXPECT_FALSE(e2e::linkExists(r->name));
}

TEST_F(RtnlTest, ExistingDevicesAreNeverTakenOver) {
  // Someone else's persistent tap: as root, a plain TUNSETIFF would attach to
  // it; createTap must refuse instead (IFF_TUN_EXCL) and leave it unmarked.
  const std::string t = newName('x');
  e2e::run("ip tuntap add dev " + t + " mode tap");
  auto r = rtnl::createTap({.name = t, .owner = kNobody});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EEXIST);
  EXPECT_EQ(r.error().message(), "create tap " + t + ": File exists");
  EXPECT_FALSE(rtnl::linkIsManaged(t));
  EXPECT_EQ(readTrimmed("/sys/class/net/" + t + "/owner"), "-1") << "owner unchanged";

  // ...and a veth pair of the same name.
  const std::string v = newName('x');
  track(v + "b");
  e2e::run("ip link add " + v + " type veth peer name " + v + "b");
  auto r2 = rtnl::createTap({.name = v});
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().err, EEXIST) << r2.error().message();
}

// What decides a port's default hook (datapath::skbSource): which drivers
// run XDP themselves, as the kernel's netdev family reports it.
TEST_F(RtnlTest, NativeXdpAsTheKernelReportsIt) {
  const std::string v = newName('n');
  track(v + "b");
  e2e::run("ip link add " + v + " type veth peer name " + v + "b");
  const std::string x = newName('v');
  e2e::run("ip link add " + x + " type vxlan id 4242 dstport 4789 local 198.18.250.1");
  const std::string d = newName('d');
  e2e::run("ip link add " + d + " type ifb");
  auto veth = rtnl::deviceHasNativeXdp(int(::if_nametoindex(v.c_str())));
  if (!veth && veth.error().err == EOPNOTSUPP) GTEST_SKIP() << veth.error().message();
  ASSERT_TRUE(veth) << veth.error().message();
  EXPECT_TRUE(*veth) << "veth runs XDP in its driver";
  for (const std::string& n : {x, d}) {
    auto r = rtnl::deviceHasNativeXdp(int(::if_nametoindex(n.c_str())));
    ASSERT_TRUE(r) << n << ": " << r.error().message();
    EXPECT_FALSE(*r) << n << " (" << e2e::linkInfo(n).raw.dump() << ") reports native XDP";
  }
  auto none = rtnl::deviceHasNativeXdp(0x7ffffff0);
  ASSERT_FALSE(none) << "no such device";
  EXPECT_EQ(none.error().err, EIO) << none.error().message();
  // Zero-copy AF_XDP (which UMEM registration a port's sockets take): not
  // on veth, VXLAN or ifb.
  for (const std::string& n : {v, x, d}) {
    auto zc = rtnl::deviceOffersXskZerocopy(int(::if_nametoindex(n.c_str())));
    ASSERT_TRUE(zc) << n << ": " << zc.error().message();
    EXPECT_FALSE(*zc) << n << " reports zero-copy AF_XDP";
  }
  EXPECT_FALSE(rtnl::deviceOffersXskZerocopy(0x7ffffff0)) << "no such device";
}

TEST_F(RtnlTest, DeleteRefusesUnmanagedDevices) {
  const std::string t = newName('u');
  e2e::run("ip tuntap add dev " + t + " mode tap");
  auto del = rtnl::deleteManagedLink(t);
  ASSERT_FALSE(del);
  EXPECT_EQ(del.error().err, EPERM);
  EXPECT_EQ(del.error().message(), "delete link " + t +
                                       ": not created by vdev (its alias is empty, not 'vdev:managed'): "
                                       "Operation not permitted");
  EXPECT_TRUE(e2e::linkExists(t));

  // An alias, but not the mark.
  e2e::run("ip link set dev " + t + " alias vdev:something");
  del = rtnl::deleteManagedLink(t);
  ASSERT_FALSE(del);
  EXPECT_EQ(del.error().err, EPERM);
  EXPECT_NE(del.error().message().find("'vdev:something'"), std::string::npos) << del.error().message();
  EXPECT_TRUE(e2e::linkExists(t));

  // The operator can hand a device over by marking it.
  e2e::run("ip link set dev " + t + " alias vdev:managed");
  EXPECT_TRUE(rtnl::linkIsManaged(t));
  EXPECT_TRUE(rtnl::deleteManagedLink(t));
  EXPECT_FALSE(e2e::linkExists(t));

  // Nothing there.
  del = rtnl::deleteManagedLink(t);
  ASSERT_FALSE(del);
  EXPECT_EQ(del.error().err, ENODEV);
  EXPECT_EQ(del.error().message(), "delete link " + t + ": No such device");
  EXPECT_FALSE(rtnl::deleteManagedLink("lo")) << "never the loopback";
  EXPECT_TRUE(e2e::linkExists("lo"));
}

TEST_F(RtnlTest, Queries) {
  auto lo = rtnl::ifindexOf("lo");
  ASSERT_TRUE(lo) << lo.error().message();
  EXPECT_EQ(*lo, 1);
  EXPECT_TRUE(rtnl::linkExists("lo"));
  EXPECT_FALSE(rtnl::linkIsManaged("lo"));

  const std::string missing = newName('q');
  auto r = rtnl::ifindexOf(missing);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, ENODEV);
  EXPECT_EQ(r.error().message(), "look up link " + missing + ": No such device");
  EXPECT_FALSE(rtnl::linkExists(missing));
  EXPECT_FALSE(rtnl::linkIsManaged(missing));

  auto t = rtnl::createTap({.name = missing});
  ASSERT_TRUE(t) << t.error().message();
  auto st = rtnl::getLink(missing);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(st->kind, "tun");
  EXPECT_EQ(st->ifindex, t->ifindex);
  EXPECT_EQ(st->alias, rtnl::kManagedAlias);
  EXPECT_TRUE(st->up);
  EXPECT_FALSE(st->carrier) << "nobody holds the tap";
  auto idx = rtnl::ifindexOf(missing);
  ASSERT_TRUE(idx) << idx.error().message();
  EXPECT_EQ(*idx, t->ifindex);
}

// ---------------------------------------------------------------------------
// LinkMonitor

// Reads events until pred(events) holds or `timeout` passes.
bool collectUntil(rtnl::LinkMonitor& mon, std::vector<rtnl::LinkEvent>& events,
                  const std::function<bool(const std::vector<rtnl::LinkEvent>&)>& pred,
                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred(events)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= 0ms) return false;
    pollfd p{mon.fd(), POLLIN, 0};
    if (poll(&p, 1, int(left.count())) <= 0) continue;
    auto n = mon.processEvents([&](const rtnl::LinkEvent& e) { events.push_back(e); });
    if (!n) ADD_FAILURE() << n.error().message();
  }
  return true;
}

TEST_F(RtnlTest, LinkMonitorSeesNewAndDel) {
  auto mon = rtnl::LinkMonitor::open();
  ASSERT_TRUE(mon) << mon.error().message();
  // Nothing waiting: returns at once (non-blocking).
  auto none = mon->processEvents([](const rtnl::LinkEvent&) {});
  ASSERT_TRUE(none) << none.error().message();

  std::vector<rtnl::LinkEvent> ev;
  const std::string t = newName('m');
  auto has = [&](rtnl::LinkEvent::Type type, const std::function<bool(const rtnl::LinkEvent&)>& f) {
    return [=](const std::vector<rtnl::LinkEvent>& es) {
      for (const auto& e : es)
        if (e.type == type && e.name == t && f(e)) return true;
      return false;
    };
  };

  e2e::run("ip tuntap add dev " + t + " mode tap");
  const int ifindex = e2e::linkInfo(t).ifindex;
  ASSERT_TRUE(collectUntil(*mon, ev, has(rtnl::LinkEvent::Type::kNew, [&](const auto& e) {
    return e.ifindex == ifindex && !e.up;
  }), 5s)) << "no NEW event for " << t;

  e2e::run("ip link set dev " + t + " mtu 1300 up");
  ASSERT_TRUE(collectUntil(*mon, ev, has(rtnl::LinkEvent::Type::kNew, [&](const auto& e) {
    return e.ifindex == ifindex && e.up && !e.carrier && e.mtu == 1300;
  }), 5s)) << "no NEW event for " << t << " up with MTU 1300";

  // The daemon's resynchronisation view has it too.
  bool inSnapshot = false, loInSnapshot = false;
  auto snap = mon->snapshot([&](const rtnl::LinkEvent& e) {
    if (e.name == t && e.ifindex == ifindex && e.up) inSnapshot = true;
    if (e.name == "lo" && e.ifindex == 1) loInSnapshot = true;
  });
  ASSERT_TRUE(snap) << snap.error().message();
  EXPECT_TRUE(inSnapshot);
  EXPECT_TRUE(loInSnapshot);

  e2e::run("ip link del dev " + t);
  ASSERT_TRUE(collectUntil(*mon, ev, has(rtnl::LinkEvent::Type::kDel, [&](const auto& e) {
    return e.ifindex == ifindex;
  }), 5s)) << "no DEL event for " << t;
}

TEST_F(RtnlTest, LinkMonitorSeesOnlyItsNamespace) {
  auto mon = rtnl::LinkMonitor::open();
  ASSERT_TRUE(mon) << mon.error().message();
  e2e::Netns ns;
  const std::string h = newName('h'), p = newName('p');
  auto r = rtnl::createVeth({.name = h, .peerName = p, .peerNetns = rtnl::NetnsRef::byName(ns.name())});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(rtnl::deleteManagedLink(h));

  std::vector<rtnl::LinkEvent> ev;
  auto sawHostDel = [&](const std::vector<rtnl::LinkEvent>& es) {
    for (const auto& e : es)
      if (e.type == rtnl::LinkEvent::Type::kDel && e.name == h) return true;
    return false;
  };
  ASSERT_TRUE(collectUntil(*mon, ev, sawHostDel, 5s));
  bool sawUp = false;
  for (const auto& e : ev) {
    EXPECT_NE(e.name, p) << "the peer lives in another namespace";
    if (e.name == h && e.type == rtnl::LinkEvent::Type::kNew && e.up) sawUp = true;
  }
  EXPECT_TRUE(sawUp) << "the host end came up";
}

}  // namespace
