#include "datapath/counters.h"

namespace vdev::datapath {

namespace {
thread_local uint32_t tls_thread_index = 0;
}

uint32_t threadIndex() noexcept { return tls_thread_index; }
void setThreadIndex(uint32_t i) noexcept { tls_thread_index = i; }

PortCounterSnapshot PortCounters::snapshot() const noexcept {
  PortCounterSnapshot s;
  for (uint32_t r = 0; r < kNumDropReasons; r++) s.v[r] = drops[r].get();
  for (uint32_t i = 0; i < others.size(); i++) s.v[kNumDropReasons + i] = others[i].get();
  return s;
}

}  // namespace vdev::datapath
