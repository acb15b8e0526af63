// Addresses and routes inside a network namespace: see rtnl/netns_ip.h.
#include "rtnl/netns_ip.h"

#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/route/addr.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>

#include <cerrno>
#include <cstring>

#include "socket.h"

namespace vdev::rtnl {

using detail::AddrPtr;
using detail::CachePtr;
using detail::RoutePtr;
using detail::RtAddrPtr;
using detail::RtnlSocket;
using detail::withContext;

namespace {

// `text` as an nl_addr of `family` (AF_UNSPEC: whichever it is), with its
// prefix length. EINVAL if it is no address.
Result<AddrPtr> parseAddr(const std::string& text, int family, const std::string& what) {
  nl_addr* a = nullptr;
  if (nl_addr_parse(text.c_str(), family, &a) < 0 || !a)
    return Error{EINVAL, what + ": \"" + text + "\" is not an address"};
  AddrPtr owned(a);
  const int f = nl_addr_get_family(a);
  if (f != AF_INET && f != AF_INET6)
    return Error{EINVAL, what + ": \"" + text + "\" is not an IPv4 or IPv6 address"};
  return owned;
}

// Same address bytes and prefix length. A route to "0.0.0.0/0" comes back
// from the kernel without RTA_DST: libnl then has no address or an empty one.
bool sameNet(nl_addr* a, nl_addr* b) {
  const unsigned pa = a ? nl_addr_get_prefixlen(a) : 0, pb = b ? nl_addr_get_prefixlen(b) : 0;
  if (pa != pb) return false;
  if (pa == 0) return true;
  return nl_addr_get_len(a) == nl_addr_get_len(b) &&
         std::memcmp(nl_addr_get_binary_addr(a), nl_addr_get_binary_addr(b), nl_addr_get_len(a)) == 0;
}

bool sameHost(nl_addr* a, nl_addr* b) {
  if (!a || !b) return !a && !b;
  return nl_addr_get_len(a) == nl_addr_get_len(b) &&
         std::memcmp(nl_addr_get_binary_addr(a), nl_addr_get_binary_addr(b), nl_addr_get_len(a)) == 0;
}

}  // namespace

struct NetnsIp::Impl {
  RtnlSocket sock;
  std::string desc;  // "netns ..." or ""

