// vdevd's statistics as tests and benchmarks read them: the --stats-json file
// vdevd writes on SIGUSR1 and at exit, and `vdevctl -j stats`, which has the
// same field names (docs/vdevd.md, docs/vdevctl.md).
//
// Counters are the product's: a port's and the pool's are read row by row of
// the counter table (stats/counters.h) -- the ports' by stats::readPortCounters,
// the reader the product itself uses -- and held by id in stats::PortValues /
// stats::PoolValues, so a counter added to the table is read here without a
// change. counter() reads one value at a path, for what is not a table row.
#pragma once

#include <chrono>
#include <cstdint>
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

// A port of a statistics document: its descriptive fields, and every row of
// the counter table (stats::kPortCounters) by id -- p[stats::kRxPackets],
// p[stats::kDropRunt], p.totalDrops() -- as the product reads them
// (stats::readPortCounters): a counter the document does not have is 0.
struct PortStats : stats::PortValues {
  std::string name;
  int ifindex = 0;
  int queues = 0;  // descriptive fields: 0 or "" when absent
  std::string xdp_mode, bind_mode;
  int mtu = 0;

  // A counter by name, for callers that hold names ("runt";
  // "rx_ring_full"): the drop reason "drops.<reason>", the XDP_STATISTICS
  // counter "xdp_stats.<stat>". ENOENT when the table has no such counter.
  Result<uint64_t> drop(std::string_view reason) const;
  Result<uint64_t> xdp(std::string_view stat) const;
  // Frames the kernel dropped on the way into the port's AF_XDP sockets:
  // rx_dropped (no fill buffer, too long) + rx_ring_full. Not
  // rx_fill_ring_empty_descs: that counts the same events as rx_dropped.
  uint64_t xdpRxDrops() const {
    return (*this)[stats::kXdpRxDropped] + (*this)[stats::kXdpRxRingFull];
  }
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

// Parses a statistics document. EINVAL when it is not JSON, lacks a field
// every document has (a port's name, ifindex, rx/tx counters and drops; the
// pool) or has a counter that is not an unsigned integer.
Result<Stats> parseStats(std::string_view text);

// Asks a running vdevd for statistics: removes `path` (its --stats-json
// file), sends SIGUSR1 and waits until vdevd has written the file again
// (it writes PATH.tmp and renames it, so a file that exists is complete).
// Returns its text. ECHILD when vdevd exits meanwhile, ETIMEDOUT after
// `timeout`.
Result<std::string> requestStats(Child& vdevd, const std::string& path, std::chrono::nanoseconds timeout);

}  // namespace vdev::testkit
