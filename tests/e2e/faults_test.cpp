// Fault injection, end to end: vdevd under the faults a host
// produces while it runs -- ports added and removed at run time, a
// container's veth deleted and made again, a VM that stops reading, a VM
// that exits, a container whose network namespace is deleted, vdevd itself
// killed with SIGKILL, a completion ring that stops returning frames -- and
// host traffic on an uplink port.
//
// What every test checks is the same contract (docs/vdevd.md): every frame a
// station sent is delivered or found in a counter, vdevd's thread keeps
// forwarding for everyone else, and every UMEM frame comes back to the pool.
// Per flow, three equations, each with its own counters (a "flow ledger"):
//
//   sent      = rx(src port) + drops on the way in (container tx_dropped,
//               xdp_stats rx_dropped + rx_ring_full, xdp_prog no_socket)
//   rx(src)   = tx(dst port) + drops charged to dst + ingress drops at src
//   tx(dst)   = delivered + drops on the way out (dev.tx_dropped, socket drops)
//
// For those to be exact per flow, a port carries at most one flow in and one
// flow out while the ledger is open, and the MAC table is known (static
// entries or learned before): a frame to an unknown MAC floods, and one frame
// becomes several, which no per-frame ledger can follow. Where a fault makes
// vdevd forget a MAC (a deleted device), the test says how the frames for it
// are accounted.
//
// Traffic only in 198.18.0.0/15 (test frames), locally administered MACs,
// everything in test namespaces or on test-made devices, removed at the end
// pass or fail.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "flows.h"
#include "harness.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

namespace tf = testframe;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// vdevctl against a test's own vdevd

class Ctl {
 public:
  explicit Ctl(std::string sock) : sock_(std::move(sock)) {}
  const std::string& socket() const { return sock_; }

  CmdResult run(const std::vector<std::string>& args) const {
    std::string cmd = shellQuote(vdevctlBinary()) + " -S " + shellQuote(sock_);
    for (const auto& a : args) cmd += " " + shellQuote(a);
    return tryRun(cmd);
  }
  // Runs and expects success; returns stdout. Throws with the output if not.
  std::string ok(const std::vector<std::string>& args) const {
    const CmdResult r = run(args);
    if (!r.ok()) {
      std::string line = "vdevctl";
      for (const auto& a : args) line += " " + a;
      throw HarnessError(line + ": exit " + std::to_string(r.status) + "\n" + r.out + r.err);
    }
    return r.out;
  }
  Json json(std::vector<std::string> args) const {
    args.insert(args.begin(), "-j");
    return Json::parse(ok(args));
  }

 private:
  std::string sock_;
};

// ---------------------------------------------------------------------------
// Reading vdevd's statistics

const Json& rawPort(const Stats& s, std::string_view name) {
  for (const Json& p : s.raw.at("ports"))
    if (p.at("name").get<std::string>() == name) return p;
  throw HarnessError("vdevd stats: no port " + std::string(name) + " in " + s.dump());
}

bool isLive(const Stats& s, std::string_view name) {
  if (!s.findPort(name)) return false;
  const Json& p = rawPort(s, name);
  return p.contains("live") && p.at("live").get<bool>();
}

bool poolIdle(const Stats& s) {
  return s.pool.atRest();
}

// Stats once every frame is back (or `timeout` passed). Not the first look
// after traffic stops: a veth completes a frame when the receiver frees it,
// which may be after vdevd reaped and went to sleep; it reaps those at its
// next wake-up (at most 100 ms later), and a stats request is served before.
Stats idleStats(Vdevd& d, Millis timeout = 2s) { return d.statsUntil(poolIdle, timeout); }

// Drop reasons charged to the ingress port (docs/vdevd.md); every other
// reason is charged to the destination. `oversize` is charged to the ingress
// only for frames longer than a UMEM frame, which these tests never send.
bool isIngressReason(stats::DropReason r) {
  static const std::set<stats::DropReason> kIngress = {
      stats::kDropNoRoute,   stats::kDropRunt,      stats::kDropInvalidSrc, stats::kDropBadType,
      stats::kDropMacLimit,  stats::kDropMacLocked, stats::kDropInflight,   stats::kDropLinkLocal};
  return kIngress.count(r) != 0;
}

Stats waitLive(Vdevd& d, const std::vector<std::string>& ports, bool live = true, Millis timeout = 5s) {
  const Stats s = d.statsUntil([&](const Stats& st) {
    for (const auto& p : ports)
      if (isLive(st, p) != live) return false;
    return true;
  }, timeout);
  for (const auto& p : ports)
    EXPECT_EQ(isLive(s, p), live) << "port " << p << (live ? " not live" : " still live") << ": " << s.dump();
  return s;
}

// vdevd's own process: resident memory, open fds, memory mappings.
struct ProcFootprint {
  uint64_t rssKb = 0;
  size_t fds = 0;
  size_t maps = 0;
  std::map<std::string, int> fdKinds;  // readlink of each fd, "[123]" ids cut off
  std::set<std::string> fdSet;         // "fd -> target", inode included
};

// What `to` has more of than `from`, by fd kind, and the fds themselves
// (for failure messages).
std::string fdGrowth(const ProcFootprint& from, const ProcFootprint& to) {
  std::ostringstream os;
  for (const auto& [k, n] : to.fdKinds) {
    const int before = from.fdKinds.count(k) ? from.fdKinds.at(k) : 0;
    if (n != before) os << " " << k << ": " << before << " -> " << n << ";";
  }
  for (const auto& [k, n] : from.fdKinds)
    if (!to.fdKinds.count(k)) os << " " << k << ": " << n << " -> 0;";
  for (const std::string& f : from.fdSet)
    if (!to.fdSet.count(f)) os << " gone: " << f << ";";
  for (const std::string& f : to.fdSet)
    if (!from.fdSet.count(f)) os << " new: " << f << ";";
  return os.str();
}

// The count and kinds of fds from the set.
void tally(ProcFootprint& f) {
  f.fdKinds.clear();
  for (const std::string& e : f.fdSet) {
    std::string kind = e.substr(e.find(" -> ") + 4);
    if (const size_t b = kind.find(":["); b != std::string::npos) kind.resize(b);
    ++f.fdKinds[kind];
  }
  f.fds = f.fdSet.size();
}

ProcFootprint footprint(pid_t pid) {
  ProcFootprint f;
  const std::string base = "/proc/" + std::to_string(pid);
  std::ifstream status(base + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) f.rssKb = std::stoull(line.substr(6));
  if (DIR* d = ::opendir((base + "/fd").c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[256] = {};
      const std::string link = base + "/fd/" + e->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      f.fdSet.insert(std::string(e->d_name) + " -> " + (n > 0 ? std::string(target, size_t(n)) : "?"));
    }
    ::closedir(d);
  }
  std::ifstream maps(base + "/maps");
  for (std::string line; std::getline(maps, line);) ++f.maps;
  tally(f);
  return f;
}

// Connections vdevd has accepted on its control socket `path` and not yet
// closed: /proc/net/unix lists an accepted socket with its listener's path,
// connected (state 03); the listener itself is unconnected (01).
size_t controlConnections(const std::string& path) {
  std::ifstream in("/proc/net/unix");
  size_t n = 0;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string num, refs, proto, flags, type, st, inode, p;
    if (f >> num >> refs >> proto >> flags >> type >> st >> inode >> p && p == path && st == "03") ++n;
  }
  return n;
}

// The footprint with nothing transient in it. vdevd closes a vdevctl
// connection when it next polls, a moment after the client got its answer
// -- on a loaded machine, perhaps much later -- so this first waits until
// vdevd holds no control connection (up to 20 s). Its threads also open
// descriptors for a moment on their own (an ioctl socket to read a device's
// MTU or driver, a genetlink socket to query a device, a throw-away thread's
// stack to enter a namespace), so the footprint is what every one of 11
// snapshots over 200 ms holds: the fds open on the same inode in each, the
// fewest mappings (mappings are counted, not matched: malloc moves their
// boundaries as its arenas grow). Something leaked stays, and shows in
// every snapshot; something transient would have to outlive all eleven.
ProcFootprint settledFootprint(pid_t pid, const std::string& ctlPath) {
  EXPECT_TRUE(waitUntil([&] { return controlConnections(ctlPath) == 0; }, 20s, 5ms))
      << controlConnections(ctlPath) << " control connection(s) still open in vdevd";
  ProcFootprint held = footprint(pid);
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(20ms);
    const ProcFootprint now = footprint(pid);
    std::erase_if(held.fdSet, [&](const std::string& e) { return !now.fdSet.count(e); });
    held.maps = std::min(held.maps, now.maps);
    held.rssKb = now.rssKb;
  }
  tally(held);
  return held;
}

// ---------------------------------------------------------------------------
// XDP programs on a device, as the kernel reports them

struct XdpAttachment {
  uint64_t id = 0;
  std::string mode;  // bpftool: driver, generic, offload
  std::string name;  // the program's name
};

// Every XDP program attached to `ifname` in the root namespace, in every mode
// (`bpftool net show dev`), with the program's name (`bpftool prog show`).
std::vector<XdpAttachment> xdpPrograms(const std::string& ifname) {
  std::vector<XdpAttachment> out;
  const Json net = Json::parse(run("bpftool -j net show dev " + shellQuote(ifname)));
  for (const Json& block : net) {
    if (!block.contains("xdp")) continue;
    for (const Json& x : block.at("xdp")) {
      XdpAttachment a;
      a.id = x.at("id").get<uint64_t>();
      a.mode = x.at("mode").get<std::string>();
      a.name = Json::parse(run("bpftool -j prog show id " + std::to_string(a.id))).at("name").get<std::string>();
      out.push_back(a);
    }
  }
  return out;
}

bool bpfProgExists(uint64_t id) { return tryRun("bpftool -j prog show id " + std::to_string(id)).ok(); }

// The id of the statistics map (vdev_xdp_stats) of XDP program `progId`.
uint64_t xdpStatsMap(uint64_t progId) {
  const Json prog = Json::parse(run("bpftool -j prog show id " + std::to_string(progId)));
  for (const Json& m : prog.at("map_ids")) {
    const Json info = Json::parse(run("bpftool -j map show id " + std::to_string(m.get<uint64_t>())));
    if (info.at("name").get<std::string>() == "vdev_xdp_stats") return m.get<uint64_t>();
  }
  throw HarnessError("XDP program " + std::to_string(progId) + " has no vdev_xdp_stats map");
}

// vdev_xdp's per-CPU counters in statistics map `mapId` (vdev_xdp_shared.h:
// 0 pass, 1 redirect, 2 no_socket, 3 fast: one of them counts each frame
// the program sees), each summed over every port the program serves (one
// program for all of them), read from the kernel: this works for a program
// whose vdevd is gone.
std::array<uint64_t, 4> xdpStats(uint64_t mapId) {
  std::array<uint64_t, 4> sums{};
  const Json dump = Json::parse(run("bpftool -j map dump id " + std::to_string(mapId)));
  for (const Json& e : dump) {
    if (!e.contains("formatted")) throw HarnessError("vdev_xdp_stats has no BTF: " + e.dump());
    const Json& f = e.at("formatted");
    for (const Json& c : f.at("values")) sums[f.at("key").get<uint64_t>() % sums.size()] += c.at("value").get<uint64_t>();
  }
  return sums;
}

// One of those counters of XDP program `progId`.
uint64_t xdpProgCounter(uint64_t progId, uint32_t index) { return xdpStats(xdpStatsMap(progId)).at(index); }

// ---------------------------------------------------------------------------
// Stations

// A container: its namespace, veth pair (host end = vdevd's port) and a packet
// socket on its interface. Held by pointers so that a test can take the
// container away piece by piece (its processes exit: the socket closes; its
// namespace is deleted).
struct Container {
  explicit Container(const std::string& label)
      : ns(std::make_unique<Netns>()),
        veth(std::make_unique<VethPair>(*ns)),
        sock(std::make_unique<PacketSocket>(veth->peerName(), ns.get())) {
    sock->setLabel(label);
    waitTxReady(veth->peerName(), ns.get());  // the container's frames go through its qdisc
  }
  const std::string& port() const { return veth->hostName(); }
  const Mac& mac() const { return veth->peerMac(); }

  // Declared in this order so that the socket goes first, then the pair,
  // then the namespace.
  std::unique_ptr<Netns> ns;
  std::unique_ptr<VethPair> veth;
  std::unique_ptr<PacketSocket> sock;
};

// A container's veth pair with fixed names and MACs that can be deleted and
// made again, as a container runtime does when it restarts a container: the
// host end comes back under the same name, which vdevd's configured port
// waits for.
class FixedVeth {
 public:
  explicit FixedVeth(const Netns& ns) : ns_(ns), hostMac_(uniqueMac()), peerMac_(uniqueMac()) {
    const std::string base = uniqueName('v');
    host_ = base + "h";
    peer_ = base + "p";
    create();
  }
  ~FixedVeth() {
    if (linkExists(host_)) tryRun("ip link del dev " + host_);
  }
  FixedVeth(const FixedVeth&) = delete;
  FixedVeth& operator=(const FixedVeth&) = delete;

  // The MACs are given at creation: vdevd may attach the host end the
  // moment it appears, and reads its MAC then.
  void create() {
    run("ip link add name " + host_ + " address " + macString(hostMac_) + " type veth peer name " + peer_ +
        " address " + macString(peerMac_) + " netns " + ns_.name());
    try {
      disableIpv6(host_, nullptr);
      disableIpv6(peer_, &ns_);
      ns_.ip("link set dev " + peer_ + " up");
      run("ip link set dev " + host_ + " up");
      waitTxReady(peer_, &ns_);  // C3's frames go through its qdisc
    } catch (...) {
      tryRun("ip link del dev " + host_);
      throw;
    }
  }
  void remove() { run("ip link del dev " + host_); }

