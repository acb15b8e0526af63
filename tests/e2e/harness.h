// vdev end-to-end test harness: the gtest-facing layer over testkit/.
//
// testkit builds the hosts (network namespaces, veth pairs, taps held by the
// test process -- the VM stand-in --, child processes, test frames, vdevd's
// statistics) and reports failures as vdev::Result. This layer gives the
// tests RAII objects that throw HarnessError instead, skips tests that cannot
// run here, counts received test frames per flow, and wraps vdevd.
//
// Rules every helper follows (testkit's, see testkit/netns.h):
//  - Names are unique per process and per object: "vt" + the pid in base 36 +
//    a role letter + a counter, at most 12 characters (IFNAMSIZ is 16).
//  - Only locally administered MACs (02:...) and 198.18.0.0/15 addresses.
//  - IPv6 is disabled on every device the harness makes, in the root
//    namespace and inside test namespaces, so the kernel sends nothing on its
//    own (no router solicitations, no MLD) and frame counts are exact.
//  - Destructors remove what the constructor made, pass or fail, and never
//    throw.
//  - Environment failures (a command that fails, a syscall that should not)
//    throw HarnessError with the command's stderr; gtest reports an exception
//    that escapes a test as a failure with that message.
//
// Thread safety: the objects are not thread safe, but different objects may be
// used from different threads (e.g. one thread sends on one endpoint while
// another reads from a second). Nothing moves a thread between namespaces.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mac.h"
#include "testkit/files.h"
#include "testkit/frame.h"
#include "testkit/links.h"
#include "testkit/netns.h"
#include "testkit/process.h"
#include "testkit/stats.h"

namespace vdev::e2e {

// The test frame format (testkit/frame.h) under the names the tests use.
namespace testframe {
using Mac = vdev::Mac;
using Kind = testkit::FrameKind;
using Spec = testkit::TestFrameSpec;
using Verdict = testkit::FrameVerdict;
using Parsed = testkit::ParsedTestFrame;
inline constexpr Mac kBroadcast = testkit::kBroadcastMac;
inline constexpr size_t kMaxSize = testkit::kTestFrameMaxSize;
inline constexpr size_t minSize(Kind kind) { return testkit::testFrameMinSize(kind); }
inline size_t build(const Spec& spec, std::span<uint8_t> out) { return testkit::buildTestFrame(spec, out); }
inline Parsed parse(std::span<const uint8_t> frame) { return testkit::parseTestFrame(frame); }
// base/mac.h's text form; false (out untouched) on anything else.
inline bool parseMac(std::string_view s, Mac& out) {
  const auto m = vdev::parseMac(s);
  if (m) out = *m;
  return m.has_value();
}
inline std::string formatMac(const Mac& m) { return vdev::formatMac(m); }
inline bool isMulticast(const Mac& m) { return vdev::macIsMulticast(m); }
namespace detail {
inline uint32_t csumAdd(uint32_t sum, const uint8_t* p, size_t len) { return testkit::checksumAdd(sum, p, len); }
inline uint16_t csumFold(uint32_t sum) { return testkit::checksumFold(sum); }
}  // namespace detail
}  // namespace testframe

using testframe::Kind;
using testframe::Mac;
using testframe::Spec;
using namespace std::chrono_literals;
using Millis = std::chrono::milliseconds;

class HarnessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------
// JSON (vdevd's --stats-json, vdevctl -j, `ip -j`, bpftool -j)

// Documents are nlohmann::json, which the product reads them with too
// (stats/format.h). Read members with .at(): it throws out_of_range for a
// missing one, where const operator[] is undefined. get<T>() throws
// type_error across kinds (a string for a number) but converts between number
// kinds; counters are read through stats:: (testkit/stats.h), which insists
// on unsigned integers. Unsigned integers stay exact; object members are
// sorted by key. Every failure throws a Json::exception, which gtest reports.
using Json = nlohmann::json;

// ---------------------------------------------------------------------------
// Privileges

// Returns why privileged e2e tests cannot run here (not root, no
// /dev/net/tun, `ip netns add` fails), or nullopt if they can. Probed once.
std::optional<std::string> privilegeProblem();

// GTEST_SKIP()s the current test with the reason when privilegeProblem().
// Call it from SetUp() (gtest then does not run the body) or use
// VDEV_E2E_REQUIRE_ROOT() in a test body.
void requireRoot();

#define VDEV_E2E_REQUIRE_ROOT()                        \
  do {                                                 \
    ::vdev::e2e::requireRoot();                        \
    if (::testing::Test::IsSkipped()) return;          \
  } while (0)

// ---------------------------------------------------------------------------
// Commands

// status: exit status, 128 + signal if killed, -1 if it could not start.
using CmdResult = testkit::ProcessResult;
// A child process (see testkit/process.h): argv[0] a path, or a name looked up in $PATH.
using ProcessSpec = testkit::ProcessSpec;

// Runs it, capturing stdout and stderr. Never throws (status -1 and the
// reason in err: could not start).
CmdResult runProcess(const ProcessSpec& spec);

// Runs `cmd` with /bin/sh -c; captures stdout and stderr. Never throws.
CmdResult tryRun(const std::string& cmd);

// Runs `cmd`; returns its stdout. Throws HarnessError with the command, its
// exit status and stderr if it fails.
std::string run(const std::string& cmd);

// Single-quotes `s` for /bin/sh.
using testkit::shellQuote;

// ---------------------------------------------------------------------------
// Names and addresses

// "vt" + pid (base 36) + role + counter: unique per process and call.
std::string uniqueName(char role);

// A locally administered unicast MAC unique within this process:
// 02:76:<pid, 2 bytes>:<counter, 2 bytes>.
Mac uniqueMac();

// Waits until pred() holds, checking every `step`. Returns pred()'s last value.
// Every deadline of the harness (this one's `timeout`, pumpUntil's,
// statsUntil's, Vdevd's ready and stop, a command's) is multiplied by
// $VDEV_E2E_TIME_SCALE (testkit::deadlineScale(): 1 unless set; 5 in
// scripts/kernel-guest.sh's TCG guests); pumpFor's period and sleeps are not.
bool waitUntil(const std::function<bool()>& pred, Millis timeout, Millis step = 5ms);

// ---------------------------------------------------------------------------
// Network namespaces and links

class Netns {
 public:
  // `ip netns add` a uniquely named namespace, brings lo up and disables IPv6
  // (all + default, so devices created or moved inside inherit it).
  Netns();
  ~Netns();
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  const std::string& name() const { return kit_.name(); }
  const testkit::Netns& kit() const { return kit_; }

