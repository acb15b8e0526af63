// IP addresses and routes inside a network namespace -- a container's, set
// up by the CNI plugin after IPAM has chosen them (libnl-route-3 underneath,
// as for the rest of rtnl).
//
// One netlink socket, opened inside the namespace by a short-lived helper
// thread (base/netns.h; CAP_SYS_ADMIN) and bound to it for its whole life:
// every request acts there while the calling thread stays where it is. The
// requests themselves need CAP_NET_ADMIN in that namespace.
//
// Errors carry the kernel's errno and the operation with its subjects, as
// everywhere in rtnl ("add address 198.18.5.3/24 in netns /run/netns/c1:
// File exists"); text that is no address is EINVAL.
//
// Thread safety: one thread at a time per NetnsIp (one request at a time on
// its socket); different NetnsIp objects are independent. Control plane
// only: each call waits for the kernel's answer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "rtnl/link.h"

namespace vdev::rtnl {

// A route through one device. `dst` and `gateway` are text as `ip route`
// takes it: "0.0.0.0/0", "198.19.0.0/16", "2001:db8::/32"; the gateway in
// the same family as dst.
struct Route {
  std::string dst;
  int ifindex = 0;                     // the device; hasRoute(): 0 matches any
  std::optional<std::string> gateway;  // none: the destination is on the link
  uint32_t table = 254;                // RT_TABLE_MAIN
  std::optional<uint8_t> scope;        // default: universe with a gateway, link without
  std::optional<uint32_t> priority;    // the metric
  std::optional<uint32_t> mtu;         // RTAX_MTU
  std::optional<uint32_t> advmss;      // RTAX_ADVMSS
};

class NetnsIp {
 public:
  // A socket inside `netns` (NetnsRef::current(): the caller's own
  // namespace, no helper thread). Errors: those of NetnsRef::open(), and of
  // setns() (EPERM without CAP_SYS_ADMIN).
  static Result<NetnsIp> open(const NetnsRef& netns);

  NetnsIp(NetnsIp&&) noexcept;
  NetnsIp& operator=(NetnsIp&&) noexcept;
  ~NetnsIp();

  // The device `name` there. Errors: ENODEV (no such device), EINVAL (a bad
  // name).
  Result<LinkState> link(const std::string& name);

  // Adds `cidr` ("198.18.5.3/24", "2001:db8::3/64") to the device
  // (NLM_F_EXCL). Errors: EEXIST (already there), ENODEV, EINVAL.
  Status addAddress(int ifindex, const std::string& cidr);
  // Whether the device has exactly that address and prefix length.
  Result<bool> hasAddress(int ifindex, const std::string& cidr);

  // Adds the route (NLM_F_EXCL, protocol boot, type unicast). Errors:
  // EEXIST, ENETUNREACH (a gateway that is not on a link), ENETDOWN (the
  // device is down), EINVAL.
  Status addRoute(const Route& route);
  // Whether a route to route.dst in route.table goes through route.ifindex
  // (any device if 0) and, when route.gateway is set, via that gateway.
  // Scope, metric, MTU and MSS are not compared.
  Result<bool> hasRoute(const Route& route);

  // "netns /run/netns/c1", or "" for the caller's own namespace: how errors
  // name it.
  const std::string& describe() const;

 private:
  struct Impl;
  explicit NetnsIp(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vdev::rtnl
