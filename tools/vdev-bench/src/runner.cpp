// runner.cpp - see runner.h.
#include "runner.h"

#include <time.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "../bpf/bench_shared.h"
#include "frame.h"
#include "testkit/stats.h"

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
    if (stopRequested()) return makeError(EINTR, "measurement");
    Status ge = gen_.error();
    if (!ge.ok()) return ge;
    auto g = gen_.counters();
    auto s = topo_.sink().counters();
    if (!g) return g.error();
    if (!s) return s.error();
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
  if (!busy) return busy.error();
  s.busy = busy.value();
  s.t = monotonicSeconds();
  auto g = gen_.counters();
  if (!g) return g.error();
  s.gen = g.value();
  auto k = topo_.sink().counters();
  if (!k) return k.error();
  s.sink = k.value();
  if (topo_.scenario() == Scenario::kSwitch && topo_.vm()) {
    if (auto v = topo_.vm()->counters()) s.vmPkts = v->pkts;
  }
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
    if (auto m = genStats_->read()) {
      s.ingress = m.value();
      auto it = s.ingress.find("tx_queue_0_xdp_xmit_errors");
      if (it != s.ingress.end()) s.ingressRefused = it->second;
    }
  }
  if (ingressLink_) {
    // A tap: frames the VM wrote that its XDP program could not redirect
    // (tun counts them as rx_dropped), or that the stack dropped.
    if (auto l = ingressLink_->read()) s.ingressRefused = l->rxDropped;
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
  sr.xdpFrames = dp.transmitsXdpFrames();
  return topo_.sink().prepare(sr);
}