  // `ip -n NAME ARGS`; throws on failure.
  std::string ip(const std::string& args) const;
  // `ip netns exec NAME CMD`; throws on failure.
  std::string exec(const std::string& cmd) const;

 private:
  testkit::Netns kit_;
};

// Writes net.ipv6.conf.<ifname>.disable_ipv6=1 in `ns` (root ns if null).
// No-op when the kernel has no IPv6.
void disableIpv6(const std::string& ifname, const Netns* ns);

using testkit::LinkInfo;  // `ip -s -j link show`: counters and state

// `ip [-n NS] -s -j link show dev IFNAME`; throws if the link does not exist.
LinkInfo linkInfo(const std::string& ifname, const Netns* ns = nullptr);
bool linkExists(const std::string& ifname, const Netns* ns = nullptr);

// The classifiers at a device's ingress in the root namespace (`tc -j
// filter show dev IFNAME ingress`), one per filter: its priority, kind,
// handle ("0x7664") and, for a bpf filter with a program, the program's
// name and id. Empty without a clsact (or ingress) qdisc.
struct TcFilter {
  uint32_t pref = 0;
  std::string kind;
  std::string handle;
  std::string prog_name;
  uint64_t prog_id = 0;
};
std::vector<TcFilter> ingressFilters(const std::string& ifname);
// vdev's filters among them (a program named vdev_tc_port or vdev_tc_copy).
std::vector<TcFilter> vdevFilters(const std::string& ifname);
// Whether the device has a clsact qdisc (`tc -j qdisc show dev IFNAME`).
bool hasClsact(const std::string& ifname);

struct VethOptions {
  std::optional<Mac> peerMac;   // default: uniqueMac()
  std::optional<Mac> hostMac;   // default: uniqueMac()
  int mtu = 1500;               // both ends
  const Netns* hostNs = nullptr;  // where the host end lives; root ns if null
};

// A veth pair: the host end (for vdevd to attach) and the peer inside
// `peerNs` (the container's interface). Both up, IPv6 off, no addresses.
class VethPair {
 public:
  explicit VethPair(const Netns& peerNs, const VethOptions& opts = {});
  ~VethPair();
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

