// datapath.cpp - see datapath.h.
#include "datapath.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>
#include <vector>

#include "testkit/files.h"
#include "testkit/process.h"
#include "testkit/stats.h"

namespace vdev::bench {

namespace {

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

  std::optional<double> processCpuSeconds() const override {
    if (!child_) return std::nullopt;
    auto c = taskCpuSeconds(child_->pid());
    if (!c) return std::nullopt;
    return *c;
  }

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
  const bool threePorts = topo.ports().size() > 2;
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

}  // namespace

bool isKnownDatapath(const std::string& k) {
  return k == "vdevd" || k == "vdevd-switch" || k == "vdevd-spin" || k == "vdevd-fast" || k == "vdevd-rx-off" ||
         k == "bridge" || k == "xdp-redirect";
}

bool isVdevd(const std::string& kind) { return kind.rfind("vdevd", 0) == 0; }

std::string datapathFitsScenario(const std::string& kind, Scenario sc) {
  if (sc != Scenario::kSwitch) return "";
  if (kind == "vdevd") return "vdevd --mode xconnect joins exactly two ports; the switch scenario has three";
  if (kind == "xdp-redirect") return "xdp-redirect connects exactly two ports (it does not learn)";
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
  } else {
    return makeError(EINVAL, "unknown datapath " + kind);
  }
  return d;
}

}  // namespace vdev::bench