  const std::string& host() const { return host_; }
  const std::string& peer() const { return peer_; }
  const Mac& peerMac() const { return peerMac_; }

 private:
  const Netns& ns_;
  std::string host_, peer_;
  Mac hostMac_, peerMac_;
};

// A persistent tap (`ip tuntap add`) and the VM that uses it: attach() opens
// it as QEMU does, detach() closes the fd -- the VM exited -- and the device
// stays, without carrier, until a VM attaches again.
class PersistentTap : public Endpoint {
 public:
  PersistentTap() : Endpoint("VM", uniqueMac()), name_(uniqueName('t')), hostMac_(uniqueMac()) {
    run("ip tuntap add dev " + name_ + " mode tap");
    try {
      disableIpv6(name_, nullptr);
      run("ip link set dev " + name_ + " address " + macString(hostMac_) + " up");
      attach();
    } catch (...) {
      detach();
      tryRun("ip link del dev " + name_);
      throw;
    }
  }
  ~PersistentTap() override {
    detach();
    tryRun("ip link del dev " + name_);
  }

  const std::string& name() const { return name_; }
  int fd() const override { return fd_; }
  bool attached() const { return fd_ >= 0; }

  void attach() {
    if (fd_ >= 0) return;
    fd_ = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw HarnessError("open /dev/net/tun: " + std::string(std::strerror(errno)));
    ifreq ifr{};
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    std::strncpy(ifr.ifr_name, name_.c_str(), IFNAMSIZ - 1);
    if (::ioctl(fd_, TUNSETIFF, &ifr) < 0) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      throw HarnessError("TUNSETIFF " + name_ + ": " + std::strerror(err));
    }
  }
  void detach() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 protected:
  ssize_t readRaw(std::span<uint8_t> buf) override {
    if (fd_ < 0) return 0;
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n < 0) return errno == EAGAIN || errno == EINTR || errno == EBADFD ? 0 : -errno;
    return n;
  }
  int writeRaw(std::span<const uint8_t> frame) override {
    if (fd_ < 0) return -EBADF;
    const ssize_t n = ::write(fd_, frame.data(), frame.size());
    if (n < 0) return -errno;
    return n == ssize_t(frame.size()) ? 0 : -EMSGSIZE;
  }

 private:
  std::string name_;
  Mac hostMac_{};
  int fd_ = -1;
};

// ---------------------------------------------------------------------------
// Traffic from a thread while the test injects faults

// Sends every flow that is on, one frame per flow every `period`, and reads
// every reader, from its own thread. Endpoints are not thread safe: whoever
// touches a flow, a reader, or an endpoint's counters while the thread runs
// holds hold().
class Traffic {
 public:
  struct Flow {
    uint32_t id = 0;
    Endpoint* from = nullptr;
    Mac dst{};
    bool on = false;
    uint32_t perTick = 1;  // frames per period while on
    uint32_t sent = 0;     // frames sent (seq 0 .. sent-1)
  };

  explicit Traffic(Millis period = 1ms) : period_(period) {}
  ~Traffic() { stop(); }
  Traffic(const Traffic&) = delete;
  Traffic& operator=(const Traffic&) = delete;

  void start() {
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::unique_lock<std::mutex> hold() { return std::unique_lock<std::mutex>(mu_); }

  // The rest: with hold() held (or before start / after stop).
  Flow& addFlow(uint32_t id, Endpoint* from, const Mac& dst) {
    Flow& f = flows_[id];
    f.id = id;
    f.from = from;
    f.dst = dst;
    return f;
  }
  Flow& flow(uint32_t id) { return flows_.at(id); }
  void set(std::initializer_list<uint32_t> ids, bool on) {
    for (uint32_t id : ids) flows_.at(id).on = on;
  }
  void removeFlow(uint32_t id) { flows_.erase(id); }
  void addReader(Endpoint* e) { readers_.push_back(e); }
  void removeReader(Endpoint* e) { std::erase(readers_, e); }
  // Reads every reader now (e.g. once more before taking one away).
  void pollReaders() {
    for (Endpoint* e : readers_) e->poll();
  }
  const std::string& error() const { return error_; }

  // Waits until pred() -- called with hold() held -- is true, up to
  // `timeout`; returns its last value. Progress is waited for by count, not
  // by time: the machine may be busy.
  bool waitFor(const std::function<bool()>& pred, Millis timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (pred()) return true;
      }
      if (Clock::now() >= deadline) {
        std::lock_guard<std::mutex> lk(mu_);
        return pred();
      }
      std::this_thread::sleep_for(10ms);
    }
  }

 private:
  void loop() {
    while (!stop_.load()) {  // seq_cst, as the store in stop(): nothing else is ordered by it
      {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto& [id, f] : flows_) {
          for (uint32_t i = 0; f.on && i < f.perTick; ++i) {
            const int rc = f.from->sendRaw(buildFrame(mixedSpec(*f.from, f.dst, f.id, f.sent)));
            if (rc < 0) {
              f.on = false;
              error_ += f.from->label() + ": flow " + std::to_string(id) + ": send: " + std::strerror(-rc) + "\n";
              break;
            }
            ++f.sent;
          }
        }
        try {
          for (Endpoint* e : readers_) e->poll();
        } catch (const std::exception& e) {
          error_ += std::string("read: ") + e.what() + "\n";
        }
      }
      std::this_thread::sleep_for(period_);
    }
  }

  Millis period_;
  std::mutex mu_;
  std::map<uint32_t, Flow> flows_;
  std::vector<Endpoint*> readers_;
  std::string error_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---------------------------------------------------------------------------
// Flow ledgers

// How one end of a flow is seen: the vdevd port, the station and, for a
// container, its packet socket and interface (kernel drops on the way).
struct PortView {
  std::string port;
  Endpoint* ep = nullptr;
  PacketSocket* sock = nullptr;     // receive-buffer drops; null for a VM
  std::string peerIf;               // the container's interface; "" for a VM
  const Netns* peerNs = nullptr;
};

PortView viewOf(Container& c) { return {c.port(), c.sock.get(), c.sock.get(), c.veth->peerName(), c.ns.get()}; }
PortView viewOf(Tap& t) { return {t.name(), &t, nullptr, "", nullptr}; }
PortView viewOf(PersistentTap& t) { return {t.name(), &t, nullptr, "", nullptr}; }

// The counters of one port at one moment.
struct PortSample {
  uint64_t rx = 0, tx = 0;
  uint64_t ingress = 0;    // vdevd drops charged to it as an ingress
  uint64_t dest = 0;       // vdevd drops charged to it as a destination
  uint64_t inKernel = 0;   // lost on the way in: container tx_dropped, xdp rx drops, no_socket
  uint64_t outKernel = 0;  // lost on the way out: dev.tx_dropped, socket receive-buffer drops
  stats::PortValues counters;  // the port's, for its drops by reason
};

PortSample sample(const Stats& s, const PortView& v) {
  PortSample r;
  const PortStats& p = s.port(v.port);
  r.rx = p[stats::kRxPackets];
  r.tx = p[stats::kTxPackets];
  for (uint32_t k = 0; k < stats::kNumDropReasons; ++k)
    (isIngressReason(stats::DropReason(k)) ? r.ingress : r.dest) += p[stats::DropReason(k)];
  r.counters = p;
  r.inKernel = p.xdpRxDrops() + p[stats::kProgNoSocket];
  if (!v.peerIf.empty() && v.peerNs && linkExists(v.peerIf, v.peerNs))
    r.inKernel += linkInfo(v.peerIf, v.peerNs).tx_dropped;
  r.outKernel = p[stats::kDevTxDropped];
  if (v.sock) r.outKernel += v.sock->kernelDrops();
  return r;
}

// One flow between two moments at which it was not sending and had settled.
struct FlowLedger {
  std::string name;
  uint64_t sent = 0, delivered = 0, duplicates = 0;
  uint64_t inKernel = 0, rxSrc = 0, ingress = 0;  // the sender's port
  uint64_t txDst = 0, dest = 0, outKernel = 0;    // the destination's port
  std::map<std::string, uint64_t> destByReason;

  uint64_t drops() const { return inKernel + ingress + dest + outKernel; }
  bool closes() const {
    return sent == rxSrc + inKernel && rxSrc == txDst + dest + ingress && txDst == delivered + outKernel;
  }
  std::string describe() const {
    std::ostringstream os;
    os << name << ": sent " << sent << ", delivered " << delivered << " (" << duplicates
       << " duplicates); in: kernel " << inKernel << ", vdevd rx " << rxSrc << ", ingress drops " << ingress
       << "; out: vdevd tx " << txDst << ", drops charged to the destination " << dest << " {";
    for (const auto& [k, v] : destByReason)
      if (v) os << " " << k << "=" << v;
    os << " }, device/socket drops " << outKernel;
    return os.str();
  }
};

uint64_t dropOf(const PortSample& s, stats::DropReason reason) { return s.counters[reason]; }

// The ledger of `flow` (`sent` frames) from the samples of its sender's port
// (s0, s1) and its destination's (d0, d1); delivered is what `dst` read.
FlowLedger ledger(const std::string& name, uint64_t sent, uint32_t flow, const PortView& dst,
                  const PortSample& s0, const PortSample& s1, const PortSample& d0, const PortSample& d1) {
  FlowLedger l;
  l.name = name;
  l.sent = sent;
  l.delivered = dst.ep->rx().count(flow);
  l.duplicates = dst.ep->rx().duplicates(flow);
  l.inKernel = s1.inKernel - s0.inKernel;
  l.rxSrc = s1.rx - s0.rx;
  l.ingress = s1.ingress - s0.ingress;
  l.txDst = d1.tx - d0.tx;
  l.dest = d1.dest - d0.dest;
  l.outKernel = d1.outKernel - d0.outKernel;
  for (uint32_t k = 0; k < stats::kNumDropReasons; ++k)
    if (const auto r = stats::DropReason(k); !isIngressReason(r))
      l.destByReason[std::string(stats::dropName(r))] = d1.counters[r] - d0.counters[r];
  return l;
}

void expectLedger(const FlowLedger& l) {
  SCOPED_TRACE(l.describe());
  EXPECT_EQ(l.sent, l.rxSrc + l.inKernel) << "a frame the station sent neither reached vdevd nor a counter";
  EXPECT_EQ(l.rxSrc, l.txDst + l.dest + l.ingress)
      << "vdevd: rx(src) must be tx(dst) + drops charged to dst + ingress drops";
  EXPECT_EQ(l.txDst, l.delivered + l.outKernel)
      << "a frame vdevd transmitted neither arrived nor was counted by the device or the socket";
  EXPECT_EQ(l.sent, l.delivered + l.drops());
  EXPECT_EQ(l.duplicates, 0u);
}

// A flow of a Traffic and its two ends, with the samples taken when its
// ledger was opened.
struct TrackedFlow {
  std::string name;
  uint32_t id;
  PortView src, dst;
  PortSample s0, d0;
};

// Waits (up to `timeout`) until every flow's ledger closes -- the flows are
// off, frames still in flight arrive or are counted -- with `traffic` reading
// the stations, and returns the ledgers and the stats they were computed
// from. Takes hold() itself.
std::vector<FlowLedger> settleLedgers(Vdevd& d, Traffic& traffic, std::vector<TrackedFlow>& flows,
                                      Stats* last = nullptr, Millis timeout = 5s) {
  const auto deadline = Clock::now() + timeout;
  std::vector<FlowLedger> out;
  for (;;) {
    std::this_thread::sleep_for(50ms);
    const Stats s = d.stats();
    out.clear();
    {
      auto lk = traffic.hold();
      traffic.pollReaders();
      for (TrackedFlow& f : flows)
        out.push_back(ledger(f.name, traffic.flow(f.id).sent, f.id, f.dst, f.s0, sample(s, f.src), f.d0,
                             sample(s, f.dst)));
    }
    bool done = true;
    for (const FlowLedger& l : out) done = done && l.closes();
    if (last) *last = s;
    if (done || Clock::now() >= deadline) return out;
  }
}

struct Totals {
  uint64_t sent = 0, delivered = 0, drops = 0;
  std::map<std::string, uint64_t> byKind;
  void add(const FlowLedger& l) {
    sent += l.sent;
    delivered += l.delivered;
    drops += l.drops();
    byKind["kernel in"] += l.inKernel;
    byKind["ingress"] += l.ingress;
    byKind["device/socket out"] += l.outKernel;
    for (const auto& [k, v] : l.destByReason) byKind[k] += v;
  }
  std::string describe() const {
    std::ostringstream os;
    os << "sent " << sent << ", delivered " << delivered << ", counted drops " << drops << " {";
    for (const auto& [k, v] : byKind)
      if (v) os << " " << k << "=" << v;
    os << " }";
    return os.str();
  }
};

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireRoot();
    if (IsSkipped()) return;
    VDEV_E2E_REQUIRE_VDEVD();
  }
  void requireVdevctl() {
    if (vdevctlBinary().empty()) GTEST_SKIP() << "vdevctl not built and $VDEVCTL not set";
  }
  void requireBpftool() {
    if (!tryRun("bpftool version").ok()) GTEST_SKIP() << "bpftool not installed: cannot inspect XDP programs";
  }
};

// ---------------------------------------------------------------------------
// 1. Soak

