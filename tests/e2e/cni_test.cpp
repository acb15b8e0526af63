// vdev-cni end to end (docs/containers.md): the plugin is run exactly as a
// container runtime runs it -- a process with the CNI_* environment, the
// network configuration on stdin, its stdout read as the result or error
// JSON -- against a vdevd started by the test with its own control socket and
// state file, with Debian's host-local as the IPAM plugin (its state in the
// test's temp dir).
//
// Two groups:
//  - CniSpecTest: what the specification fixes without any container
//    (VERSION, error codes and the error JSON for bad environments and
//    configurations, vdevd not running). No root needed.
//  - CniTest / CniVersionTest: root. Containers (network namespaces) get
//    addresses, reach each other through vdev, pass CHECK, and are torn down
//    by DEL without leftovers (no port, no veth, no IPAM allocation), for
//    each of the versions 0.4.0, 1.0.0 and 1.1.0; failures roll back; DEL is
//    idempotent; GC and STATUS (1.1.0).
//
// Cleanup: every container end lives in a namespace the test made, and
// deleting a namespace deletes its veth pairs; a guard also deletes the host
// ends the plugin reported, pass or fail.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <set>

#include "cni_plugin.h"
#include "harness.h"
#include "wait.h"
#include "proto/client.h"

namespace vdev::e2e {
namespace {

using namespace cni;

constexpr const char* kSubnet = "198.18.200.0/24";

bool haveHostLocal() { return ::access("/usr/lib/cni/host-local", X_OK) == 0; }

// The error JSON of the spec: exactly cniVersion, code, msg and maybe details.
void expectError(const Outcome& o, unsigned code, const std::string& version,
                 const std::string& msgPart = "") {
  EXPECT_EQ(o.status, 1) << o.describe();
  OJson j;
  try {
    j = o.json();
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return;
  }
  ASSERT_TRUE(j.is_object()) << o.describe();
  for (const auto& [k, v] : j.items())
    EXPECT_TRUE(k == "cniVersion" || k == "code" || k == "msg" || k == "details")
        << "unexpected field " << k << " in " << o.out;
  EXPECT_EQ(j.value("cniVersion", ""), version) << o.out;
  ASSERT_TRUE(j.contains("code") && j["code"].is_number_unsigned()) << o.out;
  EXPECT_EQ(j["code"].get<unsigned>(), code) << o.describe();
  ASSERT_TRUE(j.contains("msg") && j["msg"].is_string()) << o.out;
  const std::string all = j["msg"].get<std::string>() + " " + j.value("details", "");
  if (!msgPart.empty()) {
    EXPECT_NE(all.find(msgPart), std::string::npos) << "'" << msgPart << "' not in " << o.out;
  }
}

// The links named in ADD results, deleted at the end of a test if still there.
class LinkGuard {
 public:
  ~LinkGuard() {
    for (const auto& n : names_)
      if (linkExists(n)) tryRun("ip link del dev " + shellQuote(n));
  }
  void add(const std::string& n) { names_.insert(n); }

 private:
  std::set<std::string> names_;
};

// ---------------------------------------------------------------------------
// The specification's behaviour without containers: no root, no vdevd.

class CniSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (pluginBinary().empty()) GTEST_SKIP() << "vdev-cni not built and $VDEV_CNI not set";
  }
  Invocation add() const { return {"ADD", "ctr1", "/run/netns/nosuch", "eth0", "", "", {}}; }
  std::string conf(const std::string& version = "1.0.0") const {
    OJson c = netConf(version, "vcspec", sock_, kSubnet, dir_.path());
    return c.dump();
  }
  TempDir dir_;
  const std::string sock_ = dir_.file("vdevd.sock");  // nobody listens here
};

TEST_F(CniSpecTest, VersionAnswersTheSupportedVersions) {
  const std::vector<std::string> want = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
  for (const std::string v : {"0.4.0", "1.0.0", "1.1.0"}) {
    const Outcome o = runPlugin({"VERSION", "", "", "", "", "", {}}, R"({"cniVersion":")" + v + "\"}");
    ASSERT_EQ(o.status, 0) << o.describe();
    const OJson j = o.json();
    EXPECT_EQ(j["cniVersion"], v) << o.out;
    EXPECT_EQ(j["supportedVersions"].get<std::vector<std::string>>(), want) << o.out;
    EXPECT_EQ(j.size(), 2u) << o.out;
  }
  // No input at all: the latest version.
  const Outcome o = runPlugin({"VERSION", "", "", "", "", "", {}}, "");
  ASSERT_EQ(o.status, 0) << o.describe();
  EXPECT_EQ(o.json()["cniVersion"], "1.1.0") << o.out;
}

TEST_F(CniSpecTest, BadEnvironmentIsCode4) {
  // Each case: what it changes in a good ADD, and what the error must name.
  const std::pair<std::function<void(Invocation&)>, const char*> cases[] = {
      {[](Invocation& i) { i.command = "FROB"; }, "unknown CNI_COMMAND: FROB"},
      {[](Invocation& i) { i.netns = i.ifname = ""; },
       "required env variables [CNI_NETNS,CNI_IFNAME] missing"},
      {[](Invocation& i) { i.containerId = "bad/id"; }, "containerID"},
      {[](Invocation& i) { i.ifname = "sixteen-chars-xx"; }, "CNI_IFNAME"},
      {[](Invocation& i) { i.netns = "run/netns/x"; }, "CNI_NETNS"},
      {[](Invocation& i) { i.args = "IgnoreUnknown=1;novalue"; }, "CNI_ARGS"},
      // DEL needs no CNI_NETNS (the namespace may be gone), but the container.
      {[](Invocation& i) { i.command = "DEL"; i.containerId = ""; }, "CNI_CONTAINERID"},
  };
  for (const auto& [change, msgPart] : cases) {
    SCOPED_TRACE(msgPart);
    Invocation i = add();
    change(i);
    expectError(runPlugin(i, conf()), 4, "1.0.0", msgPart);
  }
}

