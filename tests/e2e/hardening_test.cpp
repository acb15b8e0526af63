// vdevd's control plane under hostile or careless input, end to end
// (README "Reliability and security"): a FIFO given as a namespace, names
// the kernel takes as patterns, what a member of --group may and may not
// do, a port whose device is gone meeting a device that took its name, a
// damaged state file, a state directory that does not exist yet, the
// open-file limit, vdev-cni's VERSION with libcni's placeholders, bytes
// that are not UTF-8, and GC between networks whose port names collide.
//
// Everything runs against a vdevd started by the test with its own socket
// and state file; unprivileged clients run as nobody (uid 65534) with
// vdevd's --group nogroup.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <set>
#include <thread>

#include "cni_plugin.h"
#include "harness.h"
#include "vdevctl_fixture.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

using Clock = std::chrono::steady_clock;
// Devices that vdevd makes for a test, deleted at the end whatever happens.
class Devices {
 public:
  explicit Devices(std::vector<std::string> names) : names_(std::move(names)) {}
  ~Devices() {
    for (const auto& n : names_)
      if (linkExists(n)) tryRun("ip link del dev " + shellQuote(n));
  }

 private:
  std::vector<std::string> names_;
};

class HardeningTest : public VdevctlFixture {
 protected:
  // `vdevctl ARGS` as nobody is refused with EPERM, naming `rule`.
  void expectRefused(const std::vector<std::string>& args, const std::string& rule) {
    const CmdResult r = ctl(args, kNobodyCreds);
    EXPECT_EQ(r.status, 1) << describe(args, r);
    EXPECT_NE(r.err.find("Operation not permitted"), std::string::npos) << describe(args, r);
    EXPECT_NE(r.err.find(rule), std::string::npos) << describe(args, r);
  }
  // The port's object in a fresh `port show -j`, or nullptr (valid until
  // the next call).
  const Json* port(const std::string& name) {
    ports_ = json({"port", "show"});
    return findPort(ports_, name);
  }

  Json ports_;
};

// A FIFO named as the peer's namespace used to block vdevd's control
// thread in open(): every later request timed out and SIGTERM went
// unanswered. Now it is refused at once and vdevd carries on.
TEST_F(HardeningTest, FifoAsNamespaceIsRefusedAtOnceAndVdevdStaysResponsive) {
  const std::string fifo = dir_.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const std::string vc = uniqueName('c');
  Devices guard({vc});
  auto d = startVdevd();
  const auto t0 = Clock::now();
  const CmdResult r = ctl({"port", "add", vc, "type", "veth", "create", "netns", fifo}, {}, 10s);
  EXPECT_LT(Clock::now() - t0, 5s) << describe({"port", "add"}, r);
  EXPECT_EQ(r.status, 1) << describe({"port", "add"}, r);
  EXPECT_NE(r.err.find("not a namespace file"), std::string::npos) << r.err;
  EXPECT_FALSE(linkExists(vc));
  // A regular file and /dev/null are refused the same way, without being opened.
  std::ofstream(dir_.file("plain")) << "not a namespace\n";
  for (const std::string& bad : {dir_.file("plain"), std::string("/dev/null")}) {
    const CmdResult b = ctl({"port", "add", vc, "type", "veth", "create", "netns", bad}, {}, 10s);
    EXPECT_EQ(b.status, 1) << describe({"port", "add", "netns", bad}, b);
    EXPECT_NE(b.err.find("not a namespace file"), std::string::npos) << b.err;
  }
  EXPECT_TRUE(ctl({"info"}, {}, 5s).ok()) << "vdevd stopped answering";
  expectCleanStop(*d, 5s);
}

// vdevd started by hand on a fresh host: the state directory did not exist
// and every run-time port add failed writing the state file.
TEST_F(HardeningTest, CreatesItsStateDirectory) {
  const std::string stateDir = dir_.file("var/lib/vdev");
  const std::string vt = uniqueName('t');
  Devices guard({vt});
  auto d = std::make_unique<Vdevd>(std::vector<std::string>{"--socket", sock_, "--state", stateDir + "/vdevd.state"});
  ok({"port", "add", vt, "type", "tap", "create"});
  struct stat st {};
  ASSERT_EQ(::lstat(stateDir.c_str(), &st), 0) << std::strerror(errno);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_NE(readFile(stateDir + "/vdevd.state").find("name=" + vt), std::string::npos);
  // A run-time port add prints no libbpf warning (the IPv6 map's key is a
  // BTF-described struct: libbpf no longer retries the map without BTF).
  EXPECT_EQ(d->child().err().find("Retrying without BTF"), std::string::npos) << d->logs();
  EXPECT_EQ(d->child().err().find("libbpf:"), std::string::npos) << d->logs();
  ok({"port", "del", vt});
  expectCleanStop(*d);
}