// About 45 s of traffic across two containers (C1, C2) and a VM (a tap this
// process reads) -- C1 -> C2 -> VM -> C1 -- while, over and over:
//  - a port is added at run time with vdevctl (vdevd creating its veth into
//    container D's namespace), carries traffic (C3 <-> D), and is removed
//    again (vdevd deleting the veth);
//  - container C3's veth is deleted and made again under the same name (the
//    configured port waits for it and attaches again);
//  - the VM stops reading its tap (while C2 sends it 400 frames, more than
//    its queue holds), twice per round.
// Every flow's ledger closes exactly (see the top of the file); the pool adds
// up at every look and is full at exit; vdevd's fds and mappings are the same
// after the rounds as after the first one, and its resident memory did not
// grow by more than 2 MiB.
//
// The soak keeps a station's traffic off while its port or device goes away
// (C3 <-> D stop, settle, then `port del` / `ip link del`): vdevd forgets the
// MACs of a removed port, so frames for it would flood to every other port
// (one frame, several copies) and no per-flow ledger could follow them.
// Frames in flight to a port that disappears are the subject of the
// TapReaderGone and ContainerNetnsDeleted tests below, where the flood has a
// single destination.
TEST_F(FaultsTest, VfSoakPortChurnVethRecreationAndPausedVmAccountForEveryFrame) {
  requireVdevctl();
  if (IsSkipped()) return;
  // Rounds start until then; the whole test takes about 45 s. VDEV_E2E_SOAK_S
  // changes it (a longer soak by hand, a shorter one while debugging).
  const char* soakEnv = std::getenv("VDEV_E2E_SOAK_S");
  const auto kSoak = std::chrono::seconds(soakEnv && *soakEnv ? std::atoi(soakEnv) : 42);
  const auto t0 = Clock::now();

  TempDir dir;
  Ctl ctl(dir.file("vdevd.sock"));
  Container c1("C1"), c2("C2");
  Tap vm;
  vm.setLabel("VM");
  // A short tap queue (the default, 1000, holds about a second of this
  // traffic): a VM that stops reading for a few hundred frames loses some,
  // counted by the tap (tx_dropped).
  run("ip link set dev " + vm.name() + " txqueuelen 128");
  Netns ns3;
  FixedVeth v3(ns3);
  auto s3 = std::make_unique<PacketSocket>(v3.peer(), &ns3, v3.peerMac());
  s3->setLabel("C3");
  Netns nsD;
  const std::string dPort = uniqueName('d');
  const Mac dMac = uniqueMac();
  DeviceGuard guard({dPort});

  Vdevd d({"--port", c1.port(), "--port", c2.port(), "--port", vm.name(), "--socket", ctl.socket(), "--state",
           dir.file("vdevd.state")});
  ctl.ok({"port", "add", v3.host(), "type", "veth"});
  waitLive(d, {c1.port(), c2.port(), vm.name(), v3.host()});
  // A static MAC table: no frame ever floods (see above).
  const auto pin = [&](const Mac& mac, const std::string& port) {
    ctl.ok({"fdb", "add", macString(mac), "port", port});
  };
  pin(c1.mac(), c1.port());
  pin(c2.mac(), c2.port());
  pin(vm.mac(), vm.name());
  pin(v3.peerMac(), v3.host());

  Traffic traffic;
  const PortView pC1 = viewOf(c1), pC2 = viewOf(c2), pVm = viewOf(vm);
  std::vector<TrackedFlow> triangle = {{"C1 -> C2", 1, pC1, pC2, {}, {}},
                                       {"C2 -> VM", 2, pC2, pVm, {}, {}},
                                       {"VM -> C1", 3, pVm, pC1, {}, {}}};
  traffic.addFlow(1, c1.sock.get(), c2.mac());
  traffic.addFlow(2, c2.sock.get(), vm.mac());
  traffic.addFlow(3, &vm, c1.mac());
  for (Endpoint* e : {static_cast<Endpoint*>(c1.sock.get()), static_cast<Endpoint*>(c2.sock.get()),
                      static_cast<Endpoint*>(&vm), static_cast<Endpoint*>(s3.get())})
    traffic.addReader(e);
  {
    const Stats s = d.stats();
    for (TrackedFlow& f : triangle) {
      f.s0 = sample(s, f.src);
      f.d0 = sample(s, f.dst);
    }
  }
  traffic.set({1, 2, 3}, true);
  traffic.start();

  struct Faults {
    int portAdds = 0, portDels = 0, vethDeletes = 0, vethCreates = 0, vmPauses = 0;
  } faults;
  Totals totals;
  // The VM stops reading while C2 sends it 400 frames: more than its tap
  // queue holds (128), so the pause costs frames.
  const auto pauseVm = [&] {
    uint32_t from = 0;
    {
      auto lk = traffic.hold();
      vm.pause();
      from = traffic.flow(2).sent;
    }
    EXPECT_TRUE(traffic.waitFor([&] { return traffic.flow(2).sent >= from + 400; }, 10s));
    {
      auto lk = traffic.hold();
      vm.resume();
    }
    ++faults.vmPauses;
  };

  int rounds = 0;
  std::optional<ProcFootprint> warm;
  uint32_t nextFlow = 10;
  while (rounds < 4 || Clock::now() - t0 < kSoak) {
    SCOPED_TRACE("round " + std::to_string(rounds));
    // D: vdevctl adds a port, making its veth into D's namespace.
    ctl.ok({"port", "add", dPort, "type", "veth", "create", "netns", nsD.name(), "peer", "eth0", "peer-mac",
            macString(dMac)});
    ++faults.portAdds;
    waitLive(d, {dPort});
    pin(dMac, dPort);
    auto sD = std::make_unique<PacketSocket>("eth0", &nsD, dMac);
    sD->setLabel("D");

    // C3 <-> D while the VM stops reading for a while.
    const uint32_t f3d = nextFlow++, fd3 = nextFlow++;
    std::vector<TrackedFlow> session = {{"C3 -> D", f3d, {}, {}, {}, {}}, {"D -> C3", fd3, {}, {}, {}, {}}};
    {
      const PortView p3{v3.host(), s3.get(), s3.get(), v3.peer(), &ns3};
      const PortView pD{dPort, sD.get(), sD.get(), "eth0", &nsD};
      session[0].src = p3, session[0].dst = pD;
      session[1].src = pD, session[1].dst = p3;
      const Stats s = d.stats();
      auto lk = traffic.hold();
      traffic.addReader(sD.get());
      traffic.addFlow(f3d, s3.get(), dMac);
      traffic.addFlow(fd3, sD.get(), v3.peerMac());
      for (TrackedFlow& f : session) {
        f.s0 = sample(s, f.src);
        f.d0 = sample(s, f.dst);
      }
      traffic.set({f3d, fd3}, true);
    }
    std::this_thread::sleep_for(400ms);
    pauseVm();
    std::this_thread::sleep_for(300ms);
    {
      auto lk = traffic.hold();
      traffic.set({f3d, fd3}, false);
    }
    Stats s;
    for (const FlowLedger& l : settleLedgers(d, traffic, session, &s)) {
      expectLedger(l);
      EXPECT_GT(l.delivered, 0u) << l.describe();
      totals.add(l);
    }
    EXPECT_EQ(s.pool.reported_sum, s.pool.total()) << s.dump();

    // D goes: its port is removed (and its veth deleted) under the others' traffic.
    {
      auto lk = traffic.hold();
      traffic.pollReaders();
      traffic.removeReader(sD.get());
      traffic.removeFlow(f3d);
      traffic.removeFlow(fd3);
    }
    sD.reset();
    ctl.ok({"port", "del", dPort});
    ++faults.portDels;
    EXPECT_FALSE(linkExists(dPort)) << "vdevd made D's veth; port del deletes it";

    // C3's veth is deleted and made again, under traffic, while the VM
    // does not read.
    {
      auto lk = traffic.hold();
      traffic.removeReader(s3.get());
      vm.pause();
    }
    s3.reset();
    v3.remove();
    ++faults.vethDeletes;
    waitLive(d, {v3.host()}, false);
    v3.create();
    ++faults.vethCreates;
    waitLive(d, {v3.host()});
    pin(v3.peerMac(), v3.host());  // forgotten with the device
    s3 = std::make_unique<PacketSocket>(v3.peer(), &ns3, v3.peerMac());
    s3->setLabel("C3");
    {
      auto lk = traffic.hold();
      traffic.addReader(s3.get());
      vm.resume();
    }
    ++faults.vmPauses;
    ++rounds;
    // Warmed up: every path (attach, detach, device gone and back, vdevctl)
    // has run once; the allocator and libbpf have what they keep.
    if (rounds == 1) warm = settledFootprint(d.pid(), ctl.socket());
    if (HasFatalFailure()) break;
  }
  const ProcFootprint end = settledFootprint(d.pid(), ctl.socket());

  // The triangle stops; its ledgers span the whole soak.
  {
    auto lk = traffic.hold();
    traffic.set({1, 2, 3}, false);
  }
  Stats last;
  for (const FlowLedger& l : settleLedgers(d, traffic, triangle, &last)) {
    expectLedger(l);
    EXPECT_GT(l.delivered, 1000u) << l.describe();
    totals.add(l);
    std::cout << "  " << l.describe() << "\n";
  }
  traffic.stop();
  EXPECT_EQ(traffic.error(), "");
  EXPECT_EQ(last.pool.reported_sum, last.pool.total()) << last.dump();
  last = idleStats(d);
  EXPECT_TRUE(poolIdle(last)) << "frames still out of the pool with no traffic: " << last.dump();
  for (const Endpoint* e : {static_cast<const Endpoint*>(c1.sock.get()), static_cast<const Endpoint*>(c2.sock.get()),
                            static_cast<const Endpoint*>(&vm)}) {
    EXPECT_EQ(e->rx().corrupt(), 0u) << e->label() << ": " << e->rx().describe();
    EXPECT_EQ(e->rx().foreign(), 0u) << e->label() << ": " << e->rx().describe();
  }
  // The VM's pauses must have cost frames: the test stalled it for real.
  EXPECT_GT(totals.drops, 0u) << totals.describe();

  // Memory: the same configuration (D removed, C3 attached) as after round 1.
  // fds and mappings must match exactly: a socket, ring mmap or BPF object
  // leaked per round shows up there. Resident memory may move a little for
  // reasons that are not leaks -- malloc keeps freed pages of its arenas,
  // page-granular accounting, the stats text it formats -- so it may grow by
  // less than 2 MiB; a per-round leak of an XDP program's libbpf object
  // (hundreds of KiB with its BTF) or of a socket's rings (~60 KiB each, two
  // sockets per round) over a dozen rounds does not fit in that.
  ASSERT_TRUE(warm.has_value());
  EXPECT_EQ(end.fds, warm->fds) << "vdevd's open fds after round 1 and at the end:" << fdGrowth(*warm, end);
#if defined(VDEV_ASAN_BUILD)  // vdevd is ASan-built (CMakeLists.txt)
  // Under AddressSanitizer (make asan) freed memory sits in ASan's quarantine
  // and its allocator maps more as it goes: RSS and mappings grow without a
  // leak. LeakSanitizer checks for real leaks when vdevd exits there.
  std::cout << "  (AddressSanitizer build: RSS and mappings not compared)\n";
#else
  EXPECT_EQ(end.maps, warm->maps) << "vdevd's memory mappings after round 1 and at the end";
  EXPECT_LT(int64_t(end.rssKb) - int64_t(warm->rssKb), 2048) << "VmRSS " << warm->rssKb << " kB -> " << end.rssKb
                                                             << " kB";
#endif

  const auto took = std::chrono::duration_cast<Millis>(Clock::now() - t0);
  std::cout << "  soak: " << rounds << " rounds in " << took.count() << " ms; faults: " << faults.portAdds
            << " port adds, " << faults.portDels << " port dels, " << faults.vethDeletes << " veth deletions, "
            << faults.vethCreates << " veth re-creations, " << faults.vmPauses << " VM pauses\n"
            << "  frames: " << totals.describe() << "\n"
            << "  vdevd: VmRSS " << warm->rssKb << " -> " << end.rssKb << " kB, fds " << warm->fds << " -> "
            << end.fds << ", mappings " << warm->maps << " -> " << end.maps << "\n";

  EXPECT_EQ(d.stop(), 0) << d.logs();
  const Stats fin = d.finalStats();
  EXPECT_EQ(fin.pool.free(), fin.pool.total()) << fin.dump();
}

// ---------------------------------------------------------------------------
// 2. vdevd killed with SIGKILL and started again

