// XdpProgram: vdev's XDP program on one netdev (load, attach, maps, detach).
//
// Attached through libxdp. On kernels where libxdp's multi-program
// dispatcher cannot load (freplace refused), libxdp attaches the single
// program directly; both ways work here.
//
// Ownership: the object owns the BPF skeleton and the libxdp program handle
// (the handle is closed before the skeleton is destroyed); the destructor
// detaches the program from the device (if it still exists).
// Not thread safe; control-plane only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

struct vdev_xdp;
struct xdp_program;

namespace vdev::datapath {

enum class XdpMode { kAuto, kNative, kGeneric };
const char* xdpModeName(XdpMode m);

struct XdpProgCounters {
  uint64_t pass = 0, redirect = 0, no_socket = 0, fast = 0;  // fast: kernel fast path
};

class FastPath;

// The kernel fast path as one port's program sees it (see fast_path.h).
struct XdpFastConfig {
  const FastPath* fast = nullptr;  // null: off
  uint32_t port_index = 0;         // the port's index (Port::index()): its rows in the shared maps
  bool rx = true;                  // false: this program sends nothing on the fast path (fast-rx off)
};

class XdpProgram {
 public:
  // Loads and attaches to ifindex. kAuto tries native first and falls back to
  // generic. If another program is attached: EEXIST unless force; a program
  // named like ours (left by a vdevd that was killed) is always replaced.
  // prepare (optional) runs after the program is loaded and before it is
  // attached: fill its maps there (host MACs, sockets).
  static Result<std::unique_ptr<XdpProgram>> attach(int ifindex, const std::string& ifname,
                                                    XdpMode mode, bool force,
                                                    const std::function<Status(XdpProgram&)>& prepare = {},
                                                    const XdpFastConfig& fast = {});
  ~XdpProgram();
  XdpProgram(const XdpProgram&) = delete;
  XdpProgram& operator=(const XdpProgram&) = delete;

  XdpMode mode() const { return mode_; }  // kNative or kGeneric: the mode in use
  int xsksMapFd() const;
  // Frames to mac (6 bytes) go to the host stack.
  Status addHostMac(const uint8_t mac[6]);
  // ARP requests for these IPv4 addresses (network order) go to the host
  // stack: the set replaces the previous one.
  Status setHostIpv4(const std::vector<uint32_t>& addrs);
  // IPv6 Neighbour Solicitations for these addresses (network order) go to
  // the host stack: the set replaces the previous one.
  Status setHostIpv6(const std::vector<std::array<uint8_t, 16>>& addrs);
  // What the host is to the port (VDEV_PORT_HOST, VDEV_PORT_COPY in
  // bpf/vdev_xdp_shared.h): which multicast and broadcast frames go to the
  // host stack (bpf/vdev_frame_class.h). 0 at load: none of them.
  Status setPortFlags(uint32_t flags);
  // Registers an AF_XDP socket for RX queue q (-errno on failure).
  Status setSocket(uint32_t queue, int xsk_fd);
  Status clearSocket(uint32_t queue);
  XdpProgCounters counters() const;
  // Detaches now (idempotent). A vanished device is not an error.
  void detach();
  // The device was deleted (its program with it): never detach, since the
  // ifindex may already name another device.
  void forget() { attached_ = false; }

 private:
  XdpProgram() = default;
  struct SkelDeleter {
    void operator()(struct ::vdev_xdp* s) const noexcept;
  };
  struct ProgDeleter {
    void operator()(struct ::xdp_program* p) const noexcept;
  };
  int ifindex_ = 0;
  std::string ifname_;
  XdpMode mode_ = XdpMode::kNative;
  // Declared in this order: the libxdp handle is closed before the skeleton
  // it was made from is destroyed.
  std::unique_ptr<struct ::vdev_xdp, SkelDeleter> skel_;
  std::unique_ptr<struct ::xdp_program, ProgDeleter> prog_;
  bool attached_ = false;
  std::vector<uint32_t> host_ipv4_;
  std::vector<std::array<uint8_t, 16>> host_ipv6_;
  uint32_t port_flags_ = 0;
};

// Quiets libbpf/libxdp to warnings (called once at start).
void setupBpfLogging(bool verbose);

}  // namespace vdev::datapath
