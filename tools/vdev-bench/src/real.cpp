// real.cpp - see real.h.
#include "real.h"

#include <dirent.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <tuple>

#include "datapath.h"
#include "real_datapaths.h"
#include "real_results.h"
#include "real_topology.h"
#include "real_traffic.h"
#include "report.h"
#include "sys.h"
#include "testkit/process.h"
#include "testkit/qemu_guest.h"
#include "testkit/stats.h"
#include "topology.h"

namespace vdev::bench {

namespace {

const char kBridge[] = "bridge";
const char kBridgeWire[] = "bridge-wire";
const char kTcRedirect[] = "tc-redirect";
const char kVdevd[] = "vdevd";
const char kVdevdOwn[] = "vdevd-own";
// The UDP flood and the VM run at this MTU only (the VM's virtio-net MTU).
constexpr uint32_t kBaseMtu = 1500;

// ---- the scenarios ------------------------------------------------------------

struct ScenarioDef {
  const char* id;
  const char* title;
  Traffic traffic;
  int from, to;       // station index: 0 = A, 1 = B, 2 = the VM, 3 = the QEMU guest
  bool baseMtuOnly;   // only at kBaseMtu
  bool withIdle;      // measured with --idle-ports too
};
const ScenarioDef kScenarios[] = {
    {"tcp-a-b", "TCP container A -> container B", Traffic::kTcp, 0, 1, false, true},
    {"tcp-b-a", "TCP container B -> container A", Traffic::kTcp, 1, 0, false, false},
    {"udp-a-b", "UDP container A -> container B, 64-byte frames", Traffic::kUdp, 0, 1, true, true},
    {"tcp-vm-a", "TCP VM (vdev-vm guest) -> container A", Traffic::kTcp, 2, 0, true, false},
    {"tcp-a-vm", "TCP container A -> VM (vdev-vm guest)", Traffic::kTcp, 0, 2, true, false},
    {"rtt-a-b", "Round trip container A -> container B -> A", Traffic::kRtt, 0, 1, true, false},
    {"rtt-a-vm", "Round trip container A -> VM (vdev-vm guest) -> A", Traffic::kRtt, 0, 2, true, false},
    // Only when --only names them: one boot of a real guest per invocation.
    {"tcp-qemu-a", "TCP VM (QEMU guest) -> container A", Traffic::kTcp, 3, 0, true, false},
    {"tcp-a-qemu", "TCP container A -> VM (QEMU guest)", Traffic::kTcp, 0, 3, true, false},
};
constexpr int kQemuStation = 3;
bool needsVm(const ScenarioDef& s) { return s.from == 2 || s.to == 2; }
bool needsQemu(const ScenarioDef& s) { return s.from == kQemuStation || s.to == kQemuStation; }
bool runsAt(const ScenarioDef& s, uint32_t mtu) { return !s.baseMtuOnly || mtu == kBaseMtu; }
// Scenario s at mtu is in this invocation: its MTU, --only, --idle-ports.
bool wanted(const Options& o, const ScenarioDef& s, uint32_t mtu) {
  if (!runsAt(s, mtu) || (o.idlePorts && !s.withIdle)) return false;
  const bool named = std::find(o.realScenarios.begin(), o.realScenarios.end(), s.id) != o.realScenarios.end();
  return named || (o.realScenarios.empty() && !needsQemu(s));
}

// ---- the datapaths ------------------------------------------------------------

// With --idle-ports N each datapath D runs twice: as D, on A's and B's
// ports only, and as "D+N", on those and the N idle containers' ports.
struct Variant {
  std::string base;   // the datapath: bridge, tc-redirect, vdevd, vdevd-own, bridge-wire
  bool idle = false;  // with the idle containers' ports
};
Variant variantOf(const std::string& name) {
  const size_t plus = name.find('+');
  if (plus == std::string::npos) return {name, false};
  return {name.substr(0, plus), true};
}
std::string idleVariant(const std::string& base, uint32_t n) { return base + "+" + std::to_string(n); }

// vdevd runs its ports at the XDP hook (--vdevd-arg --default-hook=xdp):
// the containers' veths are then made as vdevd makes them for that hook
// (RealTopology, forXdpHook), for every datapath of the run alike.
bool vdevdAtXdpHook(const Options& o) {
  const auto& a = o.vdevdArgs;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] == "--default-hook=xdp" || (a[i] == "--default-hook" && i + 1 < a.size() && a[i + 1] == "xdp"))
      return true;
  return false;
}

// The ports a datapath attaches to: the stations', and the idle ones' too.
std::vector<std::string> attachedPorts(const RealTopology& t, bool idle) {
  std::vector<std::string> v = t.ports();
  if (idle) v.insert(v.end(), t.idlePorts().begin(), t.idlePorts().end());
  return v;
}
std::string idleText(const RealTopology& t, bool idle) {
  if (!idle || t.idlePorts().empty()) return "";
  return "; also the " + std::to_string(t.idlePorts().size()) + " idle containers' ports " + t.idlePorts().front() +
         " .. " + t.idlePorts().back();
}

// vdevd of this build with its defaults (vdevd) or --no-fast-path
// (vdevd-own), on every port, in the DUT namespace; not pinned, like
// everything else of --real.
VdevdSpec realVdevdSpec(const std::string& name, const RealTopology& t, const Options& o) {
  const Variant v = variantOf(name);
  const std::string& kind = v.base;
  VdevdSpec s;
  s.kind = name;
  s.ns = &t.dut();
  s.prio = o.dpPrio;
  const auto ports = attachedPorts(t, v.idle);
  for (const auto& p : ports) {
    s.args.push_back("--port");
    s.args.push_back(p);
  }
  // Attaching (and detaching) a port takes tens of ms on a busy machine.
  s.readyTimeout = std::chrono::seconds(30 + ports.size() / 4);
  s.exitTimeout = std::chrono::seconds(15 + ports.size() / 8);
  // The host's control socket and saved ports are not ours.
  s.args.emplace_back("--no-socket");
  s.args.emplace_back("--no-state");
  if (kind == kVdevdOwn) s.args.emplace_back("--no-fast-path");
  for (const auto& a : o.vdevdArgs) s.args.push_back(a);
  s.describe = kind == kVdevdOwn ? "vdevd --no-fast-path: every frame through vdevd's AF_XDP path (the tc program "
                                   "punts it through the punt device, which segments GSO skbs)"
                                 : "vdevd with its defaults: skb path (tcx ingress, or classic tc before Linux "
                                   "6.6) on veths and taps, learned unicast on the kernel fast path";
  if (o.dpPrio) s.describe += " (SCHED_FIFO " + std::to_string(o.dpPrio) + ")";
  for (const auto& a : o.vdevdArgs) s.describe += " " + a;
  s.describe += idleText(t, v.idle);
  return s;
}

