// options.h - vdev-bench's command line.
#pragma once

#include <cstdint>
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

struct Options {
  Scenario scenario = Scenario::kVethVeth;
  SinkMode sinkMode = SinkMode::kTc;  // veth-veth sink: tc ingress (default) or XDP
  std::vector<std::string> datapaths{"vdevd", "bridge", "xdp-redirect"};
  bool datapathsGiven = false;  // default list: a missing vdevd is skipped, not an error
  double duration = 5.0;        // measured seconds per run
  double warmup = 1.0;          // seconds of traffic before measuring
  int runs = 3;
  size_t frameSize = 64;        // RFC 2544 frame size, with FCS
  bool json = false;
  std::string vdevdPath;        // empty: look next to vdev-bench, then PATH
  std::vector<std::string> vdevdArgs;
  int genCpu = 0;
  int dutCpu = 1;
  int sinkCpu = -1;             // -1: same as genCpu
  int sinkPrio = 50;            // SCHED_FIFO priority of the sink's receive work, 0 = normal
  bool napiThreaded = false;    // --napi softirq (default) or threaded
  int sinkNapiThreaded = -1;    // --sink-napi; -1: as --napi (xdp sink), softirq (tc sink)
  bool sinkThreaded() const {
    if (sinkNapiThreaded >= 0) return sinkNapiThreaded != 0;
    return sinkMode == SinkMode::kXdp && scenario == Scenario::kVethVeth && napiThreaded;
  }
  int genThreads = 2;
  uint32_t repeat = 2'000'000;
  uint32_t batch = 64;
  uint32_t sportCount = 0;
  double gapFraction = 0.1;     // a 10 ms interval below this x median is a gap
  bool timeline = false;        // per-10ms rates in the JSON
  NapiTiming napiTiming = NapiTiming::kSplit;
  double cpuWindow = 2.0;       // --cpu-window: seconds of the CPU window (split timing)
  int bridgeNfCall = -1;        // --bridge-nf-call: -1 leave as is, 0 off, 1 on (DUT netns)
  bool verbose = false;
  std::vector<std::string> argv;  // as given, for the report
};

// Parses argv. Returns 0 to proceed, or an exit code (--help printed: 0 is
// signalled through *exitCode with a false return).
bool parseOptions(int argc, char** argv, Options* o, int* exitCode);
void printUsage(FILE* f);

}  // namespace vdev::bench