// '%' made the kernel create vd0/vp0 for "vd%d"/"vp%d"; vdevd then looked
// for vd%d, failed, and left the pair behind.
TEST_F(HardeningTest, PercentInNamesIsRefusedAndNothingIsCreated) {
  auto d = startVdevd();
  const auto present = [] {
    std::string s;
    for (const char* n : {"vd0", "vp0", "vt0", "vdx0"}) s += linkExists(n) ? "1" : "0";
    return s;
  };
  const std::string before = present();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"port", "add", "vd%d", "type", "veth", "create", "peer", "vp%d"},
        std::vector<std::string>{"port", "add", "vdx0", "type", "veth", "create", "peer", "vp%d"},
        std::vector<std::string>{"port", "add", "vt%d", "type", "tap", "create"}}) {
    const CmdResult r = ctl(args);
    EXPECT_EQ(r.status, 2) << describe(args, r);
    EXPECT_NE(r.err.find("'%'"), std::string::npos) << describe(args, r);
  }
  EXPECT_EQ(present(), before) << "a device was created";
  EXPECT_EQ(json({"port", "show"}).size(), 0u);
  expectCleanStop(*d);
}

// What a member of --group may do: only what is its own (docs/vdevctl.md
// "Who may do what").
TEST_F(HardeningTest, GroupMembersChangeOnlyWhatIsTheirOwn) {
  Netns rootNs;
  VethPair uplink(rootNs);  // an existing device: not theirs to attach
  const std::string mine = uniqueName('t'), rootTap = uniqueName('t'), stolen = uniqueName('t'),
                    vc = uniqueName('c');
  Devices guard({mine, rootTap, stolen, vc});
  auto d = startVdevd({"--group", "nogroup"});
  ok({"port", "add", rootTap, "type", "tap", "create"});

  expectRefused({"port", "add", uplink.hostName(), "type", "netdev"}, "only root may set attach on a port");
  expectRefused({"port", "add", stolen, "type", "tap", "create", "owner", "root"}, "owned by the caller");
  expectRefused({"port", "add", stolen, "type", "tap", "create", "group", "root"}, "one of the caller's");
  expectRefused({"port", "add", vc, "type", "veth", "create"}, "vdevd's namespace is root's");
  expectRefused({"port", "add", vc, "type", "veth", "create", "netns", rootNs.name()}, "administered by uid 0");
  // A process of root's in a namespace root made.
  Child rootSleeper("root-sleeper", {"/usr/bin/nsenter", "--net=/run/netns/" + rootNs.name(), "/bin/sleep", "60"});
  ASSERT_TRUE(waitUntil([&] {
    return run("readlink /proc/" + std::to_string(rootSleeper.pid()) + "/ns/net || true") !=
           run("readlink /proc/self/ns/net");
  }, 3s, 20ms));
  const std::string rootPid = std::to_string(rootSleeper.pid());
  expectRefused({"port", "add", vc, "type", "veth", "create", "netns", "pid", rootPid}, "administered by uid 0");
  // A path is root's: vdevd would open it as root, so a file that exists,
  // a missing one and a namespace file all get the same refusal.
  for (const std::string& path : {"/proc/" + rootPid + "/ns/net", std::string("/etc/sudoers.d/README"),
                                 "/nonexistent-" + vc + "/x"}) {
    const CmdResult r = ctl({"port", "add", vc, "type", "veth", "create", "netns", path}, kNobodyCreds);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("members may give a namespace by name under /run/netns or by a pid of their own"),
              std::string::npos) << path << ": " << r.err;
    EXPECT_EQ(r.err.find("No such file"), std::string::npos) << path << ": " << r.err;
    EXPECT_EQ(r.err.find("not a namespace"), std::string::npos) << path << ": " << r.err;
  }
  expectRefused({"port", "del", rootTap}, "added by uid 0");
  expectRefused({"fdb", "add", macString(uniqueMac()), "port", rootTap}, "only root may add MAC table entries");
  expectRefused({"fdb", "del", macString(uniqueMac())}, "only root may delete MAC table entries");
  EXPECT_FALSE(linkExists(stolen));
  EXPECT_FALSE(linkExists(vc));
  EXPECT_EQ(json({"port", "show"}).size(), 1u);

  // Their own tap: owned by them even without "owner".
  ok({"port", "add", mine, "type", "tap", "create"}, kNobodyCreds);
  EXPECT_EQ(readFile("/sys/class/net/" + mine + "/owner"), "65534\n");
  const Json* p = port(mine);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->at("owner_uid").get<uint64_t>(), kNobody);
  EXPECT_NE(readFile(state_).find("name=" + mine), std::string::npos);
  EXPECT_NE(readFile(state_).find("uid=65534"), std::string::npos) << readFile(state_);

  // Restarted: the owner is remembered.
  ASSERT_TRUE(expectCleanStop(*d));
  d = startVdevd({"--group", "nogroup"});
  const CmdResult r = ctl({"port", "del", rootTap}, kNobodyCreds);
  EXPECT_EQ(r.status, 1) << describe({"port", "del", rootTap}, r);
  ok({"port", "del", mine}, kNobodyCreds);
  EXPECT_FALSE(linkExists(mine));
  ok({"port", "del", rootTap});
  expectCleanStop(*d);
}

