// report.cpp - see report.h.
#include "report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "json_writer.h"
#include "sys.h"

namespace vdev::bench {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double medianOf(const std::vector<RunResult>& runs, const std::function<double(const RunResult&)>& f) {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(f(r));
  return median(v);
}

std::string napiText(const Options& o) {
  std::string s = o.napiThreaded ? "threaded" : "softirq";
  if (o.scenario == Scenario::kVethVeth && o.sinkThreaded() != o.napiThreaded)
    s += o.sinkThreaded() ? " (sink veth threaded)" : " (sink veth softirq)";
  return s;
}

std::string sinkText(const Options& o) {
  if (o.scenario == Scenario::kVethTap) return "tap";
  return sinkModeName(o.sinkMode);
}

}  // namespace

void printTable(const Report& rep, FILE* out) {
  const Options& o = *rep.opt;
  int sinkCpu = o.sinkCpu >= 0 ? o.sinkCpu : o.genCpu;
  fprintf(out, "vdev-bench: %s, %zu-byte frames (%zu B + FCS), %d run%s x %.1f s after %.1f s warm-up, medians\n",
          scenarioName(o.scenario), o.frameSize, o.frameSize - kFcsLen, o.runs, o.runs == 1 ? "" : "s", o.duration,
          o.warmup);
  fprintf(out, "generator: %d threads on CPU %d (BPF_PROG_RUN live frames); datapath CPU %d; sink CPU %d; NAPI %s\n",
          o.genThreads, o.genCpu, o.dutCpu, sinkCpu, napiText(o).c_str());
  fprintf(out, "bridge: net.bridge.bridge-nf-call-iptables=%s in the DUT namespace%s\n",
          rep.bridgeNfCallIptables.c_str(),
          rep.bridgeNfCallIptables == "1" ? " (br_netfilter hooks on every bridged frame)" : "");
  if (o.scenario == Scenario::kVethTap)
    fprintf(out, "sink: a thread read()ing the tap (a VM without vhost)\n\n");
  else if (o.sinkMode == SinkMode::kTc)
    fprintf(out, "sink: tc (clsact ingress on a veth without XDP, GRO off as in a container; on for xdp-redirect, which needs NAPI)\n\n");
  else
    fprintf(out, "sink: xdp (native XDP on the sink veth; veth copies copy-mode AF_XDP skbs into a page first)\n\n");
  fprintf(out, "%-14s %9s %13s %12s %8s %10s %6s\n", "datapath", "fwd Mpps", "(min-max)", "offered Mpps", "loss %",
          "CPU s/Mfr", "gaps");
  for (const auto& d : rep.results) {
    if (d.runs.empty()) {
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
  opt("softirq_net_rx_other", r.cpu.netRxOther);
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
  j.key("latency").null();  // round-trip latency: a later issue
  j.key("stop_problem");
  if (r.stopProblem.empty()) j.null(); else j.value(r.stopProblem);
  j.key("datapath_stats");
  if (r.datapathStats.empty()) j.null(); else j.raw(r.datapathStats);
  j.endObject();
}

}  // namespace

std::string toJson(const Report& rep) {
  const Options& o = *rep.opt;
  JsonWriter j;
  j.beginObject();
  j.field("tool", "vdev-bench");
  j.key("command").beginArray();
  for (const auto& a : o.argv) j.value(a);
  j.endArray();
  struct utsname u;
  uname(&u);
  j.key("host").beginObject();
  j.field("kernel", std::string(u.release));
  j.field("cpus", onlineCpus());
  j.endObject();
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
  j.endObject();

  j.key("results").beginArray();
  for (const auto& d : rep.results) {
    j.beginObject();
    j.field("datapath", d.datapath);
    j.key("median");
    if (d.runs.empty()) {
      j.null();
    } else {
      j.beginObject();
      j.key("forwarded_mpps").value(medianOf(d.runs, [](const RunResult& r) { return r.forwardedMpps(); }), 4);
      j.key("offered_mpps").value(medianOf(d.runs, [](const RunResult& r) { return r.offeredMpps(); }), 4);
      j.key("loss_pct").value(medianOf(d.runs, [](const RunResult& r) { return r.lossPct(); }), 3);
      j.key("cpu_s_per_mframe").value(medianOf(d.runs, [](const RunResult& r) { return r.cpuPerMframe(); }), 4);
      j.endObject();
    }
    j.key("runs").beginArray();
    for (const auto& r : d.runs) runJson(j, r);
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
  j.key("cleanup").beginObject();
  j.field("ok", rep.leftovers.empty());
  j.key("leftovers").beginArray();
  for (const auto& l : rep.leftovers) j.value(l);
  j.endArray();
  j.endObject();
  j.key("error");
  if (rep.fatal.empty()) j.null(); else j.value(rep.fatal);
  j.endObject();
  return j.str() + "\n";
}

}  // namespace vdev::bench
