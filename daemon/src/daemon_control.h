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

#include "datapath/datapath.h"
#include "daemon/state_file.h"
#include "proto/server.h"

namespace vdev::daemon {

struct ControlContext {
  datapath::Datapath* dp = nullptr;
  DaemonState* state = nullptr;
  std::string state_path;  // empty: no persistence
  datapath::SwitchMode mode = datapath::SwitchMode::kSwitch;
  bool fast_path = false;  // --fast-path: veths vdevd creates get GRO on their container end
  // --default-hook: a veth vdevd creates for a port at the XDP hook gets its
  // container end's TX checksum offload turned off (see rtnl::VethSpec).
  datapath::PortHook default_hook = datapath::PortHook::kAuto;
  std::chrono::steady_clock::time_point started;
};

class DaemonControl : public vdev::proto::ControlHandler {
 public:
  explicit DaemonControl(ControlContext ctx) : ctx_(std::move(ctx)) {}
  vdev::proto::Reply handle(const vdev::proto::Request& req, const vdev::proto::PeerCred& peer) override;

  // Conversions, shared with the stats printing paths.
  static vdev::proto::StatsReply toStatsReply(const datapath::DatapathStats& s, const DaemonState& st,
                                         const std::string& only);
  static vdev::proto::PortInfo toPortInfo(const datapath::PortStats& p, const DaemonState& st);

 private:
  vdev::proto::Reply portAdd(const vdev::proto::PortAddRequest& r);
  vdev::proto::Reply portDel(const vdev::proto::PortDelRequest& r);
  Status persist();
  ControlContext ctx_;
};

}  // namespace vdev::daemon
