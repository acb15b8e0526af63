// two_host.h - vdev-bench --two-host: two hosts with a container each,
// their switches joined by an uplink (VXLAN over an underlay, or a plain
// veth standing in for a NIC), and what real senders get across through
// each datapath, all in one invocation. See --help, two_host_topology.h
// and docs/performance.md, "Two hosts".
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace vdev::bench {

// The datapaths of --two-host, in their default order; each one on both
// hosts:
//   bridge       a Linux bridge on each host enslaving the uplink and the
//                container's veth (the reference);
//   vdevd        one vdevd per host with its defaults, the uplink on its
//                command line, the container's veth made through vdevctl;
//   tc-redirect  tc_fwd.bpf.c at tc ingress of both ports of each host:
//                bpf_redirect() out of the uplink, bpf_redirect_peer() into
//                the container (the upper bound).
const std::vector<std::string>& twoHostDatapaths();
bool isTwoHostDatapath(const std::string& name);

// Runs --two-host as o says, prints the tables or (--json) the JSON
// document on stdout. Returns the exit status: 0 when every measurement
// moved data and nothing was left behind, 1 otherwise.
int runTwoHost(const Options& o);

}  // namespace vdev::bench