// vdevd is killed (SIGKILL: no teardown) while C1 -> C2 -> VM -> C1 flows;
// two of its three ports were added at run time. Its XDP programs stay on
// the ports, without sockets: frames sent meanwhile are dropped and counted
// by the orphaned programs (no_socket), never passed to the host stack or
// anywhere else -- except learned unicast into the tap, which the kernel
// fast path goes on delivering from the programs' maps (measured and
// printed, not asserted: see flow 11 below). Started again with the same --socket and --state, vdevd
// restores the run-time ports from the state file, replaces each orphaned
// program (exactly one program per port afterwards, a new one, and the old
// ones are gone from the kernel), and traffic flows with exact counts.
TEST_F(FaultsTest, VfSigkillThenRestartReplacesOrphanedProgramsAndRestoresPorts) {
  requireVdevctl();
  if (IsSkipped()) return;
  requireBpftool();
  if (IsSkipped()) return;
  TempDir dir;
  Ctl ctl(dir.file("vdevd.sock"));
  Container c1("C1"), c2("C2");
  Tap vm;
  vm.setLabel("VM");
  const std::vector<std::string> args = {"--port", c1.port(), "--socket", ctl.socket(), "--state",
                                         dir.file("vdevd.state")};
  const std::vector<std::string> ports = {c1.port(), c2.port(), vm.name()};
  const Endpoints all = {c1.sock.get(), c2.sock.get(), &vm};

  auto d = std::make_unique<Vdevd>(args);
  ctl.ok({"port", "add", c2.port()});
  ctl.ok({"port", "add", vm.name(), "type", "tap"});
  waitLive(*d, ports);
  std::map<std::string, uint64_t> before;
  for (const auto& p : ports) {
    const auto progs = xdpPrograms(p);
    ASSERT_EQ(progs.size(), 1u) << p;
    EXPECT_EQ(progs[0].name, "vdev_xdp") << p;
    before[p] = progs[0].id;
  }
  learnAll(all, 1);
  // What says that nothing is on its way to a station any more, with vdevd
  // gone: every frame the stations sent has met the program on its way in
  // (one program serves every port: every frame is counted once under one
  // of its verdicts, pass, redirect, no_socket or fast), and each
  // container's socket has read (or dropped) every frame that reached its
  // interface (rx_packets counts one when the host end hands it over). The
  // VM reads its tap itself: a frame the fast path put there is there.
  // Measured against this moment, when nothing is on its way.
  const auto sentByAll = [&] {
    int64_t n = 0;
    for (const Endpoint* e : all) n += int64_t(e->sentFrames());
    return n;
  };
  const uint64_t statsMap = xdpStatsMap(before[c1.port()]);
  const auto decided = [&] {
    int64_t n = 0;
    for (const uint64_t v : xdpStats(statsMap)) n += int64_t(v);
    return n;
  };
  const auto unread = [&](const Container& c) {
    return int64_t(c.veth->peerInfo().rx_packets) - int64_t(c.sock->rx().frames() + c.sock->kernelDrops());
  };
  const int64_t undecided0 = sentByAll() - decided(), unread1 = unread(c1), unread2 = unread(c2);

  // Killed under traffic.
  {
    Traffic traffic;
    traffic.addFlow(10, c1.sock.get(), c2.mac());
    traffic.addFlow(11, c2.sock.get(), vm.mac());
    traffic.addFlow(12, &vm, c1.mac());
    for (Endpoint* e : all) traffic.addReader(e);
    traffic.set({10, 11, 12}, true);
    traffic.start();
    const auto dest = [&](uint32_t f) -> const Endpoint* { return f == 10 ? all[1] : f == 11 ? all[2] : all[0]; };
    // Every flow really goes through vdevd when it is killed: 300 frames of
    // each delivered.
    EXPECT_TRUE(traffic.waitFor([&] {
      for (uint32_t f : {10u, 11u, 12u})
        if (dest(f)->rx().count(f) < 300) return false;
      return true;
    }, 20s)) << countsOf(all);
    d->child().signal(SIGKILL);
    const auto status = d->child().wait(5s);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(*status, 128 + SIGKILL);
    // vdevd is gone: whatever is sent from now on (sequence numbers from
    // sentAtDeath) meets its orphaned programs, which deliver nothing.
    std::map<uint32_t, uint32_t> sentAtDeath;
    {
      auto lk = traffic.hold();
      for (uint32_t f : {10u, 11u, 12u}) sentAtDeath[f] = traffic.flow(f).sent;
    }
    EXPECT_TRUE(traffic.waitFor([&] {
      for (uint32_t f : {10u, 11u, 12u})
        if (traffic.flow(f).sent < sentAtDeath[f] + 50) return false;
      return true;
    }, 20s)) << "traffic stalled after vdevd died";
    traffic.stop();
    ASSERT_EQ(traffic.error(), "");
    // Frames still in the kernel's queues, read wherever they arrive.
    EXPECT_TRUE(pumpUntil(all, [&] {
      return sentByAll() - decided() == undecided0 && unread(c1) == unread1 && unread(c2) == unread2;
    }, 10s)) << "still on their way after 10 s: " << sentByAll() - decided() - undecided0 << " frames before a program, "
             << unread(c1) - unread1 << " and " << unread(c2) - unread2 << " unread at C1 and C2" << countsOf(all);
    for (uint32_t f : {10u, 11u, 12u}) {
      const Endpoint* to = dest(f);
      EXPECT_GE(to->rx().count(f), 300u) << "flow " << f;
      EXPECT_EQ(to->rx().duplicates(f), 0u) << "flow " << f;
      const auto& seqs = to->rx().seqs(f);
      const auto late = seqs.lower_bound(sentAtDeath[f]);
      const auto lateCount = std::distance(late, seqs.end());
      if (f == 11) {
        // C2 -> VM is learned unicast into a tap: the kernel fast path,
        // which the orphaned programs keep running from their maps without
        // vdevd (frames counted in the old programs' maps, which the
        // restarted vdevd replaces). Not what the comment above promises;
        // reported, not asserted either way, until the design says which.
        std::cout << "  flow 11 (C2 -> VM, kernel fast path): " << lateCount << " of the "
                  << traffic.flow(f).sent - sentAtDeath[f] << " frames sent after vdevd died were delivered\n";
        continue;
      }
      EXPECT_EQ(lateCount, 0) << "flow " << f << ": frames sent after vdevd died (the first "
                              << (late == seqs.end() ? 0 : *late) << ", " << traffic.flow(f).sent - sentAtDeath[f]
                              << " sent) still delivered";
    }
  }

  // Orphaned: the same programs, still attached, without sockets.
  for (const auto& p : ports) {
    const auto progs = xdpPrograms(p);
    ASSERT_EQ(progs.size(), 1u) << p;
    EXPECT_EQ(progs[0].id, before[p]) << p << ": SIGKILL cannot detach anything";
  }
  // They drop and count what arrives meanwhile: nothing reaches a station
  // or the host stack.
  // One program for every port: its counters are theirs (C1's and the VM's
  // are where frames arrive below).
  const uint64_t prog = before[c1.port()];
  for (const auto& p : ports) EXPECT_EQ(before[p], prog) << p << ": not the program the other ports share";
  const uint64_t noSock0 = xdpProgCounter(prog, 2);
  const uint64_t pass0 = xdpProgCounter(prog, 0);
  const LinkInfo c1Host0 = c1.veth->hostInfo();
  sendMixed(*c1.sock, c2.mac(), 20, 50);
  sendMixed(vm, c1.mac(), 21, 50);
  // The positive marker: the programs decided on all 100 (no_socket: dropped
  // on the spot). Nothing decided can still be on its way to a station.
  const auto noSocket = [&] { return xdpProgCounter(prog, 2) - noSock0; };
  EXPECT_TRUE(waitUntil([&] { return noSocket() >= 100; }, 10s, 10ms))
      << "frames sent while vdevd was dead must be counted by its orphaned programs (no_socket): " << noSocket();
  EXPECT_EQ(noSocket(), 100u);
  for (Endpoint* e : all) e->poll();
  for (Endpoint* e : all)
    for (uint32_t f : {20u, 21u}) EXPECT_EQ(e->rx().count(f), 0u) << "flow " << f << " reached " << e->label();
  EXPECT_EQ(xdpProgCounter(prog, 0) - pass0, 0u) << "passed to the host stack";
  EXPECT_EQ(c1.veth->hostInfo().rx_packets - c1Host0.rx_packets, 50u)
      << "the host end received them (and its program dropped them)";

  // Started again: same socket, same state file, same command line.
  d = std::make_unique<Vdevd>(args);
  const Json listed = ctl.json({"port", "show"});
  ASSERT_EQ(listed.size(), 3u) << listed.dump();
  waitLive(*d, ports);
  for (const auto& p : ports) {
    const auto progs = xdpPrograms(p);
    ASSERT_EQ(progs.size(), 1u) << p << ": exactly one XDP program, not the old one and a new one";
    EXPECT_EQ(progs[0].name, "vdev_xdp") << p;
    EXPECT_NE(progs[0].id, before[p]) << p << ": the orphaned program is still the one attached";
    EXPECT_EQ(progs[0].mode, "driver") << p;
    const LinkInfo li = linkInfo(p);
    ASSERT_TRUE(li.has_xdp) << p;
    const nlohmann::json& xdp = li.raw.at(0).at("xdp");
    EXPECT_FALSE(xdp.contains("attached") && xdp.at("attached").size() != 1)
        << p << ": " << li.raw.dump();
  }
  // Replaced means gone: a program that stays loaded after it was detached
  // (an fd still open on it) keeps its maps in the kernel for as long as
  // vdevd runs.
  const ProcFootprint fp = footprint(d->pid());
  const int progFds = fp.fdKinds.count("anon_inode:bpf-prog") ? fp.fdKinds.at("anon_inode:bpf-prog") : 0;
  for (const auto& [p, id] : before)
    EXPECT_FALSE(bpfProgExists(id)) << p << ": the orphaned program " << id
                                    << " was detached but is still loaded; vdevd holds " << progFds
                                    << " fds on BPF programs for its " << ports.size() << " ports";

  // Exact traffic again; counters start from zero.
  for (Endpoint* e : all) e->rx().clear();
  std::map<const Endpoint*, uint64_t> sent0;
  for (Endpoint* e : all) sent0[e] = e->sentFrames();
  learnAll(all, 30);
  uint32_t flow = 40;
  for (Endpoint* from : all)
    for (Endpoint* to : all) {
      if (from == to) continue;
      sendMixed(*from, to->mac(), flow, 60);
      expectFlow(all, flow++, {{to, 60}});
    }
  const auto counted = [&](const Stats& s) {
    for (size_t i = 0; i < all.size(); ++i) {
      const PortStats* p = s.findPort(ports[i]);
      if (!p || (*p)[stats::kRxPackets] != all[i]->sentFrames() - sent0[all[i]] || (*p)[stats::kTxPackets] != all[i]->rx().frames())
        return false;
    }
    return true;
  };
  const Stats s = d->statsUntil(counted, 3s);
  EXPECT_TRUE(counted(s)) << s.dump();
  for (const PortStats& p : s.ports) {
    EXPECT_EQ(p.totalDrops(), 0u) << s.dump();
    EXPECT_EQ(p.xdpRxDrops(), 0u) << s.dump();
  }
  EXPECT_EQ(s.pool.reported_sum, s.pool.total()) << s.dump();
  const Stats idle = idleStats(*d);
  EXPECT_TRUE(poolIdle(idle)) << idle.dump();

  EXPECT_EQ(d->stop(), 0) << d->logs();
  for (const auto& p : ports) EXPECT_TRUE(xdpPrograms(p).empty()) << p << ": left attached at a clean stop";
  for (const auto& [p, id] : before)
    EXPECT_FALSE(bpfProgExists(id)) << p << ": the orphaned program " << id << " outlived vdevd";
  const Stats fin = d->finalStats();
  EXPECT_EQ(fin.pool.free(), fin.pool.total()) << fin.dump();
}

// A vdevd killed (SIGKILL) leaves its punt veth pair behind: the next vdevd
// on any control socket removes it at start -- and leaves a live vdevd's
// pair alone. The pairs' names differ (a hash of the socket path), so each
// is found by the owner its far end names.
namespace {

// The far ends of punt pairs here whose alias names `pid` as their owner.
std::vector<std::string> puntPairsOf(pid_t pid) {
  std::vector<std::string> out;
  const std::string want = "vdev:punt owner=" + std::to_string(pid) + ":";
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net")) {
    std::ifstream in(e.path() / "ifalias");
    std::string alias;
    std::getline(in, alias);
    if (alias.rfind(want, 0) == 0) out.push_back(e.path().filename().string());
  }
  return out;
}

}  // namespace

TEST_F(FaultsTest, VfSigkilledVdevdsPuntDeviceIsRemovedByTheNextVdevdAndALiveOnesIsKept) {
  TempDir dir;
  Container c1("C1"), c2("C2");
  auto killed = std::make_unique<Vdevd>(std::vector<std::string>{
      "--port", c1.port(), "--socket", dir.file("a.sock"), "--no-state", "--default-hook", "tc"});
  Vdevd live({"--port", c2.port(), "--socket", dir.file("b.sock"), "--no-state", "--default-hook", "tc"});
  const pid_t killed_pid = killed->pid();
  const auto killed_pair = puntPairsOf(killed_pid);
  const auto live_pair = puntPairsOf(live.pid());
  ASSERT_EQ(killed_pair.size(), 1u) << "the tc port's punt device, named for its owner\n" << killed->logs();
  ASSERT_EQ(live_pair.size(), 1u) << live.logs();
  ASSERT_NE(killed_pair, live_pair);

  killed->child().signal(SIGKILL);
  const auto status = killed->child().wait(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 128 + SIGKILL);
  EXPECT_EQ(puntPairsOf(killed_pid), killed_pair) << "SIGKILL cannot delete a device";
  killed.reset();

  // A third vdevd, on a socket of its own, with no port at all.
  Vdevd next({"--socket", dir.file("c.sock"), "--no-state"});
  EXPECT_TRUE(puntPairsOf(killed_pid).empty()) << next.logs();
  std::string near = killed_pair[0];
  near.back() = 'k';
  EXPECT_FALSE(std::filesystem::exists("/sys/class/net/" + near)) << "its near end went with it";
  EXPECT_NE(next.logs().find("removed punt device " + near), std::string::npos) << next.logs();
  EXPECT_EQ(puntPairsOf(live.pid()), live_pair) << "a live vdevd's punt device is not an orphan";

  EXPECT_EQ(next.stop(), 0) << next.logs();
  EXPECT_EQ(live.stop(), 0) << live.logs();
  EXPECT_TRUE(puntPairsOf(live.pid()).empty()) << "a clean stop removes its own";
}

// ---------------------------------------------------------------------------
// 3. A station disappears while the others talk

