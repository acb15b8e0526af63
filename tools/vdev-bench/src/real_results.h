// real_results.h - what the modes with real senders (--real, --two-host)
// share: one measurement's figures, a datapath's runs of one measure, their
// medians and ratios, how the table and the JSON document show them, and
// the frame of an invocation (prefix, tools, work directory, leftovers,
// output, exit status).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "real_topology.h"
#include "real_traffic.h"
#include "report.h"

namespace vdev::bench {

enum class Traffic { kTcp, kUdp, kRtt };

struct Measurement {
  int run = 0;
  double value = 0;         // Gbit/s (TCP), Mpps received (UDP) or the median round trip, us (RTT)
  double cpuPerUnit = 0;    // bench CPU seconds per Gbit / per million datagrams received (NAN for RTT)
  double machinePerUnit = 0;
  CpuWindow cpu;
  std::optional<TcpResult> tcp;
  std::optional<UdpResult> udp;
  std::optional<RttResult> rtt;
};

// One measure through one datapath over the runs.
struct Cell {
  std::vector<Measurement> runs;
  std::vector<std::string> errors;
  std::string skipped;  // why it is not measured, or ""
};

// Run `run` of one measure into c: from `from` to `to` for --duration
// seconds, one iperf3 TCP stream (runTcp), the UDP flood with
// udpPayload-byte datagrams (runUdpFlood) or round trips (runRtt). A
// failure goes to c.errors ("run N: ...") and is warned of as `what`; a
// measurement joins c.runs and, unless --json or -v, "vdev-bench: LABEL run
// N: VALUE UNIT" goes to stderr.
void measureInto(Cell& c, Traffic traffic, const Station& from, const Station& to, const Options& o, int run,
                 const std::string& what, const std::string& label, const std::string& workDir,
                 size_t udpPayload = kUdpFloodPayload);
// s, then spaces up to width: a column of a progress line's label.
std::string padRight(std::string s, size_t width);

// Run after run, for every value of `over` (an MTU, an uplink) and every
// datapath, fn(run, value, datapath): interleaved, so that a slow drift of
// the machine touches every datapath alike, and in an order that turns by
// one each run (run 1: A B C, run 2: B C A, ...), so that no datapath always
// follows the same one and whatever a set-up leaves behind for the next
// falls on each alike. Stops at a stop request.
template <class T, class F>
Status interleaved(int runs, const std::vector<T>& over, const std::vector<std::string>& datapaths, F&& fn) {
  const size_t n = datapaths.size();
  for (int run = 1; run <= runs; ++run)
    for (const T& v : over)
      for (size_t i = 0; i < n; ++i) {
        if (stopRequested()) return Error{0, "interrupted by a signal"};
        fn(run, v, datapaths[(i + static_cast<size_t>(run - 1)) % n]);
      }
  if (stopRequested()) return Error{0, "interrupted by a signal"};
  return {};
}

std::vector<double> valuesOf(const Cell& c, double Measurement::*f);
double minOf(const std::vector<double>& v);  // NAN when empty
double maxOf(const std::vector<double>& v);
int noisyRuns(const Cell& c);
// v / ref, NAN unless both are numbers and ref > 0.
double ratioTo(double v, double ref);
// v with `decimals` decimals, or "-" when it is not a number.
std::string num(double v, int decimals);
// A UDP run's datagrams lost in the receiver's full socket buffer, in % of those sent.
double sockDropPct(const Measurement& m);
// /proc/loadavg's 1, 5 and 15 minute figures.
std::string loadAverage();

// A cell's figures as a table row prints them: the median of the runs'
// values (`decimals` decimals), "(min-max)", the ratio to ref, the medians
// of CPU s/unit, of machine CPU s/unit, and "noisy/runs".
struct CellText {
  std::string median, range, ratio, cpu, machine, noisy;
  // UDP: the medians of the Mpps sent and of sockDropPct.
  std::string txMpps, sockDrop;
  // RTT: the 99th percentile of every run's probes pooled, its ratio to
  // refP99, and the probes lost over all runs / sent.
  std::string p99, p99Ratio, lost;
};
CellText cellText(const Cell& c, double ref, int decimals, double refP99 = NAN);
// The median of a cell's runs' 99th percentile round trips (NAN without RTT runs).
double medianP99(const Cell& c);
// Every run's answered probes of a cell as one sample: a run has a few
// thousand probes, so its p99 is its few dozen slowest, and one run with a
// burst of other load moves it; pooled, the p99 rests on every run alike.
LatencyStats pooledRtt(const Cell& c);
// A cell's own noise at p99: the pooled p99 of its odd-numbered runs and
// that of its even-numbered ones, the larger over the smaller (>= 1; NAN
// with fewer than two runs). A ratio to the bridge closer to 1 than the
// bridge's own split is not a difference this machine can show.
double splitHalfP99(const Cell& c);

Json cpuJson(const CpuWindow& w);
// A JSON object from another program (vdevd, vdev-vm), or null when it is not one.
Json objectOrNull(const std::string& text);
Json textOrNull(const std::string& s);
// A cell in the JSON documents, in two parts so that a mode can put figures
// of its own in between: "median", "min", "max", "ratio_to_bridge" (to ref);
// then "cpu_s_per_unit", "machine_cpu_s_per_unit", "noisy_runs", "runs"
// (every measurement) and "errors".
void cellSummaryJson(Json& r, const Cell& c, double ref);
void cellRunsJson(Json& r, const Cell& c);
// Skipped, or measured in every run without an error and moving data.
bool cellSucceeded(const Cell& c);

// ---- an invocation --------------------------------------------------------------

// What a mode reports besides its figures; its report derives from it.
struct RealSession {
  const Options* opt = nullptr;
  std::string prefix;  // "vb<pid>": every namespace's name starts with it
  std::string vdevdPath, iperf3Path, bridgeNf = "absent";
  std::string loadStart, loadEnd;
  std::map<std::string, std::string> describe;               // datapath -> how it is set up
  std::vector<std::string> datapaths;                        // measured ones
  std::vector<std::pair<std::string, std::string>> skipped;  // what, why
  std::vector<std::string> leftovers;
  std::string fatal;
};

// Finds iperf3 (s.iperf3Path), or says that it is missing.
Status findIperf3(RealSession& s);
// Why a vdevd datapath cannot run ("vdevd not found ..."), or "" when
// s.vdevdPath is set.
std::string vdevdMissing(const RealSession& s);
// net.bridge.bridge-nf-call-iptables in ns, into s.bridgeNf once it is
// there (br_netfilter loaded).
void noteBridgeNf(RealSession& s, const Netns& ns);
// Datapath d cannot run, for the reason why: an error when the datapaths
// were given (--datapath), else d is skipped with a note.
Status skipDatapath(RealSession& s, const std::string& d, const std::string& why);

// The table's head after its title line: the load averages, where
// bridge-nf-call-iptables was read (bridgeWhere: "the DUT namespace"), the
// notes, a line per datapath saying how it is set up, and what was skipped.
void printSessionHead(const RealSession& s, FILE* out, const char* bridgeWhere,
                      const std::vector<std::string>& notes = {});
// The table's last lines: what was left behind, the error that ended the run.
void printSessionTail(const RealSession& s, FILE* out);
// The JSON document's first members: jsonHead's, "mode", "load_average".
void sessionJsonHead(Json& j, const RealSession& s, const char* mode);
Json datapathsJson(const RealSession& s);  // [{"name", "describe"}]
Json skippedJson(const RealSession& s);    // [{"what", "reason"}]

// A mode's steps, for runSession().
struct RealMode {
  std::function<Status()> plan;                           // which datapaths run, the tools they need
  std::function<Status(const std::string& workDir)> run;  // every measurement
  std::function<std::string()> json;                      // the JSON document
  std::function<void(FILE*)> print;                       // the tables
  std::function<bool()> succeeded;                        // every measurement moved data
};
// One invocation of a mode: the prefix, SIGINT/SIGTERM stop it (the
// destructors remove what it made), plan, a work directory in /tmp for run
// (removed after it), the leftover check, the tables or (--json) the JSON
// document on stdout. Returns the exit status: 0 when m.succeeded() and
// nothing failed or was left behind, 1 otherwise.
int runSession(RealSession& s, const RealMode& m);

}  // namespace vdev::bench
