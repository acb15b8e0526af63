// datapath.cpp - see datapath.h.
#include "datapath.h"

#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <vector>

#include "testkit/files.h"
#include "testkit/process.h"
#include "testkit/stats.h"

namespace vdev::bench {

namespace {

// A started child's CPU seconds (utime + stime), or nothing.
std::optional<double> childCpuSeconds(const std::optional<testkit::Child>& c) {
  if (!c) return std::nullopt;
  auto s = taskCpuSeconds(c->pid());
  if (!s) return std::nullopt;
  return *s;
}

// ---- vdevd ----------------------------------------------------------------

// vdevd as VdevdSpec says, started through `ip netns exec` (which also
// mounts that namespace's sysfs for it) as a testkit::Child. `ip netns exec`
// execs the command in place, so the child pid is vdevd's.
class VdevdDatapath : public Datapath {
 public:
  VdevdDatapath(VdevdSpec spec, std::string path, std::string statsPath, std::string logPath)
      : spec_(std::move(spec)),
        path_(std::move(path)),
        statsPath_(std::move(statsPath)),
        logPath_(std::move(logPath)) {}
  ~VdevdDatapath() override { (void)stop(); }

  std::string name() const override { return spec_.kind; }

  Status start() override {
    // The kernel lets go of a closed AF_XDP socket's queue in a work item
    // of its own (the buffer pool's deferred release, which takes the
    // rtnl lock), after the previous vdevd has exited: on a busy machine
    // the next vdevd's bind can still find the queue taken (EBUSY). Such
    // a start is tried again for up to 3 s; any other failure is final.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (;;) {
      Status st = startOnce();
      if (st.ok() || st.error().message().find("another AF_XDP socket is bound to this queue") == std::string::npos ||
          std::chrono::steady_clock::now() >= deadline || stopRequested())
        return st;
      child_.reset();
      usleep(50 * 1000);
    }
  }

  Status startOnce() {
    std::vector<std::string> args{"ip", "netns", "exec", spec_.ns->name(), path_, "--stats-json", statsPath_};
    args.insert(args.end(), spec_.args.begin(), spec_.args.end());
    logInfo("+ %s  (cpu %d)", testkit::commandLine(args).c_str(), spec_.cpu);
    unlink(statsPath_.c_str());

    // Pinned to spec's CPU, at SCHED_FIFO spec.prio (inherited through
    // exec); if vdev-bench dies, vdevd gets SIGTERM and cleans up after
    // itself. Its output goes to a file in the work directory, which it can
    // never block on.
    auto child = testkit::Child::start(
        {.argv = args, .cpu = spec_.cpu, .fifo_prio = spec_.prio, .term_with_parent = true},
        {.stdout_path = logPath_});
    if (!child) return child.error();
    child_.emplace(std::move(*child));

    // "vdevd: ready" (docs/vdevd.md), within spec_.readyTimeout.
    Status ready = child_->waitForLine("vdevd: ready", spec_.readyTimeout, [] { return stopRequested(); });
    if (!ready.ok()) {
      if (ready.error().err == EINTR) return Error{EINTR, "waiting for vdevd"};
      if (ready.error().err == ECHILD)
        return Error{0, "vdevd exited before it was ready (" + childExitText(child_->status().value_or(-1)) + ")" +
                            childOutputTail(logPath_, "vdevd")};
      return Error{0, "vdevd did not print 'vdevd: ready' within " + std::to_string(spec_.readyTimeout.count()) +
                          " s" + childOutputTail(logPath_, "vdevd")};
    }
    return {};
  }

