// DaemonControl (vdevd's request handlers) on a datapath without devices:
// the policy for callers other than root, the MAC table dump with port
// names, and INFO's open-file figures and start issues.
#include <gtest/gtest.h>

#include <unistd.h>

#include <memory>

#include "daemon_control.h"
#include "datapath/datapath.h"
#include "datapath_test_access.h"

namespace vdev::daemon {
namespace {

using namespace vdev::proto;

class DaemonControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    datapath::DatapathConfig cfg;
    cfg.frames = 1024;
    // Room for 30,000 static entries: a keyed hash spreads MACs at random,
    // and a 16-bucket probe window of a random table is full somewhere
    // from about a third of it on (FdbDumpNamesEveryEntrysPort).
    cfg.fdb_size = 1u << 18;
    cfg.fdb_max_per_port = 0;
    cfg.fast_path = false;
    auto d = datapath::Datapath::create(cfg);
    ASSERT_TRUE(d.ok()) << d.error().message();
    dp = std::move(d.value());
    for (uint16_t i = 0; i < 3; i++)
      datapath::DatapathTestAccess::adoptPort(
          *dp, std::make_unique<datapath::Port>("p" + std::to_string(i), i, 1, cfg.port, 1500));
    state.ports.push_back({.name = "p1", .type = "veth", .managed = true});
    state.ports.push_back({.name = "p2", .type = "tap", .managed = true, .owner_uid = 1000, .tag = "cni:net1"});
    ControlContext ctx;
    ctx.dp = dp.get();
    ctx.state = &state;
    ctx.started = std::chrono::steady_clock::now();
    ctx.start_issues = {"state file x: line 3: unknown key 'colour'", "port p9 not restored"};
    control = std::make_unique<DaemonControl>(ctx);
  }
  Reply ask(RequestBody body, uid_t uid, uint64_t conn = 1) {
    Request r;
    r.body = std::move(body);
    PeerCred peer;
    peer.uid = uid;
    peer.gid = uid;
    peer.conn = conn;
    return control->handle(r, peer);
  }
  static void expectDenied(const Reply& r, const std::string& rule) {
    const auto* e = std::get_if<ErrorReply>(&r);
    ASSERT_TRUE(e) << "not refused";
    EXPECT_EQ(e->err, EPERM) << e->msg;
    EXPECT_NE(e->msg.find(rule), std::string::npos) << e->msg;
  }

  std::unique_ptr<datapath::Datapath> dp;
  DaemonState state;
  std::unique_ptr<DaemonControl> control;
};

