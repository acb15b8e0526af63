// real_traffic.h - what vdev-bench --real sends between two stations of a
// RealTopology: an iperf3 TCP stream, a UDP flood from a socket; and the
// CPU time the machine spent while it did.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "latency.h"
#include "real_topology.h"
#include "result.h"
#include "sys.h"

namespace vdev::bench {

// CPU time over one measurement window.
struct CpuWindow {
  double seconds = 0;  // wall clock
  // Busy CPU seconds of all CPUs (/proc/stat: user + nice + system + irq +
  // softirq; tick sampled): everything the machine did, other engineers'
  // load included.
  double machine = 0;
  // CPU seconds (utime + stime, tick sampled) of the benchmark's own tasks:
  // vdev-bench and its threads (the UDP sender and receiver), its children
  // whether they exited in the window or not (iperf3 at both ends, vdevd,
  // vdev-vm), and ksoftirqd. Softirq work is charged to the task it ran on
  // top of, so the forwarding done in a sender's or in vdevd's context is
  // in; what ran on top of an unrelated task is not.
  double bench = 0;
  double steal = 0;  // all CPUs: the hypervisor ran something else
  // Busy time no task of the benchmark accounts for: other load (or tick
  // noise) above 15% of one CPU, or that much steal (the same threshold as
  // the XDP-frame runs, runner.cpp).
  bool noisy = false;
  double otherLoad() const { return seconds > 0 ? (machine - bench) / seconds : 0; }
};

class CpuMeter {
 public:
  Status begin();
  // The window since begin(); warns (as the XDP-frame runs do) when it was
  // noisy. what: "bridge tcp-a-b run 2", for the warning.
  Result<CpuWindow> end(const std::string& what);

 private:
  double benchSeconds() const;
  double t0_ = 0, bench0_ = 0;
  CpuBusy busy0_;
  std::vector<pid_t> ksoftirqd_;
};

struct TcpResult {
  uint64_t bytes = 0;        // received, as iperf3's receiver counted them
  double seconds = 0;        // the receiver's
  double gbps = 0;           // the receiver's rate
  std::optional<uint64_t> retransmits;  // the sender's, when iperf3 reports them
  CpuWindow cpu;             // from the client's start to its exit
};
// iperf3 -s (one test) in to's namespace, `iperf3 -c TO -t duration -J` in
// from's: one TCP stream from from to to, with the stations' default
// offloads. Their output goes to files in workDir, removed afterwards.
// The QEMU guest (Station::inQemu) serves with its own iperf3 -s: to it,
// the client in from's namespace connects there; from it, the client in
// to's namespace runs with -R (the guest sends, the container's client
// receives and reports).
Result<TcpResult> runTcp(const Station& from, const Station& to, double duration, const std::string& what,
                         const std::string& workDir);

struct UdpResult {
  uint64_t sent = 0;          // datagrams sendmmsg() took
  uint64_t received = 0;      // datagrams the receiver read
  uint64_t rcvbufErrors = 0;  // the receiving namespace's Udp RcvbufErrors: its socket was full
  double seconds = 0;         // the sender's time
  CpuWindow cpu;
  double sentMpps() const { return seconds > 0 ? sent / seconds / 1e6 : 0; }
  double receivedMpps() const { return seconds > 0 ? received / seconds / 1e6 : 0; }
};
// The UDP payload of the flood: an 18-byte payload makes a 60-byte frame,
// 64 bytes on a wire with its FCS.
constexpr size_t kUdpFloodPayload = 18;
constexpr size_t kUdpFloodMaxPayload = 64;  // the largest payload runUdpFlood() sends
constexpr unsigned kUdpFloodBatch = 64;  // datagrams per sendmmsg()/recvmmsg()
// For duration seconds one thread sendmmsg()s payload-byte datagrams
// (1 .. kUdpFloodMaxPayload) from a connected socket in from's namespace to
// a socket in to's, which one thread reads with recvmmsg() and counts (until
// 200 ms pass without a datagram after the sender stopped).
Result<UdpResult> runUdpFlood(const Station& from, const Station& to, double duration, const std::string& what,
                              size_t payload = kUdpFloodPayload);

struct RttResult {
  LatencyStats stats;      // the answered probes' round trips
  std::vector<double> us;  // each answered probe's round trip, us, in send order
  CpuWindow cpu;
};
// Round trips from `from` to `to` and back, light load: a UDP socket in
// from's namespace sends one 64-byte request (frame, FCS included) every
// kRttIntervalS for duration seconds and waits for each answer (200 ms at
// most); a UDP socket in to's namespace sends every request back
// unchanged (latency.h: Pinger, UdpResponder). Both with the stack's UDP
// checksum (left to the device's offload on a veth), both threads on the
// first CPU (vdevd and everything else where the scheduler puts them).
constexpr double kRttIntervalS = 0.002;
constexpr size_t kRttFrameSize = 64;
Result<RttResult> runRtt(const Station& from, const Station& to, double duration, const std::string& what);

// Connectivity and learning before the measurements: from pings to (two
// echo requests, 0.2 s apart), so both see each other's frames.
Status warmUp(const Station& from, const Station& to);

}  // namespace vdev::bench