  Status stop() override {
    if (!child_) return {};
    (void)child_->signal(SIGTERM);
    std::optional<int> st = child_->wait(spec_.exitTimeout);  // drain + detach + leak check
    const bool exited = st.has_value();
    if (!exited) {
      logWarn("vdevd (pid %d) did not exit %lld s after SIGTERM; killing it", child_->pid(),
              static_cast<long long>(spec_.exitTimeout.count()));
      (void)child_->signal(SIGKILL);
      st = child_->wait(std::chrono::seconds(30));
    }
    const std::string problemTail = childOutputTail(logPath_, "vdevd");
    if (verbose())
      for (const auto& line : childOutputLines(logPath_, SIZE_MAX)) logInfo("vdevd: %s", line.c_str());
    child_.reset();
    auto text = testkit::readFile(statsPath_);
    stats_ = text ? *text : "";
    while (!stats_.empty() && isspace(static_cast<unsigned char>(stats_.back()))) stats_.pop_back();
    if (stats_.empty() || stats_[0] != '{') stats_.clear();
    unlink(statsPath_.c_str());
    unlink(logPath_.c_str());
    if (!exited) return Error{0, "vdevd did not exit after SIGTERM"};
    if (*st != 0)
      return Error{0, "vdevd " + childExitText(*st) + (*st == 1 ? " (frame leak reported)" : "") + problemTail};
    return {};
  }

  std::optional<double> processCpuSeconds() const override { return childCpuSeconds(child_); }

  std::string statsJson() const override { return stats_; }
  bool transmitsXdpFrames() const override { return spec_.transmitsXdpFrames; }
  pid_t pid() const override { return child_ ? child_->pid() : 0; }
  std::string liveStatsJson() override {
    if (!child_) return "";
    auto text = testkit::requestStats(*child_, statsPath_, std::chrono::milliseconds(200));
    return text ? *text : "";
  }
  std::string describe() const override { return spec_.describe; }

 private:
  VdevdSpec spec_;
  std::string path_, statsPath_, logPath_;
  std::optional<testkit::Child> child_;  // while started
  std::string stats_;
};

// The vdevd datapaths of the XDP-frame scenarios: vdevd in the DUT
// namespace on the topology's ports, pinned to the DUT CPU.
// kind: "vdevd" (xconnect), "vdevd-switch" (--no-fast-path), "vdevd-fast"
// (switch with the kernel fast path), "vdevd-rx-off" (vdevd-fast with
// --no-fast-rx on the ingress port: what the generator sends goes through
// vdevd's thread, what the sink answers may take the fast path), or
// "vdevd-spin" (the
// scenario's mode with --idle-spin-us at its maximum, 1 s: the datapath
// thread never sleeps while frames come more often than once a second, the
// nearest vdevd has to busy polling).
VdevdSpec vdevdSpecFor(const std::string& kind, const Topology& topo, const Options& opt) {
  constexpr unsigned kSpinUs = 1'000'000;  // vdevd's maximum
  // The kernel fast path on (required): vdevd-fast and vdevd-rx-off.
  const bool fastPath = kind == "vdevd-fast" || kind == "vdevd-rx-off";
  const bool threePorts = topo.ports().size() > 2 || !topo.idlePorts().empty();
  const std::string mode = kind == "vdevd-switch" || fastPath || threePorts ? "switch" : "xconnect";
  VdevdSpec s;
  s.kind = kind;
  s.ns = &topo.dutNs();
  s.cpu = opt.dutCpu;
  s.prio = opt.dpPrio;
  // Learned unicast leaves through the devmap (ndo_xdp_xmit): the sink veth
  // needs NAPI, which vdevd gives the container end of every veth it creates.
  s.transmitsXdpFrames = fastPath;
  auto& args = s.args;
  for (const auto& p : topo.ports()) {
    args.push_back("--port");
    args.push_back(p);
  }
  for (const auto& p : topo.idlePorts()) {
    args.push_back("--port");
    args.push_back(p);
  }
  // The host's control socket and saved ports are not ours.
  for (const char* a : {"--mode", mode.c_str(), "--no-socket", "--no-state"}) args.emplace_back(a);
  if (kind == "vdevd-spin") {
    args.emplace_back("--idle-spin-us");
    args.emplace_back(std::to_string(kSpinUs));
  }
  // vdevd-fast requires the kernel fast path; the others measure vdevd's
  // own (AF_XDP) path, so in switch mode they turn it off (it is on by
  // default, and a tap always takes redirected frames).
  if (fastPath) args.emplace_back("--fast-path");
  else if (mode == "switch") args.emplace_back("--no-fast-path");
  if (kind == "vdevd-rx-off") {
    args.emplace_back("--no-fast-rx");
    args.push_back(topo.portA());
  }
  // The generator's frames are XDP frames, a NIC-like source: the ports
  // take vdevd's XDP hook (the skb path would see none of them: a veth
  // without NAPI drops redirected frames). --vdevd-arg --default-hook=...
  // comes after and wins.
  args.emplace_back("--default-hook");
  args.emplace_back("xdp");
  for (const auto& a : opt.vdevdArgs) args.push_back(a);

  s.describe = "vdevd --mode " + mode;
  if (!topo.idlePorts().empty()) s.describe += " (+" + std::to_string(topo.idlePorts().size()) + " idle ports)";
  // Attaching hundreds of ports takes seconds.
  if (topo.idlePorts().size() > 16) s.readyTimeout = std::chrono::seconds(120);
  if (kind == "vdevd-spin") s.describe += " --idle-spin-us " + std::to_string(kSpinUs);
  if (fastPath) s.describe += " --fast-path";
  else if (mode == "switch") s.describe += " --no-fast-path";
  if (kind == "vdevd-rx-off") s.describe += " --no-fast-rx " + topo.portA();
  if (opt.dpPrio) s.describe += " (SCHED_FIFO " + std::to_string(opt.dpPrio) + ")";
  for (const auto& a : opt.vdevdArgs) s.describe += " " + a;
  return s;
}

// ---- Linux bridge ---------------------------------------------------------

class BridgeDatapath : public Datapath {
 public:
  BridgeDatapath(Topology& t, const Options& o) : topo_(t), opt_(o) {}
  ~BridgeDatapath() override { (void)stop(); }
  std::string name() const override { return "bridge"; }
  std::string describe() const override {
    return topo_.scenario() == Scenario::kSwitch ? "Linux bridge, learning" : "Linux bridge, static FDB entry for the sink";
  }