Status Runner::prepareNapi() {
  dutNapiThreads_.clear();
  if (!opt_.napiThreaded) return {};
  // The ingress port's NAPI exists once an XDP program is attached to it,
  // which every datapath does (vdevd its own, the kernel paths ours). Threaded, its kthread can be pinned to the DUT CPU, so all of
  // the datapath's work runs there, not in softirq on the generator's CPU.
  VB_TRY(testkit::writeSysfsNet(topo_.portA(), "threaded", "1", &topo_.dutNs()));
  std::string prefix = "napi/" + topo_.portA() + "-";
  if (prefix.size() > 15) prefix.resize(15);  // TASK_COMM_LEN - 1
  dutNapiThreads_ = findTasksByComm(prefix);
  if (dutNapiThreads_.empty()) return makeError(ESRCH, "no threaded NAPI kthread for " + topo_.portA());
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
    const std::vector<std::string> ports = topo_.ports();
    const std::string& ps = topo_.sinkIf();
    auto isPort = [&](const std::string& d) { return std::find(ports.begin(), ports.end(), d) != ports.end(); };
    c.pollDut = delta([&](const std::string& d, int) { return isPort(d); });
    // The tc sink without NAPI receives in polls of the per-CPU backlog
    // (netif_rx); nothing else of the topology uses it.
    bool backlog = topo_.sink().receivesViaBacklog();
    c.pollSink = delta([&](const std::string& d, int) {
      return (topo_.vethSink() && d == ps) || (backlog && d == VB_BACKLOG_DEV);
    });
    auto onCtx = [&](int want) { return delta([want](const std::string&, int ctx) { return ctx == want; }); };
    c.pollInDutProcess = onCtx(VB_CTX_DUT);
    c.pollInBench = onCtx(VB_CTX_BENCH);
    c.pollInNapiThread = onCtx(VB_CTX_NAPI);
    c.pollInSinkTask = onCtx(VB_CTX_SINK);
    c.pollInKsoftirqd = onCtx(VB_CTX_KSOFTIRQD);
    c.netRxOther = delta([](const std::string& d, int) { return d.empty(); });
    for (const auto& [k, v] : *b.polls) {
      auto it = a.polls->find(k);
      PollTime d = v;
      if (it != a.polls->end()) {
        d.seconds -= it->second.seconds;
        d.calls -= it->second.calls;
        d.frames -= it->second.frames;
      }
      if (d.calls) c.polls.push_back({k, d});
    }
    c.method = "tasks+softirq";
    // Each task's own work: its run time minus the softirq work that ran on
    // top of it (which the polls attribute to their devices).
    double vdevdOwn = c.vdevdProcess ? std::max(0.0, *c.vdevdProcess - *c.pollInDutProcess) : 0.0;
    double napiOwn = c.dutNapiThread ? std::max(0.0, napiThread - *c.pollInNapiThread) : 0.0;
    c.datapath = vdevdOwn + napiOwn + *c.pollDut;
    // The generator's own device (its relay) is the generator's work,
    // wherever its polls ran.
    const std::string own = gen_.ownDevice();
    double ownPolls = own.empty() ? 0.0 : delta([&](const std::string& d, int) { return d == own; });
    c.generator = c.genThreads - *c.pollInBench + ownPolls;
    c.sink = std::max(0.0, c.sinkTask - *c.pollInSinkTask) + *c.pollSink;
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

void Runner::openStats() {
  if (statsTried_) return;
  statsTried_ = true;
  ksoftirqd_ = findTasksByComm("ksoftirqd/");
  if (topo_.hasGenNs()) {
    auto st = EthtoolStats::open(topo_.genNs(), topo_.genIf());
    if (st) genStats_.emplace(std::move(st.value()));
    else logWarn("no ethtool statistics for %s: %s", topo_.genIf().c_str(), st.error().message().c_str());
  }
  if (topo_.portAIsTap()) {
    auto ls = LinkStats::open(topo_.dutNs(), topo_.portA());
    if (ls) ingressLink_.emplace(std::move(ls.value()));
    else logWarn("no link statistics for %s: %s", topo_.portA().c_str(), ls.error().message().c_str());
  }
  auto ls = LinkStats::open(topo_.dutNs(), topo_.portB());
  if (ls) egressLink_.emplace(std::move(ls.value()));
  else logWarn("no link statistics for %s: %s", topo_.portB().c_str(), ls.error().message().c_str());
  if (!topo_.portBIsTap()) {
    auto es = EthtoolStats::open(topo_.dutNs(), topo_.portB());
    if (es) egressEthtool_.emplace(std::move(es.value()));
  }
}

Status Runner::setUp(Datapath& dp) {
  openStats();
  // The sink first: a devmap redirect needs the sink veth's NAPI (GRO, tc
  // sink) before it can transmit into it.
  VB_TRY(prepareSink(dp));
  VB_TRY(dp.start());
  if (timer_) timer_->setDutTgid(dp.pid());
  VB_TRY(prepareNapi());
  if (timer_) {
    // Kernel threads whose softirq work is told apart (see computeCpu).
    std::vector<std::pair<pid_t, int>> ctx;
    for (pid_t t : dutNapiThreads_) ctx.emplace_back(t, VB_CTX_NAPI);
    for (pid_t t : ksoftirqd_) ctx.emplace_back(t, VB_CTX_KSOFTIRQD);
    for (pid_t t : topo_.sink().taskIds()) ctx.emplace_back(t, VB_CTX_SINK);
    VB_TRY(timer_->setThreadContexts(ctx));
  }

  // Tell learning switches where the sink (and the VM) are: frames with no
  // magic, so they are never counted as benchmark frames anywhere.
  testkit::UdpFrameSpec learn{.dst = topo_.genMac(),
                              .src = topo_.sinkMac(),
                              .src_ip = 0xc6120101,  // 198.18.1.1
                              .dst_ip = 0xc6120001,  // 198.18.0.1
                              .src_port = VB_UDP_DPORT,
                              .dst_port = 1024};
  VB_TRY(topo_.sink().sendLearningFrames(buildFrame(learn, kMinFrameSize, /*magic=*/false), 3));
  if (topo_.scenario() == Scenario::kSwitch && topo_.vm()) {
    learn.src = topo_.vm()->mac();
    learn.src_ip = 0xc6120201;  // 198.18.2.1
    VB_TRY(topo_.vm()->sendLearningFrames(buildFrame(learn, kMinFrameSize, /*magic=*/false), 3));
  }
  if (!sleepUnlessStopped(0.05)) return makeError(EINTR, "measurement");
  return {};
}

Status Runner::drain(uint64_t lastSink) {
  // Let what is in flight arrive: the sink count must be still for 200 ms
  // (at most 3 s) before the totals are taken.
  double stillSince = monotonicSeconds(), giveUp = stillSince + 3;
  while (monotonicSeconds() - stillSince < 0.2 && monotonicSeconds() < giveUp) {
    if (!sleepUnlessStopped(0.02)) return makeError(EINTR, "measurement");
    auto k = topo_.sink().counters();
    if (!k) return k.error();
    if (k->pkts != lastSink) {
      lastSink = k->pkts;
      stillSince = monotonicSeconds();
    }
  }
  return {};
}

namespace {

struct Rates {
  std::vector<double> offMpps, fwdMpps, dts;
};

// Rates per sampling interval. Samples closer than half the sampling period
// to the previous cut (the window's first and last snapshots sit next to a
// regular sample; a late wakeup makes the next deadline pass at once) are
// merged, so they never show up as a 0-frame "gap". The last sample always
// closes the window.
template <class S>
Rates ratesOf(const std::vector<S>& window) {
  Rates out;
  if (window.size() < 2) return out;
  std::vector<size_t> cuts{0};
  for (size_t i = 1; i < window.size(); ++i)
    if (window[i].t - window[cuts.back()].t >= kSampleInterval / 2) cuts.push_back(i);
  size_t lastSample = window.size() - 1;
  if (cuts.back() != lastSample) {
    if (cuts.size() > 1) cuts.back() = lastSample;
    else cuts.push_back(lastSample);
  }
  for (size_t k = 1; k < cuts.size(); ++k) {
    const S& x = window[cuts[k - 1]];
    const S& y = window[cuts[k]];
    double dt = y.t - x.t;
    if (dt <= 0) continue;
    out.dts.push_back(dt);
    out.offMpps.push_back((y.offered - x.offered) / dt / 1e6);
    out.fwdMpps.push_back((y.forwarded - x.forwarded) / dt / 1e6);
  }
  return out;
}

template <class T>
std::optional<uint64_t> deltaOf(const std::optional<T>& a, const std::optional<T>& b) {
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

}  // namespace

namespace {
// Per port: what vdevd's statistics y add to x in rx_fill_ring_empty_descs
// and rx_ring_full (empty when either does not parse).
std::vector<RunResult::SocketDrops> socketDrops(const std::string& x, const std::string& y) {
  std::vector<RunResult::SocketDrops> out;
  auto sx = testkit::parseStats(x), sy = testkit::parseStats(y);
  if (!sx || !sy) return out;
  auto get = [](const testkit::PortStats& p, const char* k) -> uint64_t {
    auto v = p.xdp(k);
    return v ? *v : 0;
  };
  for (const testkit::PortStats& q : sy->ports) {
    RunResult::SocketDrops d{q.name, get(q, "rx_fill_ring_empty_descs"), get(q, "rx_ring_full")};
    for (const testkit::PortStats& p : sx->ports)
      if (p.name == q.name) {
        d.fillEmpty -= std::min(d.fillEmpty, get(p, "rx_fill_ring_empty_descs"));
        d.rxRingFull -= std::min(d.rxRingFull, get(p, "rx_ring_full"));
      }
    out.push_back(std::move(d));
  }
  return out;
}
}  // namespace

Result<RunResult> Runner::measure(Datapath& dp, int run) {
  struct StopGuard {  // dp and the generator are stopped on every way out
    Datapath& dp;
    TrafficSource& gen;
    bool armed = true;
    ~StopGuard() {
      gen.stop();
      if (armed) (void)dp.stop();
    }
  } guard{dp, gen_};

  RunResult r;
  r.datapath = dp.name();
  r.run = run;
  VB_TRY(setUp(dp));
  r.sinkPath = topo_.sink().receivePath();

  gen_.setRate(opt_.ratePps);
  r.targetPps = opt_.ratePps;
  auto base = snapshot(dp);
  if (!base) return base.error();
  VB_TRY(gen_.start());

  std::vector<Sample> warm, window;
  VB_TRY(sampleFor(opt_.warmup, &warm));
  const std::string statsA = dp.liveStatsJson();  // "" for the kernel datapaths
  auto a = snapshot(dp);
  if (!a) return a.error();
  window.push_back({a->t, a->gen.pkts, a->sink.pkts});
  VB_TRY(sampleFor(opt_.duration, &window));
  auto b = snapshot(dp);
  if (!b) return b.error();
  window.push_back({b->t, b->gen.pkts, b->sink.pkts});
  if (!statsA.empty()) r.dutSockets = socketDrops(statsA, dp.liveStatsJson());

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
      else s = x.error();
    }
    if (s.ok()) s = sampleFor(opt_.cpuWindow, &ignored);
    if (s.ok()) {
      auto y = snapshot(dp);
      if (y) c1 = std::move(y.value());
      else s = y.error();
    }
    timer_->detach();
    VB_TRY(s);
  }
  gen_.stop();
  VB_TRY(gen_.error());
  VB_TRY(drain(b->sink.pkts));
  auto fin = snapshot(dp);
  if (!fin) return fin.error();

  guard.armed = false;
  if (timer_) timer_->setDutTgid(0);
  Status st = dp.stop();
  if (!st.ok()) r.stopProblem = st.error().message();
  r.datapathStats = dp.statsJson();

  r.seconds = b->t - a->t;
  r.offered = b->gen.pkts - a->gen.pkts;
  r.forwarded = b->sink.pkts - a->sink.pkts;
  r.forwardedBytes = b->sink.bytes - a->sink.bytes;
  r.otherFrames = b->sink.otherPkts - a->sink.otherPkts;
  r.offeredTotal = fin->gen.pkts - base->gen.pkts;
  r.forwardedTotal = fin->sink.pkts - base->sink.pkts;
  r.countsOk = r.forwardedTotal <= r.offeredTotal;
  r.egressDrops = deltaOf(a->egressDrops, b->egressDrops);
  r.floodedToVm = deltaOf(a->vmPkts, b->vmPkts);
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
  r.ingressRingFull = deltaOf(a->ingressRefused, b->ingressRefused);

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

  Rates rt = ratesOf(window);
  r.offeredFlow = analyzeFlow(rt.offMpps, rt.dts, opt_.gapFraction);
  r.forwardedFlow = analyzeFlow(rt.fwdMpps, rt.dts, opt_.gapFraction);
  return r;
}