// A member's port add used to set what only root may change: a trunk of
// every VLAN, the policer and storm control off. Refused now, naming the
// fields, with nothing left behind; its plain tap gets vdevd's defaults,
// which it may not change with port set either. A saved record of a
// member's port that sets a field only root may set at add (written by a
// vdevd before this check, or by hand) is not restored.
TEST_F(HardeningTest, GroupMembersSetOnlyTheirOwnFields) {
  const std::string vt = uniqueName('t'), forged = uniqueName('t');
  Devices guard({vt, forged});
  const std::vector<std::string> opts = {"--group", "nogroup", "--storm-bcast", "500", "--police-pps", "20000"};
  auto d = startVdevd(opts);
  const std::string stateBefore = readFile(state_);

  expectRefused({"port", "add", vt, "type", "tap", "trunk", "1-4094", "police-pps", "0", "storm-bcast", "0", "create"},
                "only root may set trunk, storm-bcast, police-pps on a port");
  expectRefused({"port", "add", vt, "type", "tap", "hook", "xdp", "create"}, "only root may set hook");
  expectRefused({"port", "add", vt, "type", "tap", "vlan", "10", "isolated", "off", "create"},
                "only root may set isolated, vlan/native");
  EXPECT_FALSE(linkExists(vt));
  EXPECT_EQ(json({"port", "show"}).size(), 0u);
  EXPECT_EQ(readFile(state_), stateBefore);

  // Its plain tap (and the fields of its own device): vdevd's defaults.
  ok({"port", "add", vt, "type", "tap", "create", "mtu", "1400"}, kNobodyCreds);
  const auto expectDefaults = [&](const std::string& why) {
    const Json* p = port(vt);
    ASSERT_TRUE(p) << why;
    EXPECT_EQ(p->at("owner_uid").get<uint64_t>(), kNobody) << why;
    EXPECT_EQ(p->at("mtu").get<uint64_t>(), 1400u) << why;
    EXPECT_FALSE(p->at("isolated").get<bool>()) << why;
    const Json& l = p->at("limits");
    EXPECT_EQ(l.at("police_pps").get<uint64_t>(), 20000u) << why << ": " << l.dump();
    EXPECT_EQ(l.at("storm_bcast_pps").get<uint64_t>(), 500u) << why << ": " << l.dump();
    EXPECT_FALSE(l.contains("vlan")) << why << ": " << l.dump();
  };
  expectDefaults("added");
  expectRefused({"port", "set", vt, "police-pps", "0"}, "only root may set police-pps on a port");
  expectRefused({"port", "set", vt, "trunk", "1-4094"}, "only root may set trunk on a port");
  expectDefaults("after the refused port set");

  // A forged record of nobody's with a hook, beside its real one: the
  // forged one is left out at start and said so; the real one comes back.
  ASSERT_TRUE(expectCleanStop(*d));
  {
    std::ofstream f(state_, std::ios::app);
    f << "port name=" << forged << " type=tap queues=0 xdp-mode=auto managed=1 uid=65534 hook=xdp\n";
  }
  d = startVdevd(opts);
  const Json info = json({"info"});
  std::string issues;
  for (const Json& i : info.at("start_issues")) issues += i.get<std::string>() + "\n";
  EXPECT_NE(issues.find("port " + forged), std::string::npos) << issues;
  EXPECT_NE(issues.find("only root may set"), std::string::npos) << issues;
  EXPECT_FALSE(port(forged));
  EXPECT_EQ(readFile(state_).find("name=" + forged), std::string::npos) << readFile(state_);
  expectDefaults("restored");
  // Root may.
  ok({"port", "set", vt, "police-pps", "0"});
  EXPECT_EQ((*port(vt)).at("limits").at("police_pps").get<uint64_t>(), 0u);
  ok({"port", "del", vt}, kNobodyCreds);
  EXPECT_FALSE(linkExists(vt));
  expectCleanStop(*d);
}

