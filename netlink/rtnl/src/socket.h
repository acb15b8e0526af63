// Private to vdev_rtnl: owners for libnl objects, and RtnlSocket, the one
// place where a libnl return code becomes a vdev::Error.
#pragma once

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>

#include <memory>
#include <string>
#include <utility>

#include "base/result.h"
#include "rtnl/link.h"

namespace vdev::rtnl::detail {

using vdev::Error;
using vdev::Result;
using vdev::Status;
using vdev::errnoError;

struct NlSockDeleter {
  void operator()(nl_sock* s) const noexcept { nl_socket_free(s); }
};
struct LinkDeleter {
  void operator()(rtnl_link* l) const noexcept { rtnl_link_put(l); }
};
struct AddrDeleter {
  void operator()(nl_addr* a) const noexcept { nl_addr_put(a); }
};
struct CacheDeleter {
  void operator()(nl_cache* c) const noexcept { nl_cache_free(c); }
};
struct RtAddrDeleter {
  void operator()(rtnl_addr* a) const noexcept { rtnl_addr_put(a); }
};
struct RouteDeleter {
  void operator()(rtnl_route* r) const noexcept { rtnl_route_put(r); }
};
struct NlMsgDeleter {
  void operator()(nl_msg* m) const noexcept { nlmsg_free(m); }
};
using NlSockPtr = std::unique_ptr<nl_sock, NlSockDeleter>;
using LinkPtr = std::unique_ptr<rtnl_link, LinkDeleter>;
using AddrPtr = std::unique_ptr<nl_addr, AddrDeleter>;
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;
using RtAddrPtr = std::unique_ptr<rtnl_addr, RtAddrDeleter>;  // an IP address (rtnl_addr)
using RoutePtr = std::unique_ptr<rtnl_route, RouteDeleter>;
using NlMsgPtr = std::unique_ptr<nl_msg, NlMsgDeleter>;  // a request built by hand (what libnl has no type for)

// The errno closest to a libnl NLE_* code (positive or negative), for errors
// the kernel did not report itself (EIO for libnl-internal failures).
int nlErrno(int nlerr);

// Prefixes e.what with `context` ("create veth a <-> b: open rtnetlink socket").
inline Error withContext(Error e, const std::string& context) {
  e.what = context + ": " + e.what;
  return e;
}

// A NETLINK_ROUTE socket with an error handler that records the errno and
// the extended-ack message of the kernel's NLMSG_ERROR reply. libnl itself
// folds errnos into a few NLE_* codes (EEXIST and EADDRINUSE are both
// NLE_EXIST; ENOSPC is NLE_FAILURE), so the kernel's own value is kept.
// Move-only; one request at a time.
class RtnlSocket {
 public:
  // In the calling thread's network namespace.
  static Result<RtnlSocket> open();
  // Inside the namespace `nsfd` refers to: a helper thread setns()es there,
  // opens the socket and exits; the socket stays bound to that namespace.
  // Needs CAP_SYS_ADMIN. The calling thread is never moved.
  static Result<RtnlSocket> openInNetns(int nsfd, const std::string& nsDesc);
  // open() for NetnsRef::current(), else openInNetns() on netns.open().
  // Errors: also those of NetnsRef::open().
  static Result<RtnlSocket> open(const NetnsRef& netns);

  nl_sock* get() const { return s_->sock.get(); }

  // Runs one libnl request f(nl_sock*) with the recorded kernel error
  // cleared; returns f's libnl code (0 or -NLE_*).
  template <typename F>
  int run(F&& f) {
    s_->kernelErr = 0;
    s_->extack.clear();
    return std::forward<F>(f)(get());
  }

  // The Error for the last run() that returned rc < 0: the kernel's errno
  // if it sent one, else nlErrno(rc); `what` plus " (kernel: EXTACK)" when
  // the kernel explained itself.
  Error error(int rc, std::string what) const;

  struct State {
    NlSockPtr sock;
    int kernelErr = 0;   // positive errno of the last NLMSG_ERROR, 0 if none
    std::string extack;  // NLMSGERR_ATTR_MSG of that message
  };

 private:
  explicit RtnlSocket(std::unique_ptr<State> s) : s_(std::move(s)) {}
  std::unique_ptr<State> s_;  // heap: libnl's error callback points at it
};

// rtnl_link_get_kernel by name, as an owned object. Errors: ENODEV.
Result<LinkPtr> getKernelLink(RtnlSocket& sk, const std::string& name, const std::string& what);
// The same, as the public LinkState (link.cpp). Errors: ENODEV.
Result<LinkState> getLinkState(RtnlSocket& sk, const std::string& name, const std::string& what);

}  // namespace vdev::rtnl::detail
