// real.cpp - see real.h.
#include "real.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
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

#include "bpf_objs.h"
#include "datapath.h"
#include "real_topology.h"
#include "real_traffic.h"
#include "report.h"
#include "sys.h"
#include "tc_fwd.skel.h"
#include "testkit/process.h"
#include "topology.h"

namespace vdev::bench {

namespace {

const char kBridge[] = "bridge";
const char kTcRedirect[] = "tc-redirect";
const char kVdevd[] = "vdevd";
const char kVdevdOwn[] = "vdevd-own";
// The UDP flood and the VM run at this MTU only (the VM's virtio-net MTU).
constexpr uint32_t kBaseMtu = 1500;

// ---- the scenarios ------------------------------------------------------------

enum class Traffic { kTcp, kUdp };
struct ScenarioDef {
  const char* id;
  const char* title;
  Traffic traffic;
  int from, to;       // station index: 0 = A, 1 = B, 2 = the VM
  bool baseMtuOnly;   // only at kBaseMtu
  bool withIdle;      // measured with --idle-ports too
};
const ScenarioDef kScenarios[] = {
    {"tcp-a-b", "TCP container A -> container B", Traffic::kTcp, 0, 1, false, true},
    {"tcp-b-a", "TCP container B -> container A", Traffic::kTcp, 1, 0, false, false},
    {"udp-a-b", "UDP container A -> container B, 64-byte frames", Traffic::kUdp, 0, 1, true, true},
    {"tcp-vm-a", "TCP VM (vdev-vm guest) -> container A", Traffic::kTcp, 2, 0, true, false},
    {"tcp-a-vm", "TCP container A -> VM (vdev-vm guest)", Traffic::kTcp, 0, 2, true, false},
};
bool needsVm(const ScenarioDef& s) { return s.from == 2 || s.to == 2; }
bool runsAt(const ScenarioDef& s, uint32_t mtu) { return !s.baseMtuOnly || mtu == kBaseMtu; }

// ---- the datapaths ------------------------------------------------------------

// With --idle-ports N each datapath D runs twice: as D, on A's and B's
// ports only, and as "D+N", on those and the N idle containers' ports.
struct Variant {
  std::string base;   // the datapath: bridge, tc-redirect, vdevd, vdevd-own
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

// The Linux bridge over every port, learning (STP off: ports forward at once).
class RealBridge : public Datapath {
 public:
  RealBridge(const RealTopology& t, std::string name, bool idle) : topo_(t), name_(std::move(name)), idle_(idle) {}
  ~RealBridge() override { (void)stop(); }
  std::string name() const override { return name_; }
  std::string describe() const override {
    return "Linux bridge " + topo_.bridgeName() + " (learning, STP off), every port enslaved" + idleText(topo_, idle_);
  }
  Status start() override {
    const std::string& ns = topo_.dut().name();
    VB_TRY(runCommand({"ip", "-n", ns, "link", "add", topo_.bridgeName(), "type", "bridge", "stp_state", "0"}));
    created_ = true;
    for (const auto& p : attachedPorts(topo_, idle_))
      VB_TRY(runCommand({"ip", "-n", ns, "link", "set", p, "master", topo_.bridgeName()}));
    return runCommand({"ip", "-n", ns, "link", "set", topo_.bridgeName(), "up"});
  }
  Status stop() override {
    if (!created_) return {};
    created_ = false;
    return runCommand({"ip", "-n", topo_.dut().name(), "link", "del", topo_.bridgeName()});
  }