// name: a datapath of realDatapaths(), or its idle variant ("vdevd+248").
std::unique_ptr<Datapath> makeRealDatapath(const std::string& name, const RealTopology& t, const Options& o,
                                           const std::string& vdevdPath, const std::string& workDir, int serial) {
  const Variant v = variantOf(name);
  if (v.base == kBridge)
    return std::make_unique<BridgeOver>(
        t.dut(), t.bridgeName(), attachedPorts(t, v.idle), name,
        "Linux bridge " + t.bridgeName() + " (learning, STP off), every port enslaved" + idleText(t, v.idle));
  if (v.base == kBridgeWire)
    return std::make_unique<BridgeOver>(
        t.dut(), t.bridgeName(), attachedPorts(t, v.idle), name,
        "Linux bridge " + t.bridgeName() + " (learning, STP off), every port enslaved with TSO and GSO off: the "
            "kernel segments what the bridge forwards, each receiver takes wire frames one at a time (the shape "
            "of vdevd's own path)" + idleText(t, v.idle),
        true);
  if (v.base == kTcRedirect) {
    std::vector<TcFwdDest> dests;
    for (const auto& st : t.stations()) dests.push_back({st->mac, st->port, !st->portIsTap});
    return std::make_unique<TcFwd>(t.dut(), std::move(dests), attachedPorts(t, v.idle), name,
                                   "tc_fwd.bpf.c at clsact ingress of every port: bpf_redirect_peer() into a "
                                   "container's veth, bpf_redirect() to the VM's tap, by destination MAC" +
                                       idleText(t, v.idle));
  }
  const std::string n = std::to_string(serial);
  return makeVdevd(realVdevdSpec(name, t, o), vdevdPath, workDir + "/vdevd-stats-" + n + ".json",
                   workDir + "/vdevd-" + n + ".log");
}

// CPU seconds of every thread of process pid from /proc/PID/task/*/schedstat
// (nanoseconds; /proc/PID/stat counts ticks of 10 ms, too coarse for an idle
// daemon over a few seconds).
Result<double> processSchedSeconds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  const auto tasks = dirEntries(dir);
  if (!tasks) return errnoError("opendir " + dir);
  double sum = 0;
  for (const std::string& t : *tasks)
    if (auto c = threadCpuSeconds(static_cast<pid_t>(atoi(t.c_str()))))
      sum += *c;  // a thread that just exited: its time is gone with it
  return sum;
}

size_t openFds(pid_t pid) {
  return dirEntries("/proc/" + std::to_string(pid) + "/fd").value_or(std::vector<std::string>{}).size();
}

uint64_t rssKb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
}

// --vdev-vm, else vdev-vm in the build tree next to vdev-bench, else PATH.
std::string findVdevVm(const std::string& given) {
  if (!given.empty()) return testkit::isExecutable(given) ? given : "";
  const std::string cand = selfDir() + "/../vdev-vm/vdev-vm";
  if (testkit::isExecutable(cand)) return cand;
  return testkit::findExecutable("vdev-vm");
}

// ---- results ------------------------------------------------------------------

// A vdevd's CPU while nothing is sent (--idle-cpu).
struct IdleCpu {
  double window = 0;      // wall clock, s
  double statCpu = 0;     // utime + stime from /proc/PID/stat, s (10 ms ticks)
  double schedCpu = 0;    // the threads' schedstat run time, s
  size_t fds = 0;         // open descriptors
  uint64_t rssKb = 0;     // VmRSS
  double corePct() const { return window > 0 ? 100 * schedCpu / window : NAN; }
};

struct Setup {  // one datapath on one fresh topology
  int run = 0;
  uint32_t mtu = 0;
  size_t ports = 0;  // the datapath's
  std::string datapath;
  std::optional<IdleCpu> idle;
  std::string idleError;
  std::string stats;  // the datapath's statistics (JSON), or ""
  std::string guest;  // vdev-vm's counts (JSON), or ""
  bool qemu = false;  // on the QEMU guest's topology (shared by every datapath)
  // Its tap's own counters over this set-up (the kernel's, in skbs: what the
  // guest sent, rx; what the tap handed it, tx), or unset.
  std::optional<testkit::LinkInfo> qemuTap;
  std::string stopProblem, error;
};

// The QEMU guest of the invocation: how it ran, for the report.
struct QemuRun {
  QemuSpec spec;
  std::string qemuPath;
  std::string ready;   // its "vdev-guest: ready ..." line
  double bootS = NAN;  // from QEMU's start to that line
  std::string error;   // why it did not boot
};

struct RealReport : RealSession {
  std::string vdevVmPath;
  std::optional<QemuRun> qemu;  // with the qemu scenarios
  std::map<std::tuple<std::string, uint32_t, std::string>, Cell> cells;  // (scenario, mtu, datapath)
  std::vector<Setup> setups;

  Cell& cell(const ScenarioDef& s, uint32_t mtu, const std::string& dp) { return cells[{s.id, mtu, dp}]; }
  const Cell* find(const ScenarioDef& s, uint32_t mtu, const std::string& dp) const {
    auto it = cells.find({s.id, mtu, dp});
    return it == cells.end() ? nullptr : &it->second;
  }
};

std::string mtuText(uint32_t mtu) { return "MTU " + std::to_string(mtu); }

// ---- the measurement ----------------------------------------------------------

class RealRunner {
 public:
  RealRunner(const Options& o, RealReport& rep, std::string workDir)
      : o_(o), rep_(rep), workDir_(std::move(workDir)) {}

