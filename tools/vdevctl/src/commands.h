// The commands of vdevctl (one handler per row of the table in
// commands.cpp) and the writers they share.
#pragma once

#include <string>

#include "cli.h"
#include "output.h"
#include "proto/codec.h"

namespace vdev::ctl {

int cmdPortAdd(Context& ctx, Args& args);
int cmdPortDel(Context& ctx, Args& args);
int cmdPortSet(Context& ctx, Args& args);
int cmdPortShow(Context& ctx, Args& args);
int cmdStats(Context& ctx, Args& args);
int cmdMonitor(Context& ctx, Args& args);
int cmdFdbShow(Context& ctx, Args& args);
int cmdFdbAdd(Context& ctx, Args& args);
int cmdFdbDel(Context& ctx, Args& args);
int cmdInfo(Context& ctx, Args& args);
int cmdCapture(Context& ctx, Args& args);

// "up" (sockets open, link up) or "down".
const char* stateName(const vdev::proto::PortInfo& p);
// The QUEUES column: "N", or "B/N" while only B of a live port's N queues are bound.
std::string queuesText(const vdev::proto::PortInfo& p);
// The fields of a port (PORT_GET) as JSON object members: name, type,
// ifindex, queues, queues_bound, xdp_mode, bind_mode, mtu, live, fast_rx,
// mac (when known).
void writePortInfo(Json& o, const vdev::proto::PortInfo& p);
// A port's counters as JSON object members, as vdevd's --stats-json names
// them (the counter table): rx_packets ... tx_outstanding, drops{},
// xdp_stats{}, xdp_prog{}, dev{}.
void writePortCounters(Json& o, const vdev::proto::PortStatsMsg& s);

}  // namespace vdev::ctl
