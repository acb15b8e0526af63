// The daemon's state file: round trip, strict refusal of corrupt files,
// atomic replacement.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <tuple>
#include <vector>

#include "daemon/state_file.h"

namespace vdev::daemon {
namespace {

DaemonState sample() {
  DaemonState st;
  st.ports.push_back({"vdc1", "veth", 0, "auto", true});
  st.ports.push_back({"tap-vm1", "tap", 4, "native", true});
  st.ports.push_back({"eth1", "netdev", 1, "generic", false});
  st.ports.push_back({"vt=q", "tap", 0, "auto", true});  // '=' is a valid interface name character
  return st;
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(StateFile, RoundTrip) {
  auto st = parseState(serializeState(sample()));
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(st.value(), sample());
  auto empty = parseState(serializeState(DaemonState{}));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value().ports.empty());
}

// fast-rx off is saved (and only off: an older vdevd refuses keys it does
// not know), and a line without the key -- every file an older vdevd wrote
// -- loads with the option on.
TEST(StateFile, FastRxOffRoundTripsAndAbsentMeansOn) {
  DaemonState st = sample();
  st.ports[1].fast_rx = false;
  const std::string text = serializeState(st);
  EXPECT_NE(text.find("port name=tap-vm1 type=tap queues=4 xdp-mode=native managed=1 fast-rx=0\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("fast-rx=1"), std::string::npos) << "on is the default; not written:\n" << text;
  auto back = parseState(text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
  EXPECT_FALSE(back.value().ports[1].fast_rx);
  EXPECT_TRUE(back.value().ports[0].fast_rx);

  auto old = parseState("# vdevd state v1\nport name=vm1 type=tap queues=0 xdp-mode=auto managed=1\n");
  ASSERT_TRUE(old.ok()) << old.error().message();
  ASSERT_EQ(old.value().ports.size(), 1u);
  EXPECT_TRUE(old.value().ports[0].fast_rx);
  auto on = parseState("# vdevd state v1\nport name=vm1 fast-rx=1\n");
  ASSERT_TRUE(on.ok()) << on.error().message();
  EXPECT_TRUE(on.value().ports[0].fast_rx);
}

// A port's hook is saved when it was asked for; a line without it (every
// file an older vdevd wrote, or a port that took --default-hook) loads with
// none, so vdevd's --default-hook decides.
TEST(StateFile, HookRoundTripsAndAbsentMeansTheDefault) {
  DaemonState st = sample();
  st.ports[0].hook = "xdp";
  st.ports[1].hook = "tc";
  const std::string text = serializeState(st);
  EXPECT_NE(text.find(" hook=xdp\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" hook=tc\n"), std::string::npos) << text;
  auto back = parseState(text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
  // VLANs: the settings as given, and none given (taken away).
  st.ports[1].limits.vlan.emplace().tagged = *vdev::parseVidList("10,20-29");
  st.ports[1].limits.vlan->pvid = 5;
  st.ports[1].limits.vlan->untagged.set(5);
  st.ports[2].limits.vlan = vdev::VlanConfig{};
  const std::string withVlan = serializeState(st);
  EXPECT_NE(withVlan.find(" vlan_pvid=5 vlan_tagged=10,20-29 vlan_untagged=5\n"), std::string::npos) << withVlan;
  EXPECT_NE(withVlan.find(" vlan_pvid=0\n"), std::string::npos) << withVlan;
  auto vlanBack = parseState(withVlan);
  ASSERT_TRUE(vlanBack.ok()) << vlanBack.error().message();
  EXPECT_EQ(vlanBack.value(), st);

  auto old = parseState("# vdevd state v1\nport name=vm1 type=tap\n");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_EQ(old.value().ports.at(0).hook, "");
  auto bad = parseState("# vdevd state v1\nport name=vm1 hook=ebpf\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("invalid hook 'ebpf'"), std::string::npos) << bad.error().what;
}

TEST(StateFile, CorruptFilesAreRefusedWithTheLine) {
  const std::string h = "# vdevd state v1\n";
  struct Case {
    std::string text, needle;
  } cases[] = {
      {"", "empty"},
      {"garbage\n", "not a vdevd state file"},
      {h + "port name=a type=veth\nbogus\n", "line 3: unknown record 'bogus' without key=value"},
      {h + "port name=a type=veth\nBogus x=1\n", "line 3: unknown record 'Bogus'"},
      {h + "bogus x=1 y\n", "line 2: unknown record 'bogus' with a word that is not key=value: 'y'"},
      {h + "bogus\tx=1\ty\n", "line 2: unknown record 'bogus' with a word that is not key=value: 'y'"},
      {h + "port name=a type=blue\n", "line 2: invalid type"},
      {h + "port name=a queues=65\n", "invalid queues"},
      {h + "port name=a queues=-1\n", "invalid queues"},
      {h + "port name=a queues=\n", "invalid queues"},
      {h + "port name=a xdp-mode=turbo\n", "invalid xdp-mode"},
      {h + "port name=a managed=yes\n", "invalid managed"},
      {h + "port name=a fast-rx=off\n", "line 2: invalid fast-rx 'off' (0 or 1)"},
      {h + "port name=a fast-rx=2\n", "invalid fast-rx"},
      {h + "port name=a fast-rx=0 fast-rx=1\n", "given twice"},
      {h + "port name=abcdefghijklmnop\n", "invalid interface name"},
      {h + "port name=a/b\n", "invalid interface name"},
      {h + "port type=tap\n", "without name"},
      {h + "port name=a name=b\n", "given twice"},
      {h + "port name=a\nport name=a\n", "listed twice"},
      {h + "port name=a Colour=red\n", "invalid key 'Colour'"},
      {h + "port name=a colour=red colour=blue\n", "'colour' given twice"},
      {h + "port name=a novalue\n", "key=value"},
  };
  for (const auto& c : cases) {
    auto st = parseState(c.text);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_NE(st.error().what.find(c.needle), std::string::npos) << st.error().what;
  }
}

TEST(StateFile, SaveIsAtomicAndLoadReadsItBack) {
  char dir[] = "/tmp/vdev-state-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/vdevd.state";
  auto missing = loadState(path);
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing.value().ports.empty());
  ASSERT_TRUE(saveState(path, sample()).ok());
  auto back = loadState(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), sample());
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "temporary file left behind";
  // A corrupt file is reported, naming the file.
  std::ofstream(path) << "# vdevd state v1\nport name=x type=zzz\n";
  auto bad = loadState(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find(path), std::string::npos);
  // A directory in the way of the rename: the old file stays intact.
  std::ofstream(path) << serializeState(sample());
  ASSERT_EQ(mkdir((path + ".tmp").c_str(), 0755), 0);
  EXPECT_FALSE(saveState(path, DaemonState{}).ok());
  auto still = loadState(path);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still.value(), sample());
  rmdir((path + ".tmp").c_str());
  unlink(path.c_str());
  rmdir(dir);
}

// ---------------------------------------------------------------- hardening

class StateDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char d[] = "/tmp/vdev-state-XXXXXX";
    ASSERT_NE(mkdtemp(d), nullptr);
    dir = d;
    path = dir + "/vdevd.state";
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string dir, path;
};

// Who added a port, and its tag, survive a restart; a file without them
// (every older one) means root and no tag, and they are written only when
// set, so such a file stays readable by an older vdevd.
TEST(StateFile, OwnerAndTagRoundTrip) {
  DaemonState st = sample();
  st.ports[0].owner_uid = 1000;
  st.ports[0].tag = "cni:net1";
  const std::string text = serializeState(st);
  EXPECT_NE(text.find("uid=1000 tag=cni:net1"), std::string::npos) << text;
  EXPECT_EQ(serializeState(sample()).find("uid="), std::string::npos);
  auto back = parseState(text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
  EXPECT_FALSE(parseState("# vdevd state v1\nport name=a uid=-1\n").ok());
  EXPECT_FALSE(parseState("# vdevd state v1\nport name=a tag=\n").ok());
  // The protocol's name rule: '%' is a pattern to the kernel.
  EXPECT_FALSE(parseState("# vdevd state v1\nport name=vd%d\n").ok());
}

// One bad line costs that line, not the whole file (vdevd used to refuse to
// start, and systemd restarted it forever).
TEST(StateFile, LenientParseKeepsEveryGoodRecordAndReportsTheRest) {
  auto l = parseStateLenient("# vdevd state v1\nport name=a type=veth\nport name=b Colour=red\n"
                             "port name=c type=tap\nport name=a\nbogus\n");
  ASSERT_EQ(l.state.ports.size(), 2u);
  EXPECT_EQ(l.state.ports[0].name, "a");
  EXPECT_EQ(l.state.ports[1].name, "c");
  ASSERT_EQ(l.problems.size(), 3u);
  EXPECT_NE(l.problems[0].find("line 3: invalid key 'Colour'"), std::string::npos) << l.problems[0];
  EXPECT_NE(l.problems[1].find("line 5: port a listed twice"), std::string::npos) << l.problems[1];
  EXPECT_NE(l.problems[2].find("line 6: unknown record"), std::string::npos) << l.problems[2];
  auto garbage = parseStateLenient("garbage\nport name=a\n");
  EXPECT_TRUE(garbage.state.ports.empty());
  EXPECT_EQ(garbage.problems.size(), 1u);
}

TEST_F(StateDir, LoadLenientKeepsADamagedFileAside) {
  EXPECT_TRUE(loadStateLenient(path).problems.empty()) << "a missing file is no problem";
  std::ofstream(path) << "# vdevd state v1\nport name=a type=veth\nport name=b type=zzz\n";
  auto l = loadStateLenient(path);
  ASSERT_EQ(l.state.ports.size(), 1u);
  ASSERT_EQ(l.problems.size(), 2u);
  EXPECT_NE(l.problems[0].find(path + ": line 3: invalid type"), std::string::npos) << l.problems[0];
  EXPECT_NE(l.problems[1].find("kept as " + path + ".rejected"), std::string::npos) << l.problems[1];
  std::ifstream kept(path + ".rejected");
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("type=zzz"), std::string::npos);
  EXPECT_NE(access(path.c_str(), F_OK), 0);

  // Over 1 MiB: not read at all, but not a reason to stop either.
  {
    std::ofstream big(path);
    big << "# vdevd state v1\n" << std::string(kStateFileMax + 10, '#');
  }
  auto b = loadStateLenient(path);
  EXPECT_TRUE(b.state.ports.empty());
  ASSERT_FALSE(b.problems.empty());
  EXPECT_NE(b.problems[0].find("larger than 1 MiB"), std::string::npos) << b.problems[0];
  EXPECT_FALSE(loadState(path + ".rejected").ok());
}

// The temporary file is never written through a symlink someone planted
// at its name (it was opened O_CREAT | O_TRUNC, following it).
TEST_F(StateDir, SaveNeverFollowsASymlinkAtTheTemporaryName) {
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  ASSERT_TRUE(saveState(path, sample()).ok());
  std::ifstream v(victim);
  std::string text((std::istreambuf_iterator<char>(v)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious\n");
  auto back = loadState(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value(), sample());
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The same for any file written this way (--stats-json).
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/stats.json.tmp").c_str()), 0);
  ASSERT_TRUE(writeFileAtomic(dir + "/stats.json", "{}\n", 0644).ok());
  std::ifstream v2(victim);
  std::string text2((std::istreambuf_iterator<char>(v2)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text2, "precious\n");
}

TEST_F(StateDir, EnsurePrivateDirCreatesAndChecks) {
  const std::string d = dir + "/var/lib/vdev";
  ASSERT_TRUE(ensurePrivateDir(d, 0700).ok());
  struct stat st {};
  ASSERT_EQ(lstat(d.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  ASSERT_TRUE(ensurePrivateDir(d, 0700).ok()) << "an existing good directory is fine";
  ASSERT_EQ(chmod(d.c_str(), 0777), 0);
  auto w = ensurePrivateDir(d, 0700);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().err, EPERM);
  ASSERT_EQ(symlink(d.c_str(), (dir + "/link").c_str()), 0);
  EXPECT_FALSE(ensurePrivateDir(dir + "/link", 0700).ok());
}

// isolated=1 is saved for an isolated port only; absent means not isolated.
TEST(StateFile, IsolatedRoundTripsAndAbsentMeansOff) {
  DaemonState st = sample();
  st.ports[0].isolated = true;
  const std::string text = serializeState(st);
  EXPECT_EQ(text.find(" isolated="), text.rfind(" isolated=")) << "only the isolated port: " << text;
  EXPECT_NE(text.find(" isolated=1"), std::string::npos) << text;
  auto back = parseState(text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
  auto old = parseState("# vdevd state v1\nport name=vm1 type=tap\n");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_FALSE(old.value().ports.at(0).isolated);
  auto bad = parseState("# vdevd state v1\nport name=vm1 isolated=yes\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("invalid isolated 'yes' (0 or 1)"), std::string::npos) << bad.error().what;
}

// A port's own limits are saved as given, each only when given (0, no
// limit, included); a port without one has no key and follows vdevd's
// default after a restart. Bad values are refused naming key and range.
TEST(StateFile, LimitsRoundTripOnlyWhenGiven) {
  DaemonState st = sample();
  st.ports[0].limits = {100, 0, 4294967295u, 1000, 18446744073709551615ull, 1};
  st.ports[2].limits.police_bps = 100000000;
  const std::string text = serializeState(st);
  EXPECT_NE(text.find(" storm_bcast=100 storm_mcast=0 storm_unknown=4294967295 police_pps=1000 "
                      "police_bps=18446744073709551615 police_burst_ms=1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("generic managed=0 police_bps=100000000\n"), std::string::npos) << text;
  EXPECT_EQ(text.find(" storm_bcast="), text.rfind(" storm_bcast=")) << "only the port given it: " << text;
  auto back = parseState(text);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
  EXPECT_EQ(back.value().ports[1].limits, vdev::proto::LimitOptions{});
  EXPECT_FALSE(back.value().ports[2].limits.storm_bcast);
  // The allowed source MAC, and all zeros (any source, given).
  st.ports[1].limits.allowed_mac = vdev::Mac{0x02, 0, 0, 0, 0xab, 0xcd};
  st.ports[2].limits.allowed_mac = vdev::Mac{};
  const std::string withMac = serializeState(st);
  EXPECT_NE(withMac.find(" allowed_mac=02:00:00:00:ab:cd\n"), std::string::npos) << withMac;
  EXPECT_NE(withMac.find(" allowed_mac=00:00:00:00:00:00\n"), std::string::npos) << withMac;
  auto macBack = parseState(withMac);
  ASSERT_TRUE(macBack.ok()) << macBack.error().message();
  EXPECT_EQ(macBack.value(), st);
  // Allowed addresses, and none given (any address).
  st.ports[1].limits.allowed_ips = {*vdev::parseIp("198.18.0.2"), *vdev::parseIp("2001:db8::2")};
  st.ports[2].limits.allowed_ips = std::vector<vdev::IpAddr>{};
  const std::string withIps = serializeState(st);
  EXPECT_NE(withIps.find(" allowed_ips=198.18.0.2,2001:db8::2\n"), std::string::npos) << withIps;
  EXPECT_NE(withIps.find(" allowed_ips=any\n"), std::string::npos) << withIps;
  auto ipsBack = parseState(withIps);
  ASSERT_TRUE(ipsBack.ok()) << ipsBack.error().message();
  EXPECT_EQ(ipsBack.value(), st);
  // RA and DHCP guard, on and given off.
  st.ports[1].limits.ra_guard = true;
  st.ports[2].limits.dhcp_guard = false;
  const std::string withGuard = serializeState(st);
  EXPECT_NE(withGuard.find(" ra_guard=1"), std::string::npos) << withGuard;
  EXPECT_NE(withGuard.find(" dhcp_guard=0"), std::string::npos) << withGuard;
  auto guardBack = parseState(withGuard);
  ASSERT_TRUE(guardBack.ok()) << guardBack.error().message();
  EXPECT_EQ(guardBack.value(), st);

  auto old = parseState("# vdevd state v1\nport name=vm1 type=tap\n");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_EQ(old.value().ports.at(0).limits, vdev::proto::LimitOptions{});

  const std::pair<const char*, const char*> bad[] = {
      {"storm_bcast=-1", "invalid storm_bcast '-1' (frames/s, 0..4294967295; 0: no limit)"},
      {"storm_mcast=4294967296", "invalid storm_mcast '4294967296' (frames/s"},
      {"storm_unknown=off", "invalid storm_unknown 'off' (frames/s"},
      {"police_pps=1k", "invalid police_pps '1k' (packets/s, 0..18446744073709551615; 0: no limit)"},
      {"police_bps=18446744073709551616", "invalid police_bps '18446744073709551616' (bits/s"},
      {"police_bps=", "invalid police_bps '' (bits/s"},
      {"police_burst_ms=0", "invalid police_burst_ms '0' (milliseconds, 1..4294967295)"},
      {"storm_bcast=1 storm_bcast=2", "'storm_bcast' given twice"},
      {"allowed_mac=01:00:5e:00:00:01", "invalid allowed_mac '01:00:5e:00:00:01' (a unicast MAC"},
      {"allowed_mac=02:00", "invalid allowed_mac '02:00'"},
      {"allowed_ips=198.18.0.2,", "invalid allowed_ips '198.18.0.2,' (IPv4 and IPv6 addresses, comma-separated"},
      {"allowed_ips=198.18.0.0/24", "invalid allowed_ips '198.18.0.0/24'"},
      {"ra_guard=on", "invalid ra_guard 'on' (0 or 1)"},
      {"dhcp_guard=2", "invalid dhcp_guard '2' (0 or 1)"},
      {"allowed_ips=224.0.0.1", "invalid allowed_ips '224.0.0.1': attribute allowed_ips: 224.0.0.1 is not"},
      {"vlan_pvid=4095", "invalid vlan_pvid '4095' (0..4094"},
      {"vlan_tagged=10-5", "invalid vlan_tagged '10-5' (VLAN IDs 1..4094"},
      {"vlan_pvid=5", "invalid VLANs: the native VLAN 5 is not among the untagged ones"},
      {"vlan_tagged=10 vlan_untagged=10", "invalid VLANs: VLAN 10 both tagged and untagged"},
  };
  for (const auto& [kv, what] : bad) {
    auto r = parseState(std::string("# vdevd state v1\nport name=vm1 ") + kv + "\n");
    ASSERT_FALSE(r.ok()) << kv;
    EXPECT_NE(r.error().what.find(what), std::string::npos) << r.error().what;
  }
}

// ------------------------------------------------------- versions of the file

// What the first vdevd wrote (e51bf7c, 2026-12-01): five keys per port.
// Every key added since has its default when missing, and a record with
// nothing new is written back exactly as that vdevd wrote it, so the older
// vdevd can still read the file after a downgrade.
TEST(StateFile, AnOlderFileGetsTheDefaultsAndIsWrittenBackAsItWas) {
  const std::string v0 =
      "# vdevd state v1\n"
      "# written by vdevd: the ports it restores at start; edit only while it is stopped\n"
      "port name=vdc1 type=veth queues=0 xdp-mode=auto managed=1\n"
      "port name=eth1 type=netdev queues=2 xdp-mode=native managed=0\n";
  auto st = parseState(v0);
  ASSERT_TRUE(st.ok()) << st.error().message();
  ASSERT_EQ(st.value().ports.size(), 2u);
  const PortRecord& p = st.value().ports[0];
  EXPECT_EQ(p.name, "vdc1");
  EXPECT_TRUE(p.managed);
  EXPECT_TRUE(p.fast_rx);
  EXPECT_EQ(p.owner_uid, 0u);
  EXPECT_EQ(p.tag, "");
  EXPECT_EQ(p.hook, "");
  EXPECT_FALSE(p.isolated);
  EXPECT_EQ(p.id, "") << "no device id: attached by name, as that vdevd did";
  EXPECT_FALSE(p.tun_owner);
  EXPECT_EQ(p.limits, proto::LimitOptions{}) << "no limits of its own: vdevd's defaults";
  EXPECT_TRUE(p.unknown.empty());
  EXPECT_TRUE(st.value().other_records.empty());
  EXPECT_EQ(st.value().ports[1].queues, 2u);
  EXPECT_EQ(st.value().ports[1].xdp_mode, "native");
  EXPECT_EQ(serializeState(st.value()), v0);
}

// A newer vdevd's file: keys and record kinds this one does not know are
// kept, in order, and written back on every save, also after a change to
// the port that carries them; what this vdevd knows is read as usual.
TEST_F(StateDir, ANewerFilesUnknownKeysAndRecordsAreKeptThroughASave) {
  const std::string newer =
      "# vdevd state v1\n"
      "port name=vm1 type=tap queues=0 xdp-mode=auto managed=1 uid=1000 mtu=9000 "
      "isolated=1 qos_class=gold storm_bcast=50 x-note=a=b\n"
      "port name=vdc2 type=veth queues=0 xdp-mode=auto managed=1\n"
      "mirror name=m1 from=vm1 to=vdc2\n"
      "bond name=b0 ports=eth1,eth2 mode=lacp\n";
  {
    std::ofstream(path) << newer;
  }
  auto l = loadStateLenient(path);
  EXPECT_TRUE(l.problems.empty()) << l.problems.front();
  EXPECT_EQ(access((path + ".rejected").c_str(), F_OK), -1) << "a newer file is not set aside";
  DaemonState st = l.state;
  ASSERT_EQ(st.ports.size(), 2u);
  PortRecord& vm1 = st.ports[0];
  EXPECT_EQ(vm1.owner_uid, 1000u);
  EXPECT_TRUE(vm1.isolated);
  EXPECT_EQ(vm1.limits.storm_bcast, 50u);
  EXPECT_EQ(vm1.unknown, (std::vector<std::string>{"mtu=9000", "qos_class=gold", "x-note=a=b"}));
  EXPECT_TRUE(st.ports[1].unknown.empty());
  EXPECT_EQ(st.other_records,
            (std::vector<std::string>{"mirror name=m1 from=vm1 to=vdc2", "bond name=b0 ports=eth1,eth2 mode=lacp"}));

  // What `port set vm1 police-pps 1000` and a port add do to the state.
  vm1.limits.police_pps = 1000;
  st.ports.push_back({"vdc3", "veth", 0, "auto", true});
  ASSERT_TRUE(saveState(path, st).ok());
  const std::string text = readText(path);
  EXPECT_NE(text.find("port name=vm1 type=tap queues=0 xdp-mode=auto managed=1 uid=1000 isolated=1 "
                      "storm_bcast=50 police_pps=1000 mtu=9000 qos_class=gold x-note=a=b\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nmirror name=m1 from=vm1 to=vdc2\nbond name=b0 ports=eth1,eth2 mode=lacp\n"),
            std::string::npos)
      << text;
  auto back = loadState(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), st);
}

// A file a later vdevd marks as not readable by this one (another header)
// is not read at all, and kept, whole, as .rejected.
TEST_F(StateDir, AnIncompatibleVersionIsKeptAsideWhole) {
  const std::string v2 = "# vdevd state v2\nport name=vm1 type=tap something new\n";
  {
    std::ofstream(path) << v2;
  }
  auto l = loadStateLenient(path);
  EXPECT_TRUE(l.state.ports.empty());
  ASSERT_FALSE(l.problems.empty());
  EXPECT_NE(l.problems[0].find("not a vdevd state file"), std::string::npos) << l.problems[0];
  EXPECT_EQ(readText(path + ".rejected"), v2);
}

// ------------------------------------------------------------ failing syscalls
//
// Failures a test cannot get from a real file system without root (a disk
// that fails fsync, a directory that cannot be opened) are injected with a
// seccomp filter in a child process: the syscall returns the errno, as the
// kernel would. The body's exit status is the test's verdict.

struct Inject {
  int nr;              // the syscall
  int err;             // its errno
  uint32_t flag = 0;   // if not 0: only when its third argument (openat's flags) has this bit
};

// Runs `body` in a child under the filter; its exit status, or -1 when the
// filter cannot be installed here (the test is then skipped), -2 on a
// signal.
int runInjected(Inject in, const std::function<int()>& body) {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return -1;
#endif
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::vector<sock_filter> f = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(in.nr), 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    if (in.flag) {
      f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[2])));
      f.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, in.flag, 1, 0));
      f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    }
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t(in.err) & SECCOMP_RET_DATA)));
    sock_fprog prog{uint16_t(f.size()), f.data()};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
      _exit(99);
    _exit(body());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -2;
  if (WIFSIGNALED(status)) return -2;
  if (WEXITSTATUS(status) == 99) return -1;
  return WEXITSTATUS(status);
}

// The save that fails: 0 when it returned `err` naming `step`, 1 when it
// succeeded, 2 when it failed otherwise.
int saveFails(const std::string& path, const DaemonState& st, int err, const char* step) {
  auto s = saveState(path, st);
  if (s.ok()) return 1;
  return s.error().err == err && s.error().what.find(step) != std::string::npos ? 0 : 2;
}

// A disk that fails the file's fsync (EIO) or its write (ENOSPC): the
// save is an error naming the step, the old file is what it was, and no
// temporary file is left.
TEST_F(StateDir, AFailedWriteOrFsyncLeavesTheOldFileAndNoTemporary) {
  ASSERT_TRUE(saveState(path, sample()).ok());
  const std::string before = readText(path);
  DaemonState changed = sample();
  changed.ports.pop_back();
  for (const auto& [in, err, step] : {std::tuple{Inject{SYS_fsync, EIO}, EIO, "fsync " + path + ".tmp"},
                                      std::tuple{Inject{SYS_write, ENOSPC}, ENOSPC, "write " + path + ".tmp"}}) {
    const int r = runInjected(in, [&] { return saveFails(path, changed, err, step.c_str()); });
    if (r == -1) GTEST_SKIP() << "no seccomp filter here";
    EXPECT_EQ(r, 0) << step << ": 1: the save succeeded, 2: another error";
    EXPECT_EQ(readText(path), before) << step;
    EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << step << ": temporary file left behind";
  }
  ASSERT_TRUE(saveState(path, changed).ok()) << "the next save, on a good disk";
  EXPECT_EQ(loadState(path).value(), changed);
}

// The directory's fsync after the rename cannot undo the rename: the save
// succeeds with a warning, and the new file is in place.
TEST_F(StateDir, AFailedDirectorySyncIsAWarningAndTheNewFileStands) {
  ASSERT_TRUE(saveState(path, DaemonState{}).ok());
  const int r = runInjected(Inject{SYS_openat, EACCES, O_DIRECTORY}, [&] {
    std::string warning;
    auto s = saveState(path, sample(), &warning);
    if (!s.ok()) return 1;
    return warning.find("open directory " + dir + ": Permission denied") != std::string::npos &&
                   warning.find("is written") != std::string::npos
               ? 0
               : 2;
  });
  if (r == -1) GTEST_SKIP() << "no seccomp filter here";
  EXPECT_EQ(r, 0) << "1: the save failed, 2: no or another warning";
  auto back = loadState(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back.value(), sample());
}

}  // namespace
}  // namespace vdev::daemon
