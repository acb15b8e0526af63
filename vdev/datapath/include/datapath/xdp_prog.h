// XdpObject and XdpProgram: vdev's XDP program (bpf/vdev_xdp.bpf.c) on the
// ports at the XDP hook.
//
// One program object for every port: XdpObject loads the program and its
// maps once (at the first port that needs them) and each port's
// XdpProgram attaches that same program to its device and owns the
// device's entries in the shared maps -- found by the frame's ingress
// ifindex: the port's fast-path index and flags, its counter slot, its
// sockets' keys, the host's addresses on the device. A port then costs
// map entries and its AF_XDP sockets, not a program and its own maps (14
// descriptors a port when each port loaded its own).
//
// Attached through libxdp. On kernels where libxdp's multi-program
// dispatcher cannot load (freplace refused), libxdp attaches the single
// program directly; both ways work here.
//
// Loaded at the first port and unloaded when the last one is gone.
// Ownership: XdpObject owns the BPF skeleton; it must outlive every
// XdpProgram attached from it. An XdpProgram's destructor detaches the
// program from its device (if the device still exists) and then clears the
// device's map entries. Not thread safe; control-plane only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "datapath/limits.h"
#include "spec/port_spec.h"

struct vdev_xdp;

namespace vdev::datapath {

// kNone: no program; a port asks for kAuto, kNative or kGeneric.
using spec::XdpMode;  // spec/port_spec.h
using spec::xdpModeName;

struct XdpProgCounters {
  uint64_t pass = 0, redirect = 0, no_socket = 0, fast = 0;  // fast: kernel fast path
};

// What a port's program dropped for its limits (datapath/limits.h):
// drops.storm_bcast, storm_mcast, police, spoof_mac, spoof_ip, ra_guard and
// dhcp_guard.
struct LimitDrops {
  uint64_t bcast = 0, mcast = 0, police = 0, spoof_mac = 0, spoof_ip = 0, ra_guard = 0, dhcp_guard = 0;
};

class FastPath;

// The kernel fast path as one port's program sees it (see fast_path.h).
struct XdpFastConfig {
  const FastPath* fast = nullptr;  // null: off
  uint32_t port_index = 0;         // the port's index (Port::index()): its rows in the shared maps
  bool rx = true;                  // false: this program sends nothing on the fast path (fast-rx off)
};

class XdpProgram;

class XdpObject {
 public:
  // fast: the kernel fast path whose maps the program shares (null: off).
  explicit XdpObject(const FastPath* fast);
  ~XdpObject();
  XdpObject(const XdpObject&) = delete;
  XdpObject& operator=(const XdpObject&) = delete;

  bool loaded() const { return skel_ != nullptr; }
  // Loaded frags-aware (xdp.frags; true until a load said otherwise): a
  // frame of several buffers -- a jumbo frame on veth, the punt device's --
  // reaches it whole.
  bool frags() const { return frags_; }
  // Ports at the XDP hook it has room for beyond those attached
  // (VDEV_XDP_MAX_PORTS in all).
  uint32_t freePorts() const;
  // The program's counters and limit drops of a counter slot
  // (XdpProgram::slot()), summed over the CPUs: map lookups only, no state
  // of this object but the map fds fixed at load, so any thread may call
  // them (the statistics read them on the control thread: see
  // Datapath::stats()).
  XdpProgCounters counters(uint32_t slot) const;
  LimitDrops limitDrops(uint32_t slot) const;

 private:
  friend class XdpProgram;
  struct SkelDeleter {
    void operator()(struct ::vdev_xdp* s) const noexcept;
  };
  Status load();
  int progFd() const;
  // A counter slot; a range of n socket keys (first fit).
  Result<uint32_t> takeSlot();
  void putSlot(uint32_t slot);
  Result<uint32_t> takeXsks(uint32_t n);
  void putXsks(uint32_t base, uint32_t n);

  const FastPath* fast_;
  std::unique_ptr<struct ::vdev_xdp, SkelDeleter> skel_;
  std::vector<bool> slots_;  // by slot: taken
  std::vector<bool> xsks_;   // by xsks_map key: taken
  uint32_t slots_used_ = 0;
  int ncpu_ = 1;
  bool frags_ = true;
};

class XdpProgram {
 public:
  // Attaches obj's program to ifindex (loading obj first if it is not yet),
  // with room for nqueues RX queues' sockets. kAuto tries native first and
  // falls back to generic. If another program is attached: EEXIST unless
  // force; a program named like ours (left by a vdevd that was killed) is
  // always replaced. prepare (optional) runs after the device's map
  // entries exist and before the program is attached: fill them there
  // (host MACs, sockets).
  static Result<std::unique_ptr<XdpProgram>> attach(XdpObject& obj, int ifindex, const std::string& ifname,
                                                    XdpMode mode, bool force, uint32_t nqueues,
                                                    const std::function<Status(XdpProgram&)>& prepare = {},
                                                    const XdpFastConfig& fast = {});
  ~XdpProgram();
  XdpProgram(const XdpProgram&) = delete;
  XdpProgram& operator=(const XdpProgram&) = delete;