  Status start() override {
    const std::string& ns = topo_.dutNs().name();
    const std::string& br = topo_.bridgeName();
    // STP off: ports forward at once. Ageing 300 s (the unit is 1/100 s).
    VB_TRY(runCommand({"ip", "-n", ns, "link", "add", br, "type", "bridge", "stp_state", "0",
                       "ageing_time", "30000", "mcast_snooping", "0"}));
    created_ = true;
    for (const auto& p : topo_.ports()) VB_TRY(runCommand({"ip", "-n", ns, "link", "set", p, "master", br}));
    for (const auto& p : topo_.idlePorts()) VB_TRY(runCommand({"ip", "-n", ns, "link", "set", p, "master", br}));
    VB_TRY(runCommand({"ip", "-n", ns, "link", "set", br, "up"}));
    // A static FDB entry for the sink's MAC: forwarding, not flooding, from
    // the first frame (and no dependence on the learning frames arriving).
    // The switch scenario is about learning: no static entry there.
    if (topo_.scenario() != Scenario::kSwitch)
      VB_TRY(runCommand({"bridge", "-n", ns, "fdb", "replace", formatMac(topo_.sinkMac()), "dev",
                         topo_.portB(), "master", "static"}));
    // Frames reach an ingress veth by veth_xdp_xmit(), which only delivers
    // when that veth has NAPI, i.e. an XDP program: XDP_PASS then builds an
    // skb and the bridge gets it as from any NIC. A tap's frames come from
    // write(): nothing needed.
    if (topo_.portAIsTap()) return {};
    auto skel = loadFwd();
    if (!skel) return skel.error();
    skel_ = std::move(skel.value());
    auto link = XdpLink::attach(topo_.dutNs(), topo_.portA(), fwdPassProgram(skel_.get()));
    if (!link) return link.error();
    link_ = std::make_unique<XdpLink>(std::move(link.value()));
    return {};
  }

  Status stop() override {
    link_.reset();
    skel_.reset();
    if (!created_) return {};
    created_ = false;
    // Deleting the bridge releases both ports (they stay up).
    return runCommand({"ip", "-n", topo_.dutNs().name(), "link", "del", topo_.bridgeName()});
  }

 private:
  Topology& topo_;
  const Options& opt_;
  bool created_ = false;
  FwdSkel skel_;
  std::unique_ptr<XdpLink> link_;
};

// ---- kernel XDP redirect ----------------------------------------------------

class XdpRedirectDatapath : public Datapath {
 public:
  explicit XdpRedirectDatapath(Topology& t) : topo_(t) {}
  ~XdpRedirectDatapath() override { (void)stop(); }
  std::string name() const override { return "xdp-redirect"; }
  std::string describe() const override { return "XDP devmap redirect A->B, and B->A for the replies"; }
  bool transmitsXdpFrames() const override { return true; }