// ---- latency --------------------------------------------------------------------

Result<LatencyRun> Runner::measureLatency(Datapath& dp, int run, const std::vector<Pinger*>& pingers) {
  struct StopGuard {
    Datapath& dp;
    bool armed = true;
    ~StopGuard() {
      if (armed) (void)dp.stop();
    }
  } guard{dp};
  LatencyRun lr;
  lr.datapath = dp.name();
  lr.run = run;
  VB_TRY(setUp(dp));

  // Other load while probing: busy time (all CPUs) that neither vdevd nor
  // this process (requester, responders, tap readers) nor ksoftirqd had.
  auto ours = [&]() {
    double sum = 0;
    if (auto v = dp.processCpuSeconds()) sum += *v;
    if (auto me = taskCpuSeconds(getpid())) sum += me.value();
    for (pid_t t : ksoftirqd_)
      if (auto c = threadCpuSeconds(t)) sum += c.value();
    for (pid_t t : dutNapiThreads_)
      if (auto c = threadCpuSeconds(t)) sum += c.value();
    return sum;
  };
  auto busy0 = readCpuBusy();
  if (!busy0) return busy0.error();
  double ours0 = ours(), t0 = monotonicSeconds();

  const auto& pairs = topo_.latencyPairs();
  for (size_t i = 0; i < pairs.size() && i < pingers.size(); ++i) {
    PairLatency pl;
    pl.pair = pairs[i].name;
    pl.from = pairs[i].from->name;
    pl.to = pairs[i].to->name;
    ProbePlan plan;
    plan.cpu = opt_.genCpu;
    plan.prio = opt_.latPrio;
    plan.timeoutS = opt_.latTimeoutS;
    // Warm-up (discarded): learning, neighbour and socket caches.
    plan.count = 20;
    plan.intervalS = 0.001;
    std::vector<double> ignored;
    auto w = pingers[i]->run(plan, &ignored);
    if (!w) return w.error();
    if (ignored.empty())
      return Error{0, pl.pair + ": no answer to any of 20 warm-up probes (" + pl.from + " -> " +
                                             pl.to + ")"};
    std::vector<double> us;
    plan.count = opt_.latSamples;
    plan.intervalS = opt_.latIntervalS;
    auto ipi0 = readIpis();
    auto sw0 = dp.pid() ? voluntarySwitches(dp.pid()) : Result<uint64_t>(makeError(ESRCH, "no process"));
    auto n = pingers[i]->run(plan, &us);
    if (!n) return n.error();
    auto ipi1 = readIpis();
    auto sw1 = dp.pid() ? voluntarySwitches(dp.pid()) : Result<uint64_t>(makeError(ESRCH, "no process"));
    pl.light = summarizeLatency(us, n.value());
    if (n.value() > 0) {
      if (ipi0 && ipi1) pl.ipisPerProbe = double(ipi1.value() - ipi0.value()) / double(n.value());
      if (sw0 && sw1) pl.dutSleepsPerProbe = double(sw1.value() - sw0.value()) / double(n.value());
    }
    if (opt_.latPauseSamples > 0) {
      plan.count = opt_.latPauseSamples;
      plan.pauseS = opt_.latPauseS;
      auto m = pingers[i]->run(plan, &pl.pauseUs);
      if (!m) return m.error();
      pl.pause = summarizeLatency(pl.pauseUs, m.value());
    }
    lr.pairs.push_back(std::move(pl));
  }

  auto busy1 = readCpuBusy();
  if (!busy1) return busy1.error();
  lr.seconds = monotonicSeconds() - t0;
  double other = (busy1->all - busy0->all) - (ours() - ours0);
  lr.otherLoad = lr.seconds > 0 ? std::max(0.0, other) / lr.seconds : 0;
  lr.noisy = lr.otherLoad > 0.15;
  if (lr.noisy)
    logWarn("%s latency run %d: %.0f%% of a CPU went to other tasks while probing; is the machine idle?",
            lr.datapath.c_str(), run, 100.0 * lr.otherLoad);

  guard.armed = false;
  if (timer_) timer_->setDutTgid(0);
  Status st = dp.stop();
  if (!st.ok()) lr.stopProblem = st.error().message();
  return lr;
}

