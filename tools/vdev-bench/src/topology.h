// topology.h - the namespaces and devices of one vdev-bench invocation.
//
//   netns <P>-gen          netns <P>-dut                         netns <P>-sink
//   <P>g (veth) ========== <P>a (veth)   [datapath]   <P>b (veth) ======== <P>s (veth)
//   generator: vb_gen       ingress port                egress port         sink: vb_sink_tc
//                                                                            (tc ingress) or vb_sink (XDP)
//   via BPF_PROG_RUN                                    -- or, veth-tap: --
//                                                       <P>b (tap) -> read() by TapSink
//
// P = "vb<pid>". The ports of the device under test live in their own
// namespace so nothing of the host (its bridge, NetworkManager, IPv6) ever
// sees a frame; IPv6 is disabled in all three so no neighbour discovery
// frame mixes with the measured traffic. Everything is removed by the
// destructor: the tap with its fd (TapSink), the veths with their namespaces.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frame.h"
#include "result.h"
#include "sink.h"
#include "sys.h"

namespace vdev::bench {

enum class Scenario { kVethVeth, kVethTap };
const char* scenarioName(Scenario s);

class Topology {
 public:
  // sinkMode: how the veth-veth sink receives (ignored for veth-tap).
  // bridgeNfCall: net.bridge.bridge-nf-call-{iptables,ip6tables,arptables}
  // in the DUT namespace: -1 leave as the kernel sets them, 0 or 1.
  static Result<std::unique_ptr<Topology>> create(Scenario sc, SinkMode sinkMode, const std::string& prefix,
                                                  int bridgeNfCall = -1);
  // net.bridge.bridge-nf-call-iptables in the DUT namespace: "0", "1", or
  // "absent" (no br_netfilter).
  const std::string& bridgeNfCallIptables() const { return bridgeNf_; }
  ~Topology();

  Scenario scenario() const { return scenario_; }
  const std::string& prefix() const { return prefix_; }
  const Netns& genNs() const { return *gen_; }
  const Netns& dutNs() const { return *dut_; }
  const std::string& genIf() const { return genIf_; }    // in genNs
  const std::string& portA() const { return portA_; }    // in dutNs: ingress
  const std::string& portB() const { return portB_; }    // in dutNs: egress (veth or tap)
  const std::string& bridgeName() const { return bridge_; }
  const std::string& sinkIf() const { return sinkIf_; }  // in the sink netns (veth-veth)
  Mac genMac() const { return genMac_; }
  Mac sinkMac() const { return sinkMac_; }
  Sink& sink() { return *sink_; }

  // Names of everything this topology created (for the leftover check).
  std::vector<std::string> netnsNames() const;

 private:
  Topology() = default;
  Status build();
  Status waitRunning();

  Scenario scenario_ = Scenario::kVethVeth;
  SinkMode sinkMode_ = SinkMode::kTc;
  int bridgeNfCall_ = -1;
  std::string bridgeNf_ = "absent";
  std::string prefix_;
  std::optional<Netns> gen_, dut_, sinkNs_;
  std::string genIf_, portA_, portB_, sinkIf_, bridge_;
  Mac genMac_{}, sinkMac_{};
  std::unique_ptr<Sink> sink_;  // destroyed before the namespaces
};

// Namespaces and root-namespace netdevs whose name starts with prefix and
// still exist; empty after a clean teardown.
std::vector<std::string> leftovers(const std::string& prefix);

}  // namespace vdev::bench