  const std::string& hostName() const { return kit_->hostName(); }
  const std::string& peerName() const { return kit_->peerName(); }
  const Netns& peerNs() const { return *peerNs_; }
  const Netns* hostNs() const { return hostNs_; }
  const Mac& peerMac() const { return peerMac_; }
  const Mac& hostMac() const { return hostMac_; }

  LinkInfo hostInfo() const { return linkInfo(hostName(), hostNs_); }
  LinkInfo peerInfo() const { return linkInfo(peerName(), peerNs_); }

  // Deletes the pair now (both ends go); the destructor then does nothing.
  void remove();

 private:
  const Netns* peerNs_;
  const Netns* hostNs_;
  Mac peerMac_{}, hostMac_{};
  std::optional<testkit::VethPair> kit_;
};

// ---------------------------------------------------------------------------
// Frames and counting

// Builds a test frame (see testkit/frame.h); throws if spec.size is out of
// range for spec.kind.
std::vector<uint8_t> buildFrame(const Spec& spec);

// An arbitrary frame of exactly `size` bytes: dst, src, ethertype, then a
// counting pattern, each part truncated to fit; for runts and malformed input.
std::vector<uint8_t> rawFrame(const Mac& dst, const Mac& src, uint16_t ethertype, size_t size);

// Counts received frames per flow. A test frame counts once per distinct
// sequence number; a repeat is a duplicate. Frames without the magic are
// "foreign"; frames with the magic that differ from what was built are
// "corrupt" (a few are kept, hex-dumped, for the failure message).
class FlowCounter {
 public:
  void add(std::span<const uint8_t> frame);
  void clear();

  uint64_t count(uint32_t flow) const;       // distinct, intact frames of `flow`
  uint64_t duplicates(uint32_t flow) const;
  uint64_t bytes(uint32_t flow) const;
  uint64_t total() const;                    // intact test frames, every flow
  uint64_t totalDuplicates() const;
  uint64_t corrupt() const { return corrupt_; }
  uint64_t foreign() const { return foreign_; }
  uint64_t frames() const { return frames_; }  // everything read
  uint64_t bytesRead() const { return bytesRead_; }
  // Set of sequence numbers seen for `flow`.
  const std::set<uint32_t>& seqs(uint32_t flow) const;
  // Sizes of the frames of `flow`, by sequence number.
  std::optional<size_t> sizeOf(uint32_t flow, uint32_t seq) const;

  std::string describe() const;  // one line per flow + anomalies

 private:
  struct Flow {
    std::set<uint32_t> seqs;
    std::map<uint32_t, size_t> sizes;
    uint64_t duplicates = 0;
    uint64_t bytes = 0;
  };
  std::map<uint32_t, Flow> flows_;
  uint64_t corrupt_ = 0, foreign_ = 0, frames_ = 0, bytesRead_ = 0;
  std::vector<std::string> samples_;
};

// One end of the test topology that sends and receives frames: a packet
// socket in a container namespace, or the tap fd held by the VM stand-in.
class Endpoint {
 public:
  Endpoint(std::string label, const Mac& mac) : label_(std::move(label)), mac_(mac) {}
  virtual ~Endpoint() = default;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& label() const { return label_; }
  void setLabel(std::string label) { label_ = std::move(label); }
  // The station MAC: what this endpoint sends from and is addressed by.
  const Mac& mac() const { return mac_; }
  virtual int fd() const = 0;

  // Sends one frame as is. Returns 0 or -errno; never throws, so tests can
  // assert on errors they expect (e.g. a runt the kernel refuses).
  int sendRaw(std::span<const uint8_t> frame);
  // Builds and sends a test frame; throws HarnessError if the send fails.
  void send(const Spec& spec);
  // Sends `count` frames of spec.flow with seq spec.seq, spec.seq+1, ...;
  // throws on a failed send.
  void sendFlow(Spec spec, uint32_t count);

