// The datapath's statistics: where every UMEM frame is (PoolStats), each
// port's counters and state (PortStats), and the whole (DatapathStats), as
// Datapath::stats() returns them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "datapath/counters.h"
#include "datapath/limits.h"
#include "spec/port_spec.h"
#include "stats/counters.h"

namespace vdev::datapath {

using spec::BindMode;
using spec::PortHook;
using spec::TcAttach;
using spec::XdpMode;

// Where every UMEM frame is, by the table's pool ids (kPoolTotal, ...).
using PoolStats = stats::PoolValues;

struct PortStats {
  uint16_t index = 0;  // the port's index (FDB entries name it)
  std::string name;
  // The punt device's far end (datapath/punt.h), not a port anyone added:
  // the frames lost on their way from the ports' skb programs to vdevd
  // (its queue full, its socket's ring full, a frame of a port that was
  // removed meanwhile) are counted here, once, with no port to charge them
  // to. Its rx/tx are 0: the frames it carries are the ports'.
  bool punt = false;
  int ifindex = 0;
  uint32_t queues = 0;
  uint32_t queues_bound = 0;  // with a socket now
  XdpMode xdp_mode = XdpMode::kNone;     // its XDP program's (kNone: none)
  BindMode bind_mode = BindMode::kNone;  // its sockets' (kClosed: none now)
  // Sockets of the port that registered the UMEM area themselves: each is a
  // registration of its own (XskSocket, "Zero-copy"); the others share one.
  uint32_t umem_registrations = 0;
  uint32_t mtu = 0;
  bool live = false;
  bool fast_rx = true;  // the port's option (PortConfig::fast_rx), whether or not the fast path is on
  PortHook hook = PortHook::kXdp;  // where its frames enter: kXdp or kTc, never kAuto
  // Why the port is not at the hook `auto` chose ("" if it is: Port::hookNote).
  std::string hook_note;
  // What it waits for while it has no device ("" while it has one:
  // Port::linkNote).
  std::string link_note;
  // How its skb program (at tc, or the copy program at XDP) is attached:
  // kTcx or kClsact, never kAuto; nullopt for none. clsact_made: vdevd made
  // the device's clsact qdisc for it (TcPath::clsactMade).
  std::optional<TcAttach> tc_attach;
  bool clsact_made = false;
  bool uplink = false;       // Port::isUplink
  bool isolated = false;     // PortConfig::isolated
  PortLimits limits;         // PortConfig::limits
  // Every counter of the table (stats/counters.h) by id: those vdevd counts,
  // and those read when the statistics were taken (TX outstanding, the
  // sockets' XDP_STATISTICS, the XDP program's counters, the device's
  // tx_dropped).
  stats::PortValues counters;
};

struct DatapathStats {
  std::vector<PortStats> ports;
  // Counters of the ports removed at run time, summed (bounded however many
  // come and go), so that totals over the daemon's life still add up: the
  // ones vdevd counts (stats::Origin::kCounted); the others are 0.
  PortCounterSnapshot removed;
  uint64_t removed_ports = 0;
  PoolStats pool;
  uint64_t fdb_entries = 0;
};

}  // namespace vdev::datapath
