// latency.h - round-trip latency: UDP request/response between containers,
// or between a container and the VM stand-in (TapSink reflects).
//
// The requester (Pinger) is a UDP socket in a container's namespace, the
// responder a UDP socket in the other container's (UdpResponder) or the
// tap reader. Each probe is one UDP datagram to VB_UDP_ECHO_PORT whose
// payload starts with a vb_payload (magic, sequence number, CLOCK_MONOTONIC
// send time), padded so that the frame has the benchmark's frame size; the
// answer carries the payload back unchanged. Both sockets send with UDP
// checksum 0 (SO_NO_CHECK, legal for IPv4): a veth offloads the UDP
// checksum (CHECKSUM_PARTIAL), which a frame forwarded by copy-mode AF_XDP
// would carry unfinished to the receiver.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "result.h"
#include "sys.h"

namespace vdev::bench {

// An IPv4 socket address (ip and port in host byte order).
sockaddr_in sockAddr(uint32_t ip, uint16_t port);
// A UDP socket made inside ns (it stays there, whichever thread uses it),
// bound to ip:port (port 0: any); udpChecksum false: it sends with UDP
// checksum 0 (SO_NO_CHECK).
Result<FileDesc> udpSocket(const Netns& ns, uint32_t ip, uint16_t port, bool udpChecksum);

// Percentiles of a set of round trips, in microseconds.
struct LatencyStats {
  uint64_t sent = 0;
  uint64_t lost = 0;       // no answer within the timeout
  size_t samples = 0;      // answered
  double minUs = 0, p50Us = 0, p90Us = 0, p99Us = 0, maxUs = 0, meanUs = 0;
};
// Nearest-rank percentiles (p99 of 1000 samples = the 990th smallest).
LatencyStats summarizeLatency(const std::vector<double>& us, uint64_t sent);

// One series of probes.
struct ProbePlan {
  int count = 1000;
  double intervalS = 0.001;  // send times count / interval apart (absolute schedule)
  double pauseS = 0;         // > 0: instead, wait this long after each answer (idle) before the next probe
  double timeoutS = 0.2;     // per probe
  int cpu = 0;               // the requester's CPU
  int prio = 0;              // and SCHED_FIFO priority (0: normal)
};

class Pinger {
 public:
  // A UDP socket in ns, bound to srcIp, connected to dstIp:VB_UDP_ECHO_PORT.
  // frameSize: the probe's Ethernet frame size with FCS (as --size).
  // udpChecksum: let the stack fill in the UDP checksum (offloaded on a
  // veth) instead of sending 0.
  static Result<std::unique_ptr<Pinger>> create(const Netns& ns, uint32_t srcIp, uint32_t dstIp, size_t frameSize,
                                                bool udpChecksum = false);
  // Sends plan.count probes from a thread pinned to plan.cpu and waits for
  // each answer; fills rttUs with the answered ones. Returns the number
  // sent; interrupted by the stop flag.
  Result<uint64_t> run(const ProbePlan& plan, std::vector<double>* rttUs);
  // The requester thread's id while run() runs (for the CPU figures).
  pid_t tid() const { return tid_.load(std::memory_order_relaxed); }

 private:
  Pinger(FileDesc fd, size_t payload) : fd_(std::move(fd)), payload_(payload) {}
  Result<uint64_t> loop(const ProbePlan& plan, std::vector<double>* rttUs);
  FileDesc fd_;
  size_t payload_;
  uint32_t seq_ = 0;
  std::atomic<pid_t> tid_{0};
};

// Answers probes in a container's namespace: a UDP socket on ip:7 and a
// thread pinned to cpu that sends every datagram back to where it came
// from, unchanged.
class UdpResponder {
 public:
  static Result<std::unique_ptr<UdpResponder>> create(const Netns& ns, uint32_t ip, int cpu, int prio,
                                                      bool udpChecksum = false);
  ~UdpResponder();
  uint64_t answered() const { return answered_.load(std::memory_order_relaxed); }
  pid_t tid() const { return tid_.load(std::memory_order_relaxed); }

 private:
  explicit UdpResponder(FileDesc fd) : fd_(std::move(fd)) {}
  void threadMain(int cpu, int prio);
  FileDesc fd_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<pid_t> tid_{0};
  std::atomic<uint64_t> answered_{0};  // relaxed: a statistic
};

}  // namespace vdev::bench