 private:
  const RealTopology& topo_;
  std::string name_;
  bool idle_;
  bool created_ = false;
};

struct TcFwdDeleter {
  void operator()(vb_tc_fwd* s) const { vb_tc_fwd__destroy(s); }
};

// tc_fwd.bpf.c on the tc ingress hook of every port, its table filled with
// the stations: the kernel's skb redirect with nothing else around it.
class TcRedirect : public Datapath {
 public:
  TcRedirect(const RealTopology& t, std::string name, bool idle) : topo_(t), name_(std::move(name)), idle_(idle) {}
  ~TcRedirect() override { (void)stop(); }
  std::string name() const override { return name_; }
  std::string describe() const override {
    return "tc_fwd.bpf.c at clsact ingress of every port: bpf_redirect_peer() into a container's veth, "
           "bpf_redirect() to the VM's tap, by destination MAC" +
           idleText(topo_, idle_);
  }
  Status start() override {
    skel_.reset(vb_tc_fwd__open_and_load());
    if (!skel_) return errnoError("load tc_fwd BPF object");
    for (const auto& st : topo_.stations()) {
      auto idx = testkit::ifindexOf(st->port, &topo_.dut());
      if (!idx) return idx.error();
      uint64_t key = 0;
      memcpy(&key, st->mac.data(), st->mac.size());
      vb_tc_fwd_dest d = {static_cast<__u32>(idx.value()), st->portIsTap ? 0u : 1u};
      if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_fwd_dest), &key, &d, BPF_ANY) < 0)
        return errnoError("tc_fwd: add " + formatMac(st->mac));
    }
    for (const auto& p : attachedPorts(topo_, idle_)) {
      auto tc = TcIngress::attach(topo_.dut(), p, skel_->progs.vb_tc_fwd);
      if (!tc) return tc.error();
      hooks_.push_back(std::move(tc.value()));
    }
    return {};
  }
  Status stop() override {
    if (!skel_) return {};
    std::vector<vb_tc_fwd_stats> v(possibleCpus());
    __u32 zero = 0;
    if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.tc_fwd_stats), &zero, v.data()) == 0) {
      vb_tc_fwd_stats sum = {};
      for (const auto& x : v) {
        sum.redirected += x.redirected;
        sum.unknown_dst += x.unknown_dst;
        sum.failed += x.failed;
      }
      stats_ = Json{{"redirected_skbs", static_cast<uint64_t>(sum.redirected)},
                    {"unknown_dst", static_cast<uint64_t>(sum.unknown_dst)},
                    {"redirect_failed", static_cast<uint64_t>(sum.failed)}}
                   .dump();
    }
    hooks_.clear();
    skel_.reset();
    return {};
  }
  std::string statsJson() const override { return stats_; }

 private:
  const RealTopology& topo_;
  std::string name_;
  bool idle_;
  std::unique_ptr<vb_tc_fwd, TcFwdDeleter> skel_;
  std::vector<std::unique_ptr<TcIngress>> hooks_;
  std::string stats_;
};

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
                                 : "vdevd with its defaults: skb path (tcx ingress) on veths and taps, learned "
                                   "unicast on the kernel fast path";
  if (o.dpPrio) s.describe += " (SCHED_FIFO " + std::to_string(o.dpPrio) + ")";
  for (const auto& a : o.vdevdArgs) s.describe += " " + a;
  s.describe += idleText(t, v.idle);
  return s;
}

// name: a datapath of realDatapaths(), or its idle variant ("vdevd+248").
std::unique_ptr<Datapath> makeRealDatapath(const std::string& name, const RealTopology& t, const Options& o,
                                           const std::string& vdevdPath, const std::string& workDir, int serial) {
  const Variant v = variantOf(name);
  if (v.base == kBridge) return std::make_unique<RealBridge>(t, name, v.idle);
  if (v.base == kTcRedirect) return std::make_unique<TcRedirect>(t, name, v.idle);
  const std::string n = std::to_string(serial);
  return makeVdevd(realVdevdSpec(name, t, o), vdevdPath, workDir + "/vdevd-stats-" + n + ".json",
                   workDir + "/vdevd-" + n + ".log");
}

// CPU seconds of every thread of process pid from /proc/PID/task/*/schedstat
// (nanoseconds; /proc/PID/stat counts ticks of 10 ms, too coarse for an idle
// daemon over a few seconds).
Result<double> processSchedSeconds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return errnoError("opendir " + dir);
  double sum = 0;
  while (const dirent* e = readdir(d.get())) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto c = threadCpuSeconds(static_cast<pid_t>(atoi(e->d_name)));
    if (c) sum += *c;  // a thread that just exited: its time is gone with it
  }
  return sum;
}

size_t openFds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  size_t n = 0;
  if (d)
    while (const dirent* e = readdir(d.get())) n += e->d_name[0] != '.';
  return n;
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

std::string loadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// ---- results ------------------------------------------------------------------

