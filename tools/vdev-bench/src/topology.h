// topology.h - the namespaces and devices of one vdev-bench invocation.
//
//   veth-veth:
//   netns <P>-gen          netns <P>-dut                         netns <P>-sink
//   <P>g (veth) ========== <P>a (veth)   [datapath]   <P>b (veth) ======== <P>s (veth)
//   generator: vb_gen       ingress port                egress port         sink: vb_sink_tc
//   via BPF_PROG_RUN                                                        (tc ingress) or vb_sink (XDP)
//   (or the relay: Generator::setUpRelay)
//   veth-tap:  <P>b is a tap, read by TapSink (the VM).
//   tap-veth:  <P>a is a tap: the VM (TapSink's fd) writes the frames
//              (FrameWriter); no generator namespace.
//   switch:    veth-veth plus a third port <P>c, a tap read by a TapSink
//              (the VM): two containers and a VM on one learning switch.
//
// P = "vb<pid>". The ports of the device under test live in their own
// namespace so nothing of the host (its bridge, NetworkManager, IPv6) ever
// sees a frame; IPv6 is disabled in all namespaces so no neighbour discovery
// frame mixes with the measured traffic. The containers' veths get IPv4
// addresses in 198.18.0.0/15 and static neighbour entries for each other and
// the VM (no ARP), for the latency probes. Everything is removed by the
// destructor: the taps with their fds (TapSink), then the veths, then the
// namespaces. Namespaces and devices are testkit's (testkit/netns.h,
// testkit/links.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mac.h"
#include "result.h"
#include "sink.h"
#include "sys.h"
#include "testkit/links.h"

namespace vdev::bench {

enum class Scenario { kVethVeth, kVethTap, kTapVeth, kSwitch };
const char* scenarioName(Scenario s);
bool parseScenario(const std::string& name, Scenario* out);

// One end of a latency round trip: a container (a veth in its own
// namespace, answered by a UDP socket) or the VM (a tap, answered by the
// TapSink's reader).
struct Endpoint {
  std::string name;           // "container1", "container2", "vm"
  const Netns* ns = nullptr;  // container: its namespace; the VM: none
  std::string ifname;         // container: its veth; the VM: the tap
  Mac mac{};
  uint32_t ip = 0;            // host byte order
  TapSink* tap = nullptr;     // the VM's tap
};

// A round trip measured by the latency mode: `from` (always a container)
// sends, `to` answers.
struct LatencyPair {
  std::string name;  // "container-container" or "container-vm"
  const Endpoint* from;
  const Endpoint* to;
};

class Topology {
 public:
  // bridgeNfCall: net.bridge.bridge-nf-call-{iptables,ip6tables,arptables}
  // in the DUT namespace: -1 leave as the kernel sets them, 0 or 1.
  // idlePorts: that many more ports P-i1 .. P-iN on the device under test,
  // veths whose far ends (i1 .. iN) sit idle in one namespace P-idle.
  static Result<std::unique_ptr<Topology>> create(Scenario sc, const std::string& prefix,
                                                  int bridgeNfCall = -1, uint32_t idlePorts = 0);
  // net.bridge.bridge-nf-call-iptables in the DUT namespace: "0", "1", or
  // "absent" (no br_netfilter).
  const std::string& bridgeNfCallIptables() const { return bridgeNf_; }
  ~Topology();

  Scenario scenario() const { return scenario_; }
  const std::string& prefix() const { return prefix_; }
  bool hasGenNs() const { return gen_.has_value(); }
  const Netns& genNs() const { return *gen_; }  // not in tap-veth
  const Netns& dutNs() const { return *dut_; }
  const std::string& genIf() const { return genIf_; }    // in genNs
  const std::string& portA() const { return portA_; }    // in dutNs: ingress (veth, or tap in tap-veth)
  const std::string& portB() const { return portB_; }    // in dutNs: egress (veth or tap)
  // Every port of the device under test that carries traffic, in order
  // (A, B[, C]); then the idle ones, which every datapath attaches too.
  std::vector<std::string> ports() const;
  const std::vector<std::string>& idlePorts() const { return idlePorts_; }
  bool portAIsTap() const { return scenario_ == Scenario::kTapVeth; }
  bool portBIsTap() const { return scenario_ == Scenario::kVethTap; }
  // The sink is a veth (in the sink namespace) rather than a tap.
  bool vethSink() const { return !portBIsTap(); }
  const std::string& bridgeName() const { return bridge_; }
  const std::string& sinkIf() const { return sinkIf_; }  // in the sink netns (veth sink)
  Mac genMac() const { return genMac_; }
  Mac sinkMac() const { return sinkMac_; }
  // The sink that counts the forwarded frames (on port B's far side).
  Sink& sink() { return *sink_; }
  // The VM's tap (port B in veth-tap, A in tap-veth, C in switch), or null.
  TapSink* vm() { return vm_; }
  const std::vector<LatencyPair>& latencyPairs() const { return pairs_; }

 private:
  Topology() = default;
  Status build(uint32_t idlePorts);
  Status addIdle(uint32_t count);
  Status addressContainers();
  Status waitRunning();

  Scenario scenario_ = Scenario::kVethVeth;
  int bridgeNfCall_ = -1;
  std::string bridgeNf_ = "absent";
  std::string prefix_;
  std::optional<Netns> gen_, dut_, sinkNs_, idleNs_;
  std::optional<testkit::VethPair> vethA_, vethB_;  // the generator's and the sink's (veth ends)
  std::vector<testkit::VethPair> idleVeths_;        // before idleNs_ goes
  std::vector<std::string> idlePorts_;
  std::string genIf_, portA_, portB_, portC_, sinkIf_, bridge_;
  Mac genMac_{}, sinkMac_{}, vmMac_{};
  std::unique_ptr<Sink> sink_;          // destroyed before the namespaces
  std::unique_ptr<TapSink> vmOwned_;    // the VM when it is not the sink
  TapSink* vm_ = nullptr;
  std::vector<Endpoint> endpoints_;     // stable: reserved before filling
  std::vector<LatencyPair> pairs_;
};

// A netdev and the namespace it is in.
struct NetDev {
  const Netns* ns;
  std::string name;
};
// Waits up to 5 s (in all) until every one of devs is IFF_UP and
// IFF_RUNNING (Topology::waitRunning says why); goes on with a warning for
// one that is not. EINTR on a stop request.
Status waitLinksRunning(const std::vector<NetDev>& devs);

// Namespaces and root-namespace netdevs whose name starts with prefix and
// still exist; empty after a clean teardown.
std::vector<std::string> leftovers(const std::string& prefix);

// Dotted quad of a host-order IPv4 address.
std::string formatIp(uint32_t ip);

}  // namespace vdev::bench