  XdpMode mode() const { return mode_; }  // kNative or kGeneric: the mode in use
  // Its counter slot in the object's maps (XdpObject::counters/limitDrops);
  // another port's once this attachment is gone.
  uint32_t slot() const { return slot_; }
  XdpObject& object() const { return obj_; }
  // Frames to the device's own MAC (6 bytes) go to the host stack.
  Status setOwnMac(const uint8_t mac[6]);
  // Frames to mac (6 bytes), a host MAC besides the device's own, go to
  // the host stack too.
  Status addHostMac(const uint8_t mac[6]);
  // ARP requests for these IPv4 addresses (network order) go to the host
  // stack: the set replaces the previous one.
  Status setHostIpv4(const std::vector<uint32_t>& addrs);
  // IPv6 Neighbour Solicitations for these addresses (network order) go to
  // the host stack: the set replaces the previous one.
  Status setHostIpv6(const std::vector<std::array<uint8_t, 16>>& addrs);
  // The VIDs of the host's VLAN devices on the port's device (eth0.10 on
  // eth0): a tagged ARP request or Neighbour Solicitation of one of them for
  // a host address goes to the host stack, whose VLAN device answers. The
  // set (sorted) replaces the previous one.
  Status setHostVids(const std::vector<uint32_t>& vids);
  // What the host is to the port (VDEV_PORT_HOST, VDEV_PORT_COPY in
  // bpf/vdev_xdp_shared.h): which multicast and broadcast frames go to the
  // host stack (bpf/vdev_frame_class.h). 0 at load: none of them.
  Status setPortFlags(uint32_t flags);
  // The VLAN of the port's untagged frames on the fast path and whether it
  // is an access port (Port::fastVid(), vdev_xdp_port.vid). 1 at load.
  Status setVlan(uint16_t vid, bool access);
  // Registers an AF_XDP socket for RX queue q (-errno on failure).
  Status setSocket(uint32_t queue, int xsk_fd);
  Status clearSocket(uint32_t queue);
  XdpProgCounters counters() const;
  // The port's broadcast and multicast storm control and its policer
  // (PortLimits; unknown unicast is vdevd's), from now on, its buckets
  // full; and what the program dropped for them since attach().
  Status setLimits(const PortLimits& l);
  LimitDrops limitDrops() const;
  // Detaches now (idempotent). A vanished device is not an error.
  void detach();
  // The device was deleted (its program with it): never detach, since the
  // ifindex may already name another device, and clear the device's map
  // entries now, before it can.
  void forget();

 private:
  explicit XdpProgram(XdpObject& obj) : obj_(obj) {}
  Status writePort();
  void clearEntries();

  XdpObject& obj_;
  int ifindex_ = 0;
  std::string ifname_;
  XdpMode mode_ = XdpMode::kNative;
  bool attached_ = false;
  bool entries_ = false;  // the device's entries in obj_'s maps may exist
  uint32_t slot_ = ~0u, xsk_base_ = ~0u, nqueues_ = 0;
  uint32_t port_index_ = 0;
  bool fast_rx_ = false;
  std::vector<uint64_t> host_macs_;
  std::vector<uint32_t> host_ipv4_;
  std::vector<uint32_t> host_vids_;
  std::vector<std::array<uint8_t, 16>> host_ipv6_;
  uint32_t port_flags_ = 0;
  uint16_t vid_ = 1;  // kVidDefault
  bool access_ = false;
  uint64_t own_mac_ = ~0ull;  // VDEV_XDP_NO_MAC
};

// Quiets libbpf/libxdp to warnings (called once at start).
void setupBpfLogging(bool verbose);

// While one lives, libbpf's and libxdp's messages on this thread are
// dropped (unless verbose): for calls whose failure is an answer, such as a
// tc query on a device without a clsact qdisc ("Parent Qdisc doesn't
// exists"). Not nested inside another capture.
class BpfQuiet {
 public:
  BpfQuiet();
  ~BpfQuiet();
  BpfQuiet(const BpfQuiet&) = delete;
  BpfQuiet& operator=(const BpfQuiet&) = delete;

 private:
  std::string sink_;
  bool on_ = false;
};

}  // namespace vdev::datapath