  Status start() override {
    if (topo_.ports().size() != 2)
      return Error{0, "xdp-redirect connects exactly two ports (not a learning switch)"};
    auto skel = loadFwd();
    if (!skel) return skel.error();
    skel_ = std::move(skel.value());
    VB_TRY(fwdSetEgress(skel_.get(), topo_.dutNs(), topo_.portB(), 0));
    VB_TRY(fwdSetEgress(skel_.get(), topo_.dutNs(), topo_.portA(), 1));
    auto link = XdpLink::attach(topo_.dutNs(), topo_.portA(), fwdRedirectProgram(skel_.get()));
    if (!link) return link.error();
    link_ = std::make_unique<XdpLink>(std::move(link.value()));
    // The way back (latency probes' replies). Nothing else comes back, so
    // the measured direction is unaffected: an XDP program on B changes
    // only what B receives.
    auto rev = XdpLink::attach(topo_.dutNs(), topo_.portB(), fwdRedirectRevProgram(skel_.get()));
    if (!rev) return rev.error();
    revLink_ = std::make_unique<XdpLink>(std::move(rev.value()));
    return {};
  }

  Status stop() override {
    revLink_.reset();
    link_.reset();
    skel_.reset();
    return {};
  }

 private:
  Topology& topo_;
  FwdSkel skel_;
  std::unique_ptr<XdpLink> link_, revLink_;
};

// ---- DPDK's AF_XDP PMD ------------------------------------------------------

// dpdk-testpmd (Debian: dpdk-dev, with librte-net-af-xdp23) forwarding
// between A and B through DPDK's AF_XDP poll-mode driver, io mode (every
// frame from one port out of the other, as vdevd --mode xconnect): another
// userspace AF_XDP datapath, in copy mode on veths and taps as vdevd. Its
// forwarding lcore polls without sleeping on the datapath CPU (DPDK's model;
// its CPU column is a whole core whatever the load); the main lcore, which
// only waits for a signal, on the generator CPU. Without hugepages
// (--no-huge): 16,384 mbufs in 256 MiB of ordinary memory.
class DpdkAfXdpDatapath : public Datapath {
 public:
  DpdkAfXdpDatapath(Topology& t, const Options& o, std::string path, std::string logPath)
      : topo_(t), opt_(o), path_(std::move(path)), logPath_(std::move(logPath)) {}
  ~DpdkAfXdpDatapath() override { (void)stop(); }
  std::string name() const override { return "dpdk-af-xdp"; }
  std::string describe() const override { return "dpdk-testpmd, AF_XDP PMD on A and B, io forwarding"; }

  Status start() override {
    const std::string prefix = topo_.dutNs().name();
    std::vector<std::string> args{"ip", "netns", "exec", topo_.dutNs().name(), path_, "--no-huge", "-m", "256",
                                  "--no-pci", "--file-prefix", prefix, "-l",
                                  std::to_string(opt_.genCpu) + "," + std::to_string(opt_.dutCpu),
                                  "--main-lcore", std::to_string(opt_.genCpu),
                                  "--vdev", "net_af_xdp0,iface=" + topo_.portA(),
                                  "--vdev", "net_af_xdp1,iface=" + topo_.portB(),
                                  "--", "--forward-mode=io", "--auto-start", "--total-num-mbufs=16384",
                                  // Statistics only at exit: the main lcore sleeps until a signal.
                                  "--stats-period", "1000000"};
    logInfo("+ %s", testkit::commandLine(args).c_str());
    auto child = testkit::Child::start({.argv = args, .term_with_parent = true}, {.stdout_path = logPath_});
    if (!child) return child.error();
    child_.emplace(std::move(*child));
    // testpmd says this once both ports are started and the lcore polls.
    Status ready = child_->waitForLine("No commandline core given, start packet forwarding", std::chrono::seconds(30),
                                       [] { return stopRequested(); });
    if (!ready.ok()) {
      const std::string tail = childOutputTail(logPath_, "dpdk-testpmd");
      (void)stop();
      return Error{0, "dpdk-testpmd did not start forwarding" + tail};
    }
    return {};
  }