TEST_F(CniSpecTest, BadConfigurationIsCode1Or6Or7) {
  const Invocation i = add();
  expectError(runPlugin(i, "{not json"), 6, "1.1.0", "decoding");
  expectError(runPlugin(i, R"(["cniVersion"])"), 6, "1.1.0");

  // Unsupported versions: code 1, and the details list what is supported.
  for (const std::string v : {"0.2.0", "9.9.9"}) {
    OJson c = OJson::parse(conf());
    c["cniVersion"] = v;
    expectError(runPlugin(i, c.dump()), 1, "1.1.0", "incompatible CNI versions");
    expectError(runPlugin(i, c.dump()), 1, "1.1.0", "plugin supports [\"0.3.0\"");
  }
  const auto with = [&](const char* key, const OJson& value) {
    OJson c = OJson::parse(conf());
    if (value.is_null())
      c.erase(key);
    else
      c[key] = value;
    return runPlugin(i, c.dump());
  };
  expectError(with("name", nullptr), 7, "1.0.0", "missing network name");
  expectError(with("name", "bad name"), 7, "1.0.0", "network name");
  expectError(with("name", 5), 6, "1.0.0", "name");
  expectError(with("mtu", 10), 7, "1.0.0", "mtu");
  expectError(with("mtu", "1500"), 7, "1.0.0", "mtu");
  expectError(with("xdpMode", "fast"), 7, "1.0.0", "xdpMode");
  expectError(with("uplink", "bad/name"), 7, "1.0.0", "uplink");
  expectError(with("uplink", 5), 6, "1.0.0", "uplink");
  expectError(with("portIsolation", "yes"), 6, "1.0.0", "portIsolation");
  expectError(with("mac", "01:00:5e:00:00:01"), 7, "1.0.0", "mac");
  expectError(with("mac", "zz"), 7, "1.0.0", "mac");
  expectError(with("socket", "relative.sock"), 7, "1.0.0", "socket");
  expectError(with("ipam", OJson{{"subnet", kSubnet}}), 7, "1.0.0", "ipam");
  expectError(with("runtimeConfig", OJson{{"mac", "ff:ff:ff:ff:ff:ff"}}), 7, "1.0.0",
              "runtimeConfig.mac");
}

TEST_F(CniSpecTest, CommandsOnlyFromTheVersionThatHasThem) {
  Invocation i = add();
  i.command = "CHECK";
  expectError(runPlugin(i, conf("0.3.1")), 1, "0.3.1", "does not allow CHECK");
  i = {"GC", "", "", "", "", "", {}};
  expectError(runPlugin(i, conf("1.0.0")), 1, "1.0.0", "does not allow GC");
  i.command = "STATUS";
  expectError(runPlugin(i, conf("1.0.0")), 1, "1.0.0", "does not allow STATUS");
}

TEST_F(CniSpecTest, VdevdNotRunningIsTryAgainLaterNamingTheSocket) {
  Invocation i = add();
  i.command = "DEL";
  expectError(runPlugin(i, conf()), 11, "1.0.0", sock_);
  i = {"GC", "", "", "", "", "", {}};
  OJson c = OJson::parse(conf("1.1.0"));
  c["cni.dev/valid-attachments"] = OJson::array();
  expectError(runPlugin(i, c.dump()), 11, "1.1.0", sock_);
  // STATUS says "not available" (50), the code the spec gives it.
  i.command = "STATUS";
  expectError(runPlugin(i, conf("1.1.0")), 50, "1.1.0", sock_);
}

// ---------------------------------------------------------------------------
// Containers on a live vdevd.

class CniTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (pluginBinary().empty()) GTEST_SKIP() << "vdev-cni not built and $VDEV_CNI not set";
    requireRoot();
    if (IsSkipped()) return;
    VDEV_E2E_REQUIRE_VDEVD();
    if (!haveHostLocal())
      GTEST_SKIP() << "no /usr/lib/cni/host-local (Debian package containernetworking-plugins)";
    vdevd_ = std::make_unique<Vdevd>(std::vector<std::string>{"--socket", sock_, "--state", state_});
  }
  // A vdevd the test left running is stopped like every other: SIGTERM, exit
  // 0 (LeakSanitizer's check included), every frame back in the pool.
  void TearDown() override {
    if (vdevd_ && vdevd_->running()) expectCleanStop(*vdevd_);
  }

  OJson conf(const std::string& version, const std::string& network = "vcnet",
             const std::string& subnet = kSubnet) const {
    return netConf(version, network, sock_, subnet, ipamDir_);
  }
  static Invocation inv(const char* cmd, const std::string& cid, const Netns* ns,
                        const std::string& ifname = "eth0", const std::string& args = "") {
    return {cmd, cid, ns ? "/run/netns/" + ns->name() : "", ifname, args, "", {}};
  }

  // ADD that must succeed; returns the result and guards the host end.
  OJson add(const Invocation& i, const OJson& c) {
    const Outcome o = runPlugin(i, c.dump());
    if (o.status != 0) throw HarnessError("ADD failed: " + o.describe());
    OJson r = o.json();
    if (r.contains("interfaces") && !r["interfaces"].empty())
      links_.add(r["interfaces"][0].value("name", ""));
    return r;
  }
  void expectOk(const Outcome& o, const char* what) {
    EXPECT_EQ(o.status, 0) << what << ": " << o.describe();
    EXPECT_EQ(o.out, "") << what << " must print nothing on success";
  }

  vdev::proto::ControlClient client() {
    auto c = vdev::proto::ControlClient::connect(sock_);
    if (!c) throw HarnessError("connect to vdevd: " + c.error().message());
    return std::move(*c);
  }
  std::vector<std::string> portNames() {
    auto l = client().portList();
    if (!l) throw HarnessError("port list: " + l.error().message());
    std::vector<std::string> names;
    for (const auto& p : *l) names.push_back(p.name);
    return names;
  }
  vdev::proto::PortStatsMsg portStats(const std::string& name) {
    auto s = client().stats(name);
    if (!s || s->ports.size() != 1) throw HarnessError("stats " + name);
    return s->ports[0];
  }
  // Addresses host-local holds for network `network` (its files named by IP).
  std::vector<std::string> allocations(const std::string& network = "vcnet") const {
    std::vector<std::string> ips;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(ipamDir_ + "/" + network, ec)) {
      const std::string f = e.path().filename();
      if (f.find('.') != std::string::npos && f.rfind("last_reserved_ip", 0) != 0) ips.push_back(f);
    }
    return ips;
  }
  static std::string addressOf(const OJson& result) {
    const std::string cidr = result["ips"][0]["address"];
    return cidr.substr(0, cidr.find('/'));
  }
  // Pings until `count` replies came back (20 s for all of them).
  static PingResult ping(const Netns& from, const std::string& to, int count = 3) {
    return pingUntilReplies(from.name(), to, count);
  }

  TempDir dir_;
  const std::string sock_ = dir_.file("vdevd.sock");
  const std::string state_ = dir_.file("vdevd.state");
  const std::string ipamDir_ = dir_.file("ipam");
  LinkGuard links_;  // after dir_, before vdevd_: destroyed after vdevd is killed
  std::unique_ptr<Vdevd> vdevd_;
};

class CniVersionTest : public CniTest, public ::testing::WithParamInterface<std::string> {};

