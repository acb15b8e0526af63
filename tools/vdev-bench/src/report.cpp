// report.cpp - see report.h.
#include "report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "json_writer.h"
#include "sys.h"

namespace vdev::bench {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

double medianOf(const std::vector<RunResult>& runs, const std::function<double(const RunResult&)>& f) {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(f(r));
  return median(v);
}

std::string napiText(const Options& o) {
  std::string s = o.napiThreaded ? "threaded" : "softirq";
  if (o.scenario != Scenario::kVethTap && o.sinkThreaded() != o.napiThreaded)
    s += o.sinkThreaded() ? " (sink veth threaded)" : " (sink veth softirq)";
  return s;
}

std::string sinkText(const Options& o) {
  if (o.scenario == Scenario::kVethTap) return "tap";
  return sinkModeName(o.sinkMode);
}

const DatapathResult* findBridge(const Report& rep) {
  for (const auto& d : rep.results)
    if (d.datapath == "bridge") return &d;
  return nullptr;
}

// Median over runs of one percentile of one pair (light load).
double latencyMedian(const DatapathResult& d, const std::string& pair, double LatencyStats::*field) {
  std::vector<double> v;
  for (const auto& lr : d.latencyRuns)
    for (const auto& p : lr.pairs)
      if (p.pair == pair && p.light.samples) v.push_back(p.light.*field);
  return median(v);
}

// The pause samples of every run, pooled.
LatencyStats pausePooled(const DatapathResult& d, const std::string& pair) {
  std::vector<double> all;
  uint64_t sent = 0;
  for (const auto& lr : d.latencyRuns)
    for (const auto& p : lr.pairs)
      if (p.pair == pair) {
        all.insert(all.end(), p.pauseUs.begin(), p.pauseUs.end());
        sent += p.pause.sent;
      }
  return summarizeLatency(all, sent);
}

uint64_t lostLight(const DatapathResult& d, const std::string& pair) {
  uint64_t n = 0;
  for (const auto& lr : d.latencyRuns)
    for (const auto& p : lr.pairs)
      if (p.pair == pair) n += p.light.lost;
  return n;
}

std::vector<std::string> pairsOf(const Report& rep) {
  std::vector<std::string> out;
  for (const auto& d : rep.results)
    for (const auto& lr : d.latencyRuns)
      for (const auto& p : lr.pairs)
        if (std::find(out.begin(), out.end(), p.pair) == out.end()) out.push_back(p.pair);
  return out;
}

std::string ratio(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b) || b <= 0) return "-";
  char buf[32];
  snprintf(buf, sizeof buf, "%.2fx", a / b);
  return buf;
}

void printLatency(const Report& rep, FILE* out) {
  const Options& o = *rep.opt;
  bool any = false;
  for (const auto& d : rep.results) any |= !d.latencyRuns.empty();
  if (!any) return;
  const DatapathResult* br = findBridge(rep);
  fprintf(out,
          "\nround trip, microseconds (UDP request -> answer -> back; requester and responder at %s):\n"
          "  light load: %d probes %.0f us apart per run, percentiles of each run, median over runs;\n"
          "  after a pause: %d probes per run, each after %.0f ms without traffic, all runs pooled\n",
          o.latPrio ? ("SCHED_FIFO " + std::to_string(o.latPrio)).c_str() : "normal priority", o.latSamples,
          o.latIntervalS * 1e6, o.latPauseSamples, o.latPauseS * 1e3);
  for (const auto& pair : pairsOf(rep)) {
    fprintf(out, "%-24s %8s %8s %8s %8s %5s | %8s %8s %8s %5s | %7s %7s %7s\n", pair.c_str(), "p50", "p90", "p99",
            "max", "lost", "pause50", "pause90", "pausemx", "lost", "p50/br", "p99/br", "pz50/br");
    double bp50 = br ? latencyMedian(*br, pair, &LatencyStats::p50Us) : NAN;
    double bp99 = br ? latencyMedian(*br, pair, &LatencyStats::p99Us) : NAN;
    double bpz = br ? pausePooled(*br, pair).p50Us : NAN;
    for (const auto& d : rep.results) {
      bool has = false;
      for (const auto& lr : d.latencyRuns)
        for (const auto& p : lr.pairs) has |= p.pair == pair;
      if (!has) continue;
      double p50 = latencyMedian(d, pair, &LatencyStats::p50Us), p99 = latencyMedian(d, pair, &LatencyStats::p99Us);
      LatencyStats pz = pausePooled(d, pair);
      int noisy = 0;
      for (const auto& lr : d.latencyRuns) noisy += lr.noisy;
      fprintf(out, "  %-22s %8.1f %8.1f %8.1f %8.1f %5llu | %8.1f %8.1f %8.1f %5llu | %7s %7s %7s%s\n",
              d.datapath.c_str(), p50, latencyMedian(d, pair, &LatencyStats::p90Us), p99,
              latencyMedian(d, pair, &LatencyStats::maxUs), static_cast<unsigned long long>(lostLight(d, pair)),
              pz.p50Us, pz.p90Us, pz.maxUs, static_cast<unsigned long long>(pz.lost), ratio(p50, bp50).c_str(),
              ratio(p99, bp99).c_str(), ratio(pz.p50Us, bpz).c_str(),
              noisy ? ("  " + std::to_string(noisy) + " noisy").c_str() : "");
    }
  }
  fprintf(out,
          "  target: vdevd's default mode (vdevd-fast here) at most 1.5x the bridge's p50 and p99, and at\n"
          "  most 1x with busy polling (vdevd-spin is the nearest vdevd's own path has); the first frame\n"
          "  after a pause within the same budget.\n");
}

