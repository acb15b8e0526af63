// The commands of vdevctl (one handler per row of the table in
// commands.cpp) and the writers they share.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cli.h"
#include "output.h"
#include "proto/codec.h"
#include "spec/port_policy.h"
#include "spec/port_spec.h"

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

// f(row) for every row of the port policy table (spec/port_policy.h) in
// the order the help and the usage messages list them: identity rows
// first, then rates, each in table order.
template <class F>
void forEachPolicyFieldListed(F&& f) {
  for (vdev::spec::FieldGroup g : {vdev::spec::FieldGroup::kIdentity, vdev::spec::FieldGroup::kRate})
    vdev::spec::forEachPolicyField([&](const auto& r) {
      if (r.group == g) f(r);
    });
}

// The names of `table` that `takes` accepts, in table order: the port
// types, XDP modes and hooks vdevctl's keywords take (the proto parsers
// say which; the help and the usage messages list them).
template <class E, size_t N, class P>
std::vector<std::string> namesTaken(const vdev::spec::Named<E> (&table)[N], P takes) {
  std::vector<std::string> out;
  for (const auto& n : table)
    if (takes(n.name)) out.emplace_back(n.name);
  return out;
}
inline std::vector<std::string> portTypesTaken() {
  return namesTaken(vdev::spec::kPortTypeNames,
                    [](const char* n) { return vdev::proto::parsePortType(n).has_value(); });
}
inline std::vector<std::string> xdpModesTaken() {
  return namesTaken(vdev::spec::kXdpModeNames,
                    [](const char* n) { return vdev::proto::parseXdpMode(n).has_value(); });
}
inline std::vector<std::string> hooksTaken() {
  return namesTaken(vdev::spec::kPortHookNames,
                    [](const char* n) { return vdev::proto::parsePortHook(n).has_value(); });
}
// "a|b|c" (sep "|"); "a, b or c" (sep ", ", last " or ").
std::string joinWords(const std::vector<std::string>& w, const char* sep, const char* last);

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
