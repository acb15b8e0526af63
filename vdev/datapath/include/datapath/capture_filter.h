// A capture's filter: the programs' own definition and matcher
// (vdev/datapath/bpf/vdev_capture_filter.h, plain C), so that vdevd's copies and
// the kernel fast path's take the same frames. Included from here, by path,
// because the rest of bpf/ is private to the datapath.
#pragma once

#include "../../bpf/vdev_capture_filter.h"

namespace vdev::datapath {

using CaptureFilter = ::vdev_capture_filter;
// The VLAN of a port's untagged frames, as the filter's VLAN field reads it.
inline uint16_t captureUntaggedVid(bool vlan_on, uint16_t pvid) noexcept { return vlan_on ? pvid : 1; }

}  // namespace vdev::datapath