// A member could add ports without end, and so fill the MAC table and
// vdevd's memory; now each non-root uid is capped (--uid-max-*). Its third
// port add is refused naming the cap and its use, with nothing left behind;
// root is not capped; `info -j` shows the caps and the use; a capture
// beyond --uid-max-capture is refused before anything is made.
TEST_F(HardeningTest, GroupMembersAreCappedPerUid) {
  const std::string t1 = uniqueName('t'), t2 = uniqueName('t'), t3 = uniqueName('t'), r1 = uniqueName('t'),
                    r2 = uniqueName('t'), r3 = uniqueName('t');
  Devices guard({t1, t2, t3, r1, r2, r3});
  auto d = startVdevd({"--group", "nogroup", "--uid-max-ports", "2", "--uid-max-fdb", "7", "--uid-max-capture", "1M"});
  ok({"port", "add", t1, "type", "tap", "create"}, kNobodyCreds);
  ok({"port", "add", t2, "type", "tap", "create"}, kNobodyCreds);
  const std::string stateBefore = readFile(state_);
  const std::vector<std::string> third = {"port", "add", t3, "type", "tap", "create"};
  const CmdResult r = ctl(third, kNobodyCreds);
  EXPECT_EQ(r.status, 1) << describe(third, r);
  EXPECT_NE(r.err.find("uid 65534 has 2 ports, the most --uid-max-ports allows"), std::string::npos)
      << describe(third, r);
  EXPECT_FALSE(linkExists(t3));
  EXPECT_EQ(json({"port", "show"}).size(), 2u);
  EXPECT_EQ(readFile(state_), stateBefore);
  // Root is not capped.
  for (const auto& n : {r1, r2, r3}) ok({"port", "add", n, "type", "tap", "create"});
  EXPECT_EQ(json({"port", "show"}).size(), 5u);

  const std::vector<std::string> cap = {"capture", t1, "buffer", "16384", "count", "1"};
  const CmdResult c = ctl(cap, kNobodyCreds, 10s);
  EXPECT_EQ(c.status, 1) << describe(cap, c);
  EXPECT_NE(c.err.find("uid 65534 has 0 bytes in captures"), std::string::npos) << describe(cap, c);
  EXPECT_NE(c.err.find("--uid-max-capture"), std::string::npos) << describe(cap, c);

  const Json info = json({"info"});
  const Json& caps = info.at("uid_caps");
  EXPECT_EQ(caps.at("ports").get<uint64_t>(), 2u) << info.dump();
  EXPECT_EQ(caps.at("fdb").get<uint64_t>(), 7u) << info.dump();
  EXPECT_EQ(caps.at("capture_bytes").get<uint64_t>(), 1u << 20) << info.dump();
  EXPECT_EQ(caps.at("rate").get<uint64_t>(), 100u) << info.dump();
  ASSERT_EQ(info.at("uid_use").size(), 1u) << info.dump();
  const Json& use = info.at("uid_use").at(0);
  EXPECT_EQ(use.at("uid").get<uint64_t>(), kNobody);
  EXPECT_EQ(use.at("ports").get<uint64_t>(), 2u);
  EXPECT_EQ(use.at("fdb").get<uint64_t>(), 0u);
  EXPECT_EQ(use.at("capture_bytes").get<uint64_t>(), 0u);
  EXPECT_NE(ok({"info"}).find("uid 65534: ports 2"), std::string::npos);

  // A port deleted is room for the next.
  ok({"port", "del", t1}, kNobodyCreds);
  ok({"port", "add", t3, "type", "tap", "create"}, kNobodyCreds);
  for (const auto& n : {t2, t3}) ok({"port", "del", n}, kNobodyCreds);
  for (const auto& n : {r1, r2, r3}) ok({"port", "del", n});
  expectCleanStop(*d);
}

