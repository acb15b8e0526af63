// The host's own addresses (HostAddrs, host_addrs.h).
#include "datapath/host_addrs.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <memory>

#include "datapath/datapath.h"
#include "datapath/fdb.h"
#include "vdev_xdp_shared.h"

namespace vdev::datapath {

namespace {

struct IfaddrsDeleter {
  void operator()(struct ifaddrs* a) const noexcept { ::freeifaddrs(a); }
};

struct VlanDevice {
  std::string name, lower;
  uint32_t vid;
};

// The host's VLAN devices (eth0.10 on eth0, any name) in this namespace,
// from the 8021q module's /proc/net/vlan/config ("NAME | VID | LOWER" after
// two header lines; no file: no VLAN device, the module not loaded).
std::vector<VlanDevice> vlanDevices() {
  std::vector<VlanDevice> out;
  std::FILE* f = std::fopen("/proc/net/vlan/config", "re");
  if (!f) return out;
  char line[256];
  for (int n = 0; std::fgets(line, sizeof line, f); n++) {
    char name[64], lower[64];
    unsigned vid = 0;
    if (n >= 2 && std::sscanf(line, "%63s | %u | %63s", name, &vid, lower) == 3 && vid < 4096)
      out.push_back({name, lower, vid});
  }
  std::fclose(f);
  return out;
}

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
  const std::vector<VlanDevice> vlans = vlanDevices();
  for (Port* pp : ports) {
    const bool at_tc = tc && pp->hook() == PortHook::kTc && pp->ifindex();
    if (!pp->xdp() && !at_tc) continue;
    std::vector<uint32_t> addrs;
    std::vector<std::array<uint8_t, 16>> addrs6;
    // The host's VLAN devices on the port's device: their VIDs, and their
    // addresses with the device's own -- what Linux answers ARP for on the
    // device anyway. (At XDP the tag is in the frame; at tc the kernel took
    // the outer one off and keeps its VID beside the frame.)
    std::vector<uint32_t> vids;
    std::vector<const char*> uppers;
    for (const VlanDevice& v : vlans)
      if (v.lower == pp->name()) {
        vids.push_back(v.vid);
        uppers.push_back(v.name.c_str());
      }
    for (struct ifaddrs* a = list.get(); a; a = a->ifa_next) {
      if (!a->ifa_addr || !a->ifa_name) continue;
      if (pp->name() != a->ifa_name &&
          std::find_if(uppers.begin(), uppers.end(), [&](const char* u) { return !std::strcmp(u, a->ifa_name); }) ==
              uppers.end())
        continue;
      if (a->ifa_addr->sa_family == AF_INET) {
        addrs.push_back(reinterpret_cast<const struct sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        std::array<uint8_t, 16> v6;
        std::memcpy(v6.data(), &reinterpret_cast<const struct sockaddr_in6*>(a->ifa_addr)->sin6_addr, 16);
        addrs6.push_back(v6);
      }
    }
    // The host is a station behind the port: a device that is not a
    // guest's (a veth or a tap), or one the host has an address on. A
    // link-local IPv6 address does not count: every veth has one.
    bool routable6 = false;
    for (const auto& a : addrs6) routable6 |= !(a[0] == 0xfe && (a[1] & 0xc0) == 0x80);
    pp->setCarriesHost(!pp->isGuestEnd() || !addrs.empty() || routable6);
    std::sort(addrs.begin(), addrs.end());
    if (addrs.size() > VDEV_XDP_MAX_HOST_IPS) addrs.resize(VDEV_XDP_MAX_HOST_IPS);
    std::sort(addrs6.begin(), addrs6.end());
    if (addrs6.size() > VDEV_XDP_MAX_HOST_IPS) addrs6.resize(VDEV_XDP_MAX_HOST_IPS);
    std::sort(vids.begin(), vids.end());
    vids.erase(std::unique(vids.begin(), vids.end()), vids.end());
    if (at_tc) {
      (void)tc->setHostIpv4(pp->ifindex(), addrs);
      (void)tc->setHostIpv6(pp->ifindex(), addrs6);
      (void)tc->setHostVids(pp->ifindex(), vids);
    } else {
      (void)pp->xdp()->setHostIpv4(addrs);
      (void)pp->xdp()->setHostIpv6(addrs6);
      (void)pp->xdp()->setHostVids(vids);
    }
  }
}

void Datapath::syncHostPorts() {
  for (Port* p : ports_.active()) {
    // An uplink at the XDP hook gives vdevd its copies of the frames the
    // host and the guests both need through the punt device: set up for it
    // if there is none yet (once; without it they are switched only).
    if (p->carriesHost() && p->hook() == PortHook::kXdp && p->xdp() && !tc_ && !tc_tried_for_copies_ &&
        p->index() < kFastPathPorts) {
      tc_tried_for_copies_ = true;
      if (Status st = ensureTcPath(); !st && !std::exchange(tc_warned_, true))
        std::fprintf(stderr, "vdevd: warning: no skb path (%s); frames the host and the guests both need are "
                             "switched, not given to the host\n",
                     st.error().message().c_str());
    }
    p->applyHost(tc_.get());
  }
}

}  // namespace vdev::datapath
