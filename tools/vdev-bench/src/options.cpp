// options.cpp - see options.h.
#include "options.h"

#include <sstream>
#include <string_view>

#include "base/cli.h"
#include "base/parse.h"
#include "datapath.h"
#include "frame.h"
#include "real.h"
#include "two_host.h"

namespace vdev::bench {

namespace cli = vdev::cli;
using cli::Arg;

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

namespace {

constexpr const char kHelp[] = R"(NAME
    vdev-bench - forwarding benchmark: vdevd against the Linux bridge and kernel XDP redirect

SYNOPSIS
    vdev-bench [--scenario veth-veth|veth-tap|tap-veth|switch] [--datapath LIST]
               [--duration S] [--runs N] [--frame-size B] [--latency on|off|only]
               [--find-rate] [--rate PPS] [--idle-ports N] [--json] [--vdevd PATH] [OPTIONS]
    vdev-bench --real [--runs N] [--duration S] [--mtu LIST] [--datapath LIST]
               [--vdevd PATH] [--vdev-vm PATH] [--idle-ports N [--idle-cpu S]] [--json]
    vdev-bench --two-host [--uplink vxlan|veth|both] [--runs N] [--duration S]
               [--datapath LIST] [--vdevd PATH] [--vdevctl PATH] [--json]

DESCRIPTION
    Builds a private topology of network namespaces (P = vb<pid>, removed at exit, also
    on error and SIGINT/SIGTERM) and measures each datapath in LIST between the SAME
    ports, one after the other, runs interleaved. docs/performance.md, "Method", says
    how each topology, datapath, generator, sink and count works.

    Without --real or --two-host: an XDP program sent through BPF_PROG_RUN live frames
    (or a relay where the kernel refuses them) offers identical 198.18.0.1 -> 198.18.1.1
    UDP frames to port Pa; a tc-ingress counter on the sink veth (or a thread reading a
    tap, the VM) counts exactly what arrives; then UDP round trips are probed.
    Scenarios: veth-veth; veth-tap (Pb a tap); tap-veth (the VM write()s into tap Pa);
    switch (veth-veth plus a VM tap Pc on one learning switch). Datapaths:
      vdevd          vdevd --mode xconnect (its own AF_XDP path)
      vdevd-switch   vdevd --mode switch --no-fast-path
      vdevd-spin     vdevd with --idle-spin-us 1000000 (never sleeps under load)
      vdevd-fast     vdevd --mode switch --fast-path (its default mode)
      vdevd-rx-off   vdevd-fast with --no-fast-rx on the ingress port
      bridge         a Linux bridge (STP off)
      xdp-redirect   XDP devmap redirect A <-> B (the upper bound; two ports only)
      dpdk-af-xdp    dpdk-testpmd, DPDK's AF_XDP PMD (two ports only; needs dpdk-testpmd)
      ovs-af-xdp     Open vSwitch's userspace datapath, afxdp ports (two ports only)
    Needs root (CAP_NET_ADMIN, CAP_BPF, CAP_SYS_ADMIN).

OPTIONS
    -s, --scenario NAME   veth-veth (default), veth-tap, tap-veth or switch.
    -d, --datapath LIST   comma-separated datapaths, in order (default: vdevd,vdevd-switch,
                          vdevd-fast,bridge,xdp-redirect,dpdk-af-xdp,ovs-af-xdp; switch and
                          --idle-ports: vdevd-switch,vdevd-fast,bridge). With the default
                          list a missing vdevd, DPDK or Open vSwitch is skipped with a note.
    -t, --duration S      measured seconds per run (default 5).
    -w, --warmup S        seconds of traffic before each measurement (default 1).
    -n, --runs N          runs per datapath (default 3); tables show medians.
    -b, --size, --frame-size B
                          frame size on the wire with the FCS, 64 (default) .. 1518.
    -j, --json            one JSON document on stdout instead of the tables.
        --sink tc         the veth-veth sink: a counter at tc ingress (the only one).
        --vdevd PATH      the vdevd binary (default: next to vdev-bench in the build
                          tree, then PATH).
        --vdevd-arg ARG   pass ARG to vdevd (repeatable), e.g. --vdevd-arg=--busy-poll=50.
        --gen-cpu N       CPU of the generator threads (default 0).
        --dp-cpu N        CPU of the datapath (and with --napi threaded of the ingress
                          port's NAPI kthread) (default 1).
        --dp-prio N       vdevd at SCHED_FIFO priority N (default 0: SCHED_OTHER).
        --sink-cpu N      CPU of the tap reader (default: the generator CPU).
        --sink-prio N     its SCHED_FIFO priority, 0 for normal (default 50).
        --boost on|off|auto
                          vdev-bench's session at autogroup nice -20 (default auto: while
                          paced).
        --napi MODE       softirq (default) or threaded: the ingress port's NAPI in a
                          kthread pinned to the datapath CPU.
        --gen-threads N   generator threads (default 2).
        --repeat N        frames per BPF_PROG_RUN call (default 2000000).
        --batch N         frames per kernel batch inside a call, 1..256 (default 64).
        --sport-count N   vary the UDP source port over N values (default off).
        --relay-copies N  XDP frames the relay makes of each frame written, 1..64
                          (default 64).
        --gap-fraction F  a 10 ms interval below F x the median rate is a gap (default 0.1).
        --napi-timing split|on|off
                          when the NAPI polls in softirq are timed: in a CPU window after
                          the measured one (split, default), during it, or never.
        --cpu-window S    that CPU window's length (default 2).
        --bridge-nf-call on|off
                          net.bridge.bridge-nf-call-* in the DUT namespace (default: as
                          the kernel has them).
        --rate PPS        offer PPS frames per second (k, M suffixes) instead of the most.
        --pace-batch N    frames per burst while paced, 1..256 (default 16).
        --tap-writers N   the VM's writer threads in tap-veth (default 1).

