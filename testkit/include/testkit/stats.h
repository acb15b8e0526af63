// vdevd's statistics as tests and benchmarks read them: the --stats-json file
// vdevd writes on SIGUSR1 and at exit, and `vdevctl -j stats`, which has the
// same field names (docs/vdevd.md, docs/vdevctl.md).
//
// Every counter is read by its JSON name through counter(), the one place
// that knows where a counter lives in the document.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "stats/counters.h"
#include "testkit/process.h"

namespace vdev::testkit {

// The counter `name` of a port or of the pool: a top-level member
// ("rx_packets", "total") or one in a group, dotted ("drops.ring_full",
// "xdp_stats.rx_ring_full", "xdp_prog.fast", "dev.tx_dropped"). ENOENT when
// the document has no such counter, EINVAL when it is not an unsigned integer.
Result<uint64_t> counter(const nlohmann::json& node, std::string_view name);

struct PortStats {
  std::string name;
  int ifindex = 0;
  int queues = 0;  // descriptive fields: 0 or "" when absent
  std::string xdp_mode, bind_mode;
  int mtu = 0;
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  uint64_t tx_outstanding = 0;                // 0 when absent
  std::map<std::string, uint64_t> drops;      // by reason
  std::map<std::string, uint64_t> xdp_stats;  // XDP_STATISTICS, summed over queues; may be empty
  std::map<std::string, uint64_t> xdp_prog;   // the XDP program's counters; may be empty
  uint64_t dev_tx_dropped = 0;                // 0 when absent

  // ENOENT when vdevd did not report it.
  Result<uint64_t> drop(std::string_view reason) const;
  uint64_t dropsTotal() const;  // every reason
  Result<uint64_t> xdp(std::string_view stat) const;  // xdp_stats.<stat>
  // Frames the kernel dropped on the way into the port's AF_XDP sockets:
  // rx_dropped (no fill buffer, too long) + rx_ring_full. Not
  // rx_fill_ring_empty_descs: that counts the same events as rx_dropped.
  Result<uint64_t> xdpRxDrops() const;
};

// The pool: every row of the counter table (stats::kPoolCounters, each read
// by its JSON name), by id -- pool[stats::kPoolFree] -- and the sum vdevd
// reported beside them.
struct PoolStats : stats::PoolValues {
  uint64_t reported_sum = 0;
  uint64_t total() const { return (*this)[stats::kPoolTotal]; }
  uint64_t free() const { return (*this)[stats::kPoolFree]; }
  // Every frame in the pool, the fill rings or the kernel's RX: what a
  // datapath holds when no traffic is on its way.
  bool atRest() const {
    return free() + (*this)[stats::kPoolFillRing] + (*this)[stats::kPoolKernelRx] == total();
  }
  // Frames anywhere but the pool, the fill rings and the kernel's RX: 0 when
  // nothing is in flight.
  uint64_t inFlight() const {
    return sum() - (*this)[stats::kPoolFree] - (*this)[stats::kPoolFillRing] -
           (*this)[stats::kPoolKernelRx];
  }
};

struct Stats {
  std::vector<PortStats> ports;
  PoolStats pool;
  nlohmann::json raw;  // the whole document

  const PortStats* findPort(std::string_view name) const;
};

// Parses a statistics document. EINVAL when it is not JSON or lacks a field
// every document has (a port's name, ifindex, rx/tx counters and drops; the
// pool).
Result<Stats> parseStats(std::string_view text);

// Asks a running vdevd for statistics: removes `path` (its --stats-json
// file), sends SIGUSR1 and waits until vdevd has written the file again
// (it writes PATH.tmp and renames it, so a file that exists is complete).
// Returns its text. ECHILD when vdevd exits meanwhile, ETIMEDOUT after
// `timeout`.
Result<std::string> requestStats(Child& vdevd, const std::string& path, std::chrono::nanoseconds timeout);

}  // namespace vdev::testkit
