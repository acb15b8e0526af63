// Storm control, the ingress policer, anti-spoofing (the allowed source
// MAC and addresses) and the VLANs of a port (PortConfig::limits): the
// port's policy, defined once for every layer in spec/port_policy.h.
#pragma once

#include "spec/port_policy.h"

namespace vdev::datapath {

// What a port enforces (spec::PortPolicy): the datapath writes it into its
// program's map (bpf_limits.h: the allowed MAC as its macKey(), 0 for any;
// storm buckets of kStormBurstMs, the policer's of police_burst_ms).
using PortLimits = spec::PortPolicy;
// A port's own limits, where given (vdevctl port add ... storm-bcast N):
// each field absent keeps the datapath's default (DatapathConfig).
using PortLimitOptions = spec::PortPolicyOptions;

}  // namespace vdev::datapath
