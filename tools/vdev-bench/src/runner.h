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
  std::optional<double> pollInBench;       // anything, on top of vdev-bench
  std::optional<double> netRxOther;        // NET_RX time outside our polls

  // Derived, per method:
  //  "tasks+softirq": datapath = (vdevd - softirq run on top of vdevd) +
  //      the ingress port's NAPI kthread (threaded) + softirq polls of the
  //      DUT's ports; generator = its threads - softirq run on top of them;
  //      sink = the sink's kthread or reader thread + softirq polls of the
  //      sink veth. Exact in both NAPI modes (scheduler run times and
  //      ktime-stamped polls).
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
  // keep up: the veth equivalent of a NIC's rx_missed).
  std::optional<uint64_t> ingressAccepted, ingressRingFull;
  // Egress port drops in the window: the sink's queue was full (a veth's
  // peer ring for xdp_frames, its backlog ring for skbs; a tap's reader
  // queue). Non-zero means the sink, not the datapath, lost frames.
  std::optional<uint64_t> egressDrops;
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
  // Per 10 ms interval of the window (--timeline): start time (s from the
  // window start), offered and forwarded Mpps.
  std::vector<double> timelineT, timelineOffered, timelineForwarded;
  std::string datapathStats;    // vdevd's statistics JSON
  std::string stopProblem;      // datapath stop() complaint, if any
  // Round-trip latency percentiles go here (a later issue): a reflector on
  // the sink side will bounce every Nth frame and the generator side will
  // compare vb_payload.stamp_ns with its receive time.

  double offeredMpps() const { return seconds > 0 ? offered / seconds / 1e6 : 0; }
  double forwardedMpps() const { return seconds > 0 ? forwarded / seconds / 1e6 : 0; }
  double lossPct() const { return offered ? 100.0 * (1.0 - double(forwarded) / double(offered)) : 0; }
  double cpuPerMframe() const { return cpuForwarded ? cpu.datapath / (cpuForwarded / 1e6) : 0; }
};

class Runner {
 public:
  // timer may be null (napi_time could not be attached): other CPU methods.
  Runner(Topology& topo, Generator& gen, const Options& o, NapiTimer* timer)
      : topo_(topo), gen_(gen), opt_(o), timer_(timer) {}
  // Starts dp, measures, stops dp. dp is stopped on every path out.
  Result<RunResult> measure(Datapath& dp, int run);

 private:
  struct Sample {
    double t;
    uint64_t offered;
    uint64_t forwarded;
  };
  struct Snapshot {
    double t = 0;
    Counters gen, sink;
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

  Topology& topo_;
  Generator& gen_;
  const Options& opt_;
  NapiTimer* timer_;
  std::vector<pid_t> dutNapiThreads_;
  std::vector<pid_t> ksoftirqd_;
  std::optional<EthtoolStats> genStats_, egressEthtool_;
  std::optional<LinkStats> egressLink_;
  bool statsTried_ = false;
};

FlowStats analyzeFlow(const std::vector<double>& mppsPerInterval, const std::vector<double>& dtPerInterval,
                      double gapFraction);

}  // namespace vdev::bench
