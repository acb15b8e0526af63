// LinkMonitor: link appearance, disappearance and state changes, from the
// kernel's RTNLGRP_LINK multicast group (RTM_NEWLINK / RTM_DELLINK).
//
// vdevd's control thread polls fd() with its other descriptors and calls
// processEvents() when it is readable: a port whose device disappeared is
// detached, and a configured port is re-attached when a device of that name
// comes back.
//
//   auto mon = LinkMonitor::open();            // Result<LinkMonitor>
//   pollfd p{mon->fd(), POLLIN, 0};
//   ... poll ...
//   auto n = mon->processEvents([&](const LinkEvent& e) { ... });
//   if (!n && n.error().err == ENOBUFS) { resync with mon->snapshot(...) }
//
// Events come for the caller's network namespace only (the socket's own).
// Only AF_UNSPEC link messages are reported: a bridge's per-port AF_BRIDGE
// RTM_DELLINK (sent when a device leaves a bridge, while it still exists) is
// not a deletion and is skipped.
//
// Thread safety: one thread at a time per LinkMonitor (the control thread).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"

namespace vdev::rtnl {

using vdev::Error;
using vdev::Result;
using vdev::Status;

struct LinkEvent {
  enum class Type { kNew, kDel };
  // kNew: the device appeared OR changed (flags, MTU, name, carrier): the
  // kernel sends RTM_NEWLINK for both; compare with what you knew. kDel: it
  // is gone; only ifindex and name are meaningful then (the kernel reports
  // the last state it had).
  Type type = Type::kNew;
  int ifindex = 0;
  std::string name;
  bool up = false;       // IFF_UP
  bool carrier = false;  // IFF_LOWER_UP
  unsigned flags = 0;    // IFF_*
  int mtu = 0;
};

const char* linkEventTypeName(LinkEvent::Type t);  // "new", "del"

using LinkEventCallback = std::function<void(const LinkEvent&)>;

class LinkMonitor {
 public:
  // A non-blocking NETLINK_ROUTE socket joined to RTNLGRP_LINK, with a large
  // receive buffer (1 MiB, forced past rmem_max when CAP_NET_ADMIN allows).
  // Events that happen after open() returns are reported.
  static Result<LinkMonitor> open();

  LinkMonitor(LinkMonitor&&) noexcept;
  LinkMonitor& operator=(LinkMonitor&&) noexcept;
  ~LinkMonitor();

  // Readable (POLLIN) when events are waiting.
  int fd() const;

  // Reads every waiting message (at most `maxDatagrams` socket reads, so a
  // storm cannot starve the caller's other work: the fd then stays readable)
  // and calls cb once per event, in order, after libnl has returned (cb may
  // throw). Returns the number of events delivered; 0 if nothing waited.
  // Errors: ENOBUFS - the kernel dropped events because the receive buffer
  // overflowed. The socket stays usable, but the caller's view may be stale:
  // call snapshot() and reconcile (a deletion may have been lost). Events
  // read before the overflow was noticed have been delivered.
  Result<size_t> processEvents(const LinkEventCallback& cb, size_t maxDatagrams = 256);

  // Every link that exists now, as kNew events (a dump on a separate socket;
  // the monitor's queue is untouched). For start-up and after ENOBUFS.
  Status snapshot(const LinkEventCallback& cb) const;

  // Whether an IPv4 or IPv6 address was added or removed here since the
  // last call (RTM_NEWADDR / RTM_DELADDR, seen by processEvents(); the
  // socket also joins RTNLGRP_IPV4_IFADDR and RTNLGRP_IPV6_IFADDR). After
  // ENOBUFS, assume so. Clears the flag.
  bool takeAddressChange();

 private:
  struct State;
  explicit LinkMonitor(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace vdev::rtnl