const RateTrial* at90(const RateSearch& rs) { return rs.at90 ? &*rs.at90 : nullptr; }

void printRateSearch(const Report& rep, FILE* out) {
  const Options& o = *rep.opt;
  bool any = false;
  for (const auto& d : rep.results) any |= !d.rateRuns.empty();
  if (!any) return;
  fprintf(out,
          "\nloss search: the highest offered rate with at most %.4g%% loss (trials of %.1f s, binary search\n"
          "to %.0f%%, paced generator in bursts of %u); medians over runs, Mpps\n",
          o.lossMaxPct, o.trialS, o.resolution * 100, o.paceBatch);
  fprintf(out, "%-14s %10s %10s %17s %7s | %s\n", "datapath", "peak fwd", "loss-free", "(min-max)", "trials",
          "at 90% of vdevd's peak: offered Mpps, loss %");
  for (const auto& d : rep.results) {
    if (d.rateRuns.empty()) continue;
    std::vector<double> free, peak, off90, loss90;
    int limited = 0, noisy = 0;
    size_t trials = 0;
    for (const auto& rs : d.rateRuns) {
      free.push_back(rs.lossFreePps / 1e6);
      peak.push_back(rs.peak.forwardedPps() / 1e6);
      trials += rs.trials.size();
      limited += rs.generatorLimited;
      noisy += rs.noisy;
      if (const RateTrial* t = at90(rs)) {
        off90.push_back(t->offeredPps() / 1e6);
        loss90.push_back(t->lossPct());
      }
    }
    char range[40];
    snprintf(range, sizeof range, "(%.3f-%.3f)", *std::min_element(free.begin(), free.end()),
             *std::max_element(free.begin(), free.end()));
    fprintf(out, "%-14s %10.3f %10.3f %17s %7zu | ", d.datapath.c_str(), median(peak), median(free), range, trials);
    if (off90.empty()) fprintf(out, "-");
    else fprintf(out, "%.3f, %.4f%%", median(off90), median(loss90));
    if (limited) fprintf(out, "  generator-limited in %d run%s", limited, limited == 1 ? "" : "s");
    if (noisy) fprintf(out, "  %d noisy", noisy);
    fprintf(out, "\n");
  }
  fprintf(out,
          "  generator-limited: the paced generator could not offer the rate asked for, because its CPU\n"
          "  also runs the datapath's softirq work (the kernel paths run to completion there); the\n"
          "  loss-free rate is then what that CPU allows. Issue 5's target: at most 0.01%% loss at 90%%\n"
          "  of vdevd's own peak.\n");
}

}  // namespace

