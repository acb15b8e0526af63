// The datapath's state as the control protocol's reply objects, for
// vdevd's control handlers (DaemonControl): a port's PortInfo and
// counters, STATS_GET's reply, an FDB entry, the kernel features in use.
// The modes and the policy are the same types on both sides
// (spec/port_spec.h, spec/port_policy.h): nothing here converts them.
//
// Pure functions, thread safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "datapath/datapath.h"
#include "proto/codec.h"

namespace vdev::daemon {

// A port's PortInfo. The daemon knows how a port was added (`type`);
// PortStats does not. The punt device has no limits of its own.
proto::PortInfo toPortInfo(const datapath::PortStats& s, proto::PortType type = proto::PortType::kNetdev);

// The counters travel as they are: both sides index them by the table's ids.
proto::PortStatsMsg toPortStatsMsg(const datapath::PortStats& s, proto::PortType type = proto::PortType::kNetdev);

// STATS_GET's reply: every port (only == "") or the one named (none if it
// does not exist: answer ENODEV then), plus the pool and the FDB size.
proto::StatsReply toStatsReply(const datapath::DatapathStats& d, std::string_view only = {});

// An FDB entry as FDB_GET shows it: MAC and VLAN out of the table's key,
// its age at now_ns (0 for a static entry).
proto::FdbEntryMsg toFdbEntryMsg(const datapath::Fdb::Entry& e, std::string port, uint64_t now_ns);

// The kernel features the datapath uses now, as KERNEL_FEATURES bits.
uint64_t kernelFeatureBits(const datapath::Datapath::KernelUse& k);

}  // namespace vdev::daemon
