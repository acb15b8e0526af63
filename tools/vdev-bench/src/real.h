// real.h - vdev-bench --real: what real senders (the kernel stacks of
// containers and of a VM, with their default offloads) get through each
// datapath, all in one invocation. See --help and docs/performance.md,
// "Real senders".
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace vdev::bench {

// The datapaths of --real, in the order each run measures them:
//   bridge       the Linux bridge (the reference);
//   tc-redirect  a tc ingress program per port that redirects each skb to
//                its destination's port (bpf_redirect_peer into a veth,
//                bpf_redirect to a tap): the upper bound;
//   vdevd        vdevd with its defaults: the skb path, the kernel fast path;
//   vdevd-own    vdevd --no-fast-path: every frame through vdevd's AF_XDP
//                path by way of the punt device.
// isRealDatapath also takes one that runs only when asked for:
//   bridge-wire  the bridge with TSO and GSO off on its ports: receivers
//                get wire frames, as from vdevd-own (that path's ceiling).
const std::vector<std::string>& realDatapaths();
bool isRealDatapath(const std::string& name);
// Every name isRealDatapath takes, as "bridge, tc-redirect, ...".
std::string realDatapathNames();
// The scenarios of --real (tcp-a-b, ..., rtt-a-vm), for --only: one of
// them, and all of them as "tcp-a-b, tcp-b-a, ...".
bool isRealScenario(const std::string& id);
std::string realScenarioNames();

// Runs --real as o says (o.datapaths are real datapaths), prints the tables
// or (--json) the JSON document on stdout. Returns the exit status: 0 when
// every measurement that was not skipped moved data and nothing was left
// behind, 1 otherwise.
int runReal(const Options& o);

}  // namespace vdev::bench
