// runner.h - one measured run of one datapath, and what it produced.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "datapath.h"
#include "ethtool_stats.h"
#include "generator.h"
#include "latency.h"
#include "options.h"
#include "result.h"
#include "topology.h"

namespace vdev::bench {

// Rate over 10 ms sampling intervals of one counter (offered or forwarded).
struct FlowStats {
  size_t intervals = 0;
  double medianMpps = 0;
  double p1Mpps = 0;      // 1st percentile interval
  double minMpps = 0;
  int gaps = 0;           // runs of intervals below gapFraction x median
  double longestGapMs = 0;
  double gapMs = 0;       // total time in gaps
};

// CPU seconds during the measured window. See docs/performance.md.
struct CpuUse {
  // Raw figures.
  double all = 0;                 // /proc/stat busy time, all CPUs (tick sampled)
  double dutCpu = 0;              // /proc/stat busy time of the datapath CPU
  double genThreads = 0;          // generator threads (schedstat, exact)
  double sinkTask = 0;            // tap reader thread / sink NAPI kthread (schedstat)
  std::optional<double> vdevdProcess;   // vdevd, all threads (utime + stime)
  std::optional<double> dutNapiThread;  // ingress port's threaded-NAPI kthread
  // NAPI polls in NET_RX softirq (napi_time.bpf.c), when it is attached:
  std::optional<double> pollDut;           // of the DUT's ports, any context
  std::optional<double> pollSink;          // of the sink veth (or the backlog, tc sink), any context
  std::optional<double> pollInDutProcess;  // anything, on top of vdevd
  std::optional<double> pollInBench;       // anything, on top of vdev-bench (generator)
  std::optional<double> pollInNapiThread;  // anything, on top of the ingress port's NAPI kthread
  std::optional<double> pollInSinkTask;    // anything, on top of the sink's task (tap reader, NAPI kthread)
  std::optional<double> pollInKsoftirqd;   // anything, in ksoftirqd
  std::optional<double> netRxOther;        // NET_RX time outside our polls
  // Every softirq poll of the CPU window, by device and context, for the
  // JSON (device "" = NET_RX time outside the topology's polls).
  std::vector<std::pair<std::pair<std::string, int>, PollTime>> polls;

