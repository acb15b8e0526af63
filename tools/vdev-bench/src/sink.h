// sink.h - receivers that count exactly what the device under test delivered.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bpf_objs.h"
#include "ethtool_stats.h"
#include "fd.h"
#include "frame.h"
#include "result.h"
#include "sys.h"

namespace vdev::bench {

class Sink {
 public:
  virtual ~Sink() = default;
  // Frames received so far: pkts/bytes are vdev-bench frames (VB_MAGIC),
  // other* everything else.
  virtual Result<Counters> counters() const = 0;
  // Sends n frames from the sink's MAC (to dst) into the device under test,
  // so that a learning switch knows which port the sink is on.
  virtual Status sendLearningFrames(const std::vector<uint8_t>& frame, int n) = 0;
  // CPU seconds spent receiving, where it can be told apart (a reader thread,
  // a threaded-NAPI kthread); 0 when it runs in softirq on whichever CPU.
  virtual double cpuSeconds() const = 0;
  // Called before each measurement: move the receive work to cpu (the sink
  // CPU, shared with the generator) at SCHED_FIFO priority prio (0: normal).
  // With priority the sink runs whenever it has frames and the generator
  // gets what is left, so the sink is never the bottleneck and drops nothing
  // while the generator still offers as much as that CPU allows.
  virtual Status pin(int cpu, int prio, bool threadedNapi) = 0;
  virtual std::string describe() const = 0;
  // The kernel's own count of frames that reached the sink (the sink veth's
  // XDP_DROP verdicts), to check counters() against; nullopt when there is
  // no such count (a tap).
  virtual std::optional<uint64_t> kernelCount() const { return std::nullopt; }
};

// The XDP sink on the veth inside the sink namespace (see bpf/sink.bpf.c).
class XdpSink : public Sink {
 public:
  static Result<std::unique_ptr<XdpSink>> create(const Netns& ns, const std::string& ifname);
  Result<Counters> counters() const override { return readCounters(countersFd_); }
  Status sendLearningFrames(const std::vector<uint8_t>& frame, int n) override;
  double cpuSeconds() const override;
  Status pin(int cpu, int prio, bool threadedNapi) override;
  std::string describe() const override { return "XDP_DROP counter on " + ifname_; }
  std::optional<uint64_t> kernelCount() const override;

 private:
  XdpSink(const Netns& ns, std::string ifname) : ns_(ns), ifname_(std::move(ifname)) {}
  const Netns& ns_;
  std::string ifname_;
  SinkSkel skel_;
  std::unique_ptr<XdpLink> link_;
  int countersFd_ = -1;
  std::vector<pid_t> napiThreads_;
  std::optional<EthtoolStats> stats_;
};

// A tap reader standing in for a VM: it owns the tap (opened with
// IFF_TAP | IFF_NO_PI in the device-under-test namespace, the way QEMU opens
// one), reads every frame on its own thread and counts it. The tap exists as
// long as this object: closing the last fd of a non-persistent tap removes it.
class TapSink : public Sink {
 public:
  static Result<std::unique_ptr<TapSink>> create(const Netns& ns, const std::string& ifname);
  ~TapSink() override;
  Result<Counters> counters() const override;
  Status sendLearningFrames(const std::vector<uint8_t>& frame, int n) override;
  double cpuSeconds() const override;
  Status pin(int cpu, int prio, bool threadedNapi) override;
  std::string describe() const override { return "read() loop on tap " + ifname_; }

 private:
  TapSink(std::string ifname, Fd fd) : ifname_(std::move(ifname)), fd_(std::move(fd)) {}
  void readerMain();

  std::string ifname_;
  Fd fd_;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  std::atomic<pid_t> tid_{0};
  // Written by the reader thread only (relaxed stores), read by the sampler;
  // each is a monotonic counter, no ordering with other data is needed.
  std::atomic<uint64_t> pkts_{0}, bytes_{0}, otherPkts_{0}, otherBytes_{0};
};

// True when buf is a vdev-bench frame (same test as bpf/sink.bpf.c).
bool isBenchFrame(const uint8_t* buf, size_t len);

}  // namespace vdev::bench