  // Every datapath on a fresh topology at every MTU, run after run.
  // Then the qemu scenarios, on one topology with one boot.
  Status runAll() {
    VB_TRY(interleaved(o_.runs, o_.mtus, rep_.datapaths,
                       [this](int run, uint32_t mtu, const std::string& dp) { measure(run, mtu, dp); }));
    return rep_.qemu ? runQemu() : Status{};
  }

 private:
  // The scenarios of this set-up still to measure: measured and not skipped.
  std::vector<const ScenarioDef*> todoFor(uint32_t mtu, const std::string& dpName, bool qemu) const {
    std::vector<const ScenarioDef*> todo;
    for (const auto& s : kScenarios) {
      if (needsQemu(s) != qemu || !runsAt(s, mtu)) continue;
      const Cell* c = rep_.find(s, mtu, dpName);
      if (c && c->skipped.empty()) todo.push_back(&s);
    }
    return todo;
  }

  // The QEMU guest boots once in a topology of its own (containers A and B,
  // its tap <P>q); every datapath in turn attaches its tap and A's and B's
  // veths, is measured and releases them.
  Status runQemu() {
    QemuRun& q = *rep_.qemu;
    logInfo("booting the QEMU guest (-accel %s, vhost %s)", q.spec.accel.c_str(), q.spec.vhost ? "on" : "off");
    const double t0 = monotonicSeconds();
    auto topo = RealTopology::create(rep_.prefix, kBaseMtu, false, "", "", 0, vdevdAtXdpHook(o_), &q.spec);
    if (!topo) {
      q.error = topo.error().message();
      logWarn("the QEMU guest: %s", q.error.c_str());
      for (const auto& s : kScenarios)
        for (const auto& d : rep_.datapaths)
          if (needsQemu(s) && rep_.find(s, kBaseMtu, d))
            rep_.cell(s, kBaseMtu, d).errors.push_back("the QEMU guest: " + q.error);
      return {};
    }
    RealTopology& t = *topo.value();
    q.bootS = monotonicSeconds() - t0;
    q.ready = t.qemu()->readyLine();
    if (!o_.json && !verbose()) fprintf(stderr, "vdev-bench: QEMU guest ready in %.1f s\n", q.bootS);
    return interleaved(o_.runs, std::vector<uint32_t>{kBaseMtu}, rep_.datapaths,
                       [&](int run, uint32_t mtu, const std::string& dp) {
                         const auto todo = todoFor(mtu, dp, true);
                         if (todo.empty()) return;
                         Setup su;
                         su.qemu = true;
                         measureOn(t, run, mtu, dp, todo, su);
                       });
  }

  void measure(int run, uint32_t mtu, const std::string& dpName) {
    const auto todo = todoFor(mtu, dpName, false);
    if (todo.empty()) return;
    const bool vm = std::any_of(todo.begin(), todo.end(), [](const ScenarioDef* s) { return needsVm(*s); });
    Setup su;
    logInfo("run %d/%d: %s, %s", run, o_.runs, dpName.c_str(), mtuText(mtu).c_str());
    const int serial = serial_ + 1;
    const bool idle = variantOf(dpName).idle;
    auto topo = RealTopology::create(rep_.prefix, mtu, vm, rep_.vdevVmPath,
                                     workDir_ + "/vdev-vm-" + std::to_string(serial) + ".log",
                                     idle ? o_.idlePorts : 0, vdevdAtXdpHook(o_));
    if (!topo) {
      failAll(su, run, mtu, dpName, todo, "set-up", topo.error());
      rep_.setups.push_back(su);
      return;
    }
    measureOn(*topo.value(), run, mtu, dpName, todo, su);
    topo.value().reset();
  }

  // Every scenario of todo fails in this run: what and e say why.
  void failAll(Setup& su, int run, uint32_t mtu, const std::string& dpName,
               const std::vector<const ScenarioDef*>& todo, const std::string& what, const Error& e) {
    su.run = run;
    su.mtu = mtu;
    su.datapath = dpName;
    su.error = what + ": " + e.message();
    logWarn("%s %s run %d: %s", dpName.c_str(), mtuText(mtu).c_str(), run, su.error.c_str());
    for (const ScenarioDef* s : todo)
      rep_.cell(*s, mtu, dpName).errors.push_back("run " + std::to_string(run) + ": " + su.error);
  }

  // Datapath dpName on topology t: started, warmed up, every scenario of
  // todo measured, stopped; its figures and statistics into rep_.
  void measureOn(RealTopology& t, int run, uint32_t mtu, const std::string& dpName,
                 const std::vector<const ScenarioDef*>& todo, Setup& su) {
    su.run = run;
    su.mtu = mtu;
    su.datapath = dpName;
    const int serial = ++serial_;
    const bool idle = variantOf(dpName).idle;
    noteBridgeNf(rep_, t.dut());
    auto dp = makeRealDatapath(dpName, t, o_, rep_.vdevdPath, workDir_, serial);
    rep_.describe[dpName] = dp->describe();
    su.ports = attachedPorts(t, idle).size();
    logInfo("%s: %zu ports", dpName.c_str(), su.ports);
    const Station* q = t.qemuStation();
    std::optional<testkit::LinkInfo> tap0;
    if (q)
      if (auto l = testkit::linkInfo(q->port, &t.dut())) tap0 = *l;
    Status st = dp->start();
    if (st.ok()) st = warmUp(t.a(), t.b());
    if (st.ok() && t.guest()) st = warmUp(t.a(), *t.guest());
    if (st.ok() && t.qemuStation()) st = warmUp(t.a(), *t.qemuStation());
    if (!st.ok()) {
      failAll(su, run, mtu, dpName, todo, "start", st.error());
    } else {
      const Station* stations[] = {&t.a(), &t.b(), t.guest(), t.qemuStation()};
      for (const ScenarioDef* s : todo) {
        if (stopRequested()) break;
        measureOne(*s, run, mtu, dpName, *stations[s->from], *stations[s->to]);
      }
      if (o_.idlePorts && o_.idleCpuS > 0 && dp->pid() && !stopRequested()) measureIdle(*dp, su);
    }
    Status sp = dp->stop();
    if (!sp.ok()) su.stopProblem = sp.error().message();
    su.stats = dp->statsJson();
    dp.reset();  // before the topology: it detaches from the ports
    if (q && tap0)
      if (auto l = testkit::linkInfo(q->port, &t.dut())) {
        testkit::LinkInfo d = *l;
        d.rx_packets -= tap0->rx_packets, d.rx_bytes -= tap0->rx_bytes, d.rx_dropped -= tap0->rx_dropped;
        d.tx_packets -= tap0->tx_packets, d.tx_bytes -= tap0->tx_bytes, d.tx_dropped -= tap0->tx_dropped;
        su.qemuTap = d;
      }
    if (!su.qemu) su.guest = t.stopGuest();
    rep_.setups.push_back(su);
  }