  // Reads every frame available now into rx(); returns how many. Reads
  // nothing while paused (a VM that stopped reading its tap).
  size_t poll();
  // Waits up to `timeout` for one frame and returns it raw, not counted.
  std::optional<std::vector<uint8_t>> recvRaw(Millis timeout);

  // Frames and bytes sent successfully (sendRaw, send, sendFlow).
  uint64_t sentFrames() const { return sentFrames_; }
  uint64_t sentBytes() const { return sentBytes_; }
  // Whether send() or sendFlow() sent a frame of `flow` (sendRaw() parses
  // nothing and records nothing): how expectFlow() finds a flow's sender.
  bool sentFlow(uint32_t flow) const { return sentFlows_.count(flow) != 0; }

  FlowCounter& rx() { return rx_; }
  const FlowCounter& rx() const { return rx_; }

  void pause() { paused_ = true; }
  void resume() { paused_ = false; }
  bool paused() const { return paused_; }

 protected:
  // Non-blocking read of one frame: length, 0 if none, -errno on error.
  virtual ssize_t readRaw(std::span<uint8_t> buf) = 0;
  // Writes one frame: 0 or -errno.
  virtual int writeRaw(std::span<const uint8_t> frame) = 0;

 private:
  std::string label_;
  Mac mac_;
  uint64_t sentFrames_ = 0, sentBytes_ = 0;
  std::set<uint32_t> sentFlows_;
  FlowCounter rx_;
  bool paused_ = false;
};

using Endpoints = std::vector<Endpoint*>;

// Polls every endpoint (paused ones excepted) until pred() holds or `timeout`
// passes; returns pred()'s last value.
bool pumpUntil(const Endpoints& eps, const std::function<bool()>& pred, Millis timeout);
// Polls every endpoint for `duration` (to catch frames that should not come;
// not scaled by $VDEV_E2E_TIME_SCALE: a period, not a deadline).
void pumpFor(const Endpoints& eps, Millis duration);

// An AF_PACKET SOCK_RAW socket bound to `ifname` inside `ns` (root ns if
// null), created there so it stays there. It ignores its own outgoing frames
// (PACKET_IGNORE_OUTGOING) and has a large receive buffer.
class PacketSocket : public Endpoint {
 public:
  // `mac`: the station MAC; defaults to the interface's own address.
  PacketSocket(const std::string& ifname, const Netns* ns, std::optional<Mac> mac = {});
  ~PacketSocket() override = default;

  int fd() const override { return fd_.get(); }
  // Frames the kernel dropped because this socket's receive buffer was full
  // (PACKET_STATISTICS tp_drops), cumulative since the socket was opened.
  uint64_t kernelDrops();

 protected:
  // A socket whose device was deleted reads nothing (not ENETDOWN).
  ssize_t readRaw(std::span<uint8_t> buf) override;
  int writeRaw(std::span<const uint8_t> frame) override;

 private:
  FileDesc fd_;
  uint64_t drops_ = 0;
};

struct TapOptions {
  std::optional<Mac> hostMac;  // the tap netdev's MAC; default uniqueMac()
  std::optional<Mac> vmMac;    // the "guest NIC" MAC the VM sends from; default uniqueMac()
  int mtu = 1500;
};

// A tap opened like QEMU does (/dev/net/tun, TUNSETIFF IFF_TAP | IFF_NO_PI,
// non-blocking): the test process holds the fd and is the VM. The device is
// not persistent; closing the fd deletes it, as when a VM exits.
class Tap : public Endpoint {
 public:
  explicit Tap(const TapOptions& opts = {});
  ~Tap() override = default;

  const std::string& name() const { return kit_.name(); }
  const Mac& hostMac() const { return hostMac_; }
  int fd() const override { return kit_.fd(); }
  LinkInfo info() const { return linkInfo(name()); }

  // Closes the fd now: the device disappears.
  void close() { kit_.close(); }

 protected:
  ssize_t readRaw(std::span<uint8_t> buf) override;
  int writeRaw(std::span<const uint8_t> frame) override;

 private:
  Mac hostMac_{};
  testkit::Tap kit_;
};

// ---------------------------------------------------------------------------
// Child processes and vdevd

// A scratch directory removed at destruction (kept if VDEV_E2E_KEEP is set).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return kit_.path(); }
  std::string file(std::string_view name) const { return kit_.file(name); }

