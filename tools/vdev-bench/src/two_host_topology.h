// two_host_topology.h - the namespaces and devices of one vdev-bench
// --two-host measurement: two hosts, one container on each, the hosts'
// switches joined by an uplink.
//
//   netns <P>-ca     netns <P>-ha                        netns <P>-hb                      netns <P>-cb
//   "container A"    "host A"                            "host B"                          "container B"
//   eth0 (veth) ==== ctr0 [datapath] up0 ~~ uplink ~~ up0 [datapath] ctr0 ==== eth0 (veth)
//
//   uplink vxlan: up0 is a VXLAN device on each host (id 42, dstport 4789,
//                 local/remote over the underlay veth ul0 between the
//                 hosts, 198.19.97.1 <-> 198.19.97.2/24), as flannel's
//                 VXLAN backend joins bridges; the containers at its MTU,
//                 1450.
//   uplink veth:  up0 is the two ends of one veth, a NIC and its cable;
//                 the containers at MTU 1500.
//
// P = "vb<pid>". Hosts and containers are namespaces with IPv6 off
// (testkit). The container's veth is made when the datapath is set up:
// by addContainerVeths() (ip link add ctr0 mtu M type veth peer name eth0
// netns C, as a container runtime makes it: default offloads) or by the
// datapath itself (vdevd: vdevctl port add ... create). finishContainers()
// then gives eth0 its address (198.18.97.1 and .2/24) and a permanent
// neighbour entry for the other container, as the underlay has for the
// other host: no ARP, no neighbour discovery. MACs are locally
// administered. The destructor deletes the namespaces, which takes every
// device along.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "real_topology.h"
#include "result.h"
#include "sys.h"
#include "testkit/links.h"

namespace vdev::bench {

enum class Uplink { kVxlan, kVeth };
const char* uplinkName(Uplink u);              // "vxlan", "veth"
bool parseUplink(const std::string& name, Uplink* out);
uint32_t containerMtu(Uplink u);               // 1450, 1500
std::string describeUplink(Uplink u);          // for the report

class TwoHostTopology {
 public:
  // The devices' names on each host.
  static constexpr const char* kUplinkDev = "up0";    // the uplink
  static constexpr const char* kUnderlayDev = "ul0";  // the underlay veth (vxlan)
  static constexpr const char* kPortDev = "ctr0";     // the container's veth, host end

  static Result<std::unique_ptr<TwoHostTopology>> create(const std::string& prefix, Uplink uplink);
  TwoHostTopology(const TwoHostTopology&) = delete;
  TwoHostTopology& operator=(const TwoHostTopology&) = delete;
  ~TwoHostTopology();

  Uplink uplink() const { return uplink_; }
  uint32_t mtu() const { return containerMtu(uplink_); }
  // Host 0 (A) and 1 (B), and the container on each: its namespace, MAC and
  // address; port is kPortDev (in host i).
  const Netns& host(int i) const { return *hosts_[i]; }
  const Station& container(int i) const { return *containers_[i]; }

  // Each container's veth as a container runtime makes it (see above).
  Status addContainerVeths();
  // Once each container's eth0 exists: MTU, up, address, the neighbour
  // entry; then waits for every link to run.
  Status finishContainers();

 private:
  TwoHostTopology() = default;
  Status build();

  std::string prefix_;
  Uplink uplink_ = Uplink::kVxlan;
  std::optional<Netns> hosts_[2];
  std::unique_ptr<Station> containers_[2];
  std::optional<testkit::VethPair> underlay_, uplinkVeth_;  // deleted before the namespaces
  std::vector<testkit::VethPair> veths_;                     // the containers', when made here
};

}  // namespace vdev::bench
