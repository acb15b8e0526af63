// options.h - vdev-bench's command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "result.h"
#include "topology.h"

namespace vdev::bench {

// When the softirq NAPI polls are timed (napi_time.bpf.c, --napi-timing).
enum class NapiTiming {
  kSplit,  // not during the rate window; during a CPU window after it (default)
  kOn,     // during the rate window (which it slows down)
  kOff,    // never: coarse CPU figures
};
const char* napiTimingName(NapiTiming t);

// Whether round-trip latency is measured (--latency).
enum class LatencyMode {
  kOn,    // after each throughput run (default)
  kOff,
  kOnly,  // latency only, no throughput
};
const char* latencyModeName(LatencyMode m);

struct Options {
  Scenario scenario = Scenario::kVethVeth;
  // switch: vdevd-switch, vdevd-fast, bridge
  // The own path (xconnect, switch) always beside the fast path and the
  // kernel's paths: a table without it hid a fall below the bridge.
  std::vector<std::string> datapaths{"vdevd", "vdevd-switch", "vdevd-fast", "bridge", "xdp-redirect",
                                     "dpdk-af-xdp", "ovs-af-xdp"};
  bool datapathsGiven = false;  // default list: a missing vdevd, DPDK or OVS is skipped, not an error
  double duration = 5.0;        // measured seconds per run
  double warmup = 1.0;          // seconds of traffic before measuring
  int runs = 3;
  size_t frameSize = 64;        // RFC 2544 frame size, with FCS
  bool json = false;
  std::string vdevdPath;        // empty: look next to vdev-bench, then PATH
  std::vector<std::string> vdevdArgs;
  int genCpu = 0;
  int dutCpu = 1;
  int dpPrio = 0;               // --dp-prio: vdevd at SCHED_FIFO this priority, 0 = normal
  int sinkCpu = -1;             // -1: same as genCpu
  int sinkPrio = 50;            // SCHED_FIFO priority of the sink's receive work, 0 = normal
  bool napiThreaded = false;    // --napi softirq (default) or threaded
  int genThreads = 2;
  uint32_t repeat = 2'000'000;
  uint32_t batch = 64;
  uint32_t sportCount = 0;
  double gapFraction = 0.1;     // a 10 ms interval below this x median is a gap
  NapiTiming napiTiming = NapiTiming::kSplit;
  double cpuWindow = 2.0;       // --cpu-window: seconds of the CPU window (split timing)
  int bridgeNfCall = -1;        // --bridge-nf-call: -1 leave as is, 0 off, 1 on (DUT netns)
  // Offered load.
  uint64_t ratePps = 0;         // --rate: paced throughput runs, 0 = as fast as possible
  uint32_t paceBatch = 16;      // --pace-batch: frames per burst while paced
  uint32_t relayCopies = 64;    // --relay-copies: XDP frames per write() where live frames are refused
  int tapWriters = 1;           // --tap-writers: the VM's writer threads (tap-veth)
  // Latency.
  LatencyMode latency = LatencyMode::kOn;
  bool latencyGiven = false;
  int latSamples = 1000;        // light load: probes per pair and run
  double latIntervalS = 0.001;  // ... this far apart
  int latPauseSamples = 20;     // first frame after a pause: probes per pair and run
  double latPauseS = 0.2;       // ... each after this much idle time
  double latTimeoutS = 0.2;     // a probe without an answer by then is lost
  bool latUdpChecksum = false;  // --lat-udp-checksum: probes with UDP checksums (offloaded)
  int latPrio = 50;             // SCHED_FIFO priority of requester and responder, 0 = normal
  // Loss search (--find-rate).
  bool findRate = false;
  double lossMaxPct = 0.01;     // --loss-max: a trial passes with at most this loss
  double trialS = 2.0;          // --trial: seconds per search trial
  double resolution = 0.02;     // --resolution: stop when (hi - lo) <= this x hi
  int maxTrials = 12;           // --max-trials: per search
  int boost = -1;               // --boost: session (autogroup) nice -20; -1 auto (paced), 0 off, 1 on
  bool boosted() const { return boost == 1 || (boost == -1 && (findRate || ratePps)); }
  // Real senders (--real, real.h): the datapaths are real.h's.
  bool real = false;
  std::vector<uint32_t> mtus{1500, 9000};  // --mtu
  bool mtusGiven = false;
  std::string vdevVmPath;                  // --vdev-vm; empty: look next to vdev-bench, then PATH
  std::vector<std::string> realScenarios;  // --only: scenario ids; empty: all but the QEMU guest's
  std::string qemuAccel = "tcg";           // --qemu-accel: tcg or kvm, for the QEMU guest's scenarios
  std::string guestImageDir;               // --guest-image; empty: the build tree's (tests/qemu/guest)
  bool qemuGiven = false;                  // --qemu-accel or --guest-image
  // --idle-ports N: every datapath also with N idle containers attached
  // besides A and B (datapath "<name>+N"); TCP and UDP A -> B only, no VM.
  uint32_t idlePorts = 0;
  double idleCpuS = 10;                    // --idle-cpu: vdevd's idle CPU window per set-up, 0 = none
  bool idleCpuGiven = false;
  // Two hosts (--two-host, two_host.h): the datapaths are two_host.h's.
  bool twoHost = false;
  std::vector<std::string> uplinks{"vxlan", "veth"};  // --uplink, in order
  bool uplinksGiven = false;
  std::string vdevctlPath;                 // --vdevctl; empty: look next to vdev-bench, then PATH
  bool verbose = false;
  std::vector<std::string> argv;  // as given, for the report
};

// Parses argv into *o with the shared option layer (base/cli.h). Returns
// nullopt to go on, or the status to exit with at once: 0 after --help or
// --version, 2 after a usage error (printed on stderr).
std::optional<int> parseOptions(int argc, char** argv, Options* o);

}  // namespace vdev::bench
