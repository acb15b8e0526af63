// The programs' host-address maps (vdev_host_ipv4_key, vdev_host_ipv6_key
// in bpf/vdev_xdp_shared.h: one entry per device and address, ARP and NS
// for them go to the host). Private to the datapath (xdp_prog.cpp,
// tc_path.cpp), whose maps have the same keys.
#pragma once

#include <bpf/bpf.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/result.h"

namespace vdev::datapath {

// Makes ifindex's entries in the map fd `after` where they were `before`:
// deletes what is gone, adds what is new (an update of one already there
// is a no-op). Errors: the first add the map refused (what: its name).
template <class Key, class Addr>
Status replaceHostAddrs(int fd, int ifindex, const std::vector<Addr>& before, const std::vector<Addr>& after,
                        const char* what) {
  auto key = [&](const Addr& a) {
    Key k = {};
    k.ifindex = uint32_t(ifindex);
    static_assert(sizeof k.addr == sizeof a);
    std::memcpy(&k.addr, &a, sizeof k.addr);
    return k;
  };
  for (const Addr& a : before)
    if (std::find(after.begin(), after.end(), a) == after.end()) {
      Key k = key(a);
      (void)bpf_map_delete_elem(fd, &k);
    }
  const uint32_t one = 1;
  for (const Addr& a : after) {
    Key k = key(a);
    if (bpf_map_update_elem(fd, &k, &one, BPF_ANY)) return errnoError(what);
  }
  return {};
}

}  // namespace vdev::datapath
