// options.cpp - see options.h.
#include "options.h"

#include <getopt.h>

#include <cstdlib>
#include <sstream>

#include "datapath.h"
#include "frame.h"

namespace vdev::bench {

const char* napiTimingName(NapiTiming t) {
  switch (t) {
    case NapiTiming::kSplit: return "split";
    case NapiTiming::kOn: return "on";
    case NapiTiming::kOff: return "off";
  }
  return "?";
}

const char* latencyModeName(LatencyMode m) {
  switch (m) {
    case LatencyMode::kOn: return "on";
    case LatencyMode::kOff: return "off";
    case LatencyMode::kOnly: return "only";
  }
  return "?";
}

void printUsage(FILE* f) {
  fputs(
      R"(NAME
    vdev-bench - forwarding benchmark: vdevd against the Linux bridge and kernel XDP redirect

SYNOPSIS
    vdev-bench [--scenario veth-veth|veth-tap|tap-veth|switch] [--datapath LIST]
               [--duration S] [--runs N] [--frame-size B] [--latency on|off|only]
               [--find-rate] [--rate PPS] [--json] [--vdevd PATH] [OPTIONS]

DESCRIPTION
    Builds a private topology of network namespaces, offers a continuous stream of
    identical UDP frames to one port of a device under test (DUT) and counts, exactly,
    what arrives at the other port; then measures round-trip latency between the
    containers and the VM stand-in with UDP request/response probes. Each datapath in
    LIST forwards between the SAME ports, one after the other, in the same invocation:

      vdevd          vdevd --port A --port B --mode xconnect (the AF_XDP datapath)
      vdevd-switch   the same with --mode switch --no-fast-path (L2 learning switch,
                     every frame through vdevd)
      vdevd-spin     vdevd (xconnect; switch --no-fast-path in the switch scenario) with
                     --idle-spin-us 1000000: it never sleeps while frames come more than
                     once a second; vdevd's nearest to busy polling
      vdevd-fast     vdevd --mode switch --fast-path (vdevd's default mode): learned
                     unicast is redirected by the ports' XDP programs through a devmap
                     (the kernel's bulk ndo_xdp_xmit), everything else goes through
                     vdevd. The sink veth gets GRO on, as vdevd gives the container end
                     of every veth it creates (a veth takes redirected frames only with
                     NAPI)
      vdevd-rx-off   vdevd-fast with --no-fast-rx on the ingress port A: what the
                     generator (or the VM, in tap-veth) sends goes through vdevd's
                     thread, the answers may take the fast path; the per-port choice
                     for a VM whose sending thread is its bottleneck
      bridge         a Linux bridge enslaving the ports (STP off; a static FDB entry for
                     the sink, except in the switch scenario, where it learns)
      xdp-redirect   an XDP program on A redirecting into B through a devmap (and one on
                     B back into A, for the latency probes' answers): the kernel's
                     cheapest forwarding, the upper bound. Two ports only.

    Topology (P = vb<pid>; everything lives in namespaces created for the run and is
    removed at exit, also on error and SIGINT/SIGTERM):

      veth-veth: P-gen: Pg (veth) == P-dut: Pa (veth) [datapath] Pb (veth) == P-sink: Ps (veth)
      veth-tap:  ... Pb is a tap, read() by a thread of vdev-bench (the VM)
      tap-veth:  Pa is a tap the VM write()s the frames into (one write() per frame, as
                 QEMU without vhost); Pb, Ps as veth-veth
      switch:    veth-veth plus Pc, a tap read by the VM: two containers and a VM on one
                 learning switch (vdevd-switch, vdevd-spin, vdevd-fast, bridge); traffic Pg -> Ps;
                 frames flooded to the VM are counted

    The generator runs an XDP program with BPF_PROG_RUN in live-frames mode
    (BPF_F_TEST_XDP_LIVE_FRAMES) from 2 threads pinned to the generator CPU; it returns
    XDP_TX, which sends each frame out of Pg into Pa. The sink is a BPF program on Ps
    that counts and drops (veth-veth; on tc ingress by default, see --sink), or a thread
    reading the tap (veth-tap), standing in for a VM. Offered load is sampled every 10 ms
    and gaps are reported.

    Frames: Ethernet/IPv4/UDP, 198.18.0.1 -> 198.18.1.1, port 1024 -> 9, locally
    administered MACs 02:76:62:00:00:01 -> 02:76:62:00:00:02, valid IPv4 checksum,
    UDP checksum 0. Needs root (CAP_NET_ADMIN, CAP_BPF, CAP_SYS_ADMIN).

OPTIONS
    -s, --scenario NAME   veth-veth (default), veth-tap, tap-veth or switch.
    -d, --datapath LIST   comma-separated datapaths, in order (default:
                          vdevd,vdevd-fast,bridge,xdp-redirect; switch:
                          vdevd-switch,vdevd-fast,bridge; with the
                          default list a vdevd that cannot be found is skipped with a note,
                          a listed one is an error).
    -t, --duration S      measured seconds per run (default 5).
    -w, --warmup S        seconds of traffic before each measurement (default 1).
    -n, --runs N          runs per datapath (default 3); the table shows medians. Runs are
                          interleaved: run 1 of every datapath, then run 2, ...
    -b, --size, --frame-size B
                          frame size in bytes on the wire with the 4-byte FCS, as in
                          RFC 2544: 64 (default) .. 1518. The buffer is B - 4 bytes.
                          Latency probes have the same size.
    -j, --json            print one JSON document on stdout instead of the table.
        --sink MODE       veth-veth sink (ignored for veth-tap):
                          tc (default): a BPF program on Ps's clsact ingress counts and
                          returns TC_ACT_SHOT. Ps has no XDP program and GRO off, as a
                          container's veth: frames arrive as skbs through netif_rx (the
                          backlog of the CPU that transmitted). For xdp-redirect, which
                          transmits xdp_frames into Pb (ndo_xdp_xmit), GRO is turned on for
                          its runs: that gives Ps NAPI without an XDP program, and Ps then
                          builds an skb per frame. Checked against Ps's rx_packets.
                          xdp: native XDP on Ps counts and returns XDP_DROP. veth must copy
                          every skb whose head is not a page fragment with 256 bytes of
                          headroom (vdevd's copy-mode AF_XDP skbs) into a page before the
                          program runs, a cost a container does not pay. Checked against
                          rx_queue_N_xdp_drops.
        --vdevd PATH      the vdevd binary (default: ../../daemon/vdevd relative to
                          vdev-bench in the build tree, then PATH).
        --vdevd-arg ARG   pass ARG to vdevd (repeatable), e.g. --vdevd-arg=--batch=128.
        --gen-cpu N       CPU of the generator threads (default 0).
        --dp-cpu N        CPU of the datapath: vdevd, and with --napi threaded the ingress
                          port's NAPI kthread (default 1).
        --boost on|off|auto
                          run vdev-bench's session at autogroup nice -20 (restored at exit):
                          with CONFIG_SCHED_AUTOGROUP, CFS splits a CPU between sessions
                          first, so another session's build takes half of any CPU it shares
                          with the generator or vdevd (a child: same session). auto (default):
                          on while paced (--rate, --find-rate), which needs its CPU; on: for
                          every measurement, on a shared machine. Rates are unaffected, but
                          on Linux 6.18 the run times in /proc/TID/schedstat were wrong for
                          boosted threads sharing a CPU with an RT task (the tap reader:
                          0.11 s/s reported where perf sampled 0.33): the CPU split of
                          veth-tap runs is not to be trusted with --boost on.
        --dp-prio N       run vdevd at SCHED_FIFO priority N (default 0: SCHED_OTHER, as
                          installed), as a unit with CPUSchedulingPolicy=fifo would. A
                          vdevd at normal priority shares its CPU with whatever else runs
                          there; the kernel paths run in softirq.
        --sink-cpu N      CPU of the sink's receive work: the tap reader thread, or the
                          sink veth's threaded NAPI kthread (default: the generator CPU).
                          In softirq mode the sink veth's receive work (its NAPI, or the
                          backlog for the tc sink) runs on the CPU that transmitted into it.
        --sink-prio N     SCHED_FIFO priority of that work, 0 for normal (default 50): the
                          sink takes what it needs from the CPU it shares with the
                          generator, which offers with the rest, so the sink is not what
                          limits or drops (egress drops in the per-run lines show if it did).
        --napi MODE       softirq (default): NAPI runs where the kernel runs it, in softirq on
                          the CPU that queued the frames, as for any veth: the kernel
                          paths then run on the generator's CPU (run to completion), and
                          vdevd's ingress XDP program too. threaded: the ingress port's
                          NAPI runs in a kthread pinned to the datapath CPU and, with --sink
                          xdp, the sink veth's in one pinned to the sink CPU (at
                          --sink-prio), so every datapath is confined to exactly one CPU.
        --sink-napi MODE  the sink veth's NAPI alone: softirq or threaded (default: as
                          --napi with --sink xdp, softirq with --sink tc). "--sink-napi
                          threaded" keeps the sink's receive work off the datapath CPU while
                          the ports' NAPI stays in softirq. Needs --sink xdp: with the tc
                          sink, skbs reach Ps through the per-CPU backlog whatever its NAPI.
        --gen-threads N   generator threads calling BPF_PROG_RUN (default 2; 1 shows the
                          ~25 ms gap per call).
        --repeat N        frames per BPF_PROG_RUN call (default 2000000).
        --batch N         frames per kernel batch inside a call, 1..256 (default 64).
        --sport-count N   vary the UDP source port over N values, per frame (default off).
        --gap-fraction F  a 10 ms interval below F x the median rate is a gap (default 0.1).
        --timeline        add every run's 10 ms offered/forwarded rates to the JSON.
        --napi-timing MODE
                          when to time the NAPI polls that run in softirq (BPF programs on
                          the softirq_entry/softirq_exit/napi_poll tracepoints; this is what
                          splits softirq work between datapath, generator and sink). They
                          cost ~0.25 us per NET_RX softirq, and copy-mode AF_XDP transmit
                          into a veth without NAPI (vdevd -> tc sink) raises one softirq
                          per frame: attached during the measurement they slow vdevd down
                          by a third. split (default): not during the measured window; they
                          are attached for a CPU window (--cpu-window) right after it, and
                          the CPU figures come from that window. on: attached throughout,
                          CPU figures from the measured window (rates are then lower).
                          off: never; CPU figures from /proc/stat and task times only.
        --cpu-window S    length of the CPU window with --napi-timing split (default 2).
        --bridge-nf-call on|off
                          set net.bridge.bridge-nf-call-{iptables,ip6tables,arptables} in
                          the DUT namespace (default: leave them as the kernel has them,
                          1 wherever br_netfilter is built in or loaded, as on Docker and
                          Kubernetes hosts). While on, every bridged IPv4 frame goes through
                          br_netfilter's hooks, a large part of the bridge's cost. The value
                          in effect is in the table header and the JSON.
        --rate PPS        offer PPS frames per second (suffix k or M allowed) instead of
                          as many as possible: the generator paces itself (the BPF
                          program spins until each burst's time slot; frames leave in
                          bursts of --pace-batch), so CPU per frame is measured at a fixed
                          load. After a stall it catches up by at most 256 frames (a
                          veth's ring) and skips the rest: the table's offered column
                          shows what was really offered.
        --pace-batch N    frames per burst while paced, 1..256 (default 16; the kernel
                          transmits a BPF_PROG_RUN batch at its end).
        --tap-writers N   the VM's writer threads in tap-veth (default 1).

  Latency (round trip, UDP request/response; see docs/performance.md):
        --latency MODE    on (default): after the throughput runs of each round, start
                          each datapath again and probe; off; only: no throughput runs.
                          Pairs: container1 -> container2 (veth-veth, switch), container ->
                          VM (veth-tap, tap-veth, switch). The requester is a UDP socket in
                          a container's namespace; a container answers with a UDP socket,
                          the VM from its tap reader.
        --lat-samples N   light load: N probes per pair and run (default 1000) ...
        --lat-interval-us U
                          ... one every U microseconds (default 1000), nothing else on the
                          wire. p50/p90/p99/max of the round trip.
        --lat-pause-samples N
                          first frame after a pause: N more probes (default 20) ...
        --lat-pause-ms M  ... each sent after M ms without any traffic (default 200), so
                          that vdevd has gone to sleep. Reported apart.
        --lat-prio N      SCHED_FIFO priority of the requester and the UDP responder
                          (default 50; 0 = normal).
        --lat-timeout-ms M
                          a probe without an answer after M ms is lost (default 200).
        --lat-udp-checksum
                          send the probes with UDP checksums, as applications do (a veth
                          offloads them: CHECKSUM_PARTIAL), instead of checksum 0.

  Loss search (RFC 2544 throughput; see docs/performance.md):
        --find-rate       instead of the throughput runs: per datapath and run, a peak
                          trial (unpaced), then a binary search on the paced offered rate
                          for the highest one with at most --loss-max loss, then a
                          --duration trial at 90% of vdevd's peak (the first vdevd
                          datapath's, same run; vdevd datapaths are measured first).
                          Latency is off unless --latency is given.
        --loss-max PCT    loss allowed in a passing trial, in % (default 0.01).
        --trial S         seconds per trial (default 2).
        --resolution F    stop when the bounds are within F x the upper one (default 0.02).
        --max-trials N    trials per search at most (default 12).

    -v, --verbose         log every command and vdevd's output on stderr.
    -h, --help            this text.

OUTPUT
    Per datapath (medians over the runs; latency: medians over the runs of each run's
    percentiles, the pause samples of all runs pooled): forwarded Mpps (sink count / window), offered
    Mpps (generator count / window), loss % (1 - forwarded/offered), CPU s/Mfr: CPU seconds
    the datapath spent per million forwarded frames (vdevd's threads plus the NAPI work of
    the two ports, from scheduler run times and NAPI polls timed in softirq by tracepoints,
    in the CPU window that follows the measured one; the generator's and the sink's work
    excluded), and the gaps in the offered load. Per
    run: where the loss happened (ingress ring full = the DUT did not take frames in time;
    egress drops = the sink's queue overflowed), CPU split, and the check that the sink
    count is <= the generator count and equals the kernel's count. With --json every run
    with all raw figures, 10 ms rate statistics and vdevd's statistics.

EXIT STATUS
    0  every datapath measured, counts consistent, nothing left behind
    1  a setup or run failure, a count mismatch, leftovers, or interrupted
    2  usage error

EXAMPLES
    vdev-bench
    vdev-bench --scenario veth-tap --size 1518 --runs 5 --json > tap.json
    vdev-bench --datapath bridge,xdp-redirect --duration 2 --runs 1
    vdev-bench --sink xdp
    vdev-bench --scenario switch --frame-size 512
    vdev-bench --latency only --datapath vdevd,vdevd-spin,bridge
    vdev-bench --find-rate --runs 3

SEE ALSO
    docs/performance.md (method and results), docs/vdevd.md
)",
      f);
}

namespace {

bool parseDouble(const char* s, double lo, double hi, double* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || end == s || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parseInt(const char* s, long lo, long hi, long* out) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) return false;
  *out = v;
  return true;
}

enum LongOnly {
  kVdevd = 256,
  kVdevdArg,
  kGenCpu,
  kDpCpu,
  kSinkCpu,
  kNapi,
  kSinkPrio,
  kSinkNapi,
  kGenThreads,
  kRepeat,
  kBatch,
  kSportCount,
  kGapFraction,
  kTimeline,
  kSink,
  kNapiTiming,
  kCpuWindow,
  kBridgeNfCall,
  kRate,
  kPaceBatch,
  kTapWriters,
  kLatency,
  kLatSamples,
  kLatInterval,
  kLatPauseSamples,
  kLatPause,
  kLatPrio,
  kLatTimeout,
  kFindRate,
  kLossMax,
  kTrial,
  kResolution,
  kMaxTrials,
  kDpPrio,
  kLatUdpChecksum,
  kBoost,
};

// A rate with an optional k/M suffix: "1500000", "1.5M", "800k".
bool parseRate(const char* s, uint64_t* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return false;
  if (*end == 'k' || *end == 'K') {
    v *= 1e3;
    ++end;
  } else if (*end == 'M' || *end == 'm') {
    v *= 1e6;
    ++end;
  }
  if (*end || v > 100e6) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

bool parseOptions(int argc, char** argv, Options* o, int* exitCode) {
  for (int i = 0; i < argc; ++i) o->argv.emplace_back(argv[i]);
  static const option longOpts[] = {
      {"scenario", required_argument, nullptr, 's'},
      {"datapath", required_argument, nullptr, 'd'},
      {"duration", required_argument, nullptr, 't'},
      {"warmup", required_argument, nullptr, 'w'},
      {"runs", required_argument, nullptr, 'n'},
      {"size", required_argument, nullptr, 'b'},
      {"frame-size", required_argument, nullptr, 'b'},
      {"json", no_argument, nullptr, 'j'},
      {"verbose", no_argument, nullptr, 'v'},
      {"help", no_argument, nullptr, 'h'},
      {"vdevd", required_argument, nullptr, kVdevd},
      {"vdevd-arg", required_argument, nullptr, kVdevdArg},
      {"gen-cpu", required_argument, nullptr, kGenCpu},
      {"dp-cpu", required_argument, nullptr, kDpCpu},
      {"sink-cpu", required_argument, nullptr, kSinkCpu},
      {"napi", required_argument, nullptr, kNapi},
      {"sink-prio", required_argument, nullptr, kSinkPrio},
      {"sink-napi", required_argument, nullptr, kSinkNapi},
      {"gen-threads", required_argument, nullptr, kGenThreads},
      {"repeat", required_argument, nullptr, kRepeat},
      {"batch", required_argument, nullptr, kBatch},
      {"sport-count", required_argument, nullptr, kSportCount},
      {"gap-fraction", required_argument, nullptr, kGapFraction},
      {"timeline", no_argument, nullptr, kTimeline},
      {"sink", required_argument, nullptr, kSink},
      {"napi-timing", required_argument, nullptr, kNapiTiming},
      {"cpu-window", required_argument, nullptr, kCpuWindow},
      {"bridge-nf-call", required_argument, nullptr, kBridgeNfCall},
      {"rate", required_argument, nullptr, kRate},
      {"pace-batch", required_argument, nullptr, kPaceBatch},
      {"tap-writers", required_argument, nullptr, kTapWriters},
      {"latency", required_argument, nullptr, kLatency},
      {"lat-samples", required_argument, nullptr, kLatSamples},
      {"lat-interval-us", required_argument, nullptr, kLatInterval},
      {"lat-pause-samples", required_argument, nullptr, kLatPauseSamples},
      {"lat-pause-ms", required_argument, nullptr, kLatPause},
      {"lat-prio", required_argument, nullptr, kLatPrio},
      {"lat-timeout-ms", required_argument, nullptr, kLatTimeout},
      {"find-rate", no_argument, nullptr, kFindRate},
      {"loss-max", required_argument, nullptr, kLossMax},
      {"trial", required_argument, nullptr, kTrial},
      {"resolution", required_argument, nullptr, kResolution},
      {"max-trials", required_argument, nullptr, kMaxTrials},
      {"dp-prio", required_argument, nullptr, kDpPrio},
      {"lat-udp-checksum", no_argument, nullptr, kLatUdpChecksum},
      {"boost", required_argument, nullptr, kBoost},
      {nullptr, 0, nullptr, 0},
  };
  auto usage = [&](const std::string& msg) {
    fprintf(stderr, "vdev-bench: %s\nTry 'vdev-bench --help'.\n", msg.c_str());
    *exitCode = 2;
    return false;
  };
  int c;
  long l;
  double d;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":s:d:t:w:n:b:jvh", longOpts, nullptr)) != -1) {
    std::string arg = optarg ? optarg : "";
    switch (c) {
      case 's':
        if (!parseScenario(arg, &o->scenario))
          return usage("unknown scenario '" + arg + "' (veth-veth, veth-tap, tap-veth or switch)");
        break;
      case 'd': {
        o->datapaths.clear();
        o->datapathsGiven = true;
        std::stringstream ss(arg);
        std::string item;
        while (std::getline(ss, item, ',')) {
          if (item.empty()) continue;
          if (!isKnownDatapath(item))
            return usage("unknown datapath '" + item +
                           "' (vdevd, vdevd-switch, vdevd-spin, vdevd-fast, vdevd-rx-off, bridge, xdp-redirect)");
          o->datapaths.push_back(item);
        }
        if (o->datapaths.empty()) return usage("--datapath needs at least one datapath");
        break;
      }
      case 't':
        if (!parseDouble(optarg, 0.1, 3600, &d)) return usage("--duration: 0.1 .. 3600 seconds");
        o->duration = d;
        break;
      case 'w':
        if (!parseDouble(optarg, 0, 600, &d)) return usage("--warmup: 0 .. 600 seconds");
        o->warmup = d;
        break;
      case 'n':
        if (!parseInt(optarg, 1, 1000, &l)) return usage("--runs: 1 .. 1000");
        o->runs = static_cast<int>(l);
        break;
      case 'b':
        if (!parseInt(optarg, kMinFrameSize, kMaxFrameSize, &l))
          return usage("--size: " + std::to_string(kMinFrameSize) + " .. " + std::to_string(kMaxFrameSize) +
                       " (frame size with FCS)");
        o->frameSize = static_cast<size_t>(l);
        break;
      case 'j': o->json = true; break;
      case 'v': o->verbose = true; break;
      case 'h':
        printUsage(stdout);
        *exitCode = 0;
        return false;
      case kVdevd: o->vdevdPath = arg; break;
      case kVdevdArg: o->vdevdArgs.push_back(arg); break;
      case kGenCpu:
        if (!parseInt(optarg, 0, 4095, &l)) return usage("--gen-cpu: a CPU number");
        o->genCpu = static_cast<int>(l);
        break;
      case kDpCpu:
        if (!parseInt(optarg, 0, 4095, &l)) return usage("--dp-cpu: a CPU number");
        o->dutCpu = static_cast<int>(l);
        break;
      case kSinkCpu:
        if (!parseInt(optarg, 0, 4095, &l)) return usage("--sink-cpu: a CPU number");
        o->sinkCpu = static_cast<int>(l);
        break;
      case kNapi:
        if (arg == "threaded") o->napiThreaded = true;
        else if (arg == "softirq") o->napiThreaded = false;
        else return usage("--napi: threaded or softirq");
        break;
      case kSinkNapi:
        if (arg == "threaded") o->sinkNapiThreaded = 1;
        else if (arg == "softirq") o->sinkNapiThreaded = 0;
        else return usage("--sink-napi: threaded or softirq");
        break;
      case kSinkPrio:
        if (!parseInt(optarg, 0, 99, &l)) return usage("--sink-prio: 0 .. 99");
        o->sinkPrio = static_cast<int>(l);
        break;
      case kGenThreads:
        if (!parseInt(optarg, 1, 16, &l)) return usage("--gen-threads: 1 .. 16");
        o->genThreads = static_cast<int>(l);
        break;
      case kRepeat:
        if (!parseInt(optarg, 1000, 1'000'000'000, &l)) return usage("--repeat: 1000 .. 1000000000");
        o->repeat = static_cast<uint32_t>(l);
        break;
      case kBatch:
        if (!parseInt(optarg, 1, 256, &l)) return usage("--batch: 1 .. 256");
        o->batch = static_cast<uint32_t>(l);
        break;
      case kSportCount:
        if (!parseInt(optarg, 0, 65535, &l)) return usage("--sport-count: 0 .. 65535");
        o->sportCount = static_cast<uint32_t>(l);
        break;
      case kGapFraction:
        if (!parseDouble(optarg, 0, 1, &d)) return usage("--gap-fraction: 0 .. 1");
        o->gapFraction = d;
        break;
      case kTimeline: o->timeline = true; break;
      case kNapiTiming:
        if (arg == "split") o->napiTiming = NapiTiming::kSplit;
        else if (arg == "on") o->napiTiming = NapiTiming::kOn;
        else if (arg == "off") o->napiTiming = NapiTiming::kOff;
        else return usage("--napi-timing: split, on or off");
        break;
      case kBridgeNfCall:
        if (arg == "on") o->bridgeNfCall = 1;
        else if (arg == "off") o->bridgeNfCall = 0;
        else return usage("--bridge-nf-call: on or off");
        break;
      case kCpuWindow:
        if (!parseDouble(optarg, 0.2, 600, &d)) return usage("--cpu-window: 0.2 .. 600 seconds");
        o->cpuWindow = d;
        break;
      case kRate:
        if (!parseRate(optarg, &o->ratePps)) return usage("--rate: frames per second, e.g. 1500000 or 1.5M");
        break;
      case kPaceBatch:
        if (!parseInt(optarg, 1, 256, &l)) return usage("--pace-batch: 1 .. 256");
        o->paceBatch = static_cast<uint32_t>(l);
        break;
      case kTapWriters:
        if (!parseInt(optarg, 1, 16, &l)) return usage("--tap-writers: 1 .. 16");
        o->tapWriters = static_cast<int>(l);
        break;
      case kLatency:
        if (arg == "on") o->latency = LatencyMode::kOn;
        else if (arg == "off") o->latency = LatencyMode::kOff;
        else if (arg == "only") o->latency = LatencyMode::kOnly;
        else return usage("--latency: on, off or only");
        o->latencyGiven = true;
        break;
      case kLatSamples:
        if (!parseInt(optarg, 1, 1'000'000, &l)) return usage("--lat-samples: 1 .. 1000000");
        o->latSamples = static_cast<int>(l);
        break;
      case kLatInterval:
        if (!parseInt(optarg, 0, 10'000'000, &l)) return usage("--lat-interval-us: 0 .. 10000000");
        o->latIntervalS = l * 1e-6;
        break;
      case kLatPauseSamples:
        if (!parseInt(optarg, 0, 100'000, &l)) return usage("--lat-pause-samples: 0 .. 100000");
        o->latPauseSamples = static_cast<int>(l);
        break;
      case kLatPause:
        if (!parseInt(optarg, 1, 600'000, &l)) return usage("--lat-pause-ms: 1 .. 600000");
        o->latPauseS = l * 1e-3;
        break;
      case kLatPrio:
        if (!parseInt(optarg, 0, 99, &l)) return usage("--lat-prio: 0 .. 99");
        o->latPrio = static_cast<int>(l);
        break;
      case kLatTimeout:
        if (!parseInt(optarg, 1, 60'000, &l)) return usage("--lat-timeout-ms: 1 .. 60000");
        o->latTimeoutS = l * 1e-3;
        break;
      case kFindRate: o->findRate = true; break;
      case kLatUdpChecksum: o->latUdpChecksum = true; break;
      case kBoost:
        if (arg == "on") o->boost = 1;
        else if (arg == "off") o->boost = 0;
        else if (arg == "auto") o->boost = -1;
        else return usage("--boost: on, off or auto");
        break;
      case kDpPrio:
        if (!parseInt(optarg, 0, 99, &l)) return usage("--dp-prio: 0 .. 99");
        o->dpPrio = static_cast<int>(l);
        break;
      case kLossMax:
        if (!parseDouble(optarg, 0, 100, &d)) return usage("--loss-max: 0 .. 100 (%)");
        o->lossMaxPct = d;
        break;
      case kTrial:
        if (!parseDouble(optarg, 0.1, 600, &d)) return usage("--trial: 0.1 .. 600 seconds");
        o->trialS = d;
        break;
      case kResolution:
        if (!parseDouble(optarg, 0.001, 0.5, &d)) return usage("--resolution: 0.001 .. 0.5");
        o->resolution = d;
        break;
      case kMaxTrials:
        if (!parseInt(optarg, 1, 100, &l)) return usage("--max-trials: 1 .. 100");
        o->maxTrials = static_cast<int>(l);
        break;
      case kSink:
        if (arg == "tc") o->sinkMode = SinkMode::kTc;
        else if (arg == "xdp") o->sinkMode = SinkMode::kXdp;
        else return usage("--sink: tc or xdp");
        break;
      case ':': return usage(std::string("option '") + argv[optind - 1] + "' needs a value");
      default: return usage(std::string("unknown option '") + argv[optind - 1] + "'");
    }
  }
  if (optind < argc) return usage(std::string("unexpected argument '") + argv[optind] + "'");
  if (!o->datapathsGiven && o->scenario == Scenario::kSwitch) o->datapaths = {"vdevd-switch", "vdevd-fast", "bridge"};
  for (const auto& d : o->datapaths) {
    std::string why = datapathFitsScenario(d, o->scenario);
    if (!why.empty()) return usage(d + " in scenario " + scenarioName(o->scenario) + ": " + why);
  }
  if (o->findRate && !o->latencyGiven) o->latency = LatencyMode::kOff;
  if (o->findRate && o->latency == LatencyMode::kOnly) return usage("--find-rate and --latency only exclude each other");
  if (o->findRate && o->ratePps) return usage("--find-rate sets the rate itself; drop --rate");
  if (o->napiThreaded && o->scenario == Scenario::kTapVeth)
    return usage("--napi threaded: the ingress port of tap-veth is a tap (no NAPI; the VM's write() does the work)");
  if (o->scenario != Scenario::kVethTap && o->sinkMode == SinkMode::kTc && o->sinkNapiThreaded == 1)
    return usage("--sink-napi threaded needs --sink xdp (with the tc sink, skbs reach the sink veth through "
                 "the per-CPU backlog of the transmitting CPU, not through its NAPI)");
  return true;
}

}  // namespace vdev::bench
