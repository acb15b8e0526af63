// vdev-bench - forwarding benchmark: vdevd against the Linux bridge and the
// kernel's XDP redirect, over the same ports, in one invocation. See --help
// and docs/performance.md.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "datapath.h"
#include "frame.h"
#include "generator.h"
#include "latency.h"
#include "options.h"
#include "real.h"
#include "report.h"
#include "runner.h"
#include "sys.h"
#include "topology.h"
#include "two_host.h"

using namespace vdev::bench;

namespace {

// Measures every datapath; fills rep. Everything created is owned by locals
// of this function, so returning (error or not) removes it.
Status benchmark(const Options& o, const std::string& vdevdPath, const std::vector<std::string>& datapaths,
                 const std::string& workDir, Report* rep) {
  auto topo = Topology::create(o.scenario, rep->prefix, o.bridgeNfCall, o.idlePorts);
  if (!topo) return topo.error();
  Topology& t = *topo.value();
  logInfo("topology %s ready; sink: %s", rep->prefix.c_str(), t.sink().describe().c_str());
  rep->bridgeNfCallIptables = t.bridgeNfCallIptables();

  const vdev::testkit::UdpFrameSpec spec{.dst = t.sinkMac(),
                                         .src = t.genMac(),
                                         .src_ip = 0xc6120001,  // 198.18.0.1
                                         .dst_ip = 0xc6120101,  // 198.18.1.1
                                         .src_port = 1024,
                                         .dst_port = VB_UDP_DPORT};

  // The offered load: the BPF generator into a veth, or the VM writing
  // into its tap (tap-veth).
  std::unique_ptr<TrafficSource> source;
  if (t.portAIsTap()) {
    source = std::make_unique<FrameWriter>(t.vm()->fd(), "tap " + t.portA(), buildFrame(spec, o.frameSize),
                                           o.tapWriters, o.genCpu);
  } else {
    GeneratorConfig gc;
    gc.frame = buildFrame(spec, o.frameSize);
    gc.threads = o.genThreads;
    gc.cpu = o.genCpu;
    gc.repeatPerCall = o.repeat;
    gc.batchSize = o.batch;
    gc.pacedBatchSize = o.paceBatch;
    gc.relayCopies = o.relayCopies;
    gc.prog.sportBase = spec.src_port;
    gc.prog.sportCount = o.sportCount;
    auto gen = Generator::create(t.genNs(), t.genIf(), gc);
    if (!gen) return gen.error();
    source = std::move(gen.value());
  }
  rep->generator = source->describe();

  // Latency: a responder in every container that answers, a requester per
  // pair. They live as long as the topology.
  std::vector<std::unique_ptr<UdpResponder>> responders;
  std::vector<std::unique_ptr<Pinger>> pingers;
  if (o.latency != LatencyMode::kOff) {
    int sinkCpu = o.sinkCpu >= 0 ? o.sinkCpu : o.genCpu;
    std::vector<const Endpoint*> answering;
    for (const auto& pair : t.latencyPairs()) {
      rep->latencyPairs.push_back(pair.name + ": " + pair.from->name + " -> " + pair.to->name);
      if (pair.to->ns && std::find(answering.begin(), answering.end(), pair.to) == answering.end()) {
        auto r = UdpResponder::create(*pair.to->ns, pair.to->ip, sinkCpu, o.latPrio, o.latUdpChecksum);
        if (!r) return r.error();
        responders.push_back(std::move(r.value()));
        answering.push_back(pair.to);
      }
      auto p = Pinger::create(*pair.from->ns, pair.from->ip, pair.to->ip, o.frameSize, o.latUdpChecksum);
      if (!p) return p.error();
      pingers.push_back(std::move(p.value()));
    }
  }
  std::vector<Pinger*> pingerPtrs;
  for (auto& p : pingers) pingerPtrs.push_back(p.get());

  // Exact NAPI time (raw tracepoints on softirq entry/exit and napi_poll);
  // without it the CPU figures fall back to coarser methods (see runner.h).
  std::unique_ptr<NapiTimer> timer;
  if (o.napiTiming != NapiTiming::kOff) {
    auto nt = NapiTimer::create(rep->prefix);
    Status st = nt ? Status() : nt.error();
    if (nt && o.napiTiming == NapiTiming::kOn) st = nt.value()->attach();  // split: per run
    if (st.ok()) timer = std::move(nt.value());
    else logWarn("NAPI timing unavailable, CPU figures are coarser: %s", st.error().message().c_str());
  }

  Runner runner(t, *source, o, timer.get());
  for (const auto& name : datapaths) rep->results.push_back({name, "", {}, {}, {}, {}});
  auto interrupted = [] { return Error{0, "interrupted by a signal"}; };
  // One measurement on a fresh start of dr's datapath: measure(dp) gives a
  // result, kept in `into` and, unless --json or -v, shown by progress(); a
  // failure goes to dr.errors as "WHAT run N: ...".
  auto once = [&](DatapathResult& dr, int run, const char* what, const char* logSuffix, auto&& measure, auto& into,
                  auto&& progress) -> Status {
    auto dp = makeDatapath(dr.datapath, t, o, vdevdPath, workDir);
    if (!dp) return dp.error();
    dr.describe = dp.value()->describe();
    logInfo("run %d/%d: %s%s", run, o.runs, dr.datapath.c_str(), logSuffix);
    auto r = measure(*dp.value());
    if (stopRequested()) return interrupted();
    if (!r) {
      dr.errors.push_back(std::string(what) + " run " + std::to_string(run) + ": " + r.error().message());
      logWarn("%s %s run %d failed: %s", dr.datapath.c_str(), what, run, r.error().message().c_str());
      return {};
    }
    if (!o.json && !verbose()) progress(r.value());
    into.push_back(std::move(r.value()));
    return {};
  };
  for (int run = 1; run <= o.runs; ++run) {
    double vdevdPeak = 0;  // --find-rate: the first vdevd datapath's peak in this run
    for (auto& dr : rep->results) {
      if (stopRequested()) return interrupted();
      const char* name = dr.datapath.c_str();
      if (o.findRate) {
        auto search = [&](Datapath& dp) {
          auto rs = runner.findRate(dp, run, vdevdPeak);
          if (rs && vdevdPeak == 0 && isVdevd(dr.datapath)) vdevdPeak = rs->peak.forwardedPps();
          return rs;
        };
        VB_TRY(once(dr, run, "loss search", ", loss search", search, dr.rateRuns, [&](const RateSearch& rs) {
          fprintf(stderr, "vdev-bench: %-13s run %d: peak %.3f Mpps forwarded, loss-free %.3f Mpps\n", name, run,
                  rs.peak.forwardedPps() / 1e6, rs.lossFreePps / 1e6);
        }));
      } else if (o.latency != LatencyMode::kOnly) {
        VB_TRY(once(dr, run, "throughput", "", [&](Datapath& dp) { return runner.measure(dp, run); }, dr.runs,
                    [&](const RunResult& r) {
                      fprintf(stderr, "vdev-bench: %-13s run %d: %.3f Mpps forwarded, %.3f offered\n", name, run,
                              r.forwardedMpps(), r.offeredMpps());
                    }));
      }
      if (o.latency != LatencyMode::kOff && !pingerPtrs.empty()) {
        VB_TRY(once(dr, run, "latency", ", latency",
                    [&](Datapath& dp) { return runner.measureLatency(dp, run, pingerPtrs); }, dr.latencyRuns,
                    [&](const LatencyRun& lr) {
                      for (const auto& p : lr.pairs)
                        fprintf(stderr,
                                "vdev-bench: %-13s run %d: %s round trip p50 %.1f us, p99 %.1f us; after a pause "
                                "p50 %.1f us\n",
                                name, run, p.pair.c_str(), p.light.p50Us, p.light.p99Us, p.pause.p50Us);
                    }));
      }
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const auto code = parseOptions(argc, argv, &o)) return *code;
  setVerbose(o.verbose);

  if (geteuid() != 0) {
    fprintf(stderr, "vdev-bench: must run as root (namespaces, XDP, BPF_PROG_RUN)\n");
    return 1;
  }
  if (o.real) return runReal(o);
  if (o.twoHost) return runTwoHost(o);
  int ncpu = onlineCpus();
  int sinkCpu = o.sinkCpu >= 0 ? o.sinkCpu : o.genCpu;
  for (int c : {o.genCpu, o.dutCpu, sinkCpu}) {
    if (c >= ncpu) {
      fprintf(stderr, "vdev-bench: CPU %d does not exist (%d online)\n", c, ncpu);
      return 2;
    }
  }
  if (o.genCpu == o.dutCpu) logWarn("generator and datapath share CPU %d: results mean little", o.genCpu);

  Report rep;
  rep.opt = &o;
  rep.prefix = "vb" + std::to_string(getpid());

  // Which datapaths run: a missing vdevd, DPDK or Open vSwitch is skipped when the
  // list is the default one, an error when it was asked for.
  std::vector<std::string> datapaths;
  bool wantsVdevd = false;
  for (const auto& d : o.datapaths) wantsVdevd |= isVdevd(d);
  if (wantsVdevd) rep.vdevdPath = findVdevd(o.vdevdPath);
  for (const auto& d : o.datapaths) {
    std::string why, error;  // the note, and the error when d was asked for
    if (isVdevd(d) && rep.vdevdPath.empty())
      error = why = o.vdevdPath.empty() ? "vdevd not found (build it, or use --vdevd PATH)"
                                        : "--vdevd " + o.vdevdPath + " is not an executable file";
    else if (!(why = datapathMissing(d)).empty())
      error = d + ": " + why;
    if (why.empty()) {
      datapaths.push_back(d);
      continue;
    }
    if (o.datapathsGiven) {
      fprintf(stderr, "vdev-bench: %s\n", error.c_str());
      return 1;
    }
    rep.skipped.push_back({d, why});
    logWarn("skipping %s: %s", d.c_str(), why.c_str());
  }
  if (o.findRate) {
    // The loss at 90% of vdevd's own peak needs that peak first: the first
    // vdevd datapath goes first in each run.
    auto it = std::find_if(datapaths.begin(), datapaths.end(), [](const std::string& d) { return isVdevd(d); });
    if (it != datapaths.end()) std::rotate(datapaths.begin(), it, it + 1);
  }

  installStopSignals();
  // The main thread samples counters: keep it (and the helpers it starts) off
  // the datapath CPU.
  if (Status s = pinTask(0, o.genCpu); !s.ok()) logWarn("%s", s.error().message().c_str());

  // --boost (auto: while paced). A paced generator spins and skips the
  // slots it misses: it needs its CPU. With autogrouping CFS first splits a
  // CPU evenly between sessions, so a build in another session would take
  // half of it whatever the threads' nice: the session's own nice goes to
  // -20 (restored at exit; the generator threads keep nice 0, see
  // generator.cpp). vdevd, a child, is in the same session and gets the
  // same weight against other sessions' load.
  struct AutogroupBoost {
    std::optional<int> old;
    ~AutogroupBoost() {
      if (old) (void)setAutogroupNice(*old);
    }
  } boost;
  if (o.boosted()) {
    if (auto n = autogroupNice(); n && *n > -20) {
      if (Status st = setAutogroupNice(-20); st.ok()) boost.old = n;
      else logWarn("%s", st.error().message().c_str());
    }
  }

  char tmpl[] = "/tmp/vdev-bench.XXXXXX";
  std::string workDir;
  if (mkdtemp(tmpl)) workDir = tmpl;

  Status s = benchmark(o, rep.vdevdPath, datapaths, workDir.empty() ? "/tmp" : workDir, &rep);
  if (!s.ok()) rep.fatal = s.error().message();
  if (!workDir.empty()) rmdir(workDir.c_str());
  rep.leftovers = leftovers(rep.prefix);

  if (o.json) {
    fputs(toJson(rep).c_str(), stdout);
  } else {
    printTable(rep, stdout);
  }
  fflush(stdout);
  if (!rep.fatal.empty()) fprintf(stderr, "vdev-bench: %s\n", rep.fatal.c_str());

  bool ok = rep.fatal.empty() && rep.leftovers.empty();
  for (const auto& d : rep.results) {
    if (!d.errors.empty() || (d.runs.empty() && d.latencyRuns.empty() && d.rateRuns.empty())) ok = false;
    for (const auto& r : d.runs) ok &= r.countsOk;
  }
  return ok ? 0 : 1;
}