  // " in netns ...", or "" for the caller's namespace: the end of every message.
  std::string where() const { return desc.empty() ? std::string() : " in " + desc; }
};

NetnsIp::NetnsIp(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NetnsIp::NetnsIp(NetnsIp&&) noexcept = default;
NetnsIp& NetnsIp::operator=(NetnsIp&&) noexcept = default;
NetnsIp::~NetnsIp() = default;

Result<NetnsIp> NetnsIp::open(const NetnsRef& netns) {
  const std::string desc = netns.describe();
  auto sk = RtnlSocket::open(netns);
  if (!sk) return desc.empty() ? sk.error() : withContext(sk.error(), "open rtnetlink socket in " + desc);
  return NetnsIp(std::unique_ptr<Impl>(new Impl{std::move(sk.value()), desc}));
}

const std::string& NetnsIp::describe() const { return impl_->desc; }

Result<LinkState> NetnsIp::link(const std::string& name) {
  const std::string what = "look up link " + name + impl_->where();
  if (Status st = validateIfname(name); !st) return withContext(st.error(), what);
  return detail::getLinkState(impl_->sock, name, what);
}

Status NetnsIp::addAddress(int ifindex, const std::string& cidr) {
  const std::string what = "add address " + cidr + impl_->where();
  auto local = parseAddr(cidr, AF_UNSPEC, what);
  if (!local) return local.error();
  RtAddrPtr a(rtnl_addr_alloc());
  if (!a) return Error{ENOMEM, what};
  rtnl_addr_set_ifindex(a.get(), ifindex);
  rtnl_addr_set_family(a.get(), nl_addr_get_family(local->get()));
  if (const int rc = rtnl_addr_set_local(a.get(), local->get()); rc < 0)
    return Error{detail::nlErrno(rc), what};
  const int rc = impl_->sock.run([&](nl_sock* s) { return rtnl_addr_add(s, a.get(), NLM_F_EXCL); });
  if (rc < 0) return impl_->sock.error(rc, what);
  return {};
}

Result<bool> NetnsIp::hasAddress(int ifindex, const std::string& cidr) {
  const std::string what = "list addresses" + impl_->where();
  auto want = parseAddr(cidr, AF_UNSPEC, what);
  if (!want) return want.error();
  nl_cache* raw = nullptr;
  const int rc = impl_->sock.run([&](nl_sock* s) { return rtnl_addr_alloc_cache(s, &raw); });
  CachePtr cache(raw);
  if (rc < 0) return impl_->sock.error(rc, what);
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    if (rtnl_addr_get_ifindex(a) != ifindex) continue;
    nl_addr* local = rtnl_addr_get_local(a);
    if (local && sameHost(local, want->get()) &&
        unsigned(rtnl_addr_get_prefixlen(a)) == nl_addr_get_prefixlen(want->get()))
      return true;
  }
  return false;
}

Status NetnsIp::addRoute(const Route& route) {
  const std::string what =
      "add route " + route.dst + (route.gateway ? " via " + *route.gateway : "") + impl_->where();
  auto dst = parseAddr(route.dst, AF_UNSPEC, what);
  if (!dst) return dst.error();
  const int family = nl_addr_get_family(dst->get());
  RoutePtr r(rtnl_route_alloc());
  if (!r) return Error{ENOMEM, what};
  rtnl_route_set_family(r.get(), uint8_t(family));
  if (const int rc = rtnl_route_set_dst(r.get(), dst->get()); rc < 0) return Error{detail::nlErrno(rc), what};
  rtnl_route_set_table(r.get(), route.table);
  rtnl_route_set_protocol(r.get(), RTPROT_BOOT);
  rtnl_route_set_type(r.get(), RTN_UNICAST);
  rtnl_route_set_scope(r.get(), route.scope.value_or(route.gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK));
  if (route.priority) rtnl_route_set_priority(r.get(), *route.priority);
  if (route.mtu) rtnl_route_set_metric(r.get(), RTAX_MTU, *route.mtu);
  if (route.advmss) rtnl_route_set_metric(r.get(), RTAX_ADVMSS, *route.advmss);
  AddrPtr gw;
  if (route.gateway) {
    auto g = parseAddr(*route.gateway, family, what);
    if (!g) return g.error();
    gw = std::move(g.value());
  }
  rtnl_nexthop* nh = rtnl_route_nh_alloc();
  if (!nh) return Error{ENOMEM, what};
  rtnl_route_nh_set_ifindex(nh, route.ifindex);
  if (gw) rtnl_route_nh_set_gateway(nh, gw.get());  // takes its own reference
  rtnl_route_add_nexthop(r.get(), nh);               // the route owns nh from here
  const int rc = impl_->sock.run([&](nl_sock* s) { return rtnl_route_add(s, r.get(), NLM_F_EXCL); });
  if (rc < 0) return impl_->sock.error(rc, what);
  return {};
}

Result<bool> NetnsIp::hasRoute(const Route& route) {
  const std::string what = "list routes" + impl_->where();
  auto dst = parseAddr(route.dst, AF_UNSPEC, what);
  if (!dst) return dst.error();
  const int family = nl_addr_get_family(dst->get());
  AddrPtr gw;
  if (route.gateway) {
    auto g = parseAddr(*route.gateway, family, what);
    if (!g) return g.error();
    gw = std::move(g.value());
  }
  nl_cache* raw = nullptr;
  const int rc = impl_->sock.run([&](nl_sock* s) { return rtnl_route_alloc_cache(s, family, 0, &raw); });
  CachePtr cache(raw);
  if (rc < 0) return impl_->sock.error(rc, what);
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_table(r) != route.table || !sameNet(rtnl_route_get_dst(r), dst->get())) continue;
    for (int i = 0; i < rtnl_route_get_nnexthops(r); ++i) {
      rtnl_nexthop* nh = rtnl_route_nexthop_n(r, i);
      if (route.ifindex != 0 && rtnl_route_nh_get_ifindex(nh) != route.ifindex) continue;
      if (!gw || sameHost(rtnl_route_nh_get_gateway(nh), gw.get())) return true;
    }
  }
  return false;
}

}  // namespace vdev::rtnl