// ---- loss search ----------------------------------------------------------------

namespace {
struct DutDrops {
  uint64_t rxRingFull = 0, fillEmpty = 0, drops = 0;
};
uint64_t orZero(Result<uint64_t> r) { return r ? *r : 0; }
// vdevd's own drop counters, summed over its ports (a counter vdevd does not
// report counts 0); nullopt when the statistics do not parse.
std::optional<DutDrops> dutDrops(const std::string& json) {
  auto stats = testkit::parseStats(json);
  if (!stats) return std::nullopt;
  DutDrops d;
  for (const testkit::PortStats& p : stats->ports) {
    d.rxRingFull += orZero(p.xdp("rx_ring_full"));
    d.fillEmpty += orZero(p.xdp("rx_fill_ring_empty_descs"));
    for (const char* k : {"ring_full", "tx_ring_full", "no_route", "port_down", "oversize", "runt", "pool_empty",
                          "invalid_src"})
      d.drops += orZero(p.drop(k));
  }
  return d;
}
}  // namespace

Result<RateTrial> Runner::trial(Datapath& dp, uint64_t pps, double seconds) {
  RateTrial t;
  t.targetPps = pps;
  gen_.setRate(pps);
  std::string stats0 = dp.liveStatsJson();
  auto base = snapshot(dp);
  if (!base) return base.error();
  std::vector<Sample> samples;
  double t0 = monotonicSeconds();
  samples.push_back({t0, base->gen.pkts, base->sink.pkts});
  VB_TRY(gen_.start());
  Status s = sampleFor(seconds, &samples);
  gen_.stop();
  double t1 = monotonicSeconds();
  VB_TRY(s);
  VB_TRY(gen_.error());
  VB_TRY(drain(samples.back().forwarded));
  auto fin = snapshot(dp);
  if (!fin) return fin.error();
  std::string stats1 = dp.liveStatsJson();
  if (!stats0.empty() && !stats1.empty()) {
    const auto x = dutDrops(stats0), y = dutDrops(stats1);
    if (x && y) {
      t.dutRxRingFull = y->rxRingFull - x->rxRingFull;
      t.dutFillRingEmpty = y->fillEmpty - x->fillEmpty;
      t.dutDrops = y->drops - x->drops;
    }
  }
  // The rate is over the time frames flowed: from the last sample before
  // the first frame on.
  double first = t0;
  for (size_t i = 1; i < samples.size(); ++i) {
    if (samples[i].offered != base->gen.pkts) break;
    first = samples[i].t;
  }
  t.seconds = t1 - first;
  t.offered = fin->gen.pkts - base->gen.pkts;
  t.forwarded = fin->sink.pkts - base->sink.pkts;
  t.ingressRefused = deltaOf(base->ingressRefused, fin->ingressRefused);
  t.egressDrops = deltaOf(base->egressDrops, fin->egressDrops);
  t.countsOk = t.forwarded <= t.offered;
  if (base->sinkKernel && fin->sinkKernel &&
      *fin->sinkKernel - *base->sinkKernel !=
          (fin->sink.pkts + fin->sink.otherPkts) - (base->sink.pkts + base->sink.otherPkts))
    t.countsOk = false;
  // Offered-load gaps, without the generator's start (the first 10 ms).
  if (samples.size() > 2) samples.erase(samples.begin());
  Rates rt = ratesOf(samples);
  t.offeredFlow = analyzeFlow(rt.offMpps, rt.dts, opt_.gapFraction);
  t.pass = t.countsOk && t.offered > 0 && t.lossPct() <= opt_.lossMaxPct;
  logInfo("%s trial %llu fps: offered %.0f fps, loss %.4f%% -> %s", dp.name().c_str(),
          static_cast<unsigned long long>(pps), t.offeredPps(), t.lossPct(), t.pass ? "pass" : "fail");
  return t;
}