  Latency (round trip, UDP request/response):
        --latency MODE    on (default), off, or only (no throughput runs).
        --lat-samples N   probes per pair and run (default 1000) ...
        --lat-interval-us U
                          ... one every U microseconds (default 1000).
        --lat-pause-samples N
                          probes after a pause (default 20) ...
        --lat-pause-ms M  ... of M ms without traffic (default 200).
        --lat-prio N      SCHED_FIFO priority of requester and responder (default 50).
        --lat-timeout-ms M
                          a probe without an answer after M ms is lost (default 200).
        --lat-udp-checksum
                          probes with UDP checksums (offloaded) instead of checksum 0.

  Loss search (RFC 2544 throughput):
        --find-rate       per datapath and run: a peak trial, a binary search for the
                          highest paced rate with at most --loss-max loss, and a trial at
                          90% of vdevd's peak. Latency off unless --latency is given.
        --loss-max PCT    loss allowed in a passing trial, in % (default 0.01).
        --trial S         seconds per trial (default 2).
        --resolution F    stop when the bounds are within F x the upper one (default 0.02).
        --max-trials N    trials per search at most (default 12).

  Real senders (docs/performance.md, "Real senders"):
        --real            what the kernel stacks of two containers (A, B: veths) and a VM
                          (vdev-vm's guest on tap Pt) send: iperf3 TCP (tcp-a-b, tcp-b-a,
                          tcp-vm-a, tcp-a-vm), a socket UDP flood (udp-a-b) and UDP round
                          trips (rtt-a-b, rtt-a-vm), each datapath on a fresh topology.
                          Datapaths: bridge, tc-redirect, vdevd, vdevd-own (default, in
                          order; turned by one each run) and bridge-wire (when named).
                          Needs iperf3 and ping.
        --mtu LIST        MTUs of the containers' veths, 576 .. 9000 (default 1500,9000).
        --only LIST       the scenarios to run (default: all but the QEMU guest's), e.g.
                          rtt-a-b,rtt-a-vm. tcp-qemu-a and tcp-a-qemu (MTU 1500, only when
                          named here): TCP between container A and a real guest, QEMU
                          with virtio-net on tap Pq (QEMU's default vnet_hdr: the guest's
                          offloads on; vhost=on where /dev/vhost-net is), booting
                          scripts/vm-guest-image.sh's kernel and initramfs once per
                          invocation; every datapath attaches that tap in turn. Skipped
                          with a note without QEMU or the image's packages.
        --qemu-accel A    the QEMU guest's accelerator: tcg (default: -accel
                          tcg,thread=multi -cpu max) or kvm (-cpu host). Under TCG only the
                          ratio to the bridge counts: the guest's CPU is emulated.
        --guest-image DIR the guest image (vmlinuz, initrd.img; default: the build tree's
                          tests/qemu/guest, built there by scripts/vm-guest-image.sh).
        --vdev-vm PATH    the vdev-vm binary (default: next to vdev-bench in the build
                          tree, then PATH); without one the VM scenarios are skipped.
        --idle-ports N    every datapath also with N more idle containers attached
                          (tcp-a-b and udp-a-b, MTU 1500, default bridge,vdevd). Without
                          --real: N more idle veth ports on the device under test.
        --idle-cpu S      with --idle-ports: vdevd's CPU over S idle seconds (default 10).