// Every request of a member, reads too, takes a token of its uid's bucket:
// beyond --uid-rate-burst at once, refused with EAGAIN naming the rate;
// root's are not counted, nor the reads and stop of a member's own running
// capture (vdevctl reads every 10 ms while idle).
TEST_F(HardeningTest, GroupMembersRequestsBeyondTheRateAreRefused) {
  const std::string t = uniqueName('t');
  Devices guard({t});
  auto d = startVdevd({"--group", "nogroup", "--uid-max-rate", "1", "--uid-rate-burst", "3"});
  ok({"port", "add", t, "type", "tap", "create"}, kNobodyCreds);
  // About 50 reads in half a second, then SIGINT: a clean stop.
  const std::vector<std::string> cap = {"timeout", "--preserve-status", "-s", "INT", "0.5", vdevctlForOthers(), "-S", sock_, "capture", t};
  const CmdResult c = runArgv(cap, kNobodyCreds, 10s);
  EXPECT_EQ(c.status, 0) << describe(cap, c);
  EXPECT_NE(c.err.find("0 frames written"), std::string::npos) << describe(cap, c);
  CmdResult refused;
  for (int i = 0; i < 6 && refused.status == -1; i++) {
    const CmdResult r = ctl({"info"}, kNobodyCreds);
    if (!r.ok()) refused = r;
  }
  EXPECT_EQ(refused.status, 1) << "six requests within a second at 1/s, burst 2";
  EXPECT_NE(refused.err.find("uid 65534 sent more than 1 requests a second"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--uid-max-rate"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("Resource temporarily unavailable"), std::string::npos) << refused.err;
  for (int i = 0; i < 6; i++) ok({"info"});  // root
  ok({"port", "del", t});
  expectCleanStop(*d);
}

// A member's tap whose device is deleted (its owner may: ip tuntap del),
// and a tap of the same name that root makes next (libvirt's next VM's):
// the member's port used to attach to root's tap, keeping the member as
// its owner -- theirs to capture and to delete. Now a port of a device vdev
// made attaches only to the device carrying its identity (the id in its
// alias, its kind, a tap's owner): root's tap is waited past, also after a
// restart; `port show` says what the port waits for; and the member's
// port del leaves root's tap alone.
TEST_F(HardeningTest, AMembersPortWaitsForItsOwnDeviceNotOneThatTookItsName) {
  const std::string t = uniqueName('t');
  Devices guard({t});
  auto d = startVdevd({"--group", "nogroup"});
  ok({"port", "add", t, "type", "tap", "create"}, kNobodyCreds);
  ASSERT_TRUE(linkExists(t));
  EXPECT_NE(readFile(state_).find(" id="), std::string::npos) << readFile(state_);
  run("ip tuntap del dev " + shellQuote(t) + " mode tap");
  ASSERT_TRUE(waitUntil([&] { const Json* p = port(t); return p && p->contains("link_note"); }, 3s, 20ms))
      << json({"port", "show"}).dump();
  run("ip tuntap add dev " + shellQuote(t) + " mode tap");  // root's, no owner, no mark
  run("ip link set dev " + shellQuote(t) + " up");
  const uint64_t rootIdx = std::stoull(readFile("/sys/class/net/" + t + "/ifindex"));
  const auto expectWaiting = [&](const char* when) {
    const Json* p = port(t);
    ASSERT_TRUE(p) << when;
    EXPECT_NE(p->at("ifindex").get<uint64_t>(), rootIdx) << when << ": attached to root's tap: " << p->dump();
    EXPECT_FALSE(p->at("live").get<bool>()) << when << ": " << p->dump();
    EXPECT_EQ(p->at("owner_uid").get<uint64_t>(), kNobody) << when;
    ASSERT_TRUE(p->contains("link_note")) << when << ": " << p->dump();
    const std::string note = p->at("link_note").get<std::string>();
    EXPECT_NE(note.find("waits for its own device"), std::string::npos) << when << ": " << note;
    EXPECT_NE(note.find("ifindex " + std::to_string(rootIdx)), std::string::npos) << when << ": " << note;
  };
  // The port has looked at root's tap once its note names that ifindex
  // (vdevd notes a refusal when it makes it): then it must not be on it.
  const auto refused = [&] {
    return waitUntil([&] {
      const Json* p = port(t);
      return p && p->contains("link_note") &&
             p->at("link_note").get<std::string>().find("ifindex " + std::to_string(rootIdx)) != std::string::npos;
    }, 5s, 20ms);
  };
  ASSERT_TRUE(refused()) << json({"port", "show"}).dump();
  expectWaiting("running");
  ASSERT_TRUE(expectCleanStop(*d));
  d = startVdevd({"--group", "nogroup"});
  ASSERT_TRUE(refused()) << json({"port", "show"}).dump();
  expectWaiting("restored");
  ok({"port", "del", t}, kNobodyCreds);
  EXPECT_TRUE(linkExists(t)) << "the member's port del deleted root's tap";
  EXPECT_FALSE(port(t));
  expectCleanStop(*d);
}

// The veth a member of --group may add: into a namespace it made itself
// (rootless, unshare -Urn), named by a process of its own; and delete
// again. A namespace of root's named through a process of root's stays
// refused. Skipped where nobody cannot make a user namespace.
TEST_F(HardeningTest, GroupMembersAddVethsIntoTheirOwnNamespaces) {
  Netns rootNs;
  const std::string vc = uniqueName('c'), vc2 = uniqueName('c');
  Devices guard({vc, vc2});
  // Whether process `pid` is in a namespace of `kind` other than this
  // process's: not while it has none (it exited) or has not unshared yet.
  const auto otherNs = [](pid_t pid, const std::string& kind) {
    const std::string link = run("readlink /proc/" + std::to_string(pid) + "/ns/" + kind + " || true");
    return !link.empty() && link != run("readlink /proc/self/ns/" + kind);
  };
  Child userns("userns", {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          "/usr/bin/unshare", "-Urn", "/bin/sleep", "60"});
  if (!waitUntil([&] { return otherNs(userns.pid(), "user"); }, 3s, 20ms))
    GTEST_SKIP() << "nobody cannot make a user namespace here (unshare -Urn): " << userns.logs();
  auto d = startVdevd({"--group", "nogroup"});
  // The sleep is unshare's child or unshare itself (exec): whichever holds the namespace.
  const std::string pid = std::to_string(userns.pid());
  ok({"port", "add", vc, "type", "veth", "create", "netns", "pid", pid, "peer", "eth0"}, kNobodyCreds);
  EXPECT_TRUE(linkExists(vc));
  ok({"port", "del", vc}, kNobodyCreds);
  EXPECT_FALSE(linkExists(vc));
  Child rootSleeper("root-sleeper", {"/usr/bin/nsenter", "--net=/run/netns/" + rootNs.name(), "/bin/sleep", "60"});
  ASSERT_TRUE(waitUntil([&] { return otherNs(rootSleeper.pid(), "net"); }, 3s, 20ms)) << rootSleeper.logs();
  expectRefused({"port", "add", vc2, "type", "veth", "create", "netns", "pid", std::to_string(rootSleeper.pid())},
                "administered by uid 0");
  EXPECT_FALSE(linkExists(vc2));
  expectCleanStop(*d);
}

// A damaged state file, a port that cannot be restored, a saved port also
// given with --port: vdevd used to exit at start (systemd restarted it
// forever). Now it starts with what it can and says what it left out.
TEST_F(HardeningTest, StartsWithWhatCanBeRestoredAndReportsTheRest) {
  Netns ns;
  VethPair cmd(ns);
  const std::string vt = uniqueName('t');
  Devices guard({vt});
  {
    auto d = startVdevd();
    ok({"port", "add", vt, "type", "tap", "create"});
    ASSERT_TRUE(expectCleanStop(*d));
  }
  {
    std::ofstream f(state_, std::ios::app);
    f << "port name=" << cmd.hostName() << " type=netdev queues=0 xdp-mode=auto managed=0\n";
    f << "port name=broken type=blue\n";  // (a key it does not know is kept: e2e_state_file_test)
  }
  auto d = startVdevd({"--port", cmd.hostName()});
  const Json info = json({"info"});
  std::string issues;
  for (const Json& i : info.at("start_issues")) issues += i.get<std::string>() + "\n";
  EXPECT_NE(issues.find("invalid type 'blue'"), std::string::npos) << issues;
  EXPECT_NE(issues.find("given with --port"), std::string::npos) << issues;
  EXPECT_NE(issues.find(".rejected"), std::string::npos) << issues;
  EXPECT_NE(ok({"info"}).find("not restored: "), std::string::npos);
  EXPECT_TRUE(port(vt)) << "the good record was not restored";
  EXPECT_TRUE(port(cmd.hostName()));
  EXPECT_NE(readFile(state_ + ".rejected").find("type=blue"), std::string::npos);
  EXPECT_EQ(readFile(state_).find("blue"), std::string::npos) << readFile(state_);
  EXPECT_NE(readFile(state_).find("name=" + vt), std::string::npos) << readFile(state_);
  ASSERT_TRUE(expectCleanStop(*d));

  // Over 1 MiB: not read, and still no reason not to start.
  {
    std::ofstream f(state_);
    f << "# vdevd state v1\n" << std::string(2u << 20, '#') << "\n";
  }
  d = startVdevd();
  std::string big;
  const Json info2 = json({"info"});
  for (const Json& i : info2.at("start_issues")) big += i.get<std::string>();
  EXPECT_NE(big.find("larger than 1 MiB"), std::string::npos) << big;
  expectCleanStop(*d);
}

// The open-file limit: raised to the hard limit at start, and `vdevctl
// info` says how many more ports it leaves room for -- at most kFdsPerPort
// (2) descriptors each, as a port really takes: its socket, at either
// hook (the programs and their maps are one set for every port).
TEST_F(HardeningTest, OpenFileLimitIsRaisedAndReported) {
  constexpr long kFdsPerPort = 2;  // vdev/daemon/src/daemon_control.h
  const std::string vt = uniqueName('c'), vt2 = uniqueName('c'), vt3 = uniqueName('c'), vt4 = uniqueName('c');
  // (the peers, NAME + "p", go with their veths)
  Devices guard({vt, vt2, vt3, vt4});
  // Started with a soft limit below the hard one, as under systemd (1024).
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  if (old.rlim_max <= 1024) GTEST_SKIP() << "hard open-file limit " << old.rlim_max << ": nothing to raise";
  rlimit low = old;
  low.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto d = std::make_unique<Vdevd>(std::vector<std::string>{"--socket", sock_, "--state", state_});
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  const std::string limits = readFile("/proc/" + std::to_string(d->pid()) + "/limits");
  unsigned long long soft = 0, hard = 0;
  {
    std::istringstream in(limits);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("Max open files", 0) == 0) std::sscanf(line.c_str() + 14, "%llu %llu", &soft, &hard);
  }
  EXPECT_EQ(soft, hard) << limits;
  EXPECT_EQ(hard, old.rlim_max) << limits;
  const Json before = json({"info"});
  EXPECT_EQ(before.at("fd_limit").get<uint64_t>(), soft);
  const uint64_t left = before.at("ports_fd_left").get<uint64_t>();
  EXPECT_GT(left, 0u);
  const auto fds = [&] {
    return std::distance(std::filesystem::directory_iterator("/proc/" + std::to_string(d->pid()) + "/fd"),
                         std::filesystem::directory_iterator{});
  };
  // The first port at each hook loads what every port there shares; the
  // second one's descriptors are its own. Container ports (veths vdevd
  // creates), live before they are counted: a port's sockets are opened
  // when its link is up.
  const auto add = [&](const std::string& name, const char* hook) {
    ok({"port", "add", name, "type", "veth", "create", "peer", name + "p", "hook", hook});
    EXPECT_TRUE(waitUntil(
        [&] {
          const Json ports = json({"port", "show"});
          const Json* p = findPort(ports, name);
          return p && p->at("live").get<bool>();
        },
        10s, 20ms))
        << name << " not live: " << ok({"port", "show"});
    return fds();
  };
  const auto n0 = fds();
  const auto n1 = add(vt, "xdp");
  const auto n2 = add(vt2, "xdp");
  EXPECT_GT(n1 - n0, 0);
  EXPECT_LE(n2 - n1, kFdsPerPort) << "a port at the XDP hook takes more descriptors than kFdsPerPort";
  EXPECT_GT(n2 - n1, 0);
  const auto n3 = add(vt3, "tc");
  const auto n4 = add(vt4, "tc");
  EXPECT_LE(n4 - n3, kFdsPerPort) << "a port at the tc hook takes more descriptors than kFdsPerPort";
  EXPECT_GT(n4 - n3, 0);
  const Json after = json({"info"});
  EXPECT_LT(after.at("ports_fd_left").get<uint64_t>(), left + 1);
  EXPECT_NE(ok({"info"}).find("room for"), std::string::npos);
  for (const auto& p : {vt, vt2, vt3, vt4}) ok({"port", "del", p});
  expectCleanStop(*d);
}

// ---------------------------------------------------------------- vdev-cni

using cni::Invocation;
using cni::Outcome;
using cni::OJson;
using cni::runPlugin;

// libcni (podman 4.3, containerd, CRI-O, nerdctl) checks a configuration
// with VERSION and placeholders; vdev-cni refused it ("CNI_NETNS must be an
// absolute path") and podman reported "network not found".
TEST(HardeningCni, VersionAcceptsLibcniPlaceholders) {
  if (cni::pluginBinary().empty()) GTEST_SKIP() << "vdev-cni not built";
  const Outcome o = runPlugin({"VERSION", "dummy", "dummy", "dummy", "", "", {}}, R"({"cniVersion":"1.0.0"})");
  ASSERT_EQ(o.status, 0) << o.describe();
  EXPECT_EQ(o.json().at("cniVersion"), "1.0.0");
  // ADD still wants a real path.
  const Outcome a = runPlugin({"ADD", "ctr1", "dummy", "eth0", "", "", {}},
                              R"({"cniVersion":"1.0.0","name":"n1","type":"vdev-cni"})");
  EXPECT_EQ(a.status, 1) << a.describe();
  EXPECT_NE(a.out.find("CNI_NETNS must be an absolute path"), std::string::npos) << a.out;
}

// Bytes that are not UTF-8 in the environment or configuration made
// nlohmann::json throw while printing the error, and the plugin ended in
// std::terminate with no answer.
TEST(HardeningCni, NonUtf8InputGetsAnErrorJson) {
  if (cni::pluginBinary().empty()) GTEST_SKIP() << "vdev-cni not built";
  const std::string conf = R"({"cniVersion":"1.0.0","name":"n1","type":"vdev-cni"})";
  for (const Invocation& inv :
       {Invocation{"ADD", "ctr\xff\xfe", "/run/netns/x", "eth0", "", "", {}},
        Invocation{"ADD", "ctr1", "/run/netns/x", "eth\xff", "", "", {}},
        Invocation{"ADD", "ctr1", "/run/netns/x", "eth%d", "", "", {}},
        Invocation{"ADD", "ctr1", "/run/netns/x", "eth0", "IgnoreUnknown=1;\xff\xfe", "", {}}}) {
    const Outcome o = runPlugin(inv, conf);
    EXPECT_EQ(o.status, 1) << o.describe();
    const OJson j = o.json();  // throws if there is no JSON answer
    EXPECT_EQ(j.at("code"), 4) << o.out;
  }
  const Outcome bad = runPlugin({"ADD", "ctr1", "/run/netns/x", "eth0", "", "", {}},
                                "{\"cniVersion\":\"1.0.0\",\"name\":\"n\xff\"}");
  EXPECT_EQ(bad.status, 1) << bad.describe();
  EXPECT_EQ(bad.json().at("code"), 6) << bad.out;
}

// vdev-cni's port names start with "vc" and 3 base32 characters of the
// network name's FNV-1a hash (tools/vdev-cni/src/plugin.cpp). Restated
// here only to find two network names whose prefixes collide.
std::string cniPrefix(const std::string& network) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : network) h = (h ^ c) * 0x100000001b3ull;
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string s = "vc";
  for (int i = 0; i < 3; ++i, h <<= 5) s += kAlphabet[h >> 59];
  return s;
}