// Two containers get addresses from host-local, reach each other through
// vdev, pass CHECK, and DEL removes everything; the result is in the
// version's own format.
TEST_P(CniVersionTest, TwoContainersReachEachOtherThroughVdevAndLeaveNothing) {
  const std::string version = GetParam();
  Netns a, b;
  const Mac macA = uniqueMac(), macB = uniqueMac();
  const OJson c = conf(version);
  // A runtime's CNI_ARGS: unknown keys are ignored, MAC is used.
  const OJson ra = add(inv("ADD", "ctr-a-" + a.name(), &a, "eth0",
                           "IgnoreUnknown=1;K8S_POD_NAME=a;MAC=" + macString(macA)), c);
  const OJson rb =
      add(inv("ADD", "ctr-b-" + b.name(), &b, "eth0", "IgnoreUnknown=1;MAC=" + macString(macB)), c);

  for (const auto& [r, ns, mac] : {std::tuple{&ra, &a, macA}, std::tuple{&rb, &b, macB}}) {
    SCOPED_TRACE(r->dump());
    EXPECT_EQ((*r)["cniVersion"], version);
    ASSERT_EQ((*r)["interfaces"].size(), 2u);
    const OJson& host = (*r)["interfaces"][0];
    const OJson& ctr = (*r)["interfaces"][1];
    const std::string port = host["name"];
    EXPECT_TRUE(std::regex_match(port, std::regex("vc[a-z2-7]{13}"))) << port;
    EXPECT_FALSE(host.contains("sandbox"));
    EXPECT_EQ(host["mac"], macString(linkInfo(port).address));
    EXPECT_EQ(ctr["name"], "eth0");
    EXPECT_EQ(ctr["sandbox"], "/run/netns/" + ns->name());
    EXPECT_EQ(ctr["mac"], macString(mac));
    EXPECT_EQ(host.contains("mtu"), version == "1.1.0");
    ASSERT_EQ((*r)["ips"].size(), 1u);
    const OJson& ip = (*r)["ips"][0];
    EXPECT_EQ(ip["interface"], 1);
    EXPECT_EQ(ip.contains("version"), version == "0.4.0");
    if (version == "0.4.0") {
      EXPECT_EQ(ip["version"], "4");
    }
    EXPECT_EQ(std::string(ip["address"]).rfind("198.18.200.", 0), 0u);
    EXPECT_EQ(std::string(ip["address"]).substr(std::string(ip["address"]).size() - 3), "/24");
    EXPECT_TRUE((*r)["dns"].is_object());

    // The container has the interface, the MAC, the MTU and the address.
    const LinkInfo li = linkInfo("eth0", ns);
    EXPECT_EQ(li.address, mac);
    EXPECT_EQ(li.mtu, 1500);
    EXPECT_TRUE(li.up);
    EXPECT_NE(ns->ip("-4 addr show dev eth0").find(std::string(ip["address"])), std::string::npos);
    // vdevd has the port; its device is the veth the plugin reported.
    auto info = client().portGet(port);
    ASSERT_TRUE(info) << info.error().message();
    EXPECT_EQ(info->type, vdev::proto::PortType::kVeth);
    EXPECT_EQ(int(info->ifindex), linkInfo(port).ifindex);
  }
  const std::string pa = ra["interfaces"][0]["name"], pb = rb["interfaces"][0]["name"];
  ASSERT_TRUE(waitUntil([&] { return client().portGet(pa)->live && client().portGet(pb)->live; },
                        5s, 20ms));

  // a <-> b through vdev: the only path between the two namespaces.
  const PingResult p1 = ping(a, addressOf(rb), 5);
  EXPECT_TRUE(p1.cmd.ok()) << p1.describe();
  EXPECT_EQ(p1.received, 5) << p1.describe();
  const PingResult p2 = ping(b, addressOf(ra), 3);
  EXPECT_TRUE(p2.cmd.ok()) << p2.describe();
  EXPECT_EQ(p2.received, 3) << p2.describe();
  // At least the 8 requests and 8 replies (plus ARP) went through vdevd.
  EXPECT_GE(portStats(pa).counters[vdev::stats::kRxPackets], 8u);
  EXPECT_GE(portStats(pa).counters[vdev::stats::kTxPackets], 8u);
  EXPECT_GE(portStats(pb).counters[vdev::stats::kRxPackets], 8u);
  EXPECT_GE(portStats(pb).counters[vdev::stats::kTxPackets], 8u);

  // CHECK with the ADD result as prevResult.
  const Invocation checkA = inv("CHECK", "ctr-a-" + a.name(), &a);
  expectOk(runPlugin(checkA, withPrev(c, ra).dump()), "CHECK");
  expectOk(runPlugin(inv("CHECK", "ctr-b-" + b.name(), &b), withPrev(c, rb).dump()), "CHECK");
  // ... and it notices a container whose address was taken away.
  a.ip("addr del " + std::string(ra["ips"][0]["address"]) + " dev eth0");
  expectError(runPlugin(checkA, withPrev(c, ra).dump()), 103, version, "missing");
  // ... or whose port vdevd no longer has.
  ASSERT_TRUE(client().portDel(pb));
  expectError(runPlugin(inv("CHECK", "ctr-b-" + b.name(), &b), withPrev(c, rb).dump()), 103,
              version, "not attached");

  // DEL (with prevResult, as a runtime sends it), twice: the second finds
  // nothing and succeeds.
  for (int round = 0; round < 2; ++round) {
    expectOk(runPlugin(inv("DEL", "ctr-a-" + a.name(), &a), withPrev(c, ra).dump()), "DEL a");
    expectOk(runPlugin(inv("DEL", "ctr-b-" + b.name(), &b), withPrev(c, rb).dump()), "DEL b");
  }
  EXPECT_TRUE(portNames().empty());
  EXPECT_FALSE(linkExists(pa));
  EXPECT_FALSE(linkExists(pb));
  EXPECT_FALSE(linkExists("eth0", &a));
  EXPECT_FALSE(linkExists("eth0", &b));
  EXPECT_TRUE(allocations().empty()) << "host-local still holds " << allocations().size();
  EXPECT_EQ(readFile(state_).find(pa), std::string::npos) << readFile(state_);
  expectCleanStop(*vdevd_);
}

