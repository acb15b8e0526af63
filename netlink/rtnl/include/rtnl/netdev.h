// The netdev generic netlink family (Linux 6.3+): what a device can do for
// XDP, as the kernel reports it (libnl-genl-3 underneath).
//
// Thread safety: each call opens its own netlink socket; any thread may call
// it. Blocking: one request and its reply (microseconds); control plane only
// (vdevd's housekeeping asks once a second per fast-path port).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.h"

namespace vdev::rtnl {

// Whether the kernel has the netdev family at all (Linux 6.3+): false on an
// older kernel, and when genetlink cannot be asked.
bool hasNetdevFamily();

// Whether the device accepts redirected XDP frames now (its XDP features
// include NDO_XMIT): a tap does; a veth does when its peer has NAPI (GRO on
// or an XDP program). Errors: EOPNOTSUPP (no netdev family: a kernel before
// 6.3), ENOMEM, EIO (the request failed, or the reply had no XDP features).
Result<bool> deviceTakesXdpFrames(int ifindex);

// Whether the device's driver runs XDP programs itself (native XDP; its XDP
// features include BASIC): a NIC with XDP support, a veth, a tap do; a VXLAN
// or Geneve device, a bond without XDP-capable slaves, a dummy do not (XDP
// there is generic, on the skb). Errors as deviceTakesXdpFrames.
Result<bool> deviceHasNativeXdp(int ifindex);

// Whether the device's driver binds AF_XDP sockets in zero-copy mode (its
// XDP features include XSK_ZEROCOPY): NICs such as ice, i40e, mlx5, igc,
// virtio-net do; veth and tap do not (copy mode only). Errors as
// deviceTakesXdpFrames.
Result<bool> deviceOffersXskZerocopy(int ifindex);

// Whether the kernel holds an AF_XDP buffer pool at the device's RX queue
// (netdev QUEUE_GET's "xsk" attribute, Linux 6.15+): from the bind of a
// socket there until the kernel has released the pool after that socket
// was closed -- a work item, once nothing refers to the socket any more,
// and for a zero-copy driver once it has stopped using the socket's frames.
// false also on a kernel that does not report it (ask a queue known to be
// bound to tell the two apart). Errors: EOPNOTSUPP (no netdev family or no
// QUEUE_GET: a kernel before 6.8), ENOENT (no such device or queue), ENOMEM,
// EIO.
Result<bool> rxQueueHasXsk(int ifindex, uint32_t queue);

// The netdev family's notifications (its "mgmt" group): DEV_CHANGE_NTF
// whenever a device's XDP features change -- a veth's when its peer turns
// GRO or an XDP program on or off -- so that whoever needs them asks again
// instead of asking every device on a timer. Only devices of the caller's
// network namespace are reported.
// Thread safety: one thread at a time per monitor.
class XdpFeaturesMonitor {
 public:
  // A non-blocking generic netlink socket joined to netdev's "mgmt" group.
  // Errors: EOPNOTSUPP (no netdev family, or no such group), ENOMEM, EIO.
  static Result<XdpFeaturesMonitor> open();
  XdpFeaturesMonitor(XdpFeaturesMonitor&&) noexcept;
  XdpFeaturesMonitor& operator=(XdpFeaturesMonitor&&) noexcept;
  ~XdpFeaturesMonitor();

  // Readable (POLLIN) when notifications are waiting.
  int fd() const;
  // Reads every waiting notification (at most maxDatagrams reads). Returns
  // the ifindexes of the devices they were about (empty: none); ENOBUFS if
  // some were lost (the caller then asks every device, as it would have
  // without the monitor).
  Result<std::vector<int>> processEvents(size_t maxDatagrams = 256);

 private:
  struct State;
  explicit XdpFeaturesMonitor(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace vdev::rtnl
