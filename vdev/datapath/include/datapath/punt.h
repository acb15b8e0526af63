// PuntDevice: the veth pair through which frames from the skb path
// (tc_path.h) that need vdevd's decision reach its AF_XDP sockets.
//
//   port's tc program ──bpf_redirect──► near end ═══ veth ═══ far end ──XDP──► AF_XDP
//                       (tagged with     no offloads:          vdevd's program
//                        the port index)  GSO segmented,        and sockets: a
//                                         checksums finished,   Port (punt)
//                                         the tag written into
//                                         the frame
//
// The near end has TSO, GSO, TX checksum and TX VLAN offload off (the far
// end's native XDP program turns the first two off as well), so the kernel
// segments a container's 64 KB TCP segments and finishes its checksums in
// validate_xmit_skb on the way out, and writes the port's 802.1Q tag
// (VDEV_PUNT_VID) into each frame: vdevd receives wire frames and knows
// which port each came from. One pair per vdevd; it carries the mark
// (rtnl::kManagedAlias) and is deleted with the object. A pair of that name
// left by a vdevd that died is deleted first. The far end's alias names its
// owner ("vdev:punt owner=PID:STARTTIME", the process's start time from
// /proc/PID/stat), so that a vdevd on another control socket -- whose pair
// has another name -- can tell a pair whose vdevd was killed (SIGKILL: no
// teardown) from a live one's: removeOrphans().
//
// Not thread safe; control plane only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace vdev::datapath {

// The punt pair's MTU when its socket has multi-buffer (XDP_USE_SG): the
// common jumbo MTU, frames of 9,234 bytes with their tag, chains of six
// 2048-byte chunks.
inline constexpr uint32_t kPuntJumboMtu = 9216;

class PuntDevice {
 public:
  // base: at most 13 characters; the ends are base + "k" (near) and
  // base + "u" (far). mtu: both ends.
  static Result<std::unique_ptr<PuntDevice>> create(const std::string& base, uint32_t mtu);
  ~PuntDevice();
  PuntDevice(const PuntDevice&) = delete;
  PuntDevice& operator=(const PuntDevice&) = delete;

  // Deletes every pair here whose far end names an owner that no longer
  // runs (no such pid, or a pid reused by a process that started at another
  // time); pairs of live owners and devices without the owner alias are
  // left alone. Returns the near ends deleted (for the log). Control plane,
  // at start.
  static std::vector<std::string> removeOrphans();

  const std::string& nearName() const { return near_; }
  const std::string& farName() const { return far_; }
  int nearIfindex() const { return near_ifindex_; }
  uint32_t mtu() const { return mtu_; }
  // Both ends' MTU changed (SIOCSIFMTU), or an error saying which refused.
  Status setMtu(uint32_t mtu);
  // Frames the near end could not hand to the far end (its queue full, a
  // frame over the pair's MTU): the near end's tx_dropped, since creation.
  uint64_t dropped() const;

 private:
  PuntDevice() = default;
  std::string near_, far_;
  int near_ifindex_ = 0;
  uint32_t mtu_ = 0;
};

}  // namespace vdev::datapath