// Not first in a conflist: ADD gets the result of an earlier plugin as
// prevResult, and its own result is that one plus vdev-cni's interfaces and
// addresses, the indexes of its addresses counted in the merged list. CHECK
// accepts the merged result (the earlier plugin's route is on its own
// interface), and DEL leaves the earlier plugin's things alone.
TEST_P(CniVersionTest, AddMergesPrevResultOfAnEarlierPlugin) {
  const std::string version = GetParam();
  const bool v04 = version == "0.4.0";
  Netns a;
  const std::string nsPath = "/run/netns/" + a.name();
  // What a fake earlier plugin made: net0 with an address and a route.
  // (A veth pair inside the namespace: kernels without the dummy module have it.)
  a.ip("link add net0 address 02:00:00:00:0e:01 type veth peer name net0p");
  a.ip("addr add 198.18.250.2/24 dev net0");
  a.ip("link set net0p up");
  a.ip("link set net0 up");
  a.ip("route add 198.18.251.0/24 via 198.18.250.1 dev net0");
  OJson prevIp = {{"interface", 0}, {"address", "198.18.250.2/24"}, {"gateway", "198.18.250.1"}};
  if (v04) prevIp["version"] = "4";
  const OJson prevItf = {{"name", "net0"}, {"mac", "02:00:00:00:0e:01"}, {"sandbox", nsPath}};
  const OJson prevRoute = {{"dst", "198.18.251.0/24"}, {"gw", "198.18.250.1"}};
  const OJson prev = {{"cniVersion", version},
                      {"interfaces", OJson::array({prevItf})},
                      {"ips", OJson::array({prevIp})},
                      {"routes", OJson::array({prevRoute})},
                      {"dns", {{"nameservers", {"198.18.250.53"}}, {"search", {"prev.example"}}}}};
  const OJson c = withPrev(conf(version), prev);

  const OJson r = add(inv("ADD", "ctr-chain", &a), c);
  SCOPED_TRACE(r.dump());
  EXPECT_EQ(r["cniVersion"], version);
  // interfaces: the earlier plugin's first, unchanged; then the host end and
  // the container end.
  ASSERT_EQ(r["interfaces"].size(), 3u);
  EXPECT_EQ(r["interfaces"][0], prevItf);
  const std::string port = r["interfaces"][1]["name"];
  EXPECT_TRUE(std::regex_match(port, std::regex("vc[a-z2-7]{13}"))) << port;
  EXPECT_FALSE(r["interfaces"][1].contains("sandbox"));
  EXPECT_EQ(r["interfaces"][2]["name"], "eth0");
  EXPECT_EQ(r["interfaces"][2]["sandbox"], nsPath);
  // ips: the earlier one still naming interface 0; vdev-cni's naming 2.
  ASSERT_EQ(r["ips"].size(), 2u);
  EXPECT_EQ(r["ips"][0]["interface"], 0);
  EXPECT_EQ(r["ips"][0]["address"], "198.18.250.2/24");
  EXPECT_EQ(r["ips"][0]["gateway"], "198.18.250.1");
  EXPECT_EQ(r["ips"][0].contains("version"), v04);
  EXPECT_EQ(r["ips"][1]["interface"], 2);
  const std::string addr = r["ips"][1]["address"];
  EXPECT_EQ(addr.rfind("198.18.200.", 0), 0u) << addr;
  EXPECT_EQ(r["ips"][1].contains("version"), v04);
  ASSERT_EQ(r["routes"].size(), 1u);
  EXPECT_EQ(r["routes"][0], prevRoute);
  EXPECT_EQ(r["dns"]["nameservers"], OJson::array({"198.18.250.53"}));
  EXPECT_EQ(r["dns"]["search"], OJson::array({"prev.example"}));
  // The container end got vdev-cni's address, not the earlier one's.
  EXPECT_NE(a.ip("-4 addr show dev eth0").find(addr), std::string::npos);
  EXPECT_EQ(a.ip("-4 addr show dev eth0").find("198.18.250.2"), std::string::npos);
  EXPECT_EQ(portNames(), std::vector<std::string>{port});

  // CHECK with the merged result (the chain's final result) as prevResult.
  const OJson checked = withPrev(conf(version), r);
  expectOk(runPlugin(inv("CHECK", "ctr-chain", &a), checked.dump()), "CHECK");
  expectOk(runPlugin(inv("DEL", "ctr-chain", &a), checked.dump()), "DEL");
  EXPECT_TRUE(portNames().empty());
  EXPECT_FALSE(linkExists(port));
  EXPECT_FALSE(linkExists("eth0", &a));
  EXPECT_TRUE(linkExists("net0", &a));
  EXPECT_TRUE(allocations().empty()) << "host-local still holds " << allocations().size();
}

// A Debian 12 host (Linux 6.1) has neither tcx nor the netdev family:
// vdevd attaches the containers' skb programs as cls_bpf filters at clsact
// and knows devices' XDP features by their driver (here asked for, on a
// newer kernel, with the options that take those ways). Containers get
// their addresses, reach each other -- learned unicast on the kernel fast
// path (bpf_redirect_peer from the filter), counted -- and DEL leaves no
// vdev filter and no port.
TEST_F(CniTest, ContainersOnClassicTcWithoutTheNetdevFamily) {
  expectCleanStop(*vdevd_);
  vdevd_ = std::make_unique<Vdevd>(std::vector<std::string>{"--socket", sock_, "--state", state_, "--default-hook",
                                                            "auto", "--tc-attach", "clsact", "--xdp-features",
                                                            "driver", "--fast-path"});
  Netns a, b;
  const OJson c = conf("1.0.0");
  const OJson ra = add(inv("ADD", "ctr-a-" + a.name(), &a), c);
  const OJson rb = add(inv("ADD", "ctr-b-" + b.name(), &b), c);
  const std::string pa = ra["interfaces"][0]["name"], pb = rb["interfaces"][0]["name"];
  ASSERT_TRUE(waitUntil([&] { return client().portGet(pa)->live && client().portGet(pb)->live; }, 5s, 20ms));
  for (const std::string& p : {pa, pb}) {
    auto info = client().portGet(p);
    ASSERT_TRUE(info) << info.error().message();
    EXPECT_EQ(info->hook, std::optional<vdev::proto::PortHook>(vdev::proto::PortHook::kTc));
    EXPECT_EQ(info->tc_attach, std::optional<vdev::proto::TcAttach>(vdev::proto::TcAttach::kClsact));
    EXPECT_TRUE(info->hook_note.empty()) << info->hook_note;
    const auto f = vdevFilters(p);
    ASSERT_EQ(f.size(), 1u) << p;
    EXPECT_EQ(f[0].prog_name, "vdev_tc_port");
  }
  const PingResult p1 = ping(a, addressOf(rb), 3);
  EXPECT_EQ(p1.received, 3) << p1.describe();
  // Both stations learned: what follows takes the fast path.
  const auto fast = [&] {
    return portStats(pa).counters[vdev::stats::kProgFast] + portStats(pb).counters[vdev::stats::kProgFast];
  };
  const uint64_t before = fast();
  const PingResult p2 = ping(b, addressOf(ra), 5);
  EXPECT_EQ(p2.received, 5) << p2.describe();
  EXPECT_GE(fast() - before, 8u) << "learned unicast did not take the skb path's fast path";
  expectOk(runPlugin(inv("DEL", "ctr-a-" + a.name(), &a), withPrev(c, ra).dump()), "DEL a");
  expectOk(runPlugin(inv("DEL", "ctr-b-" + b.name(), &b), withPrev(c, rb).dump()), "DEL b");
  EXPECT_TRUE(portNames().empty());
  EXPECT_FALSE(linkExists(pa));
  EXPECT_FALSE(linkExists(pb));
  expectCleanStop(*vdevd_);
}

