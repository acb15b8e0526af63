// real.cpp - see real.h.
#include "real.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
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
};
const ScenarioDef kScenarios[] = {
    {"tcp-a-b", "TCP container A -> container B", Traffic::kTcp, 0, 1, false},
    {"tcp-b-a", "TCP container B -> container A", Traffic::kTcp, 1, 0, false},
    {"udp-a-b", "UDP container A -> container B, 64-byte frames", Traffic::kUdp, 0, 1, true},
    {"tcp-vm-a", "TCP VM (vdev-vm guest) -> container A", Traffic::kTcp, 2, 0, true},
    {"tcp-a-vm", "TCP container A -> VM (vdev-vm guest)", Traffic::kTcp, 0, 2, true},
};
bool needsVm(const ScenarioDef& s) { return s.from == 2 || s.to == 2; }
bool runsAt(const ScenarioDef& s, uint32_t mtu) { return !s.baseMtuOnly || mtu == kBaseMtu; }

// ---- the datapaths ------------------------------------------------------------

// The Linux bridge over every port, learning (STP off: ports forward at once).
class RealBridge : public Datapath {
 public:
  explicit RealBridge(const RealTopology& t) : topo_(t) {}
  ~RealBridge() override { (void)stop(); }
  std::string name() const override { return kBridge; }
  std::string describe() const override {
    return "Linux bridge " + topo_.bridgeName() + " (learning, STP off), every port enslaved";
  }
  Status start() override {
    const std::string& ns = topo_.dut().name();
    VB_TRY(runCommand({"ip", "-n", ns, "link", "add", topo_.bridgeName(), "type", "bridge", "stp_state", "0"}));
    created_ = true;
    for (const auto& p : topo_.ports())
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
  bool created_ = false;
};

struct TcFwdDeleter {
  void operator()(vb_tc_fwd* s) const { vb_tc_fwd__destroy(s); }
};

// tc_fwd.bpf.c on the tc ingress hook of every port, its table filled with
// the stations: the kernel's skb redirect with nothing else around it.
class TcRedirect : public Datapath {
 public:
  explicit TcRedirect(const RealTopology& t) : topo_(t) {}
  ~TcRedirect() override { (void)stop(); }
  std::string name() const override { return kTcRedirect; }
  std::string describe() const override {
    return "tc_fwd.bpf.c at clsact ingress of every port: bpf_redirect_peer() into a container's veth, "
           "bpf_redirect() to the VM's tap, by destination MAC";
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
    for (const auto& p : topo_.ports()) {
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
  std::unique_ptr<vb_tc_fwd, TcFwdDeleter> skel_;
  std::vector<std::unique_ptr<TcIngress>> hooks_;
  std::string stats_;
};

// vdevd of this build with its defaults (vdevd) or --no-fast-path
// (vdevd-own), on every port, in the DUT namespace; not pinned, like
// everything else of --real.
VdevdSpec realVdevdSpec(const std::string& kind, const RealTopology& t, const Options& o) {
  VdevdSpec s;
  s.kind = kind;
  s.ns = &t.dut();
  s.prio = o.dpPrio;
  for (const auto& p : t.ports()) {
    s.args.push_back("--port");
    s.args.push_back(p);
  }
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
  return s;
}

std::unique_ptr<Datapath> makeRealDatapath(const std::string& kind, const RealTopology& t, const Options& o,
                                           const std::string& vdevdPath, const std::string& workDir, int serial) {
  if (kind == kBridge) return std::make_unique<RealBridge>(t);
  if (kind == kTcRedirect) return std::make_unique<TcRedirect>(t);
  const std::string n = std::to_string(serial);
  return makeVdevd(realVdevdSpec(kind, t, o), vdevdPath, workDir + "/vdevd-stats-" + n + ".json",
                   workDir + "/vdevd-" + n + ".log");
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

struct Setup {  // one datapath on one fresh topology
  int run = 0;
  uint32_t mtu = 0;
  std::string datapath;
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
    auto topo = RealTopology::create(rep_.prefix, mtu, vm, rep_.vdevVmPath,
                                     workDir_ + "/vdev-vm-" + std::to_string(serial) + ".log");
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
    }
    Status sp = dp->stop();
    if (!sp.ok()) su.stopProblem = sp.error().message();
    su.stats = dp->statsJson();
    dp.reset();  // before the topology: it detaches from the ports
    su.guest = t.stopGuest();
    topo.value().reset();
    rep_.setups.push_back(su);
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
double bridgeMedian(const RealReport& rep, const ScenarioDef& s, uint32_t mtu) {
  const Cell* b = rep.find(s, mtu, kBridge);
  return b ? median(valuesOf(*b, &Measurement::value)) : NAN;
}
double ratioTo(double v, double ref) { return std::isfinite(v) && std::isfinite(ref) && ref > 0 ? v / ref : NAN; }
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
  fprintf(out, "datapaths:\n");
  for (const auto& d : rep.datapaths) {
    auto it = rep.describe.find(d);
    fprintf(out, "  %-11s %s\n", d.c_str(), it == rep.describe.end() ? "(not set up)" : it->second.c_str());
  }
  for (const auto& [what, why] : rep.skipped) fprintf(out, "skipped: %s: %s\n", what.c_str(), why.c_str());

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
      if (tcp)
        fprintf(out, "%-12s %8s %15s %8s %11s %8s %6s\n", "datapath", "Gbit/s", "(min-max)", "x bridge", "CPU s/Gbit",
                "machine", "noisy");
      else
        fprintf(out, "%-12s %8s %15s %8s %8s %11s %8s %11s %6s\n", "datapath", "Mpps rx", "(min-max)", "x bridge",
                "Mpps tx", "CPU s/Mpkt", "machine", "sock drop%", "noisy");
      const double ref = bridgeMedian(rep, s, mtu);
      for (const auto& d : rep.datapaths) {
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
        if (tcp) {
          fprintf(out, "%-12s %8s %15s %8s %11s %8s %6s\n", d.c_str(), num(med, dec).c_str(), range.c_str(),
                  num(ratioTo(med, ref), 2).c_str(), cpu.c_str(), machine.c_str(), noisy.c_str());
        } else {
          std::vector<double> txv, drop;
          for (const auto& m : c->runs) {
            txv.push_back(m.udp->sentMpps());
            drop.push_back(sockDropPct(m));
          }
          fprintf(out, "%-12s %8s %15s %8s %8s %11s %8s %11s %6s\n", d.c_str(), num(med, dec).c_str(), range.c_str(),
                  num(ratioTo(med, ref), 2).c_str(), num(median(txv), 3).c_str(), cpu.c_str(), machine.c_str(),
                  num(median(drop), 2).c_str(), noisy.c_str());
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
      if (!runsAt(s, mtu)) continue;
      const bool tcp = s.traffic == Traffic::kTcp;
      Json sc;
      sc["scenario"] = s.id;
      sc["title"] = s.title;
      sc["mtu"] = static_cast<uint64_t>(mtu);
      sc["unit"] = tcp ? "gbit_s" : "mpps_received";
      sc["cpu_unit"] = tcp ? "cpu_s_per_gbit" : "cpu_s_per_mpkt";
      const double ref = bridgeMedian(rep, s, mtu);
      Json results = Json::array();
      for (const auto& d : rep.datapaths) {
        const Cell* c = rep.find(s, mtu, d);
        if (!c) continue;
        Json r;
        r["datapath"] = d;
        r["skipped"] = textOrNull(c->skipped);
        auto v = valuesOf(*c, &Measurement::value);
        r["median"] = fixed(median(v), 4);
        r["min"] = fixed(minOf(v), 4);
        r["max"] = fixed(maxOf(v), 4);
        r["ratio_to_bridge"] = fixed(ratioTo(median(v), ref), 4);
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
                      {"datapath_stats", objectOrNull(su.stats)},
                      {"vm", objectOrNull(su.guest)},
                      {"stop_problem", textOrNull(su.stopProblem)},
                      {"error", textOrNull(su.error)}});
  j["setups"] = std::move(setups);
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
  }
  if (rep.vdevVmPath.empty()) {
    rep.skipped.push_back({"the VM scenarios", "vdev-vm not found (build it, or use --vdev-vm PATH)"});
    logWarn("skipping the VM scenarios: vdev-vm not found (build it, or use --vdev-vm PATH)");
  }
  for (uint32_t mtu : o.mtus) {
    for (const auto& s : kScenarios) {
      if (!runsAt(s, mtu) || (needsVm(s) && rep.vdevVmPath.empty())) continue;
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
    if (!su.stopProblem.empty()) return false;
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
