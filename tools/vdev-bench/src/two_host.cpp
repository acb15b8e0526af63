// two_host.cpp - see two_host.h.
#include "two_host.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "datapath.h"
#include "real_datapaths.h"
#include "real_results.h"
#include "report.h"
#include "sys.h"
#include "topology.h"
#include "two_host_topology.h"

namespace vdev::bench {

namespace {

const char kBridge[] = "bridge";
const char kVdevd[] = "vdevd";
const char kTcRedirect[] = "tc-redirect";
// The UDP flood's payload: 64 bytes (a 106-byte frame in the container,
// 156 bytes on the underlay with VXLAN's headers).
constexpr size_t kUdpPayload = 64;
const char* const kHostKey[2] = {"ha", "hb"};
const char* const kHostName[2] = {"host A", "host B"};

// ---- the measures -------------------------------------------------------------

struct MeasureDef {
  const char* id;
  const char* title;  // the table's first column
  Traffic traffic;
  int from, to;       // container index: 0 = A (on host A), 1 = B
};
const MeasureDef kMeasures[] = {
    {"tcp-a-b", "TCP A -> B Gbit/s", Traffic::kTcp, 0, 1},
    {"tcp-b-a", "TCP B -> A Gbit/s", Traffic::kTcp, 1, 0},
    {"udp-a-b", "UDP A -> B Mpps rx", Traffic::kUdp, 0, 1},
};

// ---- the datapaths ------------------------------------------------------------

// One datapath on both hosts: a part on each (the same kind), started host
// A first, stopped host B first. before runs ahead of the parts' start
// (the containers' veths a bridge enslaves), after once both run (the
// containers' veths that vdevd makes). Its statistics: {"ha": host A's,
// "hb": host B's}.
class TwoHostDatapath : public Datapath {
 public:
  using Step = std::function<Status()>;
  TwoHostDatapath(std::string name, std::string describe, std::unique_ptr<Datapath> a,
                  std::unique_ptr<Datapath> b, Step before, Step after)
      : name_(std::move(name)), describe_(std::move(describe)), before_(std::move(before)), after_(std::move(after)) {
    hosts_[0] = std::move(a);
    hosts_[1] = std::move(b);
  }
  ~TwoHostDatapath() override { (void)stop(); }
  std::string name() const override { return name_; }
  std::string describe() const override { return describe_; }
  Status start() override {
    started_ = true;
    if (before_) VB_TRY(before_());
    for (int i = 0; i < 2; ++i) {
      if (Status s = hosts_[i]->start(); !s.ok()) return Error{s.error().err, kHostName[i] + (": " + s.error().what)};
    }
    return after_ ? after_() : Status{};
  }
  Status stop() override {
    if (!started_) return {};
    started_ = false;
    Status first;
    Json stats = Json::object();
    bool any = false;
    for (int i = 1; i >= 0; --i) {
      Status s = hosts_[i]->stop();
      if (!s.ok() && first.ok()) first = Error{s.error().err, kHostName[i] + (": " + s.error().what)};
    }
    for (int i = 0; i < 2; ++i) {
      stats[kHostKey[i]] = objectOrNull(hosts_[i]->statsJson());
      any |= !stats[kHostKey[i]].is_null();
    }
    stats_ = any ? stats.dump() : "";
    return first;
  }
  std::string statsJson() const override { return stats_; }

 private:
  std::string name_, describe_;
  std::unique_ptr<Datapath> hosts_[2];
  Step before_, after_;
  bool started_ = false;
  std::string stats_;
};

// vdevd on each host: its defaults, the uplink on its command line, a
// control socket of its own (in the work directory) for vdevctl, no state
// file; the container's veth added at run time, as vdev-cni adds it.
class TwoHostVdevd {
 public:
  TwoHostVdevd(const TwoHostTopology& t, const Options& o, std::string vdevdPath, std::string vdevctlPath,
               std::string workDir, int serial)
      : t_(t), o_(o), vdevd_(std::move(vdevdPath)), vdevctl_(std::move(vdevctlPath)), workDir_(std::move(workDir)),
        serial_(std::to_string(serial)) {}

  std::string socket(int i) const { return workDir_ + "/" + kHostKey[i] + "-" + serial_ + ".sock"; }