INSTANTIATE_TEST_SUITE_P(Versions, CniVersionTest, ::testing::Values("0.4.0", "1.0.0", "1.1.0"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = "v" + p.param;
                           for (char& ch : s)
                             if (ch == '.') ch = '_';
                           return s;
                         });

// "portType": "netkit" (Linux 6.7+): ADD makes netkit pairs, the two
// containers reach each other, CHECK knows the type, DEL leaves nothing. A
// kernel without netkit refuses ADD with the reason (skipped there); an
// unknown portType is an invalid configuration.
TEST_F(CniTest, NetkitPortTypeContainersReachEachOtherAndDelLeavesNothing) {
  const std::string version = "1.1.0";
  Netns a, b;
  OJson c = conf(version);
  c["portType"] = "bridge";
  expectError(runPlugin(inv("ADD", "ctr-x-" + a.name(), &a), c.dump()), 7, version, "portType");
  c["portType"] = "netkit";
  const Outcome first = runPlugin(inv("ADD", "ctr-a-" + a.name(), &a), c.dump());
  if (first.status != 0 && first.describe().find("has no netkit") != std::string::npos)
    GTEST_SKIP() << "no netkit in this kernel: " << first.describe();
  ASSERT_EQ(first.status, 0) << first.describe();
  const OJson ra = first.json();
  links_.add(ra["interfaces"][0].value("name", ""));
  const OJson rb = add(inv("ADD", "ctr-b-" + b.name(), &b), c);
  const std::string pa = ra["interfaces"][0]["name"], pb = rb["interfaces"][0]["name"];
  for (const std::string& p : {pa, pb}) {
    auto info = client().portGet(p);
    ASSERT_TRUE(info) << info.error().message();
    EXPECT_EQ(info->type, vdev::proto::PortType::kNetkit);
  }
  ASSERT_TRUE(waitUntil([&] { return client().portGet(pa)->live && client().portGet(pb)->live; }, 5s, 20ms));
  const PingResult p1 = ping(a, addressOf(rb), 3);
  EXPECT_EQ(p1.received, 3) << p1.describe();
  expectOk(runPlugin(inv("CHECK", "ctr-a-" + a.name(), &a), withPrev(c, ra).dump()), "CHECK");
  expectOk(runPlugin(inv("DEL", "ctr-a-" + a.name(), &a), withPrev(c, ra).dump()), "DEL a");
  expectOk(runPlugin(inv("DEL", "ctr-b-" + b.name(), &b), withPrev(c, rb).dump()), "DEL b");
  EXPECT_TRUE(portNames().empty());
  EXPECT_FALSE(linkExists(pa));
  EXPECT_FALSE(linkExists(pb));
  EXPECT_FALSE(linkExists("eth0", &a));
  EXPECT_TRUE(allocations().empty()) << "host-local still holds " << allocations().size();
  expectCleanStop(*vdevd_);
}

// A failed ADD leaves nothing behind: no port, no veth, no address held.
// "uplink": the veths take the uplink port's MTU (a VXLAN device's, here
// 1400); an "mtu" up to it is kept, a larger one or an uplink that is no
// port of vdevd is an invalid configuration (7) that makes nothing.
TEST_F(CniTest, UplinkSizesTheContainersMtu) {
  const std::string vx = uniqueName('x');
  struct Del {
    std::string n;
    ~Del() { tryRun("ip link del " + n); }
  } del{vx};
  run("ip link add " + vx + " type vxlan id 4244 dstport 4789 local 198.18.250.1");
  run("ip link set " + vx + " mtu 1400 up");
  vdev::proto::PortAddRequest up;
  up.name = vx;
  up.type = vdev::proto::PortType::kNetdev;
  ASSERT_TRUE(client().portAdd(up).ok());
  Netns a, b;
  OJson c = conf("1.0.0");
  c.erase("mtu");
  c["uplink"] = vx;
  const OJson ra = add(inv("ADD", "ctr-a", &a), c);
  EXPECT_EQ(linkInfo("eth0", &a).mtu, 1400) << "the uplink's MTU";
  EXPECT_EQ(linkInfo(ra["interfaces"][0]["name"], nullptr).mtu, 1400) << "both veth ends";
  c["mtu"] = 1300;
  add(inv("ADD", "ctr-b", &b), c);
  EXPECT_EQ(linkInfo("eth0", &b).mtu, 1300) << "an mtu below the uplink's is kept";
  expectOk(runPlugin(inv("DEL", "ctr-b", &b), c.dump()), "DEL");
  const size_t held = allocations().size();
  c["mtu"] = 1500;
  expectError(runPlugin(inv("ADD", "ctr-b", &b), c.dump()), 7, "1.0.0", "larger than uplink " + vx + "'s MTU 1400");
  c.erase("mtu");
  c["uplink"] = vx + "n";
  expectError(runPlugin(inv("ADD", "ctr-b", &b), c.dump()), 7, "1.0.0", "is not a port of vdevd");
  EXPECT_FALSE(linkExists("eth0", &b));
  EXPECT_EQ(allocations().size(), held) << "a refused ADD holds no address";
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), conf("1.0.0").dump()), "DEL");
}

// "portIsolation": true (bridge CNI's key) makes the container's port
// isolated; without it, it is not.
TEST_F(CniTest, PortIsolationMakesAnIsolatedPort) {
  Netns a, b;
  OJson c = conf("1.0.0");
  c["portIsolation"] = true;
  const OJson ra = add(inv("ADD", "ctr-a", &a), c);
  const OJson rb = add(inv("ADD", "ctr-b", &b), conf("1.0.0"));
  auto pa = client().portGet(ra["interfaces"][0]["name"]);
  auto pb = client().portGet(rb["interfaces"][0]["name"]);
  ASSERT_TRUE(pa && pb);
  EXPECT_TRUE(pa->isolated);
  EXPECT_FALSE(pb->isolated);
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), c.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-b", &b), conf("1.0.0").dump()), "DEL");
}

