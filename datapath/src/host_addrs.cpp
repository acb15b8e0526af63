// The host's own addresses (HostAddrs, host_addrs.h).
#include "datapath/host_addrs.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>

#include "datapath/fdb.h"
#include "vdev_xdp_shared.h"

namespace vdev::datapath {

namespace {

struct IfaddrsDeleter {
  void operator()(struct ifaddrs* a) const noexcept { ::freeifaddrs(a); }
};

}  // namespace

void HostAddrs::refreshMacs(const std::vector<std::array<uint8_t, 6>>& configured,
                            const std::vector<Port*>& ports) {
  mac_keys_.clear();  // keeps its capacity: no allocation once the ports are there
  for (const auto& m : configured) mac_keys_.push_back(macKey(m.data()));
  for (const Port* p : ports)
    if (!macIsZero(p->mac())) mac_keys_.push_back(macKey(p->mac()));
  std::sort(mac_keys_.begin(), mac_keys_.end());
  mac_keys_.erase(std::unique(mac_keys_.begin(), mac_keys_.end()), mac_keys_.end());
}

void HostAddrs::pushIps(const std::vector<Port*>& ports, TcPath* tc) {
  struct ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) return;  // kept as they were; tried again in a second
  const std::unique_ptr<struct ifaddrs, IfaddrsDeleter> list(raw);
  for (Port* pp : ports) {
    const bool at_tc = tc && pp->hook() == PortHook::kTc && pp->ifindex();
    if (!pp->xdp() && !at_tc) continue;
    std::vector<uint32_t> addrs;
    std::vector<std::array<uint8_t, 16>> addrs6;
    for (struct ifaddrs* a = list.get(); a; a = a->ifa_next) {
      if (!a->ifa_addr || !a->ifa_name || pp->name() != a->ifa_name) continue;
      if (a->ifa_addr->sa_family == AF_INET) {
        addrs.push_back(reinterpret_cast<const struct sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        std::array<uint8_t, 16> v6;
        std::memcpy(v6.data(), &reinterpret_cast<const struct sockaddr_in6*>(a->ifa_addr)->sin6_addr, 16);
        addrs6.push_back(v6);
      }
    }
    std::sort(addrs.begin(), addrs.end());
    if (addrs.size() > VDEV_XDP_MAX_HOST_IPS) addrs.resize(VDEV_XDP_MAX_HOST_IPS);
    std::sort(addrs6.begin(), addrs6.end());
    if (addrs6.size() > VDEV_XDP_MAX_HOST_IPS) addrs6.resize(VDEV_XDP_MAX_HOST_IPS);
    if (at_tc) {
      (void)tc->setHostIpv4(pp->ifindex(), addrs);
      (void)tc->setHostIpv6(pp->ifindex(), addrs6);
    } else {
      (void)pp->xdp()->setHostIpv4(addrs);
      (void)pp->xdp()->setHostIpv6(addrs6);
    }
  }
}

}  // namespace vdev::datapath
