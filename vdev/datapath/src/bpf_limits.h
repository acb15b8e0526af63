// The programs' side of PortLimits (bpf/vdev_limits.h): the buckets vdevd
// writes for a port, and the drops the programs counted. Private to the
// datapath (xdp_prog.cpp, tc_path.cpp).
#pragma once

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <string.h>
#include <time.h>

#include <vector>

#include "datapath/counters.h"
#include "datapath/fdb.h"
#include "datapath/limits.h"
#include "datapath/xdp_prog.h"
#include "vdev_limits.h"

namespace vdev::datapath {

// A port's buckets, full: a port starts with its whole burst.
inline struct vdev_port_limits bpfLimits(const PortLimits& l) {
  struct vdev_port_limits v = {};
  struct timespec ts = {};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // bpf_ktime_get_ns()'s clock
  const uint64_t now = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  const uint32_t police_ms = l.police_burst_ms ? l.police_burst_ms : PortLimits::kDefaultPoliceBurstMs;
  auto set = [&](int i, uint64_t rate, uint32_t burst_ms) {
    if (!rate) return;
    v.b[i].rate = rate;
    v.b[i].depth_ns = uint64_t(burst_ms) * 1000000ull;
    v.b[i].credit_ns = int64_t(v.b[i].depth_ns);
    v.b[i].last_ns = now;
  };
  set(VDEV_LIM_BCAST, l.storm_bcast, PortLimits::kStormBurstMs);
  set(VDEV_LIM_MCAST, l.storm_mcast, PortLimits::kStormBurstMs);
  set(VDEV_LIM_PPS, l.police_pps, police_ms);
  set(VDEV_LIM_BPS, l.police_bps, police_ms);
  v.on = (l.storm_bcast || l.storm_mcast || l.police_pps || l.police_bps) ? 1 : 0;
  v.src_mac = macKey(l.allowed_mac.data());  // all zeros: 0, any source
  for (const IpAddr& a : l.allowed_ips) {  // at most kMaxAllowedIps of each (vdevd refuses more)
    if (ipIsV4(a)) {
      if (v.n_ipv4 < VDEV_ALLOWED_IPS) memcpy(&v.ipv4[v.n_ipv4++], a.data() + 12, 4);
    } else if (v.n_ipv6 < VDEV_ALLOWED_IPS) {
      memcpy(v.ipv6[v.n_ipv6++], a.data(), 16);
    }
  }
  v.guard = (l.ra_guard ? VDEV_GUARD_RA : 0) | (l.dhcp_guard ? VDEV_GUARD_DHCP : 0);
  return v;
}

// The programs' drop counts in the order of their map's rows
// (VDEV_LIM_DROP_*), each with the port counter it is: the one list that
// reading the map and adding to a port's counters go through.
struct LimitDropRow {
  uint64_t LimitDrops::*count;
  DropReason counter;
};
inline constexpr LimitDropRow kLimitDropRows[VDEV_LIM_NDROPS] = {
    {&LimitDrops::bcast, kDropStormBcast},   {&LimitDrops::mcast, kDropStormMcast},
    {&LimitDrops::police, kDropPolice},      {&LimitDrops::spoof_mac, kDropSpoofMac},
    {&LimitDrops::spoof_ip, kDropSpoofIp},   {&LimitDrops::ra_guard, kDropRaGuard},
    {&LimitDrops::dhcp_guard, kDropDhcpGuard},
};
static_assert(kLimitDropRows[VDEV_LIM_DROP_BCAST].counter == kDropStormBcast &&
              kLimitDropRows[VDEV_LIM_DROP_MCAST].counter == kDropStormMcast &&
              kLimitDropRows[VDEV_LIM_DROP_POLICE].counter == kDropPolice &&
              kLimitDropRows[VDEV_LIM_DROP_SPOOF].counter == kDropSpoofMac &&
              kLimitDropRows[VDEV_LIM_DROP_SPOOF_IP].counter == kDropSpoofIp &&
              kLimitDropRows[VDEV_LIM_DROP_RA].counter == kDropRaGuard &&
              kLimitDropRows[VDEV_LIM_DROP_DHCP].counter == kDropDhcpGuard,
              "kLimitDropRows follows the programs' VDEV_LIM_DROP_* rows");

// The drops of one row (a slot, a port index), summed over the CPUs.
inline LimitDrops readLimitDrops(int fd, uint32_t row, std::vector<uint64_t>& percpu) {
  LimitDrops d;
  for (uint32_t i = 0; i < VDEV_LIM_NDROPS; i++) {
    const uint32_t k = row * VDEV_LIM_NDROPS + i;
    if (bpf_map_lookup_elem(fd, &k, percpu.data())) continue;
    for (uint64_t v : percpu) d.*kLimitDropRows[i].count += v;
  }
  return d;
}

inline void resetLimitDrops(int fd, uint32_t row, size_t ncpu) {
  const std::vector<uint64_t> zero(ncpu, 0);
  for (uint32_t i = 0; i < VDEV_LIM_NDROPS; i++) {
    const uint32_t k = row * VDEV_LIM_NDROPS + i;
    (void)bpf_map_update_elem(fd, &k, zero.data(), BPF_ANY);
  }
}

}  // namespace vdev::datapath