  Status stop() override {
    if (!child_) return {};
    // testpmd stops its ports and exits on SIGTERM, then re-raises it.
    std::optional<int> st = stopChild(*child_, std::chrono::seconds(15), "dpdk-testpmd");
    child_.reset();
    unlink(logPath_.c_str());
    if (!st) return Error{0, "dpdk-testpmd did not exit"};
    if (*st != 0 && *st != 128 + SIGTERM) return Error{0, "dpdk-testpmd " + childExitText(*st)};
    return {};
  }

  std::optional<double> processCpuSeconds() const override { return childCpuSeconds(child_); }
  pid_t pid() const override { return child_ ? child_->pid() : 0; }

 private:
  Topology& topo_;
  const Options& opt_;
  std::string path_, logPath_;
  std::optional<testkit::Child> child_;  // while started
};

// ---- Open vSwitch, AF_XDP ports ----------------------------------------------

// Open vSwitch's userspace datapath (datapath_type=netdev) with A and B as
// afxdp ports (Debian's openvswitch-switch is built with them), and two
// flows joining A and B as vdevd --mode xconnect does. ovsdb-server and
// ovs-vswitchd run in the DUT namespace from a private directory (no host
// service is touched); the PMD thread that polls both ports is on the
// datapath CPU (pmd-cpu-mask), and polls without sleeping (a whole core).
class OvsAfXdpDatapath : public Datapath {
 public:
  OvsAfXdpDatapath(Topology& t, const Options& o, std::string vswitchd, std::string dir)
      : topo_(t), opt_(o), vswitchd_(std::move(vswitchd)), dir_(std::move(dir)) {}
  ~OvsAfXdpDatapath() override { (void)stop(); }
  std::string name() const override { return kOvsAfXdp; }
  std::string describe() const override {
    return "ovs-vswitchd, datapath_type=netdev, afxdp ports, flows A<->B";
  }

  Status start() override {
    const std::string ns = topo_.dutNs().name();
    const std::string db = dir_ + "/conf.db", sock = "unix:" + dir_ + "/db.sock";
    if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) return Error{errno, "mkdir " + dir_};
    made_ = true;
    VB_TRY(runCommand({"ovsdb-tool", "create", db, kOvsSchema}));
    // OVS_RUNDIR: where both put their pid files and ovs-vswitchd the
    // bridge's OpenFlow socket (BRIDGE.mgmt).
    const std::string rundir = "OVS_RUNDIR=" + dir_, logdir = "OVS_LOGDIR=" + dir_, dbdir = "OVS_DBDIR=" + dir_;
    auto dbs = testkit::Child::start({.argv = {"ip", "netns", "exec", ns, "env", rundir, logdir, dbdir, "ovsdb-server", db,
                                               "--remote=punix:" + dir_ + "/db.sock", "--unixctl=" + dir_ + "/db.ctl",
                                               "--log-file=" + dir_ + "/ovsdb-server.log"},
                                      .term_with_parent = true},
                                     {.stdout_path = dir_ + "/ovsdb-server.out"});
    if (!dbs) return dbs.error();
    dbServer_.emplace(std::move(*dbs));
    // ovs-vsctl does not wait for the socket to exist.
    for (int i = 0; ::access((dir_ + "/db.sock").c_str(), F_OK) != 0; ++i)
      if (i == 1000 || stopRequested() || dbServer_->wait(std::chrono::milliseconds(10)))
        return Error{0, "ovsdb-server did not open its socket" +
                            childOutputTail(dir_ + "/ovsdb-server.log", "ovsdb-server")};
    // ovs-vsctl waits for the socket (--timeout), then for ovs-vswitchd
    // to have applied each change (unless --no-wait).
    VB_TRY(vsctl({"--no-wait", "init"}));
    VB_TRY(vsctl({"--no-wait", "set", "Open_vSwitch", ".",
                  "other_config:pmd-cpu-mask=" + hexMask(opt_.dutCpu)}));
    auto vsd = testkit::Child::start({.argv = {"ip", "netns", "exec", ns, "env", rundir, logdir, dbdir, vswitchd_, sock,
                                               "--unixctl=" + dir_ + "/vswitchd.ctl",
                                               "--log-file=" + dir_ + "/ovs-vswitchd.log"},
                                      .term_with_parent = true},
                                     {.stdout_path = dir_ + "/ovs-vswitchd.out"});
    if (!vsd) return vsd.error();
    vswitchdChild_.emplace(std::move(*vsd));
    const std::string br = topo_.bridgeName();
    VB_TRY(vsctl({"add-br", br, "--", "set", "bridge", br, "datapath_type=netdev"}));
    for (const auto& p : {topo_.portA(), topo_.portB()})
      VB_TRY(vsctl({"add-port", br, p, "--", "set", "interface", p, "type=afxdp"}));
    for (const auto& p : {topo_.portA(), topo_.portB()}) {
      auto err = vsctlOut({"get", "interface", p, "error"});
      if (!err) return err.error();
      if (*err != "[]" && !err->empty()) return Error{0, "ovs-vswitchd: " + p + ": " + *err + logTail()};
    }
    VB_TRY(ofctl({"del-flows", br}));
    VB_TRY(ofctl({"add-flow", br, "in_port=" + topo_.portA() + ",actions=output:" + topo_.portB()}));
    VB_TRY(ofctl({"add-flow", br, "in_port=" + topo_.portB() + ",actions=output:" + topo_.portA()}));
    return {};
  }

