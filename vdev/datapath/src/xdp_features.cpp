// What a device can do for XDP (XdpFeatures, xdp_features.h).
#include "datapath/xdp_features.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "rtnl/netdev.h"

namespace vdev::datapath {

namespace {

// Drivers of virtual devices that run no XDP themselves (an XDP program
// there is generic: on the skb, whose GSO and checksum state it loses).
// What ETHTOOL_GDRVINFO names them; a device without a name is one too.
constexpr std::array<std::string_view, 18> kSkbOnlyDrivers = {
    "vxlan",  "geneve", "bridge", "bonding", "team",        "dummy", "macvlan",   "macvtap", "ipvlan",
    "ipvtap", "vrf",    "ifb",    "ip_gre",  "ip6_gre",     "nlmon", "wireguard", "gtp",     "openvswitch"};

// NIC drivers with ndo_xdp_xmit before Linux 6.3 (XDP_REDIRECT targets).
constexpr std::array<std::string_view, 8> kXmitDrivers = {"i40e",       "ice", "ixgbe", "mlx5_core",
                                                          "bnxt_en",    "virtio_net", "igc", "igb"};

// NIC drivers with zero-copy AF_XDP before Linux 6.3.
constexpr std::array<std::string_view, 6> kZerocopyDrivers = {"i40e", "ice", "ixgbe", "mlx5_core", "igc",
                                                              "stmmac"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& list, const std::string& driver) {
  return std::find(list.begin(), list.end(), std::string_view(driver)) != list.end();
}

}  // namespace

const char* XdpFeatures::sourceName(Source s) {
  switch (s) {
    case Source::kAuto: return "auto";
    case Source::kNetdev: return "netdev";
    case Source::kDriver: return "driver";
  }
  return "?";
}

XdpFeatures::XdpFeatures(Source s) : source_(s) {
  if (source_ == Source::kAuto) source_ = rtnl::hasNetdevFamily() ? Source::kNetdev : Source::kDriver;
}

bool XdpFeatures::driverHasNativeXdp(const std::string& driver) {
  return !driver.empty() && !listed(kSkbOnlyDrivers, driver);
}

bool XdpFeatures::driverTakesFrames(const std::string& driver, bool peer_napi) {
  if (driver == "tun") return true;
  if (driver == "veth") return peer_napi;
  return listed(kXmitDrivers, driver);
}

bool XdpFeatures::driverOffersZerocopy(const std::string& driver) { return listed(kZerocopyDrivers, driver); }

Result<bool> XdpFeatures::nativeXdp(int ifindex, const std::string& driver) const {
  if (source_ == Source::kDriver) return driverHasNativeXdp(driver);
  return rtnl::deviceHasNativeXdp(ifindex);
}

Result<bool> XdpFeatures::takesFrames(int ifindex, const std::string& driver, bool peer_napi) const {
  if (source_ == Source::kDriver) return driverTakesFrames(driver, peer_napi);
  return rtnl::deviceTakesXdpFrames(ifindex);
}

Result<bool> XdpFeatures::zerocopy(int ifindex, const std::string& driver) const {
  if (source_ == Source::kDriver) return driverOffersZerocopy(driver);
  return rtnl::deviceOffersXskZerocopy(ifindex);
}

}  // namespace vdev::datapath
