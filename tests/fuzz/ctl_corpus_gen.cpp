// Writes the seed corpus of ctl_decode_fuzz: every request and reply kind,
// valid, as the codec encodes them. Replies are prefixed with the selector
// byte the fuzz target reads (command index, 0x10 = dump).
//
//   ctl_corpus_gen DIR      (cmake --build build --target ctl_fuzz_corpus
//                            regenerates tests/fuzz/corpus/ctl)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "proto/codec.h"

using namespace vdev::proto;

namespace {

std::filesystem::path g_dir;
int g_failed = 0;

void write(const std::string& name, const std::vector<uint8_t>& b) {
  std::ofstream f(g_dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!f) ++g_failed;
}

void req(const std::string& name, const RequestBody& body) {
  auto r = encodeRequest(1, body);
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), r.error().message().c_str());
    ++g_failed;
    return;
  }
  write("req_" + name, *r);
}

void rep(const std::string& name, const RequestBody& body, const Reply& reply) {
  Request rq;
  rq.hdr.seq = 1;
  rq.body = body;
  auto dgs = encodeReply(rq, reply);
  if (!dgs) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), dgs.error().message().c_str());
    ++g_failed;
    return;
  }
  const uint8_t sel = static_cast<uint8_t>((cmdOf(body) - 1) | (isDump(body) ? 0x10 : 0));
  std::vector<uint8_t> b{sel};
  for (const auto& d : *dgs) b.insert(b.end(), d.begin(), d.end());
  write("rep_" + name, b);
}