  // The datapath process's CPU over o_.idleCpuS seconds with no traffic,
  // after kIdleSettleS for what the last measurement left (TCP's FINs, a
  // socket's last frames) to pass.
  void measureIdle(const Datapath& dp, Setup& su) {
    constexpr double kIdleSettleS = 2;
    if (!sleepUnlessStopped(kIdleSettleS)) return;
    const pid_t pid = dp.pid();
    auto stat0 = taskCpuSeconds(pid);
    auto sched0 = processSchedSeconds(pid);
    const double t0 = monotonicSeconds();
    if (!sleepUnlessStopped(o_.idleCpuS)) return;
    auto stat1 = taskCpuSeconds(pid);
    auto sched1 = processSchedSeconds(pid);
    const double t1 = monotonicSeconds();
    for (const auto* r : {&stat0, &stat1, &sched0, &sched1})
      if (!*r) {
        su.idleError = "idle CPU of pid " + std::to_string(pid) + ": " + r->error().message();
        logWarn("%s", su.idleError.c_str());
        return;
      }
    IdleCpu c;
    c.window = t1 - t0;
    c.statCpu = *stat1 - *stat0;
    c.schedCpu = *sched1 - *sched0;
    c.fds = openFds(pid);
    c.rssKb = rssKb(pid);
    su.idle = c;
    if (!o_.json && !verbose())
      fprintf(stderr, "vdev-bench: %-11s idle, %zu ports, run %d: %.3f%% of a core\n", su.datapath.c_str(), su.ports,
              su.run, c.corePct());
  }

  void measureOne(const ScenarioDef& s, int run, uint32_t mtu, const std::string& dpName, const Station& from,
                  const Station& to) {
    const std::string what = dpName + " " + s.id + " " + mtuText(mtu) + " run " + std::to_string(run);
    const std::string label = padRight(dpName, 11) + " " + padRight(s.id, 8) + " " + padRight(mtuText(mtu), 9);
    measureInto(rep_.cell(s, mtu, dpName), s.traffic, from, to, o_, run, what, label, workDir_);
  }

  const Options& o_;
  RealReport& rep_;
  std::string workDir_;
  int serial_ = 0;
};

// ---- output ---------------------------------------------------------------------

double cellMedian(const RealReport& rep, const ScenarioDef& s, uint32_t mtu, const std::string& dp) {
  const Cell* c = rep.find(s, mtu, dp);
  return c ? median(valuesOf(*c, &Measurement::value)) : NAN;
}
// The bridge on the same ports as dp: bridge, or bridge+N for an idle variant.
std::string bridgeFor(const RealReport& rep, const std::string& dp) {
  return variantOf(dp).idle ? idleVariant(kBridge, rep.opt->idlePorts) : kBridge;
}
double bridgeMedian(const RealReport& rep, const ScenarioDef& s, uint32_t mtu, const std::string& dp) {
  return cellMedian(rep, s, mtu, bridgeFor(rep, dp));
}
// The same bridge's 99th percentile round trip: of its runs' probes pooled
// (pooled = true), or the median of its runs' own; NAN for other traffic.
double bridgeP99(const RealReport& rep, const ScenarioDef& s, uint32_t mtu, const std::string& dp, bool pooled) {
  const Cell* c = rep.find(s, mtu, bridgeFor(rep, dp));
  if (!c) return NAN;
  return pooled ? pooledRtt(*c).p99Us : medianP99(*c);
}
// An idle variant D+N against D on A's and B's ports only; NAN for D.
double twoPortsMedian(const RealReport& rep, const ScenarioDef& s, uint32_t mtu, const std::string& dp) {
  const Variant v = variantOf(dp);
  return v.idle ? cellMedian(rep, s, mtu, v.base) : NAN;
}
// The idle CPU of one datapath over its runs (setups with a measurement).
struct IdleSummary {
  size_t ports = 0;
  std::vector<double> corePct, statCpu;
  std::vector<size_t> fds;
  std::vector<uint64_t> rssKb;
};
std::map<std::string, IdleSummary> idleSummaries(const RealReport& rep) {
  std::map<std::string, IdleSummary> m;
  for (const auto& su : rep.setups) {
    if (!su.idle) continue;
    IdleSummary& x = m[su.datapath];
    x.ports = su.ports;
    x.corePct.push_back(su.idle->corePct());
    x.statCpu.push_back(su.idle->statCpu);
    x.fds.push_back(su.idle->fds);
    x.rssKb.push_back(su.idle->rssKb);
  }
  return m;
}
// vdevd-own's median against bridge-wire's in a TCP scenario, when both
// were measured here: the own path against the kernel's cheapest delivery
// of wire frames. (The UDP flood sends wire frames to every datapath, and
// a round trip is one small frame each way: no ceiling of that kind.)
double ownToWireCeiling(const RealReport& rep, const ScenarioDef& s, uint32_t mtu) {
  if (s.traffic != Traffic::kTcp || !rep.find(s, mtu, kVdevdOwn) || !rep.find(s, mtu, kBridgeWire)) return NAN;
  return ratioTo(cellMedian(rep, s, mtu, kVdevdOwn), cellMedian(rep, s, mtu, kBridgeWire));
}

