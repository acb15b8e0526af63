// Test flows between endpoints, shared by the e2e suites: frames of mixed
// sizes and kinds, exact per-flow expectations, learning, and a guard for
// devices vdevd was asked to create.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
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

// ---------------------------------------------------------------------------
// "Nothing else arrived", checked against a marker instead of a quiet period
//
// A marker is a test frame, a broadcast unless told otherwise, that an
// endpoint sends after the frames a check is about; the check waits until
// the marker has arrived wherever it must, and then the counts are final:
//  - vdevd takes a port's frames in order and hands every destination port
//    its frames in order (one datapath thread, one ring per port), so a
//    frame of the sender's on its way to an endpoint through vdevd is there
//    when that endpoint's marker is;
//  - a frame that takes the kernel fast path (learned unicast) is in its
//    destination's queue while it is sent, before the marker behind it is
//    even read; a broadcast never takes the fast path.
// Markers are sent one at a time, each once the one before has reached
// every endpoint it must. By then vdevd has read every frame the earlier
// markers' senders sent before them, so a later marker also vouches, where
// it arrives, for those frames: a chain of markers covers what the first
// one cannot reach -- an isolated port, a port of another flood domain,
// the sender itself (a broadcast never goes back to its sender: a frame of
// its own flow that came back to it is ordered only by a marker from
// another endpoint).
// vdevd hands the kernel's fast path what it learned from a round of frames
// (a station that moved) after it has sent that round out: where a check
// needs the fast path to have it, a second marker, which vdevd reads in a
// later round, arrives only once it does.
// A marker is a frame like any other: counted where it is sent and where it
// arrives (sentFrames(), rx().frames()) and in vdevd's counters (rx at its
// sender's port, tx at every port it reaches; expectCountersMatch and the
// like compare those with the endpoints' and include it). A test that writes
// an exact count as a number adds its markers to it.
// Where a marker would not arrive (a port whose broadcasts are dropped or
// limited, a paused or stalled endpoint, a port of another VLAN), the call
// says who sends it and who must receive it; a marker that never arrives
// fails the check at its deadline.

// Markers' flows: kMarkerFlow + n for n < 256 (a marker of Kind::kIpv4Udp
// comes from 198.18.<n>.1: markers' sequence numbers are multiples of 250).
// No test sends frames of these flows.
inline constexpr uint32_t kMarkerFlow = 0xfffffe00u;

struct Marker {
  Endpoint* from = nullptr;     // who sends it; null (expectFlow only): the flow's sender
  std::optional<Endpoints> to;  // who must receive it; default: every endpoint of `all` but `from`
  Mac dst = testframe::kBroadcast;  // unicast: only to an endpoint the frames in question take
                                    // the same path to (through vdevd, or the same fast path)
  Kind kind = Kind::kExperimental;
  uint32_t flow = kMarkerFlow;
};

// A sequence number no marker has had: markers from every call are told
// apart by it. A multiple of 250 (see kMarkerFlow).
inline uint32_t nextMarkerSeq() {
  static std::atomic<uint32_t> n{0};
  // Relaxed: only the numbers' being distinct matters; nothing is published with them.
  return 250 * n.fetch_add(1, std::memory_order_relaxed);
}

// What each flow must deliver where: flow -> endpoint -> frames (an
// endpoint or a flow not listed: none).
using FlowExpectations = std::map<uint32_t, std::map<const Endpoint*, uint64_t>>;

// A marker on its way: which, its sequence number, where it must arrive.
struct SentMarker {
  Marker marker;
  uint32_t seq;
  Endpoints to;
};

// Sends `markers` one after the other, each once the one before has arrived
// wherever it must, and waits with the last until `done()` holds as well.
// Appends each marker sent to `sent`; returns what did not arrive ("" when
// everything did). `timeout`: per marker; only a failure waits that long.
inline std::string sendMarkers(const Endpoints& all, const std::vector<Marker>& markers,
                               std::vector<SentMarker>& sent, const std::function<bool()>& done,
                               Millis timeout) {
  std::string missing;
  for (size_t i = 0; i < markers.size(); ++i) {
    const Marker& m = markers[i];
    if (!m.from) return "marker " + std::to_string(i) + " has no sender";
    Endpoints to;
    if (m.to) {
      to = *m.to;
    } else {
      for (Endpoint* e : all)
        if (e != m.from) to.push_back(e);
    }
    const uint32_t seq = nextMarkerSeq();
    m.from->send({m.dst, m.from->mac(), m.kind, m.flow, seq, 60});
    sent.push_back({m, seq, to});
    const bool last = i + 1 == markers.size();
    const bool arrived = pumpUntil(all, [&] {
      for (const Endpoint* e : to)
        if (!e->rx().seqs(m.flow).count(seq)) return false;
      return !last || done();
    }, timeout);
    if (!arrived && missing.empty()) {
      std::ostringstream os;
      os << "marker " << i << " (flow " << m.flow << ", seq " << seq << ") from " << m.from->label();
      std::string where;
      for (const Endpoint* e : to)
        if (!e->rx().seqs(m.flow).count(seq)) where += " " + e->label();
      if (where.empty())
        os << " arrived, but not all the frames expected did";
      else
        os << " did not arrive at" << where;
      missing = os.str();
    }
  }
  return missing;
}

