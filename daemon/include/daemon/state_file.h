// The daemon's persistent configuration: the ports added at run time, so
// that they are there again after a restart.
//
// Text, one record per line, written to a temporary file in the same
// directory, fsync'ed and renamed over the old one: a crash leaves either the
// old or the new file, never half of one. Reading is strict: an unknown
// keyword, a bad value or a duplicate port makes the whole file refused
// (with the line number), never half applied.
//
//   # vdevd state v1
//   port name=vdc1 type=veth queues=0 xdp-mode=auto managed=1
//   port name=vm1 type=tap queues=0 xdp-mode=auto managed=1 fast-rx=0
//
// fast-rx is written only when off: a file without it (older vdevd, or
// every port on) means on, and a file that uses no new option stays
// readable by an older vdevd, which refuses keys it does not know.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace vdev::daemon {

struct PortRecord {
  std::string name;
  std::string type = "netdev";    // tap | veth | netdev
  uint32_t queues = 0;            // 0: every queue the device has
  std::string xdp_mode = "auto";  // native | generic | auto
  bool managed = false;           // vdev created the device (port del removes it)
  bool fast_rx = true;            // false: the port's received frames never take the kernel fast path
  std::string hook;  // xdp | tc | auto (chosen by the device) | "" (vdevd's --default-hook)
  bool operator==(const PortRecord&) const = default;
};

struct DaemonState {
  std::vector<PortRecord> ports;
  bool operator==(const DaemonState&) const = default;
};

std::string serializeState(const DaemonState& st);
// Errors: EINVAL with "LINE: what is wrong".
Result<DaemonState> parseState(const std::string& text);
// A missing file is an empty state; an unreadable or corrupt one an error.
Result<DaemonState> loadState(const std::string& path);
// Atomic replace (temporary file + fsync + rename + fsync of the directory).
Status saveState(const std::string& path, const DaemonState& st);

}  // namespace vdev::daemon
