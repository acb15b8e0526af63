// Test flows between endpoints, shared by the e2e suites: frames of mixed
// sizes and kinds, exact per-flow expectations, learning, and a guard for
// devices vdevd was asked to create.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace vdev::e2e {

// Sizes 60..1514 in a spread that hits both ends; kinds alternate.
inline size_t mixedSize(uint32_t i) {
  static const size_t kSizes[] = {60, 1514, 64, 1000, 128, 1513, 61, 576, 1500, 256, 999, 90};
  return kSizes[i % std::size(kSizes)];
}

inline Spec mixedSpec(const Endpoint& from, const Mac& dst, uint32_t flow, uint32_t seq) {
  return {dst, from.mac(), seq % 2 ? Kind::kIpv4Udp : Kind::kExperimental, flow, seq, mixedSize(seq)};
}

inline void sendMixed(Endpoint& from, const Mac& dst, uint32_t flow, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) from.send(mixedSpec(from, dst, flow, i));
}

inline std::string countsOf(const Endpoints& all) {
  std::ostringstream os;
  for (const Endpoint* e : all) os << "\n  " << e->label() << ": " << e->rx().describe();
  return os.str();
}

// Waits until each endpoint of `expect` has its number of frames of `flow`,
// lets `settle` pass to catch late extras, then checks: exact counts, no
// frame of `flow` anywhere else, nothing corrupt, duplicated or foreign.
inline void expectFlow(const Endpoints& all, uint32_t flow, const std::map<const Endpoint*, uint64_t>& expect,
                       Millis timeout = Millis(3000), Millis settle = Millis(150)) {
  const auto want = [&](const Endpoint* e) {
    const auto it = expect.find(e);
    return it == expect.end() ? 0 : it->second;
  };
  pumpUntil(all, [&] {
    for (const Endpoint* e : all)
      if (e->rx().count(flow) < want(e)) return false;
    return true;
  }, timeout);
  pumpFor(all, settle);
  for (const Endpoint* e : all) {
    EXPECT_EQ(e->rx().count(flow), want(e)) << "flow " << flow << " at " << e->label() << countsOf(all);
    EXPECT_EQ(e->rx().duplicates(flow), 0u) << "flow " << flow << " at " << e->label();
    EXPECT_EQ(e->rx().corrupt(), 0u) << e->label() << ": " << e->rx().describe();
    EXPECT_EQ(e->rx().foreign(), 0u) << e->label() << ": " << e->rx().describe();
  }
}

// Every station sends one broadcast; it must reach every other station once
// and never its sender. Afterwards vdevd has learned every station's MAC.
inline void learnAll(const Endpoints& all, uint32_t flowBase) {
  for (size_t i = 0; i < all.size(); ++i) {
    const uint32_t flow = flowBase + uint32_t(i);
    all[i]->send({testframe::kBroadcast, all[i]->mac(), Kind::kExperimental, flow, 0, 60});
    std::map<const Endpoint*, uint64_t> expect;
    for (const Endpoint* e : all)
      if (e != all[i]) expect[e] = 1;
    SCOPED_TRACE("broadcast from " + all[i]->label());
    expectFlow(all, flow, expect);
  }
}

// Deletes, at the end of a test, the devices vdevd was asked to create, in
// case the test failed before `port del` (or vdevd was killed).
class DeviceGuard {
 public:
  explicit DeviceGuard(std::vector<std::string> names) : names_(std::move(names)) {}
  ~DeviceGuard() {
    for (const auto& n : names_)
      if (linkExists(n)) tryRun("ip link del dev " + shellQuote(n));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  std::vector<std::string> names_;
};

}  // namespace vdev::e2e
