// report.cpp - see report.h.
#include "report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "datapath.h"
#include "frame.h"
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
  // The sink veth's NAPI is never threaded: the tc sink takes skbs through
  // the backlog of the CPU that transmitted.
  if (o.scenario != Scenario::kVethTap && o.napiThreaded) s += " (sink veth softirq)";
  return s;
}

std::string sinkText(const Options& o) {
  if (o.scenario == Scenario::kVethTap) return "tap";
  return "tc";
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
          "  loss-free rate is then what that CPU allows. The aim: at most 0.01%% loss at 90%%\n"
          "  of vdevd's own peak.\n");
}

}  // namespace

// The median of a datapath's forwarded Mpps over its runs (NAN: no runs).
double medianFwd(const DatapathResult& d) {
  return medianOf(d.runs, [](const RunResult& r) { return r.forwardedMpps(); });
}

// vdevd's sockets per port, medians over the runs: "a 0/12 b 0/0" (fill
// ring empty / RX ring full, in the rate window); the port's name without
// the run's prefix. "" for the kernel datapaths.
std::string socketText(const DatapathResult& d, const std::string& prefix) {
  std::vector<std::string> ports;
  for (const auto& r : d.runs)
    for (const auto& s : r.dutSockets)
      if (std::find(ports.begin(), ports.end(), s.port) == ports.end()) ports.push_back(s.port);
  std::string text;
  size_t quiet = 0;
  for (const auto& port : ports) {
    std::vector<double> fill, full;
    for (const auto& r : d.runs)
      for (const auto& s : r.dutSockets)
        if (s.port == port) {
          fill.push_back(double(s.fillEmpty));
          full.push_back(double(s.rxRingFull));
        }
    std::string name = port.rfind(prefix, 0) == 0 && port.size() > prefix.size() ? port.substr(prefix.size()) : port;
    // The idle ports (--idle-ports, "i1" ...) only where they dropped.
    if (name[0] == 'i' && median(fill) == 0 && median(full) == 0) {
      quiet++;
      continue;
    }
    char buf[96];
    snprintf(buf, sizeof buf, "%s%s %.0f/%.0f", text.empty() ? "" : " ", name.c_str(), median(fill), median(full));
    text += buf;
  }
  if (quiet) text += " (idle ports: " + std::to_string(quiet) + " at 0/0)";
  return text;
}

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
  if (o.idlePorts)
    fprintf(out, "idle ports: %u more veths on the device under test (%si1 .. %si%u), attached by every datapath\n",
            o.idlePorts, rep.prefix.c_str(), rep.prefix.c_str(), o.idlePorts);
  fprintf(out, "bridge: net.bridge.bridge-nf-call-iptables=%s in the DUT namespace%s\n",
          rep.bridgeNfCallIptables.c_str(),
          rep.bridgeNfCallIptables == "1" ? " (br_netfilter hooks on every bridged frame)" : "");
  if (o.scenario == Scenario::kVethTap)
    fprintf(out, "sink: a thread read()ing the tap (a VM without vhost)\n");
  else
    fprintf(out, "sink: tc (clsact ingress on a veth without XDP, GRO off as in a container; on for xdp-redirect, which needs NAPI)\n");
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
  // Any path below the bridge of this same run is flagged on its row and
  // named under the table: vdevd's own path fell to the bridge's rate once
  // with no table showing it.
  const DatapathResult* bridge = findBridge(rep);
  const double bridgeMpps = bridge && !bridge->runs.empty() ? medianFwd(*bridge) : NAN;
  std::string below, sockets;
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
    if (std::isfinite(bridgeMpps) && d.datapath != "bridge" && median(fwd) < bridgeMpps) {
      fprintf(out, "  BELOW THE BRIDGE (%s)", ratio(median(fwd), bridgeMpps).c_str());
      below += (below.empty() ? "" : ", ") + d.datapath + " " + ratio(median(fwd), bridgeMpps);
    }
    const std::string st = socketText(d, rep.prefix);
    if (!st.empty()) {
      fprintf(out, "  sockets %s", st.c_str());
      sockets = st;
    }
    fprintf(out, "\n");
  }
  if (!sockets.empty())
    fprintf(out, "sockets: vdevd's AF_XDP sockets per port, frames the kernel dropped in the rate window for a fill ring\n"
                 "that was empty / an RX ring that was full (xdp_stats rx_fill_ring_empty_descs / rx_ring_full), medians\n");
  if (std::isfinite(bridgeMpps))
    fprintf(out, "below the bridge (%.3f Mpps) in this run: %s\n", bridgeMpps, below.empty() ? "none" : below.c_str());
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
      for (const auto& s : r.dutSockets)
        fprintf(out, "  %s fill-empty %llu rx-full %llu", s.port.c_str(), static_cast<unsigned long long>(s.fillEmpty),
                static_cast<unsigned long long>(s.rxRingFull));
      fprintf(out, "  cpu s/%.1fs: datapath %.2f generator %.2f sink %.2f", r.cpuSeconds, r.cpu.datapath,
              r.cpu.generator, r.cpu.sink);
      if (r.cpu.vdevdProcess) {
        double own = *r.cpu.vdevdProcess - r.cpu.pollInDutProcess.value_or(0);
        fprintf(out, " (%s %.2f + NAPI %.2f)", isVdevd(r.datapath) ? "vdevd" : "process", own, r.cpu.datapath - own);
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

Json fixed(double v, int decimals) {
  if (!std::isfinite(v)) return nullptr;
  if (decimals == 0) return std::llround(v);
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

namespace {

template <class T>
Json orNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}
Json orNull(const std::optional<double>& v, int decimals) { return v ? fixed(*v, decimals) : Json(nullptr); }
Json orNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json flowJson(const FlowStats& f) {
  return {{"intervals", static_cast<uint64_t>(f.intervals)},
          {"median_mpps", fixed(f.medianMpps, 4)},
          {"p1_mpps", fixed(f.p1Mpps, 4)},
          {"min_mpps", fixed(f.minMpps, 4)},
          {"gaps", f.gaps},
          {"longest_gap_ms", fixed(f.longestGapMs, 1)},
          {"gap_ms", fixed(f.gapMs, 1)}};
}

// vdevd's statistics document, as vdevd wrote it (its member order kept);
// text that is not JSON stays text.
Json statsDocument(const std::string& text) {
  if (text.empty()) return nullptr;
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_discarded() ? Json(text) : doc;
}

Json runJson(const RunResult& r) {
  Json j;
  j["run"] = r.run;
  j["seconds"] = fixed(r.seconds, 4);
  j["offered"] = r.offered;
  j["forwarded"] = r.forwarded;
  j["forwarded_bytes"] = r.forwardedBytes;
  j["other_frames"] = r.otherFrames;
  j["sink_path"] = r.sinkPath;
  j["offered_mpps"] = fixed(r.offeredMpps(), 4);
  j["forwarded_mpps"] = fixed(r.forwardedMpps(), 4);
  j["loss_pct"] = fixed(r.lossPct(), 3);
  j["ingress_ring_accepted"] = orNull(r.ingressAccepted);
  j["ingress_ring_full"] = orNull(r.ingressRingFull);
  j["egress_drops"] = orNull(r.egressDrops);
  j["target_pps"] = r.targetPps;
  j["flooded_to_vm"] = orNull(r.floodedToVm);
  Json sockets = Json::array();
  for (const auto& s : r.dutSockets)
    sockets.push_back({{"port", s.port}, {"rx_fill_ring_empty_descs", s.fillEmpty}, {"rx_ring_full", s.rxRingFull}});
  j["vdevd_sockets"] = std::move(sockets);
  j["totals"] = {{"offered", r.offeredTotal},
                 {"forwarded", r.forwardedTotal},
                 {"sink_all_frames", orNull(r.sinkCountTotal)},
                 {"sink_kernel_count", orNull(r.sinkKernelTotal)},
                 {"sink_kernel_counter", r.sinkKernelTotal ? Json(r.sinkKernelCounter) : Json(nullptr)},
                 {"ok", r.countsOk}};
  Json raw;
  raw["all_cpus_busy"] = fixed(r.cpu.all, 3);
  raw["datapath_cpu_busy"] = fixed(r.cpu.dutCpu, 3);
  raw["generator_threads"] = fixed(r.cpu.genThreads, 3);
  raw["sink_task"] = fixed(r.cpu.sinkTask, 3);
  raw["vdevd_process"] = orNull(r.cpu.vdevdProcess, 3);
  raw["ingress_napi_thread"] = orNull(r.cpu.dutNapiThread, 3);
  raw["softirq_poll_dut_ports"] = orNull(r.cpu.pollDut, 3);
  raw["softirq_poll_sink"] = orNull(r.cpu.pollSink, 3);
  raw["softirq_on_vdevd"] = orNull(r.cpu.pollInDutProcess, 3);
  raw["softirq_on_bench"] = orNull(r.cpu.pollInBench, 3);
  raw["softirq_on_napi_kthread"] = orNull(r.cpu.pollInNapiThread, 3);
  raw["softirq_on_sink_task"] = orNull(r.cpu.pollInSinkTask, 3);
  raw["softirq_on_ksoftirqd"] = orNull(r.cpu.pollInKsoftirqd, 3);
  raw["softirq_net_rx_other"] = orNull(r.cpu.netRxOther, 3);
  Json polls = Json::array();
  static const char* const kCtx[] = {"other", "vdevd", "vdev-bench", "ingress-napi-kthread", "ksoftirqd", "sink-task"};
  for (const auto& [k, v] : r.cpu.polls)
    polls.push_back({{"dev", k.first.empty() ? std::string("(net_rx outside polls)") : k.first},
                     {"on", k.second >= 0 && k.second < 6 ? kCtx[k.second] : "?"},
                     {"seconds", fixed(v.seconds, 4)},
                     {"calls", v.calls},
                     {"frames", v.frames}});
  raw["softirq_polls"] = std::move(polls);
  j["cpu_seconds"] = {{"method", r.cpu.method},
                      {"datapath", fixed(r.cpu.datapath, 3)},
                      {"generator", fixed(r.cpu.generator, 3)},
                      {"sink", fixed(r.cpu.sink, 3)},
                      {"raw", std::move(raw)},
                      {"unexplained", fixed(r.cpu.unexplained, 3)},
                      {"steal", fixed(r.cpu.steal, 3)}};
  j["cpu_s_per_mframe"] = fixed(r.cpuPerMframe(), 4);
  j["cpu_window"] = {{"seconds", fixed(r.cpuSeconds, 4)}, {"offered", r.cpuOffered}, {"forwarded", r.cpuForwarded}};
  j["rate_window_other_load_s"] = fixed(r.rateWindowOther, 3);
  j["noisy"] = r.noisy;
  j["offered_flow"] = flowJson(r.offeredFlow);
  j["forwarded_flow"] = flowJson(r.forwardedFlow);
  j["stop_problem"] = orNull(r.stopProblem);
  j["datapath_stats"] = statsDocument(r.datapathStats);
  return j;
}

Json latencyStatsJson(const LatencyStats& s) {
  return {{"sent", s.sent},
          {"answered", static_cast<uint64_t>(s.samples)},
          {"lost", s.lost},
          {"min_us", fixed(s.minUs, 1)},
          {"p50_us", fixed(s.p50Us, 1)},
          {"p90_us", fixed(s.p90Us, 1)},
          {"p99_us", fixed(s.p99Us, 1)},
          {"max_us", fixed(s.maxUs, 1)},
          {"mean_us", fixed(s.meanUs, 1)}};
}

Json latencyRunJson(const LatencyRun& lr) {
  Json pairs = Json::array();
  for (const auto& p : lr.pairs) {
    Json pauseUs = Json::array();
    for (double x : p.pauseUs) pauseUs.push_back(fixed(x, 1));
    pairs.push_back({{"pair", p.pair},
                     {"from", p.from},
                     {"to", p.to},
                     {"light", latencyStatsJson(p.light)},
                     {"after_pause", latencyStatsJson(p.pause)},
                     {"ipis_per_probe", orNull(p.ipisPerProbe, 2)},
                     {"datapath_sleeps_per_probe", orNull(p.dutSleepsPerProbe, 2)},
                     {"after_pause_us", std::move(pauseUs)}});
  }
  return {{"run", lr.run},
          {"seconds", fixed(lr.seconds, 3)},
          {"other_load_cpus", fixed(lr.otherLoad, 3)},
          {"noisy", lr.noisy},
          {"pairs", std::move(pairs)},
          {"stop_problem", orNull(lr.stopProblem)}};
}

Json trialJson(const RateTrial& t) {
  return {{"target_pps", t.targetPps},
          {"seconds", fixed(t.seconds, 4)},
          {"offered", t.offered},
          {"forwarded", t.forwarded},
          {"offered_mpps", fixed(t.offeredPps() / 1e6, 4)},
          {"forwarded_mpps", fixed(t.forwardedPps() / 1e6, 4)},
          {"loss_pct", fixed(t.lossPct(), 5)},
          {"ingress_refused", orNull(t.ingressRefused)},
          {"egress_drops", orNull(t.egressDrops)},
          {"vdevd_drops",
           {{"rx_ring_full", orNull(t.dutRxRingFull)},
            {"fill_ring_empty", orNull(t.dutFillRingEmpty)},
            {"internal", orNull(t.dutDrops)}}},
          {"offered_gaps", t.offeredFlow.gaps},
          {"counts_ok", t.countsOk},
          {"pass", t.pass}};
}

Json rateSearchJson(const RateSearch& rs) {
  Json trials = Json::array();
  for (const auto& t : rs.trials) trials.push_back(trialJson(t));
  return {{"run", rs.run},
          {"peak", trialJson(rs.peak)},
          {"trials", std::move(trials)},
          {"loss_free_mpps", fixed(rs.lossFreePps / 1e6, 4)},
          {"generator_limited", rs.generatorLimited},
          {"vdevd_peak_mpps", fixed(rs.vdevdPeakPps / 1e6, 4)},
          {"at_90pct_of_vdevd_peak", rs.at90 ? trialJson(*rs.at90) : Json(nullptr)},
          {"noisy", rs.noisy},
          {"stop_problem", orNull(rs.stopProblem)}};
}

Json strings(const std::vector<std::string>& v) {
  Json a = Json::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

}  // namespace

std::string toJson(const Report& rep) {
  const Options& o = *rep.opt;
  Json j;
  jsonHead(j, o.argv);
  Json c;
  c["scenario"] = scenarioName(o.scenario);
  c["frame_size"] = static_cast<uint64_t>(o.frameSize);
  c["idle_ports"] = static_cast<uint64_t>(o.idlePorts);
  c["frame_len"] = static_cast<uint64_t>(o.frameSize - kFcsLen);
  c["duration_s"] = fixed(o.duration, 3);
  c["warmup_s"] = fixed(o.warmup, 3);
  c["runs"] = o.runs;
  c["generator_threads"] = o.genThreads;
  c["generator_cpu"] = o.genCpu;
  c["datapath_cpu"] = o.dutCpu;
  c["datapath_prio"] = o.dpPrio;
  c["session_boost"] = o.boosted();
  c["sink_cpu"] = o.sinkCpu >= 0 ? o.sinkCpu : o.genCpu;
  c["napi"] = napiText(o);
  c["sink"] = sinkText(o);
  c["napi_timing"] = napiTimingName(o.napiTiming);
  c["bridge_nf_call_iptables"] = rep.bridgeNfCallIptables;
  c["cpu_window_s"] = fixed(o.napiTiming == NapiTiming::kSplit ? o.cpuWindow : o.duration, 3);
  c["repeat_per_call"] = static_cast<uint64_t>(o.repeat);
  c["batch"] = static_cast<uint64_t>(o.batch);
  c["sport_count"] = static_cast<uint64_t>(o.sportCount);
  c["prefix"] = rep.prefix;
  c["vdevd"] = rep.vdevdPath;
  c["generator"] = rep.generator;
  c["rate_pps"] = o.ratePps;
  c["pace_batch"] = static_cast<uint64_t>(o.paceBatch);
  c["latency"] = {{"mode", latencyModeName(o.latency)},
                  {"pairs", strings(rep.latencyPairs)},
                  {"samples", o.latSamples},
                  {"interval_us", fixed(o.latIntervalS * 1e6, 0)},
                  {"pause_samples", o.latPauseSamples},
                  {"pause_ms", fixed(o.latPauseS * 1e3, 0)},
                  {"timeout_ms", fixed(o.latTimeoutS * 1e3, 0)},
                  {"prio", o.latPrio},
                  {"udp_checksum", o.latUdpChecksum}};
  if (!o.findRate)
    c["find_rate"] = nullptr;
  else
    c["find_rate"] = {{"loss_max_pct", fixed(o.lossMaxPct, 4)},
                      {"trial_s", fixed(o.trialS, 3)},
                      {"resolution", fixed(o.resolution, 4)},
                      {"max_trials", o.maxTrials}};
  j["config"] = std::move(c);

  Json results = Json::array();
  for (const auto& d : rep.results) {
    Json r;
    r["datapath"] = d.datapath;
    r["describe"] = d.describe;
    // null when nothing was measured (scripts/bench-datapath.sh reads that as
    // a failed datapath).
    Json med = nullptr;
    if (!d.runs.empty()) {
      med["forwarded_mpps"] = fixed(medianOf(d.runs, [](const RunResult& x) { return x.forwardedMpps(); }), 4);
      med["offered_mpps"] = fixed(medianOf(d.runs, [](const RunResult& x) { return x.offeredMpps(); }), 4);
      med["loss_pct"] = fixed(medianOf(d.runs, [](const RunResult& x) { return x.lossPct(); }), 3);
      med["cpu_s_per_mframe"] = fixed(medianOf(d.runs, [](const RunResult& x) { return x.cpuPerMframe(); }), 4);
      // Below the bridge of the same invocation (null without a bridge).
      const DatapathResult* bridge = findBridge(rep);
      med["below_bridge"] = bridge && !bridge->runs.empty() && d.datapath != "bridge"
                                ? Json(medianFwd(d) < medianFwd(*bridge))
                                : Json(nullptr);
    }
    if (!d.latencyRuns.empty()) {
      // Light load: median over runs of each run's percentile; after a
      // pause: all runs' samples pooled.
      Json lat = Json::object();
      for (const auto& pair : pairsOf(rep)) {
        Json p;
        for (auto [k, f] : {std::pair{"p50_us", &LatencyStats::p50Us}, std::pair{"p90_us", &LatencyStats::p90Us},
                            std::pair{"p99_us", &LatencyStats::p99Us}, std::pair{"max_us", &LatencyStats::maxUs}})
          p[k] = fixed(latencyMedian(d, pair, f), 1);
        p["lost"] = lostLight(d, pair);
        p["after_pause_pooled"] = latencyStatsJson(pausePooled(d, pair));
        lat[pair] = std::move(p);
      }
      med["latency"] = std::move(lat);
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
      med["peak_forwarded_mpps"] = fixed(median(peak), 4);
      med["loss_free_mpps"] = fixed(median(free), 4);
      med["at_90pct_offered_mpps"] = fixed(median(off90), 4);
      med["at_90pct_loss_pct"] = fixed(median(loss90), 5);
    }
    r["median"] = std::move(med);
    Json runs = Json::array(), latencyRuns = Json::array(), rateRuns = Json::array();
    for (const auto& x : d.runs) runs.push_back(runJson(x));
    for (const auto& lr : d.latencyRuns) latencyRuns.push_back(latencyRunJson(lr));
    for (const auto& rs : d.rateRuns) rateRuns.push_back(rateSearchJson(rs));
    r["runs"] = std::move(runs);
    r["latency_runs"] = std::move(latencyRuns);
    r["rate_search_runs"] = std::move(rateRuns);
    r["errors"] = strings(d.errors);
    results.push_back(std::move(r));
  }
  j["results"] = std::move(results);
  Json skipped = Json::array();
  for (const auto& s : rep.skipped) skipped.push_back({{"datapath", s.datapath}, {"reason", s.reason}});
  j["skipped"] = std::move(skipped);
  jsonTail(j, rep.leftovers, rep.fatal);
  return dumpJson(j);
}

void jsonHead(Json& j, const std::vector<std::string>& argv) {
  j["tool"] = "vdev-bench";
  j["command"] = strings(argv);
  struct utsname u;
  uname(&u);
  j["host"] = {{"kernel", std::string(u.release)}, {"cpus", onlineCpus()}};
}

void jsonTail(Json& j, const std::vector<std::string>& leftovers, const std::string& fatal) {
  j["cleanup"] = {{"ok", leftovers.empty()}, {"leftovers", strings(leftovers)}};
  j["error"] = orNull(fatal);
}

std::string dumpJson(const Json& j) {
  // Text from the system (vdevd's output, error messages) may be any bytes:
  // invalid UTF-8 is replaced rather than thrown on.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace vdev::bench
