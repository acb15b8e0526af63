// DatapathTestAccess: the test-only seam of Datapath (datapath.h declares it
// a friend). What unit tests reach inside a Datapath for -- switching
// frames without a thread, its MAC table and ports, ports without a device,
// control steps on its thread, how stats() took its snapshots -- is here,
// so that Datapath's public API is what vdevd uses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "datapath/datapath.h"

namespace vdev::datapath {

struct DatapathTestAccess {
  // Switches n frames received on `in` and hands them over, as an RX burst does.
  static void forward(Datapath& dp, Port& in, Frame** frames, uint32_t n, uint64_t now_ns) {
    dp.forward(in, frames, n, now_ns);
  }
  static Fdb& fdb(Datapath& dp) { return dp.fdb_; }
  static Port& port(Datapath& dp, size_t index) { return *dp.ports_[index]; }
  // Adds a port object built elsewhere (a Port without a device).
  static void adoptPort(Datapath& dp, std::unique_ptr<Port> p) { dp.adoptPort(std::move(p)); }
  static void runOnDatapath(Datapath& dp, const std::function<void()>& fn) { dp.runOnDatapath(fn); }
  static Datapath::StatsSplit statsSplit(const Datapath& dp) { return dp.statsSplit(); }
};

}  // namespace vdev::datapath
