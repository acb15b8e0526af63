// runner.cpp - see runner.h.
#include "runner.h"

#include <time.h>

#include <algorithm>
#include <cmath>

namespace vdev::bench {

namespace {
constexpr double kSampleInterval = 0.010;  // 10 ms

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::floor(p * (v.size() - 1)));
  return v[i];
}
}  // namespace

FlowStats analyzeFlow(const std::vector<double>& mpps, const std::vector<double>& dt, double gapFraction) {
  FlowStats f;
  f.intervals = mpps.size();
  if (mpps.empty()) return f;
  f.medianMpps = percentile(mpps, 0.5);
  f.p1Mpps = percentile(mpps, 0.01);
  f.minMpps = *std::min_element(mpps.begin(), mpps.end());
  double threshold = gapFraction * f.medianMpps;
  double cur = 0;
  for (size_t i = 0; i < mpps.size(); ++i) {
    if (mpps[i] < threshold) {
      if (cur == 0) ++f.gaps;
      cur += dt[i] * 1e3;
      f.gapMs += dt[i] * 1e3;
      f.longestGapMs = std::max(f.longestGapMs, cur);
    } else {
      cur = 0;
    }
  }
  return f;
}

Status Runner::sampleFor(double seconds, std::vector<Sample>* out) {
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  double end = monotonicSeconds() + seconds;
  for (;;) {
    if (stopRequested()) return Status::fail(EINTR, "measurement");
    Status ge = gen_.error();
    if (!ge.ok()) return ge;
    auto g = gen_.counters();
    auto s = topo_.sink().counters();
    if (!g) return g.status();
    if (!s) return s.status();
    double now = monotonicSeconds();
    out->push_back({now, g->pkts, s->pkts});
    if (now >= end) return {};
    // Absolute deadlines: the schedule does not drift when a wakeup is late
    // (the rate of each interval uses the measured times anyway).
    next.tv_nsec += static_cast<long>(kSampleInterval * 1e9);
    while (next.tv_nsec >= 1'000'000'000) {
      next.tv_nsec -= 1'000'000'000;
      ++next.tv_sec;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
  }
}

Result<Runner::Snapshot> Runner::snapshot(const Datapath& dp) {
  Snapshot s;
  auto busy = readCpuBusy();
  if (!busy) return busy.status();
  s.busy = busy.value();
  s.t = monotonicSeconds();
  auto g = gen_.counters();
  if (!g) return g.status();
  s.gen = g.value();
  auto k = topo_.sink().counters();
  if (!k) return k.status();
  s.sink = k.value();
  s.genCpu = gen_.cpuSeconds();
  s.sinkCpu = topo_.sink().cpuSeconds();
  for (pid_t t : ksoftirqd_)
    if (auto c = threadCpuSeconds(t)) s.ksoftirqdCpu += c.value();
  s.vdevdCpu = dp.processCpuSeconds();
  if (!dutNapiThreads_.empty()) {
    double sum = 0;
    for (pid_t t : dutNapiThreads_)
      if (auto c = threadCpuSeconds(t)) sum += c.value();
    s.napiCpu = sum;
  }
  if (genStats_) {
    if (auto m = genStats_->read()) s.ingress = m.value();
  }
  if (egressLink_) {
    if (auto l = egressLink_->read()) s.egressDrops = l->txDropped;
  }
  if (egressEthtool_ && s.egressDrops) {
    // xdp_frames a redirect could not put on the peer's ring (veth).
    if (auto m = egressEthtool_->read())
      *s.egressDrops += EthtoolStats::sumQueues(m.value(), "tx_queue_", "_xdp_xmit_errors").value_or(0);
  }
  s.sinkKernel = topo_.sink().kernelCount();
  if (timer_) {
    if (auto p = timer_->read()) s.polls = std::move(p.value());
  }
  return s;
}

Status Runner::prepareSink(const Datapath& dp) {
  SinkRun sr;
  sr.cpu = opt_.sinkCpu >= 0 ? opt_.sinkCpu : opt_.genCpu;
  sr.prio = opt_.sinkPrio;
  sr.threadedNapi = opt_.sinkThreaded();
  sr.xdpFrames = dp.transmitsXdpFrames();
  return topo_.sink().prepare(sr);
}

Status Runner::prepareNapi() {
  dutNapiThreads_.clear();
  if (!opt_.napiThreaded) return {};
  // The ingress port's NAPI exists once an XDP program is attached to it,
  // which every datapath does (vdevd its own, the kernel paths ours). Threaded, its kthread can be pinned to the DUT CPU, so all of
  // the datapath's work runs there, not in softirq on the generator's CPU.
  VB_TRY(sysfsNetWrite(topo_.dutNs(), topo_.portA(), "threaded", "1"));
  std::string prefix = "napi/" + topo_.portA() + "-";
  if (prefix.size() > 15) prefix.resize(15);  // TASK_COMM_LEN - 1
  dutNapiThreads_ = findTasksByComm(prefix);
  if (dutNapiThreads_.empty()) return Status::fail(ESRCH, "no threaded NAPI kthread for " + topo_.portA());
  for (pid_t t : dutNapiThreads_) VB_TRY(pinTask(t, opt_.dutCpu));
  return {};
}

double Runner::otherLoad(const Snapshot& a, const Snapshot& b) const {
  double ours = (b.genCpu - a.genCpu) + (b.sinkCpu - a.sinkCpu) + (b.ksoftirqdCpu - a.ksoftirqdCpu);
  if (a.vdevdCpu && b.vdevdCpu) ours += *b.vdevdCpu - *a.vdevdCpu;
  if (a.napiCpu && b.napiCpu) ours += *b.napiCpu - *a.napiCpu;
  return (b.busy.all - a.busy.all) - ours;
}

void Runner::computeCpu(const Snapshot& a, const Snapshot& b, bool usePolls, RunResult* r) const {
  CpuUse& c = r->cpu;
  c.all = b.busy.all - a.busy.all;
  c.steal = b.busy.steal - a.busy.steal;
  if (opt_.dutCpu < static_cast<int>(b.busy.perCpu.size()) && opt_.dutCpu < static_cast<int>(a.busy.perCpu.size()))
    c.dutCpu = b.busy.perCpu[opt_.dutCpu] - a.busy.perCpu[opt_.dutCpu];
  c.genThreads = b.genCpu - a.genCpu;
  c.sinkTask = b.sinkCpu - a.sinkCpu;
  if (a.vdevdCpu && b.vdevdCpu) c.vdevdProcess = *b.vdevdCpu - *a.vdevdCpu;
  if (a.napiCpu && b.napiCpu) c.dutNapiThread = *b.napiCpu - *a.napiCpu;

  double napiThread = c.dutNapiThread.value_or(0);
  if (usePolls && a.polls && b.polls) {
    auto delta = [&](auto pred) {
      double sum = 0;
      for (const auto& [k, v] : *b.polls) {
        if (!pred(k.first, k.second)) continue;
        auto it = a.polls->find(k);
        sum += v.seconds - (it == a.polls->end() ? 0.0 : it->second.seconds);
      }
      return sum;
    };
    const std::string &pa = topo_.portA(), &pb = topo_.portB(), &ps = topo_.sinkIf();
    c.pollDut = delta([&](const std::string& d, int) { return d == pa || d == pb; });
    // The tc sink without NAPI receives in polls of the per-CPU backlog
    // (netif_rx); nothing else of the topology uses it.
    bool backlog = topo_.sink().receivesViaBacklog();
    c.pollSink = delta([&](const std::string& d, int) { return d == ps || (backlog && d == VB_BACKLOG_DEV); });
    c.pollInDutProcess = delta([](const std::string&, int ctx) { return ctx == VB_CTX_DUT; });
    c.pollInBench = delta([](const std::string&, int ctx) { return ctx == VB_CTX_BENCH; });
    c.netRxOther = delta([](const std::string& d, int) { return d.empty(); });
    c.method = "tasks+softirq";
    double vdevdOwn = c.vdevdProcess ? std::max(0.0, *c.vdevdProcess - *c.pollInDutProcess) : 0.0;
    c.datapath = vdevdOwn + napiThread + *c.pollDut;
    c.generator = c.genThreads - *c.pollInBench;
    c.sink = c.sinkTask + *c.pollSink;
  } else if (opt_.napiThreaded && c.dutNapiThread) {
    c.method = "tasks";
    c.datapath = c.vdevdProcess.value_or(0) + napiThread;
    c.generator = c.genThreads;
    c.sink = c.sinkTask;
  } else {
    c.method = "proc_stat";
    c.generator = c.genThreads;
    c.sink = c.sinkTask;
    c.datapath = c.all - c.generator - c.sink;
  }
  c.unexplained = c.all - c.datapath - c.generator - c.sink - c.netRxOther.value_or(0);
}

Result<RunResult> Runner::measure(Datapath& dp, int run) {
  struct StopGuard {  // dp and the generator are stopped on every way out
    Datapath& dp;
    Generator& gen;
    bool armed = true;
    ~StopGuard() {
      gen.stop();
      if (armed) dp.stop();
    }
  } guard{dp, gen_};

  if (!statsTried_) {
    statsTried_ = true;
    ksoftirqd_ = findTasksByComm("ksoftirqd/");
    auto st = EthtoolStats::open(topo_.genNs(), topo_.genIf());
    if (st) genStats_.emplace(std::move(st.value()));
    else logWarn("no ethtool statistics for %s: %s", topo_.genIf().c_str(), st.status().message().c_str());
    auto ls = LinkStats::open(topo_.dutNs(), topo_.portB());
    if (ls) egressLink_.emplace(std::move(ls.value()));
    else logWarn("no link statistics for %s: %s", topo_.portB().c_str(), ls.status().message().c_str());
    if (topo_.scenario() == Scenario::kVethVeth) {
      auto es = EthtoolStats::open(topo_.dutNs(), topo_.portB());
      if (es) egressEthtool_.emplace(std::move(es.value()));
    }
  }

  RunResult r;
  r.datapath = dp.name();
  r.run = run;
  // The sink first: a devmap redirect needs the sink veth's NAPI (GRO, tc
  // sink) before it can transmit into it.
  VB_TRY(prepareSink(dp));
  r.sinkPath = topo_.sink().receivePath();
  VB_TRY(dp.start());
  if (timer_) timer_->setDutTgid(dp.pid());
  VB_TRY(prepareNapi());

  // Tell learning switches where the sink is (frames with no magic, so they
  // are never counted as benchmark frames anywhere).
  FrameSpec learn;
  learn.src = topo_.sinkMac();
  learn.dst = topo_.genMac();
  learn.srcIp = 0xc6120101;  // 198.18.1.1
  learn.dstIp = 0xc6120001;  // 198.18.0.1
  learn.srcPort = VB_UDP_DPORT;
  learn.dstPort = 1024;
  learn.magic = false;
  VB_TRY(topo_.sink().sendLearningFrames(buildFrame(learn), 3));
  if (!sleepUnlessStopped(0.05)) return Status::fail(EINTR, "measurement");

  auto base = snapshot(dp);
  if (!base) return base.status();
  VB_TRY(gen_.start());

  std::vector<Sample> warm, window;
  VB_TRY(sampleFor(opt_.warmup, &warm));
  auto a = snapshot(dp);
  if (!a) return a.status();
  window.push_back({a->t, a->gen.pkts, a->sink.pkts});
  VB_TRY(sampleFor(opt_.duration, &window));
  auto b = snapshot(dp);
  if (!b) return b.status();
  window.push_back({b->t, b->gen.pkts, b->sink.pkts});

  // --napi-timing split: the CPU window, traffic still flowing, the NAPI
  // timing attached only now so that it never slowed the rate window down.
  bool split = timer_ && opt_.napiTiming == NapiTiming::kSplit;
  std::optional<Snapshot> c0, c1;
  if (split) {
    VB_TRY(timer_->attach());
    std::vector<Sample> ignored;
    Status s = sampleFor(0.05, &ignored);  // let softirqs in progress at attach finish
    if (s.ok()) {
      auto x = snapshot(dp);
      if (x) c0 = std::move(x.value());
      else s = x.status();
    }
    if (s.ok()) s = sampleFor(opt_.cpuWindow, &ignored);
    if (s.ok()) {
      auto y = snapshot(dp);
      if (y) c1 = std::move(y.value());
      else s = y.status();
    }
    timer_->detach();
    VB_TRY(s);
  }
  gen_.stop();
  VB_TRY(gen_.error());

  // Let what is in flight arrive: the sink count must be still for 200 ms
  // (at most 3 s) before the totals are taken.
  uint64_t lastSink = b->sink.pkts;
  double stillSince = monotonicSeconds(), giveUp = stillSince + 3;
  while (monotonicSeconds() - stillSince < 0.2 && monotonicSeconds() < giveUp) {
    if (!sleepUnlessStopped(0.02)) return Status::fail(EINTR, "measurement");
    auto k = topo_.sink().counters();
    if (!k) return k.status();
    if (k->pkts != lastSink) {
      lastSink = k->pkts;
      stillSince = monotonicSeconds();
    }
  }
  auto fin = snapshot(dp);
  if (!fin) return fin.status();

  guard.armed = false;
  if (timer_) timer_->setDutTgid(0);
  Status st = dp.stop();
  if (!st.ok()) r.stopProblem = st.message();
  r.datapathStats = dp.statsJson();

  r.seconds = b->t - a->t;
  r.offered = b->gen.pkts - a->gen.pkts;
  r.forwarded = b->sink.pkts - a->sink.pkts;
  r.forwardedBytes = b->sink.bytes - a->sink.bytes;
  r.otherFrames = b->sink.otherPkts - a->sink.otherPkts;
  r.offeredTotal = fin->gen.pkts - base->gen.pkts;
  r.forwardedTotal = fin->sink.pkts - base->sink.pkts;
  r.countsOk = r.forwardedTotal <= r.offeredTotal;
  if (a->egressDrops && b->egressDrops) r.egressDrops = *b->egressDrops - *a->egressDrops;
  if (base->sinkKernel && fin->sinkKernel) {
    r.sinkKernelTotal = *fin->sinkKernel - *base->sinkKernel;
    r.sinkKernelCounter = topo_.sink().kernelCounter();
    r.sinkCountTotal = (fin->sink.pkts + fin->sink.otherPkts) - (base->sink.pkts + base->sink.otherPkts);
    if (*r.sinkKernelTotal != *r.sinkCountTotal) {
      r.countsOk = false;
      logWarn("%s run %d: the sink counted %llu frames, the kernel %llu (%s)", r.datapath.c_str(), run,
              static_cast<unsigned long long>(*r.sinkCountTotal), static_cast<unsigned long long>(*r.sinkKernelTotal),
              r.sinkKernelCounter.c_str());
    }
  }
  auto ing = [&](const char* name) -> std::optional<uint64_t> {
    auto x = a->ingress.find(name), y = b->ingress.find(name);
    if (x == a->ingress.end() || y == b->ingress.end()) return std::nullopt;
    return y->second - x->second;
  };
  // On a veth, tx_queue_N_xdp_xmit{,_errors} are the peer's receive-ring
  // counters for frames arriving by ndo_xdp_xmit (one TX queue here).
  r.ingressAccepted = ing("tx_queue_0_xdp_xmit");
  r.ingressRingFull = ing("tx_queue_0_xdp_xmit_errors");

  if (split) {
    computeCpu(*c0, *c1, true, &r);
    r.cpuSeconds = c1->t - c0->t;
    r.cpuOffered = c1->gen.pkts - c0->gen.pkts;
    r.cpuForwarded = c1->sink.pkts - c0->sink.pkts;
  } else {
    computeCpu(*a, *b, timer_ != nullptr, &r);
    r.cpuSeconds = r.seconds;
    r.cpuOffered = r.offered;
    r.cpuForwarded = r.forwarded;
  }
  r.rateWindowOther = otherLoad(*a, *b);
  // Other load: in the CPU window from the exact accounting, in the rate
  // window (when it is not the same) from the coarse one.
  double cpuOther = r.cpu.method != "proc_stat" && r.cpuSeconds > 0 ? r.cpu.unexplained / r.cpuSeconds : 0;
  double rateOther = r.seconds > 0 ? r.rateWindowOther / r.seconds : 0;
  if (!split && r.cpu.method != "proc_stat") rateOther = cpuOther;
  double other = std::max(cpuOther, rateOther);
  double steal = std::max(r.cpuSeconds > 0 ? r.cpu.steal / r.cpuSeconds : 0.0,
                          r.seconds > 0 ? (b->busy.steal - a->busy.steal) / r.seconds : 0.0);
  r.noisy = other > 0.15 || steal > 0.15;
  if (other > 0.15)
    logWarn("%s run %d: %.0f%% of a CPU went to other tasks during the measurement; is the machine idle?",
            r.datapath.c_str(), run, 100.0 * other);
  if (steal > 0.15)
    logWarn("%s run %d: the hypervisor took %.0f%% of a CPU (steal time)", r.datapath.c_str(), run, 100.0 * steal);

  // Rates per sampling interval. Samples closer than half the sampling
  // period to the previous cut (the window's first and last snapshots sit
  // next to a regular sample; a late wakeup makes the next deadline pass at
  // once) are merged, so they never show up as a 0-frame "gap". The last
  // sample always closes the window.
  std::vector<size_t> cuts{0};
  for (size_t i = 1; i < window.size(); ++i)
    if (window[i].t - window[cuts.back()].t >= kSampleInterval / 2) cuts.push_back(i);
  size_t lastSample = window.size() - 1;
  if (cuts.back() != lastSample) {
    if (cuts.size() > 1) cuts.back() = lastSample;
    else cuts.push_back(lastSample);
  }
  std::vector<double> offMpps, fwdMpps, dts, starts;
  for (size_t k = 1; k < cuts.size(); ++k) {
    const Sample& x = window[cuts[k - 1]];
    const Sample& y = window[cuts[k]];
    double dt = y.t - x.t;
    if (dt <= 0) continue;
    starts.push_back(x.t - window[0].t);
    dts.push_back(dt);
    offMpps.push_back((y.offered - x.offered) / dt / 1e6);
    fwdMpps.push_back((y.forwarded - x.forwarded) / dt / 1e6);
  }
  if (opt_.timeline) {
    r.timelineT = starts;
    r.timelineOffered = offMpps;
    r.timelineForwarded = fwdMpps;
  }
  r.offeredFlow = analyzeFlow(offMpps, dts, opt_.gapFraction);
  r.forwardedFlow = analyzeFlow(fwdMpps, dts, opt_.gapFraction);
  return r;
}

}  // namespace vdev::bench