struct Measurement {
  int run = 0;
  double value = 0;         // Gbit/s (TCP) or Mpps received (UDP)
  double cpuPerUnit = 0;    // bench CPU seconds per Gbit / per million datagrams received
  double machinePerUnit = 0;
  CpuWindow cpu;
  std::optional<TcpResult> tcp;
  std::optional<UdpResult> udp;
};

struct Cell {  // one scenario at one MTU through one datapath
  std::vector<Measurement> runs;
  std::vector<std::string> errors;
  std::string skipped;  // why it is not measured, or ""
};

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
  std::string stopProblem, error;
};

struct RealReport {
  const Options* opt = nullptr;
  std::string prefix, vdevdPath, vdevVmPath, iperf3Path, bridgeNf = "absent";
  std::string loadStart, loadEnd;
  std::map<std::string, std::string> describe;  // datapath -> how it is set up
  std::vector<std::string> datapaths;           // measured ones
  std::vector<std::pair<std::string, std::string>> skipped;  // what, why
  std::map<std::tuple<std::string, uint32_t, std::string>, Cell> cells;  // (scenario, mtu, datapath)
  std::vector<Setup> setups;
  std::vector<std::string> leftovers;
  std::string fatal;

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
  Status runAll() {
    for (int run = 1; run <= o_.runs; ++run)
      for (uint32_t mtu : o_.mtus)
        for (const auto& dp : rep_.datapaths) {
          if (stopRequested()) return Error{0, "interrupted by a signal"};
          measure(run, mtu, dp);
        }
    if (stopRequested()) return Error{0, "interrupted by a signal"};
    return {};
  }