void printTable(const Report& rep, FILE* out) {
  const Options& o = *rep.opt;
  int sinkCpu = o.sinkCpu >= 0 ? o.sinkCpu : o.genCpu;
  if (o.latency == LatencyMode::kOnly)
    fprintf(out, "vdev-bench: %s, %zu-byte frames (%zu B + FCS), %d run%s, latency only, medians\n",
            scenarioName(o.scenario), o.frameSize, o.frameSize - kFcsLen, o.runs, o.runs == 1 ? "" : "s");
  else
    fprintf(out, "vdev-bench: %s, %zu-byte frames (%zu B + FCS), %d run%s x %.1f s after %.1f s warm-up%s, medians\n",
            scenarioName(o.scenario), o.frameSize, o.frameSize - kFcsLen, o.runs, o.runs == 1 ? "" : "s",
            o.duration, o.warmup, o.findRate ? " (loss search: trials instead)" : "");
  fprintf(out, "generator: %s on CPU %d; datapath CPU %d; sink CPU %d; NAPI %s\n", rep.generator.c_str(), o.genCpu,
          o.dutCpu, sinkCpu, napiText(o).c_str());
  if (o.ratePps) fprintf(out, "offered load paced at %.3f Mpps (--rate), bursts of %u\n", o.ratePps / 1e6, o.paceBatch);
  if (o.boosted()) fprintf(out, "session (autogroup) at nice -20 against other sessions' load (--boost)\n");
  fprintf(out, "bridge: net.bridge.bridge-nf-call-iptables=%s in the DUT namespace%s\n",
          rep.bridgeNfCallIptables.c_str(),
          rep.bridgeNfCallIptables == "1" ? " (br_netfilter hooks on every bridged frame)" : "");
  if (o.scenario == Scenario::kVethTap)
    fprintf(out, "sink: a thread read()ing the tap (a VM without vhost)\n");
  else if (o.sinkMode == SinkMode::kTc)
    fprintf(out, "sink: tc (clsact ingress on a veth without XDP, GRO off as in a container; on for xdp-redirect, which needs NAPI)\n");
  else
    fprintf(out, "sink: xdp (native XDP on the sink veth; veth copies copy-mode AF_XDP skbs into a page first)\n");
  if (o.scenario == Scenario::kTapVeth)
    fprintf(out, "ingress: the VM write()s every frame into tap %sa; the kernel paths forward inside that write()\n",
            rep.prefix.c_str());
  if (o.scenario == Scenario::kSwitch)
    fprintf(out, "switch: 2 containers (%sa, %sb) + 1 VM (tap %sc) on one learning switch; traffic %sa -> %sb\n",
            rep.prefix.c_str(), rep.prefix.c_str(), rep.prefix.c_str(), rep.prefix.c_str(), rep.prefix.c_str());
  fprintf(out, "\n");
  bool anyThroughput = false;
  for (const auto& d : rep.results) anyThroughput |= !d.runs.empty();
  if (anyThroughput)
    fprintf(out, "%-14s %9s %13s %12s %8s %10s %6s\n", "datapath", "fwd Mpps", "(min-max)", "offered Mpps", "loss %",
            "CPU s/Mfr", "gaps");
  for (const auto& d : rep.results) {
    if (d.runs.empty()) {
      if (!anyThroughput && d.errors.empty()) continue;
      if (d.errors.empty())
        fprintf(out, "%-14s %9s   not run\n", d.datapath.c_str(), "-");
      else
        fprintf(out, "%-14s %9s   failed: %s\n", d.datapath.c_str(), "-", d.errors.front().c_str());
      continue;
    }
    std::vector<double> fwd;
    int gaps = 0, noisy = 0;
    for (const auto& r : d.runs) {
      fwd.push_back(r.forwardedMpps());
      gaps += r.offeredFlow.gaps;
      noisy += r.noisy;
    }
    char range[32];
    snprintf(range, sizeof range, "(%.3f-%.3f)", *std::min_element(fwd.begin(), fwd.end()),
             *std::max_element(fwd.begin(), fwd.end()));
    fprintf(out, "%-14s %9.3f %13s %12.3f %8.2f %10.3f %6d", d.datapath.c_str(), median(fwd), range,
            medianOf(d.runs, [](const RunResult& r) { return r.offeredMpps(); }),
            medianOf(d.runs, [](const RunResult& r) { return r.lossPct(); }),
            medianOf(d.runs, [](const RunResult& r) { return r.cpuPerMframe(); }), gaps);
    if (noisy) fprintf(out, "  %d noisy run%s", noisy, noisy == 1 ? "" : "s");
    fprintf(out, "\n");
  }
  for (const auto& s : rep.skipped) fprintf(out, "%-14s skipped: %s\n", s.datapath.c_str(), s.reason.c_str());
  printLatency(rep, out);
  printRateSearch(rep, out);

  fprintf(out, "\nper run:\n");
  for (const auto& d : rep.results) {
    for (const auto& r : d.runs) {
      fprintf(out,
              "  %-13s #%d  fwd %.3f Mpps  offered %.3f (10ms p1 %.3f, gaps %d, longest %.0f ms)  loss %.2f%%",
              r.datapath.c_str(), r.run, r.forwardedMpps(), r.offeredMpps(), r.offeredFlow.p1Mpps,
              r.offeredFlow.gaps, r.offeredFlow.longestGapMs, r.lossPct());
      if (r.ingressRingFull && r.offered)
        fprintf(out, "  ingress-ring-full %.2f%%", 100.0 * *r.ingressRingFull / r.offered);
      if (r.egressDrops) fprintf(out, "  egress-drops %llu", static_cast<unsigned long long>(*r.egressDrops));
      if (r.floodedToVm) fprintf(out, "  flooded-to-VM %llu", static_cast<unsigned long long>(*r.floodedToVm));
      fprintf(out, "  cpu s/%.1fs: datapath %.2f generator %.2f sink %.2f", r.cpuSeconds, r.cpu.datapath,
              r.cpu.generator, r.cpu.sink);
      if (r.cpu.vdevdProcess) {
        double own = *r.cpu.vdevdProcess - r.cpu.pollInDutProcess.value_or(0);
        fprintf(out, " (vdevd %.2f + NAPI %.2f)", own, r.cpu.datapath - own);
      }
      fprintf(out, "  totals %llu/%llu", static_cast<unsigned long long>(r.forwardedTotal),
              static_cast<unsigned long long>(r.offeredTotal));
      if (r.sinkKernelTotal)
        fprintf(out, " sink==kernel(%s) %llu/%llu", r.sinkKernelCounter.c_str(),
                static_cast<unsigned long long>(*r.sinkCountTotal), static_cast<unsigned long long>(*r.sinkKernelTotal));
      fprintf(out, " %s%s\n", r.countsOk ? "ok" : "MISMATCH", r.noisy ? "  NOISY (other load)" : "");
      if (!r.stopProblem.empty()) fprintf(out, "      stop: %s\n", r.stopProblem.c_str());
    }
    for (const auto& lr : d.latencyRuns) {
      for (const auto& p : lr.pairs)
        fprintf(out,
                "  %-13s #%d  latency %s: p50 %.1f p90 %.1f p99 %.1f max %.1f us (%zu/%llu answered); "
                "after %.0f ms pause: p50 %.1f max %.1f us (%zu/%llu); per probe: %.1f IPIs, datapath slept %.1fx%s\n",
                lr.datapath.c_str(), lr.run, p.pair.c_str(), p.light.p50Us, p.light.p90Us, p.light.p99Us,
                p.light.maxUs, p.light.samples, static_cast<unsigned long long>(p.light.sent), o.latPauseS * 1e3,
                p.pause.p50Us, p.pause.maxUs, p.pause.samples, static_cast<unsigned long long>(p.pause.sent),
                p.ipisPerProbe.value_or(NAN), p.dutSleepsPerProbe.value_or(NAN), lr.noisy ? "  NOISY (other load)" : "");
      if (!lr.stopProblem.empty()) fprintf(out, "      stop: %s\n", lr.stopProblem.c_str());
    }
    for (const auto& rs : d.rateRuns) {
      fprintf(out, "  %-13s #%d  loss search: peak fwd %.3f Mpps (offered %.3f, loss %.2f%%); trials:", rs.datapath.c_str(),
              rs.run, rs.peak.forwardedPps() / 1e6, rs.peak.offeredPps() / 1e6, rs.peak.lossPct());
      for (const auto& t : rs.trials)
        fprintf(out, " %.3f->%.3f/%.4f%%%s", t.targetPps / 1e6, t.offeredPps() / 1e6, t.lossPct(), t.pass ? "+" : "-");
      fprintf(out, "  => %.3f Mpps%s", rs.lossFreePps / 1e6, rs.generatorLimited ? " (generator-limited)" : "");
      if (const RateTrial* t = at90(rs)) {
        fprintf(out, "; at 90%% of %.3f: offered %.3f loss %.4f%% (ingress refused %llu, egress drops %llu",
                rs.vdevdPeakPps / 1e6, t->offeredPps() / 1e6, t->lossPct(),
                static_cast<unsigned long long>(t->ingressRefused.value_or(0)),
                static_cast<unsigned long long>(t->egressDrops.value_or(0)));
        if (t->dutRxRingFull)
          fprintf(out, ", vdevd: rx ring full %llu, fill ring empty %llu, internal %llu",
                  static_cast<unsigned long long>(*t->dutRxRingFull),
                  static_cast<unsigned long long>(t->dutFillRingEmpty.value_or(0)),
                  static_cast<unsigned long long>(t->dutDrops.value_or(0)));
        fprintf(out, ")");
      }
      fprintf(out, "%s\n", rs.noisy ? "  NOISY (other load)" : "");
      if (!rs.stopProblem.empty()) fprintf(out, "      stop: %s\n", rs.stopProblem.c_str());
    }
    for (const auto& e : d.errors) fprintf(out, "  %-13s failed run: %s\n", d.datapath.c_str(), e.c_str());
  }
  std::string method;
  for (const auto& d : rep.results)
    for (const auto& r : d.runs) method = r.cpu.method;
  if (method == "tasks+softirq")
    fprintf(out, "\nCPU s/Mfr: CPU seconds of the datapath per million forwarded frames: vdevd's threads\n"
                 "plus the NAPI work of its two ports (threaded-NAPI kthread run time, softirq polls timed\n"
                 "by tracepoints); generator and sink excluded. %s See docs/performance.md.\n",
            o.napiTiming == NapiTiming::kSplit
                ? "Measured in a CPU window after the rate window\n(the tracepoints are not attached while rates are measured)."
                : "The tracepoints were attached during the\nrate window and slowed it down (--napi-timing on).");
  else if (method == "tasks")
    fprintf(out, "\nCPU s/Mfr: CPU seconds of vdevd's threads and the ingress port's NAPI kthread per\n"
                 "million forwarded frames (NAPI timing unavailable).\n");
  else if (!method.empty())
    fprintf(out, "\nCPU s/Mfr: busy CPU seconds of all CPUs (/proc/stat) minus the generator's and the\n"
                 "sink's threads, per million forwarded frames. NAPI timing was unavailable: datapath\n"
                 "work done in softirq on the generator's CPU is charged to the generator and missing.\n");
  if (o.scenario == Scenario::kTapVeth && !method.empty())
    fprintf(out, "tap-veth: the frame enters through the VM's write(); the tap's XDP program (vdevd's, the\n"
                 "redirect) and, without one, the whole bridge run inside that write(), so their cost is in\n"
                 "the generator column (as it is in a VM's vhost or QEMU thread), not in CPU s/Mfr.\n");
  if (!rep.leftovers.empty()) {
    fprintf(out, "LEFTOVERS after cleanup:");
    for (const auto& l : rep.leftovers) fprintf(out, " %s", l.c_str());
    fprintf(out, "\n");
  }
  if (!rep.fatal.empty()) fprintf(out, "error: %s\n", rep.fatal.c_str());
}