// How the QEMU guest ran: the accelerator decides what its figures mean.
std::string qemuNote(const QemuRun& q) {
  std::string n = "QEMU guest: " + q.qemuPath + " -accel " + q.spec.accel + " -cpu " + q.spec.cpu + ", vhost " +
                  (q.spec.vhost ? "on" : "off (no /dev/vhost-net)") + ", image " + q.spec.image.dir;
  if (!q.error.empty()) return n + "; did not boot: " + q.error;
  char boot[64];
  snprintf(boot, sizeof boot, "; booted once in %.1f s, shared by every datapath", q.bootS);
  n += boot;
  if (q.spec.accel.starts_with("tcg"))
    n += "; TCG emulates the guest's CPU: only its ratio to the bridge counts, not its Gbit/s";
  return n + "\n  " + q.ready;
}

// What vdevd counted on the QEMU guest's tap in each of its set-ups.
void printQemuTapCounters(const RealReport& rep, FILE* out) {
  for (const auto& su : rep.setups) {
    if (!su.qemu || su.stats.empty() || !isVdevd(variantOf(su.datapath).base)) continue;
    auto st = testkit::parseStats(su.stats);
    if (!st) continue;
    const testkit::PortStats* p = st->findPort(rep.prefix + "q");
    if (!p) continue;
    const auto& x = *p;
    // The tap's program sees each skb the guest sent once: its verdicts and
    // its drops add up to the skbs the tap received.
    const uint64_t verdicts =
        x[stats::kProgPass] + x[stats::kProgRedirect] + x[stats::kProgNoSocket] + x[stats::kProgFast];
    fprintf(out,
            "%s run %d, tap %s: rx %llu tx %llu frames; the guest's skbs %llu = program pass %llu + redirect %llu "
            "+ no_socket %llu + fast %llu + drops %llu%s\n",
            su.datapath.c_str(), su.run, p->name.c_str(), (unsigned long long)x[stats::kRxPackets],
            (unsigned long long)x[stats::kTxPackets],
            (unsigned long long)(su.qemuTap ? su.qemuTap->rx_packets : 0), (unsigned long long)x[stats::kProgPass],
            (unsigned long long)x[stats::kProgRedirect], (unsigned long long)x[stats::kProgNoSocket],
            (unsigned long long)x[stats::kProgFast], (unsigned long long)x.totalDrops(),
            !su.qemuTap                                               ? " (tap counters unread)"
            : su.qemuTap->rx_packets == verdicts + x.totalDrops() ? " (adds up)"
                                                                      : " (MISMATCH)");
  }
}

