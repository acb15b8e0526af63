// Addresses and routes inside a container's network namespace, through
// libnl-route-3 (rtnetlink).
//
// The netlink socket is created inside the namespace: the (single-threaded)
// plugin setns()es there, opens the socket, and returns at once. A netlink
// socket stays bound to the namespace it was created in, so every request on
// it acts there while the process itself stays in its own namespace.
// Needs CAP_SYS_ADMIN (setns) and CAP_NET_ADMIN in the namespace: a runtime
// runs CNI plugins as root.
//
// Errors throw CniError kErrContainer with the operation and libnl's reason.
#pragma once

#include <optional>
#include <string>

#include "cni.h"

struct nl_sock;

namespace vdev::cni {

class NetnsRoute {
 public:
  // Opens `nsPath` (a netns file: /run/netns/NAME, /proc/PID/ns/net).
  explicit NetnsRoute(const std::string& nsPath);
  ~NetnsRoute();
  NetnsRoute(const NetnsRoute&) = delete;
  NetnsRoute& operator=(const NetnsRoute&) = delete;

  struct Link {
    int ifindex = 0;
    std::string mac;  // "02:..", lower case; "" without a 6-byte address
    uint32_t mtu = 0;
    bool up = false;
  };
  // The interface `name`, or nullopt if there is none.
  std::optional<Link> link(const std::string& name);

  // Adds `cidr` ("198.18.5.3/24", "2001:db8::3/64") to the interface.
  void addAddress(int ifindex, const std::string& cidr);
  bool hasAddress(int ifindex, const std::string& cidr);

  // Adds the route through the interface, via `gw` when given (else
  // route.gw; without either a link-scope route). The 1.1.0 fields (mtu,
  // advmss, priority, table, scope) are applied when set.
  void addRoute(int ifindex, const Route& route, const std::optional<std::string>& gw);
  // hasRoute with ifindex 0: through any interface.
  bool hasRoute(int ifindex, const Route& route, const std::optional<std::string>& gw);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  nl_sock* sock_ = nullptr;
};

}  // namespace vdev::cni