  // Derived, per method:
  //  "tasks+softirq": every task's run time minus the softirq work that
  //      ran on top of it, plus the softirq polls of the devices it owns:
  //      datapath = (vdevd - softirq on vdevd) + (the ingress port's NAPI
  //      kthread - softirq on it) + softirq polls of the DUT's ports;
  //      generator = its threads - softirq on them; sink = (the sink's
  //      kthread or reader thread - softirq on it) + softirq polls of the
  //      sink veth (or the backlog). Exact in both NAPI modes (scheduler run
  //      times and ktime-stamped polls). A threaded-NAPI kthread re-enables
  //      bottom halves after its poll and runs the softirqs its poll raised
  //      right there (e.g. the tc sink's backlog): that time is in its run
  //      time and in the sink's polls, so it is taken off the kthread.
  //  "tasks": (threaded NAPI, no poll timing) datapath = vdevd + the
  //      ingress NAPI kthread.
  //  "proc_stat": (softirq NAPI, no poll timing) all CPUs busy - generator
  //      - sink, which misses softirq work charged to the generator.
  std::string method;
  double datapath = 0, generator = 0, sink = 0;
  // Busy time (all CPUs, /proc/stat) that none of the above explains: other
  // load on the machine, or tick-sampling noise (a few % of one CPU). A run
  // where it exceeds 15% of one CPU is flagged "noisy".
  double unexplained = 0;
  // Steal time (all CPUs): the hypervisor gave our vCPUs' time to others.
  double steal = 0;
};

struct RunResult {
  std::string datapath;
  int run = 0;
  double seconds = 0;           // measured (rate) window, wall clock
  uint64_t offered = 0;         // frames the generator emitted in the window
  uint64_t forwarded = 0;       // vdev-bench frames the sink got in the window
  uint64_t forwardedBytes = 0;
  uint64_t otherFrames = 0;     // non-benchmark frames at the sink (window)
  // Generator veth's view (ethtool -S): frames the ingress port's XDP ring
  // took, and frames refused because that ring was full (the DUT did not
  // keep up: the veth equivalent of a NIC's rx_missed). A tap ingress
  // (tap-veth): the tap's rx_dropped (tun counts a failed XDP redirect
  // there) plus refused write()s.
  std::optional<uint64_t> ingressAccepted, ingressRingFull;
  // Egress port drops in the window: the sink's queue was full (a veth's
  // peer ring for xdp_frames, its backlog ring for skbs; a tap's reader
  // queue). Non-zero means the sink, not the datapath, lost frames.
  std::optional<uint64_t> egressDrops;
  uint64_t targetPps = 0;       // paced offered rate (--rate), 0 = unpaced
  // Switch scenario: benchmark frames that reached the VM (flooded: the
  // switch did not know the sink's port) in the window.
  std::optional<uint64_t> floodedToVm;
  uint64_t offeredTotal = 0;    // whole run (warm-up + window + drain)
  uint64_t forwardedTotal = 0;
  // How frames reached the sink (Sink::receivePath()).
  std::string sinkPath;
  // The sink's count (all frames) against the kernel's count of frames that
  // reached the sink (sinkKernelCounter names it), over the whole run (veth
  // sink only).
  std::optional<uint64_t> sinkCountTotal, sinkKernelTotal;
  std::string sinkKernelCounter;
  bool countsOk = false;        // forwardedTotal <= offeredTotal, sink == kernel
  bool noisy = false;           // other load: CpuUse::unexplained or steal > 15% of a CPU
  // The window the CPU figures (cpu) cover: the rate window itself, or with
  // --napi-timing split the CPU window right after it, with the NAPI timing
  // attached; its length and the frames offered/forwarded in it.
  double cpuSeconds = 0;
  uint64_t cpuOffered = 0, cpuForwarded = 0;
  CpuUse cpu;
  // Busy CPU seconds (/proc/stat, all CPUs) during the rate window that no
  // task of the benchmark (vdevd, generator, sink, NAPI kthreads, ksoftirqd)
  // accounts for: other load. Coarse (tick-sampled) but needs no tracing.
  double rateWindowOther = 0;
  FlowStats offeredFlow, forwardedFlow;
  std::string datapathStats;    // vdevd's statistics JSON
  // vdevd's AF_XDP sockets, per port, over the rate window (statistics asked
  // just before it and just after): frames the kernel dropped because the
  // fill ring was empty (rx_fill_ring_empty_descs) or the RX ring full.
  // Empty for the kernel datapaths, or when the statistics did not parse.
  struct SocketDrops {
    std::string port;
    uint64_t fillEmpty = 0, rxRingFull = 0;
  };
  std::vector<SocketDrops> dutSockets;
  std::string stopProblem;      // datapath stop() complaint, if any