// Each marker of `sent` arrived once wherever it must, and not back at its
// sender.
inline void expectMarkersOnce(const Endpoints& all, const std::vector<SentMarker>& sent) {
  for (const SentMarker& s : sent) {
    for (const Endpoint* e : s.to)
      EXPECT_EQ(e->rx().seqs(s.marker.flow).count(s.seq), 1u)
          << "marker from " << s.marker.from->label() << " at " << e->label() << countsOf(all);
    EXPECT_EQ(s.marker.from->rx().seqs(s.marker.flow).count(s.seq), 0u)
        << "a marker came back to its sender " << s.marker.from->label();
    for (const Endpoint* e : all)
      EXPECT_EQ(e->rx().duplicates(s.marker.flow), 0u) << "marker flow " << s.marker.flow << " at " << e->label();
  }
}

// For a test that checks what arrived itself (frames that are not test
// frames, counters): sends `markers` and waits until they have arrived;
// afterwards, whatever the frames before them reached is there.
inline void expectMarkersArrive(const Endpoints& all, const std::vector<Marker>& markers,
                                Millis timeout = Millis(10000)) {
  std::vector<SentMarker> sent;
  const std::string missing = sendMarkers(all, markers, sent, [] { return true; }, timeout);
  EXPECT_TRUE(missing.empty()) << missing << countsOf(all);
  expectMarkersOnce(all, sent);
}

// Waits until every endpoint has at least its count of every flow of
// `flows`, sends `markers` (sendMarkers) and waits until the last has
// arrived, then checks:
// exact counts, no frame of a flow anywhere else, the markers once wherever
// they must be, nothing corrupt, duplicated or foreign.
inline void expectFlowsBeforeMarkers(const Endpoints& all, const FlowExpectations& flows,
                                     const std::vector<Marker>& markers, Millis timeout = Millis(10000)) {
  const auto want = [&](uint32_t flow, const Endpoint* e) -> uint64_t {
    const auto& expect = flows.at(flow);
    const auto it = expect.find(e);
    return it == expect.end() ? 0 : it->second;
  };
  const auto expected = [&] {
    for (const Endpoint* e : all)
      for (const auto& [flow, expect] : flows)
        if (e->rx().count(flow) < want(flow, e)) return false;
    return true;
  };
  // The markers go once the frames expected are there: not into a vdevd
  // still busy with them (a burst that left its fill ring empty drops the
  // marker like any frame).
  pumpUntil(all, expected, timeout);
  std::vector<SentMarker> sent;
  const std::string missing = sendMarkers(all, markers, sent, expected, timeout);
  EXPECT_TRUE(missing.empty()) << missing << countsOf(all);
  for (const Endpoint* e : all) {
    for (const auto& [flow, expect] : flows) {
      EXPECT_EQ(e->rx().count(flow), want(flow, e)) << "flow " << flow << " at " << e->label() << countsOf(all);
      EXPECT_EQ(e->rx().duplicates(flow), 0u) << "flow " << flow << " at " << e->label();
    }
    EXPECT_EQ(e->rx().corrupt(), 0u) << e->label() << ": " << e->rx().describe();
    EXPECT_EQ(e->rx().foreign(), 0u) << e->label() << ": " << e->rx().describe();
  }
  expectMarkersOnce(all, sent);
}

// The one endpoint of `all` that sent frames of `flow` with send() or
// sendFlow(); null (and a failure) if none or several did.
inline Endpoint* senderOf(const Endpoints& all, uint32_t flow) {
  Endpoint* from = nullptr;
  for (Endpoint* e : all) {
    if (!e->sentFlow(flow)) continue;
    if (from) {
      ADD_FAILURE() << "flow " << flow << " has two senders (" << from->label() << ", " << e->label()
                    << "): say which sends the marker";
      return nullptr;
    }
    from = e;
  }
  if (!from)
    ADD_FAILURE() << "no endpoint sent flow " << flow << " with send() or sendFlow(): say who sends the marker";
  return from;
}

// The frames of `flow` arrived where `expect` says and nowhere else
// (exact counts, an endpoint not listed: none), checked behind `markers`
// (see expectFlowsBeforeMarkers). A marker without a sender is sent by the
// endpoint of `all` that sent the flow.
inline void expectFlow(const Endpoints& all, uint32_t flow, const std::map<const Endpoint*, uint64_t>& expect,
                       std::vector<Marker> markers, Millis timeout = Millis(10000)) {
  for (Marker& m : markers)
    if (!m.from && !(m.from = senderOf(all, flow))) return;
  expectFlowsBeforeMarkers(all, {{flow, expect}}, markers, timeout);
}

// The same behind one marker: a broadcast from the flow's sender that must
// reach every other endpoint of `all`.
inline void expectFlow(const Endpoints& all, uint32_t flow, const std::map<const Endpoint*, uint64_t>& expect,
                       Millis timeout = Millis(10000)) {
  expectFlow(all, flow, expect, std::vector<Marker>{Marker{}}, timeout);
}

// Every station sends one broadcast; it must reach every other station once
// and never its sender. Afterwards vdevd has learned every station's MAC.
// Then every station sends a marker, in turn, and the first one a second:
// each station's broadcast is checked at the others behind its own marker
// and at itself behind the next one.
inline void learnAll(const Endpoints& all, uint32_t flowBase) {
  FlowExpectations flows;
  std::vector<Marker> markers;
  for (size_t i = 0; i < all.size(); ++i) {
    const uint32_t flow = flowBase + uint32_t(i);
    all[i]->send({testframe::kBroadcast, all[i]->mac(), Kind::kExperimental, flow, 0, 60});
    for (const Endpoint* e : all)
      if (e != all[i]) flows[flow][e] = 1;
    markers.push_back({.from = all[i]});
  }
  if (all.size() > 1) markers.push_back({.from = all[0]});
  expectFlowsBeforeMarkers(all, flows, markers);
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