// The VM stand-in on a persistent tap (as `vdevctl port add ... type tap
// create` makes for QEMU) exits: it closes its fd while B keeps sending to it
// (B -> VM), A -> B flows and the VM had been sending to A. The tap stays,
// without carrier: vdevd takes the port down, keeps the VM's MAC (no flood),
// and counts what B sends to it (port_down, or the tap's tx_dropped for the
// frames the kernel refused before vdevd noticed). The datapath thread keeps
// forwarding A -> B without a loss, every frame comes back to the pool, and
// when a VM attaches again the port comes back up -- and nothing sent while
// it was away arrives then.
//
// The existing VmExitWhileContainersTalkKeepsForwarding test covers a tap
// that disappears with its fd; this one covers the tap that stays, and
// accounts for the frames sent to the VM.
TEST_F(FaultsTest, VfTapReaderGoneCountsItsFramesKeepsForwardingAndComesBack) {
  Container a("A"), b("B");
  PersistentTap vm;
  Vdevd d({"--port", a.port(), "--port", b.port(), "--port", vm.name()});
  const Endpoints all = {a.sock.get(), b.sock.get(), &vm};
  learnAll(all, 1);
  const PortView pA = viewOf(a), pB = viewOf(b), pVm = viewOf(vm);
  std::vector<TrackedFlow> flows = {{"A -> B", 10, pA, pB, {}, {}}, {"VM -> A", 12, pVm, pA, {}, {}}};
  TrackedFlow toVm{"B -> VM", 11, pB, pVm, {}, {}};

  Traffic traffic;
  traffic.addFlow(10, a.sock.get(), b.mac());
  traffic.addFlow(11, b.sock.get(), vm.mac());
  traffic.addFlow(12, &vm, a.mac());
  for (Endpoint* e : all) traffic.addReader(e);
  const Stats s0 = d.stats();
  for (TrackedFlow* f : {&flows[0], &flows[1], &toVm}) {
    f->s0 = sample(s0, f->src);
    f->d0 = sample(s0, f->dst);
  }
  const LinkInfo tap0 = linkInfo(vm.name());
  traffic.set({10, 11, 12}, true);
  traffic.start();
  EXPECT_TRUE(traffic.waitFor([&] { return vm.rx().count(11) >= 300; }, 10s));

  // The VM exits: it stops sending, vdevd takes what it sent (frames still
  // in the tap's RX ring when the port goes down are counted, as kernel
  // drops, but never reach A: under load that happened to the VM's last 5
  // frames, and VM -> A must be exact), then its last read, then its fd goes.
  uint64_t aBefore = 0, toVmBefore = 0;
  {
    auto lk = traffic.hold();
    traffic.set({12}, false);
  }
  const Stats vmDone =
      d.statsUntil([&](const Stats& s) { return s.port(vm.name())[stats::kRxPackets] == vm.sentFrames(); }, 10s);
  ASSERT_EQ(vmDone.port(vm.name())[stats::kRxPackets], vm.sentFrames()) << vmDone.dump();
  {
    auto lk = traffic.hold();
    traffic.pollReaders();
    traffic.removeReader(&vm);
    vm.detach();
    aBefore = b.sock->rx().count(10);
    toVmBefore = traffic.flow(11).sent;
  }
  const Stats down = waitLive(d, {vm.name()}, false, 3s);
  EXPECT_TRUE(isLive(down, a.port()) && isLive(down, b.port())) << down.dump();
  // A -> B goes on, and B keeps sending to the VM that left.
  EXPECT_TRUE(traffic.waitFor(
      [&] { return b.sock->rx().count(10) >= aBefore + 500 && traffic.flow(11).sent >= toVmBefore + 500; }, 10s))
      << "A -> B stalled after the VM exited";
  uint64_t toVmAfter = 0;
  {
    auto lk = traffic.hold();
    traffic.set({10, 11}, false);
    toVmAfter = traffic.flow(11).sent - toVmBefore;
  }
  Stats s1;
  const auto ledgers = settleLedgers(d, traffic, flows, &s1);
  for (const FlowLedger& l : ledgers) {
    expectLedger(l);
    EXPECT_EQ(l.delivered, l.sent) << "nothing may be lost between the stations that stayed: " << l.describe();
  }
  traffic.stop();
  ASSERT_EQ(traffic.error(), "");

  // B -> VM. Frames the VM had not read when it closed its fd are freed by
  // the kernel with the tap's queue (tun_detach) and counted nowhere:
  // vdevd put them on the tap (tx) and the tap neither delivered nor dropped
  // them. The VM read up to a moment before closing, so there are a few at
  // most. Everything else is delivered or counted.
  const FlowLedger l = ledger(toVm.name, traffic.flow(11).sent, 11, pVm, toVm.s0, sample(s1, pB), toVm.d0,
                              sample(s1, pVm));
  const LinkInfo tap1 = linkInfo(vm.name());
  const int64_t purged = int64_t(l.txDst) - int64_t(l.delivered) - int64_t(l.outKernel);
  SCOPED_TRACE(l.describe() + "; purged with the tap's queue: " + std::to_string(purged));
  EXPECT_EQ(l.sent, l.rxSrc + l.inKernel);
  EXPECT_EQ(l.rxSrc, l.txDst + l.dest + l.ingress)
      << "vdevd: rx(B) = tx(VM) + drops charged to the VM (a frame counted twice, or not at all)";
  EXPECT_EQ(tap1.tx_packets - tap0.tx_packets, l.delivered) << "the tap counts what the VM read";
  EXPECT_GE(purged, 0);
  EXPECT_LE(purged, 32);
  EXPECT_GE(l.dest + l.outKernel, toVmAfter) << "every frame sent to the VM after it left must be counted";
  EXPECT_EQ(l.duplicates, 0u);
  std::cout << "  " << l.describe() << "; purged with the tap's queue: " << purged << "\n";
  EXPECT_EQ(s1.pool.reported_sum, s1.pool.total()) << s1.dump();
  const Stats idle = idleStats(d);
  EXPECT_TRUE(poolIdle(idle)) << "frames held for the VM that left: " << idle.dump();
  EXPECT_EQ(idle.port(vm.name())[stats::kTxOutstanding], 0u) << idle.dump();

  // A VM attaches again: the port comes back with its MAC; nothing stale.
  const uint64_t stale = vm.rx().count(11);
  vm.attach();
  waitLive(d, {vm.name()});
  sendMixed(*b.sock, vm.mac(), 20, 50);
  expectFlow(all, 20, {{&vm, 50}});
  sendMixed(vm, a.mac(), 21, 50);
  expectFlow(all, 21, {{a.sock.get(), 50}});
  EXPECT_EQ(vm.rx().count(11), stale) << "frames sent while the VM was away arrived when it came back";
  EXPECT_EQ(d.stop(), 0) << d.logs();
  const Stats fin = d.finalStats();
  EXPECT_EQ(fin.pool.free(), fin.pool.total()) << fin.dump();
}

// Container B's processes exit (its packet socket closes) and its network
// namespace is deleted while A sends to it and A <-> VM talk: the kernel
// destroys B's veth pair with the namespace, asynchronously. vdevd sees the
// device go, keeps forwarding VM -> A without a loss, and accounts for A's
// frames to B: delivered before B's socket closed, transmitted to B's
// interface after (nobody read them: they went with the namespace), counted
// as port_down when the device disappeared under them, or -- once vdevd
// forgot B's MAC with the device -- flooded, like a bridge does, to the one
// other port (the VM), where they arrive. With three ports the flood has one
// destination, so every frame of A's is still followed exactly. Every frame
// comes back to the pool.
//
// ContainerDeletedWhileOthersTalkKeepsForwarding (datapath_test) deletes the
// veth; this test deletes the namespace and follows the frames sent to it.
TEST_F(FaultsTest, VfContainerNetnsDeletedUnderTrafficIsDetectedAndItsFramesAccounted) {
  Container a("A"), b("B");
  Tap vm;
  vm.setLabel("VM");
  Vdevd d({"--port", a.port(), "--port", b.port(), "--port", vm.name()});
  const Endpoints all = {a.sock.get(), b.sock.get(), &vm};
  learnAll(all, 1);
  const PortView pA = viewOf(a), pB = viewOf(b), pVm = viewOf(vm);
  const std::string bPort = b.port();
  const Mac bMac = b.mac();

  Traffic traffic;
  traffic.addFlow(10, a.sock.get(), bMac);  // A -> B: to the container that goes
  traffic.addFlow(11, b.sock.get(), vm.mac());  // B -> VM: until B's processes exit
  traffic.addFlow(12, &vm, a.mac());  // VM -> A: must not notice
  for (Endpoint* e : all) traffic.addReader(e);
  const Stats s0 = d.stats();
  std::map<std::string, PortSample> at0;
  for (const PortView* v : {&pA, &pB, &pVm}) at0[v->port] = sample(s0, *v);
  const uint64_t bDrops0 = b.sock->kernelDrops();
  traffic.set({10, 11, 12}, true);
  traffic.start();
  EXPECT_TRUE(traffic.waitFor([&] { return b.sock->rx().count(10) >= 300; }, 10s));

  // B's processes exit, then its namespace is deleted.
  uint64_t bGot = 0, bDrops = 0;
  {
    auto lk = traffic.hold();
    traffic.set({11}, false);
    traffic.pollReaders();
    traffic.removeReader(b.sock.get());
    bGot = b.sock->rx().count(10);
    bDrops = b.sock->kernelDrops();
    b.sock.reset();
  }
  b.ns.reset();  // ip netns del: the last reference to it is gone
  const auto deleted = Clock::now();
  ASSERT_TRUE(waitUntil([&] { return !linkExists(bPort); }, 10s, 10ms))
      << "the kernel did not destroy B's veth with its namespace";
  const auto gone = std::chrono::duration_cast<Millis>(Clock::now() - deleted);
  waitLive(d, {bPort}, false, 3s);
  // A keeps sending to B; once vdevd has forgotten B's MAC, those frames
  // flood to the VM.
  EXPECT_TRUE(traffic.waitFor([&] { return vm.rx().count(10) >= 300 && a.sock->rx().count(12) >= 1000; }, 10s))
      << "A's frames for B did not reach the VM, or VM -> A stalled";
  {
    auto lk = traffic.hold();
    traffic.set({10, 12}, false);
  }
  // Settled: VM -> A closes, and every frame vdevd received has an outcome.
  Stats s1;
  const PortView pBGone{bPort, nullptr, nullptr, "", nullptr};
  std::vector<TrackedFlow> vmToA = {{"VM -> A", 12, pVm, pA, at0[pVm.port], at0[pA.port]}};
  const auto settled = [&](const Stats& s) {
    uint64_t in = 0, out = 0;
    for (const PortStats& p : s.ports) {
      in += p[stats::kRxPackets];
      out += p[stats::kTxPackets] + p.totalDrops();
    }
    uint64_t in0 = 0, out0 = 0;
    for (const PortStats& p : s0.ports) {
      in0 += p[stats::kRxPackets];
      out0 += p[stats::kTxPackets] + p.totalDrops();
    }
    return in - in0 == out - out0 && poolIdle(s);
  };
  for (const FlowLedger& l : settleLedgers(d, traffic, vmToA, &s1)) {
    expectLedger(l);
    EXPECT_EQ(l.delivered, l.sent) << l.describe();
  }
  s1 = d.statsUntil(settled, 3s);
  uint64_t vmGot1 = 0, vmGot11 = 0;
  {
    auto lk = traffic.hold();
    traffic.pollReaders();
    vmGot1 = vm.rx().count(10);
    vmGot11 = vm.rx().count(11);
  }
  traffic.stop();
  ASSERT_EQ(traffic.error(), "");

  const PortSample a1 = sample(s1, pA), b1 = sample(s1, pBGone), v1 = sample(s1, pVm);
  const PortSample &a0 = at0[pA.port], &b0 = at0[pB.port], &v0 = at0[pVm.port];
  const uint64_t sentAB = traffic.flow(10).sent, sentBV = traffic.flow(11).sent;
  const uint64_t txB = b1.tx - b0.tx, portDownB = dropOf(b1, stats::kDropPortDown) - dropOf(b0, stats::kDropPortDown);
  const uint64_t destB = b1.dest - b0.dest, destVm = v1.dest - v0.dest;
  bDrops -= bDrops0;
  const int64_t unread = int64_t(txB) - int64_t(bGot) - int64_t(bDrops);
  std::ostringstream why;
  why << "A -> B: sent " << sentAB << "; B read " << bGot << " (socket drops " << bDrops << "); vdevd tx to B "
      << txB << " (so " << unread << " reached B's interface after its socket closed), drops charged to B " << destB
      << " (port_down " << portDownB << "); flooded to the VM and read there " << vmGot1
      << "; drops charged to the VM " << destVm << ". B -> VM: sent " << sentBV << ", read " << vmGot11
      << ". B's veth went " << gone.count() << " ms after ip netns del\n"
      << s1.dump();
  SCOPED_TRACE(why.str());
  // In: every frame A and B sent reached vdevd.
  EXPECT_EQ(a1.rx - a0.rx + (a1.inKernel - a0.inKernel), sentAB);
  EXPECT_EQ(b1.rx - b0.rx, sentBV) << "B stopped sending before its namespace went";
  // vdevd: every frame received has one outcome (no flood copies here).
  EXPECT_EQ((a1.rx - a0.rx) + (b1.rx - b0.rx) + (v1.rx - v0.rx) - (a1.ingress - a0.ingress) -
                (b1.ingress - b0.ingress) - (v1.ingress - v0.ingress),
            (a1.tx - a0.tx) + txB + (v1.tx - v0.tx) + (a1.dest - a0.dest) + destB + destVm)
      << "vdevd: a frame with no outcome, or with two";
  // Out: what went to the VM (B's frames, then A's flooded ones) arrived.
  EXPECT_EQ(v1.tx - v0.tx, vmGot1 + vmGot11 + (v1.outKernel - v0.outKernel));
  EXPECT_EQ(vmGot11, sentBV);
  // A -> B, end to end.
  EXPECT_GE(unread, 0);
  EXPECT_EQ(sentAB, bGot + bDrops + uint64_t(std::max<int64_t>(unread, 0)) + destB + vmGot1 + destVm);
  EXPECT_GT(vmGot1, 0u) << "after B's MAC was forgotten, its frames flood (here: to the VM)";
  EXPECT_EQ(vm.rx().duplicates(10) + a.sock->rx().duplicates(12), 0u);
  std::cout << "  " << why.str().substr(0, why.str().find('\n')) << "\n";
  EXPECT_NE(d.logs().find("port " + bPort + ": device gone"), std::string::npos) << d.logs();
  EXPECT_EQ(s1.pool.reported_sum, s1.pool.total());
  EXPECT_TRUE(poolIdle(s1));

  // Still forwarding, both ways.
  const Endpoints left = {a.sock.get(), &vm};
  sendMixed(*a.sock, vm.mac(), 20, 50);
  expectFlow(left, 20, {{&vm, 50}});
  sendMixed(vm, a.mac(), 21, 50);
  expectFlow(left, 21, {{a.sock.get(), 50}});
  EXPECT_EQ(d.stop(), 0) << d.logs();
  const Stats fin = d.finalStats();
  EXPECT_EQ(fin.pool.free(), fin.pool.total()) << fin.dump();
}