// stormControl and ingressPolicer give the container's port its own
// limits; a container without them has vdevd's defaults.
TEST_F(CniTest, StormControlAndPolicerGiveThePortItsLimits) {
  Netns a, b;
  OJson c = conf("1.0.0");
  c["stormControl"] = {{"broadcastPps", 200}, {"multicastPps", 0}, {"unknownUnicastPps", 300}};
  c["ingressPolicer"] = {{"pps", 50000}, {"bps", 100000000}, {"burstMs", 20}};
  const OJson ra = add(inv("ADD", "ctr-a", &a), c);
  const OJson rb = add(inv("ADD", "ctr-b", &b), conf("1.0.0"));
  auto pa = client().portGet(ra["interfaces"][0]["name"]);
  auto pb = client().portGet(rb["interfaces"][0]["name"]);
  ASSERT_TRUE(pa && pb && pa->limits && pb->limits);
  const auto& la = *pa->limits;
  const auto& lb = *pb->limits;
  EXPECT_EQ(la.storm_bcast, 200u);
  EXPECT_EQ(la.storm_mcast, 0u);
  EXPECT_EQ(la.storm_unknown, 300u);
  EXPECT_EQ(la.police_pps, 50000u);
  EXPECT_EQ(la.police_bps, 100000000u);
  EXPECT_EQ(la.police_burst_ms, 20u);
  EXPECT_EQ(lb.storm_bcast, 10000u);
  EXPECT_EQ(lb.storm_mcast, 10000u);
  EXPECT_EQ(lb.police_pps, 0u);
  EXPECT_EQ(lb.police_bps, 0u);
  // A key of the wrong type is refused before anything is made.
  OJson bad = conf("1.0.0");
  bad["stormControl"] = {{"broadcastPps", "lots"}};
  Netns x;
  expectError(runPlugin(inv("ADD", "ctr-x", &x), bad.dump()), 6, "1.0.0", "broadcastPps");
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), c.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-b", &b), conf("1.0.0").dump()), "DEL");
}

// macspoofchk (bridge CNI's key): the port may send only the container
// interface's MAC -- the one the result reports, given or picked by the
// plugin -- and a container without it any source.
TEST_F(CniTest, MacSpoofCheckAllowsOnlyTheContainersMac) {
  Netns a, b, m;
  OJson c = conf("1.0.0");
  c["macspoofchk"] = true;
  const OJson ra = add(inv("ADD", "ctr-a", &a), c);
  OJson given = c;
  given["mac"] = "02:5c:00:00:00:01";
  const OJson rm = add(inv("ADD", "ctr-m", &m), given);
  const OJson rb = add(inv("ADD", "ctr-b", &b), conf("1.0.0"));
  auto pa = client().portGet(ra["interfaces"][0]["name"]);
  auto pm = client().portGet(rm["interfaces"][0]["name"]);
  auto pb = client().portGet(rb["interfaces"][0]["name"]);
  ASSERT_TRUE(pa && pm && pb && pa->limits && pm->limits && pb->limits);
  ASSERT_FALSE(vdev::macIsZero(pa->limits->allowed_mac));
  EXPECT_EQ(formatMac(pa->limits->allowed_mac), ra["interfaces"][1]["mac"].get<std::string>()) << ra.dump();
  ASSERT_FALSE(vdev::macIsZero(pm->limits->allowed_mac));
  EXPECT_EQ(formatMac(pm->limits->allowed_mac), "02:5c:00:00:00:01");
  EXPECT_TRUE(vdev::macIsZero(pb->limits->allowed_mac));
  OJson bad = conf("1.0.0");
  bad["macspoofchk"] = "yes";
  Netns x;
  expectError(runPlugin(inv("ADD", "ctr-x", &x), bad.dump()), 6, "1.0.0", "macspoofchk");
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), c.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-m", &m), given.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-b", &b), conf("1.0.0").dump()), "DEL");
}

// spoofCheck: the container's MAC and the addresses IPAM gave it are all
// its port may send from (ALLOWED_MAC, ALLOWED_IPS); its kernel reaches the
// other container from its own address, not from one it adds itself, and
// the port counts what it dropped (drops.spoof_ip).
TEST_F(CniTest, SpoofCheckLocksTheContainersMacAndIpamsAddresses) {
  Netns a, b;
  OJson c = conf("1.0.0");
  c["spoofCheck"] = true;
  const OJson ra = add(inv("ADD", "ctr-a", &a), c);
  const OJson rb = add(inv("ADD", "ctr-b", &b), conf("1.0.0"));
  const std::string pa = ra["interfaces"][0]["name"], pb = rb["interfaces"][0]["name"];
  auto la = client().portGet(pa);
  auto lb = client().portGet(pb);
  ASSERT_TRUE(la && lb && la->limits && lb->limits);
  ASSERT_FALSE(vdev::macIsZero(la->limits->allowed_mac));
  EXPECT_EQ(formatMac(la->limits->allowed_mac), ra["interfaces"][1]["mac"].get<std::string>()) << ra.dump();
  ASSERT_EQ(la->limits->allowed_ips.size(), 1u) << ra.dump();
  EXPECT_EQ(formatIp(la->limits->allowed_ips[0]), addressOf(ra)) << ra.dump();
  EXPECT_TRUE(la->limits->ra_guard && la->limits->dhcp_guard) << "a container is no router, no DHCP server";
  EXPECT_TRUE(vdev::macIsZero(lb->limits->allowed_mac));
  EXPECT_TRUE(lb->limits->allowed_ips.empty());
  EXPECT_FALSE(lb->limits->ra_guard || lb->limits->dhcp_guard);
  ASSERT_TRUE(waitUntil([&] { return client().portGet(pa)->live && client().portGet(pb)->live; }, 5s, 20ms));

  const PingResult own = ping(a, addressOf(rb), 2);
  EXPECT_EQ(own.received, 2) << own.describe();
  const uint64_t spoofed0 = portStats(pa).counters[vdev::stats::kDropSpoofIp];
  a.exec("ip addr add 198.18.200.250/24 dev eth0");
  a.exec("ip neigh flush dev eth0");
  const CmdResult other = tryRun("ip netns exec " + a.name() + " ping -c 1 -W 1 -I 198.18.200.250 " + addressOf(rb));
  EXPECT_FALSE(other.ok()) << "a ping from an address IPAM did not give got an answer: " << other.out;
  EXPECT_GT(portStats(pa).counters[vdev::stats::kDropSpoofIp], spoofed0);
  OJson bad = conf("1.0.0");
  bad["spoofCheck"] = 1;
  Netns x;
  expectError(runPlugin(inv("ADD", "ctr-x", &x), bad.dump()), 6, "1.0.0", "spoofCheck");
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), c.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-b", &b), conf("1.0.0").dump()), "DEL");
}

