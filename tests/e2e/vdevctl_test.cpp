// vdevctl end to end (docs/vdevctl.md): everything is driven through the
// vdevctl binary against a vdevd started by the test with its own control
// socket and state file (and no --port): ports whose devices vdevd creates (a
// veth pair into a test namespace, a persistent tap a VM opens as an
// unprivileged user), traffic both ways with exact counts, the counters as
// text, JSON and Prometheus metrics, port removal (only what vdev made is
// deleted), restart from the state file, authorisation, usage errors and the
// monitor.
//
// Cleanup: devices vdevd creates are deleted by a guard at the end of each
// test, pass or fail (vdevd, killed on failure, cannot do it); namespaces and
// temp dirs go with their harness objects.

#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <sys/syscall.h>
#include <grp.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "base/ip.h"
#include "stats/format.h"
#include "flows.h"
#include "harness.h"
#include "vdevctl_fixture.h"
#include "wait.h"

#include <bpf/libbpf.h>

#include "vlan_tagger.skel.h"

namespace vdev::e2e {
namespace {

namespace tf = testframe;
using Clock = std::chrono::steady_clock;

// Opens the existing tap `ifname` as a VM's QEMU does (TUNSETIFF IFF_TAP |
// IFF_NO_PI), in a child running as `creds`. /dev/net/tun itself is opened
// before the child drops root: what is tested is the tap's owner check at
// TUNSETIFF, not the mode of /dev/net/tun (0600 in many containers; libvirt
// also opens it for QEMU and passes the fd). Returns the fd (non-blocking,
// close-on-exec) or -errno. multiQueue: IFF_MULTI_QUEUE, one more queue per call.
int attachTapAs(const std::string& ifname, Creds creds, bool multiQueue = false) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return -errno;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(sv[0]);
    int result = 0;
    const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      result = errno;
    } else if (::setgroups(0, nullptr) < 0 || ::setgid(creds.gid) < 0 || ::setuid(creds.uid) < 0) {
      result = errno;
    } else {
      ifreq ifr{};
      ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (multiQueue ? IFF_MULTI_QUEUE : 0);
      std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
      if (::ioctl(fd, TUNSETIFF, &ifr) < 0) result = errno;
    }
    char cbuf[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{&result, sizeof result};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (result == 0) {
      mh.msg_control = cbuf;
      mh.msg_controllen = sizeof cbuf;
      cmsghdr* c = CMSG_FIRSTHDR(&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ::_exit(::sendmsg(sv[1], &mh, 0) < 0 ? 1 : 0);
  }
  ::close(sv[1]);
  if (pid < 0) {
    ::close(sv[0]);
    return -EAGAIN;
  }
  int result = EIO, fd = -1;
  char cbuf[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&result, sizeof result};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  if (::recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC) == sizeof result && result == 0)
    if (cmsghdr* c = CMSG_FIRSTHDR(&mh); c && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  ::close(sv[0]);
  int ws;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (result != 0) return -result;
  return fd >= 0 ? fd : -EIO;
}

// The VM stand-in on a tap vdevd created: attached as an unprivileged user
// (see attachTapAs); the station MAC is the guest NIC's. With queues > 1 it
// opens that many queues of a multi-queue tap, as QEMU does for
// "-netdev tap,queues=N"; it sends on the queue chosen with useQueue() and
// reads every queue.
class VmOnTap : public Endpoint {
 public:
  VmOnTap(const std::string& ifname, Creds creds, const Mac& mac, int queues = 1)
      : Endpoint("VM", mac) {
    for (int q = 0; q < queues; q++) {
      const int fd = attachTapAs(ifname, creds, queues > 1);
      if (fd < 0) {
        closeAll();
        throw HarnessError("attach to tap " + ifname + " queue " + std::to_string(q) + " as uid " +
                           std::to_string(creds.uid) + ": " + std::strerror(-fd));
      }
      fds_.push_back(fd);
    }
  }
  ~VmOnTap() override { closeAll(); }
  int fd() const override { return fds_.empty() ? -1 : fds_[0]; }
  // Frames written from now on enter the host through this queue.
  void useQueue(size_t q) { txq_ = q; }
  // Lets go of the tap, as a VM that exits does.
  void closeAll() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }

 protected:
  ssize_t readRaw(std::span<uint8_t> buf) override {
    for (size_t i = 0; i < fds_.size(); i++) {
      const ssize_t n = ::read(fds_[i], buf.data(), buf.size());
      if (n > 0) return n;
      if (n < 0 && errno != EAGAIN && errno != EINTR && errno != EBADFD) return -errno;
    }
    return 0;
  }
  int writeRaw(std::span<const uint8_t> frame) override {
    const ssize_t n = ::write(fds_[txq_], frame.data(), frame.size());
    if (n < 0) return -errno;
    return n == ssize_t(frame.size()) ? 0 : -EMSGSIZE;
  }

 private:
  std::vector<int> fds_;
  size_t txq_ = 0;
};


// ---------------------------------------------------------------------------
// Prometheus text format (0.0.4), parsed strictly enough to catch a broken
// line: every non-comment line is `name{labels} value` (labels optional),
// every sample's family has a # TYPE line before it, counters end in _total.

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  uint64_t value = 0;
};

std::vector<PromSample> parsePrometheus(const std::string& text) {
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([0-9]+)$)");
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$)");
  static const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$)");
  std::map<std::string, std::string> types;
  std::vector<PromSample> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = "line " + std::to_string(n) + ": " + line;
    std::smatch m;
    if (line.rfind("#", 0) == 0) {
      if (std::regex_match(line, m, kType)) {
        if (types.count(m[1])) throw HarnessError("second # TYPE for " + m[1].str());
        types[m[1]] = m[2];
        if (m[2] == "counter" && !m[1].str().ends_with("_total"))
          throw HarnessError("counter without _total: " + where);
      } else if (!std::regex_match(line, kHelp)) {
        throw HarnessError("malformed comment: " + where);
      }
      continue;
    }
    if (!std::regex_match(line, m, kSample)) throw HarnessError("malformed sample: " + where);
    PromSample s;
    s.name = m[1];
    if (!types.count(s.name)) throw HarnessError("sample before its # TYPE: " + where);
    s.value = std::stoull(m[4]);
    // Labels: k="v" separated by commas; \\ \" \n escapes inside values.
    const std::string l = m[3];
    size_t i = 0;
    while (i < l.size()) {
      const size_t eq = l.find('=', i);
      if (eq == std::string::npos || eq + 1 >= l.size() || l[eq + 1] != '"')
        throw HarnessError("malformed labels: " + where);
      const std::string key = l.substr(i, eq - i);
      std::string val;
      size_t j = eq + 2;
      for (; j < l.size() && l[j] != '"'; ++j) {
        if (l[j] == '\\') {
          if (++j >= l.size()) throw HarnessError("bad escape: " + where);
          val += l[j] == 'n' ? '\n' : l[j];
        } else {
          val += l[j];
        }
      }
      if (j >= l.size()) throw HarnessError("unterminated label value: " + where);
      if (!s.labels.emplace(key, val).second) throw HarnessError("repeated label: " + where);
      i = j + 1;
      if (i < l.size()) {
        if (l[i] != ',') throw HarnessError("malformed labels: " + where);
        ++i;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The value of the one sample with this name and these labels; throws if
// there is none or more than one.
uint64_t promValue(const std::vector<PromSample>& samples, const std::string& name,
                   const std::map<std::string, std::string>& labels = {}) {
  const PromSample* found = nullptr;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      const auto it = s.labels.find(k);
      match = match && it != s.labels.end() && it->second == v;
    }
    if (!match) continue;
    if (found) throw HarnessError("two samples of " + name);
    found = &s;
  }
  if (!found) throw HarnessError("no sample " + name);
  return found->value;
}

// ---------------------------------------------------------------------------

class VdevctlTest : public VdevctlFixture {
 protected:
  Stats stats() { return Stats::parse(ok({"-j", "stats"})); }

  // True once stations `a` (on port `pa`) and `b` (on `pb`) have read as
  // many frames as vdevd transmitted to their ports since this call: nothing
  // vdevd sent them is still on its way.
  std::function<bool()> drained(const std::string& pa, const Endpoint& a, const std::string& pb,
                                const Endpoint& b) {
    const Stats s0 = stats();
    const uint64_t ta = s0.port(pa)[stats::kTxPackets], tb = s0.port(pb)[stats::kTxPackets];
    const uint64_t ra = a.rx().frames(), rb = b.rx().frames();
    return [this, pa, pb, &a, &b, ta, tb, ra, rb] {
      const Stats s = stats();
      return s.port(pa)[stats::kTxPackets] - ta == a.rx().frames() - ra &&
             s.port(pb)[stats::kTxPackets] - tb == b.rx().frames() - rb;
    };
  }

  bool portsLive(const std::vector<std::string>& names) {
    const Json ports = json({"port", "show"});
    for (const auto& n : names) {
      const Json* p = findPort(ports, n);
      if (!p || !p->at("live").get<bool>()) return false;
    }
    return true;
  }
  void waitLive(const std::vector<std::string>& names) {
    ASSERT_TRUE(waitUntil([&] { return portsLive(names); }, 5s, 20ms))
        << "ports not live: " << ok({"port", "show"});
  }

};

// Sends `n` frames each way (sizes 60..1514) on flows `flow` (container ->
// VM) and `flow + 1` (VM -> container) and checks that each arrives once,
// intact, and nothing else arrives: it reads until `drained` says the
// stations have read every frame vdevd transmitted to them (so a duplicate
// or a stray frame is in hand before the checks, however late it comes).
void exchange(Endpoint& ctr, Endpoint& vm, uint32_t flow, uint32_t n, const std::function<bool()>& drained) {
  static const size_t kSizes[] = {60, 1514, 64, 1000, 128, 1513, 61, 576};
  for (uint32_t i = 0; i < n; ++i) {
    ctr.send({vm.mac(), ctr.mac(), i % 2 ? Kind::kIpv4Udp : Kind::kExperimental, flow, i,
              kSizes[i % std::size(kSizes)]});
    vm.send({ctr.mac(), vm.mac(), i % 2 ? Kind::kExperimental : Kind::kIpv4Udp, flow + 1, i,
             kSizes[(i + 3) % std::size(kSizes)]});
  }
  const Endpoints all = {&ctr, &vm};
  pumpUntil(
      all, [&] { return vm.rx().count(flow) >= n && ctr.rx().count(flow + 1) >= n; }, 5s);
  EXPECT_TRUE(pumpUntil(all, drained, 5s)) << "the stations did not read what vdevd sent them: "
                                          << ctr.rx().describe() << " / " << vm.rx().describe();
  for (Endpoint* e : all) {
    EXPECT_EQ(e->rx().corrupt(), 0u) << e->label() << ": " << e->rx().describe();
    EXPECT_EQ(e->rx().foreign(), 0u) << e->label() << ": " << e->rx().describe();
    EXPECT_EQ(e->rx().totalDuplicates(), 0u) << e->label() << ": " << e->rx().describe();
  }
  EXPECT_EQ(vm.rx().count(flow), n) << vm.rx().describe();
  EXPECT_EQ(ctr.rx().count(flow + 1), n) << ctr.rx().describe();
  EXPECT_EQ(vm.rx().count(flow + 1), 0u);
  EXPECT_EQ(ctr.rx().count(flow), 0u);
}

bool poolIdle(const Stats& s) {
  return s.pool.atRest();
}

// `stats -j` (read with `get`) agrees with what the stations sent and read:
// rx of a port is what its station sent, tx what it received. Waits up to
// 3 s for vdevd's counters to catch up (tx is counted when a frame goes on
// the TX ring, before the station reads it).
Stats expectCounters(const std::function<Stats()>& get, const std::string& vc,
                     const std::string& vt, const Endpoint& ctr, const Endpoint& vm) {
  Stats s;
  const auto matches = [&] {
    s = get();
    const PortStats* c = s.findPort(vc);
    const PortStats* v = s.findPort(vt);
    return c && v && (*c)[stats::kRxPackets] == ctr.sentFrames() && (*c)[stats::kTxPackets] == ctr.rx().frames() &&
           (*v)[stats::kRxPackets] == vm.sentFrames() && (*v)[stats::kTxPackets] == vm.rx().frames() && poolIdle(s);
  };
  waitUntil(matches, 3s, 20ms);
  const PortStats& c = s.port(vc);
  const PortStats& v = s.port(vt);
  EXPECT_EQ(c[stats::kRxPackets], ctr.sentFrames()) << s.dump();
  EXPECT_EQ(c[stats::kRxBytes], ctr.sentBytes()) << s.dump();
  EXPECT_EQ(c[stats::kTxPackets], ctr.rx().frames()) << s.dump();
  EXPECT_EQ(c[stats::kTxBytes], ctr.rx().bytesRead()) << s.dump();
  EXPECT_EQ(v[stats::kRxPackets], vm.sentFrames()) << s.dump();
  EXPECT_EQ(v[stats::kRxBytes], vm.sentBytes()) << s.dump();
  EXPECT_EQ(v[stats::kTxPackets], vm.rx().frames()) << s.dump();
  EXPECT_EQ(v[stats::kTxBytes], vm.rx().bytesRead()) << s.dump();
  EXPECT_EQ(c.totalDrops() + v.totalDrops(), 0u) << s.dump();
  EXPECT_EQ(c.xdpRxDrops() + v.xdpRxDrops(), 0u) << s.dump();
  EXPECT_EQ(s.pool.reported_sum, s.pool.total()) << s.dump();
  EXPECT_TRUE(poolIdle(s)) << s.dump();
  return s;
}

// ---------------------------------------------------------------------------