  Two hosts (docs/performance.md, "Two hosts"):
        --two-host        two hosts with a container each, joined by an uplink; bridge,
                          vdevd and tc-redirect on both; iperf3 TCP both ways and a UDP
                          flood. Needs iperf3 and ping.
        --uplink U        vxlan, veth or both (default: both, vxlan first).
        --vdevctl PATH    the vdevctl binary (default: next to vdev-bench, then PATH).

    -v, --verbose         log every command and vdevd's output on stderr.
    -V, --version         print vdev-bench's version.
    -h, --help            this text.

OUTPUT
    A table per measure (medians over the runs, ratios to the bridge, CPU per unit, noisy
    runs) and per-run lines; --json: every run with its raw figures and the datapaths'
    statistics. docs/performance.md explains every column.

EXIT STATUS
    0  every datapath measured, counts consistent, nothing left behind
    1  a setup or run failure, a count mismatch, leftovers, or interrupted
    2  usage error

EXAMPLES
    vdev-bench
    vdev-bench --scenario veth-tap --size 1518 --runs 5 --json > tap.json
    vdev-bench --datapath bridge,xdp-redirect --duration 2 --runs 1
    vdev-bench --scenario switch --frame-size 512
    vdev-bench --latency only --datapath vdevd,vdevd-spin,bridge
    vdev-bench --find-rate --runs 3
    vdev-bench --real
    vdev-bench --real --mtu 1500 --datapath bridge,vdevd --runs 5 --json > real.json
    vdev-bench --real --idle-ports 248
    vdev-bench --two-host
    vdev-bench --two-host --uplink vxlan --datapath bridge,vdevd --runs 5 --json > two-host.json

SEE ALSO
    docs/performance.md (method and results), docs/vdevd.md, docs/multi-host.md
)";

// A rate with an optional k/M suffix: "1500000", "1.5M", "800k".
std::optional<uint64_t> parseRate(std::string_view s) {
  double unit = 1;
  if (!s.empty() && (s.back() == 'k' || s.back() == 'K')) unit = 1e3;
  if (!s.empty() && (s.back() == 'M' || s.back() == 'm')) unit = 1e6;
  if (unit != 1) s.remove_suffix(1);
  const auto v = parseDouble(s, 0, 100e6 / unit);
  if (!v) return std::nullopt;
  return static_cast<uint64_t>(*v * unit);
}

// v split at its commas, empty items kept: --datapath, --mtu, --only.
std::vector<std::string> commaList(std::string_view v) {
  std::vector<std::string> items;
  std::stringstream ss{std::string(v)};
  std::string item;
  while (std::getline(ss, item, ',')) items.push_back(item);
  return items;
}

}  // namespace

