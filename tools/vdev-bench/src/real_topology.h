// real_topology.h - the namespaces and devices of one vdev-bench --real
// measurement: two containers and a VM on the device under test.
//
//   netns <P>-a             netns <P>-dut                          netns <P>-b
//   "container A"                                                  "container B"
//   eth0 (veth) ========== <P>a (veth)  [datapath]  <P>b (veth) ========== eth0 (veth)
//                                           |
//                                       <P>t (tap) -- vdev-vm guest -- eth0 (tap) in netns <P>-g
//                                                      (the VM: its kernel is the namespace's)
//
// P = "vb<pid>". The containers are namespaces on veths made here, with the
// offloads a veth has by default (TSO, checksum offload: nothing is
// changed); their senders are iperf3 and sockets in them. The VM is
// vdev-vm's guest mode: it opens the host's tap <P>t as QEMU does by
// default (IFF_VNET_HDR, TUNSETOFFLOAD) and relays the kernel stack of
// netns <P>-g through it, so the "guest" sends TCP with partial checksums
// and 64 KB GSO frames. Every namespace has IPv6 off and static neighbour
// entries for the others (no ARP, no neighbour discovery: only the measured
// traffic is on the wire). Addresses 198.18.0.0/15, locally administered
// MACs. The destructor stops the VM and deletes the namespaces, which takes
// every device along.
//
// With idle ports (--idle-ports N), N more containers, netns <P>-i1 ..
// <P>-iN, each with its eth0 on a veth whose host end <P>i1 .. <P>iN is in
// the DUT namespace, made as A's and B's are; up, IPv6 off, no address:
// nothing is ever sent from or to them. A datapath attaches them or not.
//
// With a QEMU guest (the qemu scenarios), QEMU runs in the DUT namespace
// and creates the tap <P>q there itself, opened with QEMU's default
// vnet_hdr (the guest's virtio-net gets checksum and segmentation
// offloads), booting scripts/vm-guest-image.sh's guest (testkit's
// QemuGuest): its own kernel, its own iperf3 -s. The containers have a
// permanent neighbour entry for it; it resolves theirs with ARP. One boot
// serves every datapath of an invocation: each attaches the tap and
// releases it when it stops.
//
// forXdpHook: every container's eth0 as vdevd makes it for a port at its
// XDP hook (vdevctl port add ... create, rtnl::VethSpec): GRO on (NAPI, so
// that XDP frames redirected into the host end are delivered) and TX
// checksum offload off (a CHECKSUM_PARTIAL frame would reach vdevd through
// XDP unfinished; off, TSO goes too). A veth made otherwise forwards nothing
// but pings at that hook.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frame.h"
#include "result.h"
#include "sys.h"
#include "testkit/links.h"
#include "testkit/process.h"
#include "testkit/qemu_guest.h"

namespace vdev::bench {

// A container or the VM: a namespace with one interface, eth0; or the QEMU
// guest (no namespace here: its iperf3 -s runs in it).
struct Station {
  std::string name;  // "A", "B", "guest", "qemu"
  std::optional<Netns> ns;
  std::string port;  // its port on the device under test, in the DUT namespace
  bool portIsTap = false;
  bool inQemu = false;  // the QEMU guest
  Mac mac{};
  uint32_t ip = 0;   // host byte order
};

// The QEMU guest of a topology: its image and how QEMU runs it.
struct QemuSpec {
  testkit::GuestImage image;
  std::string accel = "tcg,thread=multi";  // -accel
  std::string cpu = "max";                 // -cpu
  bool vhost = false;                      // vhost=on
};

class RealTopology {
 public:
  // mtu: of the containers' eth0 and their ports. withGuest: also the VM
  // (vdev-vm at vdevVmPath; its tap keeps MTU 1500). vdev-vm's output goes
  // to vmLogPath. idlePorts: that many idle containers. qemu: also the
  // QEMU guest, booted as it says (an Error with its console if it does
  // not come up).
  static Result<std::unique_ptr<RealTopology>> create(const std::string& prefix, uint32_t mtu, bool withGuest,
                                                      const std::string& vdevVmPath, const std::string& vmLogPath,
                                                      uint32_t idlePorts = 0, bool forXdpHook = false,
                                                      const QemuSpec* qemu = nullptr);
  RealTopology(const RealTopology&) = delete;
  RealTopology& operator=(const RealTopology&) = delete;
  ~RealTopology();

  const std::string& prefix() const { return prefix_; }
  const Netns& dut() const { return *dut_; }
  uint32_t mtu() const { return mtu_; }
  const Station& a() const { return *stations_[0]; }
  const Station& b() const { return *stations_[1]; }
  const Station* guest() const { return vmStation_; }
  const Station* qemuStation() const { return qemuStation_; }
  // The booted QEMU guest, or null.
  const testkit::QemuGuest* qemu() const { return qemu_.get(); }
  const std::vector<std::unique_ptr<Station>>& stations() const { return stations_; }
  // Every port of the device under test: <P>a, <P>b[, <P>t][, <P>q].
  std::vector<std::string> ports() const;
  // The idle containers' ports, <P>i1 .. <P>iN, in the DUT namespace.
  const std::vector<std::string>& idlePorts() const { return idlePorts_; }
  std::string bridgeName() const { return prefix_ + "br"; }
  // Stops the VM and returns what vdev-vm counted (its JSON: frames, GSO
  // frames, partial checksums in each direction), or "" without a VM.
  std::string stopGuest();

 private:
  RealTopology() = default;
  Status build(bool withGuest, const std::string& vdevVmPath, const std::string& vmLogPath, uint32_t idlePorts,
               const QemuSpec* qemu);
  Status bootQemu(const QemuSpec& spec);
  Status addIdle(uint32_t count);
  Status prepareContainerEnd(const Netns& ns);
  Status addStation(const std::string& name, const std::string& nsSuffix, const std::string& port, Mac mac,
                    uint32_t ip);

  std::string prefix_;
  uint32_t mtu_ = 1500;
  bool forXdpHook_ = false;
  std::optional<Netns> dut_;
  std::vector<std::unique_ptr<Station>> stations_;  // A, B[, guest][, qemu]
  const Station* vmStation_ = nullptr;               // vdev-vm's guest
  const Station* qemuStation_ = nullptr;
  std::unique_ptr<testkit::QemuGuest> qemu_;         // stopped before the namespaces go
  std::vector<testkit::VethPair> veths_;             // the containers': deleted before the namespaces
  std::vector<Netns> idleNs_;                        // the idle containers
  std::vector<testkit::VethPair> idleVeths_;         // theirs, deleted before their namespaces
  std::vector<std::string> idlePorts_;
  std::optional<testkit::Child> vm_;                 // vdev-vm guest: stopped before the namespaces go
  std::string vmLog_;
  std::string guestCounts_;
};

}  // namespace vdev::bench
