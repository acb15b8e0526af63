// Devices for tests and benchmarks: veth pairs (a container's interface and
// its host end), taps held the way QEMU holds them (the test process is the
// VM), AF_PACKET sockets inside a namespace, and what `ip -j link` says about
// a device.
//
// Devices are made with iproute2 (so a failure reads like one) and get IPv6
// off (see netns.h). A `const Netns*` that is null means the calling thread's
// namespace. Owners delete what they made at destruction, pass or fail, and
// never throw; not thread safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "base/mac.h"
#include "base/result.h"
#include "testkit/netns.h"

namespace vdev::testkit {

struct VethSpec {
  std::string host_name;            // the end a datapath attaches to
  std::string peer_name;            // the container's interface
  const Netns* host_ns = nullptr;
  const Netns* peer_ns = nullptr;   // null: this process's namespace (named by pid)
  std::optional<Mac> host_mac;      // unset: the kernel's random one
  std::optional<Mac> peer_mac;
  int mtu = 0;                      // both ends; 0: the kernel's default
};

// A veth pair, both ends up with IPv6 off and no addresses. The namespaces
// must outlive it.
class VethPair {
 public:
  // A host end of the same name left by a killed process is deleted first.
  static Result<VethPair> create(const VethSpec& spec);
  VethPair(VethPair&& o) noexcept;
  VethPair& operator=(VethPair&&) = delete;
  VethPair(const VethPair&) = delete;
  ~VethPair();  // remove(), unless the pair went with a namespace already

  const std::string& hostName() const { return host_; }
  const std::string& peerName() const { return peer_; }
  // Deletes both ends now. Later calls (and the destructor) do nothing.
  Status remove();

 private:
  VethPair(std::string host, std::string peer, const Netns* hostNs)
      : host_(std::move(host)), peer_(std::move(peer)), hostNs_(hostNs) {}
  std::string host_, peer_;
  const Netns* hostNs_;
  bool removed_ = false;
};

struct TapSpec {
  std::string name;
  const Netns* ns = nullptr;  // where the device is made
  std::optional<Mac> mac;     // the tap netdev's (host side) MAC; unset: random
  int mtu = 0;                // 0: the kernel's default
  bool up = true;
};

// A tap opened like QEMU's `-netdev tap` (without vnet_hdr): /dev/net/tun,
// TUNSETIFF IFF_TAP | IFF_NO_PI, non-blocking. The holder of fd() is the VM:
// what it writes the host receives on the tap, what the host transmits it
// reads. Not persistent: closing the fd deletes the device, as when a VM
// exits. Move-only.
class Tap {
 public:
  static Result<Tap> open(const TapSpec& spec);
  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }
  // Closes the fd now: the device disappears.
  void close() { fd_.reset(); }

 private:
  Tap(std::string name, FileDesc fd) : name_(std::move(name)), fd_(std::move(fd)) {}
  std::string name_;
  FileDesc fd_;
};

// An AF_PACKET SOCK_RAW socket bound to `ifname`, created inside ns so it
// stays there, non-blocking. receive: bound for every protocol, blind to its
// own outgoing frames (PACKET_IGNORE_OUTGOING), 16 MiB buffers both ways;
// otherwise bound with protocol 0: it sends and never receives.
Result<FileDesc> openPacketSocket(const std::string& ifname, const Netns* ns, bool receive);

// A device's MAC (SIOCGIFHWADDR).
Result<Mac> deviceMac(const std::string& ifname, const Netns* ns = nullptr);

// `ip [-n NS] -s -j link show dev IFNAME`.
struct LinkInfo {
  int ifindex = 0;
  int mtu = 0;
  Mac address{};
  bool up = false;        // administratively (IFF_UP)
  bool has_xdp = false;   // an "xdp" object: an XDP program is attached
  uint64_t rx_packets = 0, rx_bytes = 0, rx_dropped = 0;
  uint64_t tx_packets = 0, tx_bytes = 0, tx_dropped = 0;
  nlohmann::json raw;     // the whole output: an array of one link
};
Result<LinkInfo> linkInfo(const std::string& ifname, const Netns* ns = nullptr);

}  // namespace vdev::testkit