  Status stop() override {
    Status first;
    if (vswitchdChild_) {
      (void)vsctl({"--if-exists", "del-br", topo_.bridgeName()});
      std::optional<int> st = stopChild(*vswitchdChild_, std::chrono::seconds(15), "ovs-vswitchd");
      vswitchdChild_.reset();
      if (!st) first = Error{0, "ovs-vswitchd did not exit"};
    }
    if (dbServer_) {
      (void)stopChild(*dbServer_, std::chrono::seconds(15), "ovsdb-server");
      dbServer_.reset();
    }
    if (made_) {
      made_ = false;
      (void)runCommand({"rm", "-rf", dir_});
    }
    return first;
  }

  std::optional<double> processCpuSeconds() const override { return childCpuSeconds(vswitchdChild_); }
  pid_t pid() const override { return vswitchdChild_ ? vswitchdChild_->pid() : 0; }

 private:
  static std::string hexMask(int cpu) {
    char b[32];
    snprintf(b, sizeof b, "%llx", 1ull << cpu);
    return b;
  }
  Status vsctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"ovs-vsctl", "--timeout=30", "--db=unix:" + dir_ + "/db.sock"});
    return runCommand(args);
  }
  Result<std::string> vsctlOut(std::vector<std::string> args) {
    args.insert(args.begin(), {"ovs-vsctl", "--timeout=30", "--db=unix:" + dir_ + "/db.sock"});
    auto r = testkit::runCaptured({.argv = args});
    if (!r) return r.error();
    if (!r->ok()) return Error{0, testkit::commandLine(args) + ": " + r->err};
    std::string out = r->out;
    while (!out.empty() && isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
    return out;
  }
  Status ofctl(std::vector<std::string> args) {
    // ovs-ofctl reaches the bridge through ovs-vswitchd's socket in dir_.
    args.insert(args.begin(), "ovs-ofctl");
    args[2] = "unix:" + dir_ + "/" + args[2] + ".mgmt";
    return runCommand(args);
  }
  std::string logTail() const { return childOutputTail(dir_ + "/ovs-vswitchd.log", "ovs-vswitchd"); }

  Topology& topo_;
  const Options& opt_;
  std::string vswitchd_, dir_;
  bool made_ = false;
  std::optional<testkit::Child> dbServer_, vswitchdChild_;  // while started
};

}  // namespace

bool isKnownDatapath(const std::string& k) {
  return k == "vdevd" || k == "vdevd-switch" || k == "vdevd-spin" || k == "vdevd-fast" || k == "vdevd-rx-off" ||
         k == "bridge" || k == "xdp-redirect" || k == kDpdkAfXdp || k == kOvsAfXdp;
}

bool isVdevd(const std::string& kind) { return kind.rfind("vdevd", 0) == 0; }

