// vdev-bench - forwarding benchmark: vdevd against the Linux bridge and the
// kernel's XDP redirect, over the same ports, in one invocation. See --help
// and docs/performance.md.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "datapath.h"
#include "generator.h"
#include "options.h"
#include "report.h"
#include "runner.h"
#include "sys.h"
#include "topology.h"

using namespace vdev::bench;

namespace {

// Measures every datapath; fills rep. Everything created is owned by locals
// of this function, so returning (error or not) removes it.
Status benchmark(const Options& o, const std::string& vdevdPath, const std::vector<std::string>& datapaths,
                 const std::string& workDir, Report* rep) {
  auto topo = Topology::create(o.scenario, o.sinkMode, rep->prefix, o.bridgeNfCall);
  if (!topo) return topo.status();
  logInfo("topology %s ready; sink: %s", rep->prefix.c_str(), topo.value()->sink().describe().c_str());
  rep->bridgeNfCallIptables = topo.value()->bridgeNfCallIptables();

  FrameSpec spec;
  spec.src = topo.value()->genMac();
  spec.dst = topo.value()->sinkMac();
  spec.srcIp = 0xc6120001;  // 198.18.0.1
  spec.dstIp = 0xc6120101;  // 198.18.1.1
  spec.srcPort = 1024;
  spec.dstPort = VB_UDP_DPORT;
  spec.frameSize = o.frameSize;

  GeneratorConfig gc;
  gc.frame = buildFrame(spec);
  gc.threads = o.genThreads;
  gc.cpu = o.genCpu;
  gc.repeatPerCall = o.repeat;
  gc.batchSize = o.batch;
  gc.prog.sportBase = spec.srcPort;
  gc.prog.sportCount = o.sportCount;
  auto gen = Generator::create(topo.value()->genNs(), topo.value()->genIf(), gc);
  if (!gen) return gen.status();

  // Exact NAPI time (raw tracepoints on softirq entry/exit and napi_poll);
  // without it the CPU figures fall back to coarser methods (see runner.h).
  std::unique_ptr<NapiTimer> timer;
  if (o.napiTiming != NapiTiming::kOff) {
    auto t = NapiTimer::create(rep->prefix);
    Status st = t ? Status() : t.status();
    if (t && o.napiTiming == NapiTiming::kOn) st = t.value()->attach();  // split: per run
    if (st.ok()) timer = std::move(t.value());
    else logWarn("NAPI timing unavailable, CPU figures are coarser: %s", st.message().c_str());
  }

  Runner runner(*topo.value(), *gen.value(), o, timer.get());
  for (const auto& name : datapaths) rep->results.push_back({name, {}, {}});
  for (int run = 1; run <= o.runs; ++run) {
    for (auto& dr : rep->results) {
      if (stopRequested()) return Status::failText(EINTR, "interrupted by a signal");
      auto dp = makeDatapath(dr.datapath, *topo.value(), o, vdevdPath, workDir);
      if (!dp) return dp.status();
      logInfo("run %d/%d: %s", run, o.runs, dr.datapath.c_str());
      auto r = runner.measure(*dp.value(), run);
      if (stopRequested()) return Status::failText(EINTR, "interrupted by a signal");
      if (!r) {
        dr.errors.push_back("run " + std::to_string(run) + ": " + r.status().message());
        logWarn("%s run %d failed: %s", dr.datapath.c_str(), run, r.status().message().c_str());
        continue;
      }
      if (!o.json && !verbose())
        fprintf(stderr, "vdev-bench: %-13s run %d: %.3f Mpps forwarded, %.3f offered\n", dr.datapath.c_str(), run,
                r->forwardedMpps(), r->offeredMpps());
      dr.runs.push_back(std::move(r.value()));
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int code = 0;
  if (!parseOptions(argc, argv, &o, &code)) return code;
  setVerbose(o.verbose);

  if (geteuid() != 0) {
    fprintf(stderr, "vdev-bench: must run as root (namespaces, XDP, BPF_PROG_RUN)\n");
    return 1;
  }
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

  // Which datapaths run: a missing vdevd is skipped when the list is the
  // default one, an error when it was asked for.
  std::vector<std::string> datapaths;
  bool wantsVdevd = false;
  for (const auto& d : o.datapaths) wantsVdevd |= d.rfind("vdevd", 0) == 0;
  if (wantsVdevd) rep.vdevdPath = findVdevd(o.vdevdPath);
  for (const auto& d : o.datapaths) {
    if (d.rfind("vdevd", 0) == 0 && rep.vdevdPath.empty()) {
      std::string why = o.vdevdPath.empty() ? "vdevd not found (build it, or use --vdevd PATH)"
                                            : "--vdevd " + o.vdevdPath + " is not an executable file";
      if (o.datapathsGiven) {
        fprintf(stderr, "vdev-bench: %s\n", why.c_str());
        return 1;
      }
      rep.skipped.push_back({d, why});
      logWarn("skipping %s: %s", d.c_str(), why.c_str());
      continue;
    }
    datapaths.push_back(d);
  }

  installStopSignals();
  // The main thread samples counters: keep it (and the helpers it starts) off
  // the datapath CPU.
  if (Status s = pinTask(0, o.genCpu); !s.ok()) logWarn("%s", s.message().c_str());

  char tmpl[] = "/tmp/vdev-bench.XXXXXX";
  std::string workDir;
  if (mkdtemp(tmpl)) workDir = tmpl;

  Status s = benchmark(o, rep.vdevdPath, datapaths, workDir.empty() ? "/tmp" : workDir, &rep);
  if (!s.ok()) rep.fatal = s.message();
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
    if (!d.errors.empty() || d.runs.empty()) ok = false;
    for (const auto& r : d.runs) ok &= r.countsOk;
  }
  return ok ? 0 : 1;
}