PortStatsMsg stat(const std::string& n) {
  PortStatsMsg s;
  s.port = PortInfo{n,    PortType::kVeth,      3, 1, XdpMode::kGeneric, BindMode::kCopy, 1500,
                    true, Mac{2, 0, 0, 0, 0, 1}};
  s.counters[vdev::stats::kRxPackets] = 10;
  s.counters[vdev::stats::kDropNoRoute] = 1;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  std::filesystem::create_directories(g_dir);

  CreateOptions veth;
  veth.peer_netns_name = "ctr1";
  veth.peer_ifname = "eth0";
  veth.peer_mac = Mac{2, 1, 2, 3, 4, 5};
  veth.mtu = 1450;
  CreateOptions vethPath;
  vethPath.peer_netns_path = "/proc/1/ns/net";
  CreateOptions vethPid;
  vethPid.peer_netns_pid = 1;
  CreateOptions tap;
  tap.owner_uid = 1000;
  tap.group_gid = 1000;
  tap.multi_queue = true;
  tap.mtu = 9000;
  tap.mac = Mac{2, 9, 9, 9, 9, 9};
  req("port_add_netdev", PortAddRequest{"eth1", PortType::kNetdev, 2u, XdpMode::kNative, {}});
  req("port_add_veth", PortAddRequest{"vd0", PortType::kVeth, 1u, XdpMode::kAuto, veth});
  req("port_add_veth_path", PortAddRequest{"vd1", PortType::kVeth, {}, XdpMode::kAuto, vethPath});
  req("port_add_veth_pid", PortAddRequest{"vd2", PortType::kVeth, {}, XdpMode::kGeneric, vethPid});
  req("port_add_tap", PortAddRequest{"tap0", PortType::kTap, 4u, XdpMode::kAuto, tap});
  req("port_add_tap_fast_rx_off", PortAddRequest{"tap1", PortType::kTap, {}, XdpMode::kAuto, tap, false});
  PortAddRequest limited{"vd3", PortType::kVeth, {}, XdpMode::kAuto, veth};
  limited.limits = {100, 0, 5000, {}, 100000000, 20};
  req("port_add_veth_limits", limited);
  req("port_del", PortDelRequest{"vd0"});
  req("port_get", PortGetRequest{"vd0"});
  req("port_dump", PortGetRequest{});
  req("stats_get", StatsGetRequest{"vd0"});
  req("stats_dump", StatsGetRequest{});
  req("fdb_get", FdbGetRequest{});
  req("fdb_add", FdbAddRequest{Mac{2, 0, 0, 0, 0, 7}, "vd0", true});
  req("fdb_del", FdbDelRequest{Mac{2, 0, 0, 0, 0, 7}});
  req("info_get", InfoGetRequest{});
  req("port_set_isolated", PortSetRequest{"vd0", true});
  PortSetRequest set{"vd3"};
  set.limits = {0, {}, 2000, 50000, {}, 100};
  req("port_set_limits", set);
  req("capture_start", CaptureStartRequest{"vd0", CaptureDir::kRx, 128u, 64u});
  CaptureStartRequest filtered{"vd0"};
  filtered.filter = CaptureFilter{Mac{2, 0, 0, 0, 0, 7}, 10, 0x0800, vdev::IpAddr{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1},
                                  17, 53};
  req("capture_start_filter", filtered);
  req("capture_read", CaptureReadRequest{1});
  req("capture_stop", CaptureStopRequest{1});

  PortInfo p{"vd0", PortType::kTap, 4,           2, XdpMode::kNative, BindMode::kZerocopy,
             1500,  false,          std::nullopt};
  PoolMsg pool;
  pool.v = {64, 32, 16, 1, 2, 3, 4, 5, 1, 0};
  rep("ack", PortDelRequest{"vd0"}, Ack{});
  rep("port_set_ack", PortSetRequest{"vd0", false}, Ack{});
  rep("error", PortAddRequest{"vd0"}, ErrorReply{EEXIST, "port vd0 exists"});
  rep("port_get", PortGetRequest{"vd0"}, PortList{{p}});
  PortInfo slow = p;
  slow.fast_rx = false;
  rep("port_dump", PortGetRequest{}, PortList{{p, slow}});
  rep("port_dump_empty", PortGetRequest{}, PortList{});
  PortInfo lim = p;
  lim.limits = Limits{10000, 10000, 10000, 0, 100000000, 10};
  rep("port_get_limits", PortGetRequest{"vd0"}, PortList{{lim}});
  PortInfo tc = p;
  tc.hook = PortHook::kTc;
  tc.tc_attach = TcAttach::kClsact;
  PortInfo moved = p;
  moved.hook = PortHook::kXdp;
  moved.hook_note = "at the XDP hook, not tc: attach failed";
  rep("port_dump_hooks", PortGetRequest{}, PortList{{tc, moved}});
  rep("stats_get", StatsGetRequest{"vd0"}, StatsReply{{stat("vd0")}, pool, 3u});
  rep("stats_dump", StatsGetRequest{}, StatsReply{{stat("vd0"), stat("vd1")}, pool, 3u});
  rep("fdb_dump", FdbGetRequest{},
      FdbList{
          {{Mac{2, 0, 0, 0, 0, 1}, "vd0", true, 0}, {Mac{2, 0, 0, 0, 0, 2}, "vd1", false, 99}}});
  rep("info", InfoGetRequest{}, InfoMsg{"0.1.0", 1, SwitchMode::kSwitch, 10, 2});
  InfoMsg kernel{"0.1.0", 1, SwitchMode::kSwitch, 10, 2};
  kernel.tc_attach = TcAttach::kClsact;
  kernel.kernel_features = (1u << kKfClsact) | (1u << kKfXdpFrags) | (1u << kKfRedirectPeer);
  rep("info_kernel", InfoGetRequest{}, kernel);
  rep("dump_error", StatsGetRequest{}, ErrorReply{ENOMEM, "out of memory"});
  CaptureMsg cap{.id = 1, .taken = 2, .drops = 1};
  appendCaptureRecord(cap.frames, 1'700'000'000'000'000'000ull, 60, CaptureDir::kRx, std::vector<uint8_t>(60, 0x42));
  appendCaptureRecord(cap.frames, 1'700'000'000'000'000'001ull, 1514, CaptureDir::kTx, std::vector<uint8_t>(13, 0x43));
  rep("capture_read", CaptureReadRequest{1}, cap);
  return g_failed ? 1 : 0;
}