  std::unique_ptr<Datapath> onHost(int i) const {
    VdevdSpec s;
    s.kind = kVdevd;
    s.ns = &t_.host(i);
    s.prio = o_.dpPrio;
    s.args = {"--port", TwoHostTopology::kUplinkDev, "--socket", socket(i), "--no-state"};
    for (const auto& a : o_.vdevdArgs) s.args.push_back(a);
    const std::string base = workDir_ + "/vdevd-" + serial_ + "-" + kHostKey[i];
    return makeVdevd(std::move(s), vdevd_, base + ".stats.json", base + ".log");
  }

  // The container's veth, made by vdevd as vdev-cni has it made.
  std::vector<std::string> portAdd(int i) const {
    const Station& c = t_.container(i);
    return {"ip",   "netns",   "exec", t_.host(i).name(), vdevctl_, "-S",   socket(i), "port", "add",
            TwoHostTopology::kPortDev, "type", "veth", "create", "netns", c.ns->name(), "peer", "eth0", "peer-mac",
            formatMac(c.mac), "mtu", std::to_string(t_.mtu())};
  }

  std::string describe() const {
    std::string s = "one vdevd per host with its defaults (skb path at the tc hook, learned unicast on the kernel "
                    "fast path): vdevd --port up0 --socket SOCK --no-state";
    for (const auto& a : o_.vdevdArgs) s += " " + a;
    if (o_.dpPrio) s += " (SCHED_FIFO " + std::to_string(o_.dpPrio) + ")";
    return s + "; the container's veth made by vdevd: vdevctl -S SOCK port add ctr0 type veth create netns C peer "
               "eth0 peer-mac MAC mtu MTU";
  }

 private:
  const TwoHostTopology& t_;
  const Options& o_;
  std::string vdevd_, vdevctl_, workDir_, serial_;
};

std::unique_ptr<Datapath> makeTwoHostDatapath(const std::string& name, TwoHostTopology& t, const Options& o,
                                              const std::string& vdevdPath, const std::string& vdevctlPath,
                                              const std::string& workDir, int serial) {
  const std::vector<std::string> ports{TwoHostTopology::kUplinkDev, TwoHostTopology::kPortDev};
  auto veths = [&t] { return t.addContainerVeths(); };
  if (name == kBridge) {
    const char* desc = "a Linux bridge br0 on each host (learning, STP off) enslaving up0 and ctr0, the host end of "
                       "the container's veth";
    return std::make_unique<TwoHostDatapath>(
        name, desc, std::make_unique<BridgeOver>(t.host(0), "br0", ports, name, desc),
        std::make_unique<BridgeOver>(t.host(1), "br0", ports, name, desc), veths, nullptr);
  }
  if (name == kTcRedirect) {
    const char* desc = "tc_fwd.bpf.c at clsact ingress of ctr0 and up0 on each host, by destination MAC: "
                       "bpf_redirect() out of up0 to the other host's container, bpf_redirect_peer() into the local "
                       "container's eth0";
    std::unique_ptr<Datapath> part[2];
    for (int i = 0; i < 2; ++i) {
      std::vector<TcFwdDest> dests{{t.container(i).mac, TwoHostTopology::kPortDev, true},
                                   {t.container(1 - i).mac, TwoHostTopology::kUplinkDev, false}};
      part[i] = std::make_unique<TcFwd>(t.host(i), std::move(dests), ports, name, desc);
    }
    return std::make_unique<TwoHostDatapath>(name, desc, std::move(part[0]), std::move(part[1]), veths, nullptr);
  }
  auto v = std::make_shared<TwoHostVdevd>(t, o, vdevdPath, vdevctlPath, workDir, serial);
  auto portAdds = [v]() -> Status {
    for (int i = 0; i < 2; ++i) VB_TRY(runCommand(v->portAdd(i)));
    return {};
  };
  return std::make_unique<TwoHostDatapath>(name, v->describe(), v->onHost(0), v->onHost(1), nullptr, portAdds);
}

// --vdevctl, else vdevctl in the build tree next to vdev-bench, else PATH.
std::string findVdevctl(const std::string& given) {
  if (!given.empty()) return testkit::isExecutable(given) ? given : "";
  const std::string cand = selfDir() + "/../vdevctl/vdevctl";
  if (testkit::isExecutable(cand)) return cand;
  return testkit::findExecutable("vdevctl");
}

// ---- results ------------------------------------------------------------------

struct Setup {  // one datapath on one fresh topology
  int run = 0;
  Uplink uplink = Uplink::kVxlan;
  std::string datapath;
  std::string stats;  // the datapath's statistics on both hosts (JSON), or ""
  std::string stopProblem, error;
};

struct TwoHostReport : RealSession {
  std::string vdevctlPath;
  std::vector<Uplink> uplinks;
  std::map<std::tuple<Uplink, std::string, std::string>, Cell> cells;  // (uplink, measure, datapath)
  std::vector<Setup> setups;

