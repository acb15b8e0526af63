// The datapath's statistics: where every UMEM frame is (PoolStats), each
// port's counters and state (PortStats), and the whole (DatapathStats), as
// Datapath::stats() returns them.
#pragma once

#include <linux/if_xdp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "datapath/counters.h"
#include "datapath/xdp_prog.h"

namespace vdev::datapath {

struct PoolStats {
  uint64_t total = 0, free = 0, fill_ring = 0, kernel_rx = 0, rx_ring = 0, rx_burst = 0,
           port_rings = 0, tx_ring = 0, kernel_tx = 0, comp_ring = 0;
  uint64_t sum() const {
    return free + fill_ring + kernel_rx + rx_ring + rx_burst + port_rings + tx_ring + kernel_tx +
           comp_ring;
  }
};

struct PortStats {
  uint16_t slot = 0;  // port number (FDB entries name it)
  std::string name;
  int ifindex = 0;
  uint32_t queues = 0;
  uint32_t queues_bound = 0;  // with a socket now
  const char* xdp_mode = "none";
  const char* bind_mode = "none";
  uint32_t mtu = 0;
  bool live = false;
  bool fast_rx = true;  // the port's option (PortConfig::fast_rx), whether or not the fast path is on
  PortCounterSnapshot c;
  uint64_t tx_outstanding = 0;
  struct xdp_statistics xdp {};
  XdpProgCounters prog;
  uint64_t dev_tx_dropped = 0;
};

struct DatapathStats {
  std::vector<PortStats> ports;
  // Counters of the ports removed at run time, summed (bounded however many
  // come and go), so that totals over the daemon's life still add up.
  PortCounterSnapshot removed;
  uint64_t removed_ports = 0;
  PoolStats pool;
  uint64_t fdb_entries = 0;
};

}  // namespace vdev::datapath