namespace {

void flowJson(JsonWriter& j, const FlowStats& f) {
  j.beginObject();
  j.field("intervals", static_cast<uint64_t>(f.intervals));
  j.key("median_mpps").value(f.medianMpps, 4);
  j.key("p1_mpps").value(f.p1Mpps, 4);
  j.key("min_mpps").value(f.minMpps, 4);
  j.field("gaps", f.gaps);
  j.key("longest_gap_ms").value(f.longestGapMs, 1);
  j.key("gap_ms").value(f.gapMs, 1);
  j.endObject();
}

void runJson(JsonWriter& j, const RunResult& r) {
  j.beginObject();
  j.field("run", r.run);
  j.key("seconds").value(r.seconds, 4);
  j.field("offered", r.offered);
  j.field("forwarded", r.forwarded);
  j.field("forwarded_bytes", r.forwardedBytes);
  j.field("other_frames", r.otherFrames);
  j.field("sink_path", r.sinkPath);
  j.key("offered_mpps").value(r.offeredMpps(), 4);
  j.key("forwarded_mpps").value(r.forwardedMpps(), 4);
  j.key("loss_pct").value(r.lossPct(), 3);
  j.key("ingress_ring_accepted");
  if (r.ingressAccepted) j.value(*r.ingressAccepted); else j.null();
  j.key("ingress_ring_full");
  if (r.ingressRingFull) j.value(*r.ingressRingFull); else j.null();
  j.key("egress_drops");
  if (r.egressDrops) j.value(*r.egressDrops); else j.null();
  j.field("target_pps", r.targetPps);
  j.key("flooded_to_vm");
  if (r.floodedToVm) j.value(*r.floodedToVm); else j.null();
  j.key("totals").beginObject();
  j.field("offered", r.offeredTotal);
  j.field("forwarded", r.forwardedTotal);
  j.key("sink_all_frames");
  if (r.sinkCountTotal) j.value(*r.sinkCountTotal); else j.null();
  j.key("sink_kernel_count");
  if (r.sinkKernelTotal) j.value(*r.sinkKernelTotal); else j.null();
  j.key("sink_kernel_counter");
  if (r.sinkKernelTotal) j.value(r.sinkKernelCounter); else j.null();
  j.field("ok", r.countsOk);
  j.endObject();
  auto opt = [&](const char* k, const std::optional<double>& v) {
    j.key(k);
    if (v) j.value(*v, 3); else j.null();
  };
  j.key("cpu_seconds").beginObject();
  j.field("method", r.cpu.method);
  j.key("datapath").value(r.cpu.datapath, 3);
  j.key("generator").value(r.cpu.generator, 3);
  j.key("sink").value(r.cpu.sink, 3);
  j.key("raw").beginObject();
  j.key("all_cpus_busy").value(r.cpu.all, 3);
  j.key("datapath_cpu_busy").value(r.cpu.dutCpu, 3);
  j.key("generator_threads").value(r.cpu.genThreads, 3);
  j.key("sink_task").value(r.cpu.sinkTask, 3);
  opt("vdevd_process", r.cpu.vdevdProcess);
  opt("ingress_napi_thread", r.cpu.dutNapiThread);
  opt("softirq_poll_dut_ports", r.cpu.pollDut);
  opt("softirq_poll_sink", r.cpu.pollSink);
  opt("softirq_on_vdevd", r.cpu.pollInDutProcess);
  opt("softirq_on_bench", r.cpu.pollInBench);
  opt("softirq_on_napi_kthread", r.cpu.pollInNapiThread);
  opt("softirq_on_sink_task", r.cpu.pollInSinkTask);
  opt("softirq_on_ksoftirqd", r.cpu.pollInKsoftirqd);
  opt("softirq_net_rx_other", r.cpu.netRxOther);
  j.key("softirq_polls").beginArray();
  static const char* const kCtx[] = {"other", "vdevd", "vdev-bench", "ingress-napi-kthread", "ksoftirqd", "sink-task"};
  for (const auto& [k, v] : r.cpu.polls) {
    j.beginObject();
    j.field("dev", k.first.empty() ? std::string("(net_rx outside polls)") : k.first);
    j.field("on", k.second >= 0 && k.second < 6 ? kCtx[k.second] : "?");
    j.key("seconds").value(v.seconds, 4);
    j.field("calls", v.calls);
    j.field("frames", v.frames);
    j.endObject();
  }
  j.endArray();
  j.endObject();
  j.key("unexplained").value(r.cpu.unexplained, 3);
  j.key("steal").value(r.cpu.steal, 3);
  j.endObject();
  j.key("cpu_s_per_mframe").value(r.cpuPerMframe(), 4);
  j.key("cpu_window").beginObject();
  j.key("seconds").value(r.cpuSeconds, 4);
  j.field("offered", r.cpuOffered);
  j.field("forwarded", r.cpuForwarded);
  j.endObject();
  j.key("rate_window_other_load_s").value(r.rateWindowOther, 3);
  j.field("noisy", r.noisy);
  j.key("offered_flow");
  flowJson(j, r.offeredFlow);
  j.key("forwarded_flow");
  flowJson(j, r.forwardedFlow);
  if (!r.timelineT.empty()) {
    j.key("timeline").beginObject();
    for (auto [name, v] : {std::pair{"t_s", &r.timelineT}, std::pair{"offered_mpps", &r.timelineOffered},
                           std::pair{"forwarded_mpps", &r.timelineForwarded}}) {
      j.key(name).beginArray();
      for (double x : *v) j.value(x, 3);
      j.endArray();
    }
    j.endObject();
  }
  j.key("stop_problem");
  if (r.stopProblem.empty()) j.null(); else j.value(r.stopProblem);
  j.key("datapath_stats");
  if (r.datapathStats.empty()) j.null(); else j.raw(r.datapathStats);
  j.endObject();
}

void latencyStatsJson(JsonWriter& j, const LatencyStats& s) {
  j.beginObject();
  j.field("sent", s.sent);
  j.field("answered", static_cast<uint64_t>(s.samples));
  j.field("lost", s.lost);
  j.key("min_us").value(s.minUs, 1);
  j.key("p50_us").value(s.p50Us, 1);
  j.key("p90_us").value(s.p90Us, 1);
  j.key("p99_us").value(s.p99Us, 1);
  j.key("max_us").value(s.maxUs, 1);
  j.key("mean_us").value(s.meanUs, 1);
  j.endObject();
}

void latencyRunJson(JsonWriter& j, const LatencyRun& lr) {
  j.beginObject();
  j.field("run", lr.run);
  j.key("seconds").value(lr.seconds, 3);
  j.key("other_load_cpus").value(lr.otherLoad, 3);
  j.field("noisy", lr.noisy);
  j.key("pairs").beginArray();
  for (const auto& p : lr.pairs) {
    j.beginObject();
    j.field("pair", p.pair);
    j.field("from", p.from);
    j.field("to", p.to);
    j.key("light");
    latencyStatsJson(j, p.light);
    j.key("after_pause");
    latencyStatsJson(j, p.pause);
    j.key("ipis_per_probe");
    if (p.ipisPerProbe) j.value(*p.ipisPerProbe, 2); else j.null();
    j.key("datapath_sleeps_per_probe");
    if (p.dutSleepsPerProbe) j.value(*p.dutSleepsPerProbe, 2); else j.null();
    j.key("after_pause_us").beginArray();
    for (double x : p.pauseUs) j.value(x, 1);
    j.endArray();
    j.endObject();
  }
  j.endArray();
  j.key("stop_problem");
  if (lr.stopProblem.empty()) j.null(); else j.value(lr.stopProblem);
  j.endObject();
}

void trialJson(JsonWriter& j, const RateTrial& t) {
  j.beginObject();
  j.field("target_pps", t.targetPps);
  j.key("seconds").value(t.seconds, 4);
  j.field("offered", t.offered);
  j.field("forwarded", t.forwarded);
  j.key("offered_mpps").value(t.offeredPps() / 1e6, 4);
  j.key("forwarded_mpps").value(t.forwardedPps() / 1e6, 4);
  j.key("loss_pct").value(t.lossPct(), 5);
  j.key("ingress_refused");
  if (t.ingressRefused) j.value(*t.ingressRefused); else j.null();
  j.key("egress_drops");
  if (t.egressDrops) j.value(*t.egressDrops); else j.null();
  j.key("vdevd_drops").beginObject();
  for (auto [k, v] : {std::pair{"rx_ring_full", &t.dutRxRingFull}, std::pair{"fill_ring_empty", &t.dutFillRingEmpty},
                      std::pair{"internal", &t.dutDrops}}) {
    j.key(k);
    if (*v) j.value(**v); else j.null();
  }
  j.endObject();
  j.field("offered_gaps", t.offeredFlow.gaps);
  j.field("counts_ok", t.countsOk);
  j.field("pass", t.pass);
  j.endObject();
}

void rateSearchJson(JsonWriter& j, const RateSearch& rs) {
  j.beginObject();
  j.field("run", rs.run);
  j.key("peak");
  trialJson(j, rs.peak);
  j.key("trials").beginArray();
  for (const auto& t : rs.trials) trialJson(j, t);
  j.endArray();
  j.key("loss_free_mpps").value(rs.lossFreePps / 1e6, 4);
  j.field("generator_limited", rs.generatorLimited);
  j.key("vdevd_peak_mpps").value(rs.vdevdPeakPps / 1e6, 4);
  j.key("at_90pct_of_vdevd_peak");
  if (rs.at90) trialJson(j, *rs.at90); else j.null();
  j.field("noisy", rs.noisy);
  j.key("stop_problem");
  if (rs.stopProblem.empty()) j.null(); else j.value(rs.stopProblem);
  j.endObject();
}

}  // namespace