  double offeredMpps() const { return seconds > 0 ? offered / seconds / 1e6 : 0; }
  double forwardedMpps() const { return seconds > 0 ? forwarded / seconds / 1e6 : 0; }
  double lossPct() const { return offered ? 100.0 * (1.0 - double(forwarded) / double(offered)) : 0; }
  double cpuPerMframe() const { return cpuForwarded ? cpu.datapath / (cpuForwarded / 1e6) : 0; }
};

// Round trips of one pair in one latency run.
struct PairLatency {
  std::string pair;              // "container-container", "container-vm"
  std::string from, to;          // endpoint names
  LatencyStats light;            // --lat-samples probes, --lat-interval apart
  LatencyStats pause;            // --lat-pause-samples probes, each after --lat-pause idle
  std::vector<double> pauseUs;   // the pause samples themselves (few)
  // Light load, per probe: inter-processor interrupts on the machine
  // (wake-ups across CPUs) and times the datapath process went to sleep.
  std::optional<double> ipisPerProbe, dutSleepsPerProbe;
};

// One latency run of one datapath: its own start, probes, stop.
struct LatencyRun {
  std::string datapath;
  int run = 0;
  std::vector<PairLatency> pairs;
  double seconds = 0;            // wall time of the probes
  double otherLoad = 0;          // CPU seconds per second of other load (see noisy)
  bool noisy = false;
  std::string stopProblem;
};

// One trial of the loss search: a fixed offered rate for a fixed time,
// counted exactly (generator and sink totals from before the first frame
// to after the last one arrived).
struct RateTrial {
  uint64_t targetPps = 0;        // 0 = unpaced (the peak trial)
  // Generator running, wall clock, from the 10 ms sample before its first
  // frame (BPF_PROG_RUN takes ~25 ms to start) to its stop.
  double seconds = 0;
  uint64_t offered = 0, forwarded = 0;
  std::optional<uint64_t> ingressRefused, egressDrops;
  // vdevd's own drop counters over the trial (statistics on SIGUSR1):
  // AF_XDP RX ring full (xdp_stats.rx_ring_full), fill ring empty
  // (rx_fill_ring_empty_descs), and its internal drops (drops.*).
  std::optional<uint64_t> dutRxRingFull, dutFillRingEmpty, dutDrops;
  FlowStats offeredFlow;
  bool countsOk = false;
  bool pass = false;             // loss <= --loss-max
  double offeredPps() const { return seconds > 0 ? offered / seconds : 0; }
  double forwardedPps() const { return seconds > 0 ? forwarded / seconds : 0; }
  double lossPct() const { return offered ? 100.0 * (1.0 - double(forwarded) / double(offered)) : 0; }
};

// The loss search (--find-rate) of one datapath in one run.
struct RateSearch {
  std::string datapath;
  int run = 0;
  RateTrial peak;                // unpaced: what the datapath forwards at most
  std::vector<RateTrial> trials; // the search, in order
  // The highest rate offered (as measured, not as asked) in a trial that
  // lost at most --loss-max; 0 when none did.
  double lossFreePps = 0;
  // The unpaced peak lost nothing, or a passing trial offered clearly less
  // than asked (< 95%): the generator shares its CPU with the datapath's
  // softirq work and could not offer more; the loss-free rate is then a
  // lower bound set by that CPU.
  bool generatorLimited = false;
  // At 90% of vdevd's peak (forwarded, unpaced) of the same run, when known.
  double vdevdPeakPps = 0;
  std::optional<RateTrial> at90;
  bool noisy = false;            // other load above 15% of a CPU during the search
  std::string stopProblem;
};

class Runner {
 public:
  // timer may be null (napi_time could not be attached): other CPU methods.
  Runner(Topology& topo, TrafficSource& gen, const Options& o, NapiTimer* timer)
      : topo_(topo), gen_(gen), opt_(o), timer_(timer) {}
  // Starts dp, measures, stops dp. dp is stopped on every path out.
  Result<RunResult> measure(Datapath& dp, int run);
  // Starts dp, sends the latency probes of every pair of the topology,
  // stops dp. Requesters and responders are set up by the caller (they
  // outlive the runs): pingers[i] belongs to topo.latencyPairs()[i].
  Result<LatencyRun> measureLatency(Datapath& dp, int run, const std::vector<Pinger*>& pingers);
  // Starts dp, finds its peak (unpaced) and then, by binary search, the
  // highest offered rate with at most --loss-max loss; then a --duration
  // trial at 90% of vdevdPeakPps (if > 0; for vdevd itself, its own peak
  // when vdevdPeakPps is 0). Stops dp.
  Result<RateSearch> findRate(Datapath& dp, int run, double vdevdPeakPps);

 private:
  struct Sample {
    double t;
    uint64_t offered;
    uint64_t forwarded;
  };
  struct Snapshot {
    double t = 0;
    Counters gen, sink;
    std::optional<uint64_t> vmPkts;  // switch: frames of ours that reached the VM
    std::optional<uint64_t> ingressRefused;
    CpuBusy busy;
    double genCpu = 0, sinkCpu = 0, ksoftirqdCpu = 0;
    std::optional<double> vdevdCpu, napiCpu;
    std::map<std::string, uint64_t> ingress;
    std::optional<uint64_t> egressDrops;
    std::optional<uint64_t> sinkKernel;
    std::optional<PollTimes> polls;
  };
  void computeCpu(const Snapshot& a, const Snapshot& b, bool usePolls, RunResult* r) const;
  double otherLoad(const Snapshot& a, const Snapshot& b) const;
  Status sampleFor(double seconds, std::vector<Sample>* out);
  Result<Snapshot> snapshot(const Datapath& dp);
  Status prepareSink(const Datapath& dp);
  Status prepareNapi();
  void openStats();
  // Everything before traffic: sink, datapath, NAPI threads, timer labels,
  // learning frames.
  Status setUp(Datapath& dp);
  // Generator stopped: waits until the sink count is still for 200 ms.
  Status drain(uint64_t lastSink);
  Result<RateTrial> trial(Datapath& dp, uint64_t pps, double seconds);

  Topology& topo_;
  TrafficSource& gen_;
  const Options& opt_;
  NapiTimer* timer_;
  std::vector<pid_t> dutNapiThreads_;
  std::vector<pid_t> ksoftirqd_;
  std::optional<EthtoolStats> genStats_, egressEthtool_;
  std::optional<LinkStats> egressLink_, ingressLink_;
  bool statsTried_ = false;
};

FlowStats analyzeFlow(const std::vector<double>& mppsPerInterval, const std::vector<double>& dtPerInterval,
                      double gapFraction);

}  // namespace vdev::bench
