// The netdev generic netlink family (Linux 6.3+): what a device can do for
// XDP, as the kernel reports it (libnl-genl-3 underneath).
//
// Thread safety: each call opens its own netlink socket; any thread may call
// it. Blocking: one request and its reply (microseconds); control plane only
// (vdevd's housekeeping asks once a second per fast-path port).
#pragma once

#include "base/result.h"

namespace vdev::rtnl {

// Whether the device accepts redirected XDP frames now (its XDP features
// include NDO_XMIT): a tap does; a veth does when its peer has NAPI (GRO on
// or an XDP program). Errors: EOPNOTSUPP (no netdev family: a kernel before
// 6.3), ENOMEM, EIO (the request failed, or the reply had no XDP features).
Result<bool> deviceTakesXdpFrames(int ifindex);

}  // namespace vdev::rtnl