// bridge CNI's VLAN keys: containers of one network with "vlan": 10 reach
// each other; one with "vlan": 20 (its address in the same subnet, from the
// same IPAM) reaches neither. preserveDefaultVlan (default true) keeps VLAN
// 1 on the port, untagged; false takes it off. vlanTrunk makes a trunk.
TEST_F(CniTest, VlanKeysPutContainersInTheirVlan) {
  Netns a, b, c, t;
  OJson ten = conf("1.0.0"), twenty = conf("1.0.0"), trunk = conf("1.0.0");
  ten["vlan"] = 10;
  twenty["vlan"] = 20;
  twenty["preserveDefaultVlan"] = false;
  trunk["vlanTrunk"] = OJson::array({OJson{{"id", 10}}, OJson{{"minID", 20}, {"maxID", 29}}});
  const OJson ra = add(inv("ADD", "ctr-a", &a), ten);
  const OJson rb = add(inv("ADD", "ctr-b", &b), ten);
  const OJson rc = add(inv("ADD", "ctr-c", &c), twenty);
  const OJson rt = add(inv("ADD", "ctr-t", &t), trunk);
  const std::string pa = ra["interfaces"][0]["name"], pb = rb["interfaces"][0]["name"],
                    pc = rc["interfaces"][0]["name"], pt = rt["interfaces"][0]["name"];
  auto la = client().portGet(pa), lc = client().portGet(pc), lt = client().portGet(pt);
  ASSERT_TRUE(la && lc && lt && la->limits && lc->limits && lt->limits);
  EXPECT_EQ(formatVlanConfig(la->limits->vlan), "vlan 10 untagged 1");
  EXPECT_EQ(formatVlanConfig(lc->limits->vlan), "vlan 20");
  EXPECT_EQ(formatVlanConfig(lt->limits->vlan), "trunk 10,20-29 native 1");
  ASSERT_TRUE(waitUntil([&] { return client().portGet(pa)->live && client().portGet(pb)->live &&
                                     client().portGet(pc)->live; }, 5s, 20ms));
  const PingResult same = ping(a, addressOf(rb), 2);
  EXPECT_EQ(same.received, 2) << same.describe();
  const CmdResult other = tryRun("ip netns exec " + a.name() + " ping -c 2 -i 0.2 -W 1 " + addressOf(rc));
  EXPECT_FALSE(other.ok()) << "VLAN 10 reached VLAN 20: " << other.out;
  OJson bad = conf("1.0.0");
  bad["vlan"] = 4095;
  Netns x;
  expectError(runPlugin(inv("ADD", "ctr-x", &x), bad.dump()), 7, "1.0.0", "vlan: 4095 is not a VLAN ID");
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), ten.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-b", &b), ten.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-c", &c), twenty.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-t", &t), trunk.dump()), "DEL");
}

TEST_F(CniTest, FailedAddLeavesNothing) {
  Netns a, b;
  // A namespace that does not exist: refused before anything is made.
  Invocation i = inv("ADD", "ctr-x", nullptr);
  i.netns = "/run/netns/" + a.name() + "-gone";
  expectError(runPlugin(i, conf("1.0.0").dump()), 102, "1.0.0", i.netns);

  // An IPAM plugin that is not in CNI_PATH.
  OJson c = conf("1.0.0");
  c["ipam"]["type"] = "no-such-ipam";
  expectError(runPlugin(inv("ADD", "ctr-x", &a), c.dump()), 101, "1.0.0", "no-such-ipam");
  EXPECT_TRUE(portNames().empty());
  EXPECT_FALSE(linkExists("eth0", &a));

  // A /30 has one address for a container (the other is the gateway): the
  // second ADD fails in IPAM after vdevd made its port -- which goes again.
  const OJson small = conf("1.0.0", "vcsmall", "198.18.201.0/30");
  const OJson ra = add(inv("ADD", "ctr-a", &a), small);
  const Outcome o = runPlugin(inv("ADD", "ctr-b", &b), small.dump());
  EXPECT_EQ(o.status, 1) << o.describe();
  EXPECT_NE(o.json().value("msg", "").find("host-local"), std::string::npos) << o.out;
  EXPECT_EQ(portNames(), std::vector<std::string>{ra["interfaces"][0]["name"]});
  EXPECT_FALSE(linkExists("eth0", &b));
  EXPECT_EQ(allocations("vcsmall").size(), 1u);

  // The same attachment again: the interface exists; the first one is unharmed.
  expectError(runPlugin(inv("ADD", "ctr-a", &a), small.dump()), 102, "1.0.0", "already exists");
  expectOk(runPlugin(inv("CHECK", "ctr-a", &a), withPrev(small, ra).dump()), "CHECK");
  // The same container and ifname into another namespace: vdevd refuses the
  // port name, which is the attachment's.
  expectError(runPlugin(inv("ADD", "ctr-a", &b), small.dump()), 100, "1.0.0", "already added");
  EXPECT_EQ(allocations("vcsmall").size(), 1u);

  expectOk(runPlugin(inv("DEL", "ctr-a", &a), small.dump()), "DEL");
  EXPECT_TRUE(portNames().empty());
  EXPECT_TRUE(allocations("vcsmall").empty());
}