 private:
  testkit::TempDir kit_;
};

std::string readFile(const std::string& path);  // "" if missing

// A child process with stdout and stderr going to files in a TempDir. Its
// stdin is /dev/null and it inherits no fd beyond 0-2 (so it cannot keep a
// test's tap or socket alive).
class Child {
 public:
  Child(const std::string& label, const std::vector<std::string>& argv);
  ~Child();  // SIGKILL if still running; prints the logs if the test failed
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return kit_.pid(); }
  bool running() { return kit_.running(); }
  // Waits until stdout has a line that is `line`, or starts with `line` and a
  // space (so "vdevd: ready (3 ports)" matches "vdevd: ready"). Throws
  // HarnessError with the logs if the child exits first or `timeout` passes.
  void waitForLine(const std::string& line, Millis timeout);
  void signal(int sig);
  // Waits for exit; returns the status (128 + signal if killed) or nullopt on
  // timeout.
  std::optional<int> wait(Millis timeout) { return kit_.wait(timeout); }
  std::string out() const { return readFile(kit_.output().stdout_path); }
  std::string err() const { return readFile(kit_.output().stderr_path); }
  std::string logs() const;  // both, labelled, for failure messages
  const TempDir& dir() const { return dir_; }
  testkit::Child& kit() { return kit_; }

 private:
  std::string label_;
  TempDir dir_;
  testkit::Child kit_;
};

// A port's counters: every row of the counter table by id,
// p[stats::kRxPackets], p[stats::kDropRunt] (testkit/stats.h).
using testkit::PortStats;
using testkit::PoolStats;

// vdevd's --stats-json or `vdevctl -j stats` (one schema; testkit/stats.h).
struct Stats : testkit::Stats {
  static Stats parse(const std::string& json);  // throws on a missing field
  const PortStats& port(std::string_view name) const;  // throws if absent
  std::string dump() const { return raw.dump(); }
};

// The vdevd binary: $VDEVD if set, else the CMake target's path, else "".
std::string vdevdBinary();

// The vdev-vm binary: $VDEV_VM if set, else the CMake target's path, else "".
std::string vdevVmBinary();

// The vdevctl binary: $VDEVCTL if set, else the CMake target's path, else "".
std::string vdevctlBinary();

#define VDEV_E2E_REQUIRE_VDEVD()                                                         \
  do {                                                                                   \
    if (::vdev::e2e::vdevdBinary().empty())                                              \
      GTEST_SKIP() << "vdevd not built (no CMake target 'vdevd') and $VDEVD not set";    \
  } while (0)

// The vdevd daemon under test (docs/vdevd.md).
class Vdevd {
 public:
  // Starts `vdevd ARGS --stats-json DIR/stats.json` and waits for
  // "vdevd: ready" (throws with its logs if it exits or `readyTimeout` passes).
  explicit Vdevd(std::vector<std::string> args, Millis readyTimeout = 10s);
  ~Vdevd() = default;  // the Child kills it if still running

  // SIGUSR1, then waits for a fresh stats file and parses it.
  Stats stats(Millis timeout = 5s);
  // Polls stats() until pred(stats) holds; returns the last stats read.
  Stats statsUntil(const std::function<bool(const Stats&)>& pred, Millis timeout);
  // SIGTERM and wait; returns the exit status (throws on timeout, after
  // SIGKILL). The final statistics are then available from finalStats().
  int stop(Millis timeout = 10s);
  Stats finalStats() const;

  bool running() { return child_.running(); }
  pid_t pid() const { return child_.pid(); }
  std::string logs() const { return child_.logs(); }
  Child& child() { return child_; }

  // Runs vdevd with `args` expecting it to exit by itself (bad usage);
  // returns its status and logs. Fails (throws) if it prints "vdevd: ready"
  // or is still running after `timeout`.
  static CmdResult runExpectingExit(const std::vector<std::string>& args, Millis timeout = 10s);

 private:
  static std::vector<std::string> argv(std::vector<std::string> args, const std::string& stats);
  TempDir statsDir_;
  std::string statsPath_;
  Child child_;
};

inline std::string macString(const Mac& m) { return vdev::formatMac(m); }

}  // namespace vdev::e2e
