// vdevd's side of the control protocol: turns requests from vdevctl (and the
// CNI plugin) into datapath and device operations, and keeps the persistent
// state in step.
//
// Every change is all or nothing: a port whose device vdevd created is
// removed again when attaching it fails, and a change whose state cannot be
// saved is undone; the reply says what failed.
//
// Thread safety: the control thread only.
#pragma once

#include <chrono>
#include <string>

#include "vdev/datapath.h"
#include "vdev/state_file.h"
#include "vdevnl/server.h"

namespace vdev {

struct ControlContext {
  Datapath* dp = nullptr;
  DaemonState* state = nullptr;
  std::string state_path;  // empty: no persistence
  SwitchMode mode = SwitchMode::kSwitch;
  bool fast_path = false;  // --fast-path: veths vdevd creates get GRO on their container end
  std::chrono::steady_clock::time_point started;
};

class DaemonControl : public vdevnl::ControlHandler {
 public:
  explicit DaemonControl(ControlContext ctx) : ctx_(std::move(ctx)) {}
  vdevnl::Reply handle(const vdevnl::Request& req, const vdevnl::PeerCred& peer) override;

  // Conversions, shared with the stats printing paths.
  static vdevnl::StatsReply toStatsReply(const DatapathStats& s, const DaemonState& st,
                                         const std::string& only);
  static vdevnl::PortInfo toPortInfo(const PortStats& p, const DaemonState& st);

 private:
  vdevnl::Reply portAdd(const vdevnl::PortAddRequest& r);
  vdevnl::Reply portDel(const vdevnl::PortDelRequest& r);
  Status persist();
  ControlContext ctx_;
};

}  // namespace vdev
