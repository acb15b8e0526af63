#include "datapath/counters.h"

namespace vdev::datapath {

namespace {
thread_local uint32_t tls_thread_index = 0;
}

uint32_t threadIndex() noexcept { return tls_thread_index; }
void setThreadIndex(uint32_t i) noexcept { tls_thread_index = i; }

const char* dropReasonName(uint32_t r) {
  static const char* const kNames[kNumDropReasons] = {
      "ring_full", "tx_ring_full", "no_route",   "port_down",  "oversize",      "runt",
      "pool_empty", "invalid_src", "bad_type", "mac_limit", "mac_locked", "inflight_limit", "fast_xmit"};
  return r < kNumDropReasons ? kNames[r] : "?";
}

}  // namespace vdev::datapath