std::string toJson(const Report& rep) {
  const Options& o = *rep.opt;
  JsonWriter j;
  j.beginObject();
  jsonHead(j, o.argv);
  j.key("config").beginObject();
  j.field("scenario", scenarioName(o.scenario));
  j.field("frame_size", static_cast<uint64_t>(o.frameSize));
  j.field("frame_len", static_cast<uint64_t>(o.frameSize - kFcsLen));
  j.key("duration_s").value(o.duration, 3);
  j.key("warmup_s").value(o.warmup, 3);
  j.field("runs", o.runs);
  j.field("generator_threads", o.genThreads);
  j.field("generator_cpu", o.genCpu);
  j.field("datapath_cpu", o.dutCpu);
  j.field("datapath_prio", o.dpPrio);
  j.field("session_boost", o.boosted());
  j.field("sink_cpu", o.sinkCpu >= 0 ? o.sinkCpu : o.genCpu);
  j.field("napi", napiText(o));
  j.field("sink", sinkText(o));
  j.field("napi_timing", napiTimingName(o.napiTiming));
  j.field("bridge_nf_call_iptables", rep.bridgeNfCallIptables);
  j.key("cpu_window_s").value(o.napiTiming == NapiTiming::kSplit ? o.cpuWindow : o.duration, 3);
  j.field("repeat_per_call", static_cast<uint64_t>(o.repeat));
  j.field("batch", static_cast<uint64_t>(o.batch));
  j.field("sport_count", static_cast<uint64_t>(o.sportCount));
  j.field("prefix", rep.prefix);
  j.field("vdevd", rep.vdevdPath);
  j.field("generator", rep.generator);
  j.field("rate_pps", o.ratePps);
  j.field("pace_batch", static_cast<uint64_t>(o.paceBatch));
  j.key("latency").beginObject();
  j.field("mode", latencyModeName(o.latency));
  j.key("pairs").beginArray();
  for (const auto& p : rep.latencyPairs) j.value(p);
  j.endArray();
  j.field("samples", o.latSamples);
  j.key("interval_us").value(o.latIntervalS * 1e6, 0);
  j.field("pause_samples", o.latPauseSamples);
  j.key("pause_ms").value(o.latPauseS * 1e3, 0);
  j.key("timeout_ms").value(o.latTimeoutS * 1e3, 0);
  j.field("prio", o.latPrio);
  j.field("udp_checksum", o.latUdpChecksum);
  j.endObject();
  j.key("find_rate");
  if (!o.findRate) {
    j.null();
  } else {
    j.beginObject();
    j.key("loss_max_pct").value(o.lossMaxPct, 4);
    j.key("trial_s").value(o.trialS, 3);
    j.key("resolution").value(o.resolution, 4);
    j.field("max_trials", o.maxTrials);
    j.endObject();
  }
  j.endObject();

  j.key("results").beginArray();
  for (const auto& d : rep.results) {
    j.beginObject();
    j.field("datapath", d.datapath);
    j.field("describe", d.describe);
    // null when nothing was measured (scripts/bench-datapath.sh reads that as
    // a failed datapath).
    j.key("median");
    if (d.runs.empty() && d.latencyRuns.empty() && d.rateRuns.empty()) j.null();
    else j.beginObject();
    if (!d.runs.empty()) {
      j.key("forwarded_mpps").value(medianOf(d.runs, [](const RunResult& r) { return r.forwardedMpps(); }), 4);
      j.key("offered_mpps").value(medianOf(d.runs, [](const RunResult& r) { return r.offeredMpps(); }), 4);
      j.key("loss_pct").value(medianOf(d.runs, [](const RunResult& r) { return r.lossPct(); }), 3);
      j.key("cpu_s_per_mframe").value(medianOf(d.runs, [](const RunResult& r) { return r.cpuPerMframe(); }), 4);
    }
    if (!d.latencyRuns.empty()) {
      // Light load: median over runs of each run's percentile; after a
      // pause: all runs' samples pooled.
      j.key("latency").beginObject();
      for (const auto& pair : pairsOf(rep)) {
        j.key(pair).beginObject();
        for (auto [k, f] : {std::pair{"p50_us", &LatencyStats::p50Us}, std::pair{"p90_us", &LatencyStats::p90Us},
                            std::pair{"p99_us", &LatencyStats::p99Us}, std::pair{"max_us", &LatencyStats::maxUs}})
          j.key(k).value(latencyMedian(d, pair, f), 1);
        j.field("lost", lostLight(d, pair));
        j.key("after_pause_pooled");
        latencyStatsJson(j, pausePooled(d, pair));
        j.endObject();
      }
      j.endObject();
    }
    if (!d.rateRuns.empty()) {
      std::vector<double> free, peak, loss90, off90;
      for (const auto& rs : d.rateRuns) {
        free.push_back(rs.lossFreePps / 1e6);
        peak.push_back(rs.peak.forwardedPps() / 1e6);
        if (rs.at90) {
          loss90.push_back(rs.at90->lossPct());
          off90.push_back(rs.at90->offeredPps() / 1e6);
        }
      }
      j.key("peak_forwarded_mpps").value(median(peak), 4);
      j.key("loss_free_mpps").value(median(free), 4);
      j.key("at_90pct_offered_mpps").value(median(off90), 4);
      j.key("at_90pct_loss_pct").value(median(loss90), 5);
    }
    if (!d.runs.empty() || !d.latencyRuns.empty() || !d.rateRuns.empty()) j.endObject();
    j.key("runs").beginArray();
    for (const auto& r : d.runs) runJson(j, r);
    j.endArray();
    j.key("latency_runs").beginArray();
    for (const auto& lr : d.latencyRuns) latencyRunJson(j, lr);
    j.endArray();
    j.key("rate_search_runs").beginArray();
    for (const auto& rs : d.rateRuns) rateSearchJson(j, rs);
    j.endArray();
    j.key("errors").beginArray();
    for (const auto& e : d.errors) j.value(e);
    j.endArray();
    j.endObject();
  }
  j.endArray();
  j.key("skipped").beginArray();
  for (const auto& s : rep.skipped) {
    j.beginObject();
    j.field("datapath", s.datapath);
    j.field("reason", s.reason);
    j.endObject();
  }
  j.endArray();
  jsonTail(j, rep.leftovers, rep.fatal);
  j.endObject();
  return j.str() + "\n";
}

void jsonHead(JsonWriter& j, const std::vector<std::string>& argv) {
  j.field("tool", "vdev-bench");
  j.key("command").beginArray();
  for (const auto& a : argv) j.value(a);
  j.endArray();
  struct utsname u;
  uname(&u);
  j.key("host").beginObject();
  j.field("kernel", std::string(u.release));
  j.field("cpus", onlineCpus());
  j.endObject();
}

void jsonTail(JsonWriter& j, const std::vector<std::string>& leftovers, const std::string& fatal) {
  j.key("cleanup").beginObject();
  j.field("ok", leftovers.empty());
  j.key("leftovers").beginArray();
  for (const auto& l : leftovers) j.value(l);
  j.endArray();
  j.endObject();
  j.key("error");
  if (fatal.empty()) j.null(); else j.value(fatal);
}

}  // namespace vdev::bench