// ---------------------------------------------------------------------------
// 4. Host traffic on an uplink port

// The uplink: a veth whose host end is vdevd's port and carries the host's
// address in the root namespace; its peer, in a namespace of its own, is the
// neighbour (a router, another host) with the other address of a /30. The
// /30 is 198.19.<pid>.252: no test frame uses a fourth octet above 250.
struct Uplink {
  Uplink() : veth(net) {
    const std::string n = "198.19." + std::to_string(::getpid() % 256) + ".";
    hostAddr = n + "253";
    peerAddr = n + "254";
    run("ip addr add " + hostAddr + "/30 dev " + veth.hostName());
    net.ip("addr add " + peerAddr + "/30 dev " + veth.peerName());
  }
  // Echo replies the neighbour got, pinging the host's address (`to`, if
  // given: the host's IPv6 address) until `count` came back or 10 s passed:
  // a slow reply counts, only a missing one fails.
  int ping(int count, const std::string& to = "") const {
    return pingUntilReplies(net.name(), to.empty() ? hostAddr : to, count, 10).received;
  }
  void forgetHost() const { net.ip("neigh flush dev " + veth.peerName()); }

  Netns net;
  VethPair veth;
  std::string hostAddr, peerAddr;
};

// Frames for the host's own MAC on an uplink port go to the host stack while
// vdevd runs (its XDP program passes the port's own MAC) and after it stops
// (no program): the neighbour pings the host's address throughout, and the
// same port switches the neighbour's other frames to a container meanwhile.
// The neighbour resolved the host's address before vdevd started (its ARP
// entry, refreshed by unicast probes, stays valid); resolving it afresh while
// vdevd runs is UplinkNeighbourResolvesTheHostAddressWhileVdevdRuns below.
TEST_F(FaultsTest, VfUplinkHostTrafficWorksWhileVdevdRunsAndAfterItStops) {
  if (!tryRun("ping -V").ok()) GTEST_SKIP() << "ping (iputils) not installed";
  Uplink up;
  Container c("C");
  ASSERT_EQ(up.ping(3), 3) << "the neighbour cannot reach the host's address even without vdevd";

  auto d = std::make_unique<Vdevd>(std::vector<std::string>{"--port", up.veth.hostName(), "--port", c.port()});
  const std::string port = up.veth.hostName();
  const Stats s0 = d->stats();
  EXPECT_EQ(up.ping(5), 5) << "host traffic on the uplink stopped when vdevd attached";
  const Stats s1 = d->stats();
  EXPECT_GE(s1.port(port)[stats::kProgPass] - s0.port(port)[stats::kProgPass], 5u)
      << "the echo requests went to the host stack through vdevd's program (XDP_PASS)";
  EXPECT_EQ(s1.port(port)[stats::kRxPackets] - s0.port(port)[stats::kRxPackets], 0u) << "host traffic reached vdevd: " << s1.dump();
  c.sock->poll();
  EXPECT_EQ(c.sock->rx().frames(), 0u) << "host traffic was switched to a container: " << c.sock->rx().describe();

  // The same port switches the neighbour's other frames.
  {
    PacketSocket peer(up.veth.peerName(), &up.net);
    peer.setLabel("neighbour");
    const Endpoints eps = {&peer, c.sock.get()};
    learnAll(eps, 1);
    peer.sendFlow({c.mac(), peer.mac(), Kind::kExperimental, 10, 0, 200}, 50);
    expectFlow(eps, 10, {{c.sock.get(), 50}});
    c.sock->sendFlow({peer.mac(), c.mac(), Kind::kExperimental, 11, 0, 1000}, 50);
    expectFlow(eps, 11, {{&peer, 50}});
  }
  EXPECT_EQ(up.ping(3), 3) << "host traffic on the uplink stopped while it switched";

  EXPECT_EQ(d->stop(), 0) << d->logs();
  EXPECT_FALSE(linkInfo(port).has_xdp) << "vdevd left its program on the uplink";
  d.reset();
  EXPECT_EQ(up.ping(3), 3) << "host traffic on the uplink after vdevd stopped";
  up.forgetHost();
  EXPECT_EQ(up.ping(3), 3) << "the neighbour cannot resolve the host's address after vdevd stopped";
}

// A neighbour that has to resolve the host's address while vdevd runs (its
// ARP entry expired, or it is new): its ARP request is a broadcast, and
// vdevd's program passes only frames for the host's own MACs -- every
// broadcast is switched, to the containers, and never reaches the host
// stack, so the host stops answering ARP on its uplink -- unless the
// program passes ARP requests for the host's addresses (host_ipv4), as it
// does. This test expects the host to stay reachable, as it is on a bridge;
// the next one does the same over IPv6.
TEST_F(FaultsTest, VfUplinkNeighbourResolvesTheHostAddressWhileVdevdRuns) {
  if (!tryRun("ping -V").ok()) GTEST_SKIP() << "ping (iputils) not installed";
  Uplink up;
  Container c("C");
  Vdevd d({"--port", up.veth.hostName(), "--port", c.port()});
  up.forgetHost();
  const int got = up.ping(3);
  c.sock->poll();
  EXPECT_EQ(got, 3) << "the neighbour could not resolve the host's address through the uplink while vdevd runs; "
                    << c.sock->rx().frames() << " frames (its ARP requests) were switched to the container instead: "
                    << tryRun("ip -n " + up.net.name() + " neigh show").out;
  EXPECT_EQ(d.stop(), 0) << d.logs();
}

// An address the host gains on the uplink while vdevd runs is the host's at
// once: vdevd hears of it from rtnetlink (it no longer reads every address
// once a second), gives it to the port's program, and the neighbour's ARP
// request for it reaches the host stack instead of the container.
TEST_F(FaultsTest, VfUplinkAddressAddedWhileVdevdRunsIsTheHostsToo) {
  if (!tryRun("ping -V").ok()) GTEST_SKIP() << "ping (iputils) not installed";
  Uplink up;
  Container c("C");
  Vdevd d({"--port", up.veth.hostName(), "--port", c.port()});
  const std::string n = "198.19." + std::to_string(::getpid() % 256) + ".";
  run("ip addr add " + n + "249/30 dev " + up.veth.hostName());
  up.net.ip("addr add " + n + "250/30 dev " + up.veth.peerName());
  const int got = pingUntilReplies(up.net.name(), n + "249", 3, 10).received;
  c.sock->poll();
  EXPECT_EQ(got, 3) << "the neighbour could not resolve an address the host gained while vdevd ran; "
                    << c.sock->rx().frames() << " frames (its ARP requests) were switched to the container instead";
  EXPECT_EQ(d.stop(), 0) << d.logs();
}

// The host's VLAN device on the uplink (a VLAN 10 device on its device,
// made while vdevd runs): the neighbour's tagged ARP requests for its
// address reach the host stack, which answers through that device, instead
// of being switched; the echo requests to its MAC (the uplink's) pass as
// before. vdevd learns of the device and its address from rtnetlink and
// /proc/net/vlan/config (host_vids).
// At the tc hook (a veth uplink's default) the kernel takes the tag off
// before the program: the VID beside the frame is what is looked up.
class HostVlanTest : public FaultsTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(HostVlanTest, VfUplinkNeighbourResolvesTheHostsVlanDeviceWhileVdevdRuns) {
  if (!tryRun("ping -V").ok()) GTEST_SKIP() << "ping (iputils) not installed";
  if (!tryRun("modprobe 8021q").ok() && ::access("/proc/net/vlan", F_OK) != 0)
    GTEST_SKIP() << "no 802.1Q VLAN devices (8021q)";
  Uplink up;
  Container c("C");
  const std::string vl = uniqueName('l');
  DeviceGuard guard({vl});
  Vdevd d({"--port", up.veth.hostName(), "--port", c.port(), "--default-hook", GetParam()});
  const std::string n = "198.19." + std::to_string(::getpid() % 256) + ".";
  run("ip link add link " + up.veth.hostName() + " name " + vl + " type vlan id 10");
  run("ip addr add " + n + "1/29 dev " + vl);
  run("ip link set dev " + vl + " up");
  up.net.ip("link add link " + up.veth.peerName() + " name nb10 type vlan id 10");
  up.net.ip("addr add " + n + "2/29 dev nb10");
  up.net.ip("link set dev nb10 up");
  const int got = pingUntilReplies(up.net.name(), n + "1", 3, 10).received;
  c.sock->poll();
  EXPECT_EQ(got, 3) << "the neighbour could not reach the host's VLAN 10 device through the uplink: "
                    << tryRun("ip -n " + up.net.name() + " neigh show dev nb10").out << d.logs();
  EXPECT_EQ(d.stop(), 0) << d.logs();
}

INSTANTIATE_TEST_SUITE_P(Hooks, HostVlanTest, ::testing::Values("xdp", "tc"),
                         [](const auto& info) { return info.param; });

// The same over IPv6: the neighbour resolves the host's IPv6 address (a ULA,
// fd00:7664:<pid>::1/64, on the uplink only) while vdevd runs. Its Neighbour
// Solicitation goes to the solicited-node multicast address, which vdevd's
// program would switch to the container like any multicast; it passes it to
// the host stack instead (host_ipv6), so the host answers and the ping works,
// and the container never sees a solicitation for the host's address. After
// vdevd stops, the neighbour resolves it afresh once more.
TEST_F(FaultsTest, VfUplinkNeighbourResolvesTheHostIpv6AddressWhileVdevdRunsAndAfterItStops) {
  if (!tryRun("ping -V").ok()) GTEST_SKIP() << "ping (iputils) not installed";
  if (::access("/proc/sys/net/ipv6", F_OK) != 0) GTEST_SKIP() << "the kernel has no IPv6";
  Uplink up;
  Container c("C");
  const std::string host = up.veth.hostName(), peer = up.veth.peerName();
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "fd00:7664:%x::", unsigned(::getpid()) & 0xffffu);
  const std::string hostAddr6 = std::string(prefix) + "1", peerAddr6 = std::string(prefix) + "2";
  uint8_t target[16];
  ASSERT_EQ(::inet_pton(AF_INET6, hostAddr6.c_str(), target), 1) << hostAddr6;
  // The harness turns IPv6 off on both ends: on again, on these two only.
  run("sysctl -q -w net.ipv6.conf." + host + ".disable_ipv6=0");
  run("ip netns exec " + up.net.name() + " sysctl -q -w net.ipv6.conf." + peer + ".disable_ipv6=0");
  run("ip addr add " + hostAddr6 + "/64 dev " + host + " nodad");
  up.net.ip("addr add " + peerAddr6 + "/64 dev " + peer + " nodad");

  Vdevd d({"--port", host, "--port", c.port()});
  up.net.ip("-6 neigh flush dev " + peer);
  // Solicitations for the host's address among the frames the container got.
  const auto solicitations = [&] {
    int n = 0;
    while (auto f = c.sock->recvRaw(200ms)) {
      const std::vector<uint8_t>& b = *f;
      if (b.size() >= 14 + 40 + 24 && b[12] == 0x86 && b[13] == 0xdd && b[14 + 6] == 58 && b[14 + 40] == 135 &&
          std::memcmp(b.data() + 14 + 40 + 8, target, 16) == 0)
        n++;
    }
    return n;
  };
  (void)solicitations();  // whatever came before (the neighbour's own DAD, MLD)
  const Stats s0 = d.stats();
  const int got = up.ping(3, hostAddr6);
  const Stats s1 = d.stats();
  const int leaked = solicitations();
  EXPECT_EQ(got, 3) << "the neighbour could not resolve the host's IPv6 address through the uplink while vdevd runs: "
                    << tryRun("ip -n " + up.net.name() + " -6 neigh show").out;
  EXPECT_EQ(leaked, 0) << "Neighbour Solicitations for the host's address were switched to the container";
  EXPECT_GE(s1.port(host)[stats::kProgPass] - s0.port(host)[stats::kProgPass], 1u)
      << "the solicitation (and echo requests) went to the host stack through vdevd's program (XDP_PASS)";
  const std::string neigh = up.net.ip("-6 neigh show " + hostAddr6 + " dev " + peer);
  EXPECT_NE(neigh.find(macString(up.veth.hostMac())), std::string::npos)
      << "the neighbour has no entry with the host's MAC for " << hostAddr6 << ": " << neigh;
  expectCleanStop(d);
  // After vdevd stopped (no program on the uplink): resolved afresh again.
  EXPECT_FALSE(linkInfo(host).has_xdp) << "vdevd left its program on the uplink";
  up.net.ip("-6 neigh flush dev " + peer);
  EXPECT_EQ(up.ping(3, hostAddr6), 3) << "the neighbour cannot resolve the host's IPv6 address after vdevd stopped: "
                                      << tryRun("ip -n " + up.net.name() + " -6 neigh show").out;
}