 private:
  void measure(int run, uint32_t mtu, const std::string& dpName) {
    std::vector<const ScenarioDef*> todo;
    for (const auto& s : kScenarios) {
      if (!runsAt(s, mtu) || !rep_.find(s, mtu, dpName) || !rep_.find(s, mtu, dpName)->skipped.empty()) continue;
      todo.push_back(&s);
    }
    if (todo.empty()) return;
    bool vm = std::any_of(todo.begin(), todo.end(), [](const ScenarioDef* s) { return needsVm(*s); });
    Setup su;
    su.run = run;
    su.mtu = mtu;
    su.datapath = dpName;
    auto failAll = [&](const std::string& what, const Status& st) {
      su.error = what + ": " + st.error().message();
      logWarn("%s %s run %d: %s", dpName.c_str(), mtuText(mtu).c_str(), run, su.error.c_str());
      for (const ScenarioDef* s : todo)
        rep_.cell(*s, mtu, dpName).errors.push_back("run " + std::to_string(run) + ": " + su.error);
    };
    logInfo("run %d/%d: %s, %s", run, o_.runs, dpName.c_str(), mtuText(mtu).c_str());
    const int serial = ++serial_;
    const bool idle = variantOf(dpName).idle;
    auto topo = RealTopology::create(rep_.prefix, mtu, vm, rep_.vdevVmPath,
                                     workDir_ + "/vdev-vm-" + std::to_string(serial) + ".log",
                                     idle ? o_.idlePorts : 0, vdevdAtXdpHook(o_));
    if (!topo) {
      failAll("set-up", topo.error());
      rep_.setups.push_back(su);
      return;
    }
    RealTopology& t = *topo.value();
    if (rep_.bridgeNf == "absent") {
      if (auto v = testkit::readSysctl("net/bridge/bridge-nf-call-iptables", &t.dut())) rep_.bridgeNf = v.value();
    }
    auto dp = makeRealDatapath(dpName, t, o_, rep_.vdevdPath, workDir_, serial);
    rep_.describe[dpName] = dp->describe();
    su.ports = attachedPorts(t, idle).size();
    logInfo("%s: %zu ports", dpName.c_str(), su.ports);
    Status st = dp->start();
    if (st.ok()) st = warmUp(t.a(), t.b());
    if (st.ok() && vm) st = warmUp(t.a(), *t.guest());
    if (!st.ok()) {
      failAll("start", st);
    } else {
      const Station* stations[] = {&t.a(), &t.b(), t.guest()};
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
    su.guest = t.stopGuest();
    topo.value().reset();
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
    Cell& c = rep_.cell(s, mtu, dpName);
    const std::string what = dpName + " " + s.id + " " + mtuText(mtu) + " run " + std::to_string(run);
    Measurement m;
    m.run = run;
    Status err;
    if (s.traffic == Traffic::kTcp) {
      auto r = runTcp(from, to, o_.duration, what, workDir_);
      if (!r) {
        err = r.error();
      } else {
        m.value = r->gbps;
        const double gbit = r->bytes * 8 / 1e9;
        m.cpu = r->cpu;
        m.cpuPerUnit = gbit > 0 ? r->cpu.bench / gbit : NAN;
        m.machinePerUnit = gbit > 0 ? r->cpu.machine / gbit : NAN;
        m.tcp = r.value();
      }
    } else {
      auto r = runUdpFlood(from, to, o_.duration, what);
      if (!r) {
        err = r.error();
      } else {
        m.value = r->receivedMpps();
        const double mpkt = r->received / 1e6;
        m.cpu = r->cpu;
        m.cpuPerUnit = mpkt > 0 ? r->cpu.bench / mpkt : NAN;
        m.machinePerUnit = mpkt > 0 ? r->cpu.machine / mpkt : NAN;
        m.udp = r.value();
      }
    }
    if (!err.ok()) {
      c.errors.push_back("run " + std::to_string(run) + ": " + err.error().message());
      logWarn("%s: %s", what.c_str(), err.error().message().c_str());
      return;
    }
    if (!o_.json && !verbose())
      fprintf(stderr, "vdev-bench: %-11s %-8s %-9s run %d: %.3f %s\n", dpName.c_str(), s.id, mtuText(mtu).c_str(),
              run, m.value, s.traffic == Traffic::kTcp ? "Gbit/s" : "Mpps received");
    c.runs.push_back(std::move(m));
  }

  const Options& o_;
  RealReport& rep_;
  std::string workDir_;
  int serial_ = 0;
};

// ---- output ---------------------------------------------------------------------

std::vector<double> valuesOf(const Cell& c, double Measurement::*f) {
  std::vector<double> v;
  for (const auto& m : c.runs) v.push_back(m.*f);
  return v;
}
double minOf(const std::vector<double>& v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }
double maxOf(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }
int noisyRuns(const Cell& c) {
  return static_cast<int>(
      std::count_if(c.runs.begin(), c.runs.end(), [](const Measurement& m) { return m.cpu.noisy; }));
}
double cellMedian(const RealReport& rep, const ScenarioDef& s, uint32_t mtu, const std::string& dp) {
  const Cell* c = rep.find(s, mtu, dp);
  return c ? median(valuesOf(*c, &Measurement::value)) : NAN;
}
// The bridge on the same ports as dp: bridge, or bridge+N for an idle variant.
double bridgeMedian(const RealReport& rep, const ScenarioDef& s, uint32_t mtu, const std::string& dp) {
  return cellMedian(rep, s, mtu, variantOf(dp).idle ? idleVariant(kBridge, rep.opt->idlePorts) : kBridge);
}
// An idle variant D+N against D on A's and B's ports only; NAN for D.
double twoPortsMedian(const RealReport& rep, const ScenarioDef& s, uint32_t mtu, const std::string& dp) {
  const Variant v = variantOf(dp);
  return v.idle ? cellMedian(rep, s, mtu, v.base) : NAN;
}
double ratioTo(double v, double ref) { return std::isfinite(v) && std::isfinite(ref) && ref > 0 ? v / ref : NAN; }

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
// v with `decimals` decimals, or "-" when it is not a number.
std::string num(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char b[32];
  snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}
// A UDP run's datagrams lost in the receiver's full socket buffer, in % of those sent.
double sockDropPct(const Measurement& m) {
  return m.udp && m.udp->sent ? 100.0 * m.udp->rcvbufErrors / m.udp->sent : 0;
}

void printReal(const RealReport& rep, FILE* out) {
  const Options& o = *rep.opt;
  std::string mtus;
  for (uint32_t m : o.mtus) mtus += (mtus.empty() ? "" : ",") + std::to_string(m);
  struct utsname u;
  uname(&u);
  fprintf(out, "vdev-bench --real: %d run%s x %.1f s per measurement, MTU %s; Linux %s, %d CPUs; medians\n", o.runs,
          o.runs == 1 ? "" : "s", o.duration, mtus.c_str(), u.release, onlineCpus());
  fprintf(out, "load average: %s at the start, %s at the end\n", rep.loadStart.c_str(), rep.loadEnd.c_str());
  fprintf(out, "bridge: net.bridge.bridge-nf-call-iptables=%s in the DUT namespace\n", rep.bridgeNf.c_str());
  if (vdevdAtXdpHook(o))
    fprintf(out, "containers: eth0 with GRO on and TX checksum offload (and so TSO) off, as vdevd makes a veth "
                 "for its XDP hook, for every datapath\n");
  fprintf(out, "datapaths:\n");
  for (const auto& d : rep.datapaths) {
    auto it = rep.describe.find(d);
    fprintf(out, "  %-11s %s\n", d.c_str(), it == rep.describe.end() ? "(not set up)" : it->second.c_str());
  }
  for (const auto& [what, why] : rep.skipped) fprintf(out, "skipped: %s: %s\n", what.c_str(), why.c_str());
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
      fprintf(out, "\n%s, %s (%s)\n", s.title, mtuText(mtu).c_str(),
              tcp ? "iperf3, one stream; Gbit/s at the receiver"
                  : "18-byte payloads, sendmmsg() from one thread; Mpps received");
      // With --idle-ports, a last column: D+N against D.
      const char* twoHead = idleMode ? "x 2 ports" : "";
      if (tcp)
        fprintf(out, "%-12s %8s %15s %8s %11s %8s %6s %9s\n", "datapath", "Gbit/s", "(min-max)", "x bridge",
                "CPU s/Gbit", "machine", "noisy", twoHead);
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
        auto v = valuesOf(*c, &Measurement::value);
        const double med = median(v);
        const int dec = tcp ? 2 : 3;
        const std::string range = "(" + num(minOf(v), dec) + "-" + num(maxOf(v), dec) + ")";
        const std::string noisy = std::to_string(noisyRuns(*c)) + "/" + std::to_string(c->runs.size());
        const std::string cpu = num(median(valuesOf(*c, &Measurement::cpuPerUnit)), 3);
        const std::string machine = num(median(valuesOf(*c, &Measurement::machinePerUnit)), 3);
        const std::string two = idleMode ? num(ratioTo(med, twoPortsMedian(rep, s, mtu, d)), 3) : "";
        if (tcp) {
          fprintf(out, "%-12s %8s %15s %8s %11s %8s %6s %9s\n", d.c_str(), num(med, dec).c_str(), range.c_str(),
                  num(ratioTo(med, ref), 2).c_str(), cpu.c_str(), machine.c_str(), noisy.c_str(), two.c_str());
        } else {
          std::vector<double> txv, drop;
          for (const auto& m : c->runs) {
            txv.push_back(m.udp->sentMpps());
            drop.push_back(sockDropPct(m));
          }
          fprintf(out, "%-12s %8s %15s %8s %8s %11s %8s %11s %6s %9s\n", d.c_str(), num(med, dec).c_str(),
                  range.c_str(), num(ratioTo(med, ref), 2).c_str(), num(median(txv), 3).c_str(), cpu.c_str(),
                  machine.c_str(), num(median(drop), 2).c_str(), noisy.c_str(), two.c_str());
        }
        for (const auto& e : c->errors) fprintf(out, "%-12s   error: %s\n", "", e.c_str());
      }
    }
  }
  fprintf(out,
          "\nCPU s/Gbit (s/Mpkt): CPU seconds (utime + stime) of the benchmark's own tasks -- iperf3 at both\n"
          "ends or the UDP sender and receiver, vdevd, vdev-vm, ksoftirqd, vdev-bench -- per Gbit (per\n"
          "million datagrams) received; softirq work counts for the task it ran on top of. machine: all busy\n"
          "CPU time of the machine (/proc/stat) per Gbit, other load included. noisy: runs in which other\n"
          "load or steal exceeded 15%% of a CPU. sock drop%%: datagrams lost because the receiving socket's\n"
          "buffer was full (UDP RcvbufErrors), in %% of those sent. Nothing is pinned. See\n"
          "docs/performance.md, \"Real senders\".\n");
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
  for (const auto& su : rep.setups)
    if (!su.idleError.empty())
      fprintf(out, "%s run %d: %s\n", su.datapath.c_str(), su.run, su.idleError.c_str());
  for (const auto& su : rep.setups) {
    if (!su.stopProblem.empty())
      fprintf(out, "%s %s run %d: stop: %s\n", su.datapath.c_str(), mtuText(su.mtu).c_str(), su.run,
              su.stopProblem.c_str());
  }
  if (!rep.leftovers.empty()) {
    fprintf(out, "leftovers:");
    for (const auto& l : rep.leftovers) fprintf(out, " %s", l.c_str());
    fprintf(out, "\n");
  }
  if (!rep.fatal.empty()) fprintf(out, "error: %s\n", rep.fatal.c_str());
}