std::string datapathFitsScenario(const std::string& kind, Scenario sc) {
  if (sc != Scenario::kSwitch) return "";
  if (kind == "vdevd") return "vdevd --mode xconnect joins exactly two ports; the switch scenario has three";
  if (kind == "xdp-redirect") return "xdp-redirect connects exactly two ports (it does not learn)";
  if (kind == kDpdkAfXdp) return "testpmd's io forwarding connects exactly two ports (it does not learn)";
  if (kind == kOvsAfXdp) return "ovs-af-xdp joins two ports with two flows (no learning)";
  return "";
}

namespace {
std::string dpdkMissing() {
  if (testkit::findExecutable("dpdk-testpmd").empty())
    return "dpdk-testpmd not found (Debian: apt-get install dpdk-dev librte-net-af-xdp23)";
  return "";
}

std::string ovsVswitchd() {
  std::string p = testkit::findExecutable("ovs-vswitchd");
  if (p.empty() && testkit::isExecutable("/usr/lib/openvswitch-switch/ovs-vswitchd"))
    p = "/usr/lib/openvswitch-switch/ovs-vswitchd";
  return p;
}
std::string ovsMissing() {
  for (const char* tool : {"ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl"})
    if (testkit::findExecutable(tool).empty())
      return std::string(tool) + " not found (Debian: apt-get install openvswitch-switch)";
  if (ovsVswitchd().empty()) return "ovs-vswitchd not found (Debian: apt-get install openvswitch-switch)";
  if (::access(kOvsSchema, R_OK) != 0) return std::string(kOvsSchema) + " not found";
  return "";
}
}  // namespace

std::string datapathMissing(const std::string& kind) {
  if (kind == kDpdkAfXdp) return dpdkMissing();
  if (kind == kOvsAfXdp) return ovsMissing();
  return "";
}

std::string findVdevd(const std::string& given) {
  if (!given.empty()) return testkit::isExecutable(given) ? given : "";
  std::string dir = selfDir();
  for (const char* rel : {"/../../daemon/vdevd", "/../daemon/vdevd", "/vdevd"}) {
    std::string cand = dir + rel;
    if (testkit::isExecutable(cand)) {
      char real[PATH_MAX];
      return realpath(cand.c_str(), real) ? std::string(real) : cand;
    }
  }
  return testkit::findExecutable("vdevd");
}

std::unique_ptr<Datapath> makeVdevd(VdevdSpec spec, const std::string& vdevdPath, const std::string& statsPath,
                                    const std::string& logPath) {
  return std::make_unique<VdevdDatapath>(std::move(spec), vdevdPath, statsPath, logPath);
}

Result<std::unique_ptr<Datapath>> makeDatapath(const std::string& kind, Topology& topo, const Options& o,
                                               const std::string& vdevdPath, const std::string& workDir) {
  static int serial = 0;
  std::unique_ptr<Datapath> d;
  if (isVdevd(kind)) {
    if (vdevdPath.empty()) return makeError(ENOENT, "vdevd not found (use --vdevd PATH)");
    const std::string n = std::to_string(++serial);
    d = makeVdevd(vdevdSpecFor(kind, topo, o), vdevdPath, workDir + "/vdevd-stats-" + n + ".json",
                  workDir + "/vdevd-" + n + ".log");
  } else if (kind == "bridge") {
    d = std::make_unique<BridgeDatapath>(topo, o);
  } else if (kind == "xdp-redirect") {
    d = std::make_unique<XdpRedirectDatapath>(topo);
  } else if (kind == kDpdkAfXdp) {
    const std::string path = testkit::findExecutable("dpdk-testpmd");
    if (path.empty()) return makeError(ENOENT, dpdkMissing());
    d = std::make_unique<DpdkAfXdpDatapath>(topo, o, path, workDir + "/dpdk-testpmd-" + std::to_string(++serial) + ".log");
  } else if (kind == kOvsAfXdp) {
    if (!ovsMissing().empty()) return makeError(ENOENT, ovsMissing());
    d = std::make_unique<OvsAfXdpDatapath>(topo, o, ovsVswitchd(), workDir + "/ovs-" + std::to_string(++serial));
  } else {
    return makeError(EINVAL, "unknown datapath " + kind);
  }
  return d;
}

}  // namespace vdev::bench