// What the host's stack on the uplink receives: an AF_PACKET socket bound
// to one EtherType on the device gets a frame only once the kernel hands it
// to that protocol -- after XDP and tc let it into the stack (unlike one
// bound to every type, which sees frames before tc decides).
class HostStack {
 public:
  HostStack(const std::string& ifname, uint16_t ethertype) {
    fd_ = FileDesc(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ethertype)));
    if (!fd_.valid()) throw HarnessError("packet socket: " + std::string(std::strerror(errno)));
    struct sockaddr_ll sll = {};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ethertype);
    sll.sll_ifindex = int(::if_nametoindex(ifname.c_str()));
    if (::bind(fd_.get(), reinterpret_cast<struct sockaddr*>(&sll), sizeof sll))
      throw HarnessError("bind packet socket to " + ifname + ": " + std::strerror(errno));
    const int buf = 8 << 20;  // a burst of a thousand frames read afterwards
    (void)::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
  }
  // Frames received so far whose bytes contain `mark`.
  int count(const std::string& mark) {
    uint8_t buf[2048];
    for (;;) {
      const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (n <= 0) break;
      got_.emplace_back(reinterpret_cast<const char*>(buf), size_t(n));
    }
    int c = 0;
    for (const std::string& f : got_) c += f.find(mark) != std::string::npos;
    return c;
  }

 private:
  FileDesc fd_;
  std::vector<std::string> got_;
};

// Frames of the kinds the host and the guests tell apart, from `src`, each
// with `mark` in its payload (padded to 60 bytes at least).
struct KindFrames {
  std::vector<uint8_t> lldp, garp, arpOther, ra, dhcp;
};