// A malformed prevResult is a decoding error (6) naming it for ADD and CHECK,
// and ADD makes nothing: no port, no veth, no address held. DEL ignores
// prevResult (it is best effort: a runtime that cannot DEL leaks the
// attachment) and removes everything ADD made; GC and STATUS ignore it too.
TEST_F(CniTest, MalformedPrevResultFailsAddAndCheckButNotDel) {
  Netns a;
  const OJson itf = {{"name", "net0"}};
  const OJson cases[] = {
      "not a result",
      {{"interfaces", "net0"}},
      {{"interfaces", OJson::array({OJson{{"mac", "02:00:00:00:0e:01"}}})}},  // no name
      {{"interfaces", OJson::array({itf})},
       {"ips", OJson::array({OJson{{"interface", 1}, {"address", "198.18.250.2/24"}}})}},
      {{"ips", OJson::array({OJson{{"interface", 0}}})}},  // no address
      {{"ips", OJson::array({OJson{{"address", "198.18.250.2/24"}, {"version", "6"}}})}},
      {{"routes", OJson::array({OJson{{"gw", "198.18.250.1"}}})}},  // no dst
      {{"dns", {{"nameservers", "198.18.250.53"}}}},
  };
  const OJson c = conf("1.0.0");
  for (const OJson& prev : cases) {
    SCOPED_TRACE(prev.dump());
    const OJson bad = withPrev(c, prev);
    expectError(runPlugin(inv("ADD", "ctr-bad", &a), bad.dump()), 6, "1.0.0", "prevResult");
    EXPECT_TRUE(portNames().empty());
    EXPECT_FALSE(linkExists("eth0", &a));
    EXPECT_TRUE(allocations().empty()) << "host-local holds " << allocations().size();

    // A container added with a good configuration: CHECK with the malformed
    // prevResult is 6 and changes nothing; DEL with it removes everything.
    const OJson r = add(inv("ADD", "ctr-del", &a), c);
    const std::string port = r["interfaces"][0]["name"];
    expectError(runPlugin(inv("CHECK", "ctr-del", &a), bad.dump()), 6, "1.0.0", "prevResult");
    EXPECT_EQ(portNames(), std::vector<std::string>{port});
    EXPECT_EQ(allocations().size(), 1u);
    expectOk(runPlugin(inv("DEL", "ctr-del", &a), bad.dump()), "DEL with a malformed prevResult");
    EXPECT_TRUE(portNames().empty());
    EXPECT_FALSE(linkExists(port));
    EXPECT_FALSE(linkExists("eth0", &a));
    EXPECT_TRUE(allocations().empty()) << "host-local still holds " << allocations().size();
    EXPECT_EQ(readFile(state_).find(port), std::string::npos) << readFile(state_);
  }

  // GC and STATUS (1.1.0) get no prevResult from a runtime; one that is
  // there anyway, malformed, is ignored.
  const OJson c11 = conf("1.1.0");
  for (const OJson& prev : cases) {
    SCOPED_TRACE(prev.dump());
    OJson gc = withPrev(c11, prev);
    gc["cni.dev/valid-attachments"] = OJson::array();
    expectOk(runPlugin({"GC", "", "", "", "", "", {}}, gc.dump()), "GC");
    expectOk(runPlugin({"STATUS", "", "", "", "", "", {}}, withPrev(c11, prev).dump()), "STATUS");
  }
}

// DEL succeeds when the container's namespace is already gone, without
// CNI_NETNS, and for an attachment that never existed.
TEST_F(CniTest, DelSucceedsWhenThingsAreAlreadyGone) {
  const std::string nsName = uniqueName('n');
  ASSERT_TRUE(tryRun("ip netns add " + nsName).ok());
  struct NsGuard {
    std::string n;
    ~NsGuard() { tryRun("ip netns del " + n + " 2>/dev/null"); }
  } guard{nsName};
  const OJson c = conf("1.0.0");
  Invocation i = {"ADD", "ctr-gone", "/run/netns/" + nsName, "eth0", "", "", {}};
  const OJson r = add(i, c);
  const std::string port = r["interfaces"][0]["name"];
  EXPECT_EQ(allocations().size(), 1u);

  // The runtime removed the namespace first: the veth pair went with it.
  ASSERT_TRUE(tryRun("ip netns del " + nsName).ok());
  ASSERT_TRUE(waitUntil([&] { return !linkExists(port); }, 2s));
  i.command = "DEL";
  expectOk(runPlugin(i, withPrev(c, r).dump()), "DEL after the namespace went");
  EXPECT_TRUE(portNames().empty());
  EXPECT_TRUE(allocations().empty());
  i.netns = "";
  expectOk(runPlugin(i, c.dump()), "DEL without CNI_NETNS");
  i.containerId = "never-added";
  expectOk(runPlugin(i, c.dump()), "DEL of an attachment that never was");
}

// vdevd stopped: ADD makes nothing and says "try again later" naming the
// socket; DEL too (the address stays reserved until the port is gone).
TEST_F(CniTest, VdevdDownIsTryAgainLater) {
  Netns a;
  const OJson c = conf("1.0.0");
  const OJson r = add(inv("ADD", "ctr-a", &a), c);
  ASSERT_EQ(vdevd_->stop(), 0) << vdevd_->logs();

  expectError(runPlugin(inv("ADD", "ctr-b", &a, "net1"), c.dump()), 11, "1.0.0", sock_);
  EXPECT_FALSE(linkExists("net1", &a));
  EXPECT_EQ(allocations().size(), 1u);
  expectError(runPlugin(inv("DEL", "ctr-a", &a), c.dump()), 11, "1.0.0", sock_);
  EXPECT_EQ(allocations().size(), 1u) << "the address was released while the port is still there";

  // vdevd back (from its state file): DEL goes through.
  vdevd_ = std::make_unique<Vdevd>(std::vector<std::string>{"--socket", sock_, "--state", state_});
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), c.dump()), "DEL");
  EXPECT_TRUE(portNames().empty());
  EXPECT_TRUE(allocations().empty());
  EXPECT_FALSE(linkExists(r["interfaces"][0]["name"]));
}

// GC (1.1.0) removes this network's ports that have no valid attachment and
// nothing else; STATUS reports whether vdevd can take ADDs.
TEST_F(CniTest, GcRemovesStaleAttachmentsAndStatusReportsVdevd) {
  Netns a, b, o;
  const OJson c = conf("1.1.0");
  const OJson ra = add(inv("ADD", "ctr-a", &a), c);
  const OJson rb = add(inv("ADD", "ctr-b", &b), c);
  const OJson other = conf("1.1.0", "vcother", "198.18.202.0/24");
  const OJson ro = add(inv("ADD", "ctr-o", &o), other);
  const std::string pa = ra["interfaces"][0]["name"], pb = rb["interfaces"][0]["name"],
                    po = ro["interfaces"][0]["name"];

  OJson gc = c;
  gc["cni.dev/valid-attachments"] = OJson::array({{{"containerID", "ctr-a"}, {"ifname", "eth0"}}});
  expectOk(runPlugin({"GC", "", "", "", "", "", {}}, gc.dump()), "GC");
  const auto names = portNames();
  const std::set<std::string> left(names.begin(), names.end());
  EXPECT_EQ(left, (std::set<std::string>{pa, po}));
  EXPECT_FALSE(linkExists(pb));
  EXPECT_FALSE(linkExists("eth0", &b));
  expectOk(runPlugin(inv("CHECK", "ctr-a", &a), withPrev(c, ra).dump()), "CHECK after GC");

  expectOk(runPlugin({"STATUS", "", "", "", "", "", {}}, c.dump()), "STATUS");
  expectOk(runPlugin(inv("DEL", "ctr-a", &a), c.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-b", &b), c.dump()), "DEL");
  expectOk(runPlugin(inv("DEL", "ctr-o", &o), other.dump()), "DEL");
  EXPECT_TRUE(portNames().empty());
  ASSERT_EQ(vdevd_->stop(), 0) << vdevd_->logs();
  expectError(runPlugin({"STATUS", "", "", "", "", "", {}}, c.dump()), 50, "1.1.0", sock_);
}

}  // namespace
}  // namespace vdev::e2e