  Cell& cell(Uplink u, const MeasureDef& m, const std::string& dp) { return cells[{u, m.id, dp}]; }
  const Cell* find(Uplink u, const MeasureDef& m, const std::string& dp) const {
    auto it = cells.find({u, m.id, dp});
    return it == cells.end() ? nullptr : &it->second;
  }
  double medianOf(Uplink u, const MeasureDef& m, const std::string& dp) const {
    const Cell* c = find(u, m, dp);
    return c ? median(valuesOf(*c, &Measurement::value)) : NAN;
  }
};

// ---- the measurement ----------------------------------------------------------

class TwoHostRunner {
 public:
  TwoHostRunner(const Options& o, TwoHostReport& rep, std::string workDir)
      : o_(o), rep_(rep), workDir_(std::move(workDir)) {}

  // Every datapath on a fresh topology over every uplink, run after run.
  Status runAll() {
    return interleaved(o_.runs, rep_.uplinks, rep_.datapaths,
                       [this](int run, Uplink u, const std::string& dp) { measure(run, u, dp); });
  }

 private:
  void measure(int run, Uplink u, const std::string& dpName) {
    Setup su;
    su.run = run;
    su.uplink = u;
    su.datapath = dpName;
    const std::string where = dpName + " " + uplinkName(u) + " run " + std::to_string(run);
    auto failAll = [&](const std::string& what, const Status& st) {
      su.error = what + ": " + st.error().message();
      logWarn("%s: %s", where.c_str(), su.error.c_str());
      for (const auto& m : kMeasures)
        rep_.cell(u, m, dpName).errors.push_back("run " + std::to_string(run) + ": " + su.error);
    };
    logInfo("run %d/%d: %s, %s uplink", run, o_.runs, dpName.c_str(), uplinkName(u));
    auto topo = TwoHostTopology::create(rep_.prefix, u);
    if (!topo) {
      failAll("set-up", topo.error());
      rep_.setups.push_back(su);
      return;
    }
    TwoHostTopology& t = *topo.value();
    noteBridgeNf(rep_, t.host(0));
    auto dp = makeTwoHostDatapath(dpName, t, o_, rep_.vdevdPath, rep_.vdevctlPath, workDir_, ++serial_);
    rep_.describe[dpName] = dp->describe();
    Status st = dp->start();
    if (st.ok()) st = t.finishContainers();
    if (st.ok()) st = warmUp(t.container(0), t.container(1));
    if (!st.ok()) {
      failAll("start", st);
    } else {
      for (const auto& m : kMeasures) {
        if (stopRequested()) break;
        measureOne(m, run, u, dpName, t.container(m.from), t.container(m.to));
      }
    }
    Status sp = dp->stop();
    if (!sp.ok()) su.stopProblem = sp.error().message();
    su.stats = dp->statsJson();
    dp.reset();  // before the topology: it detaches from the ports
    topo.value().reset();
    rep_.setups.push_back(su);
  }

  void measureOne(const MeasureDef& md, int run, Uplink u, const std::string& dpName, const Station& from,
                  const Station& to) {
    const std::string what = dpName + " " + md.id + " " + uplinkName(u) + " run " + std::to_string(run);
    const std::string label = padRight(dpName, 11) + " " + padRight(uplinkName(u), 5) + " " + padRight(md.id, 7);
    measureInto(rep_.cell(u, md, dpName), md.traffic, from, to, o_, run, what, label, workDir_, kUdpPayload);
  }