class HardeningCniTest : public HardeningTest {
 protected:
  void SetUp() override {
    if (cni::pluginBinary().empty()) GTEST_SKIP() << "vdev-cni not built";
    HardeningTest::SetUp();
  }
  OJson conf(const std::string& name, const std::string& version = "1.1.0") {
    OJson c = OJson::object();
    c["cniVersion"] = version;
    c["name"] = name;
    c["type"] = "vdev-cni";
    c["socket"] = sock_;
    return c;
  }
};

// GC recognised its ports by that 15-bit prefix: two networks whose
// prefixes collide deleted each other's ports. Now it goes by the port's tag.
TEST_F(HardeningCniTest, GcLeavesAnotherNetworksPortsWhosePrefixCollides) {
  std::string n1 = "vcgc-a0", n2;
  for (int i = 1; i < 200000 && n2.empty(); ++i) {
    const std::string cand = "vcgc-b" + std::to_string(i);
    if (cniPrefix(cand) == cniPrefix(n1)) n2 = cand;
  }
  ASSERT_FALSE(n2.empty());
  Netns a, b;
  auto d = startVdevd();
  const auto add = [&](const std::string& net, const std::string& ctr, const Netns& ns) {
    const Outcome o = runPlugin({"ADD", ctr, "/run/netns/" + ns.name(), "eth0", "", "", {}}, conf(net).dump());
    EXPECT_EQ(o.status, 0) << o.describe();
    return o.status == 0 ? o.json().at("interfaces").at(0).at("name").get<std::string>() : std::string();
  };
  const std::string pa = add(n1, "ctr-a", a), pb = add(n2, "ctr-b", b);
  Devices guard({pa, pb});
  ASSERT_EQ(pa.substr(0, 5), pb.substr(0, 5)) << "the two networks' port names do not collide";
  const Json* p = port(pb);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->at("tag").get<std::string>(), "cni:" + n2);
  OJson gc = conf(n1);
  gc["cni.dev/valid-attachments"] = OJson::array();
  const Outcome g = runPlugin({"GC", "", "", "", "", "", {}}, gc.dump());
  EXPECT_EQ(g.status, 0) << g.describe();
  EXPECT_FALSE(port(pa)) << "GC left its own network's stale port";
  EXPECT_TRUE(port(pb)) << "GC of " << n1 << " deleted " << n2 << "'s port";
  EXPECT_TRUE(linkExists("eth0", &b));
  const Outcome del = runPlugin({"DEL", "ctr-b", "/run/netns/" + b.name(), "eth0", "", "", {}}, conf(n2).dump());
  EXPECT_EQ(del.status, 0) << del.describe();
  expectCleanStop(*d);
}

}  // namespace
}  // namespace vdev::e2e
