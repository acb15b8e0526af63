// XdpFeatures: what a device can do for XDP, answered the way the running
// kernel allows.
//
// Linux 6.3 and later say it themselves: the netdev generic netlink family's
// "xdp-features" of a device (rtnl/netdev.h), which follow the device's state
// (a veth takes redirected frames only while its peer has NAPI: GRO on, or
// an XDP program). Before 6.3 (Debian 12's 6.1) there is no such family,
// and vdev decides by the device's driver (ETHTOOL_GDRVINFO), from what the
// drivers did before 6.3:
//  - native XDP (the `auto` hook): every driver but the virtual ones that
//    run none -- VXLAN, Geneve, a bridge, a bond, macvlan, ... and a device
//    without a driver name -- which go to the tc hook (their XDP would be
//    generic, on the skb);
//  - taking redirected frames (ndo_xdp_xmit: the kernel fast path's
//    destinations): tun always (since 4.15); veth (since 4.19) only while
//    its peer has NAPI, which before 6.3 nothing reports, so only a veth
//    vdevd made itself with GRO on its peer (PortConfig::peer_napi) -- a
//    wrong "yes" would lose every frame redirected to it (the kernel
//    refuses the whole bulk, -ENXIO), a wrong "no" costs the fast path
//    only; and the NICs known to have it (i40e, ice, ixgbe, mlx5_core,
//    bnxt_en, virtio_net, igc, igb);
//  - zero-copy AF_XDP: i40e, ice, ixgbe, mlx5_core, igc, stmmac (the bind
//    decides in the end: a refused XDP_ZEROCOPY binds in copy mode).
//
// Thread safety: const after construction; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace vdev::datapath {

class XdpFeatures {
 public:
  //  kAuto:   kNetdev where the kernel has the family, else kDriver
  //           (vdevd --xdp-features auto, the default).
  //  kNetdev: the kernel's xdp-features.
  //  kDriver: by the driver's name, as before 6.3 (vdevd --xdp-features
  //           driver: the older kernel's path, on a newer one).
  enum class Source : uint8_t { kAuto, kNetdev, kDriver };
  static const char* sourceName(Source s);  // "auto", "netdev", "driver"

  // kAuto is resolved here, once (a genetlink family lookup).
  explicit XdpFeatures(Source s = Source::kAuto);
  Source source() const { return source_; }

  // Whether the device's driver runs XDP programs itself (native XDP).
  // driver: as deviceDriver() reports it. Errors (kNetdev only): as
  // rtnl::deviceHasNativeXdp.
  Result<bool> nativeXdp(int ifindex, const std::string& driver) const;
  // Whether it takes redirected XDP frames now. peer_napi: a veth whose
  // peer vdevd knows to have NAPI (made by vdevd with GRO on); read for
  // kDriver only.
  Result<bool> takesFrames(int ifindex, const std::string& driver, bool peer_napi) const;
  // Whether it may bind AF_XDP sockets in zero-copy mode.
  Result<bool> zerocopy(int ifindex, const std::string& driver) const;

  // The driver tables (kDriver), for tests.
  static bool driverHasNativeXdp(const std::string& driver);
  static bool driverTakesFrames(const std::string& driver, bool peer_napi);
  static bool driverOffersZerocopy(const std::string& driver);

 private:
  Source source_;
};

}  // namespace vdev::datapath