TEST_F(VdevctlTest, ContainerAndVmPortsPassTrafficAndReportIt) {
  Netns ns;
  const std::string vc = uniqueName('c'), vt = uniqueName('t');
  DeviceGuard guard({vc, vt});
  auto d = startVdevd();

  const Mac ctrMac = uniqueMac();
  ok({"port", "add", vc, "type", "veth", "create", "netns", ns.name(), "peer", "eth0", "peer-mac",
      macString(ctrMac), "mtu", "1500"});
  ok({"port", "add", vt, "type", "tap", "create", "owner", "nobody"});
  ASSERT_TRUE(linkExists(vc));
  ASSERT_TRUE(linkExists("eth0", &ns));
  ASSERT_TRUE(linkExists(vt));
  EXPECT_EQ(linkInfo("eth0", &ns).address, ctrMac);
  EXPECT_EQ(linkInfo("eth0", &ns).mtu, 1500);

  // Only the owner may attach to the tap: another unprivileged uid may not.
  const int other = attachTapAs(vt, {kNobody - 1, kNogroup});
  if (other >= 0) ::close(other);
  EXPECT_EQ(other, -EPERM) << "a uid other than the tap's owner attached to it";

  PacketSocket ctr("eth0", &ns, ctrMac);
  ctr.setLabel("container");
  VmOnTap vm(vt, {kNobody, kNogroup}, uniqueMac());
  waitLive({vc, vt});  // the tap's carrier comes with the VM

  exchange(ctr, vm, 1, 40, drained(vc, ctr, vt, vm));
  const Stats s = expectCounters([&] { return stats(); }, vc, vt, ctr, vm);

  // Prometheus: well-formed, and the same numbers.
  const auto prom = parsePrometheus(ok({"stats", "--prometheus"}));
  for (const auto& [port, st] : {std::pair{vc, &s.port(vc)}, std::pair{vt, &s.port(vt)}}) {
    SCOPED_TRACE(port);
    EXPECT_EQ(promValue(prom, "vdev_port_rx_packets_total", {{"port", port}}), (*st)[stats::kRxPackets]);
    EXPECT_EQ(promValue(prom, "vdev_port_rx_bytes_total", {{"port", port}}), (*st)[stats::kRxBytes]);
    EXPECT_EQ(promValue(prom, "vdev_port_tx_packets_total", {{"port", port}}), (*st)[stats::kTxPackets]);
    EXPECT_EQ(promValue(prom, "vdev_port_tx_bytes_total", {{"port", port}}), (*st)[stats::kTxBytes]);
    EXPECT_EQ(promValue(prom, "vdev_port_tx_outstanding", {{"port", port}}), (*st)[stats::kTxOutstanding]);
    for (uint32_t r = 0; r < stats::kNumDropReasons; ++r) {
      const std::string reason(stats::dropName(stats::DropReason(r)));
      EXPECT_EQ(promValue(prom, "vdev_port_drops_total", {{"port", port}, {"reason", reason}}),
                (*st)[stats::DropReason(r)])
          << reason;
    }
    EXPECT_EQ(promValue(prom, "vdev_port_up", {{"port", port}}), 1u);
  }
  uint64_t places = 0;
  for (const auto& p : prom)
    if (p.name == "vdev_pool_frames") places += p.value;
  EXPECT_EQ(places, promValue(prom, "vdev_pool_capacity_frames"));
  EXPECT_EQ(promValue(prom, "vdev_pool_capacity_frames"), s.pool.total());

  // Text: every counter is there and the pool adds up.
  const std::string text = ok({"stats"});
  for (const char* word : {"ring_full", "tx_ring_full", "no_route", "port_down", "oversize", "runt",
                           "pool_empty", "invalid_src", "bad_type", "mac_limit", "mac_locked", "inflight_limit", "fast_xmit", "link_local", "rx_dropped", "rx_ring_full", "outstanding",
                           "no_socket", "tx_dropped", "flap_waits", "adds up"})
    EXPECT_NE(text.find(word), std::string::npos) << word << " missing in\n" << text;
  EXPECT_EQ(text.find("MISMATCH"), std::string::npos) << text;

  // Ports as vdevctl made them.
  const Json ports = json({"port", "show"});
  ASSERT_EQ(ports.size(), 2u) << ports.dump();
  ASSERT_TRUE(findPort(ports, vc) && findPort(ports, vt)) << ports.dump();
  EXPECT_EQ(findPort(ports, vc)->at("type").get<std::string>(), "veth");
  EXPECT_EQ(findPort(ports, vt)->at("type").get<std::string>(), "tap");
  EXPECT_EQ(findPort(ports, vc)->at("mtu").get<uint64_t>(), 1500u);
  EXPECT_EQ(findPort(ports, vc)->at("ifindex").get<uint64_t>(), uint64_t(linkInfo(vc).ifindex));
  const std::string table = ok({"port", "show"});
  EXPECT_EQ(table.rfind("NAME", 0), 0u) << table;
  EXPECT_NE(table.find(vc), std::string::npos) << table;

  // The MAC table learned both stations; a static entry comes and goes.
  const auto fdbPort = [&](const Json& fdb, const Mac& mac) -> std::string {
    for (const Json& e : fdb)
      if (e.at("mac").get<std::string>() == macString(mac))
        return e.at("port").get<std::string>() + (e.at("static").get<bool>() ? "/static" : "/learned");
    return "";
  };
  Json fdb = json({"fdb", "show"});
  EXPECT_EQ(fdbPort(fdb, ctrMac), vc + "/learned") << fdb.dump();
  EXPECT_EQ(fdbPort(fdb, vm.mac()), vt + "/learned") << fdb.dump();
  const Mac extra = uniqueMac();
  ok({"fdb", "add", macString(extra), "port", vt});
  EXPECT_EQ(fdbPort(json({"fdb", "show"}), extra), vt + "/static");
  ok({"fdb", "del", macString(extra)});
  EXPECT_EQ(fdbPort(json({"fdb", "show"}), extra), "");
  const CmdResult again = ctl({"fdb", "del", macString(extra)});
  EXPECT_EQ(again.status, 1) << describe({"fdb", "del"}, again);

  const Json info = json({"info"});
  EXPECT_EQ(info.at("ports").get<uint64_t>(), 2u) << info.dump();
  EXPECT_EQ(info.at("mode").get<std::string>(), "switch");

  // One port: the same counters.
  const Json one = json({"stats", vc});
  ASSERT_EQ(one.at("ports").size(), 1u) << one.dump();
  EXPECT_EQ(one.at("ports").at(0).at("name").get<std::string>(), vc);
  EXPECT_EQ(one.at("ports").at(0).at("rx_packets").get<uint64_t>(), s.port(vc)[stats::kRxPackets]);
  EXPECT_EQ(one.at("ports").at(0).at("tx_packets").get<uint64_t>(), s.port(vc)[stats::kTxPackets]);

  ok({"port", "del", vc});
  ok({"port", "del", vt});
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// A multi-queue tap for a VM with two queues: the tap exists before the VM
// and then has one queue and no carrier. The port is added anyway, reports
// down at once, and binds each queue as the VM opens it; frames the VM sends
// on its second queue reach the container.
TEST_F(VdevctlTest, MultiQueueTapBindsQueuesAsTheVmOpensThem) {
  Netns ns;
  const std::string vc = uniqueName('c'), vt = uniqueName('t');
  DeviceGuard guard({vc, vt});
  auto d = startVdevd();
  const Mac ctrMac = uniqueMac();
  ok({"port", "add", vc, "type", "veth", "create", "netns", ns.name(), "peer", "eth0", "peer-mac",
      macString(ctrMac)});
  ok({"port", "add", vt, "type", "tap", "queues", "2", "create", "owner", "nobody",
      "multi-queue"});
  {
    // No VM, no carrier: down from the first look, not after a housekeeping tick.
    const Json ports = json({"port", "show"});
    const Json* p = findPort(ports, vt);
    ASSERT_TRUE(p) << ports.dump();
    EXPECT_FALSE(p->at("live").get<bool>()) << ports.dump();
    EXPECT_EQ(p->at("queues").get<uint64_t>(), 2u) << ports.dump();
  }
  PacketSocket ctr("eth0", &ns, ctrMac);
  ctr.setLabel("container");
  VmOnTap vm(vt, {kNobody, kNogroup}, uniqueMac(), 2);
  waitLive({vc, vt});
  const auto bound = [&] {
    const Json* p = nullptr;
    const Json ports = json({"port", "show"});
    p = findPort(ports, vt);
    return p ? p->at("queues_bound").get<uint64_t>() : 0;
  };
  ASSERT_TRUE(waitUntil([&] { return bound() == 2; }, 3s, 20ms))
      << "queue 1 never bound: " << ok({"port", "show"}) << d->logs();
  EXPECT_NE(ok({"port", "show"}).find(vt), std::string::npos);

  exchange(ctr, vm, 1, 20, drained(vc, ctr, vt, vm));  // VM sends on queue 0
  vm.useQueue(1);
  exchange(ctr, vm, 3, 20, drained(vc, ctr, vt, vm));  // and on queue 1
  expectCounters([&] { return stats(); }, vc, vt, ctr, vm);

  ok({"port", "del", vc});
  ok({"port", "del", vt});
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// vdevd as systemd runs it (Type=notify, WatchdogSec=): the test plays
// systemd's side of NOTIFY_SOCKET. READY=1 with a STATUS once the configured
// port is attached, WATCHDOG=1 at least every half watchdog interval,
// STOPPING=1 on SIGTERM -- in that order.
TEST_F(VdevctlTest, SystemdNotifyReadyWatchdogStopping) {
  Netns ns;
  VethPair veth(ns);
  const std::string path = dir_.file("notify.sock");
  const int s = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(s, 0) << std::strerror(errno);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  // The kernel stamps each message as it is queued, i.e. when vdevd sent it:
  // the gaps between pings do not depend on when this test gets to read them.
  const int on = 1;
  ASSERT_EQ(::setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on), 0) << std::strerror(errno);
  std::unique_ptr<Vdevd> d;
  {
    // The child inherits the environment at fork; ours is restored at once.
    ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
    ::setenv("WATCHDOG_USEC", "200000", 1);  // 200 ms: a ping every <= 100 ms
    try {
      d = startVdevd({"--port", veth.hostName()});
    } catch (...) {
      ::unsetenv("NOTIFY_SOCKET");
      ::unsetenv("WATCHDOG_USEC");
      ::close(s);
      throw;
    }
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
  }
  std::vector<std::string> msgs;
  std::vector<double> pingAt;  // seconds, kernel timestamps of WATCHDOG=1
  const auto drain = [&] {
    char buf[4096];
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(timespec))];
    for (;;) {
      iovec iov{buf, sizeof buf};
      msghdr mh{};
      mh.msg_iov = &iov;
      mh.msg_iovlen = 1;
      mh.msg_control = ctl;
      mh.msg_controllen = sizeof ctl;
      const ssize_t n = ::recvmsg(s, &mh, 0);
      if (n <= 0) break;
      msgs.emplace_back(buf, size_t(n));
      if (msgs.back().rfind("WATCHDOG=1", 0) != 0) continue;
      for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts;
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          pingAt.push_back(double(ts.tv_sec) + double(ts.tv_nsec) / 1e9);
        }
    }
  };
  const auto count = [&](const std::string& prefix) {
    size_t k = 0;
    for (const auto& m : msgs)
      if (m.rfind(prefix, 0) == 0) k++;
    return k;
  };
  // 21 pings: 20 gaps, each promised to be at most half the watchdog
  // interval (100 ms). A gap stretches when the loaded machine does not run
  // vdevd in time, so the promise is checked on the median gap, which a
  // vdevd that pinged only once per interval (or less) would fail and
  // preemption does not move.
  waitUntil([&] { drain(); return pingAt.size() >= 21; }, 20s, 10ms);
  ASSERT_FALSE(msgs.empty()) << "nothing on NOTIFY_SOCKET\n" << d->logs();
  EXPECT_EQ(msgs[0].rfind("READY=1\nSTATUS=1 ports, switch mode", 0), 0u) << msgs[0];
  EXPECT_EQ(count("READY=1"), 1u);
  ASSERT_GE(pingAt.size(), 21u) << "watchdog pings within 20 s at a 200 ms watchdog";
  std::vector<double> gaps;
  for (size_t i = 1; i < 21; ++i) gaps.push_back(pingAt[i] - pingAt[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  const double median = (gaps[9] + gaps[10]) / 2;
  EXPECT_LE(median, 0.1 + 0.05) << "median gap between watchdog pings at a 200 ms watchdog (promised: <= 100 ms); "
                                << "largest " << gaps.back() << " s";
  std::cout << "  watchdog pings at WATCHDOG_USEC=200000: median gap " << median * 1000 << " ms, largest "
            << gaps.back() * 1000 << " ms\n";
  // The port was up when READY=1 went out.
  EXPECT_TRUE(portsLive({veth.hostName()})) << ok({"port", "show"});
  EXPECT_EQ(count("STOPPING=1"), 0u);
  EXPECT_EQ(d->stop(), 0) << d->logs();
  drain();
  ::close(s);
  ASSERT_GE(count("STOPPING=1"), 1u);
  EXPECT_EQ(msgs.back(), "STOPPING=1") << "STOPPING=1 must be the last word";
}

// vdevd --fast-path: a veth it creates gets GRO on its container end, so
// unicast between two such containers goes through the kernel (the XDP
// programs' fast-path count) and the counters still match exactly.
TEST_F(VdevctlTest, FastPathCarriesUnicastBetweenCreatedContainers) {
  Netns ns1, ns2;
  const std::string c1 = uniqueName('c'), c2 = uniqueName('c');
  DeviceGuard guard({c1, c2});
  auto d = startVdevd({"--fast-path"});
  const Mac m1 = uniqueMac(), m2 = uniqueMac();
  ok({"port", "add", c1, "type", "veth", "create", "netns", ns1.name(), "peer", "eth0", "peer-mac",
      macString(m1)});
  ok({"port", "add", c2, "type", "veth", "create", "netns", ns2.name(), "peer", "eth0", "peer-mac",
      macString(m2)});
  const std::string features = ns1.exec("ethtool -k eth0");
  EXPECT_NE(features.find("generic-receive-offload: on"), std::string::npos) << features;
  // TX checksum offload off: AF_XDP cannot finish a partial checksum, so the
  // container's stack must (else UDP/TCP arrive with bad checksums).
  EXPECT_NE(features.find("tx-checksumming: off"), std::string::npos) << features;
  PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2);
  a.setLabel("c1");
  b.setLabel("c2");
  waitLive({c1, c2});
  // Both learned first (through vdevd), then every frame each way.
  exchange(a, b, 1, 1, drained(c1, a, c2, b));
  exchange(a, b, 3, 40, drained(c1, a, c2, b));
  expectCounters([&] { return stats(); }, c1, c2, a, b);
  const Stats s = stats();
  uint64_t fast = 0;
  for (const PortStats& p : s.ports) fast += p[stats::kProgFast];
  EXPECT_GE(fast, 80u) << "unicast between learned containers did not take the kernel path:\n"
                       << s.dump() << d->logs();
  // A removed port's counters (fast-path frames included) stay in vdevd's
  // totals: summed under removed_ports.
  const Stats before = d->stats();
  const PortStats p1 = before.port(c1), p2 = before.port(c2);
  ok({"port", "del", c1});
  ok({"port", "del", c2});
  const Stats after = d->stats();
  const Json& removed = after.raw.at("removed_ports");
  EXPECT_EQ(removed.at("count").get<uint64_t>(), 2u) << after.dump();
  auto totals = stats::readPortCounters(removed);
  ASSERT_TRUE(totals) << totals.error().message() << "\n" << after.dump();
  const stats::PortValues& r = *totals;
  EXPECT_EQ(r[stats::kRxPackets], p1[stats::kRxPackets] + p2[stats::kRxPackets]) << after.dump();
  EXPECT_EQ(r[stats::kTxPackets], p1[stats::kTxPackets] + p2[stats::kTxPackets]) << after.dump();
  EXPECT_EQ(r[stats::kTxBytes], p1[stats::kTxBytes] + p2[stats::kTxBytes]) << after.dump();
  EXPECT_GE(r[stats::kRxPackets], 80u) << after.dump();
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// ---------------------------------------------------------------------------
// netkit ports (Linux 6.7+, CONFIG_NETKIT; e2e_kernel_6_12's step netkit)

// The programs attached to a netkit pair (BPF_PROG_QUERY through the
// primary end's ifindex, attach types BPF_NETKIT_PRIMARY 54 and
// BPF_NETKIT_PEER 55, newer than Debian's headers): vdevd's two while it
// runs, none once its BPF links are closed.
uint32_t netkitPrograms(const std::string& primary) {
  uint32_t n = 0;
  for (uint32_t type : {54u, 55u}) {
    union bpf_attr a;
    std::memset(&a, 0, sizeof a);
    a.query.target_fd = ::if_nametoindex(primary.c_str());
    a.query.attach_type = static_cast<enum bpf_attach_type>(type);
    if (::syscall(__NR_bpf, BPF_PROG_QUERY, &a, sizeof a) != 0)
      throw HarnessError("BPF_PROG_QUERY netkit of " + primary + ": " + std::strerror(errno));
    n += a.query.prog_cnt;
  }
  return n;
}

const char* const kNoNetkit = "this kernel has no netkit";

// vdevctl's refusal on a kernel without netkit (this development host's):
// an error naming what is needed, nothing left behind -- no device, no
// port, no record in the state file (on a kernel with netkit: the port is
// made, and port del leaves nothing). On any kernel: no netkit without
// create, nor at the XDP hook.
TEST_F(VdevctlTest, NetkitPortOnAKernelWithoutNetkitIsRefusedNamingWhatItNeeds) {
  Netns ns;
  const std::string n = uniqueName('k');
  DeviceGuard guard({n});
  auto d = startVdevd();
  const CmdResult r = ctl({"port", "add", n, "type", "netkit", "create", "netns", ns.name(), "peer", "eth0"});
  if (r.ok()) {
    // A kernel with netkit: the port is made (its traffic is the guest's
    // netkit step's), and goes with its pair.
    EXPECT_NE(findPort(json({"port", "show"}), n), nullptr);
    ok({"port", "del", n});
  } else {
    EXPECT_NE(r.err.find(kNoNetkit), std::string::npos) << describe({"port add"}, r);
    EXPECT_NE(r.err.find("Linux 6.7 or later with CONFIG_NETKIT"), std::string::npos) << describe({"port add"}, r);
  }
  EXPECT_FALSE(linkExists(n));
  EXPECT_FALSE(linkExists("eth0", &ns));
  EXPECT_EQ(findPort(json({"port", "show"}), n), nullptr);
  EXPECT_EQ(readFile(state_).find(n), std::string::npos) << readFile(state_);
  // Without create there is nothing of vdevd's to attach to.
  const CmdResult plain = ctl({"port", "add", n, "type", "netkit"});
  EXPECT_FALSE(plain.ok());
  EXPECT_NE(plain.err.find("needs CREATE"), std::string::npos) << describe({"port add"}, plain);
  // Nor at the XDP hook: refused before anything is made, on any kernel.
  const CmdResult xdp = ctl({"port", "add", n, "type", "netkit", "hook", "xdp", "create", "netns", ns.name()});
  EXPECT_FALSE(xdp.ok());
  EXPECT_NE(xdp.err.find("hook tc only"), std::string::npos) << describe({"port add"}, xdp);
  EXPECT_FALSE(linkExists(n));
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// Kernel TCP from `from` to addr in `to` (tcp_check.py: 1 MiB, every byte
// checked): the server's output, in dir, must equal what the client sent.
// The server is killed at the end whatever happened (it would wait 60 s for
// a client that never came).
void expectTcpCarried(const std::string& dir, const Netns& from, const Netns& to, const std::string& addr) {
  const std::string tcp_check = std::string(VDEV_E2E_DIR) + "/tcp_check.py";
  const std::string out = dir + "/tcp-" + to.name() + ".out";
  const CmdResult srv =
      tryRun("ip netns exec " + to.name() + " python3 " + tcp_check + " server 5391 >" + out + " 2>&1 & echo $!");
  struct Killer {
    pid_t pid;
    ~Killer() {
      if (pid > 0) ::kill(pid, SIGKILL);
    }
  } killer{pid_t(std::atoi(srv.out.c_str()))};
  ASSERT_TRUE(
      waitUntil([&] { return to.exec("ss -Hltn 'sport = :5391'").find("5391") != std::string::npos; }, 10s, 20ms))
      << readFile(out);
  const CmdResult sent =
      tryRun("ip netns exec " + from.name() + " timeout 60 python3 " + tcp_check + " client " + addr + " 5391 1048576");
  ASSERT_TRUE(sent.ok()) << sent.out << sent.err;
  std::string got;
  ASSERT_TRUE(waitUntil([&] { return (got = readFile(out)).find("sha256") != std::string::npos; }, 10s, 20ms)) << got;
  EXPECT_EQ(got, sent.out) << "TCP " << from.name() << " -> " << addr;
}

// Two containers on netkit pairs and one on a veth: learned unicast between
// every pair takes the kernel fast path (a netkit's program sends with
// bpf_redirect, into a netkit with bpf_redirect_peer from the veth's), with
// exact counters; kernel ping and TCP work between them; vdevd killed with
// SIGKILL leaves no program on the pairs (its BPF links die with it) and
// the next one attaches again from the state file; port del deletes the
// pair, and a stopped vdevd leaves no program either.
TEST_F(VdevctlTest, NetkitContainersReachEachOtherAndAVethContainerOnTheKernelFastPath) {
  Netns ns1, ns2, ns3;
  const std::string n1 = uniqueName('k'), n2 = uniqueName('k'), v3 = uniqueName('c');
  DeviceGuard guard({n1, n2, v3});
  auto d = startVdevd({"--fast-path"});
  const Mac m1 = uniqueMac(), m2 = uniqueMac(), m3 = uniqueMac();
  const CmdResult first = ctl({"port", "add", n1, "type", "netkit", "create", "netns", ns1.name(), "peer", "eth0",
                               "peer-mac", macString(m1), "mtu", "1500"});
  if (!first.ok() && first.err.find(kNoNetkit) != std::string::npos)
    GTEST_SKIP() << "no netkit in this kernel (Linux 6.7+, CONFIG_NETKIT): " << first.err;
  ASSERT_TRUE(first.ok()) << describe({"port add"}, first);
  ok({"port", "add", n2, "type", "netkit", "create", "netns", ns2.name(), "peer", "eth0", "peer-mac", macString(m2)});
  ok({"port", "add", v3, "type", "veth", "hook", "tc", "create", "netns", ns3.name(), "peer", "eth0", "peer-mac",
      macString(m3)});
  EXPECT_EQ(linkInfo("eth0", &ns1).address, m1);
  EXPECT_EQ(linkInfo(n1).mtu, 1500);
  waitLive({n1, n2, v3});
  {
    const Json ports = json({"port", "show"});
    for (const std::string& n : {n1, n2}) {
      EXPECT_EQ(findPort(ports, n)->at("type").get<std::string>(), "netkit") << ports.dump();
      EXPECT_EQ(findPort(ports, n)->at("hook").get<std::string>(), "tc") << ports.dump();
    }
  }
  EXPECT_EQ(netkitPrograms(n1), 2u);
  PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2), c("eth0", &ns3, m3);
  a.setLabel("netkit 1");
  b.setLabel("netkit 2");
  c.setLabel("veth 3");
  const Endpoints all = {&a, &b, &c};
  // Every station learned (a broadcast each, read everywhere), then every
  // pair both ways.
  for (uint32_t i = 0; i < 3; ++i) all[i]->send({tf::kBroadcast, all[i]->mac(), Kind::kExperimental, 90 + i, 0, 60});
  ASSERT_TRUE(pumpUntil(all, [&] {
    for (uint32_t i = 0; i < 3; ++i)
      for (uint32_t j = 0; j < 3; ++j)
        if (i != j && all[i]->rx().count(90 + j) != 1) return false;
    return true;
  }, 5s)) << countsOf(all);
  const Stats learned = d->stats();
  exchange(a, b, 1, 40, drained(n1, a, n2, b));
  exchange(a, c, 3, 40, drained(n1, a, v3, c));
  expectCounters([&] { return stats(); }, n1, n2, a, b);
  const Stats s = expectCounters([&] { return stats(); }, n1, v3, a, c);
  // The fast path carried all of the unicast: netkit to netkit and to a
  // veth (bpf_redirect from a netkit's program), veth to netkit
  // (bpf_redirect_peer into it).
  const std::map<std::string, uint64_t> sent = {{n1, 80}, {n2, 40}, {v3, 40}};
  for (const auto& [p, n] : sent)
    EXPECT_EQ(s.port(p)[stats::kProgFast] - learned.port(p)[stats::kProgFast], n)
        << p << " did not send its unicast on the kernel fast path\n" << s.dump() << d->logs();

  // Kernel ping and TCP (1 MiB, every byte checked) between netkit
  // containers and with the veth one.
  ns1.exec("ip addr add 198.18.14.1/24 dev eth0");
  ns2.exec("ip addr add 198.18.14.2/24 dev eth0");
  ns3.exec("ip addr add 198.18.14.3/24 dev eth0");
  for (const auto& [from, to] : {std::pair{&ns1, "198.18.14.2"}, {&ns2, "198.18.14.3"}, {&ns3, "198.18.14.1"}}) {
    const CmdResult ping = tryRun("ip netns exec " + from->name() + " ping -c 2 -i 0.2 -W 2 " + to);
    EXPECT_TRUE(ping.ok()) << "ping " << to << " from " << from->name() << ": " << ping.out << ping.err;
  }
  const Stats before_tcp = d->stats();
  const auto tcp = [&](const Netns& from, const Netns& to, const std::string& addr) {
    expectTcpCarried(dir_.path(), from, to, addr);
  };
  tcp(ns1, ns2, "198.18.14.2");  // netkit -> netkit
  tcp(ns3, ns1, "198.18.14.1");  // veth -> netkit
  // Both streams on the fast path: every port's program sent its segments
  // and ACKs there (counted per skb: a GSO skb is one, so 1 MiB can be 16
  // of them, and delayed ACKs as few), and punted to vdevd no more than a
  // neighbour request now and then.
  const Stats after_tcp = d->stats();
  const auto delta = [&](const std::string& p, stats::PortCounter c) {
    return after_tcp.port(p)[c] - before_tcp.port(p)[c];
  };
  for (const std::string& p : {n1, n2, v3}) {
    EXPECT_GE(delta(p, stats::kProgFast), 8u) << p << "'s TCP did not take the kernel fast path\n" << after_tcp.dump();
    EXPECT_LE(delta(p, stats::kProgRedirect), 4u) << p << "'s TCP went to vdevd\n" << after_tcp.dump();
  }

  // SIGKILL: the BPF links close with vdevd's fds, no program is left; the
  // next vdevd restores the ports and attaches again.
  d->child().signal(SIGKILL);
  ASSERT_TRUE(d->child().wait(5s));
  EXPECT_TRUE(waitUntil([&] { return netkitPrograms(n1) == 0 && netkitPrograms(n2) == 0; }, 5s, 20ms));
  d = startVdevd({"--fast-path"});
  waitLive({n1, n2, v3});
  EXPECT_EQ(netkitPrograms(n1), 2u);
  const CmdResult again = tryRun("ip netns exec " + ns1.name() + " ping -c 2 -i 0.2 -W 2 198.18.14.2");
  EXPECT_TRUE(again.ok()) << again.out << again.err << d->logs();

  // port del deletes the pair, both ends; a stopped vdevd leaves no program.
  ok({"port", "del", n1});
  EXPECT_FALSE(linkExists(n1));
  EXPECT_FALSE(linkExists("eth0", &ns1));
  EXPECT_EQ(d->stop(), 0) << d->logs();
  EXPECT_EQ(netkitPrograms(n2), 0u);
}

// isolated on (bridge CNI's portIsolation, the bridge's "isolated"): two
// isolated containers never reach each other -- floods skip the other,
// unicast between them is dropped and counted (drops.isolated, at the
// sender's port), on the kernel fast path too -- while both reach a port
// that is not isolated and it reaches them. At both hooks.
TEST_F(VdevctlTest, IsolatedPortsReachOnlyPortsThatAreNot) {
  for (const std::string hook : {"tc", "xdp"}) {
    SCOPED_TRACE("hook " + hook);
    Netns ns1, ns2, ns3;
    const std::string c1 = uniqueName('i'), c2 = uniqueName('i'), c3 = uniqueName('c');
    DeviceGuard guard({c1, c2, c3});
    auto d = startVdevd({"--fast-path"});
    const Mac m1 = uniqueMac(), m2 = uniqueMac(), m3 = uniqueMac();
    ok({"port", "add", c1, "type", "veth", "hook", hook, "isolated", "on", "create", "netns", ns1.name(), "peer",
        "eth0", "peer-mac", macString(m1)});
    ok({"port", "add", c2, "type", "veth", "hook", hook, "isolated", "on", "create", "netns", ns2.name(), "peer",
        "eth0", "peer-mac", macString(m2)});
    ok({"port", "add", c3, "type", "veth", "hook", hook, "create", "netns", ns3.name(), "peer", "eth0",
        "peer-mac", macString(m3)});
    waitLive({c1, c2, c3});
    const Json ports = json({"port", "show"});
    EXPECT_TRUE(findPort(ports, c1)->at("isolated").get<bool>()) << ports.dump();
    EXPECT_TRUE(findPort(ports, c2)->at("isolated").get<bool>()) << ports.dump();
    EXPECT_FALSE(findPort(ports, c3)->at("isolated").get<bool>()) << ports.dump();
    PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2), c("eth0", &ns3, m3);
    a.setLabel("isolated 1");
    b.setLabel("isolated 2");
    c.setLabel("open");
    const Endpoints all = {&a, &b, &c};
    // What does not reach an isolated port is checked behind markers in
    // turn: the isolated ports' reach the open one only; the open one's,
    // sent after theirs arrived, reaches both (and so vouches at each for
    // the other's frames, and at each for its own); an isolated one's after
    // that vouches at the open one for its own frames.
    const Marker fromA{.from = &a, .to = Endpoints{&c}}, fromB{.from = &b, .to = Endpoints{&c}}, fromC{.from = &c};
    // Floods (and learning): from an isolated port only to the open one.
    a.send({testframe::kBroadcast, m1, Kind::kExperimental, 1, 0, 60});
    c.send({testframe::kBroadcast, m3, Kind::kExperimental, 2, 0, 60});
    b.send({testframe::kBroadcast, m2, Kind::kExperimental, 3, 0, 60});
    expectFlowsBeforeMarkers(all, {{1, {{&c, 1}}}, {2, {{&a, 1}, {&b, 1}}}, {3, {{&c, 1}}}},
                             {fromA, fromB, fromC, fromA});
    // Unicast, twice: the second round after the kernel fast path has the
    // stations' MACs.
    for (uint32_t round = 0; round < 2; ++round) {
      const uint32_t f = 10 + 10 * round;
      const Stats before = d->stats();
      sendMixed(a, m3, f, 40);
      sendMixed(c, m2, f + 1, 40);
      sendMixed(a, m2, f + 2, 40);
      sendMixed(b, m1, f + 3, 40);
      expectFlowsBeforeMarkers(all, {{f, {{&c, 40}}}, {f + 1, {{&b, 40}}}, {f + 2, {}}, {f + 3, {}}},
                               {fromA, fromB, fromC, fromA});
      // The markers passed the same checks after the frames: the counts are final.
      const auto iso = [&](const Stats& s, const std::string& p) {
        return s.port(p)[stats::kDropIsolated] - before.port(p)[stats::kDropIsolated];
      };
      const Stats s = d->statsUntil([&](const Stats& st) { return iso(st, c1) >= 40 && iso(st, c2) >= 40; }, 5s);
      EXPECT_EQ(iso(s, c1), 40u) << s.dump();
      EXPECT_EQ(iso(s, c2), 40u) << s.dump();
    }
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// Storm control and the policer, at both hooks: a port with its own small
// limits floods broadcast, multicast and unknown unicast and sends known
// unicast as fast as a packet socket can; what passes is the bucket's burst
// and the rate over the time it took, and every frame that did not pass is
// counted under its reason at the sender's port: sent = received + drops,
// exactly. The ports without limits of their own show the daemon's
// defaults, and are not limited by the sender's.
TEST_F(VdevctlTest, StormControlAndPolicerPassTheirRateAndCountTheRest) {
  for (const std::string hook : {"tc", "xdp"}) {
    SCOPED_TRACE("hook " + hook);
    Netns ns1, ns2, ns3;
    const std::string c1 = uniqueName('s'), c2 = uniqueName('c'), c3 = uniqueName('c');
    DeviceGuard guard({c1, c2, c3});
    auto d = startVdevd({"--fast-path", "--storm-mcast", "20000"});
    const Mac m1 = uniqueMac(), m2 = uniqueMac(), m3 = uniqueMac();
    // 100 frames/s of each storm class (bucket: 100 ms, 10 frames), the
    // policer at 1000 frames/s (bucket: 10 ms, 10 frames).
    ok({"port", "add", c1, "type", "veth", "hook", hook, "storm-bcast", "100", "storm-mcast", "100",
        "storm-unknown", "100", "create", "netns", ns1.name(), "peer", "eth0", "peer-mac", macString(m1)});
    ok({"port", "add", c2, "type", "veth", "hook", hook, "create", "netns", ns2.name(), "peer", "eth0",
        "peer-mac", macString(m2)});
    ok({"port", "add", c3, "type", "veth", "hook", hook, "storm-bcast", "off", "police-pps", "1000",
        "police-burst", "10", "create", "netns", ns3.name(), "peer", "eth0", "peer-mac", macString(m3)});
    waitLive({c1, c2, c3});
    const Json ports = json({"port", "show"});
    const Json& l1 = findPort(ports, c1)->at("limits");
    EXPECT_EQ(l1.at("storm_bcast_pps").get<uint64_t>(), 100u) << ports.dump();
    EXPECT_EQ(l1.at("storm_unknown_pps").get<uint64_t>(), 100u) << ports.dump();
    EXPECT_EQ(l1.at("police_pps").get<uint64_t>(), 0u) << ports.dump();
    const Json& l3 = findPort(ports, c3)->at("limits");
    EXPECT_EQ(l3.at("storm_bcast_pps").get<uint64_t>(), 0u) << ports.dump();
    EXPECT_EQ(l3.at("police_pps").get<uint64_t>(), 1000u) << ports.dump();
    EXPECT_EQ(l3.at("police_burst_ms").get<uint64_t>(), 10u) << ports.dump();
    const Json& l2 = findPort(ports, c2)->at("limits");
    EXPECT_EQ(l2.at("storm_bcast_pps").get<uint64_t>(), 10000u) << ports.dump();  // vdevd's default
    EXPECT_EQ(l2.at("storm_mcast_pps").get<uint64_t>(), 20000u) << ports.dump();  // --storm-mcast
    EXPECT_EQ(l2.at("police_pps").get<uint64_t>(), 0u) << ports.dump();
    PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2), c("eth0", &ns3, m3);
    a.setLabel("storm-limited");
    b.setLabel("open");
    c.setLabel("policed");
    const Endpoints all = {&a, &b, &c};
    learnAll(all, 1);  // one broadcast each (the limited port's is within its burst)

    // n frames from a limited port to dst as fast as it goes; received: at
    // each of `to`, the same number, within the bucket's burst and rate over
    // the time the frames can have met it (from the first send until every
    // frame was accounted for); the rest counted under `reason` at the
    // sender's port.
    const auto burst = [&](Endpoint& from, const std::string& port, const Mac& dst, uint32_t flow, uint32_t n,
                           stats::DropReason reason, double rate, double burst_frames,
                           const std::vector<Endpoint*>& to) {
      SCOPED_TRACE(stats::jsonPath(reason));
      const auto dropOf = [&](const Stats& s, stats::DropReason r) { return s.port(port)[r]; };
      const Stats before = d->stats();
      const auto t0 = std::chrono::steady_clock::now();
      from.sendFlow({dst, from.mac(), Kind::kExperimental, flow, 0, 60}, n);
      // Unknown unicast is vdevd's to limit: frames the kernel could not put
      // on a full RX ring on the way to vdevd (a slow sanitizer build) are
      // counted there instead, at the port's or the punt device's socket.
      const auto kernelDrops = [&](const Stats& s) {
        uint64_t n = 0;
        for (const auto& ps : s.ports) n += ps.xdpRxDrops();
        if (s.raw.contains("punt")) {
          auto punt = stats::readPortCounters(s.raw.at("punt"));
          if (!punt) throw HarnessError("punt: " + punt.error().message());
          n += (*punt)[stats::kXdpRxDropped] + (*punt)[stats::kXdpRxRingFull];
        }
        return n;
      };
      const auto dropped = [&](const Stats& s) {
        const uint64_t k = reason == stats::kDropStormUnknown ? kernelDrops(s) - kernelDrops(before) : 0;
        return dropOf(s, reason) - dropOf(before, reason) + k;
      };
      // Until every frame is accounted for at every destination: received
      // there, or counted as dropped (no marker: one from this port would
      // meet the same empty bucket).
      Stats s;
      const bool accounted = pumpUntil(all, [&] {
        s = d->stats();
        for (const Endpoint* e : to)
          if (dropped(s) + e->rx().count(flow) < n) return false;
        return true;
      }, 20s);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_TRUE(accounted) << "not every frame was received or counted within 20 s" << s.dump() << countsOf(all);
      EXPECT_EQ(dropped(s) + to[0]->rx().count(flow), uint64_t(n)) << s.dump() << countsOf(all);
      for (const Endpoint* e : to) EXPECT_EQ(e->rx().count(flow), to[0]->rx().count(flow)) << countsOf(all);
      EXPECT_GE(to[0]->rx().count(flow), uint64_t(burst_frames)) << countsOf(all);
      // The bucket's burst (and the one frame that may take it into debt)
      // and the rate for as long as the frames can have met the bucket:
      // from the first send until all were accounted for.
      EXPECT_LE(double(to[0]->rx().count(flow)), burst_frames + 1 + rate * secs)
          << "sent and accounted for in " << secs << " s" << countsOf(all);
      EXPECT_GT(dropped(s), 0u) << s.dump();
      for (const Endpoint* e : all) {
        EXPECT_EQ(e->rx().corrupt(), 0u) << e->label();
        EXPECT_EQ(e->rx().foreign(), 0u) << e->label();
      }
    };
    const Mac group = {0x01, 0x00, 0x5e, 0x7f, 0x12, 0x34};
    const Mac nobody = uniqueMac();
    // Broadcast and multicast: the program's buckets (100/s, 10 frames).
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // full again after learnAll's broadcasts
    burst(a, c1, testframe::kBroadcast, 10, 2000, stats::kDropStormBcast, 100, 10, {&b, &c});
    burst(a, c1, group, 11, 2000, stats::kDropStormMcast, 100, 10, {&b, &c});
    // Unknown unicast: vdevd's bucket.
    burst(a, c1, nobody, 12, 2000, stats::kDropStormUnknown, 100, 10, {&b, &c});
    // Known unicast through the policer (1000/s, 10 frames), twice: the
    // second time with the kernel fast path holding the MACs.
    for (uint32_t round = 0; round < 2; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a full bucket again
      burst(c, c3, m2, 20 + round, 4000, stats::kDropPolice, 1000, 10, {&b});
    }
    // The open port was never limited by the others' rates: its floods all
    // arrive; and the policed port's storm control is off.
    b.sendFlow({testframe::kBroadcast, m2, Kind::kExperimental, 30, 0, 60}, 500);
    expectFlow(all, 30, {{&a, 500}, {&c, 500}}, Millis(5000));
    const Stats s = d->stats();
    for (stats::DropReason r : {stats::kDropStormBcast, stats::kDropStormMcast, stats::kDropStormUnknown, stats::kDropPolice})
      EXPECT_EQ(s.port(c2)[r], 0u) << stats::dropName(r) << "\n" << s.dump();
    EXPECT_EQ(s.port(c3)[stats::kDropStormBcast], 0u) << s.dump();
    // The state file keeps a port's own limits only: after a restart with
    // other defaults, c1 and c3 have theirs and c2 the new defaults.
    const std::string state = readFile(state_);
    EXPECT_NE(state.find("storm_bcast=100"), std::string::npos) << state;
    EXPECT_NE(state.find("police_pps=1000"), std::string::npos) << state;
    ASSERT_EQ(d->stop(), 0) << d->logs();
    d = startVdevd({"--fast-path", "--storm-bcast", "5000"});
    waitLive({c1, c2, c3});
    const Json again = json({"port", "show"});
    EXPECT_EQ(findPort(again, c1)->at("limits").at("storm_bcast_pps").get<uint64_t>(), 100u) << again.dump();
    EXPECT_EQ(findPort(again, c1)->at("limits").at("storm_unknown_pps").get<uint64_t>(), 100u) << again.dump();
    EXPECT_EQ(findPort(again, c2)->at("limits").at("storm_bcast_pps").get<uint64_t>(), 5000u) << again.dump();
    EXPECT_EQ(findPort(again, c2)->at("limits").at("storm_mcast_pps").get<uint64_t>(), 10000u) << again.dump();
    EXPECT_EQ(findPort(again, c3)->at("limits").at("storm_bcast_pps").get<uint64_t>(), 0u) << again.dump();
    EXPECT_EQ(findPort(again, c3)->at("limits").at("police_pps").get<uint64_t>(), 1000u) << again.dump();
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// vdevctl port set on running ports, at both hooks, the kernel fast path
// on: a policer set on a port holds its known unicast to the rate at once
// (what does not pass is counted, sent = received + drops.police exactly)
// and lifted lets everything through again; two ports made isolated stop
// reaching each other at once, also once the fast path has their MACs, and
// made open again reach each other again; the state file keeps the change
// over a restart. A port that does not exist is refused (a non-root
// caller: UnprivilegedUserIsRefusedUnlessInGroup).
TEST_F(VdevctlTest, PortSetChangesARunningPortsLimitsAndIsolation) {
  for (const std::string hook : {"tc", "xdp"}) {
    SCOPED_TRACE("hook " + hook);
    Netns ns1, ns2, ns3;
    const std::string c1 = uniqueName('s'), c2 = uniqueName('s'), c3 = uniqueName('c');
    DeviceGuard guard({c1, c2, c3});
    auto d = startVdevd({"--fast-path"});
    const Mac m1 = uniqueMac(), m2 = uniqueMac(), m3 = uniqueMac();
    for (const auto& [port, ns, mac] : {std::tuple{c1, &ns1, m1}, {c2, &ns2, m2}, {c3, &ns3, m3}})
      ok({"port", "add", port, "type", "veth", "hook", hook, "create", "netns", ns->name(), "peer", "eth0",
          "peer-mac", macString(mac)});
    waitLive({c1, c2, c3});
    PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2), c("eth0", &ns3, m3);
    a.setLabel("c1");
    b.setLabel("c2");
    c.setLabel("c3");
    const Endpoints all = {&a, &b, &c};
    learnAll(all, 1);
    const auto limitsOf = [&](const std::string& port) { return (*findPort(json({"port", "show"}), port)).at("limits"); };
    const auto police = [&](const Stats& s) { return s.port(c1)[stats::kDropPolice]; };

    // A policer of 1000 frames/s (bucket: 10 ms, 10 frames) on c1, running.
    ok({"port", "set", c1, "police-pps", "1000", "police-burst", "10"});
    EXPECT_EQ(limitsOf(c1).at("police_pps").get<uint64_t>(), 1000u);
    EXPECT_EQ(limitsOf(c1).at("police_burst_ms").get<uint64_t>(), 10u);
    EXPECT_EQ(limitsOf(c1).at("storm_bcast_pps").get<uint64_t>(), 10000u) << "not given: vdevd's default stays";
    for (uint32_t round = 0; round < 2; ++round) {  // the second with the fast path holding the MACs
      std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a full bucket again
      const uint32_t flow = 10 + round, n = 4000;
      const Stats before = d->stats();
      const auto t0 = std::chrono::steady_clock::now();
      a.sendFlow({m2, m1, Kind::kExperimental, flow, 0, 60}, n);
      // Until every frame is accounted for: received by B or policed (no
      // marker: one from c1 would meet the same empty bucket).
      Stats s;
      const bool accounted = pumpUntil(all, [&] {
        s = d->stats();
        return police(s) - police(before) + b.rx().count(flow) >= n;
      }, 20s);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_TRUE(accounted) << "not every frame was received or policed within 20 s" << s.dump() << countsOf(all);
      const uint64_t got = b.rx().count(flow);
      EXPECT_EQ(police(s) - police(before) + got, uint64_t(n)) << s.dump() << countsOf(all);
      EXPECT_GE(got, 10u) << countsOf(all);
      // The burst, the frame that may take the bucket into debt, and the
      // rate from the first send until every frame was accounted for.
      EXPECT_LE(double(got), 11 + 1000 * secs) << "sent and accounted for in " << secs << " s" << countsOf(all);
    }
    // Lifted: everything passes again, nothing more is counted.
    ok({"port", "set", c1, "police-pps", "off"});
    EXPECT_EQ(limitsOf(c1).at("police_pps").get<uint64_t>(), 0u);
    const uint64_t policed = police(d->stats());
    sendMixed(a, m2, 20, 500);
    expectFlow(all, 20, {{&b, 500}}, Millis(5000));
    EXPECT_EQ(police(d->stats()), policed);

    // Isolation, both ways at once; c3 (open) still reaches and is reached.
    ok({"port", "set", c1, "isolated", "on"});
    ok({"port", "set", c2, "isolated", "on"});
    EXPECT_TRUE((*findPort(json({"port", "show"}), c1)).at("isolated").get<bool>());
    // Checked behind markers in turn: c1's reaches c3 only; c3's, sent after
    // it arrived, reaches c1 and c2 (vouching at c2 for c1's frames, at c1
    // for its own); c1's again vouches at c3 for c3's own.
    const Marker fromA{.from = &a, .to = Endpoints{&c}}, fromC{.from = &c};
    for (uint32_t round = 0; round < 2; ++round) {
      const uint32_t f = 30 + 10 * round;
      const uint64_t iso0 = d->stats().port(c1)[stats::kDropIsolated];
      sendMixed(a, m2, f, 40);
      sendMixed(a, m3, f + 1, 40);
      sendMixed(c, m2, f + 2, 40);
      expectFlowsBeforeMarkers(all, {{f, {}}, {f + 1, {{&c, 40}}}, {f + 2, {{&b, 40}}}}, {fromA, fromC, fromA});
      const Stats s = d->statsUntil([&](const Stats& st) { return st.port(c1)[stats::kDropIsolated] - iso0 >= 40; }, 5s);
      EXPECT_EQ(s.port(c1)[stats::kDropIsolated] - iso0, 40u) << s.dump();
    }
    ok({"port", "set", c2, "isolated", "off"});
    sendMixed(a, m2, 50, 40);
    expectFlow(all, 50, {{&b, 40}});

    // Refusals change nothing.
    const CmdResult none = ctl({"port", "set", uniqueName('n'), "isolated", "on"});
    EXPECT_EQ(none.status, 1) << describe({"port", "set"}, none);
    EXPECT_NE(none.err.find("no port"), std::string::npos) << none.err;

    // Saved: after a restart c1 is isolated with its policer off, c2 open.
    const std::string state = readFile(state_);
    EXPECT_NE(state.find("police_pps=0"), std::string::npos) << state;
    EXPECT_NE(state.find("police_burst_ms=10"), std::string::npos) << state;
    ASSERT_EQ(d->stop(), 0) << d->logs();
    d = startVdevd({"--fast-path", "--police-pps", "5"});
    waitLive({c1, c2, c3});
    const Json again = json({"port", "show"});
    EXPECT_TRUE(findPort(again, c1)->at("isolated").get<bool>()) << again.dump();
    EXPECT_FALSE(findPort(again, c2)->at("isolated").get<bool>()) << again.dump();
    EXPECT_EQ(findPort(again, c1)->at("limits").at("police_pps").get<uint64_t>(), 0u) << "its own: off" << again.dump();
    EXPECT_EQ(findPort(again, c2)->at("limits").at("police_pps").get<uint64_t>(), 5u) << "vdevd's new default" << again.dump();
    // What a port's program dropped stays in vdevd's totals when the port
    // goes: c2 sends over its 5 frames/s, then is removed.
    // Once every frame is accounted for at c2 (policed, or passed to vdevd or
    // the fast path), the count is final.
    b.sendFlow({m3, m2, Kind::kExperimental, 61, 0, 60}, 2000);
    const auto accounted = [&](const Stats& st) {
      const PortStats& p = st.port(c2);
      return p[stats::kDropPolice] + p[stats::kRxPackets] + p.xdpRxDrops();
    };
    const Stats before = d->statsUntil([&](const Stats& st) { return accounted(st) >= 2000; }, 20s);
    EXPECT_EQ(accounted(before), 2000u) << before.dump();
    ASSERT_GT(before.port(c2)[stats::kDropPolice], 0u) << before.dump();
    ok({"port", "del", c2});
    const Stats after = d->stats();
    auto removed = stats::readPortCounters(after.raw.at("removed_ports"));
    ASSERT_TRUE(removed) << removed.error().message() << "\n" << after.dump();
    EXPECT_EQ((*removed)[stats::kDropPolice], before.port(c2)[stats::kDropPolice]) << after.dump();
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// allowed-mac (anti-spoofing), at both hooks with the kernel fast path on:
// the port's own MAC passes, the fast path carrying it once learned; any
// other source -- a made-up MAC, another port's, to a station or to
// everyone -- is dropped by the port's program and counted, exactly, as
// drops.spoof_mac, never reaching vdevd (no mac_locked); "allowed-mac any"
// lets every source through again, and the state file keeps it.
TEST_F(VdevctlTest, AllowedMacDropsEveryOtherSourceAtThePortsProgram) {
  for (const std::string hook : {"tc", "xdp"}) {
    SCOPED_TRACE("hook " + hook);
    Netns ns1, ns2;
    const std::string c1 = uniqueName('m'), c2 = uniqueName('c');
    DeviceGuard guard({c1, c2});
    auto d = startVdevd({"--fast-path"});
    const Mac m1 = uniqueMac(), m2 = uniqueMac(), spoof = uniqueMac();
    ok({"port", "add", c1, "type", "veth", "hook", hook, "allowed-mac", macString(m1), "create", "netns", ns1.name(),
        "peer", "eth0", "peer-mac", macString(m1)});
    ok({"port", "add", c2, "type", "veth", "hook", hook, "create", "netns", ns2.name(), "peer", "eth0", "peer-mac",
        macString(m2)});
    waitLive({c1, c2});
    const Json ports = json({"port", "show"});
    EXPECT_EQ(findPort(ports, c1)->at("limits").at("allowed_mac").get<std::string>(), macString(m1)) << ports.dump();
    EXPECT_FALSE(findPort(ports, c2)->at("limits").contains("allowed_mac")) << ports.dump();
    PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2);
    a.setLabel("locked");
    b.setLabel("open");
    const Endpoints all = {&a, &b};
    learnAll(all, 1);
    for (uint32_t round = 0; round < 2; ++round) {  // the second on the fast path
      sendMixed(a, m2, 10 + round, 40);
      expectFlow(all, 10 + round, {{&b, 40}});
    }
    const auto spoofed = [&](const Stats& s) { return s.port(c1)[stats::kDropSpoofMac]; };
    const uint64_t locked0 = d->stats().port(c1)[stats::kDropMacLocked];
    a.sendFlow({m2, spoof, Kind::kExperimental, 20, 0, 60}, 100);
    a.sendFlow({m2, m2, Kind::kIpv4Udp, 21, 0, 300}, 50);  // the other port's own MAC
    a.sendFlow({testframe::kBroadcast, spoof, Kind::kExperimental, 22, 0, 60}, 50);
    // Behind a marker from the port's own MAC: once B has it, the program
    // has decided every frame before it, and the count is final.
    expectFlowsBeforeMarkers(all, {{20, {}}, {21, {}}, {22, {}}}, {Marker{.from = &a}});
    const Stats s = d->statsUntil([&](const Stats& st) { return spoofed(st) >= 200; }, 5s);
    EXPECT_EQ(spoofed(s), 200u) << s.dump();
    EXPECT_EQ(d->stats().port(c1)[stats::kDropMacLocked], locked0) << "spoofed frames reached vdevd";
    EXPECT_EQ(d->stats().port(c2)[stats::kDropSpoofMac], 0u);
    sendMixed(a, m2, 23, 40);  // its own MAC still passes
    expectFlow(all, 23, {{&b, 40}});

    ok({"port", "set", c1, "allowed-mac", "any"});
    EXPECT_FALSE((*findPort(json({"port", "show"}), c1)).at("limits").contains("allowed_mac"));
    a.sendFlow({m2, spoof, Kind::kExperimental, 30, 0, 60}, 40);
    expectFlow(all, 30, {{&b, 40}});
    EXPECT_EQ(spoofed(d->stats()), 200u);
    EXPECT_NE(readFile(state_).find("allowed_mac=00:00:00:00:00:00"), std::string::npos) << readFile(state_);
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// Frames for the address checks, built byte by byte: ARP (request, to
// everyone), IPv6/UDP, an IPv6 Neighbour Advertisement, an 802.1Q-tagged
// IPv4 frame. Checksums are not filled in: the checks read addresses only.
std::vector<uint8_t> ethHeader(const Mac& dst, const Mac& src, uint16_t type) {
  std::vector<uint8_t> f(dst.begin(), dst.end());
  f.insert(f.end(), src.begin(), src.end());
  f.push_back(uint8_t(type >> 8));
  f.push_back(uint8_t(type));
  return f;
}
std::vector<uint8_t> arpFrame(const Mac& src, const IpAddr& sender, const IpAddr& target) {
  std::vector<uint8_t> f = ethHeader(tf::kBroadcast, src, 0x0806);
  const uint8_t head[] = {0, 1, 8, 0, 6, 4, 0, 1};  // Ethernet, IPv4, request
  f.insert(f.end(), std::begin(head), std::end(head));
  f.insert(f.end(), src.begin(), src.end());
  f.insert(f.end(), sender.begin() + 12, sender.end());
  f.insert(f.end(), 6, 0);
  f.insert(f.end(), target.begin() + 12, target.end());
  f.resize(60);
  return f;
}
std::vector<uint8_t> ipv6Frame(const Mac& dst, const Mac& src, const IpAddr& from, const IpAddr& to, uint8_t next,
                               std::vector<uint8_t> payload) {
  std::vector<uint8_t> f = ethHeader(dst, src, 0x86dd);
  const uint8_t head[] = {0x60, 0, 0, 0, uint8_t(payload.size() >> 8), uint8_t(payload.size()), next, 64};
  f.insert(f.end(), std::begin(head), std::end(head));
  f.insert(f.end(), from.begin(), from.end());
  f.insert(f.end(), to.begin(), to.end());
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}
// `payload` behind an 8-byte hop-by-hop header (a PadN option), as MLD
// sends its reports.
std::vector<uint8_t> behindHopByHop(uint8_t next, std::vector<uint8_t> payload) {
  std::vector<uint8_t> p = {next, 0, 1, 4, 0, 0, 0, 0};
  p.insert(p.end(), payload.begin(), payload.end());
  return p;
}
// `payload` (of protocol `next`) behind extension headers, outermost
// first: each one's type and length in 8-byte units (a fragment header:
// 44 and 1, its offset `fragOffset` 8-byte units, no more fragments);
// returns the chain's first type in `first`. Options: PadN.
std::vector<uint8_t> behindExtensions(std::vector<std::pair<uint8_t, uint8_t>> headers, uint8_t next,
                                      std::vector<uint8_t> payload, uint8_t* first, uint16_t fragOffset = 0) {
  std::vector<uint8_t> p = std::move(payload);
  for (auto it = headers.rbegin(); it != headers.rend(); ++it) {
    std::vector<uint8_t> h(size_t(it->second) * 8, 0);
    h[0] = next;
    if (it->first == 44) {
      h[2] = uint8_t(fragOffset >> 5);
      h[3] = uint8_t(fragOffset << 3);
      h[7] = 1;  // identification
    } else {
      h[1] = uint8_t(it->second - 1);
      h[2] = 1;  // PadN over the rest
      h[3] = uint8_t(h.size() - 4);
    }
    p.insert(p.begin(), h.begin(), h.end());
    next = it->first;
  }
  *first = next;
  return p;
}
// The link-local address a kernel makes from mac (modified EUI-64).
IpAddr linkLocalOf(const Mac& mac) {
  IpAddr a = *parseIp("fe80::");
  const uint8_t id[] = {uint8_t(mac[0] ^ 2), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
  std::copy(std::begin(id), std::end(id), a.begin() + 8);
  return a;
}
std::vector<uint8_t> neighbourAdvert(const Mac& src, const IpAddr& from, const IpAddr& target, bool hbh = false,
                                     std::vector<std::pair<uint8_t, uint8_t>> ext = {}) {
  std::vector<uint8_t> na = {136, 0, 0, 0, 0x60, 0, 0, 0};  // type, code, checksum, flags S|O
  na.insert(na.end(), target.begin(), target.end());
  const IpAddr all = *parseIp("ff02::1");
  if (!ext.empty()) {
    uint8_t first = 0;
    std::vector<uint8_t> p = behindExtensions(std::move(ext), 58, na, &first);
    return ipv6Frame({0x33, 0x33, 0, 0, 0, 1}, src, from, all, first, p);
  }
  if (hbh) return ipv6Frame({0x33, 0x33, 0, 0, 0, 1}, src, from, all, 0, behindHopByHop(58, na));
  return ipv6Frame({0x33, 0x33, 0, 0, 0, 1}, src, from, all, 58, na);
}

// allowed-ip (anti-spoofing by address), at both hooks with the kernel fast
// path on, set on a running port (port set): IPv4 from an allowed source
// passes, once learned on the fast path; IPv4 from any other, ARP with
// another sender, IPv6 from another, a Neighbour Advertisement for another
// (also behind a hop-by-hop header and options, or more headers than the
// program walks),
// an 802.1Q-tagged frame and another EtherType are dropped by the port's
// program and counted exactly as drops.spoof_ip, never reaching vdevd;
// ARP and IPv6 from allowed addresses pass. The container's own kernel:
// ping from its address works, from another address it does not. "any"
// lifts the check, and the state file keeps each step.
TEST_F(VdevctlTest, AllowedIpDropsOtherSourcesAndEtherTypesAtThePortsProgram) {
  for (const std::string hook : {"tc", "xdp"}) {
    SCOPED_TRACE("hook " + hook);
    Netns ns1, ns2;
    const std::string c1 = uniqueName('a'), c2 = uniqueName('c');
    DeviceGuard guard({c1, c2});
    auto d = startVdevd({"--fast-path"});
    const Mac m1 = uniqueMac(), m2 = uniqueMac();
    ok({"port", "add", c1, "type", "veth", "hook", hook, "create", "netns", ns1.name(), "peer", "eth0", "peer-mac",
        macString(m1)});
    ok({"port", "add", c2, "type", "veth", "hook", hook, "create", "netns", ns2.name(), "peer", "eth0", "peer-mac",
        macString(m2)});
    waitLive({c1, c2});
    PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2);
    a.setLabel("locked");
    b.setLabel("open");
    const Endpoints all = {&a, &b};
    learnAll(all, 1);  // experimental frames: before the lock, which drops them
    // Test frames of flow F come from 198.18.F.(1 + seq % 250); the locked
    // port's markers are IPv4 from 198.18.10.1 (see kMarkerFlow), the other
    // EtherType of the default ones would be dropped.
    ok({"port", "set", c1, "allowed-ip", "198.18.10.1,198.18.11.1,198.18.13.1,2001:db8:a::1"});
    const Marker fromLocked{.from = &a, .kind = Kind::kIpv4Udp, .flow = kMarkerFlow + 10};
    const Json ports = json({"port", "show"});
    const Json& ips = findPort(ports, c1)->at("limits").at("allowed_ips");
    ASSERT_EQ(ips.size(), 4u) << ports.dump();
    EXPECT_EQ(ips[3].get<std::string>(), "2001:db8:a::1");
    EXPECT_FALSE(findPort(ports, c2)->at("limits").contains("allowed_ips")) << ports.dump();
    EXPECT_NE(readFile(state_).find("allowed_ips=198.18.10.1,198.18.11.1,198.18.13.1,2001:db8:a::1"),
              std::string::npos)
        << readFile(state_);
    for (uint32_t round = 0; round < 2; ++round) {  // the second on the fast path
      for (uint32_t k = 0; k < 20; ++k) a.send({m2, m1, Kind::kIpv4Udp, 10 + round, 250 * k, 60});
      expectFlow(all, 10 + round, {{&b, 20}}, {fromLocked});
    }
    const auto spoofed = [&](const Stats& s) { return s.port(c1)[stats::kDropSpoofIp]; };
    const Stats s0 = d->stats();
    ASSERT_EQ(spoofed(s0), 0u) << s0.dump();
    const uint64_t locked0 = s0.port(c1)[stats::kDropMacLocked], bad0 = s0.port(c1)[stats::kDropBadType];

    const IpAddr mine = *parseIp("198.18.10.1"), other = *parseIp("198.18.10.9"), peer = *parseIp("198.18.10.2");
    const IpAddr mine6 = *parseIp("2001:db8:a::1"), other6 = *parseIp("2001:db8:a::9"),
                 ll = linkLocalOf(m1), router = *parseIp("fe80::1"), peer6 = *parseIp("2001:db8:a::2");
    const std::vector<uint8_t> udp = {0xb7, 0x99, 0xb7, 0x99, 0, 8, 0, 0};
    const auto times = [&](const std::vector<uint8_t>& f, int n) {
      for (int i = 0; i < n; ++i) ASSERT_EQ(a.sendRaw(f), 0) << "frame " << i;
    };
    a.sendFlow({m2, m1, Kind::kIpv4Udp, 10, 1, 60}, 50);        // 198.18.10.2 ... .51
    a.sendFlow({m2, m1, Kind::kExperimental, 12, 0, 60}, 30);   // another EtherType
    times(arpFrame(m1, other, peer), 10);                       // ARP from another sender
    times(ipv6Frame(m2, m1, other6, peer6, 17, udp), 10);       // IPv6 from another
    times(neighbourAdvert(m1, ll, other6), 10);                 // NA for another
    times(neighbourAdvert(m1, ll, other6, true), 10);           // ... behind a hop-by-hop header
    times(neighbourAdvert(m1, ll, other6, false, {{0, 1}, {60, 3}}), 5);  // ... and 24 bytes of options
    times(neighbourAdvert(m1, ll, other6, false, std::vector<std::pair<uint8_t, uint8_t>>(9, {60, 1})),
          5);  // ... behind more headers than the program walks: refused unread
    times(neighbourAdvert(m1, ll, router), 5);                  // NA for the router's fe80::1
    times(ipv6Frame(m2, m1, router, peer6, 17, udp), 5);        // IPv6 from a link-local not its own
    std::vector<uint8_t> tagged = ethHeader(m2, m1, 0x8100);    // VLAN 5, inner IPv4 from mine
    const uint8_t tag[] = {0, 5};
    tagged.insert(tagged.end(), std::begin(tag), std::end(tag));
    {
      std::vector<uint8_t> inner(64, 0);
      testkit::writeUdpHeaders({.dst = m2, .src = m1, .src_ip = 0xc6120a01u, .dst_ip = 0xc6120a02u},
                               std::span<uint8_t>(inner));
      tagged.insert(tagged.end(), inner.begin() + 12, inner.end());
    }
    times(tagged, 10);
    // Allowed: ARP from its address, IPv6 from its own and from its own
    // link-local one (its MAC's), a Neighbour Advertisement for its own.
    times(arpFrame(m1, mine, peer), 5);
    times(ipv6Frame(m2, m1, mine6, peer6, 17, udp), 5);
    times(ipv6Frame(m2, m1, ll, peer6, 17, udp), 5);
    times(neighbourAdvert(m1, ll, mine6), 5);
    times(neighbourAdvert(m1, ll, mine6, false, {{0, 1}, {60, 2}}), 5);  // ... behind two headers
    // Once B has a marker from behind them, the program has decided every
    // one and B has every one that passed: the counts are final.
    expectMarkersArrive(all, {fromLocked});
    const Stats s1 = d->statsUntil([&](const Stats& st) { return spoofed(st) >= 150; }, 5s);
    EXPECT_EQ(spoofed(s1), 150u) << s1.dump();
    EXPECT_EQ(b.rx().count(10), 20u) << "no spoofed IPv4 reached the other container" << countsOf(all);
    EXPECT_EQ(b.rx().count(12), 0u) << "no other EtherType either" << countsOf(all);
    EXPECT_EQ(b.rx().foreign(), 25u) << "the 25 allowed ARP and IPv6 frames, nothing else" << countsOf(all);
    b.rx().clear();
    EXPECT_EQ(s1.port(c1)[stats::kDropMacLocked], locked0) << "spoofed frames reached vdevd";
    EXPECT_EQ(s1.port(c1)[stats::kDropBadType], bad0) << "spoofed frames reached vdevd";
    EXPECT_EQ(s1.port(c2)[stats::kDropSpoofIp], 0u);
    EXPECT_EQ(s1.port(c1)[stats::kDropSpoofMac], 0u) << "no allowed-mac on this port";

    // The container's kernel, from its own address and from another one.
    ns1.exec("ip addr add 198.18.13.1/24 dev eth0");
    ns2.exec("ip addr add 198.18.13.2/24 dev eth0");
    const CmdResult own = tryRun("ip netns exec " + ns1.name() + " ping -c 2 -i 0.2 -W 2 198.18.13.2");
    EXPECT_TRUE(own.ok()) << own.out << own.err;
    ns1.exec("ip addr add 198.18.13.7/24 dev eth0");
    ns1.exec("ip neigh flush dev eth0");
    const CmdResult spoof = tryRun("ip netns exec " + ns1.name() + " ping -c 1 -W 1 -I 198.18.13.7 198.18.13.2");
    EXPECT_FALSE(spoof.ok()) << "a ping from an address the port may not send from got an answer: " << spoof.out;
    EXPECT_GT(spoofed(d->stats()), 140u);

    ok({"port", "set", c1, "allowed-ip", "any"});
    EXPECT_FALSE((*findPort(json({"port", "show"}), c1)).at("limits").contains("allowed_ips"));
    pumpFor(all, Millis(100));
    a.rx().clear();  // the pings' frames
    b.rx().clear();
    const uint64_t before = spoofed(d->stats());
    a.sendFlow({m2, m1, Kind::kExperimental, 30, 0, 60}, 40);
    expectFlow(all, 30, {{&b, 40}});
    EXPECT_EQ(spoofed(d->stats()), before);
    EXPECT_NE(readFile(state_).find("allowed_ips=any"), std::string::npos) << readFile(state_);
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// ra-guard and dhcp-guard, at both hooks with the kernel fast path on:
// Router Advertisements (behind IPv6 extension headers too: hop-by-hop,
// destination options, routing, a first fragment; behind more than the
// program walks, refused unread; behind a priority tag, 802.1ad + 802.1Q,
// and three tags, refused unread) and DHCP/DHCPv6
// servers' messages from the port (an IPv4 header with options too) are dropped by its program and counted
// exactly, as drops.ra_guard and drops.dhcp_guard; a client's DISCOVER and
// a Router Solicitation pass. port set turns each off again, and the state
// file keeps both.
TEST_F(VdevctlTest, RaAndDhcpGuardDropServersMessagesFromAGuest) {
  for (const std::string hook : {"tc", "xdp"}) {
    SCOPED_TRACE("hook " + hook);
    Netns ns1, ns2;
    const std::string c1 = uniqueName('g'), c2 = uniqueName('c');
    DeviceGuard guard({c1, c2});
    auto d = startVdevd({"--fast-path"});
    const Mac m1 = uniqueMac(), m2 = uniqueMac();
    ok({"port", "add", c1, "type", "veth", "hook", hook, "ra-guard", "on", "dhcp-guard", "on", "create", "netns",
        ns1.name(), "peer", "eth0", "peer-mac", macString(m1)});
    ok({"port", "add", c2, "type", "veth", "hook", hook, "create", "netns", ns2.name(), "peer", "eth0", "peer-mac",
        macString(m2)});
    waitLive({c1, c2});
    const Json ports = json({"port", "show"});
    EXPECT_TRUE(findPort(ports, c1)->at("limits").at("ra_guard").get<bool>()) << ports.dump();
    EXPECT_TRUE(findPort(ports, c1)->at("limits").at("dhcp_guard").get<bool>()) << ports.dump();
    EXPECT_FALSE(findPort(ports, c2)->at("limits").at("ra_guard").get<bool>()) << ports.dump();
    PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2);
    a.setLabel("guarded");
    b.setLabel("open");
    const Endpoints all = {&a, &b};
    learnAll(all, 1);
    for (uint32_t round = 0; round < 2; ++round) {  // other traffic: as ever, the second on the fast path
      sendMixed(a, m2, 10 + round, 40);
      expectFlow(all, 10 + round, {{&b, 40}});
    }

    const auto udp4 = [&](uint16_t sport, uint16_t dport, bool options) {
      std::vector<uint8_t> f(300, 0);
      testkit::writeUdpHeaders({.dst = tf::kBroadcast, .src = m1, .src_ip = 0, .dst_ip = 0xffffffffu,
                                .src_port = sport, .dst_port = dport},
                               std::span<uint8_t>(f));
      if (options) {  // four NOPs: IHL 6, the UDP header 4 bytes later
        f.insert(f.begin() + 34, {1, 1, 1, 1});
        f[14] = 0x46;
        f[17] = uint8_t(f[17] + 4);
      }
      return f;
    };
    const IpAddr ll = *parseIp("fe80::1"), all6 = *parseIp("ff02::1"), routers = *parseIp("ff02::2"),
                 dhcp6 = *parseIp("ff02::1:2");
    const Mac allNodes = {0x33, 0x33, 0, 0, 0, 1}, allRouters = {0x33, 0x33, 0, 0, 0, 2},
              dhcpAgents = {0x33, 0x33, 0, 1, 0, 2};
    const std::vector<uint8_t> ra = {134, 0, 0, 0, 64, 0, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0};
    const std::vector<uint8_t> rs = {133, 0, 0, 0, 0, 0, 0, 0};
    const std::vector<uint8_t> advertise = {0x02, 0x23, 0x02, 0x22, 0, 12, 0, 0, 2, 0, 0, 1};  // 547 -> 546
    const std::vector<uint8_t> solicit = {0x02, 0x22, 0x02, 0x23, 0, 12, 0, 0, 1, 0, 0, 1};    // 546 -> 547
    const auto times = [&](const std::vector<uint8_t>& f, int n) {
      for (int i = 0; i < n; ++i) ASSERT_EQ(a.sendRaw(f), 0) << "frame " << i;
    };
    times(ipv6Frame(allNodes, m1, ll, all6, 58, ra), 10);                 // RA
    times(ipv6Frame(allNodes, m1, ll, all6, 0, behindHopByHop(58, ra)), 5);  // ... behind hop-by-hop
    uint8_t first = 0;
    using Ext = std::vector<std::pair<uint8_t, uint8_t>>;
    const auto behind = [&](Ext ext, uint8_t next, const std::vector<uint8_t>& p, uint16_t frag = 0) {
      std::vector<uint8_t> q = behindExtensions(std::move(ext), next, p, &first, frag);
      return ipv6Frame(allNodes, m1, ll, all6, first, q);
    };
    times(behind({{0, 1}, {60, 2}}, 58, ra), 5);   // ... behind hop-by-hop and destination options
    times(behind({{43, 1}}, 58, ra), 5);           // ... behind a routing header
    times(behind({{44, 1}}, 58, ra), 5);           // ... in a first (and only) fragment
    times(behind(Ext(9, {60, 1}), 58, ra), 5);     // ... behind more headers than are walked
    times(behind({{60, 1}}, 17, advertise), 5);    // DHCPv6 ADVERTISE behind destination options
    // ... behind VLAN tags: one priority tag (at tc the kernel has taken
    // it off into the skb), 802.1ad + 802.1Q, and three (more than the
    // program reads: dropped whatever they carry).
    const auto withTags = [](std::vector<uint8_t> f, std::vector<uint16_t> tpids) {
      for (auto it = tpids.rbegin(); it != tpids.rend(); ++it) {
        const uint8_t t[] = {uint8_t(*it >> 8), uint8_t(*it), 0, 0};
        f.insert(f.begin() + 12, std::begin(t), std::end(t));
      }
      return f;
    };
    const std::vector<uint8_t> plainRa = ipv6Frame(allNodes, m1, ll, all6, 58, ra);
    times(withTags(plainRa, {0x8100}), 5);
    times(withTags(plainRa, {0x88a8, 0x8100}), 5);
    times(withTags(plainRa, {0x8100, 0x8100, 0x8100}), 5);
    times(withTags(udp4(4000, 68, false), {0x8100}), 5);  // to a client's port 68, tagged
    // Allowed: other UDP behind options, a later fragment (no upper-layer
    // header in it: the first fragment had it), the same RA unguarded below.
    const std::vector<uint8_t> other = {0x30, 0x39, 0x00, 0x09, 0, 12, 0, 0, 1, 2, 3, 4};  // 12345 -> 9
    times(behind({{60, 1}}, 17, other), 5);
    times(behind({{44, 1}}, 58, ra, 2), 5);
    times(udp4(67, 68, false), 10);                                        // DHCPOFFER
    times(udp4(67, 68, true), 5);                                          // ... behind IPv4 options
    times(ipv6Frame(allNodes, m1, ll, all6, 17, advertise), 5);           // DHCPv6 ADVERTISE
    times(udp4(68, 67, false), 5);                                         // allowed: DHCPDISCOVER
    times(ipv6Frame(allRouters, m1, ll, routers, 58, rs), 5);             // allowed: RS
    times(ipv6Frame(dhcpAgents, m1, ll, dhcp6, 17, solicit), 5);          // allowed: DHCPv6 SOLICIT
    const auto drops = [&](const Stats& st) {
      return std::pair{st.port(c1)[stats::kDropRaGuard], st.port(c1)[stats::kDropDhcpGuard]};
    };
    // Once B has a marker from behind them, the program has decided every
    // one and B has every one that passed: the counts are final.
    expectMarkersArrive(all, {Marker{.from = &a}});
    const Stats s1 = d->statsUntil([&](const Stats& st) { return drops(st).first >= 50 && drops(st).second >= 30; },
                                   5s);
    EXPECT_EQ(drops(s1), (std::pair<uint64_t, uint64_t>{50, 30})) << s1.dump();
    EXPECT_EQ(b.rx().foreign(), 25u) << "the 15 client frames and the 10 others allowed, nothing else"
                                     << countsOf(all);
    EXPECT_EQ(s1.port(c2)[stats::kDropRaGuard] + s1.port(c2)[stats::kDropDhcpGuard], 0u);
    b.rx().clear();

    ok({"port", "set", c1, "ra-guard", "off"});
    EXPECT_NE(readFile(state_).find("ra_guard=0 dhcp_guard=1"), std::string::npos) << readFile(state_);
    times(ipv6Frame(allNodes, m1, ll, all6, 58, ra), 10);
    times(udp4(67, 68, false), 10);
    expectMarkersArrive(all, {Marker{.from = &a}});
    const Stats s2 = d->statsUntil([&](const Stats& st) { return drops(st).second >= 40; }, 5s);
    EXPECT_EQ(drops(s2), (std::pair<uint64_t, uint64_t>{50, 40})) << s2.dump();
    EXPECT_EQ(b.rx().foreign(), 10u) << "the RAs, now let through" << countsOf(all);
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// A trunk's far end, as a packet socket: this kernel has no 802.1Q
// devices (CONFIG_VLAN_8021Q off), so the test sends tagged frames itself
// and reads back the tags of what it receives. The kernel takes a received
// tag off into the skb; PACKET_AUXDATA hands it over, and it is put back
// in place. Frames the socket sent itself are skipped.
std::vector<uint8_t> tagFrame(std::vector<uint8_t> f, uint16_t vid) {
  const uint8_t tag[] = {0x81, 0x00, uint8_t(vid >> 8), uint8_t(vid)};
  f.insert(f.begin() + 12, std::begin(tag), std::end(tag));
  return f;
}
std::optional<std::vector<uint8_t>> recvTagged(int fd, Millis timeout) {
  const int on = 1;
  ::setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &on, sizeof on);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    std::vector<uint8_t> f(9216);
    sockaddr_ll from{};
    alignas(tpacket_auxdata) char control[CMSG_SPACE(sizeof(tpacket_auxdata))];
    iovec iov = {f.data(), f.size()};
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof from;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &m, MSG_DONTWAIT);
    if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
    f.resize(size_t(n));
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA) continue;
      tpacket_auxdata aux;
      std::memcpy(&aux, CMSG_DATA(c), sizeof aux);
      if (aux.tp_status & TP_STATUS_VLAN_VALID) f = tagFrame(std::move(f), uint16_t(aux.tp_vlan_tci & 0x0fff));
    }
    return f;
  }
  return std::nullopt;
}
uint16_t vidOf(const std::vector<uint8_t>& f) {
  return f.size() >= 16 && f[12] == 0x81 && f[13] == 0x00 ? uint16_t((f[14] & 0x0f) << 8 | f[15]) : 0;
}

// `port add NAME type veth OPTS... create netns NS peer eth0 peer-mac MAC`:
// a container's port, its VLAN settings in opts.
std::vector<std::string> vethPortAdd(const std::string& name, const Netns& ns, const Mac& m,
                                     std::vector<std::string> opts) {
  std::vector<std::string> args = {"port", "add", name, "type", "veth"};
  args.insert(args.end(), opts.begin(), opts.end());
  for (const std::string& w : {std::string("create"), std::string("netns"), ns.name(), std::string("peer"),
                               std::string("eth0"), std::string("peer-mac"), macString(m)})
    args.push_back(w);
  return args;
}

// VLANs, with the kernel fast path on and off (it carries unicast between
// access ports of one VLAN, nothing to tag; a trunk's frames are vdevd's),
// the ports at the tc hook and at XDP, the trunk at either. Kernel
// ping between containers: two access ports of VLAN 10 reach each other;
// one of VLAN 20 with an address in the same subnet, and the same MAC as
// one of them, does not, nor does a port without VLAN settings (VLAN 1). A
// trunk port's far end asks for an address in VLAN 10 and one in VLAN 20
// with tagged ARP requests: each container's kernel answers, and the
// answer comes back with its VLAN's tag; VLAN 10's floods reach only VLAN
// 10's ports (the trunk's tagged); a VID the trunk does not carry is
// dropped and counted (vlan_filtered). port set moves a port into another
// VLAN, and the state file keeps it.
TEST_F(VdevctlTest, VlansKeepTenantsApartAndATrunkCarriesThemTagged) {
  struct Round {
    bool fast;
    const char* hook;  // the containers' ports' (vdevd --default-hook)
    const char* trunk;
  };
  for (const Round round : {Round{true, "auto", "tc"}, Round{true, "xdp", "xdp"}, Round{false, "auto", "xdp"}}) {
    const bool fast = round.fast;
    SCOPED_TRACE(std::string(fast ? "kernel fast path on" : "--no-fast-path") + ", ports at " + round.hook +
                 ", trunk at " + round.trunk);
    Netns nsA, nsB, nsC, nsT, nsU;
    const std::string a = uniqueName('v'), b = uniqueName('v'), c = uniqueName('v'), t = uniqueName('t'),
                      u = uniqueName('u');
    DeviceGuard guard({a, b, c, t, u});
    // auto: vdevd's own default, tc for the containers' veths.
    auto d = startVdevd({fast ? "--fast-path" : "--no-fast-path", "--default-hook", round.hook});
    const Mac ma = uniqueMac(), mb = uniqueMac(), mt = uniqueMac(), mu = uniqueMac();
    const auto add = [&](const std::string& name, const Netns& ns, const Mac& m, std::vector<std::string> vlan) {
      ok(vethPortAdd(name, ns, m, std::move(vlan)));
    };
    add(a, nsA, ma, {"vlan", "10"});
    add(b, nsB, mb, {"vlan", "10"});
    add(c, nsC, mb, {"vlan", "20"});  // b's MAC, in another VLAN
    // The trunk at the XDP hook in one round (an uplink's, a NIC's), at tc in the other.
    add(t, nsT, mt, {"trunk", "10,20", "hook", round.trunk});
    add(u, nsU, mu, {});
    waitLive({a, b, c, t, u});
    const Json ports = json({"port", "show"});
    EXPECT_EQ(findPort(ports, a)->at("vlan").at("pvid").get<uint64_t>(), 10u) << ports.dump();
    EXPECT_EQ(findPort(ports, t)->at("vlan").at("tagged").get<std::string>(), "10,20") << ports.dump();
    EXPECT_EQ(findPort(ports, t)->at("vlan").at("pvid").get<uint64_t>(), 0u) << ports.dump();
    EXPECT_FALSE(findPort(ports, u)->contains("vlan")) << ports.dump();
    EXPECT_NE(ok({"port", "show"}).find("trunk 10,20"), std::string::npos);

    nsA.exec("ip addr add 198.18.10.1/24 dev eth0");
    nsB.exec("ip addr add 198.18.10.2/24 dev eth0");
    nsC.exec("ip addr add 198.18.10.3/24 dev eth0");
    nsC.exec("ip addr add 198.18.20.3/24 dev eth0");
    nsU.exec("ip addr add 198.18.10.4/24 dev eth0");
    const auto ping = [&](const Netns& ns, const std::string& to, int wait_s) {
      return tryRun("ip netns exec " + ns.name() + " ping -c 2 -i 0.2 -W " + std::to_string(wait_s) + " " + to);
    };
    const auto fastOf = [&](const std::string& port) {
      const PortStats* p = stats().findPort(port);
      return p ? (*p)[stats::kProgFast] : uint64_t(0);
    };
    CmdResult r = tryRun("ip netns exec " + nsA.name() + " ping -c 10 -i 0.05 -W 2 198.18.10.2");
    EXPECT_TRUE(r.ok()) << "VLAN 10 to VLAN 10: " << r.out << r.err;
    if (fast)  // the echoes after the first, learned: the kernel's, between two access ports of VLAN 10
      EXPECT_GE(fastOf(a) + fastOf(b), 10u) << ok({"stats"});
    else
      EXPECT_EQ(fastOf(a) + fastOf(b), 0u) << ok({"stats"});

    // The trunk: a tagged ARP request in each VLAN; the answer carries the tag.
    PacketSocket trunk("eth0", &nsT, mt);
    const auto ask = [&](uint16_t vid, const char* sender, const char* target) -> std::optional<std::vector<uint8_t>> {
      EXPECT_EQ(trunk.sendRaw(tagFrame(arpFrame(mt, *parseIp(sender), *parseIp(target)), vid)), 0);
      const auto deadline = std::chrono::steady_clock::now() + 3s;
      while (std::chrono::steady_clock::now() < deadline) {
        auto f = recvTagged(trunk.fd(), Millis(200));
        // An ARP reply (type 0x0806, op 2) to the trunk's MAC.
        if (f && f->size() >= 26 && std::equal(mt.begin(), mt.end(), f->begin()) && (*f)[16] == 0x08 &&
            (*f)[17] == 0x06 && (*f)[25] == 2)
          return f;
      }
      return std::nullopt;
    };
    auto reply = ask(10, "198.18.10.5", "198.18.10.1");
    ASSERT_TRUE(reply) << "no ARP reply from VLAN 10 on the trunk";
    EXPECT_EQ(vidOf(*reply), 10u);
    EXPECT_TRUE(std::equal(ma.begin(), ma.end(), reply->begin() + 6)) << "not the VLAN 10 container's answer";
    reply = ask(20, "198.18.20.5", "198.18.20.3");
    ASSERT_TRUE(reply) << "no ARP reply from VLAN 20 on the trunk";
    EXPECT_EQ(vidOf(*reply), 20u);
    reply = ask(20, "198.18.10.5", "198.18.10.1");  // A's address, asked in VLAN 20
    EXPECT_FALSE(reply) << "VLAN 20's request reached VLAN 10";
    // The same MAC in two VLANs, on two ports; the trunk's in both, on one.
    const Json fdb = json({"fdb", "show"});
    const auto where = [&](const Mac& m, uint64_t vid) {
      std::string out;
      for (const Json& e : fdb)
        if (e.at("mac").get<std::string>() == macString(m) && e.at("vlan").get<uint64_t>() == vid) out += e.at("port").get<std::string>();
      return out;
    };
    EXPECT_EQ(where(mb, 10), b) << fdb.dump();
    EXPECT_EQ(where(mb, 20), c) << fdb.dump();
    EXPECT_EQ(where(mt, 10), t) << fdb.dump();
    EXPECT_EQ(where(mt, 20), t) << fdb.dump();
    EXPECT_NE(ok({"fdb", "show"}).find("VLAN"), std::string::npos);
    EXPECT_EQ(fastOf(t), 0u) << "a trunk's frames took the fast path: " << ok({"stats"});

    // Out of VLAN 10: VLAN 20 and the default VLAN hear nothing of it, not
    // even its ARP broadcasts, which reach b and, tagged 10, the trunk.
    while (recvTagged(trunk.fd(), Millis(50))) {
    }
    const Stats s0 = d->stats();
    r = ping(nsA, "198.18.10.3", 1);
    EXPECT_FALSE(r.ok()) << "VLAN 10 reached VLAN 20: " << r.out;
    r = ping(nsA, "198.18.10.4", 1);
    EXPECT_FALSE(r.ok()) << "VLAN 10 reached the default VLAN: " << r.out;
    r = ping(nsU, "198.18.10.1", 1);
    EXPECT_FALSE(r.ok()) << "the default VLAN reached VLAN 10: " << r.out;
    const Stats s1 = d->stats();
    EXPECT_EQ(s1.port(c)[stats::kTxPackets], s0.port(c)[stats::kTxPackets]) << "VLAN 10's broadcasts reached VLAN 20" << s1.dump();
    EXPECT_EQ(s1.port(u)[stats::kTxPackets], s0.port(u)[stats::kTxPackets]) << "VLAN 10's broadcasts reached VLAN 1" << s1.dump();
    EXPECT_GE(s1.port(b)[stats::kTxPackets] - s0.port(b)[stats::kTxPackets], 4u) << s1.dump();
    EXPECT_GE(s1.port(t)[stats::kTxPackets] - s0.port(t)[stats::kTxPackets], 4u) << s1.dump();
    size_t vlan10 = 0, other = 0;
    while (auto f = recvTagged(trunk.fd(), Millis(100))) (vidOf(*f) == 10 ? vlan10 : other)++;
    EXPECT_GE(vlan10, 4u) << "VLAN 10's ARP broadcasts on the trunk, tagged";
    EXPECT_EQ(other, 0u) << "untagged or other VLANs' frames on the trunk";
    // Not carried: VLAN 30, and untagged frames (no native VLAN).
    const uint64_t filtered0 = s1.port(t)[stats::kDropVlanFiltered];
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(trunk.sendRaw(tagFrame(arpFrame(mt, *parseIp("198.18.30.5"), *parseIp("198.18.30.1")), 30)), 0);
      ASSERT_EQ(trunk.sendRaw(arpFrame(mt, *parseIp("198.18.10.5"), *parseIp("198.18.10.1"))), 0);
    }
    const Stats s2 =
        d->statsUntil([&](const Stats& st) { return st.port(t)[stats::kDropVlanFiltered] >= filtered0 + 10; }, 5s);
    EXPECT_EQ(s2.port(t)[stats::kDropVlanFiltered], filtered0 + 10) << s2.dump();
    EXPECT_EQ(s2.port(a)[stats::kDropVlanFiltered] + s2.port(b)[stats::kDropVlanFiltered], 0u) << s2.dump();

    // Into VLAN 10 at run time: reachable now; saved.
    ok({"port", "set", c, "vlan", "10"});
    nsC.exec("ip link set eth0 address " + macString(uniqueMac()));  // b's MAC is VLAN 10's already
    nsA.exec("ip neigh flush dev eth0");
    r = ping(nsA, "198.18.10.3", 2);
    EXPECT_TRUE(r.ok()) << "after port set vlan 10: " << r.out << r.err;
    EXPECT_NE(readFile(state_).find("vlan_pvid=10 vlan_untagged=10"), std::string::npos) << readFile(state_);
    ok({"port", "set", c, "vlan", "none"});
    EXPECT_FALSE(findPort(json({"port", "show"}), c)->contains("vlan"));
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// eth0 in a namespace as if it were eth0.VID (vlan_tagger.bpf.c): this
// kernel has no 802.1Q devices, so a trunk's far end with a real stack on
// a VLAN is the namespace's own stack with the tag pushed on the way out
// and popped on the way in, by tcx programs the object owns (raw
// BPF_LINK_CREATE: libbpf 1.1 predates tcx). Detached when it goes (and
// with the device).
class VlanTagger {
 public:
  VlanTagger(const Netns& ns, const std::string& ifname, uint16_t vid) : skel_(vlan_tagger__open()) {
    if (!skel_) throw HarnessError("vlan_tagger: open");
    skel_->rodata->tagger_vid = vid;
    for (bpf_program* p : {skel_->progs.tagger_egress, skel_->progs.tagger_ingress})
      bpf_program__set_type(p, BPF_PROG_TYPE_SCHED_CLS);
    if (vlan_tagger__load(skel_)) throw HarnessError("vlan_tagger: load (tcx needs Linux 6.6)");
    const Status st = testkit::inNetns(&ns.kit(), [&]() -> Status {
      const unsigned ifindex = if_nametoindex(ifname.c_str());
      if (!ifindex) return Error{errno, "no " + ifname};
      const std::pair<bpf_program*, uint32_t> progs[] = {{skel_->progs.tagger_egress, 47 /* BPF_TCX_EGRESS */},
                                                         {skel_->progs.tagger_ingress, 46 /* BPF_TCX_INGRESS */}};
      for (const auto& [prog, type] : progs) {
        union bpf_attr a{};
        a.link_create.prog_fd = uint32_t(bpf_program__fd(prog));
        a.link_create.target_fd = ifindex;  // target_ifindex in newer headers
        a.link_create.attach_type = type;
        const long fd = ::syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof a);
        if (fd < 0) return Error{errno, "tcx attach"};
        links_.push_back(int(fd));
      }
      return {};
    });
    if (!st) throw HarnessError("vlan_tagger: " + st.error().message());
  }
  ~VlanTagger() {
    for (int fd : links_) ::close(fd);
    vlan_tagger__destroy(skel_);
  }
  VlanTagger(const VlanTagger&) = delete;
  VlanTagger& operator=(const VlanTagger&) = delete;

 private:
  vlan_tagger* skel_;
  std::vector<int> links_;
};

// A trunk on the kernel fast path, at either hook: a namespace whose eth0
// is in VLAN 10 (a VLAN device's stand-in, VlanTagger) on a veth port
// `trunk 10,20`, and an access container in VLAN 10. Kernel ping and TCP
// (1 MiB, every byte checked) both ways, once learned, are the kernel's:
// both ports' programs count what they sent on the fast path (the echoes,
// the segments and ACKs; vdevd's share no more than a neighbour request
// now and then), the tag popped towards the container and pushed towards
// the trunk. A container in VLAN 20 with an address in the same subnet
// never gets a frame of it, nor does a port without VLAN settings. Hostile
// frames from the trunk to the container's MAC are not fast-forwarded:
// stacked tags (802.1Q in 802.1Q, 802.1ad) and a VID the trunk does not
// carry go to vdevd (counted as punted by the trunk's program), which
// delivers, or drops and counts, them as its own path does.
TEST_F(VdevctlTest, TrunkTakesTheKernelFastPathWithItsTags) {
  for (const char* hook : {"tc", "xdp"}) {
    SCOPED_TRACE(std::string("ports at ") + hook);
    Netns nsA, nsC, nsT, nsU;
    const std::string a = uniqueName('v'), c = uniqueName('v'), t = uniqueName('t'), u = uniqueName('u');
    DeviceGuard guard({a, c, t, u});
    auto d = startVdevd({"--fast-path", "--default-hook", hook});
    const Mac ma = uniqueMac(), mc = uniqueMac(), mt = uniqueMac(), mu = uniqueMac();
    const auto add = [&](const std::string& name, const Netns& ns, const Mac& m, std::vector<std::string> vlan) {
      ok(vethPortAdd(name, ns, m, std::move(vlan)));
    };
    add(a, nsA, ma, {"vlan", "10"});
    add(c, nsC, mc, {"vlan", "20"});
    add(t, nsT, mt, {"trunk", "10,20"});
    add(u, nsU, mu, {});
    waitLive({a, c, t, u});
    VlanTagger tagger(nsT, "eth0", 10);
    // A veth's native XDP sees only the frame's data, never the tag the
    // kernel carries beside it (skb->vlan_tci, TX VLAN offload): to a trunk
    // at the XDP hook its far end sends the tag in the frame, as a device
    // without the offload does.
    if (std::string(hook) == "xdp") nsT.exec("ethtool -K eth0 txvlan off");
    nsA.exec("ip addr add 198.18.110.1/24 dev eth0");
    nsT.exec("ip addr add 198.18.110.2/24 dev eth0");
    nsC.exec("ip addr add 198.18.110.3/24 dev eth0");
    nsU.exec("ip addr add 198.18.110.4/24 dev eth0");
    // A GRO'd veth takes the XDP fast path's frames; vdevd made them so.
    const auto fastOf = [&](const Stats& s, const std::string& port) { return s.port(port)[stats::kProgFast]; };
    const auto ping = [&](const Netns& ns, const std::string& to, int count) {
      return tryRun("ip netns exec " + ns.name() + " ping -c " + std::to_string(count) + " -i 0.05 -W 2 " + to);
    };
    // Learned both ways (the ARP exchange and the first echoes pass vdevd).
    CmdResult r = ping(nsT, "198.18.110.1", 2);
    ASSERT_TRUE(r.ok()) << "trunk (VLAN 10) to VLAN 10: " << r.out << r.err << d->logs();
    const Stats s0 = d->stats();
    r = ping(nsT, "198.18.110.1", 10);
    EXPECT_TRUE(r.ok()) << r.out << r.err;
    r = ping(nsA, "198.18.110.2", 10);
    EXPECT_TRUE(r.ok()) << r.out << r.err;
    const Stats s1 = d->stats();
    EXPECT_GE(fastOf(s1, t) - fastOf(s0, t), 20u) << "the trunk's echoes and replies, tagged, not fast\n" << s1.dump();
    EXPECT_GE(fastOf(s1, a) - fastOf(s0, a), 20u) << "the container's, to the trunk, not fast\n" << s1.dump();

    const auto tcp = [&](const Netns& from, const Netns& to, const std::string& addr) {
      expectTcpCarried(dir_.path(), from, to, addr);
    };
    const Stats s2 = d->stats();
    tcp(nsT, nsA, "198.18.110.1");  // trunk -> access: tag popped
    tcp(nsA, nsT, "198.18.110.2");  // access -> trunk: tag pushed
    const Stats s3 = d->stats();
    for (const std::string& p : {a, t}) {
      EXPECT_GE(fastOf(s3, p) - fastOf(s2, p), 8u) << p << "'s TCP did not take the kernel fast path\n" << s3.dump();
      EXPECT_LE(s3.port(p)[stats::kProgRedirect] - s2.port(p)[stats::kProgRedirect], 6u)
          << p << "'s TCP went to vdevd\n" << s3.dump();
    }
    // VLAN 20 and the default VLAN got nothing of all this (not even ARP).
    EXPECT_EQ(s3.port(c)[stats::kTxPackets], 0u) << s3.dump();
    EXPECT_EQ(s3.port(u)[stats::kTxPackets], 0u) << s3.dump();
    EXPECT_EQ(fastOf(s3, c) + fastOf(s3, u), 0u) << s3.dump();
    EXPECT_FALSE(ping(nsC, "198.18.110.2", 1).ok()) << "VLAN 20 reached the trunk's VLAN 10";
    EXPECT_FALSE(ping(nsU, "198.18.110.1", 1).ok()) << "the default VLAN reached VLAN 10";
    // The fast path's own rx and tx counters of both ports grew with the
    // program's (sent = delivered + drops: none here).
    EXPECT_EQ(s3.port(a)[stats::kDropFastXmit] + s3.port(t)[stats::kDropFastXmit], 0u) << s3.dump();

    // Hostile frames from the trunk, to the container's MAC (learned in
    // VLAN 10), from the trunk's (learned there too): none fast.
    PacketSocket raw("eth0", &nsT, mt);
    const auto ipv4To = [&](std::vector<uint8_t> tagPrefix) {
      std::vector<uint8_t> f(ma.begin(), ma.end());
      f.insert(f.end(), mt.begin(), mt.end());
      f.insert(f.end(), tagPrefix.begin(), tagPrefix.end());
      const uint8_t rest[] = {0x08, 0x00, 0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 110, 2, 198, 18, 110, 1,
                              0x13, 0x88, 0x13, 0x88, 0, 8, 0, 0};
      f.insert(f.end(), std::begin(rest), std::end(rest));
      f.resize(std::max<size_t>(f.size(), 60));
      return f;
    };
    const std::vector<std::vector<uint8_t>> hostile = {
        ipv4To({0x81, 0x00, 0x00, 10, 0x81, 0x00, 0x00, 10}),  // 802.1Q in 802.1Q
        ipv4To({0x88, 0xa8, 0x00, 10, 0x81, 0x00, 0x00, 10}),  // 802.1ad outer
        ipv4To({0x81, 0x00, 0x00, 30}),                        // a VID the trunk does not carry
        ipv4To({0x81, 0x00, 0x00, 10, 0x88, 0xa8, 0x00, 10}),  // 802.1ad behind 802.1Q
    };
    const Stats h0 = d->stats();
    for (int i = 0; i < 5; ++i)
      for (const auto& f : hostile) ASSERT_EQ(raw.sendRaw(f), 0);
    const Stats h1 = d->statsUntil(
        [&](const Stats& st) {
          return st.port(t)[stats::kProgRedirect] - h0.port(t)[stats::kProgRedirect] >= 20 &&
                 st.port(t)[stats::kRxPackets] - h0.port(t)[stats::kRxPackets] >= 20;
        },
        5s);
    EXPECT_EQ(fastOf(h1, t), fastOf(h0, t)) << "a hostile frame was fast-forwarded\n" << h1.dump();
    EXPECT_GE(h1.port(t)[stats::kProgRedirect] - h0.port(t)[stats::kProgRedirect], 20u) << h1.dump();
    // VID 30 and the 802.1ad outer tags: vdevd's VLAN filter.
    EXPECT_GE(h1.port(t)[stats::kDropVlanFiltered] - h0.port(t)[stats::kDropVlanFiltered], 10u) << h1.dump();
    EXPECT_EQ(h1.port(c)[stats::kTxPackets], 0u) << h1.dump();
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// fast-rx off on a VM's tap: with the kernel fast path on, everything the
// VM sends goes through vdevd (its program's "fast" stays 0, "redirect"
// counts every frame), while the container's unicast to the VM still takes
// the fast path (the tap stays a destination). The option is reported by
// port show / stats in every format, saved in the state file and restored
// with it, and kept when the device is deleted and created again (the
// program is loaded afresh then).
TEST_F(VdevctlTest, FastRxOffKeepsAPortsReceivedFramesOffTheFastPath) {
  Netns ns;
  const std::string vc = uniqueName('c'), vt = uniqueName('t');
  DeviceGuard guard({vc, vt});
  auto d = startVdevd({"--fast-path"});
  const Mac ctrMac = uniqueMac();
  ok({"port", "add", vc, "type", "veth", "create", "netns", ns.name(), "peer", "eth0", "peer-mac",
      macString(ctrMac)});
  ok({"port", "add", vt, "type", "tap", "fast-rx", "off", "create", "owner", "nobody"});
  PacketSocket ctr("eth0", &ns, ctrMac);
  ctr.setLabel("container");
  VmOnTap vm(vt, {kNobody, kNogroup}, uniqueMac());
  waitLive({vc, vt});

  const auto fastRxOf = [&](const Json& ports, const std::string& n) {
    const Json* p = findPort(ports, n);
    if (!p) throw HarnessError(n + " missing: " + ports.dump());
    return p->at("fast_rx").get<bool>();
  };
  const Json shown = json({"port", "show"});
  EXPECT_FALSE(fastRxOf(shown, vt)) << shown.dump();
  EXPECT_TRUE(fastRxOf(shown, vc)) << shown.dump();

  // Both stations learned (through vdevd), then N frames VM -> container and
  // M the other way.
  exchange(ctr, vm, 1, 1, drained(vc, ctr, vt, vm));
  const Stats before = stats();
  const auto allRead = drained(vc, ctr, vt, vm);
  constexpr uint32_t kN = 60, kM = 35;
  for (uint32_t i = 0; i < kN; ++i)
    vm.send({ctr.mac(), vm.mac(), Kind::kIpv4Udp, 11, i, 60 + (i * 37) % 1400});
  for (uint32_t i = 0; i < kM; ++i)
    ctr.send({vm.mac(), ctr.mac(), Kind::kIpv4Udp, 12, i, 60 + (i * 53) % 1400});
  const Endpoints all = {&ctr, &vm};
  pumpUntil(all, [&] { return ctr.rx().count(11) >= kN && vm.rx().count(12) >= kM; }, 5s);
  EXPECT_TRUE(pumpUntil(all, allRead, 5s)) << "the stations did not read what vdevd sent them";
  EXPECT_EQ(ctr.rx().count(11), kN) << ctr.rx().describe();
  EXPECT_EQ(vm.rx().count(12), kM) << vm.rx().describe();
  for (Endpoint* e : all) {
    EXPECT_EQ(e->rx().corrupt(), 0u) << e->label() << ": " << e->rx().describe();
    EXPECT_EQ(e->rx().totalDuplicates(), 0u) << e->label() << ": " << e->rx().describe();
  }
  const Stats s = expectCounters([&] { return stats(); }, vc, vt, ctr, vm);
  const PortStats &v0 = before.port(vt), &c0 = before.port(vc), &v = s.port(vt), &c = s.port(vc);
  EXPECT_EQ(v[stats::kProgFast], 0u) << "the fast-rx off port's frames took the kernel path\n"
                                      << s.dump() << d->logs();
  EXPECT_EQ(v[stats::kProgRedirect] - v0[stats::kProgRedirect], kN)
      << "every frame the VM sent must have gone to vdevd\n" << s.dump();
  EXPECT_EQ(c[stats::kProgFast] - c0[stats::kProgFast], kM)
      << "the container's unicast to the fast-rx off port must still take the kernel path\n"
      << s.dump() << d->logs();
  EXPECT_EQ(s.raw.at("ports").size(), 2u);
  EXPECT_FALSE(fastRxOf(s.raw.at("ports"), vt)) << s.dump();
  EXPECT_TRUE(fastRxOf(s.raw.at("ports"), vc)) << s.dump();

  // Text and Prometheus say it too.
  const std::string text = ok({"stats", vt});
  EXPECT_NE(text.find(", fast-rx off\n"), std::string::npos) << text;
  EXPECT_EQ(ok({"stats", vc}).find("fast-rx off"), std::string::npos);
  const std::string table = ok({"port", "show"});
  EXPECT_NE(table.find("FAST_RX"), std::string::npos) << table;
  const auto prom = parsePrometheus(ok({"stats", "--prometheus"}));
  EXPECT_EQ(promValue(prom, "vdev_port_info", {{"port", vt}, {"fast_rx", "off"}}), 1u);
  EXPECT_EQ(promValue(prom, "vdev_port_info", {{"port", vc}, {"fast_rx", "on"}}), 1u);

  // Saved, and restored by the next vdevd.
  const std::string state = readFile(state_);
  const auto lineOf = [&](const std::string& name) {
    const size_t at = state.find("port name=" + name + " ");
    return at == std::string::npos ? std::string() : state.substr(at, state.find('\n', at) - at);
  };
  EXPECT_NE(lineOf(vt).find(" managed=1 fast-rx=0 "), std::string::npos) << state;
  EXPECT_NE(lineOf(vc).find(" managed=1 "), std::string::npos) << state;
  EXPECT_EQ(lineOf(vc).find("fast-rx"), std::string::npos) << "on is not written:\n" << state;
  // The device id vdev marked the tap with: a device made again for this
  // port carries it, or the port waits for its own device.
  const size_t idAt = lineOf(vt).find(" id=");
  ASSERT_NE(idAt, std::string::npos) << state;
  const std::string deviceId = lineOf(vt).substr(idAt + 4, lineOf(vt).find(' ', idAt + 4) - idAt - 4);
  ASSERT_EQ(d->stop(), 0) << d->logs();
  d.reset();
  d = startVdevd({"--fast-path"});
  const Json again = json({"port", "show"});
  EXPECT_FALSE(fastRxOf(again, vt)) << again.dump();
  EXPECT_TRUE(fastRxOf(again, vc)) << again.dump();
  waitLive({vc, vt});
  for (Endpoint* e : all) e->rx().clear();
  exchange(ctr, vm, 21, 1, drained(vc, ctr, vt, vm));
  for (uint32_t i = 0; i < kN; ++i)
    vm.send({ctr.mac(), vm.mac(), Kind::kIpv4Udp, 23, i, 60 + (i * 37) % 1400});
  pumpUntil(all, [&] { return ctr.rx().count(23) >= kN; }, 5s);
  EXPECT_EQ(ctr.rx().count(23), kN) << ctr.rx().describe();
  const Stats after = stats();
  EXPECT_EQ(after.port(vt)[stats::kProgFast], 0u) << after.dump();
  EXPECT_EQ(after.port(vt)[stats::kProgRedirect], kN + 1) << after.dump();

  // The tap deleted and made again (new ifindex, new program): still off.
  const int oldIfindex = after.port(vt).ifindex;
  vm.closeAll();
  run("ip link del dev " + vt);
  run("ip tuntap add dev " + vt + " mode tap user " + std::to_string(kNobody));
  run("ip link set dev " + vt + " alias 'vdev:managed id=" + deviceId + "'");
  run("sysctl -qw net.ipv6.conf." + vt + ".disable_ipv6=1");
  run("ip link set dev " + vt + " up");
  VmOnTap vm2(vt, {kNobody, kNogroup}, vm.mac());
  vm2.setLabel("VM again");
  const Endpoints all2 = {&ctr, &vm2};
  ASSERT_TRUE(waitUntil([&] {
    const Json ports = json({"port", "show"});
    const Json* p = findPort(ports, vt);
    return p && p->at("live").get<bool>() && p->at("ifindex").get<uint64_t>() != uint64_t(oldIfindex);
  }, 5s, 20ms)) << "not attached to the new device: " << ok({"port", "show"}) << d->logs();
  EXPECT_FALSE(fastRxOf(json({"port", "show"}), vt));
  ctr.rx().clear();
  exchange(ctr, vm2, 31, 1, drained(vc, ctr, vt, vm2));
  for (uint32_t i = 0; i < kN; ++i)
    vm2.send({ctr.mac(), vm2.mac(), Kind::kIpv4Udp, 33, i, 60 + (i * 37) % 1400});
  for (uint32_t i = 0; i < kM; ++i)
    ctr.send({vm2.mac(), ctr.mac(), Kind::kIpv4Udp, 34, i, 60 + (i * 53) % 1400});
  pumpUntil(all2, [&] { return ctr.rx().count(33) >= kN && vm2.rx().count(34) >= kM; }, 5s);
  EXPECT_EQ(ctr.rx().count(33), kN) << ctr.rx().describe();
  EXPECT_EQ(vm2.rx().count(34), kM) << vm2.rx().describe();
  const Stats re = stats();
  EXPECT_EQ(re.port(vt)[stats::kProgFast], 0u) << "fast-rx off lost when the device came back\n"
                                                << re.dump() << d->logs();
  EXPECT_EQ(re.port(vt)[stats::kProgRedirect], kN + 1) << re.dump();
  EXPECT_GE(re.port(vc)[stats::kProgFast], uint64_t(kM)) << "the new tap is not a fast-path destination\n"
                                                          << re.dump() << d->logs();

  ok({"port", "del", vc});
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

TEST_F(VdevctlTest, PortDelRemovesOnlyDevicesVdevCreated) {
  Netns ns;
  VethPair own(ns);  // made by the test: vdev must leave it alone
  const std::string vc = uniqueName('c'), vt = uniqueName('t');
  DeviceGuard guard({vc, vt});
  auto d = startVdevd();

  ok({"port", "add", vc, "type", "veth", "create", "netns", ns.name(), "peer", "eth0"});
  ok({"port", "add", vt, "type", "tap", "create", "owner", "nobody"});
  ok({"port", "add", own.hostName()});
  ASSERT_TRUE(linkExists(vc) && linkExists("eth0", &ns) && linkExists(vt));
  EXPECT_EQ((*findPort(json({"port", "show"}), own.hostName())).at("type").get<std::string>(), "netdev");
  EXPECT_TRUE(linkInfo(own.hostName()).has_xdp);

  ok({"port", "del", vc});
  EXPECT_FALSE(linkExists(vc)) << "the veth host end vdevd created is still there";
  EXPECT_FALSE(linkExists("eth0", &ns)) << "the veth peer vdevd created is still there";

  ok({"port", "del", vt});
  EXPECT_FALSE(linkExists(vt)) << "the tap vdevd created is still there";

  ok({"port", "del", own.hostName()});
  EXPECT_TRUE(linkExists(own.hostName())) << "vdev deleted a device it did not create";
  EXPECT_TRUE(linkExists(own.peerName(), &ns));
  EXPECT_FALSE(linkInfo(own.hostName()).has_xdp) << "XDP program left on a detached device";

  EXPECT_EQ(json({"port", "show"}).size(), 0u);
  const std::string state = readFile(state_);
  for (const auto& n : {vc, vt, own.hostName()})
    EXPECT_EQ(state.find(n), std::string::npos) << n << " still in the state file:\n" << state;

  const CmdResult gone = ctl({"port", "del", vc});
  EXPECT_EQ(gone.status, 1) << describe({"port", "del", vc}, gone);
  EXPECT_NE(gone.err.find("vdevctl: "), std::string::npos) << gone.err;
  EXPECT_NE(gone.err.find(vc), std::string::npos) << gone.err;
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

TEST_F(VdevctlTest, RestartRestoresPortsFromState) {
  Netns ns;
  const std::string vc = uniqueName('c'), vt = uniqueName('t');
  DeviceGuard guard({vc, vt});
  auto d = startVdevd();
  const Mac ctrMac = uniqueMac();
  ok({"port", "add", vc, "type", "veth", "create", "netns", ns.name(), "peer", "eth0", "peer-mac",
      macString(ctrMac)});
  ok({"port", "add", vt, "type", "tap", "create", "owner", "nobody"});
  PacketSocket ctr("eth0", &ns, ctrMac);
  ctr.setLabel("container");
  VmOnTap vm(vt, {kNobody, kNogroup}, uniqueMac());
  waitLive({vc, vt});
  exchange(ctr, vm, 1, 20, drained(vc, ctr, vt, vm));
  ASSERT_EQ(d->stop(), 0) << d->logs();
  d.reset();

  // The devices outlive vdevd; the state file brings the ports back.
  ASSERT_TRUE(linkExists(vc) && linkExists(vt));
  d = startVdevd();
  const Json ports = json({"port", "show"});
  ASSERT_EQ(ports.size(), 2u) << ports.dump();
  ASSERT_TRUE(findPort(ports, vc) && findPort(ports, vt)) << ports.dump();
  EXPECT_EQ(findPort(ports, vc)->at("type").get<std::string>(), "veth");
  EXPECT_EQ(findPort(ports, vt)->at("type").get<std::string>(), "tap");
  waitLive({vc, vt});

  // Counters start again from zero; traffic flows as before.
  for (Endpoint* e : {static_cast<Endpoint*>(&ctr), static_cast<Endpoint*>(&vm)}) e->rx().clear();
  const uint64_t ctrSent = ctr.sentFrames(), vmSent = vm.sentFrames();
  exchange(ctr, vm, 3, 25, drained(vc, ctr, vt, vm));
  const auto counted = [&] {
    const Stats s = stats();
    const PortStats* c = s.findPort(vc);
    const PortStats* v = s.findPort(vt);
    return c && v && (*c)[stats::kRxPackets] == ctr.sentFrames() - ctrSent && (*v)[stats::kTxPackets] == 25 &&
           (*v)[stats::kRxPackets] == vm.sentFrames() - vmSent && (*c)[stats::kTxPackets] == 25;
  };
  EXPECT_TRUE(waitUntil(counted, 3s, 20ms)) << ok({"stats"});

  ok({"port", "del", vc});
  ok({"port", "del", vt});
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// A saved port that fails to start -- here a --frames too small for the
// fill-ring floors of its 8 queues at the XDP hook -- is kept: in the state
// file, inactive with the reason in `port show`, named by `info`; `port set`
// changes its record, and vdevd started with room for it starts it again.
// `port del` removes one that never started.
TEST_F(VdevctlTest, SavedPortThatFailsToStartIsKept) {
  Netns ns;
  const std::string vc = uniqueName('c');
  DeviceGuard guard({vc});
  run("ip link add " + shellQuote(vc) + " numrxqueues 8 numtxqueues 8 type veth peer name eth0 numrxqueues 8 "
      "numtxqueues 8 netns " + shellQuote(ns.name()));
  run("ip link set dev " + shellQuote(vc) + " up");
  run("ip -n " + shellQuote(ns.name()) + " link set dev eth0 up");
  auto d = startVdevd();
  ok({"port", "add", vc, "hook", "xdp"});
  waitLive({vc});
  ASSERT_EQ(d->stop(), 0) << d->logs();

  // 512 frames keep 256 for fill-ring floors: 4 queues, not 8.
  d = startVdevd({"--frames", "512"});
  Json ports = json({"port", "show"});
  const Json* p = findPort(ports, vc);
  ASSERT_TRUE(p) << "the port that failed to start is gone: " << ports.dump() << d->logs();
  EXPECT_FALSE(p->at("live").get<bool>()) << ports.dump();
  EXPECT_NE(p->at("link_note").get<std::string>().find("not started"), std::string::npos) << ports.dump();
  EXPECT_NE(p->at("link_note").get<std::string>().find("frame pool is full"), std::string::npos) << ports.dump();
  EXPECT_NE(ok({"port", "show"}).find(vc + ": not started"), std::string::npos);
  EXPECT_NE(ok({"info"}).find(vc), std::string::npos) << ok({"info"});
  EXPECT_NE(readFile(state_).find(vc), std::string::npos) << "its record left the state file:\n" << readFile(state_);
  ok({"port", "set", vc, "isolated", "on"});  // its record, for when it starts
  EXPECT_TRUE((*findPort(json({"port", "show"}), vc)).at("isolated").get<bool>());
  ASSERT_EQ(d->stop(), 0) << d->logs();

  d = startVdevd();
  waitLive({vc});
  ports = json({"port", "show"});
  EXPECT_EQ(findPort(ports, vc)->at("queues_bound").get<uint64_t>(), 8u) << ports.dump();
  EXPECT_TRUE(findPort(ports, vc)->at("isolated").get<bool>()) << ports.dump();
  EXPECT_FALSE(findPort(ports, vc)->contains("link_note")) << ports.dump();
  ASSERT_EQ(d->stop(), 0) << d->logs();

  d = startVdevd({"--frames", "512"});
  ok({"port", "del", vc});
  EXPECT_EQ(json({"port", "show"}).size(), 0u);
  EXPECT_EQ(readFile(state_).find(vc), std::string::npos) << readFile(state_);
  EXPECT_TRUE(linkExists(vc)) << "vdev deleted a device it did not create";
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

TEST_F(VdevctlTest, UnprivilegedUserIsRefusedUnlessInGroup) {
  const std::string vt = uniqueName('t'), vt2 = uniqueName('t');
  DeviceGuard guard({vt, vt2});
  auto d = startVdevd();
  ok({"port", "add", vt, "type", "tap", "create", "owner", "nobody"});
  const std::string before = ok({"-j", "port", "show"});
  const Creds nobody{kNobody, kNogroup};

  // The socket file (0660, root's group) keeps nobody out at connect().
  CmdResult r = ctl({"port", "del", vt}, nobody);
  EXPECT_EQ(r.status, 1) << describe({"port", "del", vt}, r);
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(sock_), std::string::npos) << r.err;

  // With the file opened up, vdevd's own credential check refuses: EPERM.
  ASSERT_EQ(::chmod(sock_.c_str(), 0666), 0) << std::strerror(errno);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"port", "del", vt},
        std::vector<std::string>{"port", "add", vt2, "type", "tap", "create", "owner", "nobody"},
        std::vector<std::string>{"port", "set", vt, "isolated", "on"},
        std::vector<std::string>{"fdb", "add", macString(uniqueMac()), "port", vt}}) {
    r = ctl(args, nobody);
    EXPECT_EQ(r.status, 1) << describe(args, r);
    EXPECT_NE(r.err.find("Operation not permitted"), std::string::npos) << describe(args, r);
    EXPECT_EQ(r.err.rfind("vdevctl: ", 0), 0u) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_EQ(ok({"-j", "port", "show"}), before) << "a refused request changed something";
  EXPECT_TRUE(linkExists(vt));
  EXPECT_FALSE(linkExists(vt2));
  EXPECT_EQ(json({"fdb", "show"}).size(), 0u);

  // vdevd --group nogroup: nobody (gid nogroup) may.
  ASSERT_EQ(d->stop(), 0) << d->logs();
  d = startVdevd({"--group", "nogroup"});
  struct stat st {};
  ASSERT_EQ(::stat(sock_.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, kNogroup);
  r = ctl({"-j", "port", "show"}, nobody);
  ASSERT_EQ(r.status, 0) << describe({"-j", "port", "show"}, r);
  EXPECT_NE(r.out.find(vt), std::string::npos) << r.out;
  // A member changes only what is its own (docs/vdevctl.md "Who may do
  // what"): root's tap is not nobody's to delete, its own tap is.
  r = ctl({"port", "del", vt}, nobody);
  EXPECT_EQ(r.status, 1) << describe({"port", "del", vt}, r);
  EXPECT_NE(r.err.find("added by uid 0"), std::string::npos) << r.err;
  EXPECT_TRUE(linkExists(vt));
  r = ctl({"port", "add", vt2, "type", "tap", "create"}, nobody);
  ASSERT_EQ(r.status, 0) << describe({"port", "add", vt2}, r);
  // Not even its own port's limits: they bound what its guest sends.
  r = ctl({"port", "set", vt2, "police-rate", "off"}, nobody);
  EXPECT_EQ(r.status, 1) << describe({"port", "set", vt2}, r);
  EXPECT_NE(r.err.find("only root may set police-rate on a port"), std::string::npos) << r.err;
  r = ctl({"port", "del", vt2}, nobody);
  EXPECT_EQ(r.status, 0) << describe({"port", "del", vt2}, r);
  EXPECT_FALSE(linkExists(vt2));
  ok({"port", "del", vt});
  EXPECT_FALSE(linkExists(vt));
  EXPECT_EQ(json({"port", "show"}).size(), 0u);
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// Usage errors need neither root nor vdevd.
class VdevctlUsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vdevctlBinary().empty()) GTEST_SKIP() << "vdevctl not built and $VDEVCTL not set";
  }
  CmdResult run(std::vector<std::string> args) {
    args.insert(args.begin(), vdevctlBinary());
    return runArgv(args);
  }
  TempDir dir_;
};

TEST_F(VdevctlUsageTest, BadUsageExits2AndMissingDaemonExits1) {
  const std::string sock = dir_.file("none.sock");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"frobnicate"}, "unknown object 'frobnicate'"},
      {{"port", "frob"}, "unknown command 'frob'"},
      {{"port", "add"}, "missing IFNAME"},
      {{"port", "add", "vtx", "type", "veth", "create", "peer-mac", "02:00:00:00:00"},
       "invalid MAC address '02:00:00:00:00'"},
      {{"port", "add", "vtx", "type", "veth", "create", "peer-mac", "03:00:00:00:00:01"},
       "multicast"},
      {{"port", "add", "vtx", "queues", "0"}, "invalid queues '0'"},
      {{"port", "add", "vtx", "fast-rx", "maybe"}, "fast-rx 'maybe': expected on or off"},
      {{"port", "add", "vtx", "fast-rx"}, "on or off after 'fast-rx'"},
      {{"port", "add", "vtx", "fast-rx", "off", "fast-rx", "on"}, "'fast-rx' given twice"},
      {{"port", "add", "vtx", "type", "veth", "create", "owner", "nobody"},
       "'owner' is for type tap"},
      {{"port", "add", "vtx", "type", "tap", "create", "owner", "no-such-user-vt"}, "no such user"},
      {{"port", "add", "vtx", "peer", "eth0"}, "put it after 'create'"},
      {{"port", "add", "vtx", "create"}, "create needs"},
      {{"port", "add", "a-name-that-is-too-long"}, "at most 15"},
      {{"port", "set", "vtx"}, "nothing to change"},
      {{"port", "set", "vtx", "queues", "2"}, "'queues' cannot be changed on a running port"},
      {{"port", "set", "vtx", "police-burst", "0"}, "invalid police-burst '0'"},
      {{"port", "set", "vtx", "isolated", "yes"}, "isolated 'yes': expected on or off"},
      {{"port", "set", "vtx", "storm-bcast", "1", "storm-bcast", "2"}, "'storm-bcast' given twice"},
      {{"port", "set", "vtx", "colour", "red"}, "unknown argument 'colour'"},
      {{"fdb", "add", "zz", "port", "vtx"}, "invalid MAC address 'zz'"},
      {{"-j", "stats", "--prometheus"}, "exclude"},
      {{"monitor", "--interval", "0"}, "invalid --interval '0'"},
      {{"--bogus"}, "unknown option '--bogus'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"-S", sock};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CmdResult r = run(args);
    EXPECT_EQ(r.status, 2) << describe(args, r);
    EXPECT_EQ(r.err.rfind("vdevctl: ", 0), 0u) << describe(args, r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << describe(args, r);
    EXPECT_TRUE(r.out.empty()) << describe(args, r);
  }

  // No daemon: exit 1, the message names the socket.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-S", sock, "port", "show"},
        std::vector<std::string>{"-S", sock, "port", "add", "vtx", "type", "tap", "create"}}) {
    const CmdResult r = run(args);
    EXPECT_EQ(r.status, 1) << describe(args, r);
    EXPECT_NE(r.err.find("cannot connect to vdevd at " + sock), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  }

  // Help: the tool's and every command's, on stdout, exit 0.
  const CmdResult help = run({"--help"});
  EXPECT_EQ(help.status, 0);
  for (const char* part : {"SYNOPSIS", "EXIT STATUS", "port add", "port del", "port set", "port show", "stats",
                           "monitor", "fdb show", "fdb add", "fdb del", "info"})
    EXPECT_NE(help.out.find(part), std::string::npos) << part;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"port", "add", "--help"},
                                               {"port", "del", "help"},
                                               {"port", "set", "--help"},
                                               {"port", "show", "-h"},
                                               {"stats", "--help"},
                                               {"monitor", "--help"},
                                               {"fdb", "show", "--help"},
                                               {"fdb", "add", "--help"},
                                               {"fdb", "del", "--help"},
                                               {"info", "--help"}}) {
    const CmdResult r = run(args);
    EXPECT_EQ(r.status, 0) << describe(args, r);
    for (const char* part : {"NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "EXIT STATUS"})
      EXPECT_NE(r.out.find(part), std::string::npos) << describe(args, r);
  }
  const CmdResult object = run({"port", "help"});
  EXPECT_EQ(object.status, 0);
  EXPECT_NE(object.out.find("port add"), std::string::npos) << object.out;
}

TEST_F(VdevctlTest, MonitorPrintsHeaderThenReports) {
  Tap tap;  // a test-made tap the test holds: a plain netdev port
  auto d = startVdevd();
  ok({"port", "add", tap.name()});
  waitLive({tap.name()});

  const CmdResult r = ctl({"monitor", "--count", "2", "--interval", "0.2"});
  ASSERT_EQ(r.status, 0) << describe({"monitor"}, r);
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << r.out;  // header + 2 reports of 1 port
  EXPECT_NE(lines[0].find("TIME"), std::string::npos) << r.out;
  EXPECT_NE(lines[0].find("RX_PPS"), std::string::npos) << r.out;
  double prev = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::istringstream f(lines[i]);
    double t = 0;
    std::string port;
    f >> t >> port;
    EXPECT_EQ(port, tap.name()) << lines[i];
    EXPECT_GT(t, prev) << r.out;
    // Report i is due i intervals after the start and never comes early
    // (0.0005: TIME has three decimals); how late it comes depends on the
    // machine's load, so only a functional bound above.
    EXPECT_GE(t, 0.2 * double(i) - 0.0005) << r.out;
    EXPECT_LT(t, 0.2 * double(i) + 10) << r.out;
    prev = t;
  }

  // Until SIGINT: exits 0.
  Child mon("vdevctl-monitor", {vdevctlBinary(), "-S", sock_, "monitor", "--interval", "0.1"});
  const auto lineCount = [&] {
    const std::string out = mon.out();
    return std::count(out.begin(), out.end(), '\n');
  };
  ASSERT_TRUE(waitUntil([&] { return lineCount() >= 2; }, 5s)) << mon.logs();
  mon.signal(SIGINT);
  const auto status = mon.wait(5s);
  ASSERT_TRUE(status.has_value()) << "monitor ignored SIGINT\n" << mon.logs();
  EXPECT_EQ(*status, 0) << mon.logs();

  ok({"port", "del", tap.name()});
  EXPECT_TRUE(linkExists(tap.name()));
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// The capture tests' hosts: containers A and B on veth ports a and b of
// the running vdevd, at 198.18.NET.1 and .2; A pings B. The devices and
// namespaces go with the object (made before vdevd, so that they outlive
// it), the ports come with up().
class VdevctlCaptureTest : public VdevctlTest {
 protected:
  struct Pair {
    Netns nsA, nsB;
    const std::string a = uniqueName('v'), b = uniqueName('v');
    DeviceGuard guard{{a, b}};
    const Mac ma = uniqueMac(), mb = uniqueMac();
    std::string net;  // "198.18.NET."
  };
  void up(Pair& p, int net) {
    for (const auto& [name, ns, m] : {std::tuple{p.a, &p.nsA, p.ma}, std::tuple{p.b, &p.nsB, p.mb}})
      ok({"port", "add", name, "type", "veth", "create", "netns", ns->name(), "peer", "eth0", "peer-mac",
          macString(m)});
    waitLive({p.a, p.b});
    p.net = "198.18." + std::to_string(net) + ".";
    p.nsA.exec("ip addr add " + p.net + "1/24 dev eth0");
    p.nsB.exec("ip addr add " + p.net + "2/24 dev eth0");
  }
  void ping(const Pair& p, int n) {
    const CmdResult r = tryRun("ip netns exec " + p.nsA.name() + " ping -c " + std::to_string(n) +
                               " -i 0.05 -W 2 " + p.net + "2");
    EXPECT_TRUE(r.ok()) << r.out << r.err;
  }
  // Frames the kernel fast path carried from and to a and b.
  uint64_t fast(const Pair& p) {
    uint64_t n = 0;
    for (const PortStats& s : stats().ports)
      if (s.name == p.a || s.name == p.b) n += s[stats::kProgFast];
    return n;
  }
  static size_t occurrences(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
    return n;
  }
};

// vdevctl capture, with the kernel fast path on, the ports at the tc hook
// and at XDP. Kernel ping between two containers: while A is captured,
// its frames keep the fast path (the ports' programs copy them to vdevd)
// and every one lands in a pcapng file that tcpdump reads, the requests A
// sent and the replies it was sent; the count of frames written adds up
// with what was missed (none). The fast path carries on when the capture
// ends -- by Ctrl-C, and when vdevctl is killed (its connection closes). The text form and --direction rx: only what A
// sent. A capture ends when its port is removed. Only root or the port's
// owner may capture it.
TEST_F(VdevctlCaptureTest, CaptureCopiesWhatAPortSendsAndReceivesOnBothPaths) {
  for (const char* hook : {"auto", "xdp"}) {
    SCOPED_TRACE(std::string("ports at ") + hook);
    Pair p;
    const std::string &a = p.a, &b = p.b;
    const Mac &ma = p.ma, &mb = p.mb;
    auto d = startVdevd({"--fast-path", "--default-hook", hook, "--group", "nogroup"});
    up(p, 31);
    const auto ping = [&](int n) { VdevctlCaptureTest::ping(p, n); };
    const auto fast = [&] { return VdevctlCaptureTest::fast(p); };
    ping(5);
    const uint64_t f0 = fast();
    EXPECT_GE(f0, 4u) << "the echoes after the first take the fast path: " << ok({"stats"});

    // pcapng, both directions, until Ctrl-C.
    TempDir tmp;
    const std::string file = tmp.file("a.pcapng");
    auto capture = std::make_unique<Child>(
        "vdevctl capture", std::vector<std::string>{vdevctlBinary(), "-S", sock_, "capture", a, "-w", file});
    ASSERT_TRUE(waitUntil([&] { return capture->err().find("capturing") != std::string::npos; }, 5s, 20ms))
        << capture->logs();
    ping(10);
    const uint64_t f1 = fast();
    EXPECT_GE(f1 - f0, 18u) << "a captured port's frames left the fast path: " << ok({"stats"});
    capture->signal(SIGINT);
    ASSERT_EQ(capture->wait(5s), std::optional<int>(0)) << capture->logs();
    std::smatch m;
    const std::string said = capture->err();
    ASSERT_TRUE(std::regex_search(said, m, std::regex("(\\d+) frames written; (\\d+) missed"))) << said;
    const uint64_t written = std::stoull(m[1]);
    EXPECT_EQ(m[2], "0") << said;
    EXPECT_GE(written, 20u) << said;
    const CmdResult read = tryRun("tcpdump -n -r " + file);
    ASSERT_TRUE(read.ok()) << read.err;
    const auto lines = occurrences;
    EXPECT_EQ(lines(read.out, "198.18.31.1 > 198.18.31.2: ICMP echo request"), 10u) << read.out;
    EXPECT_EQ(lines(read.out, "198.18.31.2 > 198.18.31.1: ICMP echo reply"), 10u) << read.out;
    EXPECT_EQ(lines(read.out, "\n"), written) << "one line per frame written: " << read.out;
    // Back on the fast path.
    ping(5);
    const uint64_t f2 = fast();
    EXPECT_GE(f2 - f1, 4u) << "the fast path did not come back: " << ok({"stats"});

    // Text, what A sent only; vdevctl killed: its connection's capture
    // ends in vdevd, and the fast path comes back.
    capture = std::make_unique<Child>("vdevctl capture rx", std::vector<std::string>{
                                                                vdevctlBinary(), "-S", sock_, "capture", a,
                                                                "--direction", "rx"});
    ASSERT_TRUE(waitUntil([&] { return capture->err().find("capturing rx") != std::string::npos; }, 5s, 20ms))
        << capture->logs();
    ping(3);
    // The three requests (an ARP of A's may come with them).
    const std::string request = " rx " + macString(ma) + " > " + macString(mb) + " type 0x0800";
    ASSERT_TRUE(waitUntil([&] { return lines(capture->out(), request) >= 3; }, 5s, 20ms)) << capture->logs();
    const std::string text = capture->out();
    EXPECT_EQ(lines(text, request), 3u) << text;
    EXPECT_EQ(lines(text, " tx "), 0u) << text;
    const uint64_t f3 = fast();
    EXPECT_GE(f3 - f2, 5u) << "a captured port's frames left the fast path: " << ok({"stats"});
    capture->signal(SIGKILL);
    (void)capture->wait(5s);
    ASSERT_TRUE(waitUntil([&] {
      ping(2);
      return fast() > f3;
    }, 5s, 50ms)) << "the fast path did not come back after vdevctl was killed: " << ok({"stats"});

    // Only root and the port's owner: nobody may not capture root's port.
    const CmdResult denied = ctl({"capture", a, "--count", "1"}, kNobodyCreds, 5s);
    EXPECT_EQ(denied.status, 1) << denied.out << denied.err;
    EXPECT_NE(denied.err.find("only that uid or root may capture"), std::string::npos) << denied.err;

    // The port removed: the capture ends, and says why.
    capture = std::make_unique<Child>(
        "vdevctl capture b", std::vector<std::string>{vdevctlBinary(), "-S", sock_, "capture", b, "--count", "1000"});
    ASSERT_TRUE(waitUntil([&] { return capture->err().find("capturing") != std::string::npos; }, 5s, 20ms))
        << capture->logs();
    const CmdResult busy = ctl({"capture", b, "--count", "1"});
    EXPECT_EQ(busy.status, 1) << busy.err;
    EXPECT_NE(busy.err.find("has a capture running already"), std::string::npos) << busy.err;
    ok({"port", "del", b});
    ASSERT_EQ(capture->wait(5s), std::optional<int>(0)) << capture->logs();
    EXPECT_NE(capture->err().find("stopped: port " + b + " was removed"), std::string::npos) << capture->logs();
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// vdevctl capture with a filter, the ports at the tc hook and at XDP, the
// kernel fast path on. --proto icmp while A pings B (the fast path), ARP
// resolves first and UDP broadcasts flow (vdevd's path): the file holds
// every echo request and reply sent and nothing else, the fast path kept
// carrying the pings, and nothing is counted missed. Then --proto udp
// --port 9999 --direction rx: only the broadcasts to that port (vdevd's own
// copies, filtered), not those to another port nor the pings.
TEST_F(VdevctlCaptureTest, CaptureFilterCopiesOnlyMatchingFramesOnBothPaths) {
  for (const char* hook : {"auto", "xdp"}) {
    SCOPED_TRACE(std::string("ports at ") + hook);
    Pair p;
    const std::string& a = p.a;
    Netns& nsA = p.nsA;
    auto d = startVdevd({"--fast-path", "--default-hook", hook});
    up(p, 32);
    const auto ping = [&](int n) { VdevctlCaptureTest::ping(p, n); };
    const auto fast = [&] { return VdevctlCaptureTest::fast(p); };
    // n UDP broadcasts from A to `port` (flooded: vdevd switches them; B
    // answers none).
    const auto broadcast = [&](int n, int port) {
      const CmdResult r = tryRun(
          "ip netns exec " + nsA.name() +
          " python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
          "s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1); "
          "[s.sendto(b\"vdev\", (\"198.18.32.255\", " +
          std::to_string(port) + ")) for _ in range(" + std::to_string(n) + ")]'");
      EXPECT_TRUE(r.ok()) << r.out << r.err;
    };
    const auto count = occurrences;
    // Runs `capture` on A with `args` while `traffic` flows; returns what
    // tcpdump reads of the file, after checking that every frame written
    // is in it and none was missed.
    TempDir tmp;
    const auto captured = [&](const std::vector<std::string>& args, const std::function<void()>& traffic) {
      const std::string file = tmp.file("f.pcapng");
      std::vector<std::string> argv{vdevctlBinary(), "-S", sock_, "capture", a, "-w", file};
      argv.insert(argv.end(), args.begin(), args.end());
      Child capture("vdevctl capture (filtered)", argv);
      EXPECT_TRUE(waitUntil([&] { return capture.err().find("filtered)") != std::string::npos; }, 5s, 20ms))
          << capture.logs();
      traffic();
      capture.signal(SIGINT);
      EXPECT_EQ(capture.wait(5s), std::optional<int>(0)) << capture.logs();
      std::smatch m;
      const std::string said = capture.err();
      if (!std::regex_search(said, m, std::regex("(\\d+) frames written; (\\d+) missed"))) {
        ADD_FAILURE() << said;
        return std::string();
      }
      EXPECT_EQ(m[2], "0") << said;
      const CmdResult read = tryRun("tcpdump -n -r " + file);
      EXPECT_TRUE(read.ok()) << read.err;
      EXPECT_EQ(count(read.out, "\n"), std::stoull(m[1])) << "one line per frame written: " << read.out;
      return read.out;
    };

    ping(5);
    const uint64_t f0 = fast();
    EXPECT_GE(f0, 4u) << "the echoes after the first take the fast path: " << ok({"stats"});

    // ICMP only, while ARP (A's cache flushed) and UDP flow too.
    const std::string icmp = captured({"--proto", "icmp"}, [&] {
      nsA.exec("ip neigh flush dev eth0");
      broadcast(10, 9999);
      ping(10);
      broadcast(10, 9999);
    });
    const uint64_t f1 = fast();
    EXPECT_GE(f1 - f0, 18u) << "a captured port's frames left the fast path: " << ok({"stats"});
    EXPECT_EQ(count(icmp, "198.18.32.1 > 198.18.32.2: ICMP echo request"), 10u) << icmp;
    EXPECT_EQ(count(icmp, "198.18.32.2 > 198.18.32.1: ICMP echo reply"), 10u) << icmp;
    EXPECT_EQ(count(icmp, "\n"), 20u) << "only the echoes: " << icmp;

    // UDP to one port, what A sends: vdevd's copies of the broadcasts it
    // floods, filtered; the pings (fast path) and the other port's not.
    const std::string udp = captured({"--proto", "udp", "--port", "9999", "--direction", "rx"}, [&] {
      broadcast(7, 9999);
      broadcast(5, 9998);
      ping(5);
      broadcast(7, 9999);
    });
    EXPECT_EQ(count(udp, "198.18.32.255.9999: UDP"), 14u) << udp;
    EXPECT_EQ(count(udp, "\n"), 14u) << "only the broadcasts to 9999: " << udp;
    EXPECT_GE(fast() - f1, 8u) << "the pings did not take the fast path: " << ok({"stats"});
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
}

// Whether the running kernel is at least major.minor (uname): what the
// tests below expect vdevd to find by itself.
bool kernelAtLeast(int major, int minor) {
  struct utsname u {};
  if (::uname(&u) != 0) return false;
  int ma = 0, mi = 0;
  if (std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

// Classic tc (--tc-attach clsact, the way of a kernel without tcx): `port
// show` and `info` say how the skb program is attached; vdevd puts its
// filter beside a qdisc and a filter the test made on a device, and `port
// del` removes vdev's filter only -- the test's filter and qdisc stay.
TEST_F(VdevctlTest, ClassicTcPortsAreShownAndPortDelRemovesOnlyVdevsFilter) {
  Netns ns;
  VethPair v(ns);
  const std::string dev = v.hostName();
  run("tc qdisc add dev " + dev + " clsact");
  run("tc filter add dev " + dev + " ingress pref 2 handle 7 protocol all bpf bytecode '1,6 0 0 0,' classid 1:1");
  const auto foreign = [&] {
    for (const TcFilter& f : ingressFilters(dev))
      if (f.pref == 2 && f.handle == "0x7") return true;
    return false;
  };
  auto d = startVdevd({"--default-hook", "auto", "--tc-attach", "clsact"});
  Json info = json({"info"});
  EXPECT_EQ(info.at("tc_attach").get<std::string>(), "clsact") << info.dump();
  EXPECT_FALSE(info.at("kernel_features").at("clsact").get<bool>()) << "no skb path yet\n" << info.dump();
  ok({"port", "add", dev});
  const std::string c = uniqueName('c');
  DeviceGuard guard({c});
  Netns ns2;
  ok({"port", "add", c, "type", "veth", "create", "netns", ns2.name(), "peer", "eth0"});
  waitLive({dev, c});
  const Json ports = json({"port", "show"});
  for (const std::string& n : {dev, c}) {
    const Json& p = *findPort(ports, n);
    EXPECT_EQ(p.at("hook").get<std::string>(), "tc") << p.dump();
    EXPECT_EQ(p.at("tc_attach").get<std::string>(), "clsact") << p.dump();
    EXPECT_FALSE(p.contains("hook_note")) << p.dump();
    const auto f = vdevFilters(n);
    ASSERT_EQ(f.size(), 1u) << n;
    EXPECT_EQ(f[0].pref, 1u);
    EXPECT_EQ(f[0].handle, "0x7664");
  }
  EXPECT_NE(ok({"port", "show", dev}).find("tc/clsact"), std::string::npos) << ok({"port", "show", dev});
  info = json({"info"});
  EXPECT_TRUE(info.at("kernel_features").at("clsact").get<bool>()) << info.dump();
  EXPECT_FALSE(info.at("kernel_features").at("tcx").get<bool>()) << info.dump();
  EXPECT_NE(ok({"info"}).find("tc attach: clsact"), std::string::npos) << ok({"info"});
  EXPECT_TRUE(foreign());
  // The logs say which qdisc vdevd made: the created veth's, not the test's.
  EXPECT_NE(d->logs().find(c + ": made its clsact qdisc"), std::string::npos) << d->logs();
  EXPECT_EQ(d->logs().find(dev + ": made its clsact qdisc"), std::string::npos) << d->logs();

  ok({"port", "del", dev});
  EXPECT_TRUE(vdevFilters(dev).empty()) << "vdev's filter outlived port del";
  EXPECT_TRUE(foreign()) << "port del took the test's filter";
  EXPECT_TRUE(hasClsact(dev)) << "port del took the test's qdisc";
  EXPECT_EQ(d->stop(), 0) << d->logs();
  EXPECT_TRUE(foreign());
}

// `auto` falls back per port: a device whose tc attach fails (here another
// kind of filter holds vdev's priority at its clsact ingress, as a tool of
// someone else's might) is attached at the XDP hook -- with the reason in
// vdevd's log and in `port show` -- and switches; "hook tc" asked for on
// such a device fails with the attach's error. The other filter is not
// touched.
TEST_F(VdevctlTest, AutoFallsBackToXdpWhenTheTcAttachFails) {
  Netns ns1, ns2, ns3;
  const Mac m1 = uniqueMac(), m2 = uniqueMac();
  VethPair blocked(ns1, {.peerMac = m1}), open(ns2, {.peerMac = m2}), asked(ns3);
  for (const VethPair* v : {&blocked, &asked}) {
    run("tc qdisc add dev " + v->hostName() + " clsact");
    // u32 at priority 1: a bpf filter cannot join it there.
    run("tc filter add dev " + v->hostName() + " ingress pref 1 protocol all u32 match u32 0 0 classid 1:1");
  }
  auto d = startVdevd({"--default-hook", "auto", "--tc-attach", "clsact"});
  ok({"port", "add", blocked.hostName()});
  ok({"port", "add", open.hostName()});
  const CmdResult refused = ctl({"port", "add", asked.hostName(), "hook", "tc"});
  EXPECT_EQ(refused.status, 1) << describe({"port", "add", asked.hostName(), "hook", "tc"}, refused);
  EXPECT_NE(refused.err.find("another kind of filter"), std::string::npos) << refused.err;
  waitLive({blocked.hostName(), open.hostName()});
  const Json ports = json({"port", "show"});
  ASSERT_EQ(ports.size(), 2u) << ports.dump();
  const Json& b = *findPort(ports, blocked.hostName());
  EXPECT_EQ(b.at("hook").get<std::string>(), "xdp") << b.dump();
  EXPECT_EQ(b.at("xdp_mode").get<std::string>(), "native") << b.dump();
  ASSERT_TRUE(b.contains("hook_note")) << b.dump();
  EXPECT_NE(b.at("hook_note").get<std::string>().find("priority 1"), std::string::npos) << b.dump();
  EXPECT_FALSE(b.contains("tc_attach")) << b.dump();
  const Json& o = *findPort(ports, open.hostName());
  EXPECT_EQ(o.at("hook").get<std::string>(), "tc") << o.dump();
  EXPECT_EQ(o.at("tc_attach").get<std::string>(), "clsact") << o.dump();
  EXPECT_FALSE(o.contains("hook_note")) << o.dump();
  const std::string table = ok({"port", "show"});
  EXPECT_NE(table.find("xdp*"), std::string::npos) << table;
  EXPECT_NE(table.find("* " + blocked.hostName() + ": at the XDP hook, not tc"), std::string::npos) << table;
  EXPECT_NE(d->logs().find("port " + blocked.hostName() + ": at the XDP hook, not tc"), std::string::npos)
      << d->logs();
  // The two switch: one at XDP, one at tc.
  PacketSocket a(blocked.peerName(), &ns1, m1), c(open.peerName(), &ns2, m2);
  a.setLabel("at XDP");
  c.setLabel("at tc");
  const Endpoints all = {&a, &c};
  learnAll(all, 1);
  sendMixed(a, m2, 10, 30);
  sendMixed(c, m1, 11, 30);
  expectFlow(all, 10, {{&c, 30}});
  expectFlow(all, 11, {{&a, 30}});
  const Stats st = d->statsUntil([&](const Stats& s) {
    return s.port(blocked.hostName())[stats::kTxPackets] == a.rx().frames() &&
           s.port(open.hostName())[stats::kTxPackets] == c.rx().frames();
  }, 5s);
  EXPECT_EQ(st.port(blocked.hostName())[stats::kRxPackets], a.sentFrames()) << st.dump();
  EXPECT_EQ(st.port(open.hostName())[stats::kRxPackets], c.sentFrames()) << st.dump();
  EXPECT_EQ(st.port(blocked.hostName()).totalDrops() + st.port(open.hostName()).totalDrops(), 0u) << st.dump();
  for (const VethPair* v : {&blocked, &asked}) {
    EXPECT_TRUE(vdevFilters(v->hostName()).empty()) << v->hostName();
    const auto f = ingressFilters(v->hostName());
    EXPECT_TRUE(!f.empty() && f[0].kind == "u32") << v->hostName() << ": the other filter was touched";
  }
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

// `vdevctl info` says how vdevd uses this kernel. By default it finds the
// way itself: tcx and the netdev family's xdp-features where the kernel has
// them (6.6, 6.3). With the older kernels' ways asked for (classic tc, XDP
// features by driver), veths vdevd made itself (GRO on their peers) at the
// XDP hook still take the kernel fast path.
TEST_F(VdevctlTest, InfoSaysHowTheKernelIsUsed) {
  {
    auto d = startVdevd({"--fast-path"});
    const Json info = json({"info"});
    EXPECT_EQ(info.at("tc_attach").get<std::string>(), kernelAtLeast(6, 6) ? "tcx" : "clsact") << info.dump();
    EXPECT_EQ(info.at("kernel_features").at("xdp_features").get<bool>(), kernelAtLeast(6, 3)) << info.dump();
    EXPECT_FALSE(info.at("kernel_features").at("busy_poll").get<bool>()) << info.dump();
    const std::string text = ok({"info"});
    EXPECT_NE(text.find("tc attach: "), std::string::npos) << text;
    EXPECT_NE(text.find("kernel:   "), std::string::npos) << text;
    EXPECT_EQ(d->stop(), 0) << d->logs();
  }
  Netns ns1, ns2;
  const std::string c1 = uniqueName('c'), c2 = uniqueName('c');
  DeviceGuard guard({c1, c2});
  auto d = startVdevd({"--fast-path", "--tc-attach", "clsact", "--xdp-features", "driver", "--busy-poll", "20"});
  const Mac m1 = uniqueMac(), m2 = uniqueMac();
  ok({"port", "add", c1, "type", "veth", "hook", "xdp", "create", "netns", ns1.name(), "peer", "eth0", "peer-mac",
      macString(m1)});
  ok({"port", "add", c2, "type", "veth", "hook", "xdp", "create", "netns", ns2.name(), "peer", "eth0", "peer-mac",
      macString(m2)});
  waitLive({c1, c2});
  Json info = json({"info"});
  EXPECT_EQ(info.at("tc_attach").get<std::string>(), "clsact") << info.dump();
  EXPECT_FALSE(info.at("kernel_features").at("xdp_features").get<bool>()) << info.dump();
  EXPECT_TRUE(info.at("kernel_features").at("xdp_frags").get<bool>()) << info.dump();
  EXPECT_TRUE(info.at("kernel_features").at("busy_poll").get<bool>()) << info.dump();
  EXPECT_NE(d->logs().find("XDP features by driver"), std::string::npos) << d->logs();
  PacketSocket a("eth0", &ns1, m1), b("eth0", &ns2, m2);
  const Endpoints all = {&a, &b};
  learnAll(all, 1);
  const auto fast = [&](const Stats& s, const std::string& p) { return s.port(p)[stats::kProgFast]; };
  // The fast path's devmap gets the veths within a second (FastSync): send
  // until their unicast takes it.
  uint32_t seq = 0;
  ASSERT_TRUE(waitUntil([&] {
    a.send({m2, m1, Kind::kExperimental, 5, seq++, 60});
    b.send({m1, m2, Kind::kExperimental, 6, seq++, 60});
    pumpFor(all, 10ms);
    const Stats s = d->stats();
    return fast(s, c1) > 0 && fast(s, c2) > 0;
  }, 10s, 50ms)) << "veths vdevd made are no fast-path destinations with XDP features by driver\n"
                 << d->stats().dump() << d->logs();
  EXPECT_EQ(d->stop(), 0) << d->logs();
}

}  // namespace
}  // namespace vdev::e2e