TEST_F(DaemonControlTest, MembersChangeOnlyWhatIsTheirOwn) {
  const uid_t user = 1000;
  expectDenied(ask(PortAddRequest{"eth9", PortType::kNetdev}, user), "only root may set attach on a port");
  PortAddRequest tap{"vt9", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  tap.create->owner_uid = 0;
  expectDenied(ask(tap, user), "owned by the caller");
  tap.create->owner_uid.reset();
  tap.create->group_gid = 0;
  expectDenied(ask(tap, user), "one of the caller's");
  PortAddRequest veth{"vc9", PortType::kVeth, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  expectDenied(ask(veth, user), "vdevd's namespace is root's");
  // Nothing of what bounds its traffic or takes of the host, checked before
  // any device is made: a trunk of every VLAN, the policer and storm
  // control off (port_policy.h has every field).
  PortAddRequest trunk{"vt9", PortType::kTap, std::nullopt, XdpMode::kAuto, CreateOptions{}};
  trunk.limits.vlan.emplace();
  for (uint16_t v = 1; v <= kVidMax; v++) trunk.limits.vlan->tagged.set(v);
  trunk.limits.police_pps = 0;
  trunk.limits.storm_bcast = 0;
  expectDenied(ask(trunk, user), "only root may set trunk, storm-bcast, police-pps on a port");
  PortAddRequest hooked{"vt9", PortType::kTap, 2u, XdpMode::kAuto, CreateOptions{}};
  hooked.hook = PortHook::kXdp;
  hooked.create->multi_queue = true;
  expectDenied(ask(hooked, user), "only root may set queues, hook on a port");
  EXPECT_EQ(state.ports.size(), 2u);
  // The host's namespace (owned by root's user namespace), by a pid of this process's.
  veth.create->peer_netns_pid = uint32_t(::getpid());
  expectDenied(ask(veth, user), "administered by uid 0");
  // A path is root's, whatever it names (it would be a file-existence oracle).
  veth.create->peer_netns_pid.reset();
  for (const char* path : {"/proc/self/ns/net", "/etc/passwd", "/nonexistent/x"}) {
    veth.create->peer_netns_path = path;
    expectDenied(ask(veth, user), "members may give a namespace by name under /run/netns or by a pid of their own");
  }
  veth.create->peer_netns_path.reset();
  expectDenied(ask(PortDelRequest{"p1"}, user), "added by uid 0");
  expectDenied(ask(PortDelRequest{"p2"}, 1001), "added by uid 1000");
  expectDenied(ask(FdbAddRequest{Mac{2, 0, 0, 0, 0, 1}, "p0", true}, user), "only root may add");
  expectDenied(ask(FdbDelRequest{Mac{2, 0, 0, 0, 0, 1}}, user), "only root may delete");
  EXPECT_TRUE(std::holds_alternative<PortList>(ask(PortGetRequest{}, user)));
  EXPECT_TRUE(std::holds_alternative<FdbList>(ask(FdbGetRequest{}, user)));
  // Root may.
  EXPECT_TRUE(std::holds_alternative<Ack>(ask(FdbAddRequest{Mac{2, 0, 0, 0, 0, 1}, "p0", true}, 0)));
  EXPECT_TRUE(std::holds_alternative<Ack>(ask(FdbDelRequest{Mac{2, 0, 0, 0, 0, 1}}, 0)));
  // Who added a port, and its tag, are in port replies.
  const auto l = std::get<PortList>(ask(PortGetRequest{}, user));
  ASSERT_EQ(l.ports.size(), 3u);
  EXPECT_FALSE(l.ports[0].owner_uid) << "p0 comes from the command line";
  EXPECT_EQ(l.ports[1].owner_uid, 0u);
  EXPECT_EQ(l.ports[2].owner_uid, 1000u);
  EXPECT_EQ(l.ports[2].tag, "cni:net1");
}

// PORT_SET: root only (none of its fields is the owner's), not a command-line port; what is given replaces the
// port's value in the datapath and in its record, the rest stays; a change
// that cannot be saved is not made.
TEST_F(DaemonControlTest, PortSetChangesTheRunningPortAndItsRecord) {
  const auto before = std::get<PortList>(ask(PortGetRequest{"p1"}, 0)).ports.at(0);
  ASSERT_TRUE(before.limits);
  PortSetRequest set{"p1", true};
  set.limits.police_bps = 1000000;
  expectDenied(ask(set, 1000), "only root may set isolated, police-rate on a port");
  expectDenied(ask(PortSetRequest{"p2", true}, 1000), "only root may set isolated");  // even the adder
  expectDenied(ask(PortSetRequest{"p2", true}, 1001), "only root may set isolated");
  expectDenied(ask(PortSetRequest{"p0", true}, 0), "vdevd's command line");
  const auto none = std::get<ErrorReply>(ask(PortSetRequest{"p9", true}, 0));
  EXPECT_EQ(none.err, ENOENT) << none.msg;
  EXPECT_FALSE(state.ports[0].isolated);

  ASSERT_TRUE(std::holds_alternative<Ack>(ask(set, 0)));
  PortSetRequest bcast{"p1"};
  bcast.limits.storm_bcast = 5;
  ASSERT_TRUE(std::holds_alternative<Ack>(ask(bcast, 0)));
  // VLANs too: what the state file keeps is what a restart brings back.
  PortSetRequest vlan{"p1"};
  vlan.limits.vlan.emplace();
  vlan.limits.vlan->pvid = 30;
  vlan.limits.vlan->untagged.set(30);
  ASSERT_TRUE(std::holds_alternative<Ack>(ask(vlan, 0)));
  EXPECT_EQ(state.ports[0].limits.vlan, vlan.limits.vlan);
  EXPECT_TRUE(state.ports[0].isolated);
  EXPECT_EQ(state.ports[0].limits.police_bps, 1000000u);
  EXPECT_EQ(state.ports[0].limits.storm_bcast, 5u);
  EXPECT_FALSE(state.ports[0].limits.storm_mcast) << "not given: still vdevd's default";
  const auto p = std::get<PortList>(ask(PortGetRequest{"p1"}, 0)).ports.at(0);
  EXPECT_TRUE(p.isolated);
  ASSERT_TRUE(p.limits);
  EXPECT_EQ(p.limits->police_bps, 1000000u);
  EXPECT_EQ(p.limits->storm_bcast, 5u);
  EXPECT_EQ(p.limits->storm_mcast, before.limits->storm_mcast);

  // The state file cannot be written: neither the record nor the port change.
  ControlContext ctx;
  ctx.dp = dp.get();
  ctx.state = &state;
  ctx.state_path = "/nonexistent-vdev-test-dir/vdevd.state";
  DaemonControl unsaved(ctx);
  Request r;
  r.body = PortSetRequest{"p1", false};
  PeerCred root;
  root.uid = 0;
  const Reply rep = unsaved.handle(r, root);
  const auto* e = std::get_if<ErrorReply>(&rep);
  ASSERT_TRUE(e);
  EXPECT_NE(e->msg.find("not changed"), std::string::npos) << e->msg;
  EXPECT_TRUE(state.ports[0].isolated);
  EXPECT_TRUE(std::get<PortList>(ask(PortGetRequest{"p1"}, 0)).ports.at(0).isolated);
}

// The whole table in one reply, every entry with its port's name.
TEST_F(DaemonControlTest, FdbDumpNamesEveryEntrysPort) {
  for (uint32_t i = 0; i < 30000; i++) {
    const Mac m{2, 1, uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i), 7};
    ASSERT_TRUE(dp->fdbAdd(m.data(), "p" + std::to_string(i % 3)).ok()) << i;
  }
  const auto l = std::get<FdbList>(ask(FdbGetRequest{}, 0));
  ASSERT_EQ(l.entries.size(), 30000u);
  for (const auto& e : l.entries) {
    const uint32_t i = (uint32_t(e.mac[2]) << 16) | (uint32_t(e.mac[3]) << 8) | e.mac[4];
    ASSERT_EQ(e.port, "p" + std::to_string(i % 3));
    ASSERT_TRUE(e.is_static);
  }
}

TEST_F(DaemonControlTest, InfoSaysTheFdRoomAndWhatWasNotRestored) {
  const auto i = std::get<InfoMsg>(ask(InfoGetRequest{}, 1000));
  ASSERT_TRUE(i.fd_limit);
  ASSERT_TRUE(i.ports_fd_left);
  EXPECT_GT(*i.fd_limit, 0u);
  EXPECT_LE(uint64_t(*i.ports_fd_left) * kFdsPerPort, *i.fd_limit);
  EXPECT_EQ(i.start_issues, "state file x: line 3: unknown key 'colour'\nport p9 not restored");
  EXPECT_EQ(i.num_ports, 3u);
  // Half the pool (512 of 1024 frames) is for fill-ring floors of 64
  // frames; the 3 ports (at the XDP hook, one queue each) keep 192 of them:
  // room for 5 more. 3 of the fast path's 1024 map entries are taken.
  ASSERT_TRUE(i.ports_pool_left);
  ASSERT_TRUE(i.ports_map_left);
  EXPECT_EQ(*i.ports_pool_left, (512u - 3 * 64) / 64);
  EXPECT_EQ(*i.ports_map_left, 1024u - 3u);
  // How this kernel is used: the skb path's attach is decided at start
  // (no tc port here: none of its features in use), and the devices'
  // XDP features are known one way or the other.
  ASSERT_TRUE(i.tc_attach);
  EXPECT_TRUE(*i.tc_attach == TcAttach::kTcx || *i.tc_attach == TcAttach::kClsact);
  ASSERT_TRUE(i.kernel_features);
  EXPECT_EQ(*i.kernel_features & ((uint64_t(1) << kKfTcx) | (uint64_t(1) << kKfClsact)), 0u)
      << "no skb path was set up";
}

// A capture: root's or the port owner's, its connection's alone, and
// gone with that connection.
TEST_F(DaemonControlTest, ACaptureBelongsToItsConnection) {
  expectDenied(ask(CaptureStartRequest{"p0"}, 1000), "only root may capture it");
  expectDenied(ask(CaptureStartRequest{"p1"}, 1000), "only that uid or root may capture");
  const Reply started = ask(CaptureStartRequest{"p2", CaptureDir::kRx, 100u}, 1000, 5);
  ASSERT_TRUE(std::holds_alternative<CaptureMsg>(started)) << std::get<ErrorReply>(started).msg;
  const CaptureMsg& m = std::get<CaptureMsg>(started);
  EXPECT_EQ(m.snaplen, 100u);
  EXPECT_EQ(datapath::DatapathTestAccess::port(*dp, 2).fastVid(), 0);
  const auto noSuch = [](const Reply& r) {
    const auto* e = std::get_if<ErrorReply>(&r);
    return e && e->err == ENOENT && e->msg.find("of this connection") != std::string::npos;
  };
  EXPECT_TRUE(noSuch(ask(CaptureReadRequest{m.id}, 0, 6))) << "another connection, root's too";
  EXPECT_TRUE(noSuch(ask(CaptureStopRequest{m.id}, 0, 6)));
  const Reply read = ask(CaptureReadRequest{m.id}, 1000, 5);
  ASSERT_TRUE(std::holds_alternative<CaptureMsg>(read));
  EXPECT_TRUE(std::get<CaptureMsg>(read).frames.empty());
  EXPECT_FALSE(std::get<CaptureMsg>(read).ended);
  const Reply again = ask(CaptureStartRequest{"p2"}, 0, 7);
  const auto* busy = std::get_if<ErrorReply>(&again);
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->err, EBUSY);
  control->disconnected(5);
  EXPECT_EQ(datapath::DatapathTestAccess::port(*dp, 2).capture(), nullptr);
  EXPECT_EQ(datapath::DatapathTestAccess::port(*dp, 2).fastVid(), kVidDefault);
  EXPECT_TRUE(noSuch(ask(CaptureReadRequest{m.id}, 1000, 5)));
  // Root's, stopped: the final counts.
  const Reply root = ask(CaptureStartRequest{"p0"}, 0, 8);
  ASSERT_TRUE(std::holds_alternative<CaptureMsg>(root));
  const Reply stopped = ask(CaptureStopRequest{std::get<CaptureMsg>(root).id}, 0, 8);
  ASSERT_TRUE(std::holds_alternative<CaptureMsg>(stopped));
  EXPECT_EQ(std::get<CaptureMsg>(stopped).taken, 0u);
  EXPECT_EQ(datapath::DatapathTestAccess::port(*dp, 0).capture(), nullptr);
}

}  // namespace
}  // namespace vdev::daemon
