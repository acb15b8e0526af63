// Addresses and routes in a container's namespace: see netns_route.h.
#include "netns_route.h"

#include <fcntl.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/fd.h"

namespace vdev::cni {

namespace {

// Owners of libnl objects (STYLE: every kernel resource has an owner).
struct AddrPut {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct RtAddrPut {
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
};
struct RoutePut {
  void operator()(rtnl_route* r) const { rtnl_route_put(r); }
};
struct LinkPut {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct CacheFree {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using AddrPtr = std::unique_ptr<nl_addr, AddrPut>;

[[noreturn]] void fail(const std::string& what, int nlerr) {
  throw CniError(kErrContainer, what + ": " + nl_geterror(nlerr));
}

AddrPtr parseAddr(const std::string& text, int family, const std::string& what) {
  nl_addr* a = nullptr;
  if (const int err = nl_addr_parse(text.c_str(), family, &a); err < 0)
    throw CniError(kErrContainer, what + ": \"" + text + "\" is not an address: " + nl_geterror(err));
  return AddrPtr(a);
}

// Same address bytes and prefix length. A route to "0.0.0.0/0" comes back
// from the kernel without RTA_DST: libnl then has no address or an empty one.
bool sameNet(nl_addr* a, nl_addr* b) {
  const unsigned pa = a ? nl_addr_get_prefixlen(a) : 0, pb = b ? nl_addr_get_prefixlen(b) : 0;
  if (pa != pb) return false;
  if (pa == 0) return true;
  return nl_addr_get_len(a) == nl_addr_get_len(b) &&
         std::memcmp(nl_addr_get_binary_addr(a), nl_addr_get_binary_addr(b), nl_addr_get_len(a)) ==
             0;
}

bool sameHost(nl_addr* a, nl_addr* b) {
  if (!a || !b) return !a && !b;
  return nl_addr_get_len(a) == nl_addr_get_len(b) &&
         std::memcmp(nl_addr_get_binary_addr(a), nl_addr_get_binary_addr(b), nl_addr_get_len(a)) ==
             0;
}

}  // namespace

NetnsRoute::NetnsRoute(const std::string& nsPath) : path_(nsPath) {
  vdev::FileDesc target(::open(nsPath.c_str(), O_RDONLY | O_CLOEXEC));
  if (!target.valid())
    throw CniError(kErrContainer, "cannot open network namespace " + nsPath + ": " +
                                      std::strerror(errno));
  vdev::FileDesc self(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!self.valid())
    throw CniError(kErrContainer, std::string("open /proc/thread-self/ns/net: ") +
                                      std::strerror(errno));
  if (::setns(target.get(), CLONE_NEWNET) != 0)
    throw CniError(kErrContainer,
                   "enter network namespace " + nsPath + ": " + std::strerror(errno));
  sock_ = nl_socket_alloc();
  const int err = sock_ ? nl_connect(sock_, NETLINK_ROUTE) : -NLE_NOMEM;
  // Back home before anything else can happen. Staying in the container's
  // namespace would make every later step (vdevd's socket is a path, but
  // the host-side link lookups are not) act on the wrong host.
  if (::setns(self.get(), CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "vdev-cni: cannot return to the original network namespace: %s\n",
                 std::strerror(errno));
    std::abort();
  }
  if (err < 0) {
    if (sock_) nl_socket_free(sock_);
    sock_ = nullptr;
    fail("rtnetlink socket in " + nsPath, err);
  }
}

NetnsRoute::~NetnsRoute() {
  if (sock_) nl_socket_free(sock_);  // closes it
}

std::optional<NetnsRoute::Link> NetnsRoute::link(const std::string& name) {
  rtnl_link* raw = nullptr;
  const int err = rtnl_link_get_kernel(sock_, 0, name.c_str(), &raw);
  if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV) return std::nullopt;
  if (err < 0) fail("get link " + name + " in " + path_, err);
  std::unique_ptr<rtnl_link, LinkPut> l(raw);
  Link out;
  out.ifindex = rtnl_link_get_ifindex(l.get());
  out.mtu = rtnl_link_get_mtu(l.get());
  out.up = (rtnl_link_get_flags(l.get()) & IFF_UP) != 0;
  if (nl_addr* a = rtnl_link_get_addr(l.get()); a && nl_addr_get_len(a) == 6) {
    const auto* b = static_cast<const uint8_t*>(nl_addr_get_binary_addr(a));
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
                  b[5]);
    out.mac = buf;
  }
  return out;
}

void NetnsRoute::addAddress(int ifindex, const std::string& cidr) {
  const std::string what = "add address " + cidr + " in " + path_;
  AddrPtr local = parseAddr(cidr, AF_UNSPEC, what);
  std::unique_ptr<rtnl_addr, RtAddrPut> a(rtnl_addr_alloc());
  if (!a) fail(what, -NLE_NOMEM);
  rtnl_addr_set_ifindex(a.get(), ifindex);
  rtnl_addr_set_family(a.get(), nl_addr_get_family(local.get()));
  if (const int err = rtnl_addr_set_local(a.get(), local.get()); err < 0) fail(what, err);
  if (const int err = rtnl_addr_add(sock_, a.get(), NLM_F_EXCL); err < 0) fail(what, err);
}

bool NetnsRoute::hasAddress(int ifindex, const std::string& cidr) {
  const std::string what = "list addresses in " + path_;
  AddrPtr want = parseAddr(cidr, AF_UNSPEC, what);
  nl_cache* raw = nullptr;
  if (const int err = rtnl_addr_alloc_cache(sock_, &raw); err < 0) fail(what, err);
  std::unique_ptr<nl_cache, CacheFree> cache(raw);
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    if (rtnl_addr_get_ifindex(a) != ifindex) continue;
    nl_addr* local = rtnl_addr_get_local(a);
    if (local && sameHost(local, want.get()) &&
        unsigned(rtnl_addr_get_prefixlen(a)) == nl_addr_get_prefixlen(want.get()))
      return true;
  }
  return false;
}

void NetnsRoute::addRoute(int ifindex, const Route& route, const std::optional<std::string>& gw) {
  const std::string what = "add route " + route.dst + (gw ? " via " + *gw : "") + " in " + path_;
  AddrPtr dst = parseAddr(route.dst, AF_UNSPEC, what);
  std::unique_ptr<rtnl_route, RoutePut> r(rtnl_route_alloc());
  if (!r) fail(what, -NLE_NOMEM);
  rtnl_route_set_family(r.get(), uint8_t(nl_addr_get_family(dst.get())));
  if (const int err = rtnl_route_set_dst(r.get(), dst.get()); err < 0) fail(what, err);
  rtnl_route_set_table(r.get(), route.table.value_or(RT_TABLE_MAIN));
  rtnl_route_set_protocol(r.get(), RTPROT_BOOT);
  rtnl_route_set_type(r.get(), RTN_UNICAST);
  rtnl_route_set_scope(r.get(), uint8_t(route.scope.value_or(gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK)));
  if (route.priority) rtnl_route_set_priority(r.get(), *route.priority);
  if (route.mtu) rtnl_route_set_metric(r.get(), RTAX_MTU, *route.mtu);
  if (route.advmss) rtnl_route_set_metric(r.get(), RTAX_ADVMSS, *route.advmss);
  rtnl_nexthop* nh = rtnl_route_nh_alloc();  // owned by the route once added
  if (!nh) fail(what, -NLE_NOMEM);
  rtnl_route_nh_set_ifindex(nh, ifindex);
  if (gw) {
    AddrPtr g = parseAddr(*gw, nl_addr_get_family(dst.get()), what);
    rtnl_route_nh_set_gateway(nh, g.get());  // takes its own reference
  }
  rtnl_route_add_nexthop(r.get(), nh);
  if (const int err = rtnl_route_add(sock_, r.get(), NLM_F_EXCL); err < 0) fail(what, err);
}

bool NetnsRoute::hasRoute(int ifindex, const Route& route, const std::optional<std::string>& gw) {
  const std::string what = "list routes in " + path_;
  AddrPtr dst = parseAddr(route.dst, AF_UNSPEC, what);
  AddrPtr g;
  if (gw) g = parseAddr(*gw, nl_addr_get_family(dst.get()), what);
  nl_cache* raw = nullptr;
  if (const int err = rtnl_route_alloc_cache(sock_, nl_addr_get_family(dst.get()), 0, &raw); err < 0)
    fail(what, err);
  std::unique_ptr<nl_cache, CacheFree> cache(raw);
  const uint32_t table = route.table.value_or(RT_TABLE_MAIN);
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_table(r) != table || !sameNet(rtnl_route_get_dst(r), dst.get())) continue;
    for (int i = 0; i < rtnl_route_get_nnexthops(r); ++i) {
      rtnl_nexthop* nh = rtnl_route_nexthop_n(r, i);
      if (ifindex != 0 && rtnl_route_nh_get_ifindex(nh) != ifindex) continue;
      if (!g || sameHost(rtnl_route_nh_get_gateway(nh), g.get())) return true;
    }
  }
  return false;
}

}  // namespace vdev::cni