  const Options& o_;
  TwoHostReport& rep_;
  std::string workDir_;
  int serial_ = 0;
};

// ---- output ---------------------------------------------------------------------

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string uplinksText(const TwoHostReport& rep) {
  std::vector<std::string> v;
  for (Uplink u : rep.uplinks) v.emplace_back(uplinkName(u));
  return joined(v, ",");
}

// The last column: every TCP run's retransmissions ("-" where iperf3 gave
// none), or the UDP flood's Mpps sent and socket drops.
std::string perRunText(const Cell& c, const CellText& x) {
  bool tcp = false;
  std::vector<std::string> retr;
  for (const auto& m : c.runs) {
    if (!m.tcp) continue;
    tcp = true;
    retr.push_back(m.tcp->retransmits ? std::to_string(*m.tcp->retransmits) : "-");
  }
  if (tcp) return "retransmits " + joined(retr, ",");
  return "sent " + x.txMpps + " Mpps, sock drop " + x.sockDrop + "%";
}

void printTwoHost(const TwoHostReport& rep, FILE* out) {
  const Options& o = *rep.opt;
  struct utsname u;
  uname(&u);
  fprintf(out, "vdev-bench --two-host: %d run%s x %.1f s per measurement, uplink %s; Linux %s, %d CPUs; medians\n",
          o.runs, o.runs == 1 ? "" : "s", o.duration, uplinksText(rep).c_str(), u.release, onlineCpus());
  printSessionHead(rep, out, "the hosts' namespaces");

  for (Uplink up : rep.uplinks) {
    fprintf(out, "\n%s uplink: %s\n", uplinkName(up), describeUplink(up).c_str());
    fprintf(out, "%-18s %-12s %8s %17s %8s %10s %8s %6s  %s\n", "measure", "datapath", "median", "(min-max)",
            "x bridge", "CPU s/unit", "machine", "noisy", "per run");
    for (const auto& md : kMeasures) {
      const char* title = md.title;
      const double ref = rep.medianOf(up, md, kBridge);
      const int dec = md.traffic == Traffic::kTcp ? 2 : 3;
      for (const auto& d : rep.datapaths) {
        const Cell* c = rep.find(up, md, d);
        if (!c) continue;
        if (c->runs.empty()) {
          fprintf(out, "%-18s %-12s %8s   missing: %s\n", title, d.c_str(), "-",
                  c->errors.empty() ? "not measured" : c->errors[0].c_str());
        } else {
          const CellText x = cellText(*c, ref, dec);
          fprintf(out, "%-18s %-12s %8s %17s %8s %10s %8s %6s  %s\n", title, d.c_str(), x.median.c_str(),
                  x.range.c_str(), x.ratio.c_str(), x.cpu.c_str(), x.machine.c_str(), x.noisy.c_str(),
                  perRunText(*c, x).c_str());
          for (const auto& e : c->errors) fprintf(out, "%-18s %-12s   error: %s\n", "", "", e.c_str());
        }
        title = "";
      }
    }
  }
  fprintf(out,
          "\nTCP: iperf3, one stream, Gbit/s at the receiver; retransmits: the sender's, per run. UDP: %zu-byte\n"
          "payloads sendmmsg()ed from one thread in container A, Mpps received by one thread in B; sent: Mpps\n"
          "sendmmsg() took; sock drop: datagrams lost in the receiving socket's full buffer, in %% of those\n"
          "sent. x bridge: the median over the bridge's on the same uplink. CPU s/unit: CPU seconds (utime +\n"
          "stime) of the benchmark's own tasks -- iperf3 at both ends or the UDP sender and receiver, both\n"
          "vdevd, ksoftirqd, vdev-bench -- per Gbit (UDP: per million datagrams) received; machine: all busy\n"
          "CPU time of the machine (/proc/stat) per unit, other load included. noisy: runs in which other load\n"
          "or steal exceeded 15%% of a CPU. See docs/performance.md, \"Two hosts\".\n",
          kUdpPayload);
  for (const auto& su : rep.setups) {
    if (!su.stopProblem.empty())
      fprintf(out, "%s %s run %d: stop: %s\n", su.datapath.c_str(), uplinkName(su.uplink), su.run,
              su.stopProblem.c_str());
  }
  printSessionTail(rep, out);
}

std::string twoHostJson(const TwoHostReport& rep) {
  const Options& o = *rep.opt;
  Json j;
  sessionJsonHead(j, rep, "two-host");
  Json uplinks = Json::array();
  for (Uplink u : rep.uplinks) uplinks.push_back(uplinkName(u));
  j["config"] = {{"runs", o.runs},
                 {"duration_s", fixed(o.duration, 3)},
                 {"uplinks", std::move(uplinks)},
                 {"datapaths", rep.datapaths},
                 {"prefix", rep.prefix},
                 {"vdevd", rep.vdevdPath},
                 {"vdevctl", rep.vdevctlPath},
                 {"iperf3", rep.iperf3Path},
                 {"bridge_nf_call_iptables", rep.bridgeNf},
                 {"udp",
                  {{"payload_bytes", static_cast<uint64_t>(kUdpPayload)},
                   {"frame_len", static_cast<uint64_t>(kUdpPayload + 42)},
                   {"batch", static_cast<uint64_t>(kUdpFloodBatch)}}}};
  j["datapaths"] = datapathsJson(rep);

  Json ups = Json::array();
  for (Uplink u : rep.uplinks) {
    Json measures = Json::array();
    for (const auto& md : kMeasures) {
      const bool tcp = md.traffic == Traffic::kTcp;
      Json results = Json::array();
      for (const auto& d : rep.datapaths) {
        const Cell* c = rep.find(u, md, d);
        if (!c) continue;
        Json r;
        r["datapath"] = d;
        cellSummaryJson(r, *c, rep.medianOf(u, md, kBridge));
        cellRunsJson(r, *c);
        results.push_back(std::move(r));
      }
      measures.push_back({{"measure", md.id},
                          {"title", md.title},
                          {"unit", tcp ? "gbit_s" : "mpps_received"},
                          {"cpu_unit", tcp ? "cpu_s_per_gbit" : "cpu_s_per_mpkt"},
                          {"results", std::move(results)}});
    }
    ups.push_back({{"uplink", uplinkName(u)},
                   {"container_mtu", static_cast<uint64_t>(containerMtu(u))},
                   {"describe", describeUplink(u)},
                   {"measures", std::move(measures)}});
  }
  j["uplinks"] = std::move(ups);

  Json setups = Json::array();
  for (const auto& su : rep.setups)
    setups.push_back({{"run", su.run},
                      {"uplink", uplinkName(su.uplink)},
                      {"datapath", su.datapath},
                      {"datapath_stats", objectOrNull(su.stats)},
                      {"stop_problem", textOrNull(su.stopProblem)},
                      {"error", textOrNull(su.error)}});
  j["setups"] = std::move(setups);
  j["skipped"] = skippedJson(rep);
  jsonTail(j, rep.leftovers, rep.fatal);
  return dumpJson(j);
}

// Which datapaths are measured, which skipped and why; the missing tools.
Status plan(const Options& o, TwoHostReport& rep) {
  for (const auto& name : o.uplinks) {
    Uplink u;
    if (!parseUplink(name, &u)) return Error{0, "unknown uplink " + name};
    rep.uplinks.push_back(u);
  }
  VB_TRY(findIperf3(rep));
  for (const auto& d : o.datapaths) {
    if (d == kVdevd) {
      rep.vdevdPath = findVdevd(o.vdevdPath);
      rep.vdevctlPath = findVdevctl(o.vdevctlPath);
      std::string why = vdevdMissing(rep);
      if (why.empty() && rep.vdevctlPath.empty())
        why = o.vdevctlPath.empty() ? "vdevctl not found (build it, or use --vdevctl PATH)"
                                    : "--vdevctl " + o.vdevctlPath + " is not an executable file";
      if (!why.empty()) {
        VB_TRY(skipDatapath(rep, d, why));
        continue;
      }
    }
    rep.datapaths.push_back(d);
  }
  for (Uplink u : rep.uplinks)
    for (const auto& m : kMeasures)
      for (const auto& d : rep.datapaths) (void)rep.cell(u, m, d);
  return {};
}

bool succeeded(const TwoHostReport& rep) {
  for (const auto& [key, c] : rep.cells)
    if (!cellSucceeded(c)) return false;
  for (const auto& su : rep.setups)
    if (!su.stopProblem.empty()) return false;
  return true;
}

}  // namespace

const std::vector<std::string>& twoHostDatapaths() {
  static const std::vector<std::string> v{kBridge, kVdevd, kTcRedirect};
  return v;
}

bool isTwoHostDatapath(const std::string& name) {
  const auto& v = twoHostDatapaths();
  return std::find(v.begin(), v.end(), name) != v.end();
}

int runTwoHost(const Options& o) {
  TwoHostReport rep;
  rep.opt = &o;
  return runSession(rep, {.plan = [&] { return plan(o, rep); },
                          .run = [&](const std::string& workDir) { return TwoHostRunner(o, rep, workDir).runAll(); },
                          .json = [&] { return twoHostJson(rep); },
                          .print = [&](FILE* out) { printTwoHost(rep, out); },
                          .succeeded = [&] { return succeeded(rep); }});
}

}  // namespace vdev::bench
