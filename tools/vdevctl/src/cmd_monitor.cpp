// vdevctl monitor: per-port rates every interval, like xdp-bench.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "commands.h"

namespace vdev::ctl {

namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, lost;
};

std::map<std::string, Sample> sampleOf(const vdev::proto::StatsReply& r) {
  std::map<std::string, Sample> m;
  for (const auto& s : r.ports)
    m[s.port.name] = {s.counters[vdev::stats::kRxPackets], s.counters[vdev::stats::kRxBytes],
                      s.counters[vdev::stats::kTxPackets], s.counters[vdev::stats::kTxBytes],
                      s.counters.lost()};
  return m;
}

// A counter that went backwards belongs to a port deleted and added again
// between two reads: count from zero.
uint64_t delta(uint64_t now, uint64_t before) { return now >= before ? now - before : now; }

// Waits until `deadline` or a signal in `sigs` (blocked by the caller).
// Returns true if a signal came.
bool sleepUntil(Clock::time_point deadline, const sigset_t& sigs) {
  for (;;) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{time_t(ns / 1000000000), long(ns % 1000000000)};
    const int sig = ::sigtimedwait(&sigs, nullptr, &ts);
    if (sig > 0) return true;
    // EAGAIN: timed out (loop re-checks the clock); EINTR: another signal.
  }
}

}  // namespace

int cmdMonitor(Context& ctx, Args& a) {
  double interval = 1.0;
  std::optional<uint32_t> count;
  std::vector<std::string> only;
  while (!a.empty()) {
    const std::string arg = a.peek();
    if (arg == "--interval" || arg == "-i") {
      a.next("option");
      interval = a.seconds("--interval", 0.01, 3600);
    } else if (arg == "--count" || arg == "-c") {
      a.next("option");
      count = a.u32("--count", 1, UINT32_MAX);
    } else if (!arg.empty() && arg[0] == '-') {
      a.unknown(arg);
    } else {
      only.push_back(a.ifname("IFNAME"));
    }
  }

  // SIGINT/SIGTERM end the run normally (exit 0) at the next wait: taken
  // synchronously with sigtimedwait, never by a handler.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigprocmask(SIG_BLOCK, &sigs, nullptr);

  auto& client = ctx.client();
  auto first = client.stats();
  if (!first) return Context::fail(first.error());
  for (const auto& n : only) {
    bool found = false;
    for (const auto& p : first->ports) found = found || p.port.name == n;
    if (!found) return Context::fail(vdev::Error{ENOENT, "no port " + n});
  }
  auto prev = sampleOf(*first);
  const auto start = Clock::now();
  auto prevTime = start;
  const auto step =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval));

  const bool json = ctx.opt().json;
  if (!json) {
    char head[160];
    std::snprintf(head, sizeof head, "%8s  %-15s %12s %10s %12s %10s %10s\n", "TIME", "PORT",
                  "RX_PPS", "RX_MBPS", "TX_PPS", "TX_MBPS", "DROPS/S");
    if (int rc = Context::print(head)) return rc;
  }

  auto next = start;
  for (uint32_t n = 0; !count || n < *count; ++n) {
    next += step;
    if (next < Clock::now()) next = Clock::now() + step;  // fell behind: no burst of reports
    if (sleepUntil(next, sigs)) return kExitOk;
    auto r = client.stats();
    if (!r) return Context::fail(r.error());
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - prevTime).count();
    const double t = std::chrono::duration<double>(now - start).count();
    auto cur = sampleOf(*r);

    std::string out;
    Json report = Json::object();
    if (json) {
      report["time"] = jsonNumber(t, 3);
      report["interval"] = jsonNumber(dt, 3);
      report["ports"] = Json::array();
    }
    size_t lines = 0;
    for (const auto& [name, c] : cur) {
      if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
      const auto it = prev.find(name);
      if (it == prev.end()) continue;  // new port: rates from its next sample
      const Sample& p = it->second;
      const double rxPps = double(delta(c.rx_packets, p.rx_packets)) / dt;
      const double txPps = double(delta(c.tx_packets, p.tx_packets)) / dt;
      const double rxMbps = double(delta(c.rx_bytes, p.rx_bytes)) * 8 / 1e6 / dt;
      const double txMbps = double(delta(c.tx_bytes, p.tx_bytes)) * 8 / 1e6 / dt;
      const double dropPps = double(delta(c.lost, p.lost)) / dt;
      if (json) {
        Json p = Json::object();
        p["name"] = name;
        p["rx_pps"] = jsonNumber(rxPps, 1);
        p["rx_mbps"] = jsonNumber(rxMbps, 3);
        p["tx_pps"] = jsonNumber(txPps, 1);
        p["tx_mbps"] = jsonNumber(txMbps, 3);
        p["drop_pps"] = jsonNumber(dropPps, 1);
        report["ports"].push_back(std::move(p));
      } else {
        char line[160];
        std::snprintf(line, sizeof line, "%8.2f  %-15s %12.0f %10.2f %12.0f %10.2f %10.0f\n", t,
                      name.c_str(), rxPps, rxMbps, txPps, txMbps, dropPps);
        out += line;
      }
      ++lines;
    }
    if (json) {
      out = jsonText(report, ctx.opt().pretty);
    } else if (lines == 0) {
      char line[64];
      std::snprintf(line, sizeof line, "%8.2f  (no ports)\n", t);
      out += line;
    }
    if (int rc = Context::print(out)) return rc;
    prev = std::move(cur);
    prevTime = now;
  }
  return kExitOk;
}

}  // namespace vdev::ctl
