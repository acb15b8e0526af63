// Waiting for states instead of for time, shared by the e2e suites.
//
// A loaded 2-core machine gives no timing guarantee: a test that sleeps and
// then asserts, or that requires an answer within one interval, fails there
// without a bug. These helpers wait for the state itself (a counter reaching
// its value, a positive marker arriving) under a generous deadline, so they
// are as fast as the machine allows and fail only when the state never comes.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "flows.h"
#include "harness.h"

namespace vdev::e2e {

// vdevd stopped the way a test must stop it (SIGTERM, as systemd does): it
// exits 0 -- which, in the AddressSanitizer build, includes LeakSanitizer's
// check at exit -- and its final statistics have every frame back in the
// pool. A vdevd left to the destructor is SIGKILLed, and a leak goes unseen.
// `timeout`: how long it may take to exit after SIGTERM. Returns whether it
// exited 0, for a test that goes on to start another vdevd
// (ASSERT_TRUE(expectCleanStop(d))).
inline bool expectCleanStop(Vdevd& d, Millis timeout = Millis(10000)) {
  int status = -1;
  try {
    status = d.stop(timeout);
  } catch (const HarnessError& e) {
    ADD_FAILURE() << "vdevd did not stop on SIGTERM: " << e.what();
    return false;
  }
  EXPECT_EQ(status, 0) << d.logs();
  const Stats fin = d.finalStats();
  EXPECT_EQ(fin.pool.free(), fin.pool.total()) << "frames not returned at exit: " << fin.dump();
  EXPECT_EQ(fin.pool.reported_sum, fin.pool.total()) << fin.dump();
  return status == 0;
}

// Frames of `flows` that must arrive only where the expectations say
// (nowhere, for an empty map), checked behind one marker (flows.h): a
// broadcast `from` sends after them, of flow `marker` (unused elsewhere;
// sequence number a multiple of 250), that must reach every other endpoint
// of `all`. Counted like any frame: one more rx at `from`'s port, one more
// tx at every other live port.
inline void expectFlowsBeforeMarker(const Endpoints& all, const FlowExpectations& flows, Endpoint& from,
                                    uint32_t marker, Millis timeout = Millis(10000)) {
  expectFlowsBeforeMarkers(all, flows, {Marker{.from = &from, .flow = marker}}, timeout);
}

// A device that was just created and set up drops everything sent through
// its queueing layer (a packet socket's frames, the stack's) until the
// kernel's link watch has given it its qdisc: until then it has the noop
// qdisc, which drops and counts nothing a test looks at. On a loaded
// machine that can take a while (the first 138 of 300 frames, once). Waits,
// up to 10 s, until `tc` shows a root qdisc on `ifname` in `ns` (root
// namespace if null); throws HarnessError if it never comes.
inline void waitTxReady(const std::string& ifname, const Netns* ns = nullptr) {
  const std::string cmd = (ns ? "ip netns exec " + shellQuote(ns->name()) + " " : std::string()) +
                          "tc -j qdisc show dev " + shellQuote(ifname);
  if (!waitUntil([&] { return tryRun(cmd).out.find("\"root\":true") != std::string::npos; }, Millis(10000),
                 Millis(5)))
    throw HarnessError(ifname + ": still no qdisc 10 s after it was set up: " + tryRun(cmd).out);
}

// `ping` from namespace `ns` to `addr` until `count` echo replies came back
// or `deadlineSec` passed (ping -w): a reply that is slow on a loaded
// machine still counts, where `-c N -W 1` gives up on it after two round
// trips. Requests go out every 0.2 s until then, so `transmitted` may exceed
// `count` without any loss.
struct PingResult {
  int transmitted = -1;
  int received = -1;
  CmdResult cmd;
  std::string describe() const { return cmd.out + cmd.err; }
};

inline PingResult pingUntilReplies(const std::string& ns, const std::string& addr, int count,
                                   int deadlineSec = 20) {
  PingResult r;
  r.cmd = tryRun("ip netns exec " + shellQuote(ns) + " ping -n -q -c " + std::to_string(count) +
                 " -i 0.2 -w " + std::to_string(deadlineSec) + " " + shellQuote(addr));
  // "5 packets transmitted, 5 received, ..."
  const std::string& out = r.cmd.out;
  const size_t tx = out.find(" packets transmitted, ");
  if (tx != std::string::npos) {
    const size_t b = out.rfind('\n', tx);
    r.transmitted = std::atoi(out.c_str() + (b == std::string::npos ? 0 : b + 1));
    r.received = std::atoi(out.c_str() + tx + std::string(" packets transmitted, ").size());
  }
  return r;
}

}  // namespace vdev::e2e