Result<RateSearch> Runner::findRate(Datapath& dp, int run, double vdevdPeakPps) {
  struct StopGuard {
    Datapath& dp;
    TrafficSource& gen;
    bool armed = true;
    ~StopGuard() {
      gen.stop();
      gen.setRate(0);
      if (armed) (void)dp.stop();
    }
  } guard{dp, gen_};
  RateSearch rs;
  rs.datapath = dp.name();
  rs.run = run;
  VB_TRY(setUp(dp));
  auto a = snapshot(dp);
  if (!a) return a.error();

  // Warm-up, then the peak: unpaced, what the datapath forwards at most.
  if (opt_.warmup > 0) {
    auto w = trial(dp, 0, opt_.warmup);
    if (!w) return w.error();
  }
  auto peak = trial(dp, 0, opt_.trialS);
  if (!peak) return peak.error();
  rs.peak = peak.value();

  // Binary search on the offered rate. A datapath cannot forward more without
  // loss than it forwards at most, so the first trial is at the peak's
  // forwarded rate; if that passes at the rate asked for, the search goes on
  // up to the peak's offered rate. When the unpaced peak itself lost
  // nothing, the datapath took everything the generator could offer (its
  // softirq work shares the generator's CPU and throttles it): that offered
  // rate is the answer, a lower bound limited by the generator's CPU.
  constexpr double kMinRate = 1000;
  double lo = 0, hi = 0;  // hi 0: no failing rate yet
  double r = rs.peak.forwardedPps();
  if (rs.peak.pass) {
    rs.lossFreePps = rs.peak.offeredPps();
    rs.generatorLimited = true;
    r = 0;
  }
  for (int i = 0; i < opt_.maxTrials && r >= kMinRate; ++i) {
    auto t = trial(dp, static_cast<uint64_t>(r), opt_.trialS);
    if (!t) return t.error();
    rs.trials.push_back(t.value());
    if (t->pass) {
      rs.lossFreePps = std::max(rs.lossFreePps, t->offeredPps());
      lo = r;
      if (t->offeredPps() < 0.95 * r) {
        // The generator could not offer this much: its CPU also runs the
        // datapath's softirq work. Asking for more offers no more.
        rs.generatorLimited = true;
        break;
      }
      if (hi == 0) {
        hi = rs.peak.offeredPps();
        if (hi <= lo * (1 + opt_.resolution)) break;
      }
    } else {
      hi = r;
    }
    if (hi - lo <= opt_.resolution * hi) break;
    r = (lo + hi) / 2;
  }

  // 90% of vdevd's own peak (the same run's), for every datapath.
  double ref = vdevdPeakPps > 0 ? vdevdPeakPps : (isVdevd(dp.name()) ? rs.peak.forwardedPps() : 0);
  if (ref > 0) {
    rs.vdevdPeakPps = ref;
    auto t = trial(dp, static_cast<uint64_t>(0.9 * ref), opt_.duration);
    if (!t) return t.error();
    rs.at90 = t.value();
  }

  auto b = snapshot(dp);
  if (!b) return b.error();
  double other = b->t > a->t ? otherLoad(*a, *b) / (b->t - a->t) : 0;
  rs.noisy = other > 0.15;
  if (rs.noisy)
    logWarn("%s loss search run %d: %.0f%% of a CPU went to other tasks; is the machine idle?", rs.datapath.c_str(),
            run, 100.0 * other);

  gen_.setRate(0);
  guard.armed = false;
  if (timer_) timer_->setDutTgid(0);
  Status st = dp.stop();
  if (!st.ok()) rs.stopProblem = st.error().message();
  return rs;
}

}  // namespace vdev::bench