KindFrames kindFrames(const Mac& src, uint32_t ip, uint32_t otherIp, const std::string& mark) {
  auto eth = [&](std::initializer_list<uint8_t> dst, uint16_t type) {
    std::vector<uint8_t> f(dst);
    f.insert(f.end(), src.begin(), src.end());
    f.push_back(uint8_t(type >> 8));
    f.push_back(uint8_t(type));
    return f;
  };
  auto be32 = [](std::vector<uint8_t>& f, uint32_t v) {  // v in network order already
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    f.insert(f.end(), b, b + 4);
  };
  auto finish = [&](std::vector<uint8_t> f) {
    f.insert(f.end(), mark.begin(), mark.end());
    if (f.size() < 60) f.resize(60, 0);
    return f;
  };
  auto arp = [&](uint32_t tpa) {
    std::vector<uint8_t> f = eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0806);
    f.insert(f.end(), {0, 1, 0x08, 0x00, 6, 4, 0, 1});  // Ethernet/IPv4, a request
    f.insert(f.end(), src.begin(), src.end());
    be32(f, ip);
    f.insert(f.end(), 6, 0);
    be32(f, tpa);
    return finish(f);
  };
  KindFrames k;
  k.lldp = finish(eth({0x01, 0x80, 0xc2, 0, 0, 0x0e}, 0x88cc));
  k.garp = arp(ip);         // gratuitous: sender and target address the same
  k.arpOther = arp(otherIp);  // asking for someone else's address
  {
    // A Router Advertisement to all nodes with router lifetime 0 and no
    // options: nothing a stack that does process it would configure.
    std::vector<uint8_t> f = eth({0x33, 0x33, 0, 0, 0, 1}, 0x86dd);
    const uint16_t plen = uint16_t(16 + mark.size());
    f.insert(f.end(), {0x60, 0, 0, 0, uint8_t(plen >> 8), uint8_t(plen), 58, 255});
    f.insert(f.end(), {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    f.insert(f.end(), {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    f.insert(f.end(), {134, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    k.ra = finish(f);
  }
  {
    // A DHCP reply to broadcast: IPv4 UDP 67 -> 68.
    std::vector<uint8_t> f = eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0800);
    const uint16_t len = uint16_t(20 + 8 + mark.size());
    std::vector<uint8_t> ih = {0x45, 0, uint8_t(len >> 8), uint8_t(len), 0, 0, 0, 0, 64, 17, 0, 0};
    be32(ih, ip);
    be32(ih, 0xffffffffu);
    uint32_t sum = 0;
    for (size_t i = 0; i < ih.size(); i += 2) sum += uint32_t(ih[i]) << 8 | ih[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    ih[10] = uint8_t(~sum >> 8);
    ih[11] = uint8_t(~sum);
    f.insert(f.end(), ih.begin(), ih.end());
    const uint16_t ulen = uint16_t(8 + mark.size());
    f.insert(f.end(), {0, 67, 0, 68, uint8_t(ulen >> 8), uint8_t(ulen), 0, 0});  // no UDP checksum
    k.dhcp = finish(f);
  }
  return k;
}

// How many frames holding `mark` reach `ep` within `within` (all of them
// read, raw: not test frames).
int rawWithMark(Endpoint& ep, const std::string& mark, Millis within = 300ms) {
  int n = 0;
  const auto until = Clock::now() + within;
  while (Clock::now() < until)
    if (auto f = ep.recvRaw(50ms))
      n += std::string(f->begin(), f->end()).find(mark) != std::string::npos;
  return n;
}

// On an uplink the host is a station of the segment, and its stack must get
// what it would get without vdev: an LLDP frame for the host is the host's
// alone (a bridge never forwards link-local group addresses); a gratuitous
// ARP, a Router Advertisement to all nodes and a broadcast DHCP reply are
// for the host AND the guests -- the host's stack gets them and vdevd a
// copy, which it switches; an ARP request for another address is the
// guests' only. Before, the program passed only frames for the host's MACs
// and ARP/NS for its addresses: every one of these was switched to the
// guests and never reached the host. A guest's own RA never reaches the host
// (its port is not one the host is behind), and a guest's LLDP is switched
// nowhere (drops.link_local). At the tc hook (the uplink's veth, as auto
// chooses) and at the XDP hook (a NIC's), where XDP passes the frame and the
// copy program at the device's tcx ingress hands vdevd its copy.
class UplinkFramesTest : public FaultsTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(UplinkFramesTest, EachFrameTypeReachesTheHostTheGuestsOrBoth) {
  Uplink up;
  Container c("C");
  const std::string port = up.veth.hostName();
  Vdevd d({"--port", port, "--port", c.port(), "--hook", port + "=" + GetParam()});
  ASSERT_EQ(rawPort(d.stats(), port).at("hook").get<std::string>(), GetParam());
  HostStack lldp(port, 0x88cc), arp(port, 0x0806), ip6(port, 0x86dd), ip4(port, 0x0800);
  HostStack guestIp6(c.port(), 0x86dd);
  PacketSocket peer(up.veth.peerName(), &up.net);
  peer.setLabel("neighbour");
  uint32_t peerIp = 0, otherIp = 0;
  ASSERT_EQ(::inet_pton(AF_INET, up.peerAddr.c_str(), &peerIp), 1);
  ASSERT_EQ(::inet_pton(AF_INET, "198.18.0.77", &otherIp), 1);
  const Stats s0 = d.stats();
  const KindFrames n = kindFrames(peer.mac(), peerIp, otherIp, "vdev-neighbour");
  for (const auto* f : {&n.lldp, &n.garp, &n.arpOther, &n.ra, &n.dhcp}) ASSERT_EQ(peer.sendRaw(*f), 0);
  // The container: every frame for the guests, once.
  const int atGuest = rawWithMark(*c.sock, "vdev-neighbour", 500ms);
  EXPECT_EQ(atGuest, 4) << "gratuitous ARP, other ARP, RA, DHCP reply; not LLDP";
  // The host's stack: LLDP, the gratuitous ARP, the RA, the DHCP reply.
  const auto deadline = Clock::now() + 3s;
  while (Clock::now() < deadline &&
         (lldp.count("vdev-neighbour") < 1 || arp.count("vdev-neighbour") < 1 || ip6.count("vdev-neighbour") < 1 ||
          ip4.count("vdev-neighbour") < 1))
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(lldp.count("vdev-neighbour"), 1) << "LLDP did not reach the host";
  EXPECT_EQ(arp.count("vdev-neighbour"), 1) << "the gratuitous ARP, and only it of the two ARP frames";
  EXPECT_EQ(ip6.count("vdev-neighbour"), 1) << "the Router Advertisement did not reach the host";
  EXPECT_EQ(ip4.count("vdev-neighbour"), 1) << "the broadcast DHCP reply did not reach the host";
  const Stats s1 = d.stats();
  EXPECT_EQ(s1.port(port)[stats::kProgPass] - s0.port(port)[stats::kProgPass], 4u) << s1.dump();
  EXPECT_EQ(s1.port(port)[stats::kRxPackets] - s0.port(port)[stats::kRxPackets], 4u)
      << "vdevd received the three copies and the other ARP\n" << s1.dump();
  EXPECT_EQ(s1.port(port).totalDrops(), 0u) << s1.dump();

  // From the guest: its RA goes to the neighbour, never to the host's stack;
  // its LLDP goes nowhere, counted.
  const Stats s2 = d.stats();
  const KindFrames g = kindFrames(c.mac(), 0, 0, "vdev-guest");
  ASSERT_EQ(c.sock->sendRaw(g.ra), 0);
  ASSERT_EQ(c.sock->sendRaw(g.lldp), 0);
  EXPECT_EQ(rawWithMark(peer, "vdev-guest", 500ms), 1) << "the guest's RA, switched; not its LLDP";
  const Stats s3 = d.statsUntil([&](const Stats& s) { return s.port(c.port())[stats::kDropLinkLocal] >= 1; }, 3s);
  EXPECT_EQ(s3.port(c.port())[stats::kDropLinkLocal] - s2.port(c.port())[stats::kDropLinkLocal], 1u) << s3.dump();
  EXPECT_EQ(guestIp6.count("vdev-guest"), 0) << "a guest's RA reached the host's stack";
  EXPECT_EQ(ip6.count("vdev-guest"), 0) << "a guest's RA reached the host's stack on the uplink";
  expectCleanStop(d);
}

// Storm control on an uplink's frames for the host and the guests (a
// gratuitous ARP): the host's stack gets every one, the guests' copy only
// what the port's broadcast limit lets through, the rest counted as
// drops.storm_bcast -- at the tc hook by the port's program before it
// clones, at the XDP hook by the XDP program, which tells the copy program
// at the device's tcx ingress in the frame's metadata. Before, the copy
// program copied every one (the XDP program passed them to the host
// unlimited). Exactly: the guest's frames + the drops = what was sent.
TEST_P(UplinkFramesTest, StormControlLimitsTheGuestsCopyNotTheHosts) {
  Uplink up;
  Container c("C");
  const std::string port = up.veth.hostName();
  Vdevd d({"--port", port, "--port", c.port(), "--hook", port + "=" + GetParam(), "--storm-bcast", "100"});
  ASSERT_EQ(rawPort(d.stats(), port).at("hook").get<std::string>(), GetParam());
  HostStack arp(port, 0x0806);
  PacketSocket peer(up.veth.peerName(), &up.net);
  peer.setLabel("neighbour");
  uint32_t peerIp = 0;
  ASSERT_EQ(::inet_pton(AF_INET, up.peerAddr.c_str(), &peerIp), 1);
  const KindFrames n = kindFrames(peer.mac(), peerIp, peerIp, "vdev-storm");
  const Stats s0 = d.stats();
  const auto dropped = [&](const Stats& s) { return s.port(port)[stats::kDropStormBcast] - s0.port(port)[stats::kDropStormBcast]; };
  constexpr int kN = 1000;
  const auto t0 = Clock::now();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(peer.sendRaw(n.garp), 0) << "frame " << i;
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const int atGuest = rawWithMark(*c.sock, "vdev-storm", 1000ms);
  const Stats s1 = d.statsUntil([&](const Stats& s) { return dropped(s) + uint64_t(atGuest) >= kN; }, 3s);
  EXPECT_EQ(dropped(s1) + uint64_t(atGuest), uint64_t(kN)) << s1.dump();
  EXPECT_GT(dropped(s1), 0u) << "the guests' copies were not limited";
  // 100 frames/s: the bucket's 10, the one that takes it into debt, the
  // rate over the time it took to send, and slack.
  EXPECT_GE(atGuest, 10);
  EXPECT_LE(double(atGuest), 11 + 100 * (secs + 0.5)) << "sent in " << secs << " s";
  const auto deadline = Clock::now() + 3s;
  while (Clock::now() < deadline && arp.count("vdev-storm") < kN) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(arp.count("vdev-storm"), kN) << "the host's stack must get every one";
  std::cout << "  " << GetParam() << ": " << kN << " gratuitous ARPs in " << secs << " s: host " << arp.count("vdev-storm")
            << ", guest " << atGuest << ", storm_bcast " << dropped(s1) << "\n";
  ASSERT_TRUE(expectCleanStop(d));
  // vdevd's last statistics come after it detached every program: the
  // drops the copy program counted (at XDP, in its own map) stay the port's.
  EXPECT_GE(d.finalStats().port(port)[stats::kDropStormBcast] - s0.port(port)[stats::kDropStormBcast], dropped(s1))
      << d.finalStats().dump();
}

INSTANTIATE_TEST_SUITE_P(Hooks, UplinkFramesTest, ::testing::Values("tc", "xdp"),
                         [](const auto& info) { return std::string(info.param); });

// ---------------------------------------------------------------------------
// 5. A completion ring that stops returning frames

// Makes the kernel hold frames sent to a container and never complete them:
// an ingress redirect on the container's interface to an ifb device whose
// token bucket (8 bit/s, primed with a frame it will not send for half an
// hour) lets nothing out. A veth does not orphan the skbs it forwards, so
// each keeps its AF_XDP destructor: the sending socket's completion ring
// stops returning those frames, as it would for a NIC whose TX completions
// stop. (A tap cannot do this: tun_net_xmit orphans every skb, completing it
// at once; a stalled VM only fills the tap's queue.) A packet socket on the
// interface still sees each frame once, before the ingress hook.
//
// release() frees the held skbs; the destructor calls it, pass or fail: until
// then the kernel cannot free the veth (the AF_XDP pool holds it) and
// deleting it would hang.
class CompletionStall {
 public:
  CompletionStall(const Netns& ns, std::string ifname) : ns_(ns), if_(std::move(ifname)), ifb_(uniqueName('i')) {
    ns_.ip("link add " + ifb_ + " type ifb");
    try {
      ns_.ip("link set dev " + ifb_ + " up");
      hold();
    } catch (...) {
      release();
      tryRun("ip -n " + ns_.name() + " link del dev " + ifb_);
      throw;
    }
  }
  ~CompletionStall() {
    release();
    tryRun("ip -n " + ns_.name() + " link del dev " + ifb_);
  }
  CompletionStall(const CompletionStall&) = delete;
  CompletionStall& operator=(const CompletionStall&) = delete;

  void hold() {
    tc("qdisc add dev " + ifb_ + " root tbf rate 8bit burst 1600 limit 10000000");
    // The first frame takes the initial tokens; the second waits for 1514
    // more (25 minutes at 8 bit/s), and everything queues behind it.
    {
      PacketSocket junk(ifb_, &ns_, uniqueMac());
      for (int i = 0; i < 2; ++i)
        if (const int rc = junk.sendRaw(rawFrame(tf::kBroadcast, junk.mac(), 0x88b5, 1514)); rc < 0)
          throw HarnessError("prime " + ifb_ + ": " + std::strerror(-rc));
    }
    if (!waitUntil([&] { return queue().qlen == 1; }, 2s))
      throw HarnessError("the token bucket on " + ifb_ + " did not hold its primer: " + tcShow());
    tc("qdisc add dev " + if_ + " ingress");
    tc("filter add dev " + if_ + " parent ffff: protocol all u32 match u32 0 0 action mirred egress redirect dev " +
       ifb_);
  }
  // Removes the redirect, then frees every held skb: their completions come
  // now, to whichever socket sent them.
  void release() {
    tryRun("tc -n " + ns_.name() + " qdisc del dev " + if_ + " ingress");
    tryRun("tc -n " + ns_.name() + " qdisc del dev " + ifb_ + " root");
  }

  struct Queue {
    uint64_t qlen = 0;     // held, the primer included
    uint64_t packets = 0;  // let out (the first primer)
    uint64_t drops = 0;
  };
  Queue queue() const {
    Queue q;
    const Json all = Json::parse(tcShow());
    for (const Json& j : all)
      if (j.at("kind").get<std::string>() == "tbf") {
        q.qlen = j.at("qlen").get<uint64_t>();
        q.packets = j.at("packets").get<uint64_t>();
        q.drops = j.at("drops").get<uint64_t>();
      }
    return q;
  }

 private:
  void tc(const std::string& args) const { run("tc -n " + ns_.name() + " " + args); }
  std::string tcShow() const { return run("tc -n " + ns_.name() + " -s -j qdisc show dev " + ifb_); }

  const Netns& ns_;
  std::string if_, ifb_;
};

class StalledCompletionTest : public FaultsTest, public ::testing::WithParamInterface<const char*> {};

// The kernel stops completing frames vdevd sent to container S (see
// CompletionStall) while A sends to S and B to A. vdevd neither waits for
// the completions nor loses track of the frames: the pool adds up with them
// in "kernel_tx" (exactly the frames the kernel holds), S's TX ring fills and
// the rest is dropped and counted (tx_ring_full), and B -> A keeps flowing
// without a loss. When S's link goes down, vdevd takes every frame back --
// the ones the kernel still holds included -- without a completion; when the
// stall ends and the link comes back, frames flow again; and vdevd stopped
// during a stall exits at once with every frame back. Every frame of A's is
// delivered or counted, once.
TEST_P(StalledCompletionTest, VfCompletionRingThatStopsReturningFramesNeitherHangsNorLeaks) {
  Container a("A"), b("B"), s("S");
  Vdevd d({"--port", a.port(), "--port", b.port(), "--port", s.port(), "--completion", GetParam()});
  const Endpoints all = {a.sock.get(), b.sock.get(), s.sock.get()};
  learnAll(all, 1);
  std::unique_ptr<CompletionStall> stall;
  try {
    stall = std::make_unique<CompletionStall>(*s.ns, s.veth->peerName());
  } catch (const HarnessError& e) {
    GTEST_SKIP() << "cannot stall TX completions here (needs ifb, tbf, u32, mirred): " << e.what();
  }
  const PortView pA = viewOf(a), pB = viewOf(b), pS = viewOf(s);
  const Stats s0 = d.stats();
  std::vector<TrackedFlow> bToA = {{"B -> A", 12, pB, pA, sample(s0, pB), sample(s0, pA)}};
  const PortSample a0 = sample(s0, pA), sS0 = sample(s0, pS);

  Traffic traffic;
  traffic.addFlow(11, a.sock.get(), s.mac()).perTick = 3;
  traffic.addFlow(12, b.sock.get(), a.mac());
  for (Endpoint* e : all) traffic.addReader(e);
  traffic.set({11, 12}, true);
  traffic.start();
  // More than S's TX ring (1024) and what the kernel takes before it stops.
  EXPECT_TRUE(traffic.waitFor([&] { return traffic.flow(11).sent >= 2500; }, 20s));
  uint64_t bToAMid = 0;
  {
    auto lk = traffic.hold();
    traffic.set({11}, false);
    bToAMid = a.sock->rx().count(12);
  }
  EXPECT_TRUE(traffic.waitFor([&] { return a.sock->rx().count(12) >= bToAMid + 300; }, 10s))
      << "B -> A stalled while S's completions did";
  {
    auto lk = traffic.hold();
    traffic.set({12}, false);
  }
  for (const FlowLedger& l : settleLedgers(d, traffic, bToA)) {
    expectLedger(l);
    EXPECT_EQ(l.delivered, l.sent) << l.describe();
  }
  traffic.stop();
  ASSERT_EQ(traffic.error(), "");
  const uint64_t sent = traffic.flow(11).sent;

  // The stall, as vdevd and the kernel see it, once every frame of A's is
  // accounted for: received by vdevd (or dropped on the way in), decided
  // (transmitted to S or dropped), and each one transmitted on S's TX ring
  // or taken by the kernel, which holds it and S has seen it. Nothing moves
  // after that: the kernel takes nothing more from the ring while it holds
  // the socket's send buffer.
  Stats s1;
  CompletionStall::Queue q1;
  uint64_t got = 0;
  const bool accounted = pumpUntil(all, [&] {
    s1 = d.stats();
    q1 = stall->queue();
    got = s.sock->rx().count(11);
    const PortSample at = sample(s1, pA), atS = sample(s1, pS);
    const uint64_t held = s1.pool[stats::kPoolKernelTx];
    return sent == (at.rx - a0.rx) + (at.inKernel - a0.inKernel) &&
           at.rx - a0.rx == (atS.tx - sS0.tx) + (atS.dest - sS0.dest) + (at.ingress - a0.ingress) &&
           atS.tx - sS0.tx == got + s1.pool[stats::kPoolTxRing] && got == held && held + 1 == q1.qlen;
  }, 10s);
  EXPECT_TRUE(accounted) << "A's frames not all accounted for within 10 s";
  const PortSample a1 = sample(s1, pA), sS1 = sample(s1, pS);
  const uint64_t kernelTx = s1.pool[stats::kPoolKernelTx], txRing = s1.pool[stats::kPoolTxRing];
  {
    SCOPED_TRACE(s1.dump());
    EXPECT_EQ(q1.packets, 1u) << "the token bucket let test frames out";
    EXPECT_GT(kernelTx, 0u) << "no frame is waiting for its completion: the stall did not happen";
    EXPECT_EQ(kernelTx, q1.qlen - 1) << "frames out of the pool in the kernel must be the skbs it holds";
    EXPECT_EQ(got, kernelTx) << "S's interface saw every frame the kernel took from the TX ring";
    EXPECT_EQ(s.sock->rx().duplicates(11), 0u);
    EXPECT_EQ(s1.port(s.port())[stats::kTxOutstanding], kernelTx + txRing + s1.pool[stats::kPoolCompRing]);
    EXPECT_GT(sS1.dest - sS0.dest, 0u) << "S's TX ring never filled: the stall was too short to test drops";
    EXPECT_EQ(sent, (a1.rx - a0.rx) + (a1.inKernel - a0.inKernel));
    EXPECT_EQ(a1.rx - a0.rx, (sS1.tx - sS0.tx) + (sS1.dest - sS0.dest) + (a1.ingress - a0.ingress));
    EXPECT_EQ(sS1.tx - sS0.tx, got + txRing) << "transmitted = seen by S + still on S's TX ring";
    EXPECT_EQ(s1.pool.reported_sum, s1.pool.total());
  }
  std::cout << "  [" << GetParam() << "] A -> stalled S: sent " << sent << "; held by the kernel " << kernelTx
            << ", on the TX ring " << txRing << ", dropped " << (sS1.dest - sS0.dest) << " "
            << "(tx_ring_full " << dropOf(sS1, stats::kDropTxRingFull) - dropOf(sS0, stats::kDropTxRingFull) << ")\n";

  // It persists, and vdevd does not wait for it: a second later nothing has
  // changed for S, and B -> A is exact. B's marker goes to A alone: a
  // broadcast would land on S's stalled TX ring and change S's counts; B ->
  // A takes vdevd's path like the frames before it (no fast path to a
  // container without NAPI).
  sendMixed(*b.sock, a.mac(), 20, 100);
  expectFlow(all, 20, {{a.sock.get(), 100}}, {Marker{.to = Endpoints{a.sock.get()}, .dst = a.mac()}});
  const Stats s2 = d.stats();
  EXPECT_EQ(s2.pool[stats::kPoolKernelTx], kernelTx) << s2.dump();
  EXPECT_EQ(s2.port(s.port())[stats::kTxOutstanding], s1.port(s.port())[stats::kTxOutstanding]) << s2.dump();

  // S's link goes down: vdevd takes the frames back without a completion.
  s.ns->ip("link set dev " + s.veth->peerName() + " down");
  const Stats s3 = waitLive(d, {s.port()}, false, 3s);
  const PortSample a3 = sample(s3, pA), sS3 = sample(s3, pS);
  {
    SCOPED_TRACE(s3.dump());
    EXPECT_TRUE(poolIdle(s3)) << "frames the kernel holds must come back when the port goes down";
    EXPECT_EQ(s3.pool[stats::kPoolKernelTx] + s3.pool[stats::kPoolTxRing], 0u);
    EXPECT_EQ(s3.port(s.port())[stats::kTxOutstanding], 0u);
    EXPECT_EQ(dropOf(sS3, stats::kDropPortDown) - dropOf(sS1, stats::kDropPortDown), txRing)
        << "the frames left on S's TX ring are counted as port_down";
    // Every frame of A's: delivered (seen by S), or dropped and counted, once.
    EXPECT_EQ(sent, got + (sS3.dest - sS0.dest) + (a3.inKernel - a0.inKernel) + (a3.ingress - a0.ingress));
    EXPECT_EQ(a3.rx - a0.rx, (sS3.tx - sS0.tx) + (sS3.dest - sS0.dest) + (a3.ingress - a0.ingress))
        << "vdevd: rx(A) = tx(S) + drops charged to S: a frame left on the TX ring is counted both as "
           "transmitted (when it was put there) and as port_down";
  }

  // The stall ends (the kernel frees what it held: late completions for a
  // socket vdevd has closed) and S's link comes back: frames flow again.
  stall->release();
  s.ns->ip("link set dev " + s.veth->peerName() + " up");
  waitLive(d, {s.port()});
  sendMixed(*a.sock, s.mac(), 30, 100);
  expectFlow(all, 30, {{s.sock.get(), 100}});
  const Stats s4 = idleStats(d);
  EXPECT_TRUE(poolIdle(s4)) << s4.dump();

  // Stalled again, and vdevd is stopped meanwhile: it exits at once, every
  // frame back, without the completions.
  stall->hold();
  sendMixed(*a.sock, s.mac(), 40, 500);
  const Stats held = d.statsUntil([&](const Stats& st) { return st.pool[stats::kPoolKernelTx] > 0; }, 10s);
  EXPECT_GT(held.pool[stats::kPoolKernelTx], 0u) << held.dump();
  const auto stopAt = Clock::now();
  EXPECT_EQ(d.stop(), 0) << d.logs();
  EXPECT_LT(Clock::now() - stopAt, 3s) << "vdevd waited for completions that never come";
  const Stats fin = d.finalStats();
  EXPECT_EQ(fin.pool.free(), fin.pool.total()) << fin.dump();
}

INSTANTIATE_TEST_SUITE_P(Completion, StalledCompletionTest, ::testing::Values("eager", "lazy:64"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param) == "eager" ? std::string("Eager") : std::string("Lazy64");
                         });

}  // namespace
}  // namespace vdev::e2e
