// real_results.cpp - see real_results.h.
#include "real_results.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "testkit/process.h"
#include "topology.h"

namespace vdev::bench {

namespace {
Result<Measurement> measureTraffic(Traffic traffic, const Station& from, const Station& to, double duration,
                                   int run, const std::string& what, const std::string& workDir,
                                   size_t udpPayload) {
  Measurement m;
  m.run = run;
  if (traffic == Traffic::kTcp) {
    auto r = runTcp(from, to, duration, what, workDir);
    if (!r) return r.error();
    m.value = r->gbps;
    const double gbit = r->bytes * 8 / 1e9;
    m.cpu = r->cpu;
    m.cpuPerUnit = gbit > 0 ? r->cpu.bench / gbit : NAN;
    m.machinePerUnit = gbit > 0 ? r->cpu.machine / gbit : NAN;
    m.tcp = r.value();
  } else if (traffic == Traffic::kRtt) {
    auto r = runRtt(from, to, duration, what);
    if (!r) return r.error();
    m.value = r->stats.p50Us;
    m.cpu = r->cpu;
    m.cpuPerUnit = NAN;
    m.machinePerUnit = NAN;
    m.rtt = r.value();
  } else {
    auto r = runUdpFlood(from, to, duration, what, udpPayload);
    if (!r) return r.error();
    m.value = r->receivedMpps();
    const double mpkt = r->received / 1e6;
    m.cpu = r->cpu;
    m.cpuPerUnit = mpkt > 0 ? r->cpu.bench / mpkt : NAN;
    m.machinePerUnit = mpkt > 0 ? r->cpu.machine / mpkt : NAN;
    m.udp = r.value();
  }
  return m;
}
}  // namespace

void measureInto(Cell& c, Traffic traffic, const Station& from, const Station& to, const Options& o, int run,
                 const std::string& what, const std::string& label, const std::string& workDir,
                 size_t udpPayload) {
  auto m = measureTraffic(traffic, from, to, o.duration, run, what, workDir, udpPayload);
  if (!m) {
    c.errors.push_back("run " + std::to_string(run) + ": " + m.error().message());
    logWarn("%s: %s", what.c_str(), m.error().message().c_str());
    return;
  }
  if (!o.json && !verbose())
    fprintf(stderr, "vdev-bench: %s run %d: %.3f %s\n", label.c_str(), run, m->value,
            traffic == Traffic::kTcp   ? "Gbit/s"
            : traffic == Traffic::kRtt ? "us round trip (p50)"
                                       : "Mpps received");
  c.runs.push_back(std::move(m.value()));
}

std::string padRight(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::vector<double> valuesOf(const Cell& c, double Measurement::*f) {
  std::vector<double> v;
  for (const auto& m : c.runs) v.push_back(m.*f);
  return v;
}
double minOf(const std::vector<double>& v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }
double maxOf(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }
int noisyRuns(const Cell& c) {
  return static_cast<int>(
      std::count_if(c.runs.begin(), c.runs.end(), [](const Measurement& m) { return m.cpu.noisy; }));
}
double ratioTo(double v, double ref) { return std::isfinite(v) && std::isfinite(ref) && ref > 0 ? v / ref : NAN; }

std::string num(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char b[32];
  snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

double sockDropPct(const Measurement& m) {
  return m.udp && m.udp->sent ? 100.0 * m.udp->rcvbufErrors / m.udp->sent : 0;
}

std::string loadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

double medianP99(const Cell& c) {
  std::vector<double> v;
  for (const auto& m : c.runs)
    if (m.rtt) v.push_back(m.rtt->stats.p99Us);
  return v.empty() ? NAN : median(v);
}

namespace {

// The round trips of a cell's RTT runs number first, first + step, ...
// (counted from 0) as one sample.
LatencyStats poolRtt(const Cell& c, size_t step, size_t first) {
  std::vector<double> all;
  uint64_t sent = 0;
  size_t i = 0;
  for (const auto& m : c.runs) {
    if (!m.rtt) continue;
    if (i++ % step != first) continue;
    all.insert(all.end(), m.rtt->us.begin(), m.rtt->us.end());
    sent += m.rtt->stats.sent;
  }
  return summarizeLatency(all, sent);
}

}  // namespace

LatencyStats pooledRtt(const Cell& c) { return poolRtt(c, 1, 0); }

double splitHalfP99(const Cell& c) {
  const LatencyStats a = poolRtt(c, 2, 0), b = poolRtt(c, 2, 1);
  if (!a.samples || !b.samples) return NAN;
  return std::max(a.p99Us, b.p99Us) / std::min(a.p99Us, b.p99Us);
}

CellText cellText(const Cell& c, double ref, int decimals, double refP99) {
  const auto v = valuesOf(c, &Measurement::value);
  const double med = median(v);
  CellText t;
  t.median = num(med, decimals);
  t.range = "(" + num(minOf(v), decimals) + "-" + num(maxOf(v), decimals) + ")";
  t.ratio = num(ratioTo(med, ref), 2);
  t.cpu = num(median(valuesOf(c, &Measurement::cpuPerUnit)), 3);
  t.machine = num(median(valuesOf(c, &Measurement::machinePerUnit)), 3);
  t.noisy = std::to_string(noisyRuns(c)) + "/" + std::to_string(c.runs.size());
  std::vector<double> tx, drop;
  for (const auto& m : c.runs) {
    if (!m.udp) continue;
    tx.push_back(m.udp->sentMpps());
    drop.push_back(sockDropPct(m));
  }
  if (!tx.empty()) {
    t.txMpps = num(median(tx), 3);
    t.sockDrop = num(median(drop), 2);
  }
  uint64_t sent = 0, lost = 0;
  for (const auto& m : c.runs) {
    if (!m.rtt) continue;
    sent += m.rtt->stats.sent;
    lost += m.rtt->stats.lost;
  }
  if (sent) {
    const double p99 = pooledRtt(c).p99Us;
    t.p99 = num(p99, decimals);
    t.p99Ratio = num(ratioTo(p99, refP99), 2);
    t.lost = std::to_string(lost) + "/" + std::to_string(sent);
  }
  return t;
}

Json cpuJson(const CpuWindow& w) {
  return {{"window_s", fixed(w.seconds, 3)},
          {"machine_busy_s", fixed(w.machine, 3)},
          {"bench_tasks_s", fixed(w.bench, 3)},
          {"steal_s", fixed(w.steal, 3)},
          {"other_load", fixed(w.otherLoad(), 3)}};
}

Json objectOrNull(const std::string& text) {
  if (text.empty()) return nullptr;
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() ? doc : Json(nullptr);
}
Json textOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

void cellSummaryJson(Json& r, const Cell& c, double ref) {
  auto v = valuesOf(c, &Measurement::value);
  r["median"] = fixed(median(v), 4);
  r["min"] = fixed(minOf(v), 4);
  r["max"] = fixed(maxOf(v), 4);
  r["ratio_to_bridge"] = fixed(ratioTo(median(v), ref), 4);
}

void cellRunsJson(Json& r, const Cell& c) {
  r["cpu_s_per_unit"] = fixed(median(valuesOf(c, &Measurement::cpuPerUnit)), 4);
  r["machine_cpu_s_per_unit"] = fixed(median(valuesOf(c, &Measurement::machinePerUnit)), 4);
  r["noisy_runs"] = noisyRuns(c);
  Json runs = Json::array();
  for (const auto& m : c.runs) {
    Json x;
    x["run"] = m.run;
    x["value"] = fixed(m.value, 4);
    x["cpu_s_per_unit"] = fixed(m.cpuPerUnit, 4);
    x["machine_cpu_s_per_unit"] = fixed(m.machinePerUnit, 4);
    if (m.tcp) {
      x["bytes"] = m.tcp->bytes;
      x["seconds"] = fixed(m.tcp->seconds, 3);
      x["retransmits"] = m.tcp->retransmits ? Json(*m.tcp->retransmits) : Json(nullptr);
    }
    if (m.udp) {
      x["sent"] = m.udp->sent;
      x["received"] = m.udp->received;
      x["rcvbuf_errors"] = m.udp->rcvbufErrors;
      x["seconds"] = fixed(m.udp->seconds, 3);
      x["sent_mpps"] = fixed(m.udp->sentMpps(), 4);
    }
    if (m.rtt) {
      const LatencyStats& l = m.rtt->stats;
      x["probes_sent"] = l.sent;
      x["lost"] = l.lost;
      x["interval_s"] = fixed(kRttIntervalS, 4);
      x["min_us"] = fixed(l.minUs, 2);
      x["p50_us"] = fixed(l.p50Us, 2);
      x["p90_us"] = fixed(l.p90Us, 2);
      x["p99_us"] = fixed(l.p99Us, 2);
      x["max_us"] = fixed(l.maxUs, 2);
      x["mean_us"] = fixed(l.meanUs, 2);
    }
    x["cpu"] = cpuJson(m.cpu);
    x["noisy"] = m.cpu.noisy;
    runs.push_back(std::move(x));
  }
  r["runs"] = std::move(runs);
  r["errors"] = c.errors;
}

bool cellSucceeded(const Cell& c) {
  if (!c.skipped.empty()) return true;
  if (!c.errors.empty() || c.runs.empty()) return false;
  return std::all_of(c.runs.begin(), c.runs.end(), [](const Measurement& m) { return m.value > 0; });
}

// ---- an invocation --------------------------------------------------------------

Status findIperf3(RealSession& s) {
  s.iperf3Path = testkit::findExecutable("iperf3");
  if (s.iperf3Path.empty()) return Error{0, "iperf3 not found (Debian: apt-get install iperf3)"};
  return {};
}

std::string vdevdMissing(const RealSession& s) {
  if (!s.vdevdPath.empty()) return "";
  const std::string& given = s.opt->vdevdPath;
  return given.empty() ? "vdevd not found (build it, or use --vdevd PATH)"
                       : "--vdevd " + given + " is not an executable file";
}

void noteBridgeNf(RealSession& s, const Netns& ns) {
  if (s.bridgeNf != "absent") return;
  if (auto v = testkit::readSysctl("net/bridge/bridge-nf-call-iptables", &ns)) s.bridgeNf = v.value();
}

Status skipDatapath(RealSession& s, const std::string& d, const std::string& why) {
  if (s.opt->datapathsGiven) return Error{0, why};
  s.skipped.push_back({d, why});
  logWarn("skipping %s: %s", d.c_str(), why.c_str());
  return {};
}

void printSessionHead(const RealSession& s, FILE* out, const char* bridgeWhere, const std::vector<std::string>& notes) {
  fprintf(out, "load average: %s at the start, %s at the end\n", s.loadStart.c_str(), s.loadEnd.c_str());
  fprintf(out, "bridge: net.bridge.bridge-nf-call-iptables=%s in %s\n", s.bridgeNf.c_str(), bridgeWhere);
  for (const auto& n : notes) fprintf(out, "%s\n", n.c_str());
  fprintf(out, "datapaths:\n");
  for (const auto& d : s.datapaths) {
    auto it = s.describe.find(d);
    fprintf(out, "  %-11s %s\n", d.c_str(), it == s.describe.end() ? "(not set up)" : it->second.c_str());
  }
  for (const auto& [what, why] : s.skipped) fprintf(out, "skipped: %s: %s\n", what.c_str(), why.c_str());
}

void printSessionTail(const RealSession& s, FILE* out) {
  if (!s.leftovers.empty()) {
    fprintf(out, "leftovers:");
    for (const auto& l : s.leftovers) fprintf(out, " %s", l.c_str());
    fprintf(out, "\n");
  }
  if (!s.fatal.empty()) fprintf(out, "error: %s\n", s.fatal.c_str());
}

void sessionJsonHead(Json& j, const RealSession& s, const char* mode) {
  jsonHead(j, s.opt->argv);
  j["mode"] = mode;
  j["load_average"] = {{"start", s.loadStart}, {"end", s.loadEnd}};  // /proc/loadavg: 1, 5, 15 minutes
}

Json datapathsJson(const RealSession& s) {
  Json datapaths = Json::array();
  for (const auto& d : s.datapaths) {
    auto it = s.describe.find(d);
    datapaths.push_back({{"name", d}, {"describe", it == s.describe.end() ? std::string() : it->second}});
  }
  return datapaths;
}

Json skippedJson(const RealSession& s) {
  Json skipped = Json::array();
  for (const auto& [what, why] : s.skipped) skipped.push_back({{"what", what}, {"reason", why}});
  return skipped;
}

int runSession(RealSession& s, const RealMode& m) {
  s.prefix = "vb" + std::to_string(getpid());
  installStopSignals();
  s.loadStart = loadAverage();
  Status st = m.plan();
  char tmpl[] = "/tmp/vdev-bench.XXXXXX";
  std::string workDir;
  if (st.ok() && mkdtemp(tmpl)) workDir = tmpl;
  if (st.ok()) st = m.run(workDir.empty() ? "/tmp" : workDir);
  if (!st.ok()) s.fatal = st.error().message();
  if (!workDir.empty()) rmdir(workDir.c_str());
  s.loadEnd = loadAverage();
  s.leftovers = leftovers(s.prefix);
  if (s.opt->json) fputs(m.json().c_str(), stdout);
  else m.print(stdout);
  fflush(stdout);
  if (!s.fatal.empty()) fprintf(stderr, "vdev-bench: %s\n", s.fatal.c_str());
  return s.fatal.empty() && s.leftovers.empty() && m.succeeded() ? 0 : 1;
}

}  // namespace vdev::bench