void printReal(const RealReport& rep, FILE* out) {
  const Options& o = *rep.opt;
  std::string mtus;
  for (uint32_t m : o.mtus) mtus += (mtus.empty() ? "" : ",") + std::to_string(m);
  struct utsname u;
  uname(&u);
  fprintf(out, "vdev-bench --real: %d run%s x %.1f s per measurement, MTU %s; Linux %s, %d CPUs; medians\n", o.runs,
          o.runs == 1 ? "" : "s", o.duration, mtus.c_str(), u.release, onlineCpus());
  std::vector<std::string> notes;
  if (vdevdAtXdpHook(o))
    notes.emplace_back("containers: eth0 with GRO on and TX checksum offload (and so TSO) off, as vdevd makes a "
                       "veth for its XDP hook, for every datapath");
  if (rep.qemu) notes.push_back(qemuNote(*rep.qemu));
  printSessionHead(rep, out, "the DUT namespace", notes);
  const bool idleMode = o.idlePorts > 0;
  if (idleMode)
    fprintf(out,
            "idle ports: D+%u is datapath D with %u idle containers' ports attached besides A's and B's; "
            "x bridge compares with the bridge on the same ports, x 2 ports D+%u with D\n",
            o.idlePorts, o.idlePorts, o.idlePorts);

  for (uint32_t mtu : o.mtus) {
    for (const auto& s : kScenarios) {
      if (!runsAt(s, mtu)) continue;
      bool any = false;
      for (const auto& d : rep.datapaths) any |= rep.find(s, mtu, d) != nullptr;
      if (!any) continue;
      const bool tcp = s.traffic == Traffic::kTcp;
      const bool rtt = s.traffic == Traffic::kRtt;
      char rttText[128];
      snprintf(rttText, sizeof rttText,
               "UDP request/response, %zu-byte frames, one every %.0f ms; us, lower is better", kRttFrameSize,
               kRttIntervalS * 1e3);
      fprintf(out, "\n%s, %s (%s)\n", s.title, mtuText(mtu).c_str(),
              tcp   ? "iperf3, one stream; Gbit/s at the receiver"
              : rtt ? rttText
                    : "18-byte payloads, sendmmsg() from one thread; Mpps received");
      // With --idle-ports, a last column: D+N against D.
      const char* twoHead = idleMode ? "x 2 ports" : "";
      if (tcp)
        fprintf(out, "%-12s %8s %15s %8s %11s %8s %6s %9s\n", "datapath", "Gbit/s", "(min-max)", "x bridge",
                "CPU s/Gbit", "machine", "noisy", twoHead);
      else if (rtt)
        fprintf(out, "%-12s %8s %15s %8s %8s %8s %11s %6s\n", "datapath", "p50", "(min-max)", "x bridge", "p99",
                "x bridge", "lost", "noisy");
      else
        fprintf(out, "%-12s %8s %15s %8s %8s %11s %8s %11s %6s %9s\n", "datapath", "Mpps rx", "(min-max)",
                "x bridge", "Mpps tx", "CPU s/Mpkt", "machine", "sock drop%", "noisy", twoHead);
      for (const auto& d : rep.datapaths) {
        const double ref = bridgeMedian(rep, s, mtu, d);
        const Cell* c = rep.find(s, mtu, d);
        if (!c) continue;
        if (!c->skipped.empty()) {
          fprintf(out, "%-12s %8s   skipped (see above)\n", d.c_str(), "-");
          continue;
        }
        if (c->runs.empty()) {
          fprintf(out, "%-12s %8s   failed: %s\n", d.c_str(), "-", c->errors.empty() ? "?" : c->errors[0].c_str());
          continue;
        }
        const int dec = rtt ? 1 : tcp ? 2 : 3;
        const CellText x = cellText(*c, ref, dec, bridgeP99(rep, s, mtu, d, /*pooled=*/true));
        const double med = median(valuesOf(*c, &Measurement::value));
        const std::string two = idleMode ? num(ratioTo(med, twoPortsMedian(rep, s, mtu, d)), 3) : "";
        if (tcp)
          fprintf(out, "%-12s %8s %15s %8s %11s %8s %6s %9s\n", d.c_str(), x.median.c_str(), x.range.c_str(),
                  x.ratio.c_str(), x.cpu.c_str(), x.machine.c_str(), x.noisy.c_str(), two.c_str());
        else if (rtt)
          fprintf(out, "%-12s %8s %15s %8s %8s %8s %11s %6s\n", d.c_str(), x.median.c_str(), x.range.c_str(),
                  x.ratio.c_str(), x.p99.c_str(), x.p99Ratio.c_str(), x.lost.c_str(), x.noisy.c_str());
        else
          fprintf(out, "%-12s %8s %15s %8s %8s %11s %8s %11s %6s %9s\n", d.c_str(), x.median.c_str(),
                  x.range.c_str(), x.ratio.c_str(), x.txMpps.c_str(), x.cpu.c_str(), x.machine.c_str(),
                  x.sockDrop.c_str(), x.noisy.c_str(), two.c_str());
        for (const auto& e : c->errors) fprintf(out, "%-12s   error: %s\n", "", e.c_str());
      }
      const double ownToWire = ownToWireCeiling(rep, s, mtu);
      if (std::isfinite(ownToWire))
        fprintf(out, "(vdevd-own: %.2fx bridge-wire, the ceiling of a path that hands its receivers wire frames)\n",
                ownToWire);
      if (rtt) {
        const Cell* br = rep.find(s, mtu, kBridge);
        const double split = br ? splitHalfP99(*br) : NAN;
        if (std::isfinite(split))
          fprintf(out,
                  "(the bridge's own runs, odd against even, differ by %.2fx at p99: p99 ratios within\n"
                  "%.2f-%.2f are inside this run's own noise)\n",
                  split, 1 / split, split);
      }
    }
  }
  fprintf(out,
          "\nCPU s/Gbit (s/Mpkt): CPU seconds (utime + stime) of the benchmark's own tasks -- iperf3 at both\n"
          "ends or the UDP sender and receiver, vdevd, vdev-vm, ksoftirqd, vdev-bench -- per Gbit (per\n"
          "million datagrams) received; softirq work counts for the task it ran on top of. machine: all busy\n"
          "CPU time of the machine (/proc/stat) per Gbit, other load included. noisy: runs in which other\n"
          "load or steal exceeded 15%% of a CPU. sock drop%%: datagrams lost because the receiving socket's\n"
          "buffer was full (UDP RcvbufErrors), in %% of those sent. Round trips: p50, the median of the\n"
          "runs' own (nearest rank); p99, of every run's probes pooled (a run's own p99 is its few dozen\n"
          "slowest probes, which one burst of other load moves); the requester's and the responder's\n"
          "threads both on the first CPU, the rest not pinned; lost: probes unanswered within 200 ms, all\n"
          "runs. See docs/performance.md, \"Real senders\".\n");
  const auto idle = idleSummaries(rep);
  if (!idle.empty()) {
    fprintf(out,
            "\nIdle, no traffic: the datapath process's CPU over %.1f s, 2 s after the last measurement\n"
            "(schedstat of its threads; stat: /proc/PID/stat utime + stime, 10 ms ticks); medians\n",
            o.idleCpuS);
    fprintf(out, "%-12s %6s %12s %17s %8s %6s %9s\n", "datapath", "ports", "% of a core", "(min-max)", "stat s",
            "fds", "RSS kB");
    for (const auto& d : rep.datapaths) {
      auto it = idle.find(d);
      if (it == idle.end()) continue;
      const IdleSummary& x = it->second;
      std::vector<double> fds(x.fds.begin(), x.fds.end()), rss(x.rssKb.begin(), x.rssKb.end());
      const std::string range = "(" + num(minOf(x.corePct), 3) + "-" + num(maxOf(x.corePct), 3) + ")";
      fprintf(out, "%-12s %6zu %12s %17s %8s %6s %9s\n", d.c_str(), x.ports, num(median(x.corePct), 3).c_str(),
              range.c_str(), num(median(x.statCpu), 2).c_str(), num(median(fds), 0).c_str(),
              num(median(rss), 0).c_str());
    }
  }
  if (rep.qemu) {
    fprintf(out, "\nvdevd's counters for the QEMU guest's tap (its statistics at exit):\n");
    printQemuTapCounters(rep, out);
  }
  for (const auto& su : rep.setups)
    if (!su.idleError.empty())
      fprintf(out, "%s run %d: %s\n", su.datapath.c_str(), su.run, su.idleError.c_str());
  for (const auto& su : rep.setups) {
    if (!su.stopProblem.empty())
      fprintf(out, "%s %s run %d: stop: %s\n", su.datapath.c_str(), mtuText(su.mtu).c_str(), su.run,
              su.stopProblem.c_str());
  }
  printSessionTail(rep, out);
}

