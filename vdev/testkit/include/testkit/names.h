// Names and MAC addresses that cannot collide: unique per process and call,
// so tests and benchmarks that run side by side (or a run that follows a
// killed one with another pid) never share a device or a namespace.
// Thread safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/mac.h"

namespace vdev::testkit {

// tag + this process's pid in base 36 + role + a per-process counter in
// base 36, e.g. "vt" "1x3k" "v" "0". With a 2-character tag it stays below
// 12 characters for the first 36^3 names, leaving room under IFNAMSIZ (16)
// for a suffix ("h" / "p" for the ends of a veth).
std::string uniqueName(std::string_view tag, char role);

// A locally administered unicast MAC unique within this process:
// 02:<tag>:<pid, 2 bytes>:<counter, 2 bytes>.
Mac uniqueMac(uint8_t tag);

}  // namespace vdev::testkit