// A JSON object from another program (vdevd, vdev-vm), or null when it is not one.
Json objectOrNull(const std::string& text) {
  if (text.empty()) return nullptr;
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() ? doc : Json(nullptr);
}
Json textOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json cpuJson(const CpuWindow& w) {
  return {{"window_s", fixed(w.seconds, 3)},
          {"machine_busy_s", fixed(w.machine, 3)},
          {"bench_tasks_s", fixed(w.bench, 3)},
          {"steal_s", fixed(w.steal, 3)},
          {"other_load", fixed(w.otherLoad(), 3)}};
}

std::string realJson(const RealReport& rep) {
  const Options& o = *rep.opt;
  Json j;
  jsonHead(j, o.argv);
  j["mode"] = "real";
  j["load_average"] = {{"start", rep.loadStart}, {"end", rep.loadEnd}};  // /proc/loadavg: 1, 5, 15 minutes
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

  Json datapaths = Json::array();
  for (const auto& d : rep.datapaths) {
    auto it = rep.describe.find(d);
    datapaths.push_back({{"name", d}, {"describe", it == rep.describe.end() ? std::string() : it->second}});
  }
  j["datapaths"] = std::move(datapaths);

  Json scenarios = Json::array();
  for (uint32_t mtu : o.mtus) {
    for (const auto& s : kScenarios) {
      if (!runsAt(s, mtu) || (o.idlePorts && !s.withIdle)) continue;
      const bool tcp = s.traffic == Traffic::kTcp;
      Json sc;
      sc["scenario"] = s.id;
      sc["title"] = s.title;
      sc["mtu"] = static_cast<uint64_t>(mtu);
      sc["unit"] = tcp ? "gbit_s" : "mpps_received";
      sc["cpu_unit"] = tcp ? "cpu_s_per_gbit" : "cpu_s_per_mpkt";
      Json results = Json::array();
      for (const auto& d : rep.datapaths) {
        const Cell* c = rep.find(s, mtu, d);
        if (!c) continue;
        const double ref = bridgeMedian(rep, s, mtu, d);
        Json r;
        r["datapath"] = d;
        r["idle_ports"] = variantOf(d).idle ? o.idlePorts : 0u;
        r["skipped"] = textOrNull(c->skipped);
        auto v = valuesOf(*c, &Measurement::value);
        r["median"] = fixed(median(v), 4);
        r["min"] = fixed(minOf(v), 4);
        r["max"] = fixed(maxOf(v), 4);
        r["ratio_to_bridge"] = fixed(ratioTo(median(v), ref), 4);  // the bridge on the same ports
        if (o.idlePorts) r["ratio_to_2_ports"] = fixed(ratioTo(median(v), twoPortsMedian(rep, s, mtu, d)), 4);
        r["cpu_s_per_unit"] = fixed(median(valuesOf(*c, &Measurement::cpuPerUnit)), 4);
        r["machine_cpu_s_per_unit"] = fixed(median(valuesOf(*c, &Measurement::machinePerUnit)), 4);
        r["noisy_runs"] = noisyRuns(*c);
        Json runs = Json::array();
        for (const auto& m : c->runs) {
          Json x;
          x["run"] = m.run;
          x["value"] = fixed(m.value, 4);
          x["cpu_s_per_unit"] = fixed(m.cpuPerUnit, 4);
          x["machine_cpu_s_per_unit"] = fixed(m.machinePerUnit, 4);
          if (m.tcp) {
            x["bytes"] = m.tcp->bytes;
            x["seconds"] = fixed(m.tcp->seconds, 3);
            x["retransmits"] = m.tcp->retransmits;
          }
          if (m.udp) {
            x["sent"] = m.udp->sent;
            x["received"] = m.udp->received;
            x["rcvbuf_errors"] = m.udp->rcvbufErrors;
            x["seconds"] = fixed(m.udp->seconds, 3);
            x["sent_mpps"] = fixed(m.udp->sentMpps(), 4);
          }
          x["cpu"] = cpuJson(m.cpu);
          x["noisy"] = m.cpu.noisy;
          runs.push_back(std::move(x));
        }
        r["runs"] = std::move(runs);
        r["errors"] = c->errors;
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
  Json skipped = Json::array();
  for (const auto& [what, why] : rep.skipped) skipped.push_back({{"what", what}, {"reason", why}});
  j["skipped"] = std::move(skipped);
  jsonTail(j, rep.leftovers, rep.fatal);
  return dumpJson(j);
}

// Which cells are measured, which skipped and why; the missing tools.
Status plan(const Options& o, RealReport& rep) {
  const bool wantsVdevd =
      std::any_of(o.datapaths.begin(), o.datapaths.end(), [](const std::string& d) { return isVdevd(d); });
  if (wantsVdevd) rep.vdevdPath = findVdevd(o.vdevdPath);
  rep.vdevVmPath = findVdevVm(o.vdevVmPath);
  rep.iperf3Path = testkit::findExecutable("iperf3");
  if (rep.iperf3Path.empty()) return Error{0, "iperf3 not found (Debian: apt-get install iperf3)"};
  if (!o.vdevVmPath.empty() && rep.vdevVmPath.empty())
    return Error{0, "--vdev-vm " + o.vdevVmPath + " is not an executable file"};
  for (const auto& d : o.datapaths) {
    if (isVdevd(d) && rep.vdevdPath.empty()) {
      std::string why = o.vdevdPath.empty() ? "vdevd not found (build it, or use --vdevd PATH)"
                                            : "--vdevd " + o.vdevdPath + " is not an executable file";
      if (o.datapathsGiven) return Error{0, why};
      rep.skipped.push_back({d, why});
      logWarn("skipping %s: %s", d.c_str(), why.c_str());
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
  for (uint32_t mtu : o.mtus) {
    for (const auto& s : kScenarios) {
      if (!runsAt(s, mtu) || (needsVm(s) && rep.vdevVmPath.empty()) || (o.idlePorts && !s.withIdle)) continue;
      for (const auto& d : rep.datapaths) (void)rep.cell(s, mtu, d);
    }
  }
  return {};
}

bool succeeded(const RealReport& rep) {
  if (!rep.fatal.empty() || !rep.leftovers.empty()) return false;
  for (const auto& [key, c] : rep.cells) {
    if (!c.skipped.empty()) continue;
    if (!c.errors.empty() || c.runs.empty()) return false;
    for (const auto& m : c.runs)
      if (!(m.value > 0)) return false;
  }
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
  return std::find(v.begin(), v.end(), name) != v.end();
}

int runReal(const Options& o) {
  RealReport rep;
  rep.opt = &o;
  rep.prefix = "vb" + std::to_string(getpid());
  installStopSignals();
  rep.loadStart = loadAverage();
  Status s = plan(o, rep);
  char tmpl[] = "/tmp/vdev-bench.XXXXXX";
  std::string workDir;
  if (s.ok() && mkdtemp(tmpl)) workDir = tmpl;
  if (s.ok()) {
    RealRunner runner(o, rep, workDir.empty() ? "/tmp" : workDir);
    s = runner.runAll();
  }
  if (!s.ok()) rep.fatal = s.error().message();
  if (!workDir.empty()) rmdir(workDir.c_str());
  rep.loadEnd = loadAverage();
  rep.leftovers = leftovers(rep.prefix);
  if (o.json) fputs(realJson(rep).c_str(), stdout);
  else printReal(rep, stdout);
  fflush(stdout);
  if (!rep.fatal.empty()) fprintf(stderr, "vdev-bench: %s\n", rep.fatal.c_str());
  return succeeded(rep) ? 0 : 1;
}

}  // namespace vdev::bench