std::string realJson(const RealReport& rep) {
  const Options& o = *rep.opt;
  Json j;
  sessionJsonHead(j, rep, "real");
  Json mtus = Json::array();
  for (uint32_t m : o.mtus) mtus.push_back(static_cast<uint64_t>(m));
  j["config"] = {{"runs", o.runs},
                 {"duration_s", fixed(o.duration, 3)},
                 {"mtus", std::move(mtus)},
                 {"datapaths", rep.datapaths},
                 {"prefix", rep.prefix},
                 {"vdevd", rep.vdevdPath},
                 {"vdev_vm", rep.vdevVmPath},
                 {"iperf3", rep.iperf3Path},
                 {"bridge_nf_call_iptables", rep.bridgeNf},
                 {"idle_ports", static_cast<uint64_t>(o.idlePorts)},
                 {"containers_for_xdp_hook", vdevdAtXdpHook(o)},
                 {"idle_cpu_s", o.idlePorts ? fixed(o.idleCpuS, 3) : Json(nullptr)},
                 {"udp",
                  {{"payload_bytes", static_cast<uint64_t>(kUdpFloodPayload)},
                   {"frame_len", static_cast<uint64_t>(kUdpFloodPayload + 42)},
                   {"batch", static_cast<uint64_t>(kUdpFloodBatch)}}}};

  if (rep.qemu) {
    const QemuRun& q = *rep.qemu;
    j["config"]["qemu"] = {{"qemu", q.qemuPath},
                           {"accel", q.spec.accel},
                           {"cpu", q.spec.cpu},
                           {"vhost", q.spec.vhost},
                           {"image", q.spec.image.dir},
                           {"boot_s", fixed(q.bootS, 2)},
                           {"ready", textOrNull(q.ready)},
                           {"error", textOrNull(q.error)}};
  } else {
    j["config"]["qemu"] = nullptr;
  }
  j["datapaths"] = datapathsJson(rep);

  Json scenarios = Json::array();
  for (uint32_t mtu : o.mtus) {
    for (const auto& s : kScenarios) {
      if (!wanted(o, s, mtu)) continue;
      const bool tcp = s.traffic == Traffic::kTcp;
      const bool rtt = s.traffic == Traffic::kRtt;
      Json sc;
      sc["scenario"] = s.id;
      sc["title"] = s.title;
      sc["mtu"] = static_cast<uint64_t>(mtu);
      sc["unit"] = tcp ? "gbit_s" : rtt ? "us_round_trip_p50" : "mpps_received";
      sc["cpu_unit"] = tcp ? Json("cpu_s_per_gbit") : rtt ? Json(nullptr) : Json("cpu_s_per_mpkt");
      Json results = Json::array();
      for (const auto& d : rep.datapaths) {
        const Cell* c = rep.find(s, mtu, d);
        if (!c) continue;
        const double ref = bridgeMedian(rep, s, mtu, d);
        Json r;
        r["datapath"] = d;
        r["idle_ports"] = variantOf(d).idle ? o.idlePorts : 0u;
        r["skipped"] = textOrNull(c->skipped);
        cellSummaryJson(r, *c, ref);  // ratio: to the bridge on the same ports
        if (rtt) {
          const LatencyStats all = pooledRtt(*c);
          r["median_p99_us"] = fixed(medianP99(*c), 2);
          r["p99_ratio_to_bridge"] = fixed(ratioTo(medianP99(*c), bridgeP99(rep, s, mtu, d, false)), 4);
          r["pooled_p50_us"] = fixed(all.p50Us, 2);
          r["pooled_p99_us"] = fixed(all.p99Us, 2);
          r["pooled_p99_ratio_to_bridge"] = fixed(ratioTo(all.p99Us, bridgeP99(rep, s, mtu, d, true)), 4);
          r["pooled_max_us"] = fixed(all.maxUs, 2);
          r["split_half_p99_ratio"] = fixed(splitHalfP99(*c), 4);
        }
        if (const double w = ownToWireCeiling(rep, s, mtu); d == kVdevdOwn && std::isfinite(w))
          r["ratio_to_bridge_wire"] = fixed(w, 4);
        if (o.idlePorts)
          r["ratio_to_2_ports"] =
              fixed(ratioTo(median(valuesOf(*c, &Measurement::value)), twoPortsMedian(rep, s, mtu, d)), 4);
        cellRunsJson(r, *c);
        results.push_back(std::move(r));
      }
      sc["results"] = std::move(results);
      scenarios.push_back(std::move(sc));
    }
  }
  j["scenarios"] = std::move(scenarios);

  Json setups = Json::array();
  for (const auto& su : rep.setups)
    setups.push_back({{"run", su.run},
                      {"mtu", static_cast<uint64_t>(su.mtu)},
                      {"datapath", su.datapath},
                      {"ports", static_cast<uint64_t>(su.ports)},
                      {"idle_cpu", su.idle ? Json{{"window_s", fixed(su.idle->window, 3)},
                                                  {"cpu_s", fixed(su.idle->schedCpu, 4)},
                                                  {"stat_cpu_s", fixed(su.idle->statCpu, 2)},
                                                  {"core_pct", fixed(su.idle->corePct(), 4)},
                                                  {"fds", static_cast<uint64_t>(su.idle->fds)},
                                                  {"rss_kb", su.idle->rssKb}}
                                           : Json(nullptr)},
                      {"idle_cpu_error", textOrNull(su.idleError)},
                      {"datapath_stats", objectOrNull(su.stats)},
                      {"vm", objectOrNull(su.guest)},
                      {"qemu_guest", su.qemu},
                      {"qemu_tap", su.qemuTap ? Json{{"rx_packets", su.qemuTap->rx_packets},
                                                     {"rx_bytes", su.qemuTap->rx_bytes},
                                                     {"rx_dropped", su.qemuTap->rx_dropped},
                                                     {"tx_packets", su.qemuTap->tx_packets},
                                                     {"tx_bytes", su.qemuTap->tx_bytes},
                                                     {"tx_dropped", su.qemuTap->tx_dropped}}
                                              : Json(nullptr)},
                      {"stop_problem", textOrNull(su.stopProblem)},
                      {"error", textOrNull(su.error)}});
  j["setups"] = std::move(setups);
  Json idle = Json::array();
  for (const auto& [d, x] : idleSummaries(rep))
    idle.push_back({{"datapath", d},
                    {"ports", static_cast<uint64_t>(x.ports)},
                    {"median_core_pct", fixed(median(x.corePct), 4)},
                    {"min_core_pct", fixed(minOf(x.corePct), 4)},
                    {"max_core_pct", fixed(maxOf(x.corePct), 4)}});
  j["idle_cpu"] = std::move(idle);
  j["skipped"] = skippedJson(rep);
  jsonTail(j, rep.leftovers, rep.fatal);
  return dumpJson(j);
}