std::optional<int> parseOptions(int argc, char** argv, Options* o) {
  for (int i = 0; i < argc; ++i) o->argv.emplace_back(argv[i]);
  // Each value's range, in the form every message of this tool has.
  const auto integer = [](std::string_view v, uint32_t lo, uint32_t hi, const std::string& message) {
    return cli::u32(v, lo, hi, message);
  };
  const auto seconds = [](std::string_view v, double lo, double hi, const std::string& message) {
    return cli::number(v, lo, hi, message);
  };
  const auto cpu = [](std::string_view v, const char* what) {
    return int(cli::u32(v, 0, 4095, std::string(what) + ": a CPU number"));
  };
  const auto onOff = [](std::string_view v, const char* message) {
    if (v == "on") return 1;
    if (v == "off") return 0;
    cli::fail(message);
  };
  const auto napi = [](std::string_view v, const char* message) {
    if (v == "threaded") return true;
    if (v == "softirq") return false;
    cli::fail(message);
  };
  const auto frameSize = [&](std::string_view v) {
    o->frameSize = integer(v, kMinFrameSize, kMaxFrameSize,
                           "--size: " + std::to_string(kMinFrameSize) + " .. " + std::to_string(kMaxFrameSize) +
                               " (frame size with FCS)");
  };
  const cli::Parser parser({"vdev-bench", kHelp}, {
      {"scenario", 's', Arg::kRequired, [&](std::string_view v) {
         if (!parseScenario(std::string(v), &o->scenario))
           cli::fail("unknown scenario '" + std::string(v) + "' (veth-veth, veth-tap, tap-veth or switch)");
       }},
      {"datapath", 'd', Arg::kRequired, [&](std::string_view v) {
         o->datapaths.clear();
         o->datapathsGiven = true;
         for (const std::string& item : commaList(v)) {
           if (item.empty()) continue;
           if (!isKnownDatapath(item) && !isRealDatapath(item) && !isTwoHostDatapath(item))
             cli::fail("unknown datapath '" + item +
                       "' (vdevd, vdevd-switch, vdevd-spin, vdevd-fast, vdevd-rx-off, bridge, xdp-redirect, dpdk-af-xdp, ovs-af-xdp; "
                       "--real: " + realDatapathNames() + "; --two-host: bridge, vdevd, tc-redirect)");
           o->datapaths.push_back(item);
         }
         if (o->datapaths.empty()) cli::fail("--datapath needs at least one datapath");
       }},
      {"duration", 't', Arg::kRequired,
       [&](std::string_view v) { o->duration = seconds(v, 0.1, 3600, "--duration: 0.1 .. 3600 seconds"); }},
      {"warmup", 'w', Arg::kRequired,
       [&](std::string_view v) { o->warmup = seconds(v, 0, 600, "--warmup: 0 .. 600 seconds"); }},
      {"runs", 'n', Arg::kRequired, [&](std::string_view v) { o->runs = int(integer(v, 1, 1000, "--runs: 1 .. 1000")); }},
      {"size", 'b', Arg::kRequired, frameSize},
      {"frame-size", 0, Arg::kRequired, frameSize},
      {"json", 'j', Arg::kNone, [&](std::string_view) { o->json = true; }},
      {"verbose", 'v', Arg::kNone, [&](std::string_view) { o->verbose = true; }},
      {"vdevd", 0, Arg::kRequired, [&](std::string_view v) { o->vdevdPath = v; }},
      {"vdevd-arg", 0, Arg::kRequired, [&](std::string_view v) { o->vdevdArgs.emplace_back(v); }},
      {"gen-cpu", 0, Arg::kRequired, [&](std::string_view v) { o->genCpu = cpu(v, "--gen-cpu"); }},
      {"dp-cpu", 0, Arg::kRequired, [&](std::string_view v) { o->dutCpu = cpu(v, "--dp-cpu"); }},
      {"sink-cpu", 0, Arg::kRequired, [&](std::string_view v) { o->sinkCpu = cpu(v, "--sink-cpu"); }},
      {"napi", 0, Arg::kRequired,
       [&](std::string_view v) { o->napiThreaded = napi(v, "--napi: threaded or softirq"); }},
      {"sink-prio", 0, Arg::kRequired,
       [&](std::string_view v) { o->sinkPrio = int(integer(v, 0, 99, "--sink-prio: 0 .. 99")); }},
      {"gen-threads", 0, Arg::kRequired,
       [&](std::string_view v) { o->genThreads = int(integer(v, 1, 16, "--gen-threads: 1 .. 16")); }},
      {"repeat", 0, Arg::kRequired, [&](std::string_view v) {
         o->repeat = integer(v, 1000, 1'000'000'000, "--repeat: 1000 .. 1000000000");
       }},
      {"batch", 0, Arg::kRequired, [&](std::string_view v) { o->batch = integer(v, 1, 256, "--batch: 1 .. 256"); }},
      {"sport-count", 0, Arg::kRequired,
       [&](std::string_view v) { o->sportCount = integer(v, 0, 65535, "--sport-count: 0 .. 65535"); }},
      {"relay-copies", 0, Arg::kRequired,
       [&](std::string_view v) { o->relayCopies = integer(v, 1, 64, "--relay-copies: 1 .. 64"); }},
      {"gap-fraction", 0, Arg::kRequired,
       [&](std::string_view v) { o->gapFraction = seconds(v, 0, 1, "--gap-fraction: 0 .. 1"); }},
      // The tc sink is the only one; "--sink tc" stays accepted, as
      // scripts/bench-datapath.sh passes it.
      {"sink", 0, Arg::kRequired, [&](std::string_view v) {
         if (v != "tc") cli::fail("--sink: tc (the only sink; --sink xdp was dropped)");
       }},
      {"napi-timing", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "split") o->napiTiming = NapiTiming::kSplit;
         else if (v == "on") o->napiTiming = NapiTiming::kOn;
         else if (v == "off") o->napiTiming = NapiTiming::kOff;
         else cli::fail("--napi-timing: split, on or off");
       }},
      {"cpu-window", 0, Arg::kRequired,
       [&](std::string_view v) { o->cpuWindow = seconds(v, 0.2, 600, "--cpu-window: 0.2 .. 600 seconds"); }},
      {"bridge-nf-call", 0, Arg::kRequired,
       [&](std::string_view v) { o->bridgeNfCall = onOff(v, "--bridge-nf-call: on or off"); }},
      {"rate", 0, Arg::kRequired, [&](std::string_view v) {
         const auto r = parseRate(v);
         if (!r) cli::fail("--rate: frames per second, e.g. 1500000 or 1.5M");
         o->ratePps = *r;
       }},
      {"pace-batch", 0, Arg::kRequired,
       [&](std::string_view v) { o->paceBatch = integer(v, 1, 256, "--pace-batch: 1 .. 256"); }},
      {"tap-writers", 0, Arg::kRequired,
       [&](std::string_view v) { o->tapWriters = int(integer(v, 1, 16, "--tap-writers: 1 .. 16")); }},
      {"latency", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "on") o->latency = LatencyMode::kOn;
         else if (v == "off") o->latency = LatencyMode::kOff;
         else if (v == "only") o->latency = LatencyMode::kOnly;
         else cli::fail("--latency: on, off or only");
         o->latencyGiven = true;
       }},
      {"lat-samples", 0, Arg::kRequired, [&](std::string_view v) {
         o->latSamples = int(integer(v, 1, 1'000'000, "--lat-samples: 1 .. 1000000"));
       }},
      {"lat-interval-us", 0, Arg::kRequired, [&](std::string_view v) {
         o->latIntervalS = integer(v, 0, 10'000'000, "--lat-interval-us: 0 .. 10000000") * 1e-6;
       }},
      {"lat-pause-samples", 0, Arg::kRequired, [&](std::string_view v) {
         o->latPauseSamples = int(integer(v, 0, 100'000, "--lat-pause-samples: 0 .. 100000"));
       }},
      {"lat-pause-ms", 0, Arg::kRequired, [&](std::string_view v) {
         o->latPauseS = integer(v, 1, 600'000, "--lat-pause-ms: 1 .. 600000") * 1e-3;
       }},
      {"lat-prio", 0, Arg::kRequired,
       [&](std::string_view v) { o->latPrio = int(integer(v, 0, 99, "--lat-prio: 0 .. 99")); }},
      {"lat-timeout-ms", 0, Arg::kRequired, [&](std::string_view v) {
         o->latTimeoutS = integer(v, 1, 60'000, "--lat-timeout-ms: 1 .. 60000") * 1e-3;
       }},
      {"find-rate", 0, Arg::kNone, [&](std::string_view) { o->findRate = true; }},
      {"loss-max", 0, Arg::kRequired,
       [&](std::string_view v) { o->lossMaxPct = seconds(v, 0, 100, "--loss-max: 0 .. 100 (%)"); }},
      {"trial", 0, Arg::kRequired,
       [&](std::string_view v) { o->trialS = seconds(v, 0.1, 600, "--trial: 0.1 .. 600 seconds"); }},
      {"resolution", 0, Arg::kRequired,
       [&](std::string_view v) { o->resolution = seconds(v, 0.001, 0.5, "--resolution: 0.001 .. 0.5"); }},
      {"max-trials", 0, Arg::kRequired,
       [&](std::string_view v) { o->maxTrials = int(integer(v, 1, 100, "--max-trials: 1 .. 100")); }},
      {"dp-prio", 0, Arg::kRequired,
       [&](std::string_view v) { o->dpPrio = int(integer(v, 0, 99, "--dp-prio: 0 .. 99")); }},
      {"lat-udp-checksum", 0, Arg::kNone, [&](std::string_view) { o->latUdpChecksum = true; }},
      {"real", 0, Arg::kNone, [&](std::string_view) { o->real = true; }},
      {"mtu", 0, Arg::kRequired, [&](std::string_view v) {
         o->mtus.clear();
         o->mtusGiven = true;
         for (const std::string& item : commaList(v))
           o->mtus.push_back(integer(item, 576, 9000, "--mtu: a comma-separated list of MTUs, 576 .. 9000"));
         if (o->mtus.empty()) cli::fail("--mtu needs at least one MTU");
       }},
      {"vdev-vm", 0, Arg::kRequired, [&](std::string_view v) { o->vdevVmPath = v; }},
      {"qemu-accel", 0, Arg::kRequired, [&](std::string_view v) {
         if (v != "tcg" && v != "kvm") cli::fail("--qemu-accel: tcg or kvm");
         o->qemuAccel = v;
         o->qemuGiven = true;
       }},
      {"guest-image", 0, Arg::kRequired, [&](std::string_view v) {
         o->guestImageDir = v;
         o->qemuGiven = true;
       }},
      {"only", 0, Arg::kRequired, [&](std::string_view v) {
         o->realScenarios.clear();
         for (const std::string& item : commaList(v)) {
           if (!isRealScenario(item))
             cli::fail("--only: unknown scenario '" + item + "' (" + realScenarioNames() + ")");
           o->realScenarios.push_back(item);
         }
         if (o->realScenarios.empty()) cli::fail("--only needs at least one scenario");
       }},
      {"idle-ports", 0, Arg::kRequired,
       [&](std::string_view v) { o->idlePorts = uint32_t(integer(v, 1, 1000, "--idle-ports: 1 .. 1000")); }},
      {"idle-cpu", 0, Arg::kRequired, [&](std::string_view v) {
         o->idleCpuS = seconds(v, 0, 600, "--idle-cpu: 0 .. 600 seconds");
         o->idleCpuGiven = true;
       }},
      {"two-host", 0, Arg::kNone, [&](std::string_view) { o->twoHost = true; }},
      {"uplink", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "both") o->uplinks = {"vxlan", "veth"};
         else if (v == "vxlan" || v == "veth") o->uplinks = {std::string(v)};
         else cli::fail("--uplink: vxlan, veth or both");
         o->uplinksGiven = true;
       }},
      {"vdevctl", 0, Arg::kRequired, [&](std::string_view v) { o->vdevctlPath = v; }},
      {"boost", 0, Arg::kRequired, [&](std::string_view v) {
         if (v == "on") o->boost = 1;
         else if (v == "off") o->boost = 0;
         else if (v == "auto") o->boost = -1;
         else cli::fail("--boost: on, off or auto");
       }},
  });
  // Checks that need every option.
  const auto check = [&](const std::vector<std::string>&) {
    const bool realOnly = o->mtusGiven || !o->vdevVmPath.empty() || o->idleCpuGiven || !o->realScenarios.empty() ||
                          o->qemuGiven;
    if (o->twoHost) {
      if (o->real) cli::fail("--two-host and --real exclude each other");
      if (realOnly || o->idlePorts)
        cli::fail("--mtu, --only, --vdev-vm, --qemu-accel, --guest-image, --idle-ports and --idle-cpu go with --real");
      if (!o->datapathsGiven) o->datapaths = twoHostDatapaths();
      for (const auto& d : o->datapaths)
        if (!isTwoHostDatapath(d)) cli::fail(d + " is not a datapath of --two-host (bridge, vdevd, tc-redirect)");
      return;
    }
    if (o->uplinksGiven || !o->vdevctlPath.empty()) cli::fail("--uplink and --vdevctl go with --two-host");
    if (o->real) {
      if (!o->datapathsGiven) o->datapaths = o->idlePorts ? std::vector<std::string>{"bridge", "vdevd"} : realDatapaths();
      if (o->idlePorts && !o->mtusGiven) o->mtus = {1500};
      if (o->idlePorts && !o->vdevVmPath.empty()) cli::fail("--idle-ports measures containers only: drop --vdev-vm");
      if (o->idleCpuGiven && !o->idlePorts) cli::fail("--idle-cpu goes with --idle-ports");
      if (o->idlePorts && o->qemuGiven)
        cli::fail("--idle-ports measures containers only: drop --qemu-accel, --guest-image");
      for (const auto& d : o->datapaths)
        if (!isRealDatapath(d))
          cli::fail(d + " is not a datapath of --real (" + realDatapathNames() + ")");
      return;
    }
    if (realOnly) cli::fail("--mtu, --only, --vdev-vm, --qemu-accel, --guest-image and --idle-cpu go with --real");
    for (const auto& d : o->datapaths)
      if (!isKnownDatapath(d)) cli::fail(d + " is a datapath of --real only");
    if (!o->datapathsGiven && (o->scenario == Scenario::kSwitch || o->idlePorts))
      o->datapaths = {"vdevd-switch", "vdevd-fast", "bridge"};
    for (const auto& d : o->datapaths) {
      std::string why = datapathFitsScenario(d, o->idlePorts ? Scenario::kSwitch : o->scenario);
      if (!why.empty())
        cli::fail(d + (o->idlePorts ? std::string(" with --idle-ports") : " in scenario " + std::string(scenarioName(o->scenario))) +
                  ": " + why);
    }
    if (o->findRate && !o->latencyGiven) o->latency = LatencyMode::kOff;
    if (o->findRate && o->latency == LatencyMode::kOnly) cli::fail("--find-rate and --latency only exclude each other");
    if (o->findRate && o->ratePps) cli::fail("--find-rate sets the rate itself; drop --rate");
    if (o->napiThreaded && o->scenario == Scenario::kTapVeth)
      cli::fail("--napi threaded: the ingress port of tap-veth is a tap (no NAPI; the VM's write() does the work)");
  };
  return parser.parse(argc, argv, check).exit;
}

}  // namespace vdev::bench