// The QEMU guest's image: --guest-image DIR, else the build tree's
// (tests/qemu/guest, e2e_qemu_test's), built or found up to date by
// scripts/vm-guest-image.sh where the source tree has it. Sets rep.qemu, or
// returns why the qemu scenarios are skipped (QEMU or the image's packages
// missing); an Error for a build that failed otherwise or a bad --qemu-accel.
Result<std::string> planQemu(const Options& o, RealReport& rep) {
  QemuRun q;
  q.qemuPath = testkit::qemuBinary();
  if (q.qemuPath.empty())
    return std::string("qemu-system-x86_64 not found ($VDEV_QEMU, PATH; scripts/install-deps.sh installs "
                       "qemu-system-x86)");
  const std::string dir = o.guestImageDir.empty() ? VDEV_BENCH_GUEST_DIR : o.guestImageDir;
  const std::string script = VDEV_BENCH_GUEST_SCRIPT;
  if (access(script.c_str(), R_OK) == 0) {
    const testkit::ImageOutcome img = testkit::buildGuestImage(script, dir);
    if (img.skip) return img.problem;
    if (!img.image) return Error{0, "the QEMU guest's image: " + img.problem};
    q.spec.image = *img.image;
  } else {
    q.spec.image = testkit::GuestImage{dir};
    if (access(q.spec.image.kernel().c_str(), R_OK) != 0 || access(q.spec.image.initrd().c_str(), R_OK) != 0)
      return "no guest image in " + dir + " and no " + script + " to build one (--guest-image DIR)";
  }
  if (o.qemuAccel == "kvm") {
    if (access("/dev/kvm", R_OK | W_OK) != 0) return Error{0, "--qemu-accel kvm: no usable /dev/kvm"};
    q.spec.accel = "kvm";
    q.spec.cpu = "host";
  }
  q.spec.vhost = testkit::hasVhostNet();
  rep.qemu = std::move(q);
  return std::string();
}

// Which cells are measured, which skipped and why; the missing tools.
Status plan(const Options& o, RealReport& rep) {
  const bool wantsVdevd =
      std::any_of(o.datapaths.begin(), o.datapaths.end(), [](const std::string& d) { return isVdevd(d); });
  if (wantsVdevd) rep.vdevdPath = findVdevd(o.vdevdPath);
  rep.vdevVmPath = findVdevVm(o.vdevVmPath);
  VB_TRY(findIperf3(rep));
  if (!o.vdevVmPath.empty() && rep.vdevVmPath.empty())
    return Error{0, "--vdev-vm " + o.vdevVmPath + " is not an executable file"};
  for (const auto& d : o.datapaths) {
    if (isVdevd(d) && rep.vdevdPath.empty()) {
      VB_TRY(skipDatapath(rep, d, vdevdMissing(rep)));
      continue;
    }
    rep.datapaths.push_back(d);
    if (o.idlePorts) rep.datapaths.push_back(idleVariant(d, o.idlePorts));
  }
  if (o.idlePorts) {
    rep.vdevVmPath.clear();  // containers only
  } else if (rep.vdevVmPath.empty()) {
    rep.skipped.push_back({"the VM scenarios", "vdev-vm not found (build it, or use --vdev-vm PATH)"});
    logWarn("skipping the VM scenarios: vdev-vm not found (build it, or use --vdev-vm PATH)");
  }
  const bool wantsQemu = std::any_of(o.mtus.begin(), o.mtus.end(), [&](uint32_t mtu) {
    return std::any_of(std::begin(kScenarios), std::end(kScenarios),
                       [&](const ScenarioDef& s) { return needsQemu(s) && wanted(o, s, mtu); });
  });
  bool qemuSkipped = false;
  if (wantsQemu && !rep.datapaths.empty()) {
    auto why = planQemu(o, rep);
    if (!why) return why.error();
    if (!why->empty()) {
      qemuSkipped = true;
      rep.skipped.push_back({"the QEMU guest scenarios", *why});
      logWarn("skipping the QEMU guest scenarios: %s", why->c_str());
    }
  }
  for (uint32_t mtu : o.mtus) {
    for (const auto& s : kScenarios) {
      if (!wanted(o, s, mtu) || (needsVm(s) && rep.vdevVmPath.empty()) || (needsQemu(s) && !rep.qemu)) continue;
      for (const auto& d : rep.datapaths) (void)rep.cell(s, mtu, d);
    }
  }
  if (rep.cells.empty() && !rep.datapaths.empty() && !qemuSkipped)
    return Error{0, std::string("nothing to measure: the scenarios of --only do not run at these MTUs") +
                        (o.idlePorts ? " or with --idle-ports (tcp-a-b and udp-a-b only)" : "") +
                        (rep.vdevVmPath.empty() && !o.idlePorts ? ", or need the VM (vdev-vm not found)" : "")};
  return {};
}

bool succeeded(const RealReport& rep) {
  for (const auto& [key, c] : rep.cells)
    if (!cellSucceeded(c)) return false;
  for (const auto& su : rep.setups)
    if (!su.stopProblem.empty() || !su.idleError.empty()) return false;
  return true;
}

}  // namespace

const std::vector<std::string>& realDatapaths() {
  static const std::vector<std::string> v{kBridge, kTcRedirect, kVdevd, kVdevdOwn};
  return v;
}

bool isRealDatapath(const std::string& name) {
  const auto& v = realDatapaths();
  return name == kBridgeWire || std::find(v.begin(), v.end(), name) != v.end();
}

std::string realDatapathNames() {
  std::string names;
  for (const auto& d : realDatapaths()) names += d + ", ";
  return names + kBridgeWire;
}

bool isRealScenario(const std::string& id) {
  return std::any_of(std::begin(kScenarios), std::end(kScenarios), [&](const ScenarioDef& s) { return id == s.id; });
}

std::string realScenarioNames() {
  std::string names;
  for (const auto& s : kScenarios) names += (names.empty() ? "" : ", ") + std::string(s.id);
  return names;
}

int runReal(const Options& o) {
  RealReport rep;
  rep.opt = &o;
  return runSession(rep, {.plan = [&] { return plan(o, rep); },
                          .run = [&](const std::string& workDir) { return RealRunner(o, rep, workDir).runAll(); },
                          .json = [&] { return realJson(rep); },
                          .print = [&](FILE* out) { printReal(rep, out); },
                          .succeeded = [&] { return succeeded(rep); }});
}

}  // namespace vdev::bench
